"""A game of Pasur between a human and an AI, independent of any user interface.

This module is the one place that knows the two modes of play and what each may show:

* :attr:`Mode.HIDDEN` (the real game, the default, :data:`DEFAULT_MODE`): each side sees its
  own hand, the pool and the cards played. The AI is a hidden-hand agent of the registry
  (:data:`tensorcfr.games.pasur.agents.AGENTS`, default
  :data:`~tensorcfr.play.opponents.DEFAULT_HIDDEN_AGENT`) that is handed only its
  :func:`observe` observation. Hints are that agent's *estimates* of the human's legal plays
  (from the human's observation); exact values, which reveal the hidden cards, come only
  after the game.
* :attr:`Mode.OPEN` (the study mode, double-dummy): both hands and the rounds to come are
  shown; the AI is an open-hands player (:data:`tensorcfr.games.pasur.agents.OPEN_PLAYERS`),
  hints are exact values.

A :class:`GameSession` holds the deal, the mode, the human's seat, the AI, the list of
positions so far (undo pops back to the human's previous decision), and answers the questions
a player asks: the legal plays, hints, and after the game the analysis (final score and
breakdown, the deal's exact value, each play marked with the points it cost against perfect
information and, in hidden mode, against the agent's estimate at that moment). A finished
game exports to the project's game record format (with its mode); an imported record becomes a
finished session to step through with the same analysis.

It knows nothing of HTTP or terminals. Its neighbours: :mod:`tensorcfr.play.opponents` (which
AI a game may have, the one check of its name, the factories), :mod:`tensorcfr.play.analysis`
(hints and the end-of-game analysis, which this class answers through) and
:mod:`tensorcfr.play.caches` (exact values come from
:func:`tensorcfr.games.pasur.solving.exact.solve_exact` through a :class:`SolutionCache`, a
bounded LRU shared by all sessions; one solve per deal even when several threads ask at once).
The mode is a :class:`~tensorcfr.games.pasur.vocab.Mode`, checked where it enters (the
constructor takes a string too, for Python callers, and parses it once).

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
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from tensorcfr.errors import (
    HiddenCardsError,
    IllegalMoveError,
    InvalidRecordError,
    TensorCFRError,
)
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
from tensorcfr.games.pasur.vocab import Mode
from tensorcfr.play import analysis as play_analysis
from tensorcfr.play.analysis import AgentAdvice, action_json
from tensorcfr.play.caches import PlayerCache, SolutionCache
from tensorcfr.play.opponents import (
    PlayerLike,
    UniformPlayer,
    ai_names,
    default_ai,
    make_ai,
    make_hidden_agent,
    sample_action,
)

__all__ = [
    "DEFAULT_MODE",
    "DealChoice",
    "GameSession",
    "PlayInfo",
    "SEED_MAX",
    "check_seed",
    "new_deal",
    "secret_deal",
    "seat_index",
]

DEFAULT_MODE = Mode.HIDDEN
"""The mode of a game unless another is named: the real game."""
SEED_MAX = 2**63 - 1
"""Seeds of deals and of the AI's draws are 0..SEED_MAX everywhere (CLI, API, page)."""


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



