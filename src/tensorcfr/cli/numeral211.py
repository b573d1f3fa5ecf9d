"""``tensorcfr numeral211 ...``: the Numeral211 Hold'em sub-app.

Each command lives in its own module (``numeral211_<name>.py``) with a ``register(app)``
function, which :mod:`.main` (the CLI's registry) calls with :data:`app`: ``info``,
``solve``, ``exploitability`` (:mod:`.numeral211_solve`) and ``abstract``
(:mod:`.numeral211_abstract`).  Add new commands the same way (one ``register`` call in
``main._register``).
"""

from __future__ import annotations

import typer

app = typer.Typer(
    help="Numeral211 Hold'em: the full game, abstractions (EHS, PaEmd, KrwEmd) and "
    "Embedding CFR.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

