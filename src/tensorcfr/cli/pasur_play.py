"""``tensorcfr pasur serve`` (the web page) and ``tensorcfr pasur play`` (the terminal game).

Both play Pasur against an AI in one of two modes (``--mode``): ``hidden`` hands (the real
game, the default: the AI is a hidden-hand agent, any name of the agents registry; hints are
its estimates) or ``open`` hands (double-dummy study mode: exact, random, and with
``--table DIR`` / ``--model DIR`` the strategy table and the learned model; exact hints). An
exact end-of-game analysis in both; undo in open hands only. A hidden-hand deal nobody names
is secret (the session draws it from the system's secure random source); ``--seed`` or
``--deal`` makes a practice game (docs/security.md). fastapi and uvicorn are imported only
when ``serve`` runs.
"""

from __future__ import annotations

import ipaddress
from pathlib import Path
from typing import Optional

import typer

from tensorcfr.cli.common import MAX_SEED, MAX_THREADS, console, err_console, fail, path_check
from tensorcfr.errors import TensorCFRError
from tensorcfr.games.pasur.vocab import Mode
from tensorcfr.play.limits import CACHE_SIZE_LIMIT, MAX_GAMES_LIMIT, TTL_MINUTES_LIMIT

MODE_HELP = ("hidden (the real game: each side sees only its own hand) or open (both hands "
             "and the rounds to come shown, double-dummy); default hidden")


def _check_folder(option: str, path: Optional[str]) -> Optional[str]:
    if path is None:
        return None
    if not Path(path).is_dir():
        raise TensorCFRError(f"{option} {path}: no such folder")
    return str(Path(path).resolve())


def _manifest_seed(folder: Optional[str]) -> Optional[int]:
    """The ``seed`` a DCFR run's manifest records (None if it does not say)."""
    from tensorcfr.utils.manifest import peek_manifest

    obj = peek_manifest(str(folder))
    seed = obj.get("seed") if obj is not None else None
    return seed if isinstance(seed, int) and not isinstance(seed, bool) else None


