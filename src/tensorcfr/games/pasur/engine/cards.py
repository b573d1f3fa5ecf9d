"""Cards of Pasur: index ``4*rank + suit`` and the ``Tc`` / ``Ah`` notation.

rank 0..12 = A 2 3 4 5 6 7 8 9 T J Q K; suit 0..3 = clubs, diamonds, hearts, spades.

>>> card_code(36), parse_card("Td"), card_value(parse_card("Ah"))
('Tc', 37, 1)
"""

from __future__ import annotations

from typing import Iterable

from tensorcfr.errors import InvalidDealError

RANKS = "A23456789TJQK"
SUITS = "cdhs"
NUM_CARDS = 52
NUM_NUMERIC = 40  # A..10 are indices 0..39
JACKS = (40, 41, 42, 43)
QUEENS = (44, 45, 46, 47)
KINGS = (48, 49, 50, 51)
TEN_OF_DIAMONDS = 37
TWO_OF_CLUBS = 4
ACES = (0, 1, 2, 3)
CLUBS = tuple(range(0, 52, 4))


def card_rank(card: int) -> int:
    """Rank 0..12 (A=0, ..., T=9, J=10, Q=11, K=12)."""
    return card // 4


def card_suit(card: int) -> int:
    """Suit 0..3 (clubs, diamonds, hearts, spades)."""
    return card % 4


def is_numeric(card: int) -> bool:
    """A..10 (indices 0..39)."""
    return card < NUM_NUMERIC


def is_jack(card: int) -> bool:
    return 40 <= card < 44


def is_queen(card: int) -> bool:
    return 44 <= card < 48


def is_king(card: int) -> bool:
    return card >= 48


def is_club(card: int) -> bool:
    return card % 4 == 0


def card_value(card: int) -> int:
    """Value of a numeric card, A=1 .. 10=10. Raises ``ValueError`` for face cards."""
    if not is_numeric(card):
        raise ValueError(f"{card_code(card)} has no numeric value")
    return card // 4 + 1


def card_code(card: int) -> str:
    """The two-character code of a card index, e.g. ``36 -> 'Tc'``."""
    if not 0 <= card < NUM_CARDS:
        raise ValueError(f"card index {card} is out of range 0..51")
    return RANKS[card // 4] + SUITS[card % 4]


def parse_card(text: str) -> int:
    """Card index of a code like ``Tc``, ``10c``, ``ah`` or ``QS``.

    Raises :class:`InvalidDealError` with a readable message on a bad code.
    """
    t = text.strip()
    if len(t) == 3 and t[:2] == "10":
        t = "T" + t[2]
    if len(t) != 2:
        raise InvalidDealError(f"{text!r} is not a card: use rank A23456789TJQK + suit cdhs, e.g. Tc")
    rank = RANKS.find(t[0].upper())
    suit = SUITS.find(t[1].lower())
    if rank < 0 or suit < 0:
        raise InvalidDealError(f"{text!r} is not a card: use rank A23456789TJQK + suit cdhs, e.g. Tc")
    return 4 * rank + suit


def cards_str(cards: Iterable[int], sep: str = " ") -> str:
    """Codes of several cards, e.g. ``'Ac As 9d'``."""
    return sep.join(card_code(c) for c in cards)
