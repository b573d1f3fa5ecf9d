"""Errors a user can cause. The CLI prints their message on one line and exits non-zero."""

from __future__ import annotations


class TensorCFRError(Exception):
    """Base class: a problem with the user's input, printed as one line (exit code 2)."""

    exit_code: int = 2


class InvalidDealError(TensorCFRError):
    """A deal that is not a permutation of the 52 cards, or whose pool holds a Jack."""


class InvalidRecordError(TensorCFRError):
    """A game record file that is not valid JSON of the record format."""


class IllegalPlayError(TensorCFRError):
    """A play that the rules forbid (exit code 1 in ``replay``)."""

    exit_code = 1


class IllegalMoveError(TensorCFRError):
    """A play or command a game in play (``pasur play``, ``pasur serve``) cannot accept now;
    the message is one sentence (the server answers 400)."""


class HiddenCardsError(IllegalMoveError):
    """A question whose answer would reveal cards the human may not see yet (the server
    answers 403)."""


class MemoryLimitError(TensorCFRError):
    """The estimated memory of a job exceeds the allowed limit."""


class CorruptFileError(TensorCFRError):
    """A saved file (checkpoint, policy, table) that is truncated or of the wrong format."""


class OutputWriteError(TensorCFRError):
    """An output that could not be written (a full disk, no permission); nothing was left
    half-written."""


class InterruptedRun(TensorCFRError):
    """A run stopped by SIGINT or SIGTERM; the message says what was saved and where
    (exit code 130, as a shell reports Ctrl-C)."""

    exit_code = 130
