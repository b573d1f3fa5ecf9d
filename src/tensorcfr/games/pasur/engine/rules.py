"""The reference rules engine of Pasur: small, readable, the source of truth.

Every other engine (the exact solver, the tensor tree builder, self-play) is tested against
this module. It follows ``docs/PASUR_RULES.md`` line by line; states are immutable.

>>> deal = parse_deal("Ac As 9d Kd 4c 4d 7d Qc 3d 3h 5c Ks " + " ".join(
...     card_code(c) for c in range(52) if c not in
...     (0, 3, 33, 49, 12, 13, 25, 44, 9, 10, 16, 51)))
>>> state = initial_state(deal)
>>> [a.notation() for a in legal_actions(state)]
['4c', '4d', '7d', 'Qc']
"""

from __future__ import annotations

import operator
import random
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Iterable, NamedTuple, Sequence

from tensorcfr.errors import InvalidDealError
from tensorcfr.games.pasur.engine.cards import (
    ACES,
    NUM_CARDS,
    TEN_OF_DIAMONDS,
    TWO_OF_CLUBS,
    card_code,
    card_value,
    cards_str,
    is_club,
    is_jack,
    is_king,
    is_numeric,
    is_queen,
    parse_card,
)

PLAYERS = ("Alex", "Bob")
ALEX, BOB = 0, 1
NUM_ROUNDS = 6
PLAYS_PER_ROUND = 8
NUM_PLAYS = NUM_ROUNDS * PLAYS_PER_ROUND  # 48
CLUBS_FOR_BONUS = 7
CLUBS_BONUS = 7
SUR_POINTS = 5


# --------------------------------------------------------------------------- deals

def validate_deal(cards: Sequence[int]) -> tuple[int, ...]:
    """Check that ``cards`` is a permutation of 0..51 with no Jack in the pool ``cards[0:4]``.

    Returns the deal as a tuple; raises :class:`InvalidDealError` with a one-line reason.
    """
    try:
        # operator.index accepts ints (and numpy/torch integer scalars) but not 1.5 or "7",
        # which int() would silently turn into card indices.
        deal = tuple(operator.index(c) for c in cards)
    except (TypeError, ValueError):
        raise InvalidDealError("a deal must be a list of 52 card indices") from None
    if any(isinstance(c, bool) for c in cards):
        raise InvalidDealError("a deal must be a list of 52 card indices")
    if len(deal) != NUM_CARDS:
        raise InvalidDealError(f"a deal has 52 cards, this one has {len(deal)}")
    bad = [c for c in deal if not 0 <= c < NUM_CARDS]
    if bad:
        raise InvalidDealError(f"card index {bad[0]} is out of range 0..51")
    seen: set[int] = set()
    for c in deal:
        if c in seen:
            raise InvalidDealError(f"card {card_code(c)} appears twice in the deal")
        seen.add(c)
    jacks = [c for c in deal[:4] if is_jack(c)]
    if jacks:
        raise InvalidDealError(
            f"the initial pool holds a Jack ({cards_str(jacks)}); a deal's first four cards "
            "must not include a Jack")
    return deal


def parse_deal(text: str) -> tuple[int, ...]:
    """Parse 52 card codes (whitespace or comma separated, pool first) into a valid deal."""
    tokens = [t for t in text.replace(",", " ").split() if t]
    if tokens and all(t.isdigit() for t in tokens) and len(tokens) == NUM_CARDS:
        return validate_deal([int(t) for t in tokens])
    return validate_deal([parse_card(t) for t in tokens])


