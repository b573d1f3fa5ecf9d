"""The Python API refuses a game that will not fit by default, as the CLI does: every
``max_memory_bytes`` of the generic engine (``flatten_game``, the solvers, checkpoint loads)
defaults to ``"auto"``, the memory available now; ``None`` is the explicit "no limit"."""

from __future__ import annotations

import pytest

from tensorcfr.errors import MemoryLimitError, TensorCFRError
from tensorcfr.games.openspiel import CFRSolver, flatten_game
from tensorcfr.utils import resources
from tensorcfr.utils.resources import memory_budget


def test_memory_budget_reads_every_form(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(resources, "available_memory_bytes", lambda: 12345)
    assert memory_budget(None) is None
    assert memory_budget(4096) == 4096
    assert memory_budget("8G") == 8 * 2**30
    assert memory_budget("auto") == int(resources.AUTO_MEMORY_SHARE * 12345)
    assert memory_budget("auto", device="cpu") == memory_budget("auto")
    for bad in (0, -1, True, 1.5, "lots"):
        with pytest.raises(TensorCFRError):
            memory_budget(bad)  # type: ignore[arg-type]


def test_flatten_and_solvers_refuse_by_default(monkeypatch: pytest.MonkeyPatch) -> None:
    """With (pretend) 64 KiB available (a budget of 80% of it), the default walk of leduc_poker (9,457 nodes) and a
    solver built from its name stop with MemoryLimitError; ``None`` lifts the limit."""
    monkeypatch.setattr(resources, "available_memory_bytes", lambda: 64 * 1024)
    with pytest.raises(MemoryLimitError):
        flatten_game("leduc_poker")
    with pytest.raises(MemoryLimitError):
        CFRSolver("leduc_poker")
    tree = flatten_game("leduc_poker", max_memory_bytes=None)
    assert tree.num_nodes == 9457
    with pytest.raises(MemoryLimitError):
        CFRSolver(tree)  # (the solver's own estimate, from a tree already built)
    solver = CFRSolver(tree, max_memory_bytes=None)
    solver.iterate(1)
    assert solver.iteration == 1
