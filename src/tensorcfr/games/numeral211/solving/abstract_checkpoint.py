"""Checkpoints of abstract solves (bucketed CFR, Embedding CFR, CFR-BR floors) of Numeral211.

The full-game solver's checkpoints (:func:`~.solver.save_checkpoint`) hold its regret and
average tables; an abstract solve's state is smaller: the advisors' regrets and cumulative
strategies (:meth:`~tensorcfr.abstraction.abstract_cfr.AbstractCFR.state_arrays`), plus, for
CFR-BR, the tracked best current strategies (:meth:`~tensorcfr.abstraction.cfr_br.CFRBR.
state_arrays`).  A resumed run continues bitwise as an uninterrupted one.

File: NPZ with those arrays and ``meta`` (JSON): ``format`` (:data:`ABSTRACT_CHECKPOINT_FORMAT`),
``game`` (the solved variant), ``iteration``, ``solver`` (``"cfr"`` for bucketed / Embedding
CFR, ``"cfr-br"``), ``algo``, ``averaging``, ``method``, ``source`` (the bucket map or
embedding file), ``phi_top``, ``fingerprint`` (SHA-256 of the embeddings as used, so a resume
with another abstraction is refused), ``dtype`` and the ``curve`` so far.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from tensorcfr.abstraction.abstract_cfr import AbstractCFR, Embedding
from tensorcfr.errors import CorruptFileError
from tensorcfr.games.numeral211.game.config import GameConfig
from tensorcfr.games.numeral211.solving.solver import (_array, _meta_json, _read_npz, _write_npz,
                                                       restore_tables)

__all__ = ["ABSTRACT_CHECKPOINT_FORMAT", "embedding_fingerprint", "save_abstract_checkpoint",
           "read_abstract_checkpoint_meta", "load_abstract_checkpoint"]

ABSTRACT_CHECKPOINT_FORMAT = "tensorcfr.numeral211.abstract-checkpoint/1"


def embedding_fingerprint(embeddings: Sequence[Embedding]) -> str:
    """SHA-256 (hex) of the per-round embeddings (advisor ids and float64 weights)."""
    digest = hashlib.sha256()
    for emb in embeddings:
        digest.update(str((emb.num_advisors, tuple(emb.index.shape))).encode())
        digest.update(emb.index.cpu().numpy().astype(np.int64).tobytes())
        digest.update(emb.weight.cpu().double().numpy().tobytes())
    return digest.hexdigest()


def save_abstract_checkpoint(path: str | Path, solver: AbstractCFR, config: GameConfig, *,
                             fingerprint: str, cfr_br: Any = None, **meta: Any) -> None:
    """Write the abstract solver's state (atomic), CFR-BR's tracking arrays with ``cfr_br``;
    ``meta``: ``method``, ``source``, ``phi_top``, ``curve``... (stored as given)."""
    arrays = dict(solver.state_arrays())
    if cfr_br is not None:
        arrays.update(cfr_br.state_arrays())
    arrays["meta"] = _meta_json({
        "format": ABSTRACT_CHECKPOINT_FORMAT, "game": config.to_dict(),
        "iteration": solver.iteration, "solver": "cfr-br" if cfr_br is not None else "cfr",
        "algo": solver.variant.name, "averaging": solver.averaging,
        "regret_baseline": solver.regret_baseline, "fingerprint": fingerprint,
        "dtype": str(solver.dtype).removeprefix("torch."),
        **meta})
    _write_npz(path, arrays)


def read_abstract_checkpoint_meta(path: str | Path) -> dict[str, Any]:
    """The ``meta`` of an abstract checkpoint (format checked: CorruptFileError)."""
    return _read_npz(path, "checkpoint", ABSTRACT_CHECKPOINT_FORMAT)[0]


def load_abstract_checkpoint(path: str | Path, solver: AbstractCFR, config: GameConfig, *,
                             fingerprint: str, cfr_br: Any = None) -> dict[str, Any]:
    """Restore ``solver`` (and ``cfr_br``) from a checkpoint of the same game, abstraction
    (``fingerprint``), solver kind, algorithm, averaging and dtype; returns its meta.
    CorruptFileError (one line naming the file) on damage or any mismatch."""
    from tensorcfr.utils.reading import reading

    with reading(path, "checkpoint"):
        return _load_abstract_checkpoint(path, solver, config, fingerprint, cfr_br)


def _load_abstract_checkpoint(path: str | Path, solver: AbstractCFR, config: GameConfig,
                              fingerprint: str, cfr_br: Any) -> dict[str, Any]:
    meta, data = _read_npz(path, "checkpoint", ABSTRACT_CHECKPOINT_FORMAT)
    name = str(path)
    if meta.get("game") != config.to_dict():
        raise CorruptFileError(f"checkpoint {name!r} is for another game variant "
                               f"({meta.get('game')}), not {config.describe()}")
    kind = "cfr-br" if cfr_br is not None else "cfr"
    if meta.get("solver") != kind:
        raise CorruptFileError(f"checkpoint {name!r} is a {meta.get('solver')} run; resume "
                               + ("with --cfr-br" if meta.get("solver") == "cfr-br" else
                                  "without --cfr-br"))
    if meta.get("fingerprint") != fingerprint:
        raise CorruptFileError(f"checkpoint {name!r} was made with another abstraction or "
                               f"embedding ({meta.get('source')}, phi-top "
                               f"{meta.get('phi_top')}); resume with the same file and options")
    for key, have in (("algo", solver.variant.name), ("averaging", solver.averaging),
                      ("dtype", str(solver.dtype).removeprefix("torch."))):
        if meta.get(key) != have:
            raise CorruptFileError(f"checkpoint {name!r} was made with --{key} "
                                   f"{meta.get(key)}; resume with the same --{key}")
    made = meta.get("regret_baseline", "infoset")  # (checkpoints before issue 28: infoset)
    if made != solver.regret_baseline:
        raise CorruptFileError(f"checkpoint {name!r} was made with --regret-baseline {made}; "
                               "resume with the same --regret-baseline")
    restore_tables(solver, meta, data, path)
    if cfr_br is not None:
        extra = {k: _array(data, k, "checkpoint", path, allow_inf=True) for k in data.files
                 if k.startswith("cfrbr_")}
        cfr_br.load_state_arrays(extra)
    return meta
