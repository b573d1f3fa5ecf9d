"""``tensorcfr numeral211 info | solve | exploitability``: sizes of Numeral211 Hold'em, the
full-game tensor CFR solver and the exact exploitability of strategy files (registered on the
``numeral211`` sub-app by :func:`register`)."""

from __future__ import annotations

import time
from typing import Any, Optional

import typer

from tensorcfr.cli.common import (MAX_SEED, MAX_THREADS, console, dcfr_option, err_console, fail,
                                  path_check, print_json)
from tensorcfr.errors import TensorCFRError


def register(app: typer.Typer) -> None:
    """Add ``info``, ``solve`` and ``exploitability`` to the ``numeral211`` sub-app."""
    app.command("info")(info_command)
    app.command("solve")(solve_command)
    app.command("exploitability")(exploitability_command)


# ---------------------------------------------------------------------- game options
def _int_list(text: Optional[str], label: str) -> Optional[tuple[int, ...]]:
    if text is None:
        return None
    try:
        values = tuple(int(v) for v in text.replace(" ", "").split(",") if v != "")
    except ValueError:
        raise TensorCFRError(f"{label} must be comma-separated integers, got {text!r}") from None
    if len(values) == 1:
        values = values * 3
    return values


def game_config(ranks: Optional[str], suits: Optional[int], ante: Optional[int],
                bets: Optional[str], max_bets: Optional[str]) -> Any:
    """The :class:`GameConfig` of the CLI's game options (defaults: the paper's game)."""
    from tensorcfr.games.numeral211.game.config import GameConfig

    kw: dict[str, Any] = {}
    if ranks is not None:
        kw["ranks"] = ranks
    if suits is not None:
        kw["suits"] = suits
    if ante is not None:
        kw["ante"] = ante
    if bets is not None:
        kw["bets"] = _int_list(bets, "--bets")
    if max_bets is not None:
        kw["max_bets"] = _int_list(max_bets, "--max-bets")
    return GameConfig(**kw)


_RANKS = typer.Option(None, "--ranks", help="Rank letters low to high (default 23456789TA).")
_SUITS = typer.Option(None, "--suits", min=1, max=4, help="Suits, 1-4 (default 4).")
_ANTE = typer.Option(None, "--ante", min=0, max=10**6,
                     help="Ante per player in chips (default 5).")
_BETS = typer.Option(None, "--bets", help="Bet size per round, e.g. 10,20,20 (the default).")
_MAX_BETS = typer.Option(None, "--max-bets", help="Most bets+raises per round, e.g. 4,4,4 "
                         "(the default) or one number for all rounds.")
_JSON = typer.Option(False, "--json", help="Print one JSON object instead of text.")
_THREADS = typer.Option(None, "--threads", min=1, max=MAX_THREADS,
                        help="Torch threads (default 1).")


def _dtype(name: str) -> Any:
    import torch

    name = name.strip().lower()
    if name not in ("float32", "float64"):
        raise TensorCFRError(f"--dtype must be float32 or float64, got {name!r}")
    return getattr(torch, name)