def _load_ais(table_dir: Optional[str], model_dir: Optional[str], threads: int) -> None:
    """Load the strategy table and the model the AIs would use (CorruptFileError, one line,
    for a truncated or foreign file)."""
    if table_dir is not None:
        from tensorcfr.games.pasur.solving.dcfr_run import check_run_folder

        check_run_folder(table_dir)
    if model_dir is not None:
        from tensorcfr.games.pasur.learning.policy_model import load_policy_model

        load_policy_model(model_dir, threads=threads)


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def serve_command(
    host: str = typer.Option("127.0.0.1", "--host", help="Address to listen on (default: this "
                             "machine only; 0.0.0.0 opens it to the network)."),
    port: int = typer.Option(8000, "--port", min=1, max=65_535, help="TCP port (1-65535)."),
    table: Optional[str] = typer.Option(None, "--table", callback=path_check("input-dir"),
                                        help="A DCFR run folder "
                                        "(pasur solve --method dcfr --out DIR): offers the "
                                        "table AI."),
    model: Optional[str] = typer.Option(None, "--model", callback=path_check("input-dir"),
                                        help="An XGBoost model folder: offers "
                                        "the model AI."),
    max_games: int = typer.Option(256, "--max-games", min=1, max=MAX_GAMES_LIMIT,
                                  help="Games held at once (the least "
                                  f"recently used goes first), 1..{MAX_GAMES_LIMIT:,} "
                                  "(about 80 KiB each)."),
    ttl_minutes: float = typer.Option(120.0, "--ttl-minutes", min=0.001, max=TTL_MINUTES_LIMIT,
                                      help="A game idle this long "
                                      f"expires (at most {TTL_MINUTES_LIMIT:,}: a week)."),
    cache_size: int = typer.Option(4, "--cache-size", min=1, max=CACHE_SIZE_LIMIT,
                                   help="Exact solutions kept in memory "
                                   f"(5-60 MiB each), 1..{CACHE_SIZE_LIMIT}."),
    threads: Optional[int] = typer.Option(None, "--threads", min=1, max=MAX_THREADS,
                                          help="Torch threads (default 1)."),
    device: str = typer.Option("cpu", "--device", help="Torch device of the solver and model "
                               "(checked at start)."),
    mode: str = typer.Option(Mode.HIDDEN.value, "--mode", help="The mode new games start in "
                             "(the page can switch): " + MODE_HELP + "."),
    allowed_hosts: Optional[list[str]] = typer.Option(
        None, "--allowed-host", help="Another name the server answers to in the Host header "
        "(repeatable; e.g. a LAN name or a reverse proxy's). Always answered: localhost, "
        "127.0.0.1, [::1] and --host; with --host 0.0.0.0 or :: also any IP address and this "
        "machine's names. Other Host headers get a 400 (a guard against DNS rebinding)."),
) -> None:
    """Serve the Pasur page: play Pasur against the AI in a browser (hidden or open hands)."""
    from tensorcfr.play.hosts import HostPolicy
    from tensorcfr.utils.checks import check_int_range
    from tensorcfr.utils.device import resolve_device
    from tensorcfr.utils.resources import set_threads

    try:
        mode = Mode.parse(mode)  # the one check of the mode
        check_int_range(port, "--port", 1, 65535)
        check_int_range(max_games, "--max-games", 1, MAX_GAMES_LIMIT,
                        why="about 80 KiB of memory each")
        check_int_range(cache_size, "--cache-size", 1, CACHE_SIZE_LIMIT,
                        why="5-60 MiB of memory each")
        if not 0 < ttl_minutes <= TTL_MINUTES_LIMIT:
            raise TensorCFRError(f"--ttl-minutes must be more than 0 and at most "
                                 f"{TTL_MINUTES_LIMIT:,} (a week), got {ttl_minutes}")
        policy = HostPolicy.for_listen(host, allowed_hosts or ())
        resolve_device(device, "--device")  # not a 500 at the first open-hands move
        table_dir = _check_folder("--table", table)
        model_dir = _check_folder("--model", model)
        _check_can_listen(host, port)
        n_threads = set_threads(threads)
        _load_ais(table_dir, model_dir, n_threads)  # refuse a damaged file now, not per game
        import uvicorn

        from tensorcfr.play.server import create_app

        app = create_app(table=table_dir, model=model_dir, max_games=max_games,
                         ttl_seconds=ttl_minutes * 60, cache_size=cache_size, device=device,
                         mode=mode, host=host, allowed_hosts=list(allowed_hosts or ()))
    except TensorCFRError as exc:
        fail(str(exc), exc.exit_code)
        return
    shown = f"[{host}]" if ":" in host else host
    url = f"http://{shown}:{port}/"
    if not _is_loopback(host):  # before the URL line, one unbroken line
        err_console.print(f"[yellow]warning:[/] listening on {host}: anyone who can reach this "
                          "machine can use the server (Host names answered: "
                          f"{policy.describe()})", highlight=False, soft_wrap=True)
    console.print(f"Pasur: open [bold]{url}[/] in a browser (new games: {mode} hands; "
                  f"{n_threads} torch thread(s); Ctrl+C stops)", highlight=False,
                  soft_wrap=True)
    config = uvicorn.Config(app, host=host, port=port, log_level="warning", access_log=False)
    server = uvicorn.Server(config)
    try:
        server.run()
    except (OSError, SystemExit) as exc:  # uvicorn exits when it cannot bind after all
        if server.started:
            raise
        detail = exc.strerror if isinstance(exc, OSError) else None
        fail(f"cannot listen on {host}:{port}: {detail or 'see the message above'}")
    if not server.started:
        fail(f"cannot listen on {host}:{port} (is the port already in use?)")


def _check_can_listen(host: str, port: int) -> None:
    """A one-line error now (not a uvicorn traceback later) if ``host:port`` cannot be bound."""
    import socket

    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError) as exc:
        raise TensorCFRError(f"--host {host}: not an address of this machine ({exc})") from None
    family, kind, proto, _, address = infos[0]
    with socket.socket(family, kind, proto) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn does
        try:
            probe.bind(address)
        except OSError as exc:
            hint = (f" (the port is in use: try --port {port + 1 if port < 65535 else 8000})"
                    if exc.errno == 98 else "")
            raise TensorCFRError(f"cannot listen on {host}:{port}: "
                                 f"{exc.strerror or exc}{hint}") from None


