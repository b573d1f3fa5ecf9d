"""What a game's plays were worth: hints during the game and the analysis after it.

* Exact values (:func:`exact_hints`, :func:`game_analysis`) come from the deal's exact
  solution (the session's :class:`~tensorcfr.play.caches.SolutionCache`); they reveal the
  hidden cards, so the session allows them only in open hands or after the game
  (:meth:`GameSession.require_exact_allowed`, checked first by each).
* In hidden hands, the hints during the game are the agent's *estimates* from the human's
  observation (:class:`AgentAdvice`: a second agent of the AI's name, its draws apart from the
  playing agent's), and the analysis adds, for each of the human's plays, its cost against
  the estimate at that moment (what a player could have known).

All values are points, turned to the side of the player concerned (positive = good for that
player); estimates are rounded to 2 decimals for display. Nothing here knows HTTP or
terminals; :class:`~tensorcfr.play.session.GameSession` answers through these functions.
"""

from __future__ import annotations

from typing import Any, Protocol, Sequence

from tensorcfr.errors import IllegalMoveError
from tensorcfr.games.pasur.engine.observation import observe
from tensorcfr.games.pasur.engine.rules import PLAYERS, GameState, score
from tensorcfr.games.pasur.vocab import Mode
from tensorcfr.play.caches import SolutionCache
from tensorcfr.play.opponents import ESTIMATE_MEASURES, agent_estimates, make_hidden_agent

__all__ = ["AgentAdvice", "AnalysedSession", "exact_hints", "game_analysis", "hint_report"]

SEED_SPACE = 2**63
"""The agent's draws at a position are seeded in 0..SEED_SPACE-1 (the session's seed range)."""


def action_json(action: Any) -> dict[str, Any]:
    """``{"card", "captured", "notation"}`` of an action (card indices)."""
    return {"card": int(action.card), "captured": [int(c) for c in action.captured],
            "notation": action.notation()}


def _r2(x: float) -> float:
    """An estimate rounded to 2 decimals for display (points)."""
    return round(float(x), 2)


class AgentAdvice:
    """The hidden-hand agent's estimates of a game's positions, from the mover's observation.

    A second agent of the AI's name (built when first asked, with the game's options) so that
    its draws stay apart from the playing agent's; the estimates of a position are cached and
    its draws are seeded by the position, so the same position gets the same estimates.
    :attr:`measure` says what the values are (a key of :data:`ESTIMATE_MEASURES`).
    """

    def __init__(self, name: str, ai_seed: int, *, device: str = "cpu",
                 options: Any = None) -> None:
        self.name = name
        self.ai_seed = ai_seed
        self.device = device
        self.options = options
        self.measure = "mean"
        self._agent: Any = None
        self._estimates: dict[tuple[Any, ...], list[Any] | None] = {}

    def estimates_at(self, states: Sequence[GameState], index: int) -> list[Any] | None:
        """The estimates of the legal plays at position ``index`` of ``states``
        (``PlayEstimate`` list, mover's side), or None when the agent gives none."""
        state = states[index]
        key = (index, tuple(state.history))
        if key not in self._estimates:
            if self._agent is None:
                self._agent = make_hidden_agent(self.name, device=self.device,
                                                options=self.options)
            self._agent.reset((self.ai_seed * 1_000_003 + 7919 * (index + 1)) % SEED_SPACE)
            estimates, measure = agent_estimates(self._agent, observe(state, state.player))
            self._estimates[key] = estimates
            if estimates is not None:
                self.measure = measure
        return self._estimates[key]

    def text(self, samples: int) -> str:
        """What the values of these estimates are, in words (:data:`ESTIMATE_MEASURES`)."""
        return ESTIMATE_MEASURES[self.measure].format(samples=samples, agent=self.name)


def _estimate_rows(estimates: Sequence[Any]) -> list[dict[str, Any]]:
    best = max(e.value for e in estimates)
    return [{**action_json(e.action), "value": _r2(e.value), "loss": _r2(best - e.value),
             "best": e.value == best, "samples": int(e.samples)} for e in estimates]


class AnalysedSession(Protocol):
    """What the analysis reads from a game: :class:`~tensorcfr.play.session.GameSession`
    is one (the session imports this module, never the reverse)."""

    deal: Any
    mode: Mode
    human: int
    human_known: bool
    ai_name: str | None
    solutions: SolutionCache
    states: list[GameState]
    plays: Sequence[Any]  # the session's PlayInfo rows (``.player`` read here)

    @property
    def state(self) -> GameState: ...

    @property
    def ai_seat(self) -> int: ...

    @property
    def over(self) -> bool: ...

    def advice(self) -> AgentAdvice | None: ...

    def estimates_at(self, index: int) -> list[Any] | None: ...

    def require_exact_allowed(self) -> None: ...

    def state_at(self, at: int | None) -> GameState: ...


# --------------------------------------------------------------------------- hints

