"""Numeral211 full-game solver API: solve, exploitability, policy files, abstract policies.

This module is the entry point for everything that needs the *unabstracted* game: the CLI
(``tensorcfr numeral211 ...``) and the abstraction code, which measures abstract strategies
in the full game.

Layout of a policy (``Policy``, what :func:`exploitability` takes)
-----------------------------------------------------------------
A full-game policy is a list with one tensor per round ``r`` (0 preflop, 1 flop, 2 turn) of
shape ``[S_r, P_r, B_r, H]``:

* ``S_r`` action *slots* of the round's betting template
  (:attr:`Numeral211PublicGame.betting` ``[r]``: node ``j`` owns slots
  ``slot_offsets[j] : slot_offsets[j] + len(actions[j])``; actions in the order fold,
  check/call, bet/raise, illegal ones left out);
* ``P_r`` betting *prefixes* (exit sequences of the earlier rounds; prefix ``e * P_{r-1} +
  q`` = exit ``e`` of round r-1 after prefix ``q``; :func:`prefix_histories` lists them);
* ``B_r`` canonical boards of :mod:`.isomorphism` (1 / R / R(2R-1) with 4 suits);
* ``H`` private hands in :func:`~.config.hand_cards` order.

Values are the probabilities of each slot's action for each (prefix, board, hand); they are
read only at the acting player's nodes and for hands that share no card with the board.
A concrete deal is evaluated through its canonical board (hand mapped by the suit
permutation), so the evaluation is exact for *suit-symmetric* policies (the same on
isomorphic infosets): those of :func:`expand_abstract_policy` with bucket maps that are
constant on suit-isomorphic classes, and those read from policy files.  The solver's own
iterates are symmetric only up to rounding (a regret that is 0 in exact arithmetic can come
out +-1e-17 and tip isomorphic hands to different actions), so :func:`exploitability` first
reads a full-game policy at one representative (board, hand) of each isomorphic class
(:func:`symmetrize_policy`, the policy a strategy file stores) and its result is exact for
that policy.

Abstract policies (how the abstraction issue measures an abstraction)
---------------------------------------------------------------------
:class:`AbstractPolicy` holds per round a *bucket map* and a strategy per (betting node,
bucket):

* ``bucket_maps[r]``: int array ``[C_r]`` over the suit-isomorphic classes of round r
  (:meth:`~.isomorphism.Isomorphism.class_table`; 100 / 2,260 / 62,020 in the default
  game) -> bucket in ``0..K_r-1``, or ``[B_r, H]`` over (canonical board, hand) (must be
  constant on classes; clashing entries ignored);
* ``strategies[r]``: float array ``[S_r, P_r, K_r]``: the probability of every action slot
  at every prefix for every bucket (normalised per node; rows that sum to 0 mean uniform).

:func:`expand_abstract_policy` turns it into a full-game policy; :func:`exploitability`
accepts either form.  Exploitability is ``(b0(sigma1) + b1(sigma0)) / 2`` in chips per game
(the best-response values ``b_i`` are expected chips won per deal), and
:func:`to_mbg` converts chips to milli-antes per game (mb/g = thousandths of the ante, as the
authors' code normalises; 1 chip = 200 mb/g with the ante of 5).

Files
-----
* policy files (:func:`save_policy` / :func:`load_policy`): NumPy ``.npz`` with
  ``policy_<r>`` float32 ``[S_r, P_r, C_r]`` (one column per suit-isomorphic class, lossless
  for suit-symmetric policies) and ``meta`` (a JSON string: format, game parameters,
  algorithm, iterations, exploitability when known);
* checkpoints (:func:`save_checkpoint` / :func:`load_checkpoint`): ``.npz`` with the solver's
  full float state (``regrets_<r>``, ``average_<r>``) and ``meta``; resuming continues
  bitwise identically to an uninterrupted run.
"""

from __future__ import annotations

import json
import time
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence, Union

import numpy as np
import torch
from torch import Tensor

from tensorcfr.core.public_tree import (PublicExploitability, PublicTreeCFR,
                                        estimate_solver_bytes, normalize_dense,
                                        public_exploitability)
from tensorcfr.core.regret import average_decay, regret_tolerance
from tensorcfr.core.solver_loop import LoopState, every, run
from tensorcfr.errors import CorruptFileError, TensorCFRError
from tensorcfr.games.numeral211.game.class_game import Numeral211ClassGame
from tensorcfr.games.numeral211.game.config import (STORAGES, GameConfig, GameConfigError,
                                                    Storage)
from tensorcfr.games.numeral211.game.public_game import Numeral211PublicGame, prefix_histories
from tensorcfr.games.numeral211.solving import regret_kernel
from tensorcfr.utils.checks import check_finite, check_finite_result