def play_command(
    seed: Optional[int] = typer.Option(None, "--seed", min=0, max=MAX_SEED,
                                       help="Play the seeded random deal (in "
                                       "hidden hands a practice game: you can know every "
                                       "card). Without --seed/--deal the deal comes from the "
                                       "system's secure random source."),
    deal: Optional[str] = typer.Option(None, "--deal", help="52 card codes, pool first."),
    deal_file: Optional[str] = typer.Option(None, "--deal-file", callback=path_check("input-file"),
                                            help="A file with the deal: "
                                            "a JSON list of 52 card indices or 52 card codes."),
    seat: str = typer.Option("alex", "--as", help="Your seat: alex (plays first) or bob."),
    mode: str = typer.Option(Mode.HIDDEN.value, "--mode", help=MODE_HELP + "."),
    ai: Optional[str] = typer.Option(None, "--ai", help="The opponent. Hidden hands: any "
                                     "hidden-hand agent (random, exact = cheating reference, "
                                     "and those the agents registry adds; default "
                                     "hidden-model, whose hints are its own scores of your "
                                     "plays). Open hands: exact (default), random, table or "
                                     "model."),
    table: Optional[str] = typer.Option(None, "--table", callback=path_check("input-dir"),
                                        help="A DCFR run folder, for --ai table "
                                        "(without --seed/--deal: its deal is played)."),
    model: Optional[str] = typer.Option(None, "--model", callback=path_check("input-dir"),
                                        help="An XGBoost model folder, for "
                                        "--ai model."),
    ai_seed: Optional[int] = typer.Option(None, "--ai-seed", min=0, max=MAX_SEED,
                                          help="Seed of the AI's random draws "
                                "(0..2^63-1; default: a secure random one, saved in the "
                                "record)."),
    record: Optional[str] = typer.Option(None, "--record", callback=path_check("output-file"),
                                         help="Save the finished game's "
                                         "record (JSON) to this file."),
    threads: Optional[int] = typer.Option(None, "--threads", min=1, max=MAX_THREADS,
                                          help="Torch threads (default 1)."),
    device: str = typer.Option("cpu", "--device", help="Torch device of the solver and model."),
) -> None:
    """Play Pasur against the AI in the terminal, hidden or open hands (hint, undo in open
    hands, quit)."""
    import secrets

    from tensorcfr.games.pasur.engine.deal_input import choose_deal
    from tensorcfr.play.caches import SolutionCache
    from tensorcfr.play.opponents import check_ai, default_ai
    from tensorcfr.play.session import GameSession, check_seed, new_deal, seat_index
    from tensorcfr.play.terminal import TerminalGame
    from tensorcfr.utils.resources import set_threads

    from tensorcfr.utils.device import resolve_device

    try:
        mode = Mode.parse(mode)  # the one check of the mode
        resolve_device(device, "--device")  # not a crash at the AI's first move
        ai = check_ai(mode, default_ai(mode) if ai is None else ai, "--ai")
        if seed is not None:
            check_seed(seed, "--seed")
        if ai_seed is None:
            ai_seed = secrets.randbelow(2**31)
        check_seed(ai_seed, "--ai-seed")
        if seat.strip().lower() not in ("alex", "bob"):
            raise TensorCFRError(f"--as must be alex or bob, got {seat!r}")
        if ai == "table" and table is None:
            raise TensorCFRError("--ai table needs --table DIR (a folder written by "
                                 "`tensorcfr pasur solve --method dcfr --out DIR`)")
        if ai == "model" and model is None:
            raise TensorCFRError("--ai model needs --model DIR")
        if record is not None and Path(record).is_dir():
            raise TensorCFRError(f"--record {record} is a folder; give a file name")
        table_dir = _check_folder("--table", table)
        model_dir = _check_folder("--model", model)
        _load_ais(table_dir if ai == "table" else None, model_dir if ai == "model" else None,
                  1)
        table_deal = None
        if ai == "table" and table_dir is not None:
            from tensorcfr.play.server import _run_deal

            table_deal = _run_deal(table_dir)
        chosen = True  # the player named the deal: a hidden-hand game on it is practice
        if seed is None and deal is None and deal_file is None and table_deal is not None:
            the_deal = table_deal  # a strategy table is of one deal: play that deal
            seed = _manifest_seed(table_dir)
        elif seed is None and deal is None and deal_file is None:
            the_deal, chosen = new_deal().deal, False  # the system's secure random source
        else:
            the_deal = choose_deal(deal, deal_file, seed)
        set_threads(threads)
        solutions = SolutionCache(max_size=1, device=device)
        session = GameSession(the_deal, seat_index(seat), ai, mode=mode, solutions=solutions,
                              ai_seed=ai_seed, seed=seed, table=table_dir, model=model_dir,
                              device=device, practice=chosen)
        if mode is Mode.OPEN:  # hints and the exact AI need it now; hidden hands: at the end
            solutions.prefetch(session.deal)
        if seed is not None and mode is Mode.OPEN:  # hidden hands: the practice line says it
            console.print(f"deal seed {seed}", highlight=False)
        TerminalGame(session, console, record_path=record).run()
    except TensorCFRError as exc:
        fail(str(exc), exc.exit_code)
        return
