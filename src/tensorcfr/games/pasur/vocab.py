"""The words of Pasur that cross modules, as types: each is checked once where it enters (a
CLI option, an API request model, a settings object) and inner code receives the typed value.

* :class:`Mode`: how a game is played: ``hidden`` hands (the real game) or ``open`` hands
  (double-dummy). The play server, the terminal game and their records speak it; its
  :attr:`Mode.note` is the one description the page, the API and ``--help`` show.
* :class:`GraphMode`: how the DCFR solver lays out a deal's game: ``dag`` (positions
  merged) or ``tree``.
* :data:`AgentName`: the name of a hidden-hand agent of the registry
  (:mod:`tensorcfr.games.pasur.agents`, which checks it: :func:`~.agents.check_agent_name`).

A :class:`~enum.StrEnum` member *is* its string (``Mode.HIDDEN == "hidden"``, JSON
``"hidden"``, ``f"{mode}"`` reads ``hidden``), so files, JSON answers and messages are the same
as with plain strings. This module imports nothing of the project: every stage of
``games/pasur`` (engine -> solving -> playing -> learning -> agents) and the top layers
(``play/``, ``cli/``) may import it.

>>> Mode.parse("open") is Mode.OPEN
True
>>> Mode.parse("closed")
Traceback (most recent call last):
...
tensorcfr.errors.TensorCFRError: the mode is hidden or open, got 'closed'
"""

from __future__ import annotations

from enum import StrEnum
from typing import NewType

from tensorcfr.errors import TensorCFRError

__all__ = ["AgentName", "GraphMode", "Mode"]


class _Word(StrEnum):
    """A word of a vocabulary: its ``repr`` is its string's (``'dag'``), so a message or a
    doctest that shows one reads as it did when the word was a plain string."""

    def __repr__(self) -> str:
        return repr(self.value)


class Mode(_Word):
    """How a game of Pasur is played: what each side sees."""

    HIDDEN = "hidden"
    """The real game: each side sees its own hand, the pool and the cards played."""
    OPEN = "open"
    """Study mode (double-dummy): both hands and the rounds to come are shown."""

    @property
    def note(self) -> str:
        """One line saying what the mode shows (the page and ``GET /api/options``)."""
        return _MODE_NOTES[self]

    @classmethod
    def parse(cls, text: object, option: str | None = None) -> Mode:
        """``text`` as a :class:`Mode`; a one-line :class:`TensorCFRError` otherwise (named
        after ``option`` when given, e.g. ``--mode``)."""
        if isinstance(text, cls):
            return text
        if isinstance(text, str) and text in cls._value2member_map_:
            return cls(text)
        where = f"{option}: " if option else ""
        raise TensorCFRError(f"{where}the mode is hidden or open, got {text!r}")


_MODE_NOTES = {
    Mode.HIDDEN: "hidden hands: each side sees only its own hand, the pool and the cards "
                 "played",
    Mode.OPEN: "open hands (double-dummy): both players see every card of the deal",
}


class GraphMode(_Word):
    """The DCFR solver's layout of a deal's game (``pasur solve --mode``)."""

    DAG = "dag"
    """Equal positions merged: far fewer nodes (the default)."""
    TREE = "tree"
    """Every history its own node (a check of the DAG, and the layout of small games)."""

    @classmethod
    def parse(cls, text: object, option: str = "--mode") -> GraphMode:
        """``text`` as a :class:`GraphMode`; a one-line :class:`TensorCFRError` otherwise."""
        if isinstance(text, cls):
            return text
        if isinstance(text, str) and text in cls._value2member_map_:
            return cls(text)
        raise TensorCFRError(f"{option} must be one of {', '.join(m.value for m in cls)}, "
                             f"got {text!r}")


AgentName = NewType("AgentName", str)
"""A name the agent registry knows (returned by :func:`~.agents.check_agent_name`). Not a
closed ``Literal``: the registry is the one list, and a test or a plug-in may add to it."""
