"""``tensorcfr numeral211 abstract | embed``: build an EHS / PaEmd / KrwEmd bucket map, or
train HandEbdNet and save Embedding CFR's Phi (NPZ files for ``numeral211 solve
--abstraction`` / ``--embedding``).

The commands only parse options into the library's settings
(:class:`~tensorcfr.games.numeral211.runs.run_abstraction.AbstractionSettings`,
:class:`~tensorcfr.games.numeral211.runs.run_embed.EmbedSettings`), show a spinner and print;
the runs are :func:`~tensorcfr.games.numeral211.runs.run_abstraction.build_abstraction_file` and
:func:`~tensorcfr.games.numeral211.runs.run_embed.train_embedding_file`.  Registered on the
``numeral211`` sub-app by :func:`register`.
"""

from __future__ import annotations

import contextlib
from typing import Any, Optional

import typer

from tensorcfr.cli.common import MAX_SEED, MAX_THREADS, err_console, path_check, print_json
from tensorcfr.games.numeral211.runs.run_common import ROUND_NAMES


def register(app: typer.Typer) -> None:
    """Add ``abstract`` and ``embed`` to the ``numeral211`` sub-app."""
    app.command("abstract")(abstract_command)
    app.command("embed")(embed_command)


def _status(message: str, quiet: bool) -> Any:
    """A rich spinner on stderr (nothing with --json or when stderr is not a terminal)."""
    if quiet or not err_console.is_terminal:
        return contextlib.nullcontext()
    return err_console.status(message)


def game_config(ranks: Optional[str], suits: Optional[int]) -> Any:
    """The game variant of the --ranks/--suits options (defaults: the paper's game)."""
    from tensorcfr.games.numeral211.game.config import GameConfig

    kwargs: dict[str, Any] = {}
    if ranks is not None:
        kwargs["ranks"] = ranks
    if suits is not None:
        kwargs["suits"] = suits
    return GameConfig(**kwargs)


