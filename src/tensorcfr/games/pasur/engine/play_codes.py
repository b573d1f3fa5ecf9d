"""Plays as integers: one int64 per play, for compact game records (tournament journals and
tables).

A play's code is ``card | captured_mask << 6``: the card played (0..51) in the low 6 bits and,
above them, bit ``c`` for each pool card ``c`` it captured (none for a lay). The code says the
play itself, not its index among the legal plays, so a record reads the same whatever order
the engine lists plays in. Whether a play is legal where it was made is the replay's to
check (:func:`.rules.illegal_reason`); nothing here knows a position.
"""

from __future__ import annotations

from typing import Sequence

from tensorcfr.games.pasur.engine import rules

__all__ = ["MAX_PLAY_CODE", "play_codes", "plays_from_codes"]

_CARD_BITS = 6  # a card index 0..51 fits in the low 6 bits of a play's code
MAX_PLAY_CODE = (1 << (_CARD_BITS + 52)) - 1
"""The largest play code (every card captured, card 63): codes fit in a signed 64-bit int."""


def play_codes(actions: Sequence[rules.Action]) -> list[int]:
    """One integer per play, ``card | captured_mask << 6`` (``captured_mask``: bit ``c`` for
    each captured card ``c``; 0 for a lay), self-contained (not an index into the legal plays,
    so a record reads the same if the engine lists plays in another order).

    >>> play_codes([rules.Action(5, ()), rules.Action(2, (0, 9))])
    [5, 32834]
    >>> plays_from_codes([5, 32834])
    (Action(card=5, captured=()), Action(card=2, captured=(0, 9)))
    """
    codes = []
    for action in actions:
        mask = 0
        for card in action.captured:
            mask |= 1 << card
        codes.append(int(action.card) | mask << _CARD_BITS)
    return codes


def plays_from_codes(codes: Sequence[int]) -> tuple[rules.Action, ...]:
    """The plays of :func:`play_codes` (well-formed only: whether they are legal is the
    replay's to check). Raises ``ValueError`` for a code that is no play (negative, a card
    past 51, a captured card past 51)."""
    plays = []
    for code in codes:
        code = int(code)
        if not 0 <= code <= MAX_PLAY_CODE or (code & ((1 << _CARD_BITS) - 1)) >= rules.NUM_CARDS:
            raise ValueError(f"{code} is not a play code")
        card, mask = code & ((1 << _CARD_BITS) - 1), code >> _CARD_BITS
        captured = tuple(c for c in range(rules.NUM_CARDS) if mask >> c & 1)
        if mask >> rules.NUM_CARDS:
            raise ValueError(f"{code} is not a play code")
        plays.append(rules.Action(card, captured))
    return tuple(plays)
