"""``tensorcfr pasur ...``: the Pasur sub-app and its ``deal`` command; the other Pasur
commands (replay, solve, exploitability, serve, play, selfplay, train, evaluate, batch,
analyze, tournament, train-hidden, train-round-value) live in ``pasur_<name>.py`` and are
wired into :data:`app` by :mod:`.main`."""

from __future__ import annotations

import typer

from tensorcfr.cli.common import MAX_SEED, console, print_json

app = typer.Typer(
    help="Pasur: deals and game records, exact and CFR solving of full-information deals, "
    "self-play and policy models, many decks, hidden-hand agents and tournaments, play "
    "against the AI (terminal and web page).",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


@app.command("deal")
def deal_command(
    seed: int = typer.Option(..., "--seed", min=0, max=MAX_SEED,
                             help="Seed of the random deal (same seed, same deal)."),
    json_out: bool = typer.Option(False, "--json", help="Print one JSON object instead of text."),
) -> None:
    """Print a seeded random deal (table rule for Jacks in the pool) in card notation."""
    from tensorcfr.games.pasur.engine.cards import cards_str
    from tensorcfr.games.pasur.engine.rules import describe_deal, random_deal

    deal = random_deal(seed)
    if json_out:
        print_json({"seed": seed, "deal": list(deal), "notation": cards_str(deal)})
        return
    console.print(cards_str(deal), highlight=False, soft_wrap=True)
    for line in describe_deal(deal):
        console.print(f"  {line}", highlight=False)

