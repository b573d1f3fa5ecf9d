"""Pasur game records: a deal and its 48 plays, as JSON, and their replay against the rules.

A record file holds one JSON object::

    {"deal": [52 card indices in deck order],
     "plays": [{"card": i, "captured": [j, ...]}, ... 48 plays in order]}

``deal`` is read as in ``docs/PASUR_RULES.md`` (``deal[0:4]`` the initial pool, then each
round's hands); ``plays[n]`` is the n-th play of the game (0-based; Alex makes the even-numbered
plays, Bob the odd ones) and an empty ``captured`` list means the card was laid. Other keys (e.g.
``"source"`` at the top, ``"notation"`` in a play) are allowed and ignored.

Checking a record's *format* (:func:`parse_record`, :func:`load_record`) is separate from
checking its *plays* against the rules (:func:`replay_record`): a well-formed record may hold an
illegal play, which the replay reports with its number, its player and the reason.

>>> from tensorcfr.games.pasur.engine.rules import random_deal, play_game
>>> state = play_game(random_deal(3), lambda s, actions: actions[0])
>>> result = replay_record(record_from_state(state))
>>> result.legal, result.alex_points - result.bob_points == result.utility
(True, True)
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tensorcfr.errors import InvalidDealError, InvalidRecordError
from tensorcfr.games.pasur.engine.cards import NUM_CARDS
from tensorcfr.games.pasur.engine.rules import (
    NUM_PLAYS,
    PLAYERS,
    Action,
    GameState,
    ScoreBreakdown,
    apply_action,
    illegal_reason,
    initial_state,
    score,
    validate_deal,
)
from tensorcfr.utils.io import write_text_atomic

__all__ = [
    "GameRecord",
    "IllegalPlay",
    "ReplayResult",
    "load_record",
    "parse_record",
    "record_from_state",
    "record_to_json",
    "replay_record",
    "save_record",
]


# --------------------------------------------------------------------------- the record

@dataclass(frozen=True)
class GameRecord:
    """A whole game: the deal (52 card indices, deck order) and the 48 plays in order.

    The deal is validated (a permutation of 0..51 with no Jack in the pool); the plays are
    well-formed actions but are *not* checked against the rules here (see
    :func:`replay_record`).
    """

    deal: tuple[int, ...]
    plays: tuple[Action, ...]


def _is_int(value: Any) -> bool:
    """A JSON integer (``bool`` is excluded: ``true`` is not a card index)."""
    return isinstance(value, int) and not isinstance(value, bool)


def _card_index(value: Any, where: str) -> int:
    """Check that ``value`` is an integer card index 0..51; ``where`` names it in the error."""
    if not _is_int(value):
        raise InvalidRecordError(
            f"{where} must be an integer card index 0..51, got {_short(value)}")
    if not 0 <= value < NUM_CARDS:
        raise InvalidRecordError(f"{where}: card index {value} is out of range 0..51")
    return int(value)


def _parse_play(item: Any, number: int) -> Action:
    """One ``{"card": i, "captured": [...]}`` entry of ``plays`` as an :class:`Action`."""
    where = f"play {number}"
    if not isinstance(item, dict):
        raise InvalidRecordError(
            f"{where} must be an object {{\"card\": i, \"captured\": [...]}}, got {_short(item)}")
    missing = [key for key in ("card", "captured") if key not in item]
    if missing:
        raise InvalidRecordError(f"{where} has no {' or '.join(repr(k) for k in missing)} key")
    card = _card_index(item["card"], f"{where} card")
    captured_raw = item["captured"]
    if not isinstance(captured_raw, list):
        raise InvalidRecordError(
            f"{where} captured must be a list of card indices, got {_short(captured_raw)}")
    captured = tuple(sorted(_card_index(c, f"{where} captured card") for c in captured_raw))
    # A card named twice in ``captured`` is kept: it is a rules matter (illegal_reason says so).
    return Action(card, captured)


def _short(value: Any, limit: int = 40) -> str:
    """A short one-line JSON rendering of ``value`` for error messages."""
    try:
        text = json.dumps(value)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= limit else text[:limit - 3] + "..."


def parse_record(obj: Any) -> GameRecord:
    """Build a :class:`GameRecord` from a decoded JSON object.

    Raises :class:`InvalidRecordError` with a one-line reason if ``obj`` is not an object, lacks
    ``deal`` or ``plays``, the deal is not a valid deal (length, duplicates, indices out of
    range, a Jack in the initial pool, non-integers), or ``plays`` is not a list of exactly 48
    ``{"card": i, "captured": [j, ...]}`` objects with integer card indices.
    """
    if not isinstance(obj, dict):
        raise InvalidRecordError(
            f"a game record must be a JSON object with \"deal\" and \"plays\", got {_short(obj)}")
    missing = [key for key in ("deal", "plays") if key not in obj]
    if missing:
        raise InvalidRecordError(
            f"the record has no {' or '.join(repr(k) for k in missing)} key")
    deal_raw = obj["deal"]
    if not isinstance(deal_raw, list):
        raise InvalidRecordError(f"deal must be a list of 52 card indices, got {_short(deal_raw)}")
    bad = [c for c in deal_raw if not _is_int(c)]
    if bad:
        raise InvalidRecordError(f"deal must hold integer card indices 0..51, got {_short(bad[0])}")
    try:
        deal = validate_deal(deal_raw)
    except InvalidDealError as exc:
        raise InvalidRecordError(f"invalid deal: {exc}") from None
    plays_raw = obj["plays"]
    if not isinstance(plays_raw, list):
        raise InvalidRecordError(
            f"plays must be a list of {{\"card\", \"captured\"}} objects, got {_short(plays_raw)}")
    if len(plays_raw) != NUM_PLAYS:
        raise InvalidRecordError(
            f"a game record has {NUM_PLAYS} plays, this one has {len(plays_raw)}")
    plays = tuple(_parse_play(item, n) for n, item in enumerate(plays_raw))
    return GameRecord(deal=deal, plays=plays)


def record_to_json(record: GameRecord) -> dict[str, Any]:
    """The JSON object of a record (plain lists and ints; inverse of :func:`parse_record`)."""
    return {
        "deal": [int(c) for c in record.deal],
        "plays": [{"card": int(a.card), "captured": [int(c) for c in a.captured]}
                  for a in record.plays],
    }


def _decode_error_message(text: str, exc: json.JSONDecodeError) -> str:
    """One line explaining a JSON decoding failure; a failure at the very end = truncated."""
    if not text.strip():
        return "the file is empty, expected a JSON game record"
    # A string running to the end of the file, or an error at the very end: the file stops early.
    if exc.pos >= len(text.rstrip()) or exc.msg.startswith("Unterminated string"):
        return (f"the file is truncated: its JSON stops early (line {exc.lineno}, "
                f"column {exc.colno})")
    return f"not valid JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})"


MAX_RECORD_BYTES = 4 * 2**20
"""Largest game record file read (a 48-play record is a few KiB); bigger files are refused
before being read."""


def load_record(path: str | os.PathLike[str]) -> GameRecord:
    """Read and validate a game record file.

    Raises :class:`InvalidRecordError` (one line) if the file is missing or unreadable, is
    larger than :data:`MAX_RECORD_BYTES`, is not
    UTF-8, is empty, truncated or not JSON, or is not a valid record (see :func:`parse_record`).
    """
    import os
    import stat

    from tensorcfr.errors import TensorCFRError
    from tensorcfr.utils.reading import read_input_bytes

    p = Path(path)
    try:  # a folder, FIFO or device is refused by stat, before anything is opened
        mode = os.stat(p).st_mode
    except FileNotFoundError:
        raise InvalidRecordError("no such file") from None
    except OSError as exc:
        raise InvalidRecordError(f"cannot read the file: {exc.strerror or exc}") from None
    if stat.S_ISDIR(mode):
        raise InvalidRecordError("is a directory, not a game record file") from None
    try:
        raw = read_input_bytes(p, "game record", MAX_RECORD_BYTES)
    except TensorCFRError as exc:
        raise InvalidRecordError(str(exc).replace(f"game record {p} ", "the file ")) from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise InvalidRecordError("not a text (UTF-8) file, expected a JSON game record") from None
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InvalidRecordError(_decode_error_message(text, exc)) from None
    except RecursionError:
        raise InvalidRecordError("not a game record: JSON nested too deeply") from None
    return parse_record(obj)


def save_record(path: str | os.PathLike[str], record: GameRecord) -> None:
    """Write ``record`` as JSON to ``path`` atomically (a complete file or none)."""
    obj = record_to_json(record)
    # One play per line: readable and diff-friendly, still plain JSON.
    lines = ",\n    ".join(json.dumps(play) for play in obj["plays"])
    text = (f"{{\n  \"deal\": {json.dumps(obj['deal'])},\n"
            f"  \"plays\": [\n    {lines}\n  ]\n}}\n")
    write_text_atomic(path, text)


def record_from_state(state: GameState) -> GameRecord:
    """The record of a finished game, from its deal and its history of 48 actions.

    Raises :class:`InvalidRecordError` if the game is not over (a record holds all 48 plays).
    """
    if len(state.history) != NUM_PLAYS:
        raise InvalidRecordError(
            f"a game record needs all {NUM_PLAYS} plays; this game has {len(state.history)} "
            "(only a finished game, played from its initial state, can be recorded)")
    return GameRecord(deal=tuple(state.deal),
                      plays=tuple(Action(a.card, tuple(sorted(a.captured)))
                                  for a in state.history))


# --------------------------------------------------------------------------- the replay

@dataclass(frozen=True)
class IllegalPlay:
    """The first play of a record that the rules forbid.

    ``number`` is its 0-based index in ``plays``; ``player`` is 0 (Alex) or 1 (Bob); ``reason``
    is :func:`tensorcfr.games.pasur.engine.rules.illegal_reason`'s sentence.
    """

    number: int
    player: int
    action: Action
    reason: str

    @property
    def player_name(self) -> str:
        return PLAYERS[self.player]

    def message(self) -> str:
        """E.g. ``'play 17 (Bob): 5c can capture Ah+5d, so it cannot be laid'``."""
        return f"play {self.number} ({self.player_name}): {self.reason}"

    def as_dict(self) -> dict[str, Any]:
        return {"number": self.number, "player": self.player_name, "reason": self.reason,
                "card": self.action.card, "captured": list(self.action.captured),
                "message": self.message()}


@dataclass(frozen=True)
class ReplayResult:
    """The outcome of replaying a record.

    ``state`` is the final state if every play is legal (``legal``), otherwise the state just
    before the first illegal play (then ``illegal_play`` describes it and the scores are those
    of that unfinished position). ``alex`` / ``bob`` are the score breakdowns of ``state``.
    """

    record: GameRecord
    legal: bool
    state: GameState
    alex: ScoreBreakdown
    bob: ScoreBreakdown
    illegal_play: IllegalPlay | None = None

    @property
    def alex_points(self) -> int:
        return self.alex.total

    @property
    def bob_points(self) -> int:
        return self.bob.total

    @property
    def utility(self) -> int:
        """Alex's points minus Bob's points (the zero-sum utility)."""
        return self.alex.total - self.bob.total

    @property
    def plays_applied(self) -> int:
        """How many plays were legal and applied (48 for a legal record)."""
        return self.state.play_index

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready summary: legality, points, breakdowns, and the illegal play if any."""
        out: dict[str, Any] = {
            "legal": self.legal,
            "complete": self.state.is_terminal,
            "plays_applied": self.plays_applied,
            "alex_points": self.alex_points,
            "bob_points": self.bob_points,
            "utility": self.utility,
            "breakdown": {"alex": self.alex.as_dict(), "bob": self.bob.as_dict()},
        }
        if self.illegal_play is not None:
            out["illegal_play"] = self.illegal_play.as_dict()
        return out


def replay_record(record: GameRecord) -> ReplayResult:
    """Replay every play of ``record`` from the deal, stopping at the first illegal one.

    Never raises for an illegal play: it is reported in the result (``legal`` False and
    ``illegal_play`` set). The deal must be valid (it is, for a parsed record). A record built
    by hand with fewer than 48 plays replays to an unfinished state (``complete`` False).
    """
    state = initial_state(record.deal)
    for number, action in enumerate(record.plays):
        reason = illegal_reason(state, action)
        if reason is not None:
            alex, bob = score(state)
            return ReplayResult(record=record, legal=False, state=state, alex=alex, bob=bob,
                                illegal_play=IllegalPlay(number=number, player=state.player,
                                                         action=action, reason=reason))
        state = apply_action(state, action)
    alex, bob = score(state)
    return ReplayResult(record=record, legal=True, state=state, alex=alex, bob=bob)
