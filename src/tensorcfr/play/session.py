"""A game of Pasur between a human and an AI, independent of any user interface.

This module is the one place that knows the two modes of play and what each may show:

* ``hidden`` (the real game, the default, :data:`DEFAULT_MODE`): each side sees its own hand,
  the pool and the cards played. The AI is a hidden-hand agent by name
  (:data:`tensorcfr.games.pasur.agents.AGENT_NAMES`, default :data:`DEFAULT_HIDDEN_AGENT`)
  that is handed only its :func:`observe` observation. Hints are that agent's *estimates* of
  the human's legal plays (from the human's observation); exact values, which reveal the
  hidden cards, come only after the game.
* ``open`` (the study mode, double-dummy): both hands and the rounds to come are shown; the AI
  is an open-hands player (:data:`AI_NAMES`), hints are exact values.

A :class:`GameSession` holds the deal, the mode, the human's seat, the AI, the list of
positions so far (undo pops back to the human's previous decision), and answers the questions
a player asks: the legal plays, hints, and after the game the analysis (final score and
breakdown, the deal's exact value, each play marked with the points it cost against perfect
information and, in hidden mode, against the agent's estimate at that moment). A finished
game exports to the project's game record format (with its mode); an imported record becomes a
finished session to step through with the same analysis.

It knows nothing of HTTP or terminals.

Exact values come from :func:`tensorcfr.games.pasur.solving.exact.solve_exact` through a
:class:`SolutionCache` (a bounded LRU shared by all sessions; one solve per deal even when
several threads ask at once).

What a client may see is built by :meth:`GameSession.view` only: in hidden mode (until the
game is over) from :func:`observe` of the human's seat, so a server can never send a client a
card it may not see.

The secrets of a hidden-hand game (docs/security.md) are kept here, once for every front end:
a deal nobody asked for comes from the operating system's cryptographic source
(:func:`new_deal`, ``random.SystemRandom``), never from a seed a player could search; a deal
the player names (a seed, the cards, a position of a finished game) makes a *practice* game,
said so in the view. Until the end no answer holds the seed, the deal, exact values or
whether the deal's exact solution is cached; undo is refused (taking a play back would show
the AI answering another play, and so its cards). After the end everything is shown, and the
record carries the deal, the seed (if any) and the AI's seed, so the game can be replayed.

All values are points, Alex's minus Bob's in the engine; hints and costs are turned to the
side of the player concerned (positive = good for that player).
"""

from __future__ import annotations

import random
import threading
from collections import OrderedDict
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Protocol, Sequence

from tensorcfr.errors import InvalidRecordError, TensorCFRError
from tensorcfr.games.pasur.engine.cards import card_code
from tensorcfr.games.pasur.engine.observation import observe
from tensorcfr.games.pasur.engine.records import GameRecord, parse_record, replay_record
from tensorcfr.games.pasur.engine.rules import (
    NUM_PLAYS,
    NUM_ROUNDS,
    PLAYERS,
    Action,
    GameState,
    apply_action,
    illegal_reason,
    initial_state,
    legal_actions,
    random_deal,
    round_hands,
    score,
    score_pile,
    validate_deal,
)

__all__ = [
    "AI_NAMES",
    "DealChoice",
    "DEFAULT_HIDDEN_AGENT",
    "PLAY_REPLY_LIMIT_SECONDS",
    "PLAY_SECONDS_PER_MOVE",
    "DEFAULT_MODE",
    "DEFAULT_OPEN_AI",
    "GameSession",
    "HiddenCardsError",
    "IllegalMoveError",
    "MODES",
    "PlayerCache",
    "SEED_MAX",
    "SolutionCache",
    "VISIBILITIES",
    "ai_names",
    "check_mode",
    "check_seed",
    "default_ai",
    "hidden_agent_names",
    "make_ai",
    "make_hidden_agent",
    "new_deal",
    "secret_deal",
    "release_freed_memory",
    "seat_index",
]

AI_NAMES = ("exact", "random", "table", "model")
"""Every open-hands AI a game can be played against (``exact`` and ``random`` need nothing
else)."""
MODES = ("hidden", "open")
"""The modes of play: ``hidden`` hands (the real game) and ``open`` hands (double-dummy)."""
DEFAULT_MODE = "hidden"
DEFAULT_HIDDEN_AGENT = "hidden-model"
"""The hidden-hand agent a game is played against unless another is named: the strongest of
the duplicate tournaments whose reply is under a second (docs/benchmarks/pasur_tournament.md:
it beats greedy, random and ismcts-time with 95% confidence, and pimc is not stronger). Its
hints are its own scores of the human's plays (:func:`agent_estimates`: the model's predicted
advantage of each play, from the human's observation)."""
PLAY_SECONDS_PER_MOVE = 0.8
"""The time budget per move of a hidden-hand agent in play (PIMC starts no draw it expects to
end after it, ISMCTS stops searching once it is spent, ``ismcts`` included), so that a reply
takes under a second on one core."""
PLAY_REPLY_LIMIT_SECONDS = 0.95
"""The hard limit on a PIMC play in play: when not even one draw's exact solve ends within it
(a hard first-round draw can take seconds), the agent plays the greedy play instead."""
DEFAULT_OPEN_AI = "exact"
VISIBILITIES = ("open", "hidden")
SEED_MAX = 2**63 - 1
"""Seeds of deals and of the AI's draws are 0..SEED_MAX everywhere (CLI, API, page)."""


class IllegalMoveError(TensorCFRError):
    """A play or command the game cannot accept now; the message is one sentence."""


class HiddenCardsError(IllegalMoveError):
    """A question whose answer would reveal cards the human may not see yet."""


NO_UNDO_HIDDEN = ("no undo in a hidden-hand game: taking a play back would let you see the AI "
                  "answer another play, which shows its cards; after the game, play on from "
                  "any position to try another line")
"""The one refusal of undo in hidden mode (API 403, page, terminal)."""