# ---------------------------------------------------------------------- info
def info_command(
    ranks: Optional[str] = _RANKS, suits: Optional[int] = _SUITS, ante: Optional[int] = _ANTE,
    bets: Optional[str] = _BETS, max_bets: Optional[str] = _MAX_BETS,
    json_out: bool = _JSON,
) -> None:
    """Sizes of the game: decision nodes, infosets, suit-isomorphic and outcome classes per
    round, terminals and the solver's memory estimate."""
    from tensorcfr.utils.resources import format_bytes

    try:
        config = game_config(ranks, suits, ante, bets, max_bets)
        from tensorcfr.games.numeral211.solving.sizes import game_sizes

        info = game_sizes(config)
    except TensorCFRError as exc:
        fail(str(exc), exc.exit_code)
    if json_out:
        print_json(info)
        return
    from rich.table import Table

    table = Table(title=f"{info['game']}: {info['cards']} cards, {info['private_hands']} "
                  "private hands", title_justify="left")
    table.add_column("")
    for name in ("preflop", "flop", "turn", "total"):
        table.add_column(name, justify="right")
    for key, label in (("decision_nodes", "decision nodes (public)"),
                       ("fold_terminals", "fold terminals"),
                       ("infosets", "infosets (both players)"),
                       ("isomorphic_classes", "suit-isomorphic classes"),
                       ("outcome_classes", "outcome classes"),
                       ("canonical_boards", "canonical boards"),
                       ("betting_prefixes", "betting prefixes")):
        values = info[key]
        total = f"{sum(values):,}" if key in ("decision_nodes", "fold_terminals",
                                               "infosets") else ""
        table.add_row(label, *[f"{v:,}" for v in values], total)
    console.print(table)
    mem = info["memory_estimate_bytes"]
    console.print(f"showdowns {info['showdowns']:,}   solver memory estimate "
                  f"{format_bytes(mem['float32'])} (float32), {format_bytes(mem['float64'])} "
                  "(float64)", highlight=False)


# ---------------------------------------------------------------------- solve
class _ProgressView:
    """Shows a solve run's :class:`RunProgress` events on stderr: a rich progress bar on a
    terminal, else (a log file, CI, ``--json``) a plain line per evaluation or minute; says
    where a resumed run starts.  A context manager (the bar ends with it)."""

    def __init__(self, resume: Optional[str], json_out: bool) -> None:
        self.resume = resume
        self.show_bar = not json_out and err_console.is_terminal
        self.bar: Any = None
        self.task: Any = None
        self.last_line = time.perf_counter()

    def __enter__(self) -> "_ProgressView":
        return self

    def __exit__(self, *exc: Any) -> None:
        if self.bar is not None:
            self.bar.stop()

    def __call__(self, p: Any) -> None:
        if p.event == "start":
            self._start(p)
        elif self.bar is not None:
            short = "floor" if p.measure == "average floor" else "expl"
            self.bar.update(self.task, completed=p.iteration,
                            expl="" if p.exploitability_mbg is None else
                            f"{short} {p.exploitability_mbg:,.1f} mb/g")
        else:
            now = time.perf_counter()
            if not p.evaluated and now - self.last_line < 60.0:
                return
            self.last_line = now
            text = "" if p.exploitability_mbg is None or not p.evaluated else (
                f", {p.measure} {p.exploitability_mbg:,.1f} mb/g")
            err_console.print(f"{p.label}: iteration {p.iteration:,}/{p.target:,}{text} "
                              f"({p.seconds:,.0f} s)", highlight=False, soft_wrap=True)

    def _start(self, p: Any) -> None:
        if p.resumed_from is not None:
            err_console.print(f"resumed from {self.resume} at iteration {p.resumed_from:,}",
                              highlight=False, soft_wrap=True)
        if self.show_bar:
            from rich.progress import (BarColumn, MofNCompleteColumn, Progress, TextColumn,
                                       TimeElapsedColumn, TimeRemainingColumn)

            self.bar = Progress(TextColumn(p.label), BarColumn(), MofNCompleteColumn(),
                                TextColumn("{task.fields[expl]}"), TimeElapsedColumn(),
                                TimeRemainingColumn(), console=err_console, transient=True)
            self.bar.start()
            self.task = self.bar.add_task("solve", total=p.target, completed=p.iteration,
                                          expl="")


_STORAGE = typer.Option("classes", "--storage", help="Solver tables per suit-isomorphic "
                        "class (classes, the default) or per (board, hand) cell (cells: "
                        "the layout before per-class storage, e.g. to resume its "
                        "checkpoints); sampled iterations always run on cells.")