__all__ = [
    "Policy", "AbstractPolicy", "BucketMapError", "build_game", "prefix_histories",
    "expand_abstract_policy", "class_policy", "uniform_policy", "random_symmetric_policy",
    "exploitability", "to_mbg", "make_solver", "save_policy", "load_policy",
    "save_checkpoint", "load_checkpoint", "SolveProgress", "run_solver", "interrupt_message",
    "POLICY_FORMAT", "CHECKPOINT_FORMAT", "policy_to_classes", "estimate_bytes",
    "symmetrize_policy",
    "read_checkpoint_meta", "class_game", "ClassStorageCFR", "STORAGES", "cell_regrets",
    "solver_storage",
]


POLICY_FORMAT = "tensorcfr.numeral211.policy/1"
CHECKPOINT_FORMAT = "tensorcfr.numeral211.checkpoint/1"

Policy = list  # list[Tensor]: one [S_r, P_r, B_r, H] tensor per round (see the docstring)


class BucketMapError(TensorCFRError):
    """A bucket map or abstract strategy of the wrong shape or range."""


@dataclass
class AbstractPolicy:
    """A strategy over buckets: ``bucket_maps[r]`` ([C_r] per isomorphic class or
    [B_r, H] per canonical board and hand, ints in 0..K_r-1) and ``strategies[r]``
    ([S_r, P_r, K_r] probabilities per action slot, prefix and bucket)."""

    bucket_maps: Sequence[Any]
    strategies: Sequence[Any]


def build_game(config: GameConfig | None = None, *, dtype: torch.dtype = torch.float32,
               device: torch.device | str = "cpu") -> Numeral211PublicGame:
    """The public-tree game of ``config`` (default: the paper's game)."""
    return Numeral211PublicGame(config or GameConfig(), dtype=dtype, device=device)


def _node_slices(game: Numeral211PublicGame, r: int) -> list[slice]:
    tmpl = game.rounds[r]
    return [slice(o, o + a) for o, a in zip(tmpl.slot_offsets, tmpl.num_actions)]


def _normalise_nodes(game: Numeral211PublicGame, r: int, x: Tensor) -> Tensor:
    for sl in _node_slices(game, r):
        x[sl] = normalize_dense(x[sl])
    return x


def _policy_shapes(game: Numeral211PublicGame) -> list[tuple[int, int, int, int]]:
    return [(t.num_slots, p, b, game.num_hands)
            for t, p, b in zip(game.rounds, game.prefixes, game.num_boards)]


def uniform_policy(game: Numeral211PublicGame) -> Policy:
    """Uniform random play at every infoset (full-game layout)."""
    out = []
    for r, shape in enumerate(_policy_shapes(game)):
        x = torch.ones(shape, dtype=game.dtype, device=game.device)
        out.append(_normalise_nodes(game, r, x))
    return out


def _class_index(game: Numeral211PublicGame, r: int) -> tuple[np.ndarray, int]:
    return game.iso.class_table(r)


def _check_bucket_map(game: Numeral211PublicGame, r: int, bucket_map: Any) -> np.ndarray:
    """The [B_r, H] bucket of every (canonical board, hand), -1 for clashing hands."""
    table, num_classes = _class_index(game, r)
    arr = np.asarray(bucket_map)
    if arr.dtype.kind not in "iu":
        raise BucketMapError(f"bucket map of round {r} must hold integers, got {arr.dtype}")
    arr = arr.astype(np.int64)
    if arr.shape == (num_classes,):
        full = np.where(table >= 0, arr[np.maximum(table, 0)], -1)
    elif arr.shape == table.shape:
        full = np.where(table >= 0, arr, -1)
        # constant on isomorphic classes?
        cls = table[table >= 0]
        vals = full[table >= 0]
        first = np.full(num_classes, -1, dtype=np.int64)
        first[cls[::-1]] = vals[::-1]
        if (first[cls] != vals).any():
            raise BucketMapError(f"bucket map of round {r} differs between suit-isomorphic "
                                 "hands; give one bucket per isomorphic class")
    else:
        raise BucketMapError(f"bucket map of round {r} has shape {arr.shape}; expected "
                             f"({num_classes},) (isomorphic classes) or {table.shape} "
                             "(canonical boards x hands)")
    if (full[table >= 0] < 0).any():
        raise BucketMapError(f"bucket map of round {r} has negative buckets")
    return full


