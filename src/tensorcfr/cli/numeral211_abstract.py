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
    feature: str = typer.Option("ehs", "--feature", help="EHS: the clustered feature, ehs "
                                "(equity) or ehs2 (E[HS^2] over the remaining cards)."),
    hist_turn: Optional[int] = typer.Option(None, "--hist-turn", help="PaEmd: turn equity "
                                            "clusters the flop histograms are taken over "
                                            "(default: --turn)."),
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
    feature = feature.strip().lower()
    if feature not in ("ehs", "ehs2"):
        raise TensorCFRError(f"unknown --feature {feature!r}: choose ehs or ehs2")
    if feature != "ehs" and name != "ehs":
        raise TensorCFRError("--feature applies to --method ehs only")
    if hist_turn is not None and name != "paemd":
        raise TensorCFRError("--hist-turn applies to --method paemd only")
    if max_iter < 1:
        raise TensorCFRError(f"--max-iter must be >= 1, got {max_iter}")
    parsed = parse_weights(weights)
    from tensorcfr.utils.checks import MAX_SEED, check_int_range
    from tensorcfr.utils.io import check_output_file

    check_int_range(seed, "--seed", 0, MAX_SEED)
    check_int_range(max_iter, "--max-iter", 1, 1_000_000)
    target = os.path.abspath(check_output_file(out, "--out"))
    config = game_config(ranks, suits)
    with _status(f"building the {name} abstraction of {config.describe()}", as_json) as status:
        def progress(text: str) -> None:
            if status is not None:
                status.update(f"{name}: {text}")

        bmap = build_abstraction(config, name, flop, turn, seed=seed, ehs_bins=bins,
                                 weights=parsed, max_iter=max_iter, ehs_feature=feature,
                                 hist_turn=hist_turn, progress=progress)
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
                               "earlier rounds; ehs: equities only; hist: the equity "
                               "histogram over the remaining cards."),
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
    import math

    from tensorcfr.utils.checks import MAX_SEED, check_finite_result, check_int_range
    from tensorcfr.utils.io import check_output_file

    check_int_range(seed, "--seed", 0, MAX_SEED)
    check_int_range(epochs, "--epochs", 1, 1_000_000)
    check_int_range(hidden, "--hidden", 1, 65_536)
    check_int_range(batch, "--batch", 1, 2**24)
    if not (lr > 0 and math.isfinite(lr)):
        raise TensorCFRError(f"--lr must be positive and finite, got {lr}")
    if not math.isfinite(balance):
        raise TensorCFRError(f"--balance must be finite, got {balance}")
    target_path = os.path.abspath(check_output_file(out, "--out"))
    config = game_config(ranks, suits)
    with _status("training HandEbdNet", as_json) as status:
        def progress(r: int, epoch: int, loss: float) -> None:
            if status is not None:
                status.update(f"HandEbdNet {ROUND_NAMES[r]}: epoch {epoch}/{epochs}, "
                              f"loss {loss:.4g}")

        emb = train_embedding(config, flop, turn, target=target, hidden=hidden, epochs=epochs,
                              batch=batch, lr=lr, seed=seed, balance=balance,
                              progress=progress)
        for r, phi in emb.phi.items():
            check_finite_result(phi, f"Phi of round {r} (HandEbdNet training)")
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
                   dtype: Any, device: Any, threads: int, json_out: bool,
                   cfr_br: bool = False, save: Optional[str] = None,
                   resume: Optional[str] = None,
                   checkpoint_seconds: float = 600.0,
                   sampling: Any = None) -> dict[str, Any]:
    """Solve an abstraction (bucket map) or run Embedding CFR (Phi file) on its game and
    measure the average strategy in the full game; returns the JSON summary (printed by
    ``numeral211 solve``).  ``dtype``/``device``: resolved torch objects; ``requested``: the
    game variant the user named on the command line (None: the file's), which must share the
    file's deck (ranks, suits; the betting may differ); ``max_memory``: the memory limit
    (``--max-memory``; None: what is free now); ``cfr_br``: the abstraction's floor by
    CFR-BR instead of CFR on the abstraction; ``save`` / ``resume``: checkpoint files
    (:mod:`tensorcfr.games.numeral211.abstract_checkpoint`, written every
    ``checkpoint_seconds`` and at the end; a resumed run continues bitwise)."""
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
    resume_meta: Optional[dict[str, Any]] = None
    if resume is not None:
        from tensorcfr.games.numeral211.abstract_checkpoint import read_abstract_checkpoint_meta
        from tensorcfr.games.numeral211.config import GameConfigError

        resume_meta = read_abstract_checkpoint_meta(resume)
        if requested is None:  # the variant the checkpoint solved (its betting may differ)
            try:
                requested = GameConfig.from_dict(resume_meta.get("game"))
            except GameConfigError as exc:
                raise TensorCFRError(f"checkpoint {resume!r}: bad game ({exc})") from None
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
    need = int(estimate_solver_bytes(game, dtype, sampling) * 1.15)
    limit = parse_memory(max_memory)
    if need > limit:
        raise MemoryLimitError(f"abstract solving of {config.describe()} needs about "
                               f"{format_bytes(need)} but {format_bytes(limit)} are allowed; "
                               "free memory, raise --max-memory or use a smaller variant")
    if sampling is not None and cfr_br:
        raise TensorCFRError("--cfr-br runs exact full sweeps; leave out --sample-boards")
    solver = abstract_solver(game, embeddings, algo=name,
                             averaging="reach" if cfr_br else averaging, sampling=sampling)
    from tensorcfr.games.numeral211.abstract_checkpoint import (embedding_fingerprint,
                                                                load_abstract_checkpoint,
                                                                save_abstract_checkpoint)

    fingerprint = embedding_fingerprint(embeddings)
    runner: Any = None
    if cfr_br:
        from tensorcfr.abstraction.cfr_br import CFRBR

        runner = CFRBR(solver)
    curve: list[dict[str, Any]] = []
    resumed_from: Optional[int] = None
    mode = sampling.to_dict() if sampling is not None else {"mode": "exact full sweeps"}
    if resume is not None:
        meta = load_abstract_checkpoint(resume, solver, config, fingerprint=fingerprint,
                                        cfr_br=runner)
        made = meta.get("sampling") or {"mode": "exact full sweeps"}
        if made != mode:
            raise TensorCFRError(f"checkpoint {resume!r} was made with {made}; resume with the "
                                 "same --sample-boards and --seed (or none)")
        curve = list(meta.get("curve") or [])
        resumed_from = solver.iteration
        err_console.print(f"resumed from {resume} at iteration {solver.iteration:,}",
                          highlight=False, soft_wrap=True)
    last_save = [time.perf_counter()]
    file_meta = {"method": method, "source": source,
                 "phi_top": top_k if embedding is not None else None, "sampling": mode}

    from tensorcfr.utils.interrupts import deferred_stop, interrupted

    stop_guard = deferred_stop()
    stop = stop_guard.__enter__()

    def after_iteration(points: list[dict[str, Any]]) -> None:
        if stop.requested:  # between two iterations: the state is whole
            if save is None:
                raise interrupted(stop, f"at iteration {solver.iteration:,}; nothing was "
                                  "saved (give --save FILE to keep the work of a run)")
            checkpoint(points, force=True)
            raise interrupted(stop, f"checkpoint {save} written at iteration "
                              f"{solver.iteration:,}; continue with --resume {save}")
        checkpoint(points)

    def checkpoint(points: list[dict[str, Any]], force: bool = False) -> None:
        if save is None:
            return
        if force or time.perf_counter() - last_save[0] >= checkpoint_seconds:
            save_abstract_checkpoint(save, solver, config, fingerprint=fingerprint,
                                     cfr_br=runner, curve=points, **file_meta)
            last_save[0] = time.perf_counter()

    label = f"{method} {'CFR-BR ' if cfr_br else ''}{name}"
    started = time.perf_counter()
    start_iteration = solver.iteration
    every = eval_every if eval_every else iterations
    floor: Optional[dict[str, Any]] = None

    def run(on_progress: Any) -> list[dict[str, Any]]:
        nonlocal floor
        if cfr_br:
            from tensorcfr.games.numeral211.floor import cfr_br_floor

            floor = cfr_br_floor(game, None, iterations, eval_every=every, cfr_br=runner,
                                 curve=curve, on_progress=on_progress,
                                 on_iteration=after_iteration)
            return floor["curve"]
        return run_abstract(game, solver, iterations, eval_every=every,
                            on_progress=on_progress, curve=curve,
                            on_iteration=after_iteration)

    try:
        curve = _run_with_progress(run, label, iterations, solver.iteration, every, started,
                                   config, cfr_br, json_out)
    finally:
        stop_guard.__exit__(None, None, None)
    seconds = time.perf_counter() - started
    checkpoint(curve, force=True)
    ran = solver.iteration - start_iteration
    common = {"game": config.describe(), "algo": name, "method": method, "source": source,
              "advisors": dict(zip(ROUND_NAMES, advisors)),
              "phi_top": top_k if embedding is not None else None,
              "iterations": solver.iteration, "iterations_run": ran,
              "resumed_from": resumed_from, "checkpoint": save,
              "seconds": seconds, "memory_estimate_bytes": need, "threads": threads,
              "device": str(device), "strategy_file": out,
              "sampling": ({"mode": "exact full sweeps"} if sampling is None
                           else sampling.to_dict())}
    if cfr_br:
        assert floor is not None and runner is not None
        floor.pop("cfr_br", None)
        result = runner.floor([s["average"] for s in floor["seats"]])
        if out is not None:
            n211.save_policy(out, game, runner.floor_policy(result),
                             algo=f"{method}+cfr-br+{name}", iterations=solver.iteration,
                             exploitability=floor["floor"])
        if curve_out is not None:
            from tensorcfr.utils.io import write_json_atomic

            write_json_atomic(curve_out, {"game": config.to_dict(), "algo": name,
                                          "solver": "cfr-br", "method": method,
                                          "source": source, "curve": curve})
        if plot is not None:
            _plot_floor(curve, plot, f"{config.describe()} {method} CFR-BR {name}")
        return {**common, "solver": "cfr-br", "averaging": "reach",
                "floor": floor["floor"], "floor_mbg": floor["floor_mbg"],
                "exploitability": floor["floor"], "exploitability_mbg": floor["floor_mbg"],
                "average": floor["average"], "average_mbg": floor["average_mbg"],
                "seats": floor["seats"], "curve": curve,
                "ms_per_iteration": 1000 * floor["seconds"] / max(1, solver.iteration),
                "units": "floor = (b1(sigma_0) + b0(sigma_1)) / 2 in chips per game, b_i = "
                         "the unabstracted player i's best-response value against the other "
                         "seat's CFR-BR strategy (per seat the less exploitable of its final "
                         "average and its best current strategy); mb/g = thousandths of the "
                         "ante per game"}
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
    return {**common, "solver": "cfr", "averaging": averaging,
            "exploitability": final["exploitability"], "exploitability_mbg": final["mbg"],
            "units": "exploitability = (b0 + b1) / 2 in chips per game, measured in the full "
                     "game; mb/g = thousandths of the ante per game",
            "curve": curve,
            "ms_per_iteration": 1000 * final["seconds"] / max(1, solver.iteration)}


