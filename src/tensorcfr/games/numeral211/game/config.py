"""Numeral211 Hold'em: cards, notation and the game parameters (:class:`GameConfig`).

Cards are integers ``card = rank * num_suits + suit`` with ``rank`` 0 = the lowest rank of
:attr:`GameConfig.ranks` (``"2"`` in the default deck) and suits numbered 0..S-1 written
``s h d c``.  A card prints as rank letter + suit letter, e.g. ``"Ts"`` or ``"2h"``.

A private hand (two cards) is indexed by its position in ``itertools.combinations(range(N),
2)`` order (``hand_index``); ``hand_cards(config)`` gives the [H, 2] table.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import asdict, dataclass
from functools import lru_cache
from typing import Any, Literal, get_args

import numpy as np

from tensorcfr.errors import TensorCFRError

__all__ = [
    "RANK_CHARS", "SUIT_CHARS", "GameConfig", "GameConfigError", "card_to_str", "parse_card",
    "parse_cards", "hand_cards", "hand_index_table", "cards_to_str", "STORAGES", "Storage",
]

Storage = Literal["classes", "cells"]
"""How an exact solver stores its tables: one entry per suit-isomorphic class (default,
``ClassStorageCFR``) or per (canonical board, hand) cell (``PublicTreeCFR`` on the cell game).
The one vocabulary of ``--storage``, settings, solvers and checkpoints (checked where a run's
settings are built, ``runs.run_common.check_storage``)."""
STORAGES: tuple[Storage, ...] = get_args(Storage)

RANK_CHARS = "23456789TA"
"""Ranks of the default deck, low to high (no J, Q, K)."""
SUIT_CHARS = "shdc"
"""Suit letters, suit 0 first."""
ALL_RANK_CHARS = "23456789TJQKA"


class GameConfigError(TensorCFRError):
    """Game parameters that do not describe a playable Numeral211 variant."""


@dataclass(frozen=True)
class GameConfig:
    """Parameters of a Numeral211 Hold'em variant (defaults: the paper's game).

    ``ranks``: rank letters low to high (the deck has ``len(ranks) * suits`` cards);
    ``ante``: chips each player puts in before the deal; ``bets``: bet/raise size per round
    (chips); ``max_bets``: most bets plus raises per round; ``first_to_act``: the player who
    opens each round; ``private_cards`` per player and ``public_cards`` dealt per round
    (this implementation supports 2 private cards and boards of (0, 1, 1) cards: the showdown
    is the best 3 of 4 cards).
    """

    ranks: str = RANK_CHARS
    suits: int = 4
    ante: int = 5
    bets: tuple[int, ...] = (10, 20, 20)
    max_bets: tuple[int, ...] = (4, 4, 4)
    first_to_act: tuple[int, ...] = (0, 1, 1)
    private_cards: int = 2
    public_cards: tuple[int, ...] = (0, 1, 1)

    def __post_init__(self) -> None:
        object.__setattr__(self, "bets", tuple(int(b) for b in _as_tuple(self.bets, "bets")))
        object.__setattr__(self, "max_bets", tuple(int(b) for b in _as_tuple(self.max_bets,
                                                                              "max_bets")))
        object.__setattr__(self, "first_to_act",
                           tuple(int(b) for b in _as_tuple(self.first_to_act, "first_to_act")))
        object.__setattr__(self, "public_cards",
                           tuple(int(b) for b in _as_tuple(self.public_cards, "public_cards")))
        self.validate()

    def __deepcopy__(self, memo: dict[int, Any]) -> "GameConfig":
        """The config itself: it is immutable (frozen; str, int and int-tuple fields), and
        OpenSpiel clones every state of ``python_numeral211`` with ``copy.deepcopy``, where
        rebuilding the config was most of the cost of a clone."""
        return self

    # ------------------------------------------------------------------ validation
    def validate(self) -> None:
        """Raise :class:`GameConfigError` (one line) when the parameters are unplayable."""
        if not isinstance(self.ranks, str) or not self.ranks:
            raise GameConfigError(f"ranks must be a non-empty string of rank letters, got "
                                  f"{self.ranks!r}")
        if any(ch not in ALL_RANK_CHARS for ch in self.ranks) or len(set(self.ranks)) != len(
                self.ranks):
            raise GameConfigError(f"ranks {self.ranks!r}: use distinct letters of "
                                  f"{ALL_RANK_CHARS}")
        if [ALL_RANK_CHARS.index(c) for c in self.ranks] != sorted(
                ALL_RANK_CHARS.index(c) for c in self.ranks):
            raise GameConfigError(f"ranks {self.ranks!r} must be listed low to high")
        if not isinstance(self.suits, int) or not 1 <= self.suits <= 4:
            raise GameConfigError(f"suits must be 1..4, got {self.suits!r}")
        if self.private_cards != 2 or self.public_cards != (0, 1, 1):
            raise GameConfigError("only 2 private cards and boards of (0, 1, 1) public cards "
                                  f"are supported, got {self.private_cards} and "
                                  f"{self.public_cards}")
        rounds = len(self.public_cards)
        for label, values in (("bets", self.bets), ("max_bets", self.max_bets),
                              ("first_to_act", self.first_to_act)):
            if len(values) != rounds:
                raise GameConfigError(f"{label} needs one value per round ({rounds}), got "
                                      f"{list(values)}")
        if self.ante < 0:
            raise GameConfigError(f"ante must be >= 0, got {self.ante}")
        if any(b <= 0 for b in self.bets):
            raise GameConfigError(f"bet sizes must be positive, got {list(self.bets)}")
        if any(m < 0 or m > 16 for m in self.max_bets):
            raise GameConfigError(f"max_bets must be 0..16 per round, got {list(self.max_bets)}")
        if any(p not in (0, 1) for p in self.first_to_act):
            raise GameConfigError(f"first_to_act must be 0 or 1 per round, got "
                                  f"{list(self.first_to_act)}")
        needed = 2 * self.private_cards + sum(self.public_cards)
        if self.num_cards < needed:
            raise GameConfigError(f"a deck of {self.num_cards} cards ({len(self.ranks)} ranks x "
                                  f"{self.suits} suits) is too small to deal {needed} cards")

    # ------------------------------------------------------------------ sizes
    @property
    def num_ranks(self) -> int:
        """Number of ranks R."""
        return len(self.ranks)

    @property
    def num_cards(self) -> int:
        """Deck size N = R * S."""
        return len(self.ranks) * self.suits

    @property
    def num_rounds(self) -> int:
        """Betting rounds (3)."""
        return len(self.public_cards)

    @property
    def num_hands(self) -> int:
        """Private hands H = C(N, 2)."""
        return math.comb(self.num_cards, 2)

    @property
    def is_default(self) -> bool:
        """True for the paper's game."""
        return self == GameConfig()

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready parameters."""
        d = asdict(self)
        return {k: list(v) if isinstance(v, tuple) else v for k, v in d.items()}

    @staticmethod
    def from_dict(d: dict[str, Any]) -> "GameConfig":
        """Inverse of :meth:`to_dict` (raises :class:`GameConfigError` on bad values)."""
        allowed = {"ranks", "suits", "ante", "bets", "max_bets", "first_to_act",
                   "private_cards", "public_cards"}
        if not isinstance(d, dict) or set(d) - allowed:
            raise GameConfigError(f"not a Numeral211 game description: {d!r}")
        try:
            return GameConfig(**{k: tuple(v) if isinstance(v, list) else v for k, v in d.items()})
        except (TypeError, ValueError, AttributeError, OverflowError) as exc:
            raise GameConfigError(f"bad game description: {exc}") from None

    def describe(self) -> str:
        """Short text, e.g. ``numeral211(ranks=23456789TA,suits=4,...)``."""
        if self.is_default:
            return "numeral211"
        return (f"numeral211(ranks={self.ranks},suits={self.suits},ante={self.ante},"
                f"bets={'/'.join(map(str, self.bets))},"
                f"max_bets={'/'.join(map(str, self.max_bets))})")


def _as_tuple(value: Any, label: str) -> tuple:
    if isinstance(value, (int, np.integer)):
        return (int(value),) * 3
    try:
        return tuple(value)
    except TypeError:
        raise GameConfigError(f"{label} must be a list of integers, got {value!r}") from None


# ---------------------------------------------------------------------- notation
def card_to_str(config: GameConfig, card: int) -> str:
    """``"Ts"`` for the card number ``card``."""
    rank, suit = divmod(int(card), config.suits)
    return config.ranks[rank] + SUIT_CHARS[suit]


def cards_to_str(config: GameConfig, cards: Any) -> str:
    """Cards concatenated, e.g. ``"Ts9h"``."""
    return "".join(card_to_str(config, c) for c in cards)


def parse_card(config: GameConfig, text: str) -> int:
    """Card number of ``"Ts"`` (raises :class:`GameConfigError` when not in the deck)."""
    if len(text) != 2 or text[0] not in config.ranks or text[1] not in SUIT_CHARS[:config.suits]:
        raise GameConfigError(f"{text!r} is not a card of this deck ({config.ranks} x "
                              f"{SUIT_CHARS[:config.suits]})")
    return config.ranks.index(text[0]) * config.suits + SUIT_CHARS.index(text[1])


def parse_cards(config: GameConfig, text: str) -> list[int]:
    """Card numbers of ``"Ts9h"`` (no separators, or spaces/commas between cards)."""
    clean = text.replace(" ", "").replace(",", "")
    if len(clean) % 2:
        raise GameConfigError(f"cannot read cards {text!r}")
    return [parse_card(config, clean[i:i + 2]) for i in range(0, len(clean), 2)]


@lru_cache(maxsize=16)
def _hand_tables(num_cards: int) -> tuple[np.ndarray, np.ndarray]:
    pairs = np.array(list(itertools.combinations(range(num_cards), 2)), dtype=np.int64)
    index = np.full((num_cards, num_cards), -1, dtype=np.int64)
    index[pairs[:, 0], pairs[:, 1]] = np.arange(len(pairs))
    index[pairs[:, 1], pairs[:, 0]] = np.arange(len(pairs))
    pairs.setflags(write=False)
    index.setflags(write=False)
    return pairs, index


def hand_cards(config: GameConfig) -> np.ndarray:
    """[H, 2] int64: the two cards (low, high card number) of every private hand."""
    return _hand_tables(config.num_cards)[0]


def hand_index_table(config: GameConfig) -> np.ndarray:
    """[N, N] int64: hand index of the card pair (a, b) in either order, -1 when a == b."""
    return _hand_tables(config.num_cards)[1]
