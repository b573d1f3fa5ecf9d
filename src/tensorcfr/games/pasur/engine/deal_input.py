"""A Pasur deal from what a user gives: card codes (``--deal``), a deal file
(``--deal-file``) or a seed (``--seed``), as every command that takes a deal reads it.

A deal is 52 card indices in deal order, pool first (:func:`.rules.validate_deal`); a deal
file holds a JSON list of 52 card indices or 52 card codes, or 52 card codes as text.
Errors are one-line :class:`~tensorcfr.errors.InvalidDealError` /
:class:`~tensorcfr.errors.TensorCFRError` messages naming the option.

>>> choose_deal(None, None, 3) == random_deal(3)
True
"""

from __future__ import annotations

import json

from tensorcfr.errors import InvalidDealError, TensorCFRError
from tensorcfr.games.pasur.engine.rules import parse_deal, random_deal, validate_deal

__all__ = ["MAX_DEAL_FILE_BYTES", "choose_deal", "read_deal_file"]


MAX_DEAL_FILE_BYTES = 1 * 2**20
"""Largest deal file read (a deal is 52 short codes); bigger files are refused unread."""


def read_deal_file(path: str) -> tuple[int, ...]:
    """A deal from a file: a JSON list of 52 card indices or 52 card codes (``"Ac"``...),
    or 52 card codes as text.

    Raises :class:`InvalidDealError` (one line) for unreadable or oversized files, game
    records (which hold a deal but are not one) and bad deals.
    """
    from tensorcfr.utils.reading import read_input_bytes

    try:
        text = read_input_bytes(path, "deal file", MAX_DEAL_FILE_BYTES).decode("utf-8")
    except TensorCFRError as exc:
        raise InvalidDealError(str(exc)) from None
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise InvalidDealError(f"cannot read deal file {path}: {reason}") from None
    stripped = text.strip()
    if stripped.startswith("{"):
        hint = ""
        try:
            obj = json.loads(stripped)
            if isinstance(obj, dict) and "deal" in obj:
                hint = (" (it looks like a game record: its \"deal\" list is the deal; "
                        "replay it with `tensorcfr pasur replay`)")
        except json.JSONDecodeError:
            pass
        raise InvalidDealError(
            f"deal file {path} holds a JSON object{hint}; a deal file holds a JSON list of 52 "
            "card indices or codes, e.g. [0, 1, ...] or [\"Ac\", \"Ad\", ...], or 52 card "
            "codes as text, pool first")
    if stripped.startswith("["):
        try:
            cards = json.loads(stripped)
        except json.JSONDecodeError as exc:
            raise InvalidDealError(
                f"deal file {path} is not valid JSON ({exc.msg} at line {exc.lineno})") from None
        if not isinstance(cards, list):
            raise InvalidDealError(f"deal file {path} must hold a JSON list of 52 card indices "
                                   "or codes")
        try:
            if cards and all(isinstance(c, str) for c in cards):
                return parse_deal(" ".join(cards))
            if any(isinstance(c, str) for c in cards):
                raise InvalidDealError("mixes card codes and indices; use one or the other")
            return validate_deal(cards)
        except InvalidDealError as exc:
            raise InvalidDealError(f"deal file {path}: {exc}") from None
    try:
        return parse_deal(stripped)
    except InvalidDealError as exc:
        raise InvalidDealError(f"deal file {path}: {exc}") from None


def choose_deal(deal: str | None, deal_file: str | None, seed: int | None) -> tuple[int, ...]:
    """The deal named by exactly one of ``--deal``, ``--deal-file`` and ``--seed``."""
    given = [name for name, v in (("--deal", deal), ("--deal-file", deal_file), ("--seed", seed))
             if v is not None]
    if not given:
        raise TensorCFRError("no deal given: use one of --deal \"Ac As ...\", --deal-file F "
                             "or --seed N")
    if len(given) > 1:
        raise TensorCFRError(f"give only one of --deal, --deal-file or --seed (got "
                             f"{' and '.join(given)})")
    if deal is not None:
        return parse_deal(deal)
    if deal_file is not None:
        return read_deal_file(deal_file)
    assert seed is not None
    return random_deal(seed)