def expand_abstract_policy(game: Numeral211PublicGame, policy: AbstractPolicy) -> Policy:
    """The full-game policy [S_r, P_r, B_r, H] per round of an :class:`AbstractPolicy`.

    Raises :class:`BucketMapError` on maps or strategies of the wrong shape, buckets out of
    range, negative or non-finite probabilities."""
    rounds = len(game.rounds)
    if len(policy.bucket_maps) != rounds or len(policy.strategies) != rounds:
        raise BucketMapError(f"an abstract policy needs {rounds} bucket maps and {rounds} "
                             f"strategies, got {len(policy.bucket_maps)} and "
                             f"{len(policy.strategies)}")
    out = []
    for r, (s, p, _, _) in enumerate(_policy_shapes(game)):
        full = _check_bucket_map(game, r, policy.bucket_maps[r])
        strat = torch.as_tensor(np.asarray(policy.strategies[r]), dtype=game.dtype)
        if strat.dim() != 3 or tuple(strat.shape[:2]) != (s, p):
            raise BucketMapError(f"strategy of round {r} has shape {tuple(strat.shape)}; "
                                 f"expected ({s}, {p}, buckets)")
        k = strat.shape[2]
        if full.max(initial=-1) >= k:
            raise BucketMapError(f"bucket map of round {r} uses bucket {int(full.max())} but "
                                 f"the strategy has {k} buckets")
        if not bool(torch.isfinite(strat).all()) or bool((strat < 0).any()):
            raise BucketMapError(f"strategy of round {r} has negative or non-finite "
                                 "probabilities")
        strat = _normalise_nodes(game, r, strat.clone())
        index = torch.as_tensor(np.maximum(full, 0), device=game.device)
        strat = strat.to(game.device)
        out.append(strat[:, :, index])  # [S, P, B, H]
    return out


def class_policy(game: Numeral211PublicGame, per_class: Sequence[Any]) -> Policy:
    """Full-game policy from per-class strategies ``[S_r, P_r, C_r]`` (the policy file
    layout): an abstract policy whose buckets are the isomorphic classes."""
    maps = [np.arange(_class_index(game, r)[1]) for r in range(len(game.rounds))]
    return expand_abstract_policy(game, AbstractPolicy(maps, per_class))


def policy_to_classes(game: Numeral211PublicGame, policy: Policy) -> list[np.ndarray]:
    """Per-class strategies [S_r, P_r, C_r] (float32) of a suit-symmetric full-game
    policy: the value at the first (board, hand) of every class."""
    out = []
    for r, pol in enumerate(policy):
        table, num_classes = _class_index(game, r)
        flat = table.reshape(-1)
        ok = np.flatnonzero(flat >= 0)
        first = np.full(num_classes, -1, dtype=np.int64)
        first[flat[ok][::-1]] = ok[::-1]
        arr = pol.reshape(pol.shape[0], pol.shape[1], -1)[:, :, torch.as_tensor(
            first, device=pol.device)]
        out.append(arr.to(torch.float32).cpu().numpy())
    return out


def _representatives(game: Numeral211PublicGame, r: int) -> Tensor:
    """[B_r * H] flat (board, hand) index of the first member of each entry's isomorphic
    class (the entry itself for hands clashing with the board)."""
    cache = game.__dict__.setdefault("_n211_representatives", {})
    if r not in cache:
        table, num_classes = _class_index(game, r)
        flat = table.reshape(-1)
        ok = np.flatnonzero(flat >= 0)
        first = np.full(num_classes, -1, dtype=np.int64)
        first[flat[ok][::-1]] = ok[::-1]
        rep = np.arange(flat.size)
        rep[ok] = first[flat[ok]]
        cache[r] = torch.as_tensor(rep, device=game.device)
    return cache[r]


def symmetrize_policy(game: Numeral211PublicGame, policy: Policy) -> Policy:
    """The suit-symmetric policy that plays, at every infoset, what ``policy`` plays at the
    first (canonical board, hand) of its isomorphic class (the policy a strategy file
    stores).  The solver's iterates are symmetric up to rounding: where a regret is 0 in
    exact arithmetic, rounding noise can give isomorphic hands different strategies."""
    out = []
    for r, pol in enumerate(policy):
        s, p = pol.shape[:2]
        out.append(pol.reshape(s, p, -1).index_select(2, _representatives(game, r))
                   .reshape(pol.shape))
    return out


def random_symmetric_policy(game: Numeral211PublicGame, seed: int = 0) -> Policy:
    """A random suit-symmetric policy (one random distribution per class and prefix)."""
    rng = np.random.default_rng(seed)
    per_class = []
    for r, (s, p, _, _) in enumerate(_policy_shapes(game)):
        per_class.append(rng.random((s, p, _class_index(game, r)[1])))
    return class_policy(game, per_class)


def to_mbg(chips: float, config: GameConfig) -> float:
    """Chips per game -> mb/g (thousandths of the ante per game)."""
    if config.ante == 0:
        return float("nan")
    return chips * 1000.0 / config.ante


