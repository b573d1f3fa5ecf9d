"""``tensorcfr numeral211 ...``: the Numeral211 Hold'em sub-app.

Each command lives in its own module (``numeral211_<name>.py``) with a ``register(app)``
function, wired here: ``info``, ``solve``, ``exploitability`` (:mod:`.numeral211_solve`) and
``abstract`` (:mod:`.numeral211_abstract`).  Add new commands the
same way (one import and one ``register`` call below).
"""

from __future__ import annotations

import typer

from tensorcfr.cli import numeral211_abstract, numeral211_solve

app = typer.Typer(
    help="Numeral211 Hold'em: the full game, abstractions (EHS, PaEmd, KrwEmd) and "
    "Embedding CFR.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

numeral211_solve.register(app)
numeral211_abstract.register(app)
