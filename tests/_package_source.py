"""The package's own source, function by function, for the generated tests that hold a rule
over every function (every raw file read guarded, every write atomic): a new module is
covered without a list."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Iterator

import tensorcfr

PACKAGE = Path(tensorcfr.__file__).parent


def package_functions(skip: tuple[str, ...] = ()
                      ) -> Iterator[tuple[str, ast.FunctionDef | ast.AsyncFunctionDef,
                                          list[ast.Call], set[str | None]]]:
    """Every function of the package (nested ones too) but those of the modules in ``skip``
    (paths relative to the package, ``utils/io.py``): ``(module path, the function, the calls
    in it, the names those calls call)``."""
    for path in sorted(PACKAGE.rglob("*.py")):
        where = path.relative_to(PACKAGE).as_posix()
        if where in skip:
            continue
        for function in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            calls = [n for n in ast.walk(function) if isinstance(n, ast.Call)]
            named = {c.func.id if isinstance(c.func, ast.Name) else getattr(c.func, "attr", None)
                     for c in calls}
            yield where, function, calls, named