def exploitability(game: Numeral211PublicGame, policy: Union[Policy, AbstractPolicy], *,
                   symmetrize: bool = True,
                   with_policy_values: bool = True) -> PublicExploitability:
    """Exact best-response values and exploitability (chips per game) of ``policy``: a
    full-game policy (list of [S_r, P_r, B_r, H]) or an :class:`AbstractPolicy`.

    A full-game policy is first made suit-symmetric with :func:`symmetrize_policy` (it is
    evaluated as the policy its strategy file stores); ``symmetrize=False`` skips that for a
    policy known to be symmetric; ``with_policy_values=False`` computes only the two best
    responses (half the time; ``policy_values`` is None)."""
    if isinstance(policy, AbstractPolicy):
        policy = expand_abstract_policy(game, policy)
        symmetrize = False  # class-constant by construction
    shapes = _policy_shapes(game)
    if len(policy) != len(shapes):
        raise BucketMapError(f"a policy needs {len(shapes)} rounds, got {len(policy)}")
    checked = []
    for r, (pol, shape) in enumerate(zip(policy, shapes)):
        pol = torch.as_tensor(pol)
        if tuple(pol.shape) != shape:
            raise BucketMapError(f"policy of round {r} has shape {tuple(pol.shape)}, "
                                 f"expected {shape}")
        checked.append(pol.to(device=game.device, dtype=game.dtype))
    if not symmetrize:
        return public_exploitability(game, checked, with_policy_values=with_policy_values)
    # a suit-symmetric policy is evaluated exactly (and 2.4x faster) over the classes
    per_class = class_game(game)
    return class_exploitability(per_class, [
        pol.reshape(pol.shape[0], pol.shape[1], -1).index_select(2, _representatives_only(
            game, r)).unsqueeze(2) for r, pol in enumerate(checked)],
        with_policy_values=with_policy_values)


def class_exploitability(per_class: Numeral211ClassGame, policy: Sequence[Tensor], *,
                         with_policy_values: bool = True) -> PublicExploitability:
    """Exact exploitability (chips per game) of a per-class policy (per round
    [S_r, P_r, 1, C_r], the layout of :class:`ClassStorageCFR`): the same numbers as
    :func:`exploitability` of its expansion to the cells."""
    return public_exploitability(per_class, policy, with_policy_values=with_policy_values)


def _representatives_only(game: Numeral211PublicGame, r: int) -> Tensor:
    """[C_r] flat (board * H + hand) cell of each class's representative (its first cell)."""
    return class_game(game)._rep_cell[r]


def class_game(game: Numeral211PublicGame) -> Numeral211ClassGame:
    """The per-class view of ``game`` (:class:`Numeral211ClassGame`, built once and cached on
    the game)."""
    cached = game.__dict__.get("_n211_class_game")
    if cached is None:
        cached = game.__dict__["_n211_class_game"] = Numeral211ClassGame(game)
    return cached


