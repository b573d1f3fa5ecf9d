"""CFR-BR: the least exploitable strategy an abstraction can express (its *floor*).

Johanson, Bard, Burch and Bowling (AAAI 2012), "Finding optimal abstract strategies in
extensive-form games": the abstracted seat runs CFR on its abstraction while its opponent,
*unabstracted*, plays a best response in the full game to the seat's current strategy every
iteration.  The seat's regrets are then regrets against a sequence of best responses, so its
average strategy converges to the abstract strategy whose full-game exploitability is
smallest; Johanson et al. show the current strategies converge as well (with high
probability one of them is as good as the average's bound), which is why they report them.
This separates the quality of an abstraction (its floor) from the quality of the solver that
runs on it (the exploitability of the abstract game's CFR solution, which need not be near
the floor: abstraction pathologies).

Here (game independent, any :class:`~tensorcfr.core.public_tree.PublicTreeGame`):

* :func:`best_response_policy`: the exact best response of one player to a profile, as a
  pure policy over the public tree's cells (one-hot at that player's nodes) with its value;
* :class:`CFRBR`: CFR-BR for **both seats at once** on one
  :class:`~tensorcfr.abstraction.abstract_cfr.AbstractCFR` (bucket map or embedding).  Seat
  0's CFR-BR only touches seat 0's nodes and seat 1's only seat 1's, so the two independent
  runs share one set of regret tables; iteration ``t`` runs, for each seat ``s``: the full
  game's best response of ``1 - s`` to ``s``'s current strategy, one full-sweep CFR pass of
  ``s`` against it (regrets summed per class, then per bucket / advisor as in
  :class:`AbstractCFR`), regret matching.  Full sweeps: exact, no sampling.

Reported numbers (chips per game, the units of the game's terminal values): for seat ``s``,
``b_{1-s}(sigma_s)`` = what the unabstracted opponent wins by best-responding to ``sigma_s``;
the floor follows the Numeral211 issue's convention ``(b1(sigma_0) + b0(sigma_1)) / 2``,
i.e. the exploitability of the profile made of the two seats' CFR-BR strategies.  Both the
average strategy (after ``t`` iterations) and the current strategy (the one played, and
best-responded to, in iteration ``t``; its value comes free with that iteration's best
response) are tracked; :meth:`CFRBR.floor` uses, per seat, the less exploitable of the final
average and the best current strategy seen (each is a strategy the abstraction expresses, so
either value bounds the true floor from above).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np
import torch
from torch import Tensor

from tensorcfr.abstraction.abstract_cfr import AbstractCFR, _Buffers
from tensorcfr.core.public_tree import root_total, PublicTreeGame, public_pass
from tensorcfr.errors import CorruptFileError, TensorCFRError

__all__ = ["best_response_policy", "CFRBR", "SeatFloor", "CFRBRFloor"]


def best_response_policy(game: PublicTreeGame, policy: Sequence[Tensor], player: int
                         ) -> tuple[float, list[Tensor]]:
    """Exact best response of ``player`` to the other player's strategy in ``policy``.

    ``policy``: per round [S_r, P_r, B_r, H] (only the other player's nodes are read).
    Returns ``(value, profile)``: the best response's value (summed over the root hands: the
    game's units, e.g. chips per game) and a copy of ``policy`` whose ``player`` nodes hold
    the pure best response (one-hot per cell; ties go to the first best action)."""
    if player not in (0, 1):
        raise TensorCFRError(f"player must be 0 or 1, got {player!r}")
    profile = [p.clone() for p in policy]
    values = public_pass(game, policy, player, "br", best_response=profile)
    return root_total(game, values), profile


@dataclass
class SeatFloor:
    """CFR-BR result of one seat (values in chips per game): ``average`` =
    b_{1-s}(average strategy), ``current`` = b_{1-s}(current strategy of the last iteration),
    ``best_current`` / ``best_iteration``: the least exploitable current strategy seen,
    ``used``: ``"average"`` or ``"current"`` (the one :meth:`CFRBR.floor` counts)."""

    seat: int
    average: float
    current: float
    best_current: float
    best_iteration: int
    used: str

    @property
    def value(self) -> float:
        """The counted best-response value: min(average, best current)."""
        return self.average if self.used == "average" else self.best_current

    def to_dict(self, to_mbg: Any = None) -> dict[str, Any]:
        """JSON-ready (``to_mbg``: optional chips -> mb/g conversion for ``*_mbg`` keys)."""
        out: dict[str, Any] = {"seat": self.seat, "responder": 1 - self.seat,
                               "average": self.average, "current": self.current,
                               "best_current": self.best_current,
                               "best_iteration": self.best_iteration, "used": self.used}
        if to_mbg is not None:
            for k in ("average", "current", "best_current"):
                out[k + "_mbg"] = to_mbg(out[k])
        return out


@dataclass
class CFRBRFloor:
    """The floor ``(b1(sigma_0) + b0(sigma_1)) / 2`` (chips per game) and per-seat detail."""

    floor: float
    seats: list[SeatFloor]
    iterations: int
    curve: list[dict[str, float]] = field(default_factory=list)


class CFRBR:
    """CFR-BR for both seats on an :class:`AbstractCFR` (its embeddings, algorithm and
    averaging rule; its regret tables are used as the two seats' CFR-BR tables, so the
    solver should be fresh or a CFR-BR checkpoint).

    After :meth:`iterate`, ``solver.average_policy()`` is the profile of the two seats'
    average CFR-BR strategies (its ordinary exploitability is the average floor) and
    ``current_values[s]`` = b_{1-s} of the current strategy of seat ``s`` played in the last
    iteration."""

    def __init__(self, solver: AbstractCFR) -> None:
        if getattr(solver, "sampling", None) is not None:
            raise TensorCFRError("CFR-BR runs exact full sweeps; give an AbstractCFR "
                                 "without sampling")
        self.solver = solver
        self.game = solver.game
        self.current_values: list[float] = [float("nan"), float("nan")]
        self.best_current: list[float] = [float("inf"), float("inf")]
        self.best_iteration = [0, 0]
        # the advisor strategies of each seat's best current strategy (per round)
        self._best_strategy: list[list[Tensor] | None] = [None, None]

    @property
    def iteration(self) -> int:
        """Iterations run (both seats)."""
        return self.solver.iteration

    def _seat_strategy(self, seat: int) -> list[Tensor]:
        """Seat ``seat``'s advisor strategy rows (other rows zero) per round."""
        out = []
        for r, adv in enumerate(self.solver.advisor_strategy):
            keep = torch.zeros_like(adv)
            for acting, sl in self.solver._node_slices(r):
                if acting == seat:
                    keep[sl] = adv[sl]
            out.append(keep)
        return out

    def iterate(self, num_iterations: int = 1) -> None:
        """Run ``num_iterations`` CFR-BR iterations (seat 0, then seat 1)."""
        s = self.solver
        for _ in range(num_iterations):
            s.iteration += 1
            t = s.iteration
            for seat in (0, 1):
                value, profile = best_response_policy(self.game, s.cell_strategy, 1 - seat)
                self.current_values[seat] = value
                if value < self.best_current[seat]:
                    self.best_current[seat] = value
                    self.best_iteration[seat] = t
                    self._best_strategy[seat] = self._seat_strategy(seat)
                inst_r = [torch.zeros_like(x) for x in s.cell_strategy]
                inst_w = [torch.zeros_like(x) for x in s.cell_strategy]
                public_pass(self.game, profile, seat, "cfr",
                            solver=_Buffers(inst_r, inst_w, t))
                del profile
                s.accumulate_pass(seat, inst_r, inst_w, t)
                s._refresh(seat)

    # ------------------------------------------------------------------ evaluation
    def average_values(self) -> list[float]:
        """[b1(average sigma_0), b0(average sigma_1)] (exact best responses)."""
        pol = self.solver.pass_policy(self.solver.average_class_policy())
        return [best_response_policy(self.game, pol, 1 - seat)[0] for seat in (0, 1)]

    def best_current_policy(self) -> list[Tensor]:
        """Full-game policy of each seat's least exploitable current strategy seen."""
        s = self.solver
        rows = []
        for r in range(len(self.game.rounds)):
            adv = torch.zeros_like(s.advisor_strategy[r])
            for acting, sl in s._node_slices(r):
                best = self._best_strategy[acting]
                adv[sl] = (best[r] if best is not None else s.advisor_strategy[r])[sl]
            rows.append(adv)
        return s.cell_policy(s.class_policy(rows))

    def floor(self, average_values: Sequence[float] | None = None) -> CFRBRFloor:
        """The floor from the final average (computed unless given) and the best current
        strategies (at least one iteration must have run)."""
        if self.iteration < 1:
            raise TensorCFRError("CFR-BR needs at least one iteration before a floor")
        avg = list(average_values) if average_values is not None else self.average_values()
        seats = []
        for seat in (0, 1):
            used = "average" if avg[seat] <= self.best_current[seat] else "current"
            seats.append(SeatFloor(seat, avg[seat], self.current_values[seat],
                                   self.best_current[seat], self.best_iteration[seat], used))
        return CFRBRFloor((seats[0].value + seats[1].value) / 2, seats, self.iteration)

    def floor_policy(self, result: CFRBRFloor) -> list[Tensor]:
        """Full-game profile of the strategies :meth:`floor` counted (seat 0's at seat 0's
        nodes, seat 1's at seat 1's); its exploitability is ``result.floor``."""
        s = self.solver
        avg = s.average_policy()
        cur = self.best_current_policy()
        out = []
        for r in range(len(self.game.rounds)):
            pol = avg[r].clone()
            for acting, sl in s._node_slices(r):
                if result.seats[acting].used == "current":
                    pol[sl] = cur[r][sl]
            out.append(pol)
        return out

    # ------------------------------------------------------------------ state
    def state_arrays(self) -> dict[str, np.ndarray]:
        """The tracked best current strategies (the regret tables are the solver's)."""
        arrays: dict[str, np.ndarray] = {
            "cfrbr_best_current": np.asarray(self.best_current, dtype=np.float64),
            "cfrbr_best_iteration": np.asarray(self.best_iteration, dtype=np.int64),
            "cfrbr_current": np.asarray(self.current_values, dtype=np.float64)}
        for seat in (0, 1):
            best = self._best_strategy[seat]
            if best is not None:
                for r, x in enumerate(best):
                    arrays[f"cfrbr_best_{seat}_{r}"] = x.cpu().numpy()
        return arrays

    def load_state_arrays(self, arrays: dict[str, np.ndarray]) -> None:
        """Restore :meth:`state_arrays` (CorruptFileError on missing or misshapen arrays)."""
        try:
            self.best_current = [float(v) for v in arrays["cfrbr_best_current"]]
            self.best_iteration = [int(v) for v in arrays["cfrbr_best_iteration"]]
            self.current_values = [float(v) for v in arrays["cfrbr_current"]]
        except (KeyError, ValueError, TypeError):
            raise CorruptFileError("checkpoint lacks the CFR-BR tracking arrays") from None
        s = self.solver
        for seat in (0, 1):
            if self.best_iteration[seat] == 0:
                self._best_strategy[seat] = None
                continue
            rows = []
            for r, target in enumerate(s.advisor_strategy):
                arr = arrays.get(f"cfrbr_best_{seat}_{r}")
                if arr is None or tuple(arr.shape) != tuple(target.shape):
                    raise CorruptFileError(f"checkpoint lacks cfrbr_best_{seat}_{r}")
                rows.append(torch.as_tensor(np.ascontiguousarray(arr)).to(target))
            self._best_strategy[seat] = rows
