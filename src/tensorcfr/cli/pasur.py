"""``tensorcfr pasur ...``: the Pasur commands (deal, replay, solve, exploitability)."""

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


def _register() -> None:
    from tensorcfr.cli import pasur_cfr, pasur_replay, pasur_solve

    app.command("replay")(pasur_replay.replay_command)
    app.command("solve")(pasur_solve.solve_command)
    app.command("exploitability")(pasur_cfr.exploitability_command)
    from tensorcfr.cli import pasur_play

    app.command("serve")(pasur_play.serve_command)
    app.command("play")(pasur_play.play_command)
    from tensorcfr.cli import pasur_selfplay

    app.command("selfplay")(pasur_selfplay.selfplay_command)
    app.command("train")(pasur_selfplay.train_command)
    app.command("evaluate")(pasur_selfplay.evaluate_command)
    from tensorcfr.cli import pasur_batch

    app.command("batch")(pasur_batch.batch_command)
    app.command("analyze")(pasur_batch.analyze_command)
    from tensorcfr.cli import pasur_tournament

    app.command("tournament")(pasur_tournament.tournament_command)
    from tensorcfr.cli import pasur_hidden

    app.command("train-hidden")(pasur_hidden.train_hidden_command)


_register()
