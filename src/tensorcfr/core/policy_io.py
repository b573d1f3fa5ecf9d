"""Checkpoints and policies of the tensor CFR solvers: NPZ files with JSON metadata.

Both file kinds are a single ``.npz`` archive (no pickles) written atomically; the JSON
metadata is stored inside it as the UTF-8 bytes of the array ``metadata_json``:

* policy (``format = "tensorcfr-policy"``): ``probabilities`` [A] float64 over action slots,
  ``action_id`` [A], ``infoset_num_actions`` [I]; metadata: game string, infoset keys,
  player of each infoset, plus free-form ``extra`` (algorithm, iterations...).
* checkpoint (``format = "tensorcfr-checkpoint"``): ``regrets``, ``cumulative_strategy``,
  ``strategy``, ``predictions`` [A] in the solver dtype; metadata: game string, iteration,
  solver parameters and a fingerprint of the tree (infoset keys and action ids) so a
  checkpoint is never resumed on a different game.

Truncated, corrupt, wrong-format or wrong-game files raise
:class:`~tensorcfr.errors.CorruptFileError` with a one-line message.

This module knows no game library and no solver class: conversions to and from OpenSpiel's
``TabularPolicy`` live in :mod:`tensorcfr.games.openspiel.policy`, and
:func:`tensorcfr.core.solver.load_checkpoint` turns a :class:`CheckpointData` read here back
into a solver.
"""

from __future__ import annotations

import hashlib
import json
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import torch
from torch import Tensor

from tensorcfr.core.tree import LevelTree
from tensorcfr.errors import CorruptFileError, TensorCFRError
from tensorcfr.utils.reading import require_keys, saved_count
from tensorcfr.utils.io import atomic_path

__all__ = [
    "POLICY_FORMAT",
    "CHECKPOINT_FORMAT",
    "SavedPolicy",
    "tree_fingerprint",
    "save_policy",
    "load_policy",
    "save_checkpoint",
    "read_checkpoint",
    "read_checkpoint_metadata",
    "CheckpointData",
]

POLICY_FORMAT = "tensorcfr-policy"
CHECKPOINT_FORMAT = "tensorcfr-checkpoint"
FORMAT_VERSION = 1


def tree_fingerprint(tree: LevelTree) -> str:
    """SHA-256 over the infoset keys, their players and the action ids of a tree (hex)."""
    digest = hashlib.sha256()
    digest.update(tree.game_string.encode())
    digest.update(np.asarray(tree.infoset_num_actions.cpu(), dtype=np.int64).tobytes())
    digest.update(np.asarray(tree.infoset_player.cpu(), dtype=np.int64).tobytes())
    digest.update(np.asarray(tree.action_id.cpu(), dtype=np.int64).tobytes())
    for key in tree.infoset_keys:
        digest.update(key.encode())
        digest.update(b"\x00")
    return digest.hexdigest()


# ----------------------------------------------------------------------------- npz helpers
def _write_npz(path: str | Path, arrays: dict[str, np.ndarray], metadata: dict[str, Any]) -> None:
    payload = dict(arrays)
    payload["metadata_json"] = np.frombuffer(json.dumps(metadata).encode("utf-8"), dtype=np.uint8)
    with atomic_path(path) as tmp:
        with open(tmp, "wb") as handle:
            np.savez(handle, **payload)