@dataclass(frozen=True)
class DealChoice:
    """The deal of a new game and where it came from.

    Attributes:
        deal: 52 card indices, pool first.
        seed: the seed the player gave (``random_deal(seed)``), else None.
        chosen: whether the player named the deal (a seed or the cards): then the player can
            know every card, and a hidden-hand game on it is practice.
    """

    deal: tuple[int, ...]
    seed: int | None
    chosen: bool


def secret_deal() -> tuple[int, ...]:
    """A deal drawn from the operating system's cryptographic source (``random.SystemRandom``):
    no seed, nothing a player could search or compute it from."""
    return random_deal(rng=random.SystemRandom())


def new_deal(seed: int | None = None, deal: Sequence[int] | None = None) -> DealChoice:
    """The deal of a new game: ``deal`` as given, ``random_deal(seed)``, or (neither) a
    :func:`secret_deal`. One-line :class:`TensorCFRError` for both, a bad seed or deal."""
    if seed is not None and deal is not None:
        raise TensorCFRError("give a seed or a deal, not both")
    if deal is not None:
        return DealChoice(validate_deal(deal), None, True)
    if seed is not None:
        return DealChoice(random_deal(check_seed(seed)), seed, True)
    return DealChoice(secret_deal(), None, False)


def check_seed(seed: int, what: str = "seed") -> int:
    """``seed`` if it is a whole number in 0..:data:`SEED_MAX`; one-line error otherwise."""
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed <= SEED_MAX:
        raise TensorCFRError(f"the {what} must be a whole number from 0 to 2^63-1 "
                             f"({SEED_MAX}), got {seed!r}")
    return seed


def check_mode(mode: str) -> str:
    """``mode`` if it is one of :data:`MODES`; one-line error otherwise."""
    if mode not in MODES:
        raise TensorCFRError(f"the mode is hidden or open, got {mode!r}")
    return mode


def hidden_agent_names() -> tuple[str, ...]:
    """Every hidden-hand agent's name (the registry's :data:`AGENT_NAMES`, read when asked so
    that a newly registered agent is offered at once)."""
    from tensorcfr.games.pasur.agents import agent_names

    return agent_names()


def ai_names(mode: str) -> tuple[str, ...]:
    """The AIs a game in ``mode`` can be played against."""
    return hidden_agent_names() if check_mode(mode) == "hidden" else AI_NAMES


def default_ai(mode: str) -> str:
    """The AI of a game in ``mode`` when none is named."""
    return DEFAULT_HIDDEN_AGENT if check_mode(mode) == "hidden" else DEFAULT_OPEN_AI


class PlayerLike(Protocol):
    """The players interface of :mod:`tensorcfr.games.pasur.playing.players`."""

    def action_probs(self, states: Sequence[GameState]) -> list[list[tuple[Action, float]]]:
        ...


def seat_index(seat: str | int) -> int:
    """0 (Alex) or 1 (Bob) from ``"alex"``, ``"Bob"``, 0 or 1."""
    if isinstance(seat, int) and not isinstance(seat, bool) and seat in (0, 1):
        return seat
    if isinstance(seat, str):
        low = seat.strip().lower()
        for i, name in enumerate(PLAYERS):
            if low == name.lower():
                return i
    raise TensorCFRError(f"a seat is alex or bob, got {seat!r}")


def action_json(action: Action) -> dict[str, Any]:
    """``{"card", "captured", "notation"}`` of an action (card indices)."""
    return {"card": int(action.card), "captured": [int(c) for c in action.captured],
            "notation": action.notation()}


# --------------------------------------------------------------------------- exact solutions

def release_freed_memory() -> None:
    """Hand memory freed by a finished solve back to the operating system (glibc's
    ``malloc_trim``; nothing elsewhere). An exact solve's graph peaks at hundreds of MiB and
    more on hard deals; without this the allocator keeps those pages, and a server's resident
    memory ratchets up to the largest solves seen (measured: 0.5 to 2.3 GiB after a flood of new
    open-hands games)."""
    import ctypes
    import ctypes.util

    name = ctypes.util.find_library("c")
    if not name:
        return
    try:
        libc = ctypes.CDLL(name)
        trim = libc.malloc_trim
    except (OSError, AttributeError):  # not glibc
        return
    trim(0)


class _Dropped(Exception):
    """A queued background solve whose entry was evicted before it started."""