def random_deal(seed: int | None = None, *, rng: random.Random | None = None
                ) -> tuple[int, ...]:
    """A seeded random deal that follows the table rule for Jacks in the initial pool.

    A single Jack among the first four pool cards goes back into the rest of the deck (at a
    random place) and is replaced by the next card; two or more Jacks, or a Jack as the
    replacement, make the whole deck be reshuffled. Same seed, same deal. ``rng`` draws with
    that generator instead of ``random.Random(seed)`` (``random.SystemRandom()``: a deal
    nobody can compute, as a hidden-hand game needs).
    """
    rng = rng if rng is not None else random.Random(seed)
    while True:
        deck = list(range(NUM_CARDS))
        rng.shuffle(deck)
        jack_positions = [i for i in range(4) if is_jack(deck[i])]
        if not jack_positions:
            return validate_deal(deck)
        if len(jack_positions) >= 2 or is_jack(deck[4]):
            continue  # reshuffle the whole deck
        pos = jack_positions[0]
        jack = deck[pos]
        deck[pos] = deck.pop(4)  # the next card replaces the Jack in the pool
        deck.insert(rng.randrange(4, NUM_CARDS), jack)  # the Jack goes back into the deck
        return validate_deal(deck)


def round_hands(deal: Sequence[int], round_index: int) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """The (Alex, Bob) hands dealt in round ``round_index`` (0..5), each sorted."""
    base = 4 + 8 * round_index
    return tuple(sorted(deal[base:base + 4])), tuple(sorted(deal[base + 4:base + 8]))


# --------------------------------------------------------------------------- actions

class Action(NamedTuple):
    """A play: the card played and the sorted tuple of pool cards it captures (empty: laid)."""

    card: int
    captured: tuple[int, ...] = ()

    @property
    def is_lay(self) -> bool:
        return not self.captured

    def notation(self) -> str:
        """E.g. ``'3d+Ac+7d'`` for a capture, ``'7d'`` for a lay."""
        return "+".join(card_code(c) for c in (self.card, *self.captured))


@lru_cache(maxsize=None)
def _subsets_with_sum(values: tuple[tuple[int, int], ...], target: int) -> tuple[tuple[int, ...], ...]:
    """All subsets of ``values`` (pairs (value, card), sorted) whose values sum to ``target``."""
    out: list[tuple[int, ...]] = []

    def walk(start: int, remaining: int, chosen: list[int]) -> None:
        if remaining == 0:
            out.append(tuple(sorted(chosen)))
            return
        for i in range(start, len(values)):
            value, card = values[i]
            if value > remaining:
                break
            chosen.append(card)
            walk(i + 1, remaining - value, chosen)
            chosen.pop()

    walk(0, target, [])
    return tuple(sorted(out))


def captures(card: int, pool: Iterable[int]) -> list[tuple[int, ...]]:
    """Every set of pool cards that ``card`` can capture (each a sorted tuple); [] if none.

    Numeric: non-empty sets of numeric pool cards summing with it to 11. Jack: all numeric
    cards and Jacks of the pool at once (if any). Queen/King: exactly one Queen/King.
    """
    pool = sorted(pool)
    return _captures_from(card, pool, _numeric_values(pool))


def hand_captures(hand: Iterable[int], pool: Iterable[int]
                  ) -> list[tuple[int, list[tuple[int, ...]]]]:
    """``(card, captures(card, pool))`` for every card of ``hand``, reading the pool once."""
    pool = sorted(pool)
    numeric = _numeric_values(pool)
    return [(card, _captures_from(card, pool, numeric)) for card in hand]


def _numeric_values(sorted_pool: list[int]) -> tuple[tuple[int, int], ...]:
    """(value, card) of the numeric cards of a sorted pool (sorted: value grows with index)."""
    return tuple((card_value(c), c) for c in sorted_pool if is_numeric(c))


def _captures_from(card: int, pool: list[int], numeric: tuple[tuple[int, int], ...]
                   ) -> list[tuple[int, ...]]:
    """:func:`captures` given the sorted pool and its numeric (value, card) pairs."""
    if is_numeric(card):
        return [s for s in _subsets_with_sum(numeric, 11 - card_value(card)) if s]
    if is_jack(card):
        taken = tuple(c for c in pool if is_numeric(c) or is_jack(c))
        return [taken] if taken else []
    same_rank = is_queen if is_queen(card) else is_king
    return [(c,) for c in pool if same_rank(c)]


def card_actions(card: int, pool: Iterable[int]) -> list[Action]:
    """The actions of playing ``card``: its captures, or laying it if it has none."""
    caps = captures(card, pool)
    if caps:
        return [Action(card, s) for s in caps]
    return [Action(card, ())]


# --------------------------------------------------------------------------- state