def hint_report(session: AnalysedSession, at: int | None = None) -> dict[str, Any]:
    """What the Hint button shows for position ``at`` (default: now).

    ``kind`` ``"exact"``: open mode, or any position of a finished game: :func:`exact_hints`.
    ``"estimate"``: hidden mode during the game: the agent's estimates of the human's
    legal plays from the human's observation (``measure`` ``"mean"``: ``value`` is the
    mean final point difference for the human over ``samples`` draws; ``"advantage"``:
    the hidden-model's score, points over the average play; ``what`` says it in words;
    ``loss``: against the best estimate). ``"none"``: the agent gives no estimates
    (``message`` says so). Raises :class:`IllegalMoveError` at the AI's turn of a hidden
    game (its plays would show its hand).
    """
    state = session.state_at(at)
    if state.is_terminal:
        raise IllegalMoveError("the game is over: no plays to hint")
    if at is not None and not session.over:
        raise IllegalMoveError("only a finished game can be stepped through")
    out: dict[str, Any] = {"at": state.play_index, "player": PLAYERS[state.player],
                           "agent": session.ai_name}
    if session.mode is Mode.OPEN or session.over:
        return {**out, "kind": "exact", "hints": exact_hints(session, at)}
    if state.player != session.human:
        raise IllegalMoveError("hints are for your own turn")
    advice = session.advice()
    estimates = session.estimates_at(len(session.states) - 1)
    if advice is None or estimates is None:
        return {**out, "kind": "none", "hints": [],
                "message": f"the {session.ai_name} agent gives no estimates (play against "
                           "pimc for estimated hints)"}
    samples = max(int(e.samples) for e in estimates)
    return {**out, "kind": "estimate", "hints": _estimate_rows(estimates),
            "samples": samples, "measure": advice.measure, "what": advice.text(samples)}


def exact_hints(session: AnalysedSession, at: int | None = None) -> list[dict[str, Any]]:
    """Every legal play at position ``at`` (default: now) with its exact value.

    ``value`` is the final point difference for the player to move (their points minus
    the other's) if that play is made and both play optimally afterwards; ``loss`` is
    the points it gives away against the best play (0 for every optimal play). Raises
    :class:`HiddenCardsError` in hidden mode before the game is over.
    """
    session.require_exact_allowed()
    state = session.state_at(at)
    if state.is_terminal:
        raise IllegalMoveError("the game is over: no plays to hint")
    values = session.solutions.get(session.deal).action_values(state)
    sign = 1 if state.player == 0 else -1
    best = max(sign * v for _, v in values)
    return [{**action_json(a), "value": sign * v, "loss": best - sign * v,
             "best": sign * v == best} for a, v in values]


# --------------------------------------------------------------------------- the analysis

def game_analysis(session: AnalysedSession) -> dict[str, Any]:
    """The end-of-game analysis (also for an unfinished open game: the plays so far).

    Keys: ``final`` (both score breakdowns and ``utility``, Alex minus Bob),
    ``exact_value`` (the deal's value under optimal play, Alex minus Bob), ``human`` and,
    from the human's side, ``human_result`` and ``human_exact``; ``human_cost`` and
    ``ai_cost`` (points given away by each side against optimal play) and ``plays``: one
    row per play with its ``cost`` for its mover (0 = an optimal play), the
    ``best`` plays there, their ``best_value`` (mover's side) and ``value_alex`` (the
    position's exact value before the play, Alex's side). Identity:
    ``utility = exact_value - alex_cost + bob_cost``.

    In hidden mode, ``estimate`` sums up the agent's view (``agent``, ``available``,
    ``human_cost``: the points the human's plays gave away against the agent's estimate
    at that moment, what a player could have known) and each human play's row has
    ``estimate_value``, ``estimate_cost``, ``estimate_best`` and ``samples``. Raises
    :class:`HiddenCardsError` in hidden mode before the game is over.
    """
    session.require_exact_allowed()
    solution = session.solutions.get(session.deal)
    rows = []
    costs = [0, 0]
    for info, state in zip(session.plays, session.states):
        values = solution.action_values(state)
        sign = 1 if state.player == 0 else -1
        best = max(sign * v for _, v in values)
        played = next(sign * v for a, v in values if a == info.action)
        cost = best - played
        costs[info.player] += cost
        rows.append({**info.as_dict(), "cost": cost, "value": played,
                     "best_value": best, "value_alex": sign * best,
                     "alternatives": len(values),
                     "best": [a.notation() for a, v in values if sign * v == best]})
    alex, bob = score(session.state)
    sign_h = 1 if session.human == 0 else -1
    utility = alex.total - bob.total
    out = {
        "mode": session.mode,
        "ai": session.ai_name,
        "over": session.over,
        "final": {"Alex": alex.as_dict(), "Bob": bob.as_dict(), "utility": utility},
        "exact_value": int(solution.value),
        "human": PLAYERS[session.human] if session.human_known else None,
        "human_result": sign_h * utility,
        "human_exact": sign_h * int(solution.value),
        "human_cost": costs[session.human],
        "ai_cost": costs[session.ai_seat],
        "cost": {"Alex": costs[0], "Bob": costs[1]},
        "plays": rows,
    }
    if session.mode is Mode.HIDDEN:
        out["estimate"] = _estimate_analysis(session, rows)
    return out


def _estimate_analysis(session: AnalysedSession, rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Adds the agent's estimate columns to the human's rows; returns the summary."""
    summary: dict[str, Any] = {"agent": session.ai_name, "available": False,
                               "human_cost": None}
    if session.ai_name is None:
        summary["message"] = "the record does not name a hidden-hand agent"
        return summary
    if not session.human_known:
        summary["message"] = "the record does not say which side was the human"
        return summary
    total = 0.0
    advice = session.advice()
    for index, row in enumerate(rows):
        if session.plays[index].player != session.human:
            continue
        estimates = session.estimates_at(index)
        if advice is None or estimates is None:
            summary["message"] = (f"the {session.ai_name} agent gives no estimates (play "
                                  "against pimc for estimated hints)")
            return summary
        best = max(e.value for e in estimates)
        played = next((e for e in estimates if e.action == session.plays[index].action), None)
        if played is None:  # pragma: no cover - an agent that skips a legal play
            continue
        row["estimate_value"] = _r2(played.value)
        row["estimate_cost"] = _r2(best - played.value)
        row["estimate_best"] = [e.action.notation() for e in estimates if e.value == best]
        row["samples"] = int(played.samples)
        total += best - played.value
    summary.update(available=True, human_cost=_r2(total), measure=advice.measure)
    return summary