class SolutionCache:
    """A bounded, thread-safe LRU of exact solutions by deal.

    ``get(deal)`` solves on a miss; concurrent requests for the same deal wait for one solve.
    ``prefetch(deal)`` starts that solve in a background thread and returns at once. A
    solution holds its whole state graph (about 5-60 MiB on random deals), so ``max_size``
    bounds the memory.
    """

    def __init__(self, max_size: int = 8, device: str = "cpu",
                 solver: Callable[[tuple[int, ...]], Any] | None = None,
                 max_concurrent: int = 1, max_prefetch: int = 4) -> None:
        if max_size < 1 or max_concurrent < 1 or max_prefetch < 0:
            raise ValueError("max_size and max_concurrent must be at least 1, max_prefetch >= 0")
        self.max_size = max_size
        self.device = device
        self._solver = solver
        self._lock = threading.Lock()
        self._entries: OrderedDict[tuple[int, ...], Future[Any]] = OrderedDict()
        # memory bound: at most max_concurrent solves hold their graphs at once (the others
        # wait), and at most max_prefetch background solves are queued (more are dropped:
        # the deal is then solved when first asked for)
        self._slots = threading.Semaphore(max_concurrent)
        self.max_prefetch = max_prefetch
        self._prefetching = 0
        self.solves = 0  # number of solves run (tests and benchmarks read it)

    def _solve(self, deal: tuple[int, ...]) -> Any:
        if self._solver is not None:
            return self._solver(deal)
        from tensorcfr.games.pasur.solving.exact import solve_exact

        return solve_exact(deal, device=self.device)

    def _entry(self, deal: tuple[int, ...]) -> tuple[Future[Any], bool]:
        """The future of ``deal``'s solution and whether this caller must run the solve."""
        with self._lock:
            fut = self._entries.get(deal)
            if fut is not None:
                self._entries.move_to_end(deal)
                return fut, False
            fut = Future()
            self._entries[deal] = fut
            while len(self._entries) > self.max_size:
                self._entries.popitem(last=False)
            return fut, True

    def _run(self, deal: tuple[int, ...], fut: Future[Any], background: bool = False) -> None:
        if not fut.set_running_or_notify_cancel():  # pragma: no cover - never cancelled
            return
        try:
            with self._slots:
                with self._lock:
                    dropped = background and self._entries.get(deal) is not fut
                if dropped:  # evicted while queued: whoever still waits solves it afresh
                    raise _Dropped()
                self.solves += 1
                try:
                    result = self._solve(deal)
                finally:
                    release_freed_memory()  # the solve's transient peak goes back
            fut.set_result(result)
        except BaseException as exc:  # noqa: BLE001 - handed to every waiter
            with self._lock:
                if self._entries.get(deal) is fut:
                    del self._entries[deal]
            fut.set_exception(exc)
        finally:
            if background:
                with self._lock:
                    self._prefetching -= 1

    def get(self, deal: Sequence[int]) -> Any:
        """The exact solution of ``deal`` (solved now if it is not cached)."""
        key = tuple(int(c) for c in deal)
        while True:
            fut, mine = self._entry(key)
            if mine:
                self._run(key, fut)
            try:
                return fut.result()
            except _Dropped:
                continue

    def prefetch(self, deal: Sequence[int]) -> bool:
        """Start solving ``deal`` in a background thread unless it is cached or under way.

        Returns whether a solve was started; none is when ``max_prefetch`` are already queued
        (the deal is then solved when first asked for)."""
        key = tuple(int(c) for c in deal)
        with self._lock:
            if key in self._entries or self._prefetching >= self.max_prefetch:
                return False
            self._prefetching += 1
        fut, mine = self._entry(key)
        if not mine:  # another thread got there first
            with self._lock:
                self._prefetching -= 1
            return False
        # not a daemon: the interpreter waits for it at exit (a few seconds at most),
        # since torch aborts the process if a daemon thread is still inside it then
        threading.Thread(target=self._run, args=(key, fut, True), daemon=False,
                         name="pasur-solve").start()
        return True

    def is_ready(self, deal: Sequence[int]) -> bool:
        """Whether ``deal``'s solution is cached and finished (no wait)."""
        with self._lock:
            fut = self._entries.get(tuple(int(c) for c in deal))
        return fut is not None and fut.done() and fut.exception() is None

    def __len__(self) -> int:
        return len(self._entries)


# --------------------------------------------------------------------------- AI players

class _ExactAI:
    """The exact AI over the shared :class:`SolutionCache`.

    ``players.make_player("exact", deal, solution=...)`` is built for each question from the
    cached solution (so a game starts at once, hints and the AI share one solve, and the page
    can show a spinner while that solve runs). It is not kept: a held game must not hold its
    solution (5-60 MiB) beyond the cache's bound.
    """

    name = "exact"

    def __init__(self, deal: tuple[int, ...], solutions: SolutionCache, device: str) -> None:
        self.deal = deal
        self.solutions = solutions
        self.device = device

    def action_probs(self, states: Sequence[GameState]) -> list[list[tuple[Action, float]]]:
        from tensorcfr.games.pasur.agents import make_player

        player = make_player("exact", self.deal, device=self.device,
                             solution=self.solutions.get(self.deal))
        return player.action_probs(states)


class _UniformPlayer:
    """Uniform over the legal plays (a placeholder for imported records: nobody plays)."""

    name = "random"

    def action_probs(self, states: Sequence[GameState]) -> list[list[tuple[Action, float]]]:
        out = []
        for state in states:
            actions = legal_actions(state)
            out.append([(a, 1.0 / len(actions)) for a in actions])
        return out


class PlayerCache:
    """A small thread-safe LRU of loaded ``table`` / ``model`` players by (name, deal):
    loading a strategy table or a model takes a while, games of one deal share it."""

    def __init__(self, max_size: int = 4) -> None:
        self.max_size = max_size
        self._lock = threading.Lock()
        self._players: OrderedDict[tuple[Any, ...], Any] = OrderedDict()

    def get(self, key: tuple[Any, ...], build: Callable[[], Any]) -> Any:
        with self._lock:
            if key in self._players:
                self._players.move_to_end(key)
                return self._players[key]
        player = build()
        with self._lock:
            self._players[key] = player
            while len(self._players) > self.max_size:
                self._players.popitem(last=False)
        return player


def make_ai(name: str, deal: Sequence[int], *, solutions: SolutionCache,
            model: str | None = None, table: str | None = None,
            device: str = "cpu", players: PlayerCache | None = None) -> PlayerLike:
    """The AI player ``name`` for ``deal`` (:func:`tensorcfr.games.pasur.playing.players.make_player`).

    ``exact`` plays uniformly among the optimal plays of the deal's cached exact solution;
    ``random`` uniformly; ``table`` needs a solved run folder of this deal (``tensorcfr pasur
    solve --method dcfr --out DIR``), ``model`` an XGBoost model folder. Raises
    :class:`TensorCFRError` (one line) for an unknown name or a missing/unsuitable file.
    """
    from tensorcfr.games.pasur.agents import make_player

    deal = tuple(int(c) for c in deal)
    if name not in AI_NAMES:
        raise TensorCFRError(f"unknown AI {name!r}: choose one of {', '.join(AI_NAMES)}")
    if name == "exact":
        return _ExactAI(deal, solutions, device)
    if name == "random":
        return make_player("random", deal, device=device)
    if name == "table" and table is None:
        raise TensorCFRError("the table AI needs a strategy table: start with --table DIR "
                             "(a folder written by `tensorcfr pasur solve --method dcfr --out DIR`)")
    if name == "model" and model is None:
        raise TensorCFRError("the model AI needs a model: start with --model DIR")

    def build() -> Any:
        return make_player(name, deal, model=model, table=table, device=device)

    if players is None:
        return build()
    return players.get((name, deal, model, table, device), build)