@dataclass(frozen=True)
class GameState:
    """A position of a full-information Pasur game.

    ``play_index`` counts plays made so far (0..48); the round is ``play_index // 8`` and
    Alex moves when ``play_index`` is even. Piles hold every card each player has taken.
    """

    deal: tuple[int, ...]
    play_index: int
    hands: tuple[tuple[int, ...], tuple[int, ...]]
    pool: tuple[int, ...]
    piles: tuple[tuple[int, ...], tuple[int, ...]] = ((), ())
    surs: tuple[int, int] = (0, 0)
    last_capturer: int | None = None
    history: tuple[Action, ...] = field(default=(), compare=False)

    @property
    def round(self) -> int:
        """Round 0..5 of the next play (6 when the game is over)."""
        return self.play_index // PLAYS_PER_ROUND

    @property
    def player(self) -> int:
        """Who moves next: 0 = Alex, 1 = Bob."""
        return self.play_index % 2

    @property
    def is_terminal(self) -> bool:
        return self.play_index >= NUM_PLAYS


def initial_state(deal: Sequence[int]) -> GameState:
    """The state before the first play: pool ``deal[0:4]`` and round 0's hands."""
    deal = validate_deal(deal)
    return GameState(deal=deal, play_index=0, hands=round_hands(deal, 0),
                     pool=tuple(sorted(deal[:4])))


def legal_actions(state: GameState) -> list[Action]:
    """All legal actions of the player to move, ordered by card then captured set."""
    if state.is_terminal:
        return []
    return [Action(card, s) for card, caps in hand_captures(state.hands[state.player], state.pool)
            for s in (caps or [()])]


def illegal_reason(state: GameState, action: Action) -> str | None:
    """Why ``action`` is illegal in ``state`` (one sentence), or ``None`` if it is legal."""
    if state.is_terminal:
        return "the game is already over"
    who = PLAYERS[state.player]
    card, captured = action.card, tuple(sorted(action.captured))
    if card not in state.hands[state.player]:
        return f"{card_code(card)} is not in {who}'s hand ({cards_str(state.hands[state.player])})"
    missing = [c for c in captured if c not in state.pool]
    if missing:
        return f"{cards_str(missing, '+')} is not in the pool ({cards_str(state.pool) or 'empty'})"
    if len(set(captured)) != len(captured):
        return "the captured set names a card twice"
    caps = captures(card, state.pool)
    if not captured:
        if caps:
            return (f"{card_code(card)} can capture {cards_str(caps[0], '+')}, "
                    "so it cannot be laid")
        return None
    if captured in caps:
        return None
    if not caps:
        return f"{card_code(card)} can capture nothing here, it can only be laid"
    if is_numeric(card):
        return (f"{card_code(card)} cannot capture {cards_str(captured, '+')}: "
                f"captured cards must be numeric and sum with it to 11")
    if is_jack(card):
        return (f"{card_code(card)} must capture every numeric card and Jack of the pool "
                f"({cards_str(caps[0], '+')}), no more and no less")
    return f"{card_code(card)} captures exactly one card of its own rank"


def apply_action(state: GameState, action: Action) -> GameState:
    """The state after ``action`` (which must be legal; see :func:`illegal_reason`).

    Handles Surs, dealing the next round's hands, and the end-of-game cleanup (the pool goes
    to the last player who captured anything).
    """
    reason = illegal_reason(state, action)
    if reason is not None:
        raise ValueError(f"illegal action {action.notation()}: {reason}")
    return apply_legal_action(state, action)