class ClassStorageCFR(PublicTreeCFR):
    """Exact CFR / CFR+ / LCFR / DCFR on ``game`` with one table entry per suit-isomorphic
    class: a :class:`PublicTreeCFR` over :func:`class_game` (``regrets`` / ``average`` /
    ``strategy`` per round [S_r, P_r, 1, C_r]; the regrets are the cell solver's at each
    class's representative cell, up to rounding).

    :meth:`average_policy` / :meth:`current_policy` return the full-game layout
    [S_r, P_r, B_r, H] (uniform on clashing cells) like the cell solver, so policy files and
    :func:`exploitability` take them unchanged; :meth:`average_class_policy` is the compact
    per-class form (what :func:`run_solver` evaluates)."""

    compiled: bool = True
    """On the CPU (when numba imports) a node of the updating player is updated by one
    compiled pass (:func:`.regret_kernel.node_update`: value scale, regrets, average and
    regret matching, for cfr and cfr+) and the remaining nodes' regret matching by
    :func:`.regret_kernel.regret_matching`, instead of about twenty torch passes over the
    node's arrays; bitwise the torch rules' numbers (the torch rules stay on other devices,
    for the other variants, or when this is False)."""

    def __init__(self, game: Numeral211PublicGame, algo: str = "cfr+", *,
                 max_memory_bytes: int | None = None, **variant: float) -> None:
        self.cell_game = game
        self._fresh: set[tuple[int, int]] = set()  # nodes whose strategy the pass refreshed
        self._match_in_pass = False  # inside iterate(): the strategy is refreshed anyway
        super().__init__(class_game(game), algo, dtype=game.dtype, device=game.device,
                         max_memory_bytes=max_memory_bytes, **variant)
        self.game.prepare()

    def _compiled_here(self) -> bool:
        return self.compiled and regret_kernel.AVAILABLE and self.device.type == "cpu"

    def iterate(self, num_iterations: int = 1) -> None:
        """Run ``num_iterations`` iterations (player 0 then player 1 each time).  Each pass
        refreshes the updated nodes' strategies as it goes (the strategy is refreshed right
        after the pass anyway; a node's strategy is not read again in its own pass)."""
        self._match_in_pass = self._compiled_here()
        try:
            super().iterate(num_iterations)
        finally:
            self._match_in_pass = False

    def fused_node_update(self, r: int, j: int, child_values: Sequence[Tensor], value: Tensor,
                          own_reach: Tensor) -> bool:
        """The :func:`~tensorcfr.core.public_tree.public_pass` hook: update node j of round
        r (children's values, node value and own reach [P_r, 1, C_r] each) by
        :func:`.regret_kernel.node_update`, and inside :meth:`iterate` refresh its strategy
        too (a pass called on its own leaves the strategy as the torch rules do); False (the
        pass runs the torch rules) off the CPU, without numba, or for lcfr / dcfr."""
        if not (self._compiled_here() and self.variant.name in ("cfr", "cfr+")):
            return False
        sl = self._node_slices(r)[j]
        np_dtype = self.regrets[r].numpy().dtype

        def rows(x: Tensor) -> np.ndarray:  # [P, 1, C] -> [P, C] view
            return x.contiguous().numpy().reshape(x.shape[0], -1)

        def slots(x: Tensor) -> np.ndarray:  # [A, P, 1, C] -> [A, P, C] view
            return x[sl].numpy().reshape(sl.stop - sl.start, x.shape[1], -1)

        regret_kernel.node_update(
            tuple(rows(cv) for cv in child_values), rows(value), rows(own_reach),
            slots(self.regrets[r]), slots(self.average[r]), slots(self.strategy[r]),
            self.regret_scale[r][j].numpy().reshape(-1), self.variant.floors_regrets,
            np_dtype.type(average_decay(self.variant, self.iteration)),
            np_dtype.type(regret_tolerance(self.dtype)),
            np_dtype.type(1.0 / (sl.stop - sl.start)), self._match_in_pass)
        if self._match_in_pass:
            self._fresh.add((r, j))
        return True

    def _refresh_strategy(self, player: int) -> None:
        """Regret matching at ``player``'s nodes that the pass did not refresh (see
        :attr:`compiled`)."""
        fresh, self._fresh = self._fresh, set()
        if not self._compiled_here():
            super()._refresh_strategy(player)
            return
        np_dtype = self.regrets[0].numpy().dtype
        tolerance = np_dtype.type(regret_tolerance(self.dtype))
        for r, tmpl in enumerate(self.game.rounds):
            for j, sl in enumerate(self._node_slices(r)):
                if tmpl.players[j] != player or (r, j) in fresh:
                    continue
                regrets = self.regrets[r][sl]
                shape = (regrets.shape[0], regrets.shape[1], -1)
                regret_kernel.regret_matching(
                    regrets.numpy().reshape(shape),
                    self.regret_scale[r][j].numpy().reshape(-1), tolerance,
                    np_dtype.type(1.0 / regrets.shape[0]),
                    self.strategy[r][sl].numpy().reshape(shape))

    def to_cells(self, per_class: Sequence[Tensor], fill_uniform: bool = True) -> list[Tensor]:
        """Per-class tensors [S_r, P_r, 1, C_r] -> cells [S_r, P_r, B_r, H]: every cell
        takes its class's entry; clashing cells get ``1 / actions`` of their node
        (``fill_uniform``) or 0."""
        cls = self.game
        out = []
        for r, x in enumerate(per_class):
            s, p = x.shape[:2]
            padded = torch.cat([x.reshape(s, p, -1), x.new_zeros((s, p, 1))], dim=2)
            if fill_uniform:
                for sl in self._node_slices(r):
                    padded[sl, :, -1] = 1.0 / (sl.stop - sl.start)
            cells = padded.index_select(2, cls._expand[r])
            out.append(cells.reshape(s, p, self.cell_game.num_boards[r],
                                     self.cell_game.num_hands))
        return out

    def average_class_policy(self) -> list[Tensor]:
        """Average strategy per class [S_r, P_r, 1, C_r] (normalised per node)."""
        return super().average_policy()

    def average_policy(self) -> list[Tensor]:
        """Average strategy in the full-game layout [S_r, P_r, B_r, H]."""
        return self.to_cells(self.average_class_policy())

    def current_policy(self) -> list[Tensor]:
        """Current strategy in the full-game layout [S_r, P_r, B_r, H]."""
        return self.to_cells(self.strategy)


def cell_regrets(solver: PublicTreeCFR) -> list[Tensor]:
    """The solver's cumulative regrets in the full-game layout [S_r, P_r, B_r, H] (a
    :class:`ClassStorageCFR`'s expanded to every cell of each class, 0 on clashing cells)."""
    if isinstance(solver, ClassStorageCFR):
        return solver.to_cells(solver.regrets, fill_uniform=False)
    return list(solver.regrets)


def solver_storage(solver: PublicTreeCFR) -> str:
    """``"classes"`` for a :class:`ClassStorageCFR`, else ``"cells"`` (the layout its tables,
    and so its checkpoints, have)."""
    return "classes" if isinstance(solver, ClassStorageCFR) else "cells"


