"""``tensorcfr numeral211 abstract | embed`` and the abstract side of ``solve``.

* ``abstract``: build an EHS / PaEmd / KrwEmd bucket map (NPZ file);
* ``embed``: train HandEbdNet and save Embedding CFR's Phi (NPZ file);
* :func:`solve_abstract`: what ``numeral211 solve --abstraction FILE`` / ``--embedding
  FILE`` runs (bucketed CFR or Embedding CFR, exploitability measured in the full game).

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


def embed_command(
    flop: int = typer.Option(225, "--flop", help="Advisors (rows of Phi) on the flop."),
    turn: int = typer.Option(396, "--turn", help="Advisors on the turn."),
    out: str = typer.Option(..., "--out", "-o", help="Embedding file to write (.npz)."),
    target: str = typer.Option("wtl", "--target", help="wtl: (win, tie, lose) at this and "
                               "earlier rounds; ehs: equities only."),
    hidden: int = typer.Option(256, "--hidden", help="Hidden units of the encoder."),
    epochs: int = typer.Option(60, "--epochs", help="Training epochs per round."),
    batch: int = typer.Option(512, "--batch", help="Mini-batch size."),
    lr: float = typer.Option(3e-3, "--lr", help="Adam learning rate (cosine decay)."),
    seed: int = typer.Option(0, "--seed", help="Training seed."),
    balance: float = typer.Option(0.0, "--balance", help="Weight of the advisor-usage "
                                  "entropy term (0: plain MSE, the paper's loss)."),
    ranks: Optional[str] = typer.Option(None, "--ranks", help="Deck ranks low to high "
                                        "(default 23456789TA)."),
    suits: Optional[int] = typer.Option(None, "--suits", help="Suits (default 4)."),
    threads: int = typer.Option(1, "--threads", help="Torch CPU threads."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object."),
) -> None:
    """Train HandEbdNet on every flop and turn class and save Phi (the Embedding CFR
    embedding) for `numeral211 solve --embedding`."""
    import torch

    from tensorcfr.errors import TensorCFRError
    from tensorcfr.games.numeral211.embedding_net import save_embedding, train_embedding

    if threads < 1:
        raise TensorCFRError(f"--threads must be >= 1, got {threads}")
    torch.set_num_threads(threads)
    target_path = os.path.abspath(out)
    if os.path.isdir(target_path):
        raise TensorCFRError(f"--out {out!r} is a folder; give a file name (.npz)")
    config = game_config(ranks, suits)
    with _status("training HandEbdNet", as_json) as status:
        def progress(r: int, epoch: int, loss: float) -> None:
            if status is not None:
                status.update(f"HandEbdNet {ROUND_NAMES[r]}: epoch {epoch}/{epochs}, "
                              f"loss {loss:.4g}")

        emb = train_embedding(config, flop, turn, target=target, hidden=hidden, epochs=epochs,
                              batch=batch, lr=lr, seed=seed, balance=balance,
                              progress=progress)
        save_embedding(target_path, emb)
    result = {"game": config.to_dict(), "advisors": {"flop": flop, "turn": turn},
              "classes": dict(zip(ROUND_NAMES, emb.meta["classes"])), "target": target,
              "loss": emb.meta["loss"], "advisors_used": emb.meta["advisors_used"],
              "balance": balance, "seconds": round(emb.meta["seconds"], 3),
              "threads": threads, "out": target_path}
    if as_json:
        print_json(result)
        return
    err_console.print(f"HandEbdNet ({target}): flop {flop} x {emb.meta['classes'][1]}, turn "
                      f"{turn} x {emb.meta['classes'][2]}, loss {emb.meta['loss']}, "
                      f"{emb.meta['seconds']:.1f} s -> {target_path}", highlight=False,
                      soft_wrap=True)


def solve_abstract(*, abstraction: Optional[str], embedding: Optional[str], top_k: int,
                   averaging: str, requested: Any = None, max_memory: Optional[str] = None,
                   algo: str, iterations: int, eval_every: int,
                   out: Optional[str], plot: Optional[str], curve_out: Optional[str],
                   dtype: Any, device: Any, threads: int, json_out: bool) -> dict[str, Any]:
    """Solve an abstraction (bucket map) or run Embedding CFR (Phi file) on its game and
    measure the average strategy in the full game; returns the JSON summary (printed by
    ``numeral211 solve``).  ``dtype``/``device``: resolved torch objects; ``requested``: the
    game variant the user named on the command line (None: the file's), which must share the
    file's deck (ranks, suits; the betting may differ); ``max_memory``: the memory limit
    (``--max-memory``; None: what is free now)."""
    import time

    import numpy as np

    from tensorcfr.abstraction.abstract_cfr import Embedding
    from tensorcfr.abstraction.bucket_map import load_bucket_map
    from tensorcfr.errors import TensorCFRError
    from tensorcfr.games.numeral211 import solver as n211
    from tensorcfr.games.numeral211.abstract_solve import (abstract_solver, bucket_embeddings,
                                                           run_abstract)
    from tensorcfr.games.numeral211.config import GameConfig
    from tensorcfr.games.numeral211.isomorphism import isomorphism

    if (abstraction is None) == (embedding is None):
        raise TensorCFRError("give either --abstraction or --embedding, not both")
    name = algo.strip().lower()
    if name not in ("cfr", "cfr+"):
        raise TensorCFRError(f"--algo {algo!r}: abstract solving runs cfr (the papers') or cfr+")
    if iterations < 1 or eval_every < 0:
        raise TensorCFRError("--iterations must be >= 1 and --eval-every >= 0")
    if abstraction is not None:
        bmap = load_bucket_map(abstraction)
        if bmap.game != "numeral211":
            raise TensorCFRError(f"{abstraction!r} is a bucket map of {bmap.game}, not of "
                                 "numeral211")
        config = requested if requested is not None else GameConfig.from_dict(bmap.variant)
        game = n211.build_game(config, dtype=dtype, device=device)
        embeddings = bucket_embeddings(game, bmap)
        method, source = bmap.method, abstraction
        advisors = bmap.num_buckets
    else:
        from tensorcfr.games.numeral211.embedding_net import load_embedding

        emb_file = load_embedding(embedding)  # type: ignore[arg-type]
        config = emb_file.config
        if requested is not None:
            from tensorcfr.games.numeral211.abstractions import same_deck

            if not same_deck(config, requested):
                from tensorcfr.abstraction.bucket_map import BucketMapMismatchError

                raise BucketMapMismatchError(
                    f"the embedding was trained for ranks {config.ranks!r} x {config.suits} "
                    f"suits, not for ranks {requested.ranks!r} x {requested.suits} suits; "
                    "train one with `numeral211 embed` for this deck")
            config = requested
        game = n211.build_game(config, dtype=dtype, device=device)
        counts = isomorphism(config).isomorphic_classes()
        if top_k < 1:
            raise TensorCFRError(f"--phi-top must be >= 1, got {top_k}")
        embeddings = [Embedding.from_labels(np.arange(counts[0]))]
        embeddings += [Embedding.from_matrix(emb_file.phi[r], top_k=top_k) for r in (1, 2)]
        method, source = "embedding", embedding
        advisors = [counts[0]] + [e.num_advisors for e in embeddings[1:]]
    from tensorcfr.core.public_tree import estimate_solver_bytes
    from tensorcfr.errors import MemoryLimitError
    from tensorcfr.utils.resources import format_bytes, parse_memory

    # three cell-sized arrays per round (instantaneous regrets, weighted strategies, the cell
    # strategy), as the full solver's regrets / average / strategy, plus the class arrays
    need = int(estimate_solver_bytes(game, dtype) * 1.15)
    limit = parse_memory(max_memory)
    if need > limit:
        raise MemoryLimitError(f"abstract solving of {config.describe()} needs about "
                               f"{format_bytes(need)} but {format_bytes(limit)} are allowed; "
                               "free memory, raise --max-memory or use a smaller variant")
    solver = abstract_solver(game, embeddings, algo=name, averaging=averaging)
    started = time.perf_counter()
    every = eval_every if eval_every else iterations
    if not json_out and err_console.is_terminal:
        from rich.progress import (BarColumn, MofNCompleteColumn, Progress, TextColumn,
                                   TimeElapsedColumn, TimeRemainingColumn)

        with Progress(TextColumn(f"{method} {name}"), BarColumn(), MofNCompleteColumn(),
                      TextColumn("{task.fields[expl]}"), TimeElapsedColumn(),
                      TimeRemainingColumn(), console=err_console, transient=True) as bar:
            task = bar.add_task("solve", total=iterations, expl="")

            def on_progress(t: int, ex: Optional[float]) -> None:
                bar.update(task, completed=t, expl="" if ex is None else
                           f"expl {n211.to_mbg(ex, config):,.1f} mb/g")

            curve = run_abstract(game, solver, iterations, eval_every=every,
                                 on_progress=on_progress)
    else:
        curve = run_abstract(game, solver, iterations, eval_every=every)
    seconds = time.perf_counter() - started
    final = curve[-1]
    if out is not None:
        n211.save_policy(out, game, solver.average_policy(), algo=f"{method}+{name}",
                         iterations=solver.iteration, exploitability=final["exploitability"])
    if curve_out is not None:
        from tensorcfr.utils.io import write_json_atomic

        write_json_atomic(curve_out, {"game": config.to_dict(), "algo": name,
                                      "method": method, "source": source, "curve": curve})
    if plot is not None:
        from tensorcfr.cli.numeral211_solve import _plot_curve

        _plot_curve(curve, plot, f"{config.describe()} {method} {name}")
    return {"game": config.describe(), "algo": name, "method": method, "source": source,
            "advisors": dict(zip(ROUND_NAMES, advisors)), "averaging": averaging,
            "phi_top": top_k if embedding is not None else None,
            "iterations": solver.iteration, "exploitability": final["exploitability"],
            "exploitability_mbg": final["mbg"],
            "units": "exploitability = (b0 + b1) / 2 in chips per game, measured in the full "
                     "game; mb/g = thousandths of the ante per game",
            "curve": curve, "seconds": seconds,
            "ms_per_iteration": 1000 * final["seconds"] / max(1, solver.iteration),
            "memory_estimate_bytes": need, "threads": threads, "device": str(device),
            "strategy_file": out}


def register(app: typer.Typer) -> None:
    """Add ``abstract`` and ``embed`` to the ``numeral211`` sub-app."""
    app.command("abstract")(abstract_command)
    app.command("embed")(embed_command)