def _plot_floor(curve: list[dict[str, Any]], path: str, title: str) -> None:
    """PNG of a CFR-BR curve: the average and current strategies' (b1 + b0) / 2."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from tensorcfr.utils.io import atomic_path

    fig, ax = plt.subplots(figsize=(6, 4))
    its = [p["iteration"] for p in curve]
    ax.plot(its, [p["average_mbg"] for p in curve], marker="o", ms=3, label="average")
    ax.plot(its, [p["current_mbg"] for p in curve], marker=".", ms=3, label="current")
    ax.set_yscale("log")
    ax.set_xlabel("CFR-BR iteration")
    ax.set_ylabel("(b1(sigma_0) + b0(sigma_1)) / 2, mb/g")
    ax.set_title(title, fontsize=9)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    fig.tight_layout()
    with atomic_path(path) as tmp:
        fig.savefig(tmp, format="png", dpi=120)
    plt.close(fig)


def register(app: typer.Typer) -> None:
    """Add ``abstract`` and ``embed`` to the ``numeral211`` sub-app."""
    app.command("abstract")(abstract_command)
    app.command("embed")(embed_command)


def _run_with_progress(run: Any, label: str, iterations: int, completed: int, every: int,
                       started: float, config: Any, cfr_br: bool, json_out: bool
                       ) -> list[dict[str, Any]]:
    """``run(on_progress)`` with a progress bar on a terminal, else a plain line per
    evaluation or minute on stderr; returns its curve."""
    import time

    from tensorcfr.games.numeral211 import solver as n211

    if not json_out and err_console.is_terminal:
        from rich.progress import (BarColumn, MofNCompleteColumn, Progress, TextColumn,
                                   TimeElapsedColumn, TimeRemainingColumn)

        with Progress(TextColumn(label), BarColumn(), MofNCompleteColumn(),
                      TextColumn("{task.fields[expl]}"), TimeElapsedColumn(),
                      TimeRemainingColumn(), console=err_console, transient=True) as bar:
            task = bar.add_task("solve", total=iterations, completed=completed,
                                expl="")

            def on_progress(t: int, ex: Optional[float]) -> None:
                bar.update(task, completed=t, expl="" if ex is None else
                           f"{'floor' if cfr_br else 'expl'} {n211.to_mbg(ex, config):,.1f} "
                           "mb/g")

            curve = run(on_progress)
    else:  # no terminal (a log file, CI) or --json: a plain line per evaluation or minute
        last_line = [time.perf_counter()]

        def on_progress_line(t: int, ex: Optional[float]) -> None:
            now = time.perf_counter()
            evaluated = t % every == 0 or t == iterations
            if not evaluated and now - last_line[0] < 60.0:
                return
            last_line[0] = now
            text = "" if ex is None or not evaluated else (
                f", {'average floor' if cfr_br else 'exploitability'} "
                f"{n211.to_mbg(ex, config):,.1f} mb/g")
            err_console.print(f"{label}: iteration {t:,}/{iterations:,}{text} "
                              f"({now - started:,.0f} s)", highlight=False, soft_wrap=True)

        curve = run(on_progress_line)
    return curve