def apply_legal_action(state: GameState, action: Action, *,
                       plays_per_round: int = PLAYS_PER_ROUND, num_rounds: int = NUM_ROUNDS,
                       deal_next_round: bool = True) -> GameState:
    """:func:`apply_action` without the legality check, for callers that took ``action``
    from :func:`legal_actions` of ``state`` (search roll-outs); an illegal action gives a
    wrong state, not an error.  ``plays_per_round`` / ``num_rounds``: a smaller Pasur's
    lengths (the OpenSpiel game's deck and deal parameters); ``deal_next_round=False``
    leaves the next round's hands empty (there, chance nodes deal them)."""
    num_plays = plays_per_round * num_rounds
    p = state.play_index % 2
    card, captured = action.card, tuple(sorted(action.captured))
    hands = list(state.hands)
    hands[p] = tuple(c for c in hands[p] if c != card)
    piles = list(state.piles)
    surs = list(state.surs)
    last_capturer = state.last_capturer
    if captured:
        pool = tuple(c for c in state.pool if c not in captured)
        piles[p] = tuple(sorted(piles[p] + (card,) + captured))
        last_capturer = p
        if (not pool and not is_jack(card)
                and state.play_index // plays_per_round < num_rounds - 1):
            surs[p] += 1
    else:
        pool = tuple(sorted(state.pool + (card,)))
    play_index = state.play_index + 1
    if deal_next_round and play_index % plays_per_round == 0 and play_index < num_plays:
        hands = list(round_hands(state.deal, play_index // plays_per_round))
    if play_index == num_plays and pool and last_capturer is not None:
        piles[last_capturer] = tuple(sorted(piles[last_capturer] + pool))
        pool = ()
    return GameState(deal=state.deal, play_index=play_index, hands=(hands[0], hands[1]),
                     pool=pool, piles=(piles[0], piles[1]), surs=(surs[0], surs[1]),
                     last_capturer=last_capturer,
                     history=state.history + (Action(card, captured),))


# --------------------------------------------------------------------------- scoring

@dataclass(frozen=True)
class ScoreBreakdown:
    """One player's points by source."""

    clubs: int
    clubs_bonus: int
    aces: int
    jacks: int
    ten_of_diamonds: int
    two_of_clubs: int
    surs: int
    sur_points: int

    @property
    def total(self) -> int:
        return (self.clubs_bonus + self.aces + self.jacks + self.ten_of_diamonds
                + self.two_of_clubs + self.sur_points)

    def as_dict(self) -> dict[str, int]:
        return {"clubs": self.clubs, "clubs_bonus": self.clubs_bonus, "aces": self.aces,
                "jacks": self.jacks, "ten_of_diamonds": self.ten_of_diamonds,
                "two_of_clubs": self.two_of_clubs, "surs": self.surs,
                "sur_points": self.sur_points, "total": self.total}


def score_pile(pile: Iterable[int], surs: int) -> ScoreBreakdown:
    """Points of one player's pile plus Surs."""
    pile = list(pile)
    clubs = sum(1 for c in pile if is_club(c))
    return ScoreBreakdown(
        clubs=clubs,
        clubs_bonus=CLUBS_BONUS if clubs >= CLUBS_FOR_BONUS else 0,
        aces=sum(1 for c in pile if c in ACES),
        jacks=sum(1 for c in pile if is_jack(c)),
        ten_of_diamonds=3 if TEN_OF_DIAMONDS in pile else 0,
        two_of_clubs=2 if TWO_OF_CLUBS in pile else 0,
        surs=surs,
        sur_points=SUR_POINTS * surs,
    )


def score(state: GameState) -> tuple[ScoreBreakdown, ScoreBreakdown]:
    """(Alex, Bob) score breakdowns of the piles and Surs so far (final after 48 plays)."""
    return score_pile(state.piles[0], state.surs[0]), score_pile(state.piles[1], state.surs[1])


def utility(state: GameState) -> int:
    """Alex's points minus Bob's points."""
    a, b = score(state)
    return a.total - b.total


def play_game(deal: Sequence[int], choose) -> GameState:  # type: ignore[no-untyped-def]
    """Play a whole game: ``choose(state, legal_actions) -> Action`` picks each play."""
    state = initial_state(deal)
    while not state.is_terminal:
        state = apply_action(state, choose(state, legal_actions(state)))
    return state


def describe_deal(deal: Sequence[int]) -> list[str]:
    """Human-readable lines: the pool, then each round's hands."""
    lines = [f"pool     {cards_str(deal[:4])}"]
    for h in range(NUM_ROUNDS):
        a, b = round_hands(deal, h)
        lines.append(f"round {h + 1}  Alex {cards_str(a)}   Bob {cards_str(b)}")
    return lines