class GameSession:
    """One game: a deal, the mode, the human's seat, an AI, and the positions played so far.

    Args:
        deal: 52 card indices (validated).
        human: the human's seat, ``"alex"``/``"bob"`` or 0/1.
        ai: the AI's name (see :func:`ai_names`; default :func:`default_ai` of the mode);
            ``player`` (open) or ``agent`` (hidden) overrides the object that plays.
        mode: :attr:`Mode.HIDDEN` (the real game) or :attr:`Mode.OPEN` (double-dummy study
            mode); a string is parsed (one-line error for any other).
        solutions: the shared :class:`SolutionCache` (exact hints, analysis, the exact AI).
        ai_seed: seed of the AI's random draws (same seed and same plays, same game).
        seed: the seed of the deal when it is a seeded random deal (recorded; shown only
            where every card is: open hands, or after the game).
        agent_options: :class:`tensorcfr.games.pasur.agents.AgentOptions` of a hidden agent.
        practice: the player chose the deal (a seed, the cards, a position of a finished
            game) and so can know every card: the view says so (``practice``).
    """

    def __init__(self, deal: Sequence[int], human: str | int = "alex", ai: str | None = None,
                 *, mode: Mode | str = DEFAULT_MODE, solutions: SolutionCache | None = None,
                 player: PlayerLike | None = None, agent: Any = None,
                 ai_seed: int | None = 0, seed: int | None = None, model: str | None = None,
                 table: str | None = None, device: str = "cpu",
                 players: PlayerCache | None = None, agent_options: Any = None,
                 practice: bool = False) -> None:
        self.deal = validate_deal(deal)
        self.practice = bool(practice)
        self.mode = Mode.parse(mode)
        self.human = seat_index(human)
        self.ai_name: str | None = ai if ai is not None else default_ai(self.mode)
        self.seed = seed
        self.ai_seed = int(ai_seed) if ai_seed is not None else 0
        self.device = device
        self.agent_options = agent_options
        self.solutions = solutions if solutions is not None else SolutionCache()
        self.player: PlayerLike | None = None
        self.agent: Any = None
        if self.mode is Mode.HIDDEN and player is None:
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
        self._advice: AgentAdvice | None = None  # the agent's estimates (hints, analysis)

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
        mode = Mode(meta["mode"]) if meta.get("mode") in Mode._value2member_map_ else Mode.OPEN
        session = cls(record.deal, human, "random", mode=Mode.OPEN, solutions=solutions,
                      player=UniformPlayer())
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
        if self.mode is Mode.OPEN:
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
        if self.imported or self.mode is Mode.HIDDEN:
            return False
        return any(p.by == "human" for p in self.plays)

    def undo(self) -> int:
        """Take back the human's last play and the AI's plays after it; returns plays undone.

        Raises :class:`HiddenCardsError` in hidden mode (:data:`NO_UNDO_HIDDEN`), and
        :class:`IllegalMoveError` when there is nothing to take back."""
        if self.mode is Mode.HIDDEN and not self.imported:
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

    # ----------------------------------------------------------------- hints and analysis

    def advice(self) -> AgentAdvice | None:
        """The agent's estimates of this game's positions (:class:`AgentAdvice`, built when
        first asked), or None when the game has no hidden-hand agent."""
        if self.mode is not Mode.HIDDEN or self.ai_name is None:
            return None
        if self._advice is None:
            self._advice = AgentAdvice(self.ai_name, self.ai_seed, device=self.device,
                                       options=self.agent_options)
        return self._advice

    def estimates_at(self, index: int) -> list[Any] | None:
        """The hidden-hand agent's estimates of the legal plays at position ``index``, from
        the mover's observation (``PlayEstimate`` list, mover's side), or None when the agent
        gives none (:meth:`AgentAdvice.estimates_at`)."""
        advice = self.advice()
        return None if advice is None else advice.estimates_at(self.states, index)

    def hint_report(self, at: int | None = None) -> dict[str, Any]:
        """What the Hint button shows for position ``at``
        (:func:`tensorcfr.play.analysis.hint_report`)."""
        return play_analysis.hint_report(self, at)

    def hints(self, at: int | None = None) -> list[dict[str, Any]]:
        """Every legal play at ``at`` with its exact value
        (:func:`tensorcfr.play.analysis.exact_hints`)."""
        return play_analysis.exact_hints(self, at)

    def analysis(self) -> dict[str, Any]:
        """The end-of-game analysis (:func:`tensorcfr.play.analysis.game_analysis`)."""
        return play_analysis.game_analysis(self)

    def solution_ready(self) -> bool:
        """Whether the deal's exact solution is cached (open hands only: see :meth:`view`)."""
        return self.solutions.is_ready(self.deal)

    def require_exact_allowed(self) -> None:
        """The one check before exact values: :class:`HiddenCardsError` in hidden mode
        before the game is over (they reveal the hidden cards)."""
        if self.mode is Mode.HIDDEN and not self.over:
            raise HiddenCardsError("exact values reveal the hidden cards: hints give the "
                                   "agent's estimates, and the exact analysis comes after the "
                                   "game in hidden-hand mode")

    def state_at(self, at: int | None) -> GameState:
        """The position before play ``at`` (default: now); one-line error if there is none."""
        if at is None:
            return self.state
        if not 0 <= at < len(self.states):
            raise IllegalMoveError(f"position {at} does not exist (0..{len(self.states) - 1})")
        return self.states[at]

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

    def visibility(self) -> Mode:
        """What the human may see now: :attr:`Mode.OPEN` (open mode, or a finished game:
        everything is revealed) or :attr:`Mode.HIDDEN`."""
        return Mode.OPEN if self.mode is Mode.OPEN or self.over else Mode.HIDDEN

    def rounds_to_come(self, state: GameState) -> list[dict[str, Any]]:
        """The hands of the rounds after ``state``'s round (open hands only): one
        ``{"round": 1..6, "Alex": [4 cards], "Bob": [4 cards]}`` per round to come."""
        out = []
        for r in range(min(state.round, NUM_ROUNDS) + 1, NUM_ROUNDS):
            alex, bob = round_hands(self.deal, r)
            out.append({"round": r + 1, "Alex": list(alex), "Bob": list(bob)})
        return out

    def view(self, seat: str | int | None = None, *, visibility: Mode | str | None = None,
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
        visibility = Mode.parse(visibility, "visibility")
        me = self.human if seat is None else seat_index(seat)
        if at is not None and self.imported is False and not self.over:
            raise IllegalMoveError("only a finished game can be stepped through")
        index = len(self.states) - 1 if at is None else at
        state = self.state_at(index)
        open_hands = visibility is Mode.OPEN
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
            "practice": self.practice and self.mode is Mode.HIDDEN,
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