def sample_action(probs: Sequence[tuple[Action, float]], rng: random.Random) -> Action:
    """Draw one action from ``(action, probability)`` pairs with ``rng``."""
    total = sum(max(p, 0.0) for _, p in probs)
    if not probs:
        raise ValueError("no action to sample from")
    if total <= 0:
        return probs[rng.randrange(len(probs))][0]
    x = rng.random() * total
    acc = 0.0
    for action, p in probs:
        acc += max(p, 0.0)
        if x < acc:
            return action
    return probs[-1][0]


# --------------------------------------------------------------------------- the session

@dataclass(frozen=True)
class PlayInfo:
    """One play of the game as shown in the history: who, what, and the points it scored."""

    number: int
    player: int
    by: str  # "human", "ai" or "record"
    action: Action
    points: int  # the mover's points from this play (cards taken, Sur, clubs bonus, cleanup)
    sur: bool
    cleanup: tuple[int, ...]  # pool cards taken at the end of the game by the last capturer
    cleanup_to: int | None

    def as_dict(self) -> dict[str, Any]:
        out = {"number": self.number, "player": PLAYERS[self.player], "by": self.by,
               **action_json(self.action), "points": self.points, "sur": self.sur}
        if self.cleanup:
            out["cleanup"] = list(self.cleanup)
            out["cleanup_to"] = PLAYERS[self.cleanup_to] if self.cleanup_to is not None else None
        return out


def _play_info(before: GameState, after: GameState, by: str) -> PlayInfo:
    action = after.history[-1]
    p = before.player
    totals_before = [s.total for s in score(before)]
    totals_after = [s.total for s in score(after)]
    cleanup: tuple[int, ...] = ()
    cleanup_to = None
    if after.is_terminal and after.last_capturer is not None:
        pool_left = [c for c in before.pool if c not in action.captured]
        if action.is_lay:
            pool_left.append(action.card)
        cleanup = tuple(sorted(pool_left))
        cleanup_to = after.last_capturer if cleanup else None
    return PlayInfo(number=before.play_index, player=p, by=by, action=action,
                    points=totals_after[p] - totals_before[p],
                    sur=after.surs[p] > before.surs[p], cleanup=cleanup, cleanup_to=cleanup_to)


def make_hidden_agent(name: str, *, device: str = "cpu", options: Any = None) -> Any:
    """The hidden-hand agent ``name`` (:func:`tensorcfr.games.pasur.agents.make_agent`);
    one-line :class:`TensorCFRError` for an unknown name."""
    from tensorcfr.games.pasur.agents import AgentOptions, make_agent

    names = hidden_agent_names()
    if name not in names:
        raise TensorCFRError(f"unknown AI {name!r} for hidden hands: choose one of "
                             f"{', '.join(names)}")
    if options is None:
        options = AgentOptions(device=device, seconds_per_move=PLAY_SECONDS_PER_MOVE,
                               max_reply_seconds=PLAY_REPLY_LIMIT_SECONDS)
    return make_agent(name, options)


ESTIMATE_MEASURES = {
    "mean": "the mean final point difference for you (yours minus the AI's) over {samples} "
            "draw(s) of the hidden cards",
    "advantage": "the {agent} agent's own score of each play: its predicted advantage over "
                 "the average of your plays, in points (learned from play, from your view "
                 "of the table)",
}
"""What an agent's estimates are, by measure (:func:`agent_estimates`), as the hint says it."""


def agent_estimates(agent: Any, obs: Any) -> tuple[list[Any] | None, str]:
    """The hidden-hand ``agent``'s evaluation of the mover's legal plays in ``obs`` and its
    measure (a key of :data:`ESTIMATE_MEASURES`), from that observation only.

    ``"mean"``: the agent's :meth:`estimates` (final points difference, mover's side).
    ``"advantage"``: for the ``hidden-model`` agent, which has no such estimates, its model's
    score of each play (the predicted advantage in points over the mean of the legal plays;
    the play it would choose scores highest). ``(None, "")``: the agent evaluates nothing.
    """
    estimates = agent.estimates(obs)
    if estimates is not None:
        return list(estimates), "mean"
    from tensorcfr.games.pasur.learning.hidden_model import HiddenModelAgent, decision_rows

    if isinstance(agent, HiddenModelAgent):
        import numpy as np

        from tensorcfr.games.pasur.playing.agent import PlayEstimate

        legal, rows = decision_rows(obs)
        scores = agent.model.predict(np.asarray(rows, dtype=np.float32))
        return [PlayEstimate(action=a, value=float(v), samples=1)
                for a, v in zip(legal, scores)], "advantage"
    return None, ""


def _r2(x: float) -> float:
    """An estimate rounded to 2 decimals for display (points)."""
    return round(float(x), 2)