def make_solver(game: Numeral211PublicGame, algo: str = "cfr+", *,
                max_memory_bytes: int | None = None, sampling: Any = None,
                storage: Storage = "classes", **variant: float) -> PublicTreeCFR:
    """An exact solver on ``game`` (memory estimated first; MemoryLimitError when it exceeds
    ``max_memory_bytes``).  ``storage``: ``"classes"`` (default: :class:`ClassStorageCFR`,
    one entry per suit-isomorphic class, about 2.4x less work and memory on the turn) or
    ``"cells"`` (:class:`PublicTreeCFR` per canonical cell, the layout before per-class
    storage); ``sampling``: None (exact full sweeps) or a
    :class:`~tensorcfr.core.public_tree.BoardSampling` (public chance sampling, which always
    runs on cells)."""
    if storage not in STORAGES:
        raise TensorCFRError(f"storage must be one of {', '.join(STORAGES)}, got {storage!r}")
    kwargs = {k: v for k, v in variant.items() if v is not None}
    if storage == "classes" and sampling is None:
        return ClassStorageCFR(game, algo, max_memory_bytes=max_memory_bytes, **kwargs)
    return PublicTreeCFR(game, algo, dtype=game.dtype, device=game.device,
                         max_memory_bytes=max_memory_bytes, sampling=sampling, **kwargs)


# ---------------------------------------------------------------------- files
def _meta_json(meta: dict[str, Any]) -> np.ndarray:
    return np.array(json.dumps(meta))


def _write_npz(path: str | Path, arrays: dict[str, np.ndarray]) -> None:
    from tensorcfr.utils.io import atomic_path

    with atomic_path(path) as tmp:
        with open(tmp, "wb") as fh:
            np.savez(fh, **arrays)


def _read_npz(path: str | Path, what: str, fmt: str) -> tuple[dict[str, Any], Any]:
    from tensorcfr.utils.reading import check_input_file, strict_json_loads

    p = Path(path)
    if not p.exists() and not p.is_symlink():
        raise TensorCFRError(f"{what} {str(path)!r} does not exist")
    check_input_file(p, what)  # a folder, FIFO or device: refused, nothing opened
    try:
        data = np.load(p, allow_pickle=False)
        meta = strict_json_loads(str(data["meta"]))
    except (OSError, ValueError, KeyError, TypeError, zipfile.BadZipFile, EOFError,
            RecursionError, NotImplementedError) as exc:
        raise CorruptFileError(f"{what} {str(path)!r} is not readable ({type(exc).__name__}: "
                               f"{str(exc).splitlines()[0] if str(exc) else 'corrupt'})"
                               ) from None
    from tensorcfr.utils.manifest import check_format

    return check_format(meta, fmt, f"{what} {str(path)!r}", f"a {fmt} file"), data


def _array(data: Any, key: str, what: str, path: str | Path, *,
           allow_inf: bool = False) -> np.ndarray:
    """Array ``key`` of an opened NPZ, checked for NaN (and for infinity unless
    ``allow_inf``: a "none yet" marker such as CFR-BR's best value before any evaluation)."""
    try:
        array = np.asarray(data[key])
    except (KeyError, ValueError, OSError, zipfile.BadZipFile, EOFError,
            NotImplementedError) as exc:
        raise CorruptFileError(f"{what} {str(path)!r}: cannot read {key} "
                               f"({type(exc).__name__})") from None
    if allow_inf and array.dtype.kind in "fc":
        check_finite(np.nan_to_num(array, nan=np.nan, posinf=0.0, neginf=0.0),
                     f"{what} {str(path)!r}: {key}")
        return array
    return check_finite(array, f"{what} {str(path)!r}: {key}")


def save_policy(path: str | Path, game: Numeral211PublicGame, policy: Policy,
                **meta: Any) -> None:
    """Write a suit-symmetric full-game policy to ``path`` (atomic; layout in the module
    docstring).  ``meta`` entries (algo, iterations, exploitability...) go into ``meta``."""
    arrays = {f"policy_{r}": check_finite_result(a, f"the strategy of round {r}")
              for r, a in enumerate(policy_to_classes(game, policy))}
    arrays["meta"] = _meta_json({"format": POLICY_FORMAT, "game": game.config.to_dict(),
                                 "layout": "policy_<r>[slot, prefix, isomorphic class]",
                                 **meta})
    _write_npz(path, arrays)


def load_policy(path: str | Path, *, dtype: torch.dtype = torch.float32,
                device: torch.device | str = "cpu"
                ) -> tuple[Numeral211PublicGame, Policy, dict[str, Any]]:
    """Read a policy file: (game, full-game policy, meta).  CorruptFileError on a damaged or
    foreign file."""
    meta, data = _read_npz(path, "policy file", POLICY_FORMAT)
    try:
        config = GameConfig.from_dict(meta.get("game"))
    except GameConfigError as exc:
        raise CorruptFileError(f"policy file {str(path)!r}: {exc}") from None
    game = build_game(config, dtype=dtype, device=device)
    per_class = []
    for r in range(len(game.rounds)):
        arr = _array(data, f"policy_{r}", "policy file", path)
        want = (game.rounds[r].num_slots, game.prefixes[r], _class_index(game, r)[1])
        if arr.shape != want:
            raise CorruptFileError(f"policy file {str(path)!r}: policy_{r} has shape "
                                   f"{arr.shape}, expected {want}")
        per_class.append(arr)
    try:
        policy = class_policy(game, per_class)
    except BucketMapError as exc:
        raise CorruptFileError(f"policy file {str(path)!r}: {exc}") from None
    return game, policy, meta


