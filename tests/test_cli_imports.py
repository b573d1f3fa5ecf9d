"""The CLI's commands do not lean on each other: no module under ``tensorcfr/cli`` imports
another CLI module except ``cli/common.py`` (the shared option helpers and consoles), so what
a command runs lives in the library, where every command (and a Python user) can call it.

The one exception is ``cli/main.py``, the registry: it imports every command module to wire
its commands into the ``tensorcfr`` app and its sub-apps (``pasur``, ``numeral211``). Every
module of the package is checked (found on disk, so a new module is covered), every import
statement counts (also inside functions), and relative imports are resolved.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import tensorcfr.cli

CLI = Path(tensorcfr.cli.__file__).resolve().parent
PACKAGE = "tensorcfr.cli"
REGISTRY = f"{PACKAGE}.main"
ALLOWED = {PACKAGE, f"{PACKAGE}.common"}


def _module_name(path: Path) -> str:
    parts = path.relative_to(CLI).with_suffix("").parts
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join((PACKAGE, *parts))


def _cli_imports(source: str, module: str, is_package: bool = False) -> list[tuple[int, str]]:
    """(line, module) of every CLI module that ``source`` (the text of ``module``) imports:
    ``import tensorcfr.cli.x``, ``from tensorcfr.cli.x import y``, ``from tensorcfr.cli
    import x`` (when ``x`` is a module of the package) and their relative forms."""
    package = module if is_package else module.rpartition(".")[0]
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                target = f"{base}.{node.module}" if node.module else base
            else:
                target = node.module or ""
            names = [target]
            names += [f"{target}.{alias.name}" for alias in node.names
                      if _is_cli_module(f"{target}.{alias.name}")]
        else:
            continue
        found += [(node.lineno, name) for name in names
                  if name == PACKAGE or name.startswith(PACKAGE + ".")]
    return found


def _is_cli_module(name: str) -> bool:
    if not name.startswith(PACKAGE + "."):
        return False
    relative = Path(*name[len(PACKAGE) + 1:].split("."))
    return (CLI / relative).with_suffix(".py").is_file() or (CLI / relative).is_dir()


def _offending(source: str, module: str, is_package: bool = False) -> list[str]:
    return [f"line {line}: {name}" for line, name in _cli_imports(source, module, is_package)
            if name not in ALLOWED and name != module]


MODULES = sorted(CLI.rglob("*.py"))


def test_every_cli_module_is_found() -> None:
    names = {_module_name(path) for path in MODULES}
    assert {REGISTRY, f"{PACKAGE}.common", f"{PACKAGE}.pasur", f"{PACKAGE}.generic",
            f"{PACKAGE}.pasur_solve"} <= names
    assert len(names) >= 15


@pytest.mark.parametrize("path", [p for p in MODULES if _module_name(p) != REGISTRY],
                         ids=lambda p: str(p.relative_to(CLI)))
def test_a_cli_module_imports_no_other_cli_module_but_common(path: Path) -> None:
    module = _module_name(path)
    assert _offending(path.read_text(encoding="utf-8"), module,
                      path.name == "__init__.py") == [], (
        f"{module} imports another CLI module: move the shared piece into the library (or "
        "into cli/common.py if it is option parsing or printing), and wire commands in "
        "cli/main.py")


def test_the_registry_wires_every_command_module() -> None:
    """``main.py`` is the only module allowed other CLI imports, and it uses them: every
    command module is imported there (a module nobody imports would be a dead command)."""
    imported = {name for _, name in _cli_imports((CLI / "main.py").read_text(encoding="utf-8"),
                                                 REGISTRY)}
    modules = {_module_name(p) for p in MODULES} - ALLOWED - {REGISTRY}
    assert modules - imported == set()


@pytest.mark.parametrize("line", [
    "from tensorcfr.cli.pasur_solve import choose_deal",
    "from tensorcfr.cli import pasur_cfr",
    "from tensorcfr.cli import common, pasur_batch",
    "import tensorcfr.cli.bench",
    "from . import generic",
    "from .pasur_play import serve_command",
    "def f():\n    from tensorcfr.cli.generic_exploitability import exploitability_command",
])
def test_the_check_catches_each_form_of_import(line: str) -> None:
    assert _offending(line, f"{PACKAGE}.pasur_selfplay") != []


@pytest.mark.parametrize("line", [
    "from tensorcfr.cli.common import console, print_json",
    "from tensorcfr.cli import common",
    "from .common import fail",
    "import tensorcfr.cli",
    "from tensorcfr.games.pasur.engine.deal_input import choose_deal",
    "import typer",
])
def test_the_check_allows_common_and_the_library(line: str) -> None:
    assert _offending(line, f"{PACKAGE}.pasur_selfplay") == []
