"""The core knows no game: no module under ``tensorcfr/core`` imports a game package, the
CLI or a game library, statically (any import statement, also inside functions) or at run
time (a full solve on a tree built elsewhere loads none of them); and the core's own
modules import each other without cycles."""

from __future__ import annotations

import ast
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch

import tensorcfr

CORE = Path(tensorcfr.__file__).resolve().parent / "core"
FORBIDDEN = ("tensorcfr.games", "tensorcfr.cli", "tensorcfr.play", "tensorcfr.bench",
             "tensorcfr.abstraction", "pyspiel", "open_spiel")


def _imports(path: Path) -> list[tuple[int, str]]:
    """(line, absolute module name) of every import statement in ``path``."""
    package = "tensorcfr.core"
    found = []
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # relative: resolve against tensorcfr.core
                base = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                module = f"{base}.{node.module}" if node.module else base
            else:
                module = node.module or ""
            found.append((node.lineno, module))
            found += [(node.lineno, f"{module}.{alias.name}") for alias in node.names]
    return found


def test_core_modules_import_no_game_cli_or_game_library() -> None:
    files = sorted(CORE.glob("*.py"))
    assert len(files) >= 6
    offending = [f"{path.name}:{line}: {module}" for path in files
                 for line, module in _imports(path)
                 if any(module == bad or module.startswith(bad + ".") for bad in FORBIDDEN)]
    assert offending == []


def test_core_imports_have_no_cycle() -> None:
    modules = {path.stem: path for path in CORE.glob("*.py") if path.stem != "__init__"}
    edges = {name: {module.split(".")[2] for _, module in _imports(path)
                    if module.startswith("tensorcfr.core.") and module.split(".")[2] in modules
                    and module.split(".")[2] != name}
             for name, path in modules.items()}
    done: set[str] = set()

    def visit(name: str, stack: tuple[str, ...]) -> None:
        assert name not in stack, f"import cycle: {' -> '.join(stack + (name,))}"
        if name in done:
            return
        for other in sorted(edges[name]):
            visit(other, stack + (name,))
        done.add(name)

    for name in sorted(modules):
        visit(name, ())


def test_a_full_solve_in_the_core_loads_no_game_module(tmp_path: Path) -> None:
    from tensorcfr.games.openspiel import flatten_game

    tree_file = tmp_path / "kuhn_tree.pt"
    torch.save(flatten_game("kuhn_poker").state_dict(), tree_file)
    script = textwrap.dedent(f"""
        import importlib, pkgutil, sys
        import torch
        import tensorcfr.core
        for info in pkgutil.iter_modules(tensorcfr.core.__path__):
            importlib.import_module("tensorcfr.core." + info.name)
        from tensorcfr.core.best_response import exploitability
        from tensorcfr.core.cfr import TensorCFRSolver, load_checkpoint
        from tensorcfr.core.policy_io import load_policy, save_policy
        from tensorcfr.core.tree import LevelTree
        tree = LevelTree.from_state_dict(torch.load({str(tree_file)!r}, weights_only=False))
        solver = TensorCFRSolver(tree, algo="cfr+")
        solver.iterate(50)
        solver.save({str(tmp_path / "ck.npz")!r})
        again = load_checkpoint({str(tmp_path / "ck.npz")!r}, tree)
        assert torch.equal(again.average_policy(), solver.average_policy())
        save_policy({str(tmp_path / "p.npz")!r}, tree, solver.average_policy())
        assert load_policy({str(tmp_path / "p.npz")!r}).game_string == "kuhn_poker()"
        value = exploitability(tree, solver.average_policy()).exploitability
        assert 0 < value < 0.05, value
        bad = sorted(m for m in sys.modules if m.startswith({FORBIDDEN!r}))
        print(bad)
        sys.exit(1 if bad else 0)
    """)
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_core_solver_refuses_a_game_string_and_points_to_the_adapter() -> None:
    from tensorcfr.core.cfr import TensorCFRSolver
    from tensorcfr.errors import TensorCFRError

    with pytest.raises(TensorCFRError, match="tensorcfr.games.openspiel"):
        TensorCFRSolver("kuhn_poker")


def test_openspiel_solvers_are_the_core_solvers_on_the_flattened_tree() -> None:
    from tensorcfr.core.cfr import TensorCFRSolver as CoreSolver
    from tensorcfr.games.openspiel import CFRPlusSolver, flatten_game

    ours = CFRPlusSolver("kuhn_poker")
    core = CoreSolver(flatten_game("kuhn_poker"), algo="cfr+")
    assert isinstance(ours, CoreSolver)
    ours.iterate(20)
    core.iterate(20)
    assert torch.equal(ours.average_policy(), core.average_policy())
    tabular = ours.average_policy_tabular()
    assert tabular.action_probability_array.shape[0] == ours.tree.num_infosets