def solve_command(
    algo: str = typer.Option("cfr+", "--algo", help="cfr, cfr+, lcfr or dcfr (alternating "
                             "updates)."),
    iterations: int = typer.Option(100, "--iterations", "-n", min=1, max=10**9,
                                   help="Total iterations, counted "
                                   "from the start: a resumed run continues up to this "
                                   "number (solve counts more after a resume instead)."),
    eval_every: int = typer.Option(0, "--eval-every", min=0, max=10**9,
                                   help="Exact exploitability of the "
                                   "average strategy every K iterations (0: only at the end)."),
    save: Optional[str] = typer.Option(None, "--save", callback=path_check("output-file"),
                                       help="Checkpoint file (.npz), written "
                                       "every --checkpoint-minutes and at the end."),
    resume: Optional[str] = typer.Option(None, "--resume", callback=path_check("input-file"),
                                         help="Continue from this "
                                         "checkpoint (bitwise as an uninterrupted run)."),
    out: Optional[str] = typer.Option(None, "--out", callback=path_check("output-file"),
                                      help="Strategy file (.npz, average "
                                      "strategy per isomorphic class)."),
    plot: Optional[str] = typer.Option(None, "--plot", callback=path_check("output-file"),
                                       help="PNG of the exploitability curve."),
    curve_out: Optional[str] = typer.Option(None, "--curve", callback=path_check("output-file"),
                                            help="JSON of the curve."),
    checkpoint_minutes: float = typer.Option(10.0, "--checkpoint-minutes", min=0.001, max=1e6,
                                             help="Minutes between checkpoints."),
    alpha: Optional[float] = dcfr_option("alpha"),
    beta: Optional[float] = dcfr_option("beta"),
    gamma: Optional[float] = dcfr_option("gamma"),
    dtype: str = typer.Option("float32", "--dtype", help="float32 (default) or float64."),
    device: str = typer.Option("cpu", "--device", help="Torch device (cpu, cuda, ...)."),
    max_memory: Optional[str] = typer.Option(None, "--max-memory", help="Memory limit, e.g. "
                                             "16G (default: what the machine has free now)."),
    ranks: Optional[str] = _RANKS, suits: Optional[int] = _SUITS, ante: Optional[int] = _ANTE,
    bets: Optional[str] = _BETS, max_bets: Optional[str] = _MAX_BETS,
    threads: Optional[int] = _THREADS, json_out: bool = _JSON,
    abstraction: Optional[str] = typer.Option(
        None, "--abstraction", callback=path_check("input-file"),
        help="Bucket map of `numeral211 abstract` (.npz): solve that "
        "abstraction (--algo cfr or cfr+), exploitability measured in the full game."),
    embedding: Optional[str] = typer.Option(
        None, "--embedding", callback=path_check("input-file"),
        help="Phi file of `numeral211 embed` (.npz): Embedding CFR."),
    phi_top: Optional[int] = typer.Option(
        None, "--phi-top", min=1, max=10**6,
        help="Embedding CFR / soft clustering: keep the k largest entries "
        "of each column of Phi (renormalised); default: dense where it fits in 1 GiB, else 8 "
        "(dense costs ~20 s more per exact iteration on the paper's game)."),
    soft_temperature: Optional[float] = typer.Option(
        None, "--soft-temperature", min=0, max=1e6,
        help="With --abstraction: the soft-clustering control, "
        "Phi = softmax of each class's distances to the map's cluster centres over this "
        "temperature (unit: the mean distance to the own centre; 0 = the nearest centre)."),
    averaging: str = typer.Option("reach", "--averaging", help="Abstract solving: average "
                                  "advisor strategies weighted by reach, or uniform."),
    regret_baseline: str = typer.Option(
        "advisor", "--regret-baseline", help="Embedding CFR: measure each advisor's regret "
        "against its own strategy (advisor: the paper's Eq. 9, default) or against the "
        "information set's mixed strategy (infoset: the rule before issue 28); one rule for "
        "a bucket map."),
    cfr_br: bool = typer.Option(False, "--cfr-br", help="With --abstraction/--embedding: "
                                "the abstraction's floor by CFR-BR (each seat trains on the "
                                "abstraction against the full game's best response); prints "
                                "the floor (b1(sigma_0) + b0(sigma_1)) / 2."),
    sample_boards: Optional[int] = typer.Option(
        None, "--sample-boards", min=0, max=2**31 - 1,
        help="Sampled iterations (public chance sampling): draw K "
        "boards of every round per board of the round before, all private hands kept "
        "(default: exact full sweeps; 0 = every board through the sampled path)."),
    seed: int = typer.Option(0, "--seed", min=0, max=MAX_SEED,
                             help="Seed of --sample-boards (iteration t's draw "
                             "depends only on the seed and t)."),
    storage: str = _STORAGE,
) -> None:
    """Solve the whole unabstracted game with tensor CFR over the public tree (or, with
    --abstraction / --embedding, an abstraction or Embedding CFR); prints the exact
    exploitability (chips and mb/g per game) of the average strategy."""
    from tensorcfr.games.numeral211.runs.run_abstract_solve import (AbstractSolveSettings,
                                                                    solve_abstract)
    from tensorcfr.games.numeral211.runs.run_solve import SolveSettings, solve

    named = any(v is not None for v in (ranks, suits, ante, bets, max_bets))
    common = dict(algo=algo, iterations=iterations, eval_every=eval_every, save=save,
                  resume=resume, out=out, plot=plot, curve=curve_out,
                  checkpoint_minutes=checkpoint_minutes, dtype=dtype, device=device,
                  max_memory=max_memory, threads=threads, sample_boards=sample_boards,
                  seed=seed, storage=storage)
    abstract = abstraction is not None or embedding is not None
    try:
        if soft_temperature is not None and abstraction is None:
            raise TensorCFRError("--soft-temperature applies to --abstraction (the map whose "
                                 "clusters are made soft)")
        if abstract and any(v is not None for v in (alpha, beta, gamma)):
            raise TensorCFRError("--alpha/--beta/--gamma apply to --algo dcfr on the full "
                                 "game; an abstract solve (--abstraction/--embedding) runs "
                                 "cfr or cfr+")
        if cfr_br and not abstract:
            raise TensorCFRError("--cfr-br needs --abstraction or --embedding (the full game "
                                 "is its own floor)")
        game = game_config(ranks, suits, ante, bets, max_bets) if named else None
        settings: Any
        if abstract:
            settings = AbstractSolveSettings(abstraction=abstraction, embedding=embedding,
                                             game=game, phi_top=phi_top, averaging=averaging,
                                             regret_baseline=regret_baseline,
                                             soft_temperature=soft_temperature,
                                             cfr_br=cfr_br, **common)  # type: ignore[arg-type]
        else:
            settings = SolveSettings(game=game, alpha=alpha, beta=beta, gamma=gamma,
                                     **common)  # type: ignore[arg-type]
        with _ProgressView(resume, json_out) as view:
            result = (solve_abstract(settings, view) if abstract else solve(settings, view))
    except TensorCFRError as exc:
        fail(str(exc), exc.exit_code)
    summary = result.to_dict()
    if json_out:
        print_json(summary)
    elif abstract:
        _print_abstract_summary(summary)
    else:
        _print_solve_summary(summary, out=out, save=save, plot=plot, curve_out=curve_out)