def save_checkpoint(path: str | Path, solver: PublicTreeCFR, config: GameConfig,
                    **meta: Any) -> None:
    """Write the solver state (atomic) so that :func:`load_checkpoint` resumes bitwise."""
    arrays = dict(solver.state_arrays())
    variant = solver.variant
    arrays["meta"] = _meta_json({
        "format": CHECKPOINT_FORMAT, "game": config.to_dict(), "iteration": solver.iteration,
        "algo": variant.name, "alpha": variant.alpha, "beta": variant.beta,
        "gamma": variant.gamma, "dtype": str(solver.dtype).removeprefix("torch."),
        "sampling": None if solver.sampling is None else solver.sampling.to_dict(),
        "storage": solver_storage(solver), **meta})
    _write_npz(path, arrays)


def read_checkpoint_meta(path: str | Path) -> dict[str, Any]:
    """The ``meta`` of a checkpoint (format checked)."""
    return _read_npz(path, "checkpoint", CHECKPOINT_FORMAT)[0]


def load_checkpoint(path: str | Path, solver: PublicTreeCFR, config: GameConfig) -> dict:
    """Restore ``solver`` from a checkpoint of the same game, algorithm and dtype; returns
    the checkpoint's meta.  CorruptFileError on damage or a mismatch (one line naming the
    file, whatever the damage: :func:`~tensorcfr.utils.reading.reading`)."""
    from tensorcfr.utils.reading import reading

    with reading(path, "checkpoint"):
        return _load_checkpoint(path, solver, config)


def _load_checkpoint(path: str | Path, solver: PublicTreeCFR, config: GameConfig) -> dict:
    meta, data = _read_npz(path, "checkpoint", CHECKPOINT_FORMAT)
    if meta.get("game") != config.to_dict():
        raise CorruptFileError(f"checkpoint {str(path)!r} is for another game variant "
                               f"({meta.get('game')})")
    v = solver.variant
    if meta.get("algo") != v.name:
        raise CorruptFileError(f"checkpoint {str(path)!r} was made with --algo "
                               f"{meta.get('algo')}; resume with the same algorithm")
    for key in ("alpha", "beta", "gamma"):
        if meta.get(key) != getattr(v, key):
            raise CorruptFileError(f"checkpoint {str(path)!r} was made with --{key} "
                                   f"{meta.get(key)}, not {getattr(v, key)}; resume with "
                                   f"--{key} {meta.get(key)}")
    sampling = None if solver.sampling is None else solver.sampling.to_dict()
    if meta.get("sampling") != sampling:
        made = meta.get("sampling")
        how = ("exact full sweeps" if made is None else
               f"--sample-boards {made.get('boards_per_parent')} --seed {made.get('seed')}")
        raise CorruptFileError(f"checkpoint {str(path)!r} was made with {how}; resume with "
                               "the same sampling")
    storage = solver_storage(solver)
    _check_storage(path, meta, storage)
    try:
        restore_tables(solver, meta, data, path)
    except CorruptFileError as exc:
        if meta.get("storage") is None and "shape" in str(exc):  # an older checkpoint
            other = "cells" if storage == "classes" else "classes"
            raise CorruptFileError(f"checkpoint {str(path)!r}: {exc}; it seems to hold "
                                   f"{_LAYOUT[other]} tables: resume with --storage {other}"
                                   ) from None
        raise
    return meta


def _check_storage(path: str | Path, meta: dict[str, Any], storage: str) -> None:
    """Refuse a checkpoint whose ``meta["storage"]`` is the other layout (checkpoints
    written before the key existed have none: their arrays' shapes tell)."""
    made = meta.get("storage")
    if made is not None and made != storage:
        raise CorruptFileError(f"checkpoint {str(path)!r} holds {_LAYOUT.get(made, made)} "
                               f"tables, this solver {_LAYOUT[storage]} ones; resume with "
                               f"--storage {made}")


_LAYOUT = {"classes": "per-class", "cells": "per-cell"}