def abstract_command(
    method: str = typer.Option(..., "--method", "-m",
                               help="ehs | paemd | krwemd"),
    flop: int = typer.Option(225, "--flop", min=1, max=10**6,
                             help="Buckets on the flop (paper: 225)."),
    turn: int = typer.Option(396, "--turn", min=1, max=10**6,
                             help="Buckets on the turn (paper: 396)."),
    out: str = typer.Option(..., "--out", "-o", callback=path_check("output-file"),
                            help="Bucket-map file to write (.npz)."),
    seed: int = typer.Option(0, "--seed", min=0, max=MAX_SEED, help="Clustering seed."),
    bins: bool = typer.Option(False, "--bins",
                              help="EHS: equal-width equity bins instead of k-means."),
    feature: str = typer.Option("ehs", "--feature", help="EHS: the clustered feature, ehs "
                                "(equity) or ehs2 (E[HS^2] over the remaining cards)."),
    hist_turn: Optional[int] = typer.Option(None, "--hist-turn", min=1, max=10**6,
                                            help="PaEmd: turn equity "
                                            "clusters the flop histograms are taken over "
                                            "(default: --turn)."),
    weights: str = typer.Option("16,4,1;4,1", "--weights",
                                help="KrwEmd weights 'turn own,flop,preflop;flop own,preflop' "
                                "(papers: 16,4,1;4,1  7,5,3;5,3  1,1,1;1,1  3,5,7;5,7)."),
    max_iter: int = typer.Option(100, "--max-iter", min=1, max=10**6,
                                 help="Lloyd iterations of the EMD "
                                 "k-means (paemd, krwemd)."),
    ranks: Optional[str] = typer.Option(None, "--ranks", help="Deck ranks low to high "
                                        "(default 23456789TA)."),
    suits: Optional[int] = typer.Option(None, "--suits", min=1, max=4, help="Suits (default 4)."),
    threads: int = typer.Option(1, "--threads", min=1, max=MAX_THREADS, help="Torch CPU threads."),
    soft_temperature: Optional[float] = typer.Option(
        None, "--soft-temperature", min=0, max=1e6,
        help="Also write the soft-clustering control: Phi = "
        "softmax of each class's distances to the cluster centres over this temperature "
        "(unit: the mean distance to the own centre; 0 = the nearest centre), an embedding "
        "file for `numeral211 solve --embedding` (needs --soft-out)."),
    soft_out: Optional[str] = typer.Option(None, "--soft-out", callback=path_check("output-file"),
                                           help="Embedding file of "
                                           "--soft-temperature to write (.npz)."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object."),
) -> None:
    """Build an abstraction: suit-isomorphic classes of each round -> buckets (preflop
    lossless), saved as an NPZ bucket map for `numeral211 solve --abstraction`."""
    from tensorcfr.games.numeral211.runs.run_abstraction import (AbstractionSettings,
                                                                 build_abstraction_file)

    settings = AbstractionSettings(method=method, out=out, flop=flop, turn=turn, seed=seed,
                                   bins=bins, feature=feature, hist_turn=hist_turn,
                                   weights=weights, max_iter=max_iter,
                                   game=game_config(ranks, suits), threads=threads,
                                   soft_temperature=soft_temperature, soft_out=soft_out)
    name = settings.method
    with _status(f"building the {name} abstraction of {settings.game.describe()}",
                 as_json) as status:
        def progress(text: str) -> None:
            if status is not None:
                status.update(f"{name}: {text}")

        built = build_abstraction_file(settings, progress)
    if as_json:
        print_json(built.to_dict())
        return
    bmap = built.bucket_map
    err_console.print(
        f"{name}: buckets preflop {bmap.num_buckets[0]}, flop {bmap.num_buckets[1]}, turn "
        f"{bmap.num_buckets[2]} (classes {', '.join(map(str, bmap.num_classes))}) in "
        f"{bmap.seconds:.1f} s -> {built.out}", highlight=False, soft_wrap=True)
    if built.soft is not None:
        err_console.print(
            f"soft clustering at temperature {built.soft['temperature']:g}: mean largest "
            "entry of Phi's columns "
            + ", ".join(f"{v:.2f}" for v in built.soft["top1_mean"].values())
            + f" (flop, turn) -> {built.soft['out']}", highlight=False, soft_wrap=True)


def embed_command(
    flop: int = typer.Option(225, "--flop", min=1, max=10**6,
                             help="Advisors (rows of Phi) on the flop."),
    turn: int = typer.Option(396, "--turn", min=1, max=10**6, help="Advisors on the turn."),
    out: str = typer.Option(..., "--out", "-o", callback=path_check("output-file"),
                            help="Embedding file to write (.npz)."),
    net: str = typer.Option("mlp", "--net", help="mlp: card-presence MLP; conv: the paper's "
                            "HandEbdNet (suit-plane convolution, 500 hidden)."),
    target: str = typer.Option("wtl", "--target", help="wtl: (win, tie, lose) at this and "
                               "earlier rounds; ehs: equities only; hist: the equity "
                               "histogram over the remaining cards; emd: the teacher "
                               "clustering's features (PaEmd: flop histograms whose weighted "
                               "L1 is the EMD, turn equity)."),
    objective: str = typer.Option("mse", "--objective", help="mse: the head's squared error "
                                  "(the paper's); distortion: the expected distance of the "
                                  "target to the advisors' centres under Phi (soft k-means); "
                                  "distill: KL from the teacher's soft assignment."),
    teacher: Optional[str] = typer.Option(None, "--teacher", callback=path_check("input-file"),
                                          help="Bucket map (.npz of "
                                          "`numeral211 abstract`) for --target emd / "
                                          "--objective distill (default: PaEmd built with "
                                          "--flop/--turn/--seed)."),
    teacher_temperature: float = typer.Option(0.5, "--teacher-temperature", min=1e-6, max=1e6,
                                              help="distill: "
                                              "temperature of the teacher's soft assignment "
                                              "(unit: its mean distance to the own centre)."),
    hidden: Optional[int] = typer.Option(None, "--hidden", min=1, max=65_536,
                                         help="Hidden units (default: "
                                         "256 for mlp, 500 for conv)."),
    epochs: int = typer.Option(400, "--max-epochs", "--epochs", min=1, max=10**6,
                               help="Most training epochs "
                               "per round (early stopping on held-out classes ends sooner)."),
    batch: int = typer.Option(128, "--batch", min=1, max=2**24, help="Mini-batch size (classes)."),
    lr: float = typer.Option(1e-3, "--lr", min=1e-12, max=1000,
                             help="Initial Adam learning rate (halved when "
                             "the held-out loss stops improving)."),
    holdout: float = typer.Option(0.1, "--holdout", min=0, max=0.99,
                                  help="Fraction of the infosets held "
                                  "out for early stopping (seeded)."),
    patience: int = typer.Option(30, "--patience", min=1, max=10**6,
                                 help="Epochs without a held-out "
                                 "improvement before training stops."),
    seed: int = typer.Option(0, "--seed", min=0, max=MAX_SEED, help="Training seed."),
    balance: float = typer.Option(0.0, "--balance", min=0, max=1e6,
                                  help="Weight of the advisor-usage "
                                  "entropy term (0: plain MSE, the paper's loss)."),
    sharpness: float = typer.Option(0.0, "--sharpness", min=0, max=1e6,
                                    help="Weight of the mean entropy "
                                    "of Phi's columns (pushes them towards one-hot)."),
    temperature: float = typer.Option(1.0, "--temperature", min=1e-6, max=1.0,
                                      help="Final softmax "
                                      "temperature over standardised logits (< 1 anneals "
                                      "towards it; 1: plain softmax)."),
    anneal_epochs: int = typer.Option(100, "--anneal-epochs", min=0, max=10**6,
                                      help="Epochs over which the "
                                      "temperature is annealed."),
    ranks: Optional[str] = typer.Option(None, "--ranks", help="Deck ranks low to high "
                                        "(default 23456789TA)."),
    suits: Optional[int] = typer.Option(None, "--suits", min=1, max=4, help="Suits (default 4)."),
    threads: int = typer.Option(1, "--threads", min=1, max=MAX_THREADS, help="Torch CPU threads."),
    device: str = typer.Option("cpu", "--device", help="Torch device: cpu or cuda."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object."),
) -> None:
    """Train HandEbdNet on every flop and turn class and save Phi (the Embedding CFR
    embedding) for `numeral211 solve --embedding`."""
    from tensorcfr.games.numeral211.runs.run_embed import EmbedSettings, train_embedding_file

    settings = EmbedSettings(out=out, flop=flop, turn=turn, net=net, target=target,
                             hidden=hidden, epochs=epochs, batch=batch, lr=lr,
                             holdout=holdout, patience=patience, seed=seed, balance=balance,
                             sharpness=sharpness, temperature=temperature,
                             anneal_epochs=anneal_epochs, game=game_config(ranks, suits),
                             threads=threads, device=device, objective=objective,
                             teacher=teacher, teacher_temperature=teacher_temperature)
    with _status("training HandEbdNet", as_json) as status:
        def progress(r: int, epoch: int, loss: float) -> None:
            if status is not None:
                status.update(f"HandEbdNet {ROUND_NAMES[r]}: epoch {epoch}/{epochs}, "
                              f"loss {loss:.4g}")

        trained = train_embedding_file(settings, progress)
    if as_json:
        print_json(trained.to_dict())
        return
    meta = trained.embedding.meta
    rounds = "; ".join(
        f"{ROUND_NAMES[r]} {m} x {meta['classes'][r]}: loss {meta['loss'][f'round_{r}']:.4g}"
        f" (target variance {meta['target_variance'][f'round_{r}']:.4g}"
        f"{'' if meta['trained'][f'round_{r}'] else ', NOT trained'}), "
        f"{meta['advisors_used'][f'round_{r}']} advisors used, top1 mean "
        f"{meta['top1_mean'][f'round_{r}']:.2f}, {meta['epochs_run'][f'round_{r}']} epochs"
        for r, m in ((1, flop), (2, turn)))
    kept = meta.get("partition_distortion")
    if kept:
        teacher_meta = meta["teacher"]
        rounds += "; largest-entry partition's distortion in the teacher's distance " + ", ".join(
            f"{kept[k]:.4g} (teacher {teacher_meta['method']} "
            f"{teacher_meta['distortion'][k]:.4g})" for k in kept)
    err_console.print(f"HandEbdNet {net} ({meta['target']}, {objective}): {rounds}; "
                      f"{meta['seconds']:.1f} s -> {trained.out}", highlight=False,
                      soft_wrap=True)