def _read_npz(path: str | Path, expected_format: str) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    from tensorcfr.utils.reading import check_input_file

    path = Path(path)
    if not path.exists() and not path.is_symlink():
        raise CorruptFileError(f"{path}: no such file")
    check_input_file(path, "NPZ file")  # a folder, FIFO or device: refused unopened
    try:
        with np.load(path, allow_pickle=False) as archive:
            arrays = {name: archive[name] for name in archive.files}
    except (OSError, ValueError, zipfile.BadZipFile, EOFError, KeyError, TypeError,
            NotImplementedError) as exc:  # NotImplementedError: a damaged compression field
        raise CorruptFileError(f"{path}: not a readable NPZ file ({type(exc).__name__}: "
                               f"{str(exc).splitlines()[0] if str(exc) else 'truncated'})") from None
    from tensorcfr.utils.checks import check_finite

    for name, array in arrays.items():
        if name != "metadata_json":
            check_finite(array, f"{path}: array {name!r}")
    raw = arrays.pop("metadata_json", None)
    if raw is None or raw.dtype != np.uint8:
        raise CorruptFileError(f"{path}: missing metadata, not a {expected_format} file")
    try:
        from tensorcfr.utils.reading import strict_json_loads

        metadata = strict_json_loads(raw.tobytes().decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        raise CorruptFileError(f"{path}: corrupt metadata") from None
    from tensorcfr.utils.manifest import check_format

    metadata = check_format(metadata, expected_format, path, f"a {expected_format} file",
                            version=FORMAT_VERSION)
    return arrays, metadata


def _require(arrays: dict[str, np.ndarray], name: str, shape: tuple[int, ...], path: Any) -> np.ndarray:
    if name not in arrays:
        raise CorruptFileError(f"{path}: array {name!r} is missing")
    array = arrays[name]
    if tuple(array.shape) != shape:
        raise CorruptFileError(f"{path}: array {name!r} has shape {tuple(array.shape)}, "
                               f"expected {shape}")
    return array


# ----------------------------------------------------------------------------- policies
@dataclass
class SavedPolicy:
    """A policy read back from disk.

    Attributes:
        game_string: the game it was computed for.
        infoset_keys: ``I`` information-state strings.
        infoset_player: long [I].
        infoset_num_actions: long [I].
        action_id: long [A], the game's action id of each slot.
        probabilities: float64 [A], probability of each slot (sums to 1 per infoset).
        extra: free-form metadata saved with the policy.
    """

    game_string: str
    infoset_keys: list[str]
    infoset_player: Tensor
    infoset_num_actions: Tensor
    action_id: Tensor
    probabilities: Tensor
    extra: dict[str, Any] = field(default_factory=dict)

    def slots_for(self, tree: LevelTree) -> Tensor:
        """The probabilities [A] rearranged to ``tree``'s slot order (same game required)."""
        if tree.game_string != self.game_string:
            raise CorruptFileError(f"policy is for {self.game_string}, not {tree.game_string}")
        if (tree.infoset_keys == self.infoset_keys
                and torch.equal(tree.action_id.cpu(), self.action_id)):
            return self.probabilities.clone()
        index = {key: i for i, key in enumerate(self.infoset_keys)}
        offsets = torch.zeros(len(self.infoset_keys), dtype=torch.long)
        if len(self.infoset_keys):
            offsets[1:] = torch.cumsum(self.infoset_num_actions, 0)[:-1]
        out = torch.empty(tree.num_slots, dtype=torch.float64)
        tree_offsets = tree.infoset_action_offset.cpu()
        tree_actions = tree.action_id.cpu()
        for i, key in enumerate(tree.infoset_keys):
            j = index.get(key)
            n = int(tree.infoset_num_actions[i])
            if j is None or int(self.infoset_num_actions[j]) != n:
                raise CorruptFileError(f"policy does not match the game tree at {key!r}")
            src = slice(int(offsets[j]), int(offsets[j]) + n)
            dst = slice(int(tree_offsets[i]), int(tree_offsets[i]) + n)
            if not torch.equal(self.action_id[src], tree_actions[dst]):
                raise CorruptFileError(f"policy actions differ from the game's at {key!r}")
            out[dst] = self.probabilities[src]
        return out


def save_policy(path: str | Path, tree: LevelTree, policy: Tensor,
                extra: dict[str, Any] | None = None) -> None:
    """Write ``policy`` [A] (tree slot order) with the tree's keys to ``path`` (NPZ, atomic)."""
    if tuple(policy.shape) != (tree.num_slots,):
        raise TensorCFRError(f"policy must have shape ({tree.num_slots},), got "
                             f"{tuple(policy.shape)}")
    metadata = {
        "format": POLICY_FORMAT, "version": FORMAT_VERSION, "game": tree.game_string,
        "num_players": tree.num_players, "num_infosets": tree.num_infosets,
        "num_action_slots": tree.num_slots, "infoset_keys": list(tree.infoset_keys),
        "fingerprint": tree_fingerprint(tree), "extra": dict(extra or {}),
    }
    arrays = {
        "probabilities": policy.detach().cpu().to(torch.float64).numpy(),
        "action_id": tree.action_id.cpu().numpy().astype(np.int64),
        "infoset_num_actions": tree.infoset_num_actions.cpu().numpy().astype(np.int64),
        "infoset_player": tree.infoset_player.cpu().numpy().astype(np.int64),
    }
    _write_npz(path, arrays, metadata)


def load_policy(path: str | Path) -> SavedPolicy:
    """Read a policy written by :func:`save_policy` (``CorruptFileError`` if unreadable)."""
    arrays, metadata = _read_npz(path, POLICY_FORMAT)
    try:
        keys = [str(k) for k in metadata["infoset_keys"]]
        num_slots = saved_count(metadata["num_action_slots"], path, "policy",
                                "num_action_slots", 2**40)
        game_string = str(metadata["game"])
    except (KeyError, TypeError, ValueError):
        raise CorruptFileError(f"{path}: incomplete policy metadata") from None
    num_infosets = len(keys)
    probabilities = _require(arrays, "probabilities", (num_slots,), path)
    action_id = _require(arrays, "action_id", (num_slots,), path)
    num_actions = _require(arrays, "infoset_num_actions", (num_infosets,), path)
    players = _require(arrays, "infoset_player", (num_infosets,), path)
    if int(num_actions.sum()) != num_slots or (num_actions < 1).any():
        raise CorruptFileError(f"{path}: inconsistent action counts")
    if not np.isfinite(probabilities).all() or (probabilities < 0).any():
        raise CorruptFileError(f"{path}: probabilities are not finite and non-negative")
    return SavedPolicy(
        game_string=game_string, infoset_keys=keys,
        infoset_player=torch.as_tensor(players, dtype=torch.long),
        infoset_num_actions=torch.as_tensor(num_actions, dtype=torch.long),
        action_id=torch.as_tensor(action_id, dtype=torch.long),
        probabilities=torch.as_tensor(probabilities, dtype=torch.float64),
        extra=dict(metadata.get("extra") or {}),
    )


# ----------------------------------------------------------------------------- checkpoints
class CheckpointSolver(Protocol):
    """What :func:`save_checkpoint` needs of a solver (``TensorCFRSolver`` has it)."""

    tree: LevelTree
    iteration: int

    @property
    def game_string(self) -> str: ...

    def parameters(self) -> dict[str, Any]: ...

    def state_tensors(self) -> dict[str, Tensor]: ...


def save_checkpoint(solver: CheckpointSolver, path: str | Path) -> None:
    """Write the solver's complete state to ``path`` (NPZ, atomic).

    Resuming with :func:`tensorcfr.core.solver.load_checkpoint` and running ``M`` more
    iterations gives bitwise the same state as running ``N + M`` iterations straight.
    """
    state = solver.state_tensors()
    metadata = {
        "format": CHECKPOINT_FORMAT, "version": FORMAT_VERSION, "game": solver.game_string,
        "iteration": solver.iteration, "parameters": solver.parameters(),
        "num_action_slots": solver.tree.num_slots, "num_infosets": solver.tree.num_infosets,
        "fingerprint": tree_fingerprint(solver.tree),
    }
    _write_npz(path, {name: t.numpy() for name, t in state.items()}, metadata)


def read_checkpoint_metadata(path: str | Path) -> dict[str, Any]:
    """The JSON metadata of a checkpoint (game, iteration, parameters...)."""
    _, metadata = _read_npz(path, CHECKPOINT_FORMAT)
    return metadata


@dataclass
class CheckpointData:
    """A checkpoint read and checked by :func:`read_checkpoint`.

    Attributes:
        path: the file it came from (for messages).
        game_string: the game the solver ran on.
        iteration: iterations done.
        parameters: keyword arguments of the solver (``algo``, ``alternating``, ``alpha``,
            ``beta``, ``gamma``, ``dtype``).
        num_slots: number of infoset-action slots ``A``.
        fingerprint: :func:`tree_fingerprint` of the tree it was computed on.
        state: ``regrets``, ``cumulative_strategy``, ``strategy``, ``predictions``: finite
            float tensors [A] in the tree's slot order (CPU).
    """

    path: str
    game_string: str
    iteration: int
    parameters: dict[str, Any]
    num_slots: int
    fingerprint: str
    state: dict[str, Tensor]

    def check_tree(self, tree: LevelTree) -> None:
        """Raise :class:`CorruptFileError` unless ``tree`` is the tree of this checkpoint."""
        if tree.game_string != self.game_string:
            raise CorruptFileError(f"{self.path}: checkpoint is for {self.game_string}, not "
                                   f"{tree.game_string}")
        if tree.num_slots != self.num_slots or tree_fingerprint(tree) != self.fingerprint:
            raise CorruptFileError(f"{self.path}: checkpoint does not match the tree of "
                                   f"{self.game_string}")


def read_checkpoint(path: str | Path) -> CheckpointData:
    """Read and check a checkpoint written by :func:`save_checkpoint`
    (:class:`CorruptFileError` with one line if it is not a complete, finite checkpoint)."""
    arrays, metadata = _read_npz(path, CHECKPOINT_FORMAT)
    try:
        game_string = str(metadata["game"])
        iteration = saved_count(metadata["iteration"], path, "checkpoint", "iteration")
        params = dict(metadata["parameters"])
        num_slots = saved_count(metadata["num_action_slots"], path, "checkpoint",
                                "num_action_slots", 2**40)
        fingerprint = str(metadata["fingerprint"])
        require_keys(params, {"algo": str, "alternating": bool, "alpha": float, "beta": float,
                              "gamma": float, "dtype": str}, path, "checkpoint",
                     where="in parameters")
        parameters = {"algo": str(params["algo"]), "alternating": bool(params["alternating"]),
                      "alpha": float(params["alpha"]), "beta": float(params["beta"]),
                      "gamma": float(params["gamma"]), "dtype": str(params["dtype"])}
    except (KeyError, TypeError, ValueError):
        raise CorruptFileError(f"{path}: incomplete checkpoint metadata") from None
    state = {}
    for name in ("regrets", "cumulative_strategy", "strategy", "predictions"):
        array = _require(arrays, name, (num_slots,), path)
        if not np.issubdtype(array.dtype, np.floating) or not np.isfinite(array).all():
            raise CorruptFileError(f"{path}: array {name!r} is not finite floats")
        state[name] = torch.as_tensor(array)
    return CheckpointData(path=str(path), game_string=game_string, iteration=iteration,
                          parameters=parameters, num_slots=num_slots,
                          fingerprint=fingerprint, state=state)