def restore_tables(solver: Any, meta: dict[str, Any], data: Any, path: str | Path) -> None:
    """Load the ``regrets_<r>`` / ``average_<r>`` (and ``scale_<r>``) arrays of an opened
    checkpoint ``data``
    and its ``meta["iteration"]`` into ``solver`` (``load_state_arrays``); shared by the
    full-game and the abstract checkpoints.  CorruptFileError on a missing array or count."""
    arrays = {}
    for r in range(len(solver.regrets)):
        for name in ("regrets", "average"):
            arrays[f"{name}_{r}"] = _array(data, f"{name}_{r}", "checkpoint", path)
        if f"scale_{r}" in getattr(data, "files", ()):  # (absent before issue 28)
            arrays[f"scale_{r}"] = _array(data, f"scale_{r}", "checkpoint", path)
    from tensorcfr.utils.reading import MAX_SAVED_ITERATION

    it = meta.get("iteration")
    if not isinstance(it, int) or isinstance(it, bool) or not 0 <= it <= MAX_SAVED_ITERATION:
        raise CorruptFileError(f"checkpoint {str(path)!r} has no valid iteration count "
                               f"({it!r:.40}; at most {MAX_SAVED_ITERATION:,})")
    solver.load_state_arrays(arrays, it)


# ---------------------------------------------------------------------- solve loop
@dataclass
class SolveProgress:
    """What :func:`run_solver` reports after every iteration (``exploitability`` in chips per
    game, None until the first evaluation)."""

    iteration: int
    target: int
    seconds: float
    exploitability: float | None = None
    curve: list[dict[str, float]] = field(default_factory=list)


def interrupt_message(save: str | Path | None) -> Callable[[int, bool], str]:
    """What a stopped Numeral211 solve says after "stopped by SIGINT; " (the
    ``interrupt_message`` of :func:`tensorcfr.core.solver_loop.run`): where the checkpoint
    ``save`` was written and how to continue, or that nothing was saved.  Shared by the
    full-game and the abstract solves."""
    def message(iteration: int, written: bool) -> str:
        if not written:
            return (f"at iteration {iteration:,}; nothing was saved (give --save FILE to keep "
                    "the work of a run)")
        return (f"checkpoint {save} written at iteration {iteration:,}; continue with "
                f"--resume {save}")
    return message


def run_solver(game: Numeral211PublicGame, solver: PublicTreeCFR, iterations: int, *,
               eval_every: int = 0, checkpoint: str | Path | None = None,
               checkpoint_every_seconds: float = 600.0,
               on_progress: Callable[[SolveProgress], None] | None = None,
               curve: list[dict[str, float]] | None = None) -> SolveProgress:
    """Iterate ``solver`` up to ``iterations`` in total (it may already be past some), by
    :func:`tensorcfr.core.solver_loop.run`.

    Every ``eval_every`` iterations (and at the end when ``eval_every`` > 0) the exact
    exploitability of the average policy is computed and appended to the curve
    (``{"iteration", "exploitability", "mbg", "seconds"}``, seconds of wall time since the
    call).  With ``checkpoint`` the state is saved every ``checkpoint_every_seconds`` and at
    the end (with the curve).  SIGINT/SIGTERM stop the run after the iteration under way,
    checkpoint written, with :class:`~tensorcfr.errors.InterruptedRun`."""
    curve = list(curve or [])
    progress = SolveProgress(solver.iteration, iterations, 0.0,
                             curve[-1]["exploitability"] if curve else None, curve)
    started = time.perf_counter()

    def evaluate(state: Any = None) -> float:
        if isinstance(solver, ClassStorageCFR):
            ex = class_exploitability(solver.game, solver.average_class_policy())
        else:
            ex = exploitability(game, solver.average_policy())
        point = {"iteration": solver.iteration, "exploitability": ex.exploitability,
                 "mbg": to_mbg(ex.exploitability, game.config),
                 "seconds": time.perf_counter() - started}
        if not curve or curve[-1]["iteration"] != solver.iteration:
            curve.append(point)
        return ex.exploitability

    def save(state: Any) -> None:
        save_checkpoint(checkpoint, solver, game.config, curve=curve)  # type: ignore[arg-type]

    def report(state: LoopState) -> None:
        progress.iteration, progress.exploitability = state.iteration, state.value
        progress.seconds = state.wall_seconds
        if on_progress is not None:
            on_progress(progress)

    if eval_every and solver.iteration >= iterations and (
            not curve or curve[-1]["iteration"] != solver.iteration):
        progress.exploitability = evaluate()  # nothing to iterate: the final point
    run(solver, iterations, evaluate=evaluate if eval_every else None,
        eval_at=every(eval_every, iterations), on_progress=report,
        checkpoint=save if checkpoint is not None else None,
        checkpoint_seconds=checkpoint_every_seconds,
        interrupt_message=interrupt_message(checkpoint), value=progress.exploitability)
    progress.iteration = solver.iteration
    progress.seconds = time.perf_counter() - started
    progress.curve = curve
    return progress


def estimate_bytes(game: Numeral211PublicGame, storage: str = "classes") -> int:
    """Estimated peak memory (bytes) of solving ``game`` with ``storage`` (see
    :func:`tensorcfr.core.public_tree.estimate_solver_bytes`)."""
    if storage == "classes":
        return estimate_solver_bytes(class_game(game), game.dtype)
    return estimate_solver_bytes(game, game.dtype)