def _print_abstract_summary(summary: dict[str, Any]) -> None:
    """The text lines of an abstract solve (CFR on the abstraction or a CFR-BR floor)."""
    what = (f"CFR-BR ({summary['algo']})" if summary["solver"] == "cfr-br"
            else summary["algo"])
    head = f"{summary['game']} {summary['method']} {what}: "
    ran = f"{summary['iterations']} iterations, {summary['seconds']:.1f} s; "
    if summary["solver"] == "cfr-br":
        s0, s1 = summary["seats"]
        console.print(f"{head}{ran}floor {summary['floor']:.6g} chips/game = "
                      f"{summary['floor_mbg']:.6g} mb/g (seat 0: b1 "
                      f"{s0[s0['used'] if s0['used'] == 'average' else 'best_current']:.6g}"
                      f" ({s0['used']}), seat 1: b0 "
                      f"{s1[s1['used'] if s1['used'] == 'average' else 'best_current']:.6g}"
                      f" ({s1['used']}))", highlight=False)
    else:
        console.print(f"{head}{ran}full-game exploitability {summary['exploitability']:.6g} "
                      f"chips/game = {summary['exploitability_mbg']:.6g} mb/g",
                      highlight=False)


def _print_solve_summary(summary: dict[str, Any], *, out: Optional[str], save: Optional[str],
                         plot: Optional[str], curve_out: Optional[str]) -> None:
    """The text lines of a full-game solve and the files it wrote."""
    from tensorcfr.utils.resources import format_bytes

    ran = summary["iterations_run"]
    console.print(f"{summary['game']} {summary['algo']}: {summary['iterations']} iterations "
                  f"({ran} this run, {summary['seconds']:.1f} s"
                  + (f", {summary['ms_per_iteration']:.1f} ms/iteration" if ran else "")
                  + f"), threads {summary['threads']}, device {summary['device']}",
                  highlight=False)
    console.print(f"exploitability {summary['exploitability']:.6g} chips/game = "
                  f"{summary['exploitability_mbg']:.6g} mb/g (thousandths of the ante)",
                  highlight=False)
    console.print(f"peak memory {format_bytes(summary['peak_rss_bytes'])} (estimate "
                  f"{format_bytes(summary['memory_estimate_bytes'])})", highlight=False)
    for path, what in ((out, "strategy"), (save, "checkpoint"), (plot, "plot"),
                       (curve_out, "curve")):
        if path is not None:
            console.print(f"wrote {what} {path}", highlight=False)


