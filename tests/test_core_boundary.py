"""Layers of the package, checked on every module (found by walking the source, so a new
module is covered the day it is added):

* the core knows no game: no module under ``tensorcfr/core`` imports a game package, the CLI
  or a game library, statically (any import statement, also inside functions) or at run time
  (a full solve on a tree built elsewhere loads none of them); the core's own modules import
  each other without cycles;
* every room of ``tensorcfr`` imports only the rooms :data:`LAYERS` allows it (the core no
  game, the games no CLI, web app or benchmark code, no game another game except the OpenSpiel
  adapter), and every module belongs to a room;
* inside a staged game package (:data:`STAGES`: ``games/pasur``, ``games/numeral211``) a
  module imports only its own stage or earlier ones, and every module sits in a named stage.
"""

from __future__ import annotations

import ast
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch

import tensorcfr

SRC = Path(tensorcfr.__file__).resolve().parent
CORE = SRC / "core"
FORBIDDEN = ("tensorcfr.games", "tensorcfr.cli", "tensorcfr.play", "tensorcfr.bench",
             "tensorcfr.abstraction", "pyspiel", "open_spiel")

_BASE = ("errors", "utils")
_GAMES = ("games.openspiel", "games.pasur", "games.numeral211")
#: room -> the rooms its modules may import (besides itself and the root ``tensorcfr``,
#: which holds only ``__version__``).  A room is a first-level module or package of
#: ``tensorcfr``, or one game package under ``tensorcfr/games``.
LAYERS: dict[str, tuple[str, ...]] = {
    "errors": (),
    "utils": ("errors",),
    "core": _BASE,
    "abstraction": (*_BASE, "core"),
    "games": (),
    "games.openspiel": (*_BASE, "core"),
    "games.pasur": (*_BASE, "core", "abstraction", "games.openspiel"),
    "games.numeral211": (*_BASE, "core", "abstraction", "games.openspiel"),
    "bench": (*_BASE, "core", "abstraction", "games", *_GAMES),
    "play": (*_BASE, "core", "abstraction", "games", *_GAMES),
    # (the registry of every reader: bench --render's results file among them)
    "file_readers": (*_BASE, "core", "abstraction", "games", *_GAMES, "bench"),
    "cli": (*_BASE, "core", "abstraction", "games", *_GAMES, "bench", "play", "file_readers"),
}
#: staged game package -> its stages, earliest first (a stage is a subpackage or a module
#: directly in the package).  The data flow: rules -> solving -> playing -> learning -> the
#: agents and the runs built on them.
STAGES: dict[str, tuple[str, ...]] = {
    "games.pasur": ("vocab", "engine", "solving", "playing", "learning", "agents", "batch",
                    "selfplay_run", "tournament", "tournament_price", "tournament_merge",
                    "exploitability"),
    "games.numeral211": ("game", "abstraction", "solving", "runs"),
}


def _module_name(path: Path) -> str:
    """``tensorcfr.a.b`` for ``SRC/a/b.py`` (a package's ``__init__.py`` is the package)."""
    parts = ("tensorcfr",) + path.relative_to(SRC).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_module_name(path): path for path in sorted(SRC.rglob("*.py"))}


