"""Card indices and notation (docs/PASUR_RULES.md, section "Cards")."""

from __future__ import annotations

import pytest

from tensorcfr.errors import InvalidDealError, TensorCFRError
from tensorcfr.games.pasur.engine import cards
from tensorcfr.games.pasur.engine.cards import (
    card_code,
    card_rank,
    card_suit,
    card_value,
    cards_str,
    is_club,
    is_jack,
    is_king,
    is_numeric,
    is_queen,
    parse_card,
)


def test_index_is_four_times_rank_plus_suit() -> None:
    for rank, rank_char in enumerate("A23456789TJQK"):
        for suit, suit_char in enumerate("cdhs"):
            index = 4 * rank + suit
            assert card_rank(index) == rank
            assert card_suit(index) == suit
            assert card_code(index) == rank_char + suit_char
            assert parse_card(rank_char + suit_char) == index


def test_named_cards_of_the_rules_page() -> None:
    assert parse_card("Tc") == 36
    assert parse_card("Td") == 37 == cards.TEN_OF_DIAMONDS
    assert parse_card("2c") == 4 == cards.TWO_OF_CLUBS
    assert parse_card("Ac") == 0 and parse_card("Ks") == 51
    assert [parse_card(c) for c in ("Ac", "Ad", "Ah", "As")] == list(cards.ACES)


def test_card_classes() -> None:
    assert [c for c in range(52) if is_numeric(c)] == list(range(40))
    assert [c for c in range(52) if is_jack(c)] == list(cards.JACKS) == [40, 41, 42, 43]
    assert [c for c in range(52) if is_queen(c)] == list(cards.QUEENS) == [44, 45, 46, 47]
    assert [c for c in range(52) if is_king(c)] == list(cards.KINGS) == [48, 49, 50, 51]
    for c in range(52):  # every card is exactly one kind
        assert is_numeric(c) + is_jack(c) + is_queen(c) + is_king(c) == 1


def test_clubs_are_thirteen_including_face_cards() -> None:
    clubs = [c for c in range(52) if is_club(c)]
    assert clubs == list(cards.CLUBS) == list(range(0, 52, 4))
    assert len(clubs) == 13
    assert {parse_card("Jc"), parse_card("Qc"), parse_card("Kc")} <= set(clubs)
    assert cards_str(clubs) == "Ac 2c 3c 4c 5c 6c 7c 8c 9c Tc Jc Qc Kc"


def test_numeric_values() -> None:
    assert [card_value(c) for c in range(0, 40, 4)] == list(range(1, 11))
    assert card_value(parse_card("Ah")) == 1
    assert card_value(parse_card("Ts")) == 10
    for face in range(40, 52):
        with pytest.raises(ValueError):
            card_value(face)


@pytest.mark.parametrize("text,index", [
    ("10c", 36), ("10d", 37), ("ah", 2), ("QS", 47), ("tD", 37), (" Kc ", 48), ("jh", 42),
])
def test_parse_card_accepts_variants(text: str, index: int) -> None:
    assert parse_card(text) == index


@pytest.mark.parametrize("text", ["", "1c", "Xc", "Ax", "Acc", "11c", "c", "T", "10", "♣A"])
def test_parse_card_rejects_bad_codes(text: str) -> None:
    with pytest.raises(InvalidDealError) as info:
        parse_card(text)
    assert isinstance(info.value, TensorCFRError)
    assert "\n" not in str(info.value)
    assert "is not a card" in str(info.value)


def test_card_code_out_of_range() -> None:
    for bad in (-1, 52, 100):
        with pytest.raises(ValueError, match="out of range"):
            card_code(bad)


def test_roundtrip_all_cards_and_cards_str() -> None:
    text = cards_str(range(52))
    assert [parse_card(t) for t in text.split()] == list(range(52))
    assert cards_str([0, 25], "+") == "Ac+7d"
    assert cards_str([]) == ""
