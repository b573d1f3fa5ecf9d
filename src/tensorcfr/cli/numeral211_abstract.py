"""``tensorcfr numeral211 abstract``: build an EHS / PaEmd / KrwEmd bucket map (NPZ file).

Registered on the ``numeral211`` sub-app by :func:`register`.
"""

from __future__ import annotations

import contextlib
import os
from typing import Any, Optional

import typer

from tensorcfr.cli.common import err_console, print_json

ROUND_NAMES = ("preflop", "flop", "turn")


def _status(message: str, quiet: bool) -> Any:
    """A rich spinner on stderr (nothing with --json or when stderr is not a terminal)."""
    if quiet or not err_console.is_terminal:
        return contextlib.nullcontext()
    return err_console.status(message)


def game_config(ranks: Optional[str], suits: Optional[int]) -> Any:
    """The game variant of the --ranks/--suits options (defaults: the paper's game)."""
    from tensorcfr.games.numeral211.config import GameConfig

    kwargs: dict[str, Any] = {}
    if ranks is not None:
        kwargs["ranks"] = ranks
    if suits is not None:
        kwargs["suits"] = suits
    return GameConfig(**kwargs)


def abstract_command(
    method: str = typer.Option(..., "--method", "-m",
                               help="ehs | paemd | krwemd"),
    flop: int = typer.Option(225, "--flop", help="Buckets on the flop (paper: 225)."),
    turn: int = typer.Option(396, "--turn", help="Buckets on the turn (paper: 396)."),
    out: str = typer.Option(..., "--out", "-o", help="Bucket-map file to write (.npz)."),
    seed: int = typer.Option(0, "--seed", help="Clustering seed."),
    bins: bool = typer.Option(False, "--bins",
                              help="EHS: equal-width equity bins instead of k-means."),
    weights: str = typer.Option("16,4,1;4,1", "--weights",
                                help="KrwEmd weights 'turn own,flop,preflop;flop own,preflop' "
                                "(papers: 16,4,1;4,1  7,5,3;5,3  1,1,1;1,1  3,5,7;5,7)."),
    max_iter: int = typer.Option(100, "--max-iter", help="Lloyd iterations of the EMD "
                                 "k-means (paemd, krwemd)."),
    ranks: Optional[str] = typer.Option(None, "--ranks", help="Deck ranks low to high "
                                        "(default 23456789TA)."),
    suits: Optional[int] = typer.Option(None, "--suits", help="Suits (default 4)."),
    threads: int = typer.Option(1, "--threads", help="Torch CPU threads."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object."),
) -> None:
    """Build an abstraction: suit-isomorphic classes of each round -> buckets (preflop
    lossless), saved as an NPZ bucket map for `numeral211 solve --abstraction`."""
    import torch

    from tensorcfr.errors import TensorCFRError
    from tensorcfr.games.numeral211.abstractions import METHODS, build_abstraction, parse_weights

    if threads < 1:
        raise TensorCFRError(f"--threads must be >= 1, got {threads}")
    torch.set_num_threads(threads)
    name = method.strip().lower()
    if name not in METHODS:
        raise TensorCFRError(f"unknown --method {method!r}: choose one of {', '.join(METHODS)}")
    if bins and name != "ehs":
        raise TensorCFRError("--bins applies to --method ehs only")
    if max_iter < 1:
        raise TensorCFRError(f"--max-iter must be >= 1, got {max_iter}")
    parsed = parse_weights(weights)
    target = os.path.abspath(out)
    if os.path.isdir(target):
        raise TensorCFRError(f"--out {out!r} is a folder; give a file name such as "
                             f"{os.path.join(out, name + '.npz')}")
    parent = os.path.dirname(target) or "."
    if os.path.exists(parent) and not os.access(parent, os.W_OK):
        raise TensorCFRError(f"--out {out!r}: folder {parent!r} is not writable")
    config = game_config(ranks, suits)
    with _status(f"building the {name} abstraction of {config.describe()}", as_json) as status:
        def progress(text: str) -> None:
            if status is not None:
                status.update(f"{name}: {text}")

        bmap = build_abstraction(config, name, flop, turn, seed=seed, ehs_bins=bins,
                                 weights=parsed, max_iter=max_iter, progress=progress)
        bmap.save(target)
    result = {
        "method": name,
        "game": config.to_dict(),
        "buckets": dict(zip(ROUND_NAMES, bmap.num_buckets)),
        "classes": dict(zip(ROUND_NAMES, bmap.num_classes)),
        "params": bmap.params,
        "seconds": round(bmap.seconds, 3),
        "threads": threads,
        "out": target,
    }
    if as_json:
        print_json(result)
        return
    err_console.print(
        f"{name}: buckets preflop {bmap.num_buckets[0]}, flop {bmap.num_buckets[1]}, turn "
        f"{bmap.num_buckets[2]} (classes {', '.join(map(str, bmap.num_classes))}) in "
        f"{bmap.seconds:.1f} s -> {target}", highlight=False, soft_wrap=True)


def register(app: typer.Typer) -> None:
    """Add ``abstract`` to the ``numeral211`` sub-app."""
    app.command("abstract")(abstract_command)