class GameSession:
    """One game: a deal, the mode, the human's seat, an AI, and the positions played so far.

    Args:
        deal: 52 card indices (validated).
        human: the human's seat, ``"alex"``/``"bob"`` or 0/1.
        ai: the AI's name (see :func:`ai_names`; default :func:`default_ai` of the mode);
            ``player`` (open) or ``agent`` (hidden) overrides the object that plays.
        mode: ``"hidden"`` (the real game) or ``"open"`` (double-dummy study mode).
        solutions: the shared :class:`SolutionCache` (exact hints, analysis, the exact AI).
        ai_seed: seed of the AI's random draws (same seed and same plays, same game).
        seed: the seed of the deal when it is a seeded random deal (recorded; shown only
            where every card is: open hands, or after the game).
        agent_options: :class:`tensorcfr.games.pasur.agents.AgentOptions` of a hidden agent.
        practice: the player chose the deal (a seed, the cards, a position of a finished
            game) and so can know every card: the view says so (``practice``).
    """

    def __init__(self, deal: Sequence[int], human: str | int = "alex", ai: str | None = None,
                 *, mode: str = DEFAULT_MODE, solutions: SolutionCache | None = None,
                 player: PlayerLike | None = None, agent: Any = None,
                 ai_seed: int | None = 0, seed: int | None = None, model: str | None = None,
                 table: str | None = None, device: str = "cpu",
                 players: PlayerCache | None = None, agent_options: Any = None,
                 practice: bool = False) -> None:
        self.deal = validate_deal(deal)
        self.practice = bool(practice)
        self.mode = check_mode(mode)
        self.human = seat_index(human)
        self.ai_name: str | None = ai if ai is not None else default_ai(self.mode)
        self.seed = seed
        self.ai_seed = int(ai_seed) if ai_seed is not None else 0
        self.device = device
        self.agent_options = agent_options
        self.solutions = solutions if solutions is not None else SolutionCache()
        self.player: PlayerLike | None = None
        self.agent: Any = None
        if self.mode == "hidden" and player is None:
            self.agent = agent if agent is not None else make_hidden_agent(
                self.ai_name, device=device, options=agent_options)
            self.agent.reset(self.ai_seed)
        else:
            self.player = player if player is not None else make_ai(
                self.ai_name, self.deal, solutions=self.solutions, model=model, table=table,
                device=device, players=players)
        self.rng = random.Random(ai_seed)
        self.states: list[GameState] = [initial_state(self.deal)]
        self.plays: list[PlayInfo] = []
        self.imported = False
        self._advisor: Any = None  # a second agent of the same name: hints and the analysis
        self._estimates: dict[tuple[Any, ...], Any] = {}
        self._estimate_measure = "mean"  # what the agent's estimates are (agent_estimates)

    # ----------------------------------------------------------------- construction

    @classmethod
    def from_record(cls, obj: Any, *, solutions: SolutionCache | None = None) -> "GameSession":
        """A finished session from a game record (the decoded JSON object) to step through.

        The record must be valid and every play legal (:class:`InvalidRecordError` otherwise,
        one line). A ``"human"`` key (``"Alex"``/``"Bob"``, as exported here) marks whose plays
        the analysis is about; without it both sides' plays are analysed alike. ``"mode"``
        (``hidden``/``open``; older records without it were open-hands games) and ``"ai"``
        are kept: a hidden-hand record's analysis adds that agent's estimates.
        """
        record = parse_record(obj)
        result = replay_record(record)
        if not result.legal:
            assert result.illegal_play is not None
            raise InvalidRecordError(f"illegal record: {result.illegal_play.message()}")
        meta = obj if isinstance(obj, dict) else {}
        human_raw = meta.get("human")
        try:
            human = seat_index(human_raw) if human_raw is not None else 0
        except TensorCFRError:
            human = 0
        mode = meta.get("mode") if meta.get("mode") in MODES else "open"
        session = cls(record.deal, human, "random", mode="open", solutions=solutions,
                      player=_UniformPlayer())
        session.mode = mode
        ai_raw = meta.get("ai")
        session.ai_name = ai_raw if isinstance(ai_raw, str) and ai_raw in ai_names(mode) \
            else None
        seed_raw = meta.get("seed")
        if (isinstance(seed_raw, int) and not isinstance(seed_raw, bool)
                and 0 <= seed_raw <= SEED_MAX
                and tuple(random_deal(seed_raw)) == tuple(record.deal)):  # a seed of this deal
            session.seed = seed_raw
        ai_seed_raw = meta.get("ai_seed")
        if isinstance(ai_seed_raw, int) and not isinstance(ai_seed_raw, bool) \
                and 0 <= ai_seed_raw <= SEED_MAX:
            session.ai_seed = ai_seed_raw
        session.imported = True
        session.human_known = human_raw is not None
        for action in record.plays:
            session._apply(action, "record")
        return session

    human_known = True

    def play_on(self, at: int, *, ai_seed: int | None = None) -> "GameSession":
        """A new game that continues this finished one from position ``at`` (before play
        ``at``): same deal, mode, seat and AI (a record without an AI gets the mode's
        default), the first ``at`` plays kept. In hidden mode the new game hides the cards
        again (the player has seen them: a study aid, not a fair game: ``practice``)."""
        if not self.over:
            raise IllegalMoveError("only a finished game can be played on from a position")
        if not 0 <= at < NUM_PLAYS:
            raise IllegalMoveError(f"position {at} cannot be played on from (0..{NUM_PLAYS - 1})")
        ai = self.ai_name if self.ai_name in ai_names(self.mode) else default_ai(self.mode)
        session = GameSession(self.deal, self.human, ai, mode=self.mode,
                              solutions=self.solutions, ai_seed=self.ai_seed if ai_seed is None
                              else ai_seed, seed=self.seed, device=self.device,
                              agent_options=self.agent_options, practice=True)
        for info in self.plays[:at]:
            by = info.by if info.by != "record" else (
                "human" if info.player == self.human else "ai")
            session._apply(info.action, by)
        return session

    # ----------------------------------------------------------------- state

    @property
    def state(self) -> GameState:
        """The current position."""
        return self.states[-1]

    @property
    def ai_seat(self) -> int:
        return 1 - self.human

    @property
    def over(self) -> bool:
        return self.state.is_terminal

    @property
    def human_to_move(self) -> bool:
        return not self.over and self.state.player == self.human

    @property
    def ai_to_move(self) -> bool:
        return not self.over and self.state.player == self.ai_seat and not self.imported

    @property
    def ai_sees_everything(self) -> bool:
        """Whether the AI sees the human's hand: always in open mode; in hidden mode only the
        cheating reference agent ``exact`` does."""
        if self.mode == "open":
            return True
        return bool(getattr(self.agent, "sees_everything", False))

    def legal(self) -> list[Action]:
        """The legal plays of the player to move, in :func:`legal_actions` order."""
        return legal_actions(self.state)

    def _apply(self, action: Action, by: str) -> PlayInfo:
        before = self.state
        after = apply_action(before, action)
        info = _play_info(before, after, by)
        self.states.append(after)
        self.plays.append(info)
        return info

    # ----------------------------------------------------------------- moves

    def play(self, action: Action | Mapping[str, Any]) -> PlayInfo:
        """The human's play. Raises :class:`IllegalMoveError` with the rules' reason."""
        if self.imported:
            raise IllegalMoveError("this game was loaded from a record; start a new game to play")
        if self.over:
            raise IllegalMoveError("the game is over")
        if self.state.player != self.human:
            raise IllegalMoveError(f"it is {PLAYERS[self.state.player]}'s turn (the AI's)")
        if not isinstance(action, Action):
            action = Action(int(action["card"]), tuple(sorted(int(c) for c in action["captured"])))
        action = Action(action.card, tuple(sorted(action.captured)))
        reason = illegal_reason(self.state, action)
        if reason is not None:
            raise IllegalMoveError(reason)
        return self._apply(action, "human")

    def ai_probs(self) -> list[tuple[Action, float]]:
        """The open-hands AI's probabilities over the legal plays of the position (its turn)."""
        if self.player is None:
            raise IllegalMoveError("a hidden-hand agent chooses one play, it has no "
                                   "probabilities")
        return self.player.action_probs([self.state])[0]

    def ai_play(self) -> PlayInfo:
        """The AI's next play: in hidden mode the agent's choice from its observation (the
        true state only for an agent that ``sees_everything``); in open mode drawn from the
        player's probabilities with the session's RNG."""
        if not self.ai_to_move:
            raise IllegalMoveError("it is not the AI's turn" if not self.over
                                   else "the game is over")
        if self.agent is not None:
            state = self.state
            obs = observe(state, self.ai_seat)
            action = self.agent.choose(obs, state if self.agent.sees_everything else None)
            action = Action(action.card, tuple(sorted(action.captured)))
            reason = illegal_reason(state, action)
            if reason is not None:  # pragma: no cover - an agent bug, said plainly
                raise TensorCFRError(f"the {self.ai_name} agent chose an illegal play "
                                     f"{action.notation()}: {reason}")
        else:
            action = sample_action(self.ai_probs(), self.rng)
        return self._apply(action, "ai")

    def advance(self) -> list[PlayInfo]:
        """Let the AI play until it is the human's turn or the game is over."""
        out = []
        while self.ai_to_move:
            out.append(self.ai_play())
        return out

    @property
    def can_undo(self) -> bool:
        """Whether :meth:`undo` would take a play back: open hands only (in hidden hands a
        play taken back shows the AI's answer to another play, and so its cards)."""
        if self.imported or self.mode == "hidden":
            return False
        return any(p.by == "human" for p in self.plays)

    def undo(self) -> int:
        """Take back the human's last play and the AI's plays after it; returns plays undone.

        Raises :class:`HiddenCardsError` in hidden mode (:data:`NO_UNDO_HIDDEN`), and
        :class:`IllegalMoveError` when there is nothing to take back."""
        if self.mode == "hidden" and not self.imported:
            raise HiddenCardsError(NO_UNDO_HIDDEN)
        if not self.can_undo:
            if self.imported:
                raise IllegalMoveError("this game was loaded from a record: nothing to take back")
            raise IllegalMoveError("there is no play of yours to take back")
        undone = 0
        while self.plays:
            info = self.plays.pop()
            self.states.pop()
            undone += 1
            if info.by == "human":
                break
        return undone

    # ----------------------------------------------------------------- the agent's estimates

    def _advisor_agent(self) -> Any:
        """A second agent of the AI's name (its draws apart from the playing agent's), or
        None when the game has no hidden-hand agent."""
        if self.mode != "hidden" or self.ai_name is None:
            return None
        if self._advisor is None:
            self._advisor = make_hidden_agent(self.ai_name, device=self.device,
                                              options=self.agent_options)
        return self._advisor

    def estimates_at(self, index: int) -> list[Any] | None:
        """The hidden-hand agent's estimates of the legal plays at position ``index``, from
        the mover's observation (``PlayEstimate`` list, mover's side), or None when the agent
        gives none. Cached per position; the agent's draws are seeded by the position, so the
        same position gets the same estimates."""
        advisor = self._advisor_agent()
        if advisor is None:
            return None
        state = self.states[index]
        key = (index, tuple(state.history))
        if key not in self._estimates:
            advisor.reset((self.ai_seed * 1_000_003 + 7919 * (index + 1)) % (SEED_MAX + 1))
            estimates, measure = agent_estimates(advisor, observe(state, state.player))
            self._estimates[key] = estimates
            if estimates is not None:
                self._estimate_measure = measure
        return self._estimates[key]

    def estimate_text(self, samples: int) -> str:
        """What the values of this game's estimates are (:data:`ESTIMATE_MEASURES`)."""
        return ESTIMATE_MEASURES[self._estimate_measure].format(samples=samples,
                                                                agent=self.ai_name)

    def _estimate_rows(self, estimates: Sequence[Any]) -> list[dict[str, Any]]:
        best = max(e.value for e in estimates)
        return [{**action_json(e.action), "value": _r2(e.value), "loss": _r2(best - e.value),
                 "best": e.value == best, "samples": int(e.samples)} for e in estimates]

    # ----------------------------------------------------------------- hints

    def hint_report(self, at: int | None = None) -> dict[str, Any]:
        """What the Hint button shows for position ``at`` (default: now).

        ``kind`` ``"exact"``: open mode, or any position of a finished game: :meth:`hints`.
        ``"estimate"``: hidden mode during the game: the agent's estimates of the human's
        legal plays from the human's observation (``measure`` ``"mean"``: ``value`` is the
        mean final point difference for the human over ``samples`` draws; ``"advantage"``:
        the hidden-model's score, points over the average play; ``what`` says it in words;
        ``loss``: against the best estimate). ``"none"``: the agent gives no estimates
        (``message`` says so). Raises :class:`IllegalMoveError` at the AI's turn of a hidden
        game (its plays would show its hand).
        """
        state = self._state_at(at)
        if state.is_terminal:
            raise IllegalMoveError("the game is over: no plays to hint")
        if at is not None and not self.over:
            raise IllegalMoveError("only a finished game can be stepped through")
        out: dict[str, Any] = {"at": state.play_index, "player": PLAYERS[state.player],
                               "agent": self.ai_name}
        if self.mode == "open" or self.over:
            return {**out, "kind": "exact", "hints": self.hints(at)}
        if state.player != self.human:
            raise IllegalMoveError("hints are for your own turn")
        estimates = self.estimates_at(len(self.states) - 1)
        if estimates is None:
            return {**out, "kind": "none", "hints": [],
                    "message": f"the {self.ai_name} agent gives no estimates (play against "
                               "pimc for estimated hints)"}
        samples = max(int(e.samples) for e in estimates)
        return {**out, "kind": "estimate", "hints": self._estimate_rows(estimates),
                "samples": samples, "measure": self._estimate_measure,
                "what": self.estimate_text(samples)}

    # ----------------------------------------------------------------- exact values

    def solution_ready(self) -> bool:
        return self.solutions.is_ready(self.deal)

    def _exact_allowed(self) -> None:
        if self.mode == "hidden" and not self.over:
            raise HiddenCardsError("exact values reveal the hidden cards: hints give the "
                                   "agent's estimates, and the exact analysis comes after the "
                                   "game in hidden-hand mode")

    def hints(self, at: int | None = None) -> list[dict[str, Any]]:
        """Every legal play at position ``at`` (default: now) with its exact value.

        ``value`` is the final point difference for the player to move (their points minus
        the other's) if that play is made and both play optimally afterwards; ``loss`` is
        the points it gives away against the best play (0 for every optimal play). Raises
        :class:`HiddenCardsError` in hidden mode before the game is over.
        """
        self._exact_allowed()
        state = self._state_at(at)
        if state.is_terminal:
            raise IllegalMoveError("the game is over: no plays to hint")
        values = self.solutions.get(self.deal).action_values(state)
        sign = 1 if state.player == 0 else -1
        best = max(sign * v for _, v in values)
        return [{**action_json(a), "value": sign * v, "loss": best - sign * v,
                 "best": sign * v == best} for a, v in values]

    def _state_at(self, at: int | None) -> GameState:
        if at is None:
            return self.state
        if not 0 <= at < len(self.states):
            raise IllegalMoveError(f"position {at} does not exist (0..{len(self.states) - 1})")
        return self.states[at]

    def analysis(self) -> dict[str, Any]:
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
        self._exact_allowed()
        solution = self.solutions.get(self.deal)
        rows = []
        costs = [0, 0]
        for info, state in zip(self.plays, self.states):
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
        alex, bob = score(self.state)
        sign_h = 1 if self.human == 0 else -1
        utility = alex.total - bob.total
        out = {
            "mode": self.mode,
            "ai": self.ai_name,
            "over": self.over,
            "final": {"Alex": alex.as_dict(), "Bob": bob.as_dict(), "utility": utility},
            "exact_value": int(solution.value),
            "human": PLAYERS[self.human] if self.human_known else None,
            "human_result": sign_h * utility,
            "human_exact": sign_h * int(solution.value),
            "human_cost": costs[self.human],
            "ai_cost": costs[self.ai_seat],
            "cost": {"Alex": costs[0], "Bob": costs[1]},
            "plays": rows,
        }
        if self.mode == "hidden":
            out["estimate"] = self._estimate_analysis(rows)
        return out

    def _estimate_analysis(self, rows: list[dict[str, Any]]) -> dict[str, Any]:
        """Adds the agent's estimate columns to the human's rows; returns the summary."""
        summary: dict[str, Any] = {"agent": self.ai_name, "available": False,
                                   "human_cost": None}
        if self.ai_name is None:
            summary["message"] = "the record does not name a hidden-hand agent"
            return summary
        if not self.human_known:
            summary["message"] = "the record does not say which side was the human"
            return summary
        total = 0.0
        for index, row in enumerate(rows):
            if self.plays[index].player != self.human:
                continue
            estimates = self.estimates_at(index)
            if estimates is None:
                summary["message"] = (f"the {self.ai_name} agent gives no estimates (play "
                                      "against pimc for estimated hints)")
                return summary
            best = max(e.value for e in estimates)
            played = next((e for e in estimates if e.action == self.plays[index].action), None)
            if played is None:  # pragma: no cover - an agent that skips a legal play
                continue
            row["estimate_value"] = _r2(played.value)
            row["estimate_cost"] = _r2(best - played.value)
            row["estimate_best"] = [e.action.notation() for e in estimates if e.value == best]
            row["samples"] = int(played.samples)
            total += best - played.value
        summary.update(available=True, human_cost=_r2(total), measure=self._estimate_measure)
        return summary

    # ----------------------------------------------------------------- records

    def record(self) -> GameRecord:
        """The game record of the finished game (:class:`InvalidRecordError` if unfinished)."""
        if not self.over:
            raise IllegalMoveError(
                f"the game is not finished ({len(self.plays)} of {NUM_PLAYS} plays): a record "
                "holds all 48 plays")
        return GameRecord(deal=self.deal, plays=tuple(p.action for p in self.plays))

    def record_json(self) -> dict[str, Any]:
        """The record as JSON (the project's format) with ``source``, ``mode``, ``human``,
        ``ai`` and the ``notation`` of each play added (extra keys the format allows)."""
        from tensorcfr.games.pasur.engine.records import record_to_json

        obj = record_to_json(self.record())
        for play, info in zip(obj["plays"], self.plays):
            play["notation"] = info.action.notation()
        obj["source"] = "tensorcfr pasur play"
        obj["mode"] = self.mode
        if self.human_known:
            obj["human"] = PLAYERS[self.human]
        if self.ai_name:
            obj["ai"] = self.ai_name
        if self.seed is not None:
            obj["seed"] = self.seed
        if not self.imported or self.ai_seed:
            obj["ai_seed"] = self.ai_seed  # with the deal, the AI's plays can be replayed
        return obj

    def record_text(self) -> str:
        """:meth:`record_json` as readable JSON text, one play per line (what files hold)."""
        import json

        obj = self.record_json()
        extras = "".join(f"  {json.dumps(k)}: {json.dumps(v)},\n" for k, v in obj.items()
                         if k not in ("deal", "plays"))
        plays = ",\n    ".join(json.dumps(p) for p in obj["plays"])
        return (f"{{\n{extras}  \"deal\": {json.dumps(obj['deal'])},\n"
                f"  \"plays\": [\n    {plays}\n  ]\n}}\n")

    # ----------------------------------------------------------------- views

    def visibility(self) -> str:
        """What the human may see now: ``"open"`` (open mode, or a finished game: everything
        is revealed) or ``"hidden"``."""
        return "open" if self.mode == "open" or self.over else "hidden"

    def rounds_to_come(self, state: GameState) -> list[dict[str, Any]]:
        """The hands of the rounds after ``state``'s round (open hands only): one
        ``{"round": 1..6, "Alex": [4 cards], "Bob": [4 cards]}`` per round to come."""
        out = []
        for r in range(min(state.round, NUM_ROUNDS) + 1, NUM_ROUNDS):
            alex, bob = round_hands(self.deal, r)
            out.append({"round": r + 1, "Alex": list(alex), "Bob": list(bob)})
        return out

    def view(self, seat: str | int | None = None, *, visibility: str | None = None,
             at: int | None = None) -> dict[str, Any]:
        """Everything a client sitting at ``seat`` (default: the human's) may see.

        ``visibility`` (default :meth:`visibility`): ``"open"``: both hands, the deal, its
        seed and the rounds to come. ``"hidden"``: built from :func:`observe` of the seat: the
        other hand only as a count, the undealt cards only as a count, and nothing from which
        they could be computed: no seed (``null``), ``solution_ready`` false (the solution
        cache is shared: whether it holds this deal would answer "is the deal X?"), no undo.
        ``practice``: the player chose the deal (see the class). ``at`` shows the position
        before play ``at`` (stepping through a finished game).
        """
        if visibility is None:
            visibility = self.visibility()
        if visibility not in VISIBILITIES:
            raise ValueError(f"visibility must be one of {VISIBILITIES}")
        me = self.human if seat is None else seat_index(seat)
        if at is not None and self.imported is False and not self.over:
            raise IllegalMoveError("only a finished game can be stepped through")
        index = len(self.states) - 1 if at is None else at
        state = self._state_at(index)
        open_hands = visibility == "open"
        stepping = index != len(self.states) - 1
        your_turn = (not stepping and not state.is_terminal and state.player == me
                     and not self.imported)
        if open_hands:
            hands: dict[str, Any] = {name: list(state.hands[p])
                                     for p, name in enumerate(PLAYERS)}
            pool, piles, surs = state.pool, state.piles, state.surs
            counts = [len(state.hands[0]), len(state.hands[1])]
            legal = legal_actions(state) if your_turn else []
        else:  # only what the seat observes
            obs = observe(state, me)
            hands = {PLAYERS[me]: list(obs.hand), PLAYERS[1 - me]: None}
            pool, piles, surs = obs.pool, obs.piles, obs.surs
            counts = [0, 0]
            counts[me], counts[1 - me] = len(obs.hand), obs.opponent_hand_size
            legal = obs.legal_actions() if your_turn else []
        alex, bob = score_pile(piles[0], surs[0]), score_pile(piles[1], surs[1])
        undealt = 8 * max(0, NUM_ROUNDS - 1 - min(state.round, NUM_ROUNDS - 1)) \
            if not state.is_terminal else 0
        plays = [p.as_dict() for p in self.plays[:index]]
        out: dict[str, Any] = {
            "mode": self.mode,
            "visibility": visibility,
            "seat": PLAYERS[me],
            "human": PLAYERS[self.human],
            "ai": self.ai_name,
            "ai_sees_your_hand": self.ai_sees_everything,
            "imported": self.imported,
            "practice": self.practice and self.mode == "hidden",
            "seed": self.seed if open_hands else None,
            "at": index,
            "num_positions": len(self.states),
            "play_index": state.play_index,
            "round": min(state.round + 1, 6),
            "to_move": None if state.is_terminal else PLAYERS[state.player],
            "your_turn": your_turn,
            "ai_to_move": not stepping and self.ai_to_move,
            "over": state.is_terminal,
            "game_over": self.over,
            "pool": list(pool),
            "hands": hands,
            "hand_counts": {name: counts[p] for p, name in enumerate(PLAYERS)},
            "undealt_count": undealt,
            "piles": {"Alex": list(piles[0]), "Bob": list(piles[1])},
            "score": {"Alex": alex.as_dict(), "Bob": bob.as_dict()},
            "last_capturer": (PLAYERS[state.last_capturer]
                              if state.last_capturer is not None else None),
            "history": plays,
            "last_play": plays[-1] if plays else None,
            "legal": [action_json(a) for a in legal],
            "can_undo": not stepping and self.can_undo,
            "hints_available": True,
            "hint_kind": "exact" if open_hands else "estimate",
            "solution_ready": open_hands and self.solution_ready(),
        }
        if open_hands:
            out["deal"] = list(self.deal)
            out["rounds_to_come"] = self.rounds_to_come(state)
        return out


def card_codes(cards: Sequence[int]) -> list[str]:
    return [card_code(c) for c in cards]