# ---------------------------------------------------------------------- exploitability
def exploitability_command(
    file: str = typer.Argument(..., callback=path_check("input-file", what="strategy file"),
                               help="A strategy file of `numeral211 solve --out` or of "
                               "the abstraction commands (.npz)."),
    dtype: str = typer.Option("float64", "--dtype", help="Evaluation precision."),
    device: str = typer.Option("cpu", "--device", help="Torch device (cpu, cuda, ...)."),
    threads: Optional[int] = _THREADS, json_out: bool = _JSON,
) -> None:
    """Exact best-response values and exploitability of a strategy file in the full game."""
    from tensorcfr.games.numeral211.solving import solver as n211
    from tensorcfr.utils.device import resolve_device
    from tensorcfr.utils.resources import set_threads

    try:
        n_threads = set_threads(threads)
        dev = resolve_device(device, "--device")
        started = time.perf_counter()
        game, policy, meta = n211.load_policy(file, dtype=_dtype(dtype), device=dev)
        ex = n211.exploitability(game, policy)
        seconds = time.perf_counter() - started
    except TensorCFRError as exc:
        fail(str(exc), exc.exit_code)
    config = game.config
    result = {"file": file, "game": config.describe(), **ex.to_dict(),
              "exploitability_mbg": n211.to_mbg(ex.exploitability, config),
              "units": "chips per game; mb/g = thousandths of the ante per game",
              "meta": {k: v for k, v in meta.items() if k != "format"},
              "seconds": seconds, "threads": n_threads, "device": str(dev)}
    if json_out:
        print_json(result)
        return
    b0, b1 = ex.best_response_values
    console.print(f"{file}: {config.describe()}", highlight=False)
    console.print(f"best response values b0 {b0:.6g}, b1 {b1:.6g} chips/game", highlight=False)
    console.print(f"exploitability {ex.exploitability:.6g} chips/game = "
                  f"{result['exploitability_mbg']:.6g} mb/g ({seconds:.1f} s)",
                  highlight=False)

