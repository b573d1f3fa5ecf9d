"""The ``round-search`` agent: a search that does not assume it knows the cards to come.

``pimc`` solves each determinization to the end of the game, so every draw also fixes the
deals of the rounds to come and PIMC plays as if it knew them. This agent draws only the
**opponent's current hand** (the other unseen cards stay a set) and searches:

* at each of its plays, K opponent hands are drawn uniformly from the unseen cards (seeded,
  as ``pimc``: ``random.Random("round-search:{seed}:{play index}")``);
* for each, every legal play is searched by alpha-beta **to the end of the current round**,
  both hands of the round known (:mod:`.round_search_kernel`, compiled);
* the position after the round's last play is public (both hands are empty): its value is
  the points won so far plus a **round-end value network**'s estimate of Alex's future
  points minus Bob's, expected over the deals still possible. The network
  (:class:`RoundValueNet`, trained by :mod:`..learning.round_value` on double-dummy solves
  of sampled deals) reads the pool, the cards still to be dealt, the next round, the last
  capturer and the clubs race: nothing of how the remaining cards will be dealt;
* in the last round nothing is left to deal, the search reaches the game's end and is
  exact for the drawn hand;
* the play of the best mean value over the draws is played (ties: the first in
  :meth:`Observation.legal_actions` order), with the budget rules of ``pimc`` (K draws,
  optionally ``seconds_per_move``, ``max_reply_seconds``).

Values (:meth:`RoundSearchAgent.estimates`) are whole-game points differences from the
mover's side, as every agent's. This module reads observations only (the true state a runner
might pass is ignored); the network's weights are a file of the package (or ``--model``-like
path given to :class:`RoundValueNet`).
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from tensorcfr.errors import TensorCFRError
from tensorcfr.games.pasur.engine import rules
from tensorcfr.games.pasur.playing.pimc import ActionValues, PimcAgent

__all__ = ["DEFAULT_VALUE_NET", "RoundSearchAgent", "RoundSearcher", "RoundValueNet",
           "VALUE_NET_FILE", "round_search_values_many"]

VALUE_NET_FILE = "round_value.npz"
"""The weights file of a round-end value network folder (with ``manifest.json``)."""
DEFAULT_VALUE_NET = "games/pasur/data/round_value"
"""The network shipped with the package (relative to the ``tensorcfr`` package)."""
_WEIGHT_NAMES = ("w1", "b1", "w2", "b2", "w3", "b3")


@dataclass(frozen=True)
class RoundValueNet:
    """The round-end value network's weights (float64, C order; shapes in
    :mod:`.round_search_kernel`) and its manifest (how it was trained)."""

    w1: np.ndarray
    b1: np.ndarray
    w2: np.ndarray
    b2: np.ndarray
    w3: np.ndarray
    b3: np.ndarray
    manifest: dict

    def __post_init__(self) -> None:
        from tensorcfr.games.pasur.playing.round_search_kernel import NUM_FEATURES

        h1, h2 = self.b1.shape[0], self.b2.shape[0]
        shapes = {"w1": (NUM_FEATURES, h1), "b1": (h1,), "w2": (h1, h2), "b2": (h2,),
                  "w3": (h2,), "b3": (1,)}
        for name, shape in shapes.items():
            if getattr(self, name).shape != shape:
                raise TensorCFRError(f"round value network: {name} has shape "
                                     f"{getattr(self, name).shape}, expected {shape}")

    def arrays(self) -> tuple[np.ndarray, ...]:
        """``(w1, b1, w2, b2, w3, b3)`` as the kernel takes them."""
        return tuple(getattr(self, n) for n in _WEIGHT_NAMES)

    @classmethod
    def from_arrays(cls, arrays: dict[str, np.ndarray], manifest: dict | None = None
                    ) -> "RoundValueNet":
        return cls(*(np.ascontiguousarray(arrays[n], dtype=np.float64) for n in _WEIGHT_NAMES),
                   manifest=dict(manifest or {}))

    @classmethod
    def zero(cls, hidden: tuple[int, int] = (8, 8)) -> "RoundValueNet":
        """A network that values every round's end at 0 (the future ignored): a baseline
        and a cheap stand-in for tests."""
        from tensorcfr.games.pasur.playing.round_search_kernel import NUM_FEATURES

        h1, h2 = hidden
        return cls(np.zeros((NUM_FEATURES, h1)), np.zeros(h1), np.zeros((h1, h2)),
                   np.zeros(h2), np.zeros(h2), np.zeros(1), manifest={"kind": "zero"})

    @classmethod
    def load(cls, folder: str | Path | None = None) -> "RoundValueNet":
        """The network in ``folder`` (``round_value.npz`` + ``manifest.json``); ``None``: the
        one shipped with the package. A missing or unreadable file is one error line."""
        from tensorcfr.utils.manifest import MAX_MANIFEST_BYTES
        from tensorcfr.utils.reading import damaged, load_json, load_npz

        if folder is None:
            base = resources.files("tensorcfr").joinpath(DEFAULT_VALUE_NET)
            folder = Path(str(base))
        folder = Path(folder)
        path = folder / VALUE_NET_FILE
        what = "round value network"
        if not os.path.lexists(path):
            raise TensorCFRError(f"{folder} holds no round value network ({VALUE_NET_FILE}); "
                                 "train one with `tensorcfr pasur train-round-value`")
        arrays = load_npz(path, what, required=_WEIGHT_NAMES)
        for name in _WEIGHT_NAMES:
            if arrays[name].dtype.kind not in "fiu":
                raise damaged(path, what, f"array {name!r} holds {arrays[name].dtype}, not "
                              "numbers")
        manifest_path = folder / "manifest.json"
        manifest: Any = {}
        if os.path.lexists(manifest_path):  # a FIFO or device there is refused, not read
            manifest = load_json(manifest_path, "round value network manifest",
                                 MAX_MANIFEST_BYTES)
            if not isinstance(manifest, dict):
                raise damaged(manifest_path, "round value network manifest", "not a JSON object")
        try:
            return cls.from_arrays(arrays, manifest)
        except TensorCFRError as exc:
            raise damaged(path, what, str(exc).removeprefix("round value network: ")) from None

    def save(self, folder: str | Path) -> Path:
        """Write ``round_value.npz`` and ``manifest.json`` into ``folder`` (atomically)."""
        from tensorcfr.utils.io import atomic_path, write_json_atomic

        folder = Path(folder)
        with atomic_path(folder / VALUE_NET_FILE) as tmp:
            with open(tmp, "wb") as handle:
                np.savez(handle, **{n: getattr(self, n) for n in _WEIGHT_NAMES})
        write_json_atomic(folder / "manifest.json", self.manifest)
        return folder


class RoundSearcher:
    """Round searches of determinized positions, with their buffers (reused across calls;
    one per thread: not thread-safe)."""

    def __init__(self, net: RoundValueNet) -> None:
        from tensorcfr.games.pasur.solving import double_dummy_kernel as ddk

        self.net = net
        self._weights = net.arrays()
        rows = rules.NUM_PLAYS + 1
        self._move_card = np.zeros((rows, ddk.MAX_MOVES), dtype=np.int64)
        self._move_cap = np.zeros((rows, ddk.MAX_MOVES), dtype=np.int64)
        self._move_key = np.zeros((rows, ddk.MAX_MOVES), dtype=np.int64)
        self._ints = np.zeros((rows, 8), dtype=np.int64)
        self._vals = np.zeros((rows, 4), dtype=np.float64)
        self._scratch = np.zeros((5, ddk.MAX_MOVES), dtype=np.int64)
        self._index = np.zeros(128, dtype=np.int64)
        self._h1 = np.zeros(net.b1.shape[0], dtype=np.float64)
        self._h2 = np.zeros(net.b2.shape[0], dtype=np.float64)
        self._out_card = np.zeros(ddk.MAX_MOVES, dtype=np.int64)
        self._out_cap = np.zeros(ddk.MAX_MOVES, dtype=np.int64)
        self._out_value = np.zeros(ddk.MAX_MOVES, dtype=np.float64)
        self.stats = np.zeros(4, dtype=np.int64)
        """[nodes, overflow, -, leaves valued by the network] of the last call."""

    def action_values(self, state: rules.GameState) -> list[tuple[rules.Action, float]]:
        """Every legal play at ``state`` (a full, determinized position) with its value: the
        whole-game Alex-minus-Bob points if it is played, both then play the round out
        optimally knowing the round's hands, and the rest of the game is worth the network's
        estimate (exact in the last round). :func:`rules.legal_actions` order."""
        if state.is_terminal:
            return []
        from tensorcfr.games.pasur.playing import round_search_kernel as kernel
        from tensorcfr.games.pasur.solving.double_dummy import position_arrays

        hands, masks, pos = position_arrays(state)
        t, pool, rel_a, rel_b, clubs_a, clubs_b, last, _points = pos
        self.stats[:] = 0
        n = int(kernel.round_play_values(
            t, pool, rel_a, rel_b, clubs_a, clubs_b, last, hands, masks, *self._weights,
            self._move_card, self._move_cap, self._move_key, self._ints, self._vals,
            self._scratch, self._index, self._h1, self._h2, self.stats,
            self._out_card, self._out_cap, self._out_value))
        if n < 0:
            raise TensorCFRError("the round search's move buffer overflowed (a pool with "
                                 "more plays than the kernel holds)")
        base = rules.utility(state)
        sign = 1 if state.player == rules.ALEX else -1
        by_play = {(int(c), int(m)): base + sign * float(v) for c, m, v in
                   zip(self._out_card[:n], self._out_cap[:n], self._out_value[:n])}
        out = []
        for action in rules.legal_actions(state):
            mask = 0
            for c in action.captured:
                mask |= 1 << c
            out.append((action, by_play[(action.card, mask)]))
        return out

    def action_values_many(self, states: Sequence[rules.GameState], *,
                           deadline: float | None = None
                           ) -> list[list[tuple[rules.Action, float]]]:
        """:meth:`action_values` of each state; with ``deadline`` (``time.perf_counter()``
        seconds) :class:`~..solving.exact.DeadlineExceeded` is raised when it has passed as
        a state is to be started."""
        from tensorcfr.games.pasur.solving.exact import DeadlineExceeded

        out = []
        for state in states:
            if deadline is not None and time.perf_counter() > deadline:
                raise DeadlineExceeded("the search's deadline passed")
            out.append(self.action_values(state))
        return out


_SEARCHERS: dict[int, RoundSearcher] = {}


def round_search_values_many(states: Sequence[rules.GameState], net: RoundValueNet, *,
                             deadline: float | None = None
                             ) -> list[list[tuple[rules.Action, float]]]:
    """:meth:`RoundSearcher.action_values_many` with a searcher kept per network."""
    searcher = _SEARCHERS.get(id(net))
    if searcher is None or searcher.net is not net:
        searcher = _SEARCHERS[id(net)] = RoundSearcher(net)
    return searcher.action_values_many(states, deadline=deadline)


class RoundSearchAgent(PimcAgent):
    """Draws of the opponent's hand, each searched to the round's end with a learned value
    of the rest of the game (see the module's text)."""

    name = "round-search"

    def __init__(self, determinizations: int = 32, seconds_per_move: float | None = None,
                 net: RoundValueNet | None = None, device: str = "cpu") -> None:
        super().__init__(determinizations, seconds_per_move, device=device)
        self.net = net if net is not None else RoundValueNet.load()
        self._searcher = RoundSearcher(self.net)

    # The draws are pimc's (:meth:`PimcAgent._draws`): a uniform opponent hand, the other
    # unseen cards filling the deal in a random order that the search never reads (at the
    # round's end it sees only their set).

    def _solve_draws(self, states: Sequence[rules.GameState], deadline: float | None = None
                     ) -> list[ActionValues]:
        """Every legal play's value in each draw, searched to the round's end."""
        solved = self._searcher.action_values_many(states, deadline=deadline)
        return solved  # type: ignore[return-value]