def _imports(path: Path, package: str = "tensorcfr.core") -> list[tuple[int, str]]:
    """(line, absolute module name) of every import statement in ``path``, a module of
    ``package``; ``from m import x`` gives both ``m`` and ``m.x`` (``x`` may be a module)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # relative: resolve against the module's package
                base = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                module = f"{base}.{node.module}" if node.module else base
            else:
                module = node.module or ""
            found.append((node.lineno, module))
            found += [(node.lineno, f"{module}.{alias.name}") for alias in node.names]
    return found


def _package_imports(name: str) -> list[tuple[int, str]]:
    """(line, module of this package) of every ``tensorcfr`` import of module ``name``: an
    imported name resolves to the longest module it starts with (``m.x`` -> ``m`` when ``x``
    is a function)."""
    path = MODULES[name]
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = []
    for line, imported in _imports(path, package):
        parts = imported.split(".")
        for k in range(len(parts), 0, -1):
            if ".".join(parts[:k]) in MODULES:
                found.append((line, ".".join(parts[:k])))
                break
    return sorted(set(found))


def _room(name: str) -> str:
    """The room of module ``name``: ``core``, ``cli``, ``games.pasur``, ... (``tensorcfr``
    for the root package)."""
    parts = name.split(".")[1:]
    if not parts:
        return "tensorcfr"
    return ".".join(parts[:2]) if parts[0] == "games" and len(parts) > 1 else parts[0]


def _stage(package: str, name: str) -> int:
    """Index of module ``name``'s stage in ``STAGES[package]``; the package's own
    ``__init__`` sits at the latest stage it imports (-1 when it imports none)."""
    rest = name.removeprefix(f"tensorcfr.{package}").lstrip(".")
    if rest:
        return STAGES[package].index(rest.split(".")[0])
    inner = [_stage(package, other) for _, other in _package_imports(name)
             if other.startswith(f"tensorcfr.{package}.")]
    return max(inner, default=-1)


def test_every_module_has_a_room_and_every_staged_module_a_stage() -> None:
    assert len(MODULES) > 100
    rooms = {_room(name) for name in MODULES} - {"tensorcfr"}
    assert sorted(rooms - set(LAYERS)) == [], "a new room: say in LAYERS what it may import"
    unstaged = [name for name in MODULES for package in STAGES
                if name.startswith(f"tensorcfr.{package}.")
                and name.removeprefix(f"tensorcfr.{package}.").split(".")[0]
                not in STAGES[package]]
    assert unstaged == [], "a module outside the stages: add its stage to STAGES"


def test_the_root_package_imports_no_room() -> None:
    assert _package_imports("tensorcfr") == []


@pytest.mark.parametrize("room", sorted(LAYERS))
def test_a_room_imports_only_the_rooms_below_it(room: str) -> None:
    allowed = {room, "tensorcfr", *LAYERS[room]}
    offending = [f"{name}:{line}: imports {other}" for name in MODULES if _room(name) == room
                 for line, other in _package_imports(name) if _room(other) not in allowed]
    assert offending == [], f"{room} may import only {sorted(allowed)}"


@pytest.mark.parametrize("package", sorted(STAGES))
def test_a_stage_imports_only_its_own_stage_or_earlier_ones(package: str) -> None:
    stages = STAGES[package]
    members = [name for name in MODULES if name.startswith(f"tensorcfr.{package}.")]
    assert {name.removeprefix(f"tensorcfr.{package}.").split(".")[0]
            for name in members} == set(stages), "every stage named holds a module"
    offending = [f"{name}:{line}: {stages[_stage(package, name)]} imports "
                 f"{stages[_stage(package, other)]} ({other})"
                 for name in members for line, other in _package_imports(name)
                 if other.startswith(f"tensorcfr.{package}")
                 and _stage(package, other) > _stage(package, name)]
    assert offending == []


def test_the_layer_check_sees_imports_inside_functions_and_relative_ones(tmp_path) -> None:
    module = tmp_path / "mod.py"
    module.write_text("def f():\n    from ..playing import agent\n"
                      "    import tensorcfr.cli.main\n")
    assert _imports(module, "tensorcfr.games.pasur.engine") == [
        (2, "tensorcfr.games.pasur.playing"), (2, "tensorcfr.games.pasur.playing.agent"),
        (3, "tensorcfr.cli.main")]


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
    from tensorcfr.core.solver import TensorCFRSolver
    from tensorcfr.errors import TensorCFRError

    with pytest.raises(TensorCFRError, match="tensorcfr.games.openspiel"):
        TensorCFRSolver("kuhn_poker")


def test_openspiel_solvers_are_the_core_solvers_on_the_flattened_tree() -> None:
    from tensorcfr.core.solver import TensorCFRSolver as CoreSolver
    from tensorcfr.games.openspiel import CFRPlusSolver, flatten_game

    ours = CFRPlusSolver("kuhn_poker")
    core = CoreSolver(flatten_game("kuhn_poker"), algo="cfr+")
    assert isinstance(ours, CoreSolver)
    ours.iterate(20)
    core.iterate(20)
    assert torch.equal(ours.average_policy(), core.average_policy())
    tabular = ours.average_policy_tabular()
    assert tabular.action_probability_array.shape[0] == ours.tree.num_infosets
