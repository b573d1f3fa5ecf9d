"""Self-play of one Pasur deal between two named players, as a library call:
:func:`run_selfplay` with a :class:`SelfplaySettings` (what ``tensorcfr pasur selfplay`` runs).

Open-hands players (``random``, ``exact``, ``table``, ``model``;
:mod:`.playing.players`) play all games at once as tensors (:func:`.playing.selfplay.
play_games`); when a name is a hidden-hand agent only (``greedy``, ``pimc``, ``pimc-infer``,
``hidden-model``, ...; :func:`.agents.make_agent`), both seats are hidden-hand agents
(``random`` and ``exact`` included) and the games are played one by one over the reference
engine (:func:`.playing.match.play_hidden_games`). The result is the score difference
(Alex minus Bob, points per game) with its 95% interval, Alex's win / tie / loss rates and the
deal's fair value; with ``records`` the first games are written as game records (the
``pasur replay`` format).

This module sits above the agent registry (it names players), next to :mod:`.tournament`; the
batched engine it drives is :mod:`.playing.selfplay`. Nothing here prints or parses command
lines: progress goes to ``on_progress`` (:class:`SelfplayProgress`), errors are one-line
:class:`~tensorcfr.errors.TensorCFRError` messages naming the CLI options.

>>> from tensorcfr.games.pasur.engine.rules import random_deal
>>> result = run_selfplay(SelfplaySettings(deal=random_deal(3), alex="random", bob="random",
...                                        games=4))
>>> result["games"], result["alex"], result["min_diff"] <= result["mean_diff"] <= result["max_diff"]
(4, 'random', True)
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Optional, Sequence

from tensorcfr.errors import TensorCFRError
from tensorcfr.utils.checks import MAX_SEED, check_int_range

__all__ = ["MAX_RECORDS", "SelfplayProgress", "SelfplaySettings", "run_selfplay"]

MAX_RECORDS = 100_000
"""Most game records one run writes (``--num-records``)."""


def hidden_hands(alex: str, bob: str) -> bool:
    """True when the names ask for hidden-hand agents (a name that only they have); one-line
    errors for an unknown name and for an open-hands player facing a hidden-hand agent."""
    from tensorcfr.games.pasur.agents import PLAYER_NAMES, agent_names

    AGENT_NAMES = agent_names()  # those registered now, later registrations included
    for side, name in (("--alex", alex), ("--bob", bob)):
        if name not in PLAYER_NAMES and name not in AGENT_NAMES:
            names = list(PLAYER_NAMES) + [n for n in AGENT_NAMES if n not in PLAYER_NAMES]
            raise TensorCFRError(f"{side}: unknown player {name!r}: choose one of "
                                 f"{', '.join(names)}")
    hidden = [name for name in (alex, bob) if name not in PLAYER_NAMES]
    if not hidden:
        return False
    for side, name in (("--alex", alex), ("--bob", bob)):
        if name not in AGENT_NAMES:
            raise TensorCFRError(f"{side} {name!r} is an open-hands player and cannot play "
                                 f"against the hidden-hand agent {hidden[0]!r}: use "
                                 f"hidden-hand agents on both seats "
                                 f"({', '.join(AGENT_NAMES)})")
    return True


@dataclass(frozen=True)
class SelfplaySettings:
    """Everything one self-play run needs (the options of ``pasur selfplay``), checked when
    built (one-line :class:`TensorCFRError` naming the option).

    Attributes:
        deal: 52 card indices (validated; stored as a tuple).
        alex, bob: player names (open-hands players or hidden-hand agents, not mixed).
        games: games to play (open hands: all at once as tensors).
        sample_seed: seed of the sampling (hidden hands: game ``i`` uses ``sample_seed + i``).
        model: policy model folder for ``model``, or hidden-hand model folder for
            ``hidden-model`` (None: the shipped one).
        table: DCFR run folder for ``table``.
        device: torch device (checked when the run starts); threads: torch and XGBoost
            threads (None: the project default, 1).
        records: folder for the first ``num_records`` game records, or None.
        determinizations, seconds_per_move: ``pimc`` / ``pimc-infer``: draws per play, and a
            time budget per play in seconds (None: none).
        seed: the deal's seed, recorded in the result.
    """

    deal: Sequence[int]
    alex: str
    bob: str
    games: int = 1000
    sample_seed: int = 0
    model: Optional[Path] = None
    table: Optional[Path] = None
    device: str = "cpu"
    threads: Optional[int] = None
    records: Optional[Path] = None
    num_records: int = 10
    determinizations: int = 32
    seconds_per_move: Optional[float] = None
    seed: Optional[int] = None

    def __post_init__(self) -> None:
        from tensorcfr.games.pasur.engine.rules import validate_deal
        from tensorcfr.games.pasur.playing.selfplay import MAX_GAMES

        object.__setattr__(self, "deal", validate_deal(self.deal))
        hidden_hands(self.alex, self.bob)
        check_int_range(self.games, "--games", 1, MAX_GAMES, why="all games are played at "
                        "once as tensors; run several commands with other --sample-seed "
                        "values for more")
        check_int_range(self.sample_seed, "--sample-seed", 0, MAX_SEED)
        check_int_range(self.num_records, "--num-records", 0, MAX_RECORDS)
        for name in ("model", "table", "records"):
            value = getattr(self, name)
            if value is not None:
                object.__setattr__(self, name, Path(value))

    @property
    def hidden(self) -> bool:
        """Whether the run is between hidden-hand agents."""
        return hidden_hands(self.alex, self.bob)


@dataclass(frozen=True)
class SelfplayProgress:
    """A progress event: ``done`` of ``total`` ``unit``\\ s (``"play"``: the 48 plays of all
    open-hands games at once; ``"game"``: hidden-hand games, one by one)."""

    done: int
    total: int
    unit: str


def _write_records(folder: Path, records: Sequence[dict[str, Any]]) -> None:
    from tensorcfr.utils.io import write_json_atomic

    for game, record in enumerate(records):
        write_json_atomic(folder / f"game_{game:05d}.json", record, indent=None)


def _hidden_selfplay(s: SelfplaySettings, threads: int,
                     report: Callable[[SelfplayProgress], None]) -> dict[str, Any]:
    """Hidden-hand agents ``s.alex`` and ``s.bob`` play ``s.games`` games one by one (game
    ``i`` with seed ``s.sample_seed + i``)."""
    from tensorcfr.games.pasur.agents import AgentOptions, make_agent
    from tensorcfr.games.pasur.engine.records import record_from_state, record_to_json
    from tensorcfr.games.pasur.playing.match import hidden_games_summary, play_hidden_games

    options = AgentOptions(determinizations=s.determinizations,
                           seconds_per_move=s.seconds_per_move, model=s.model,
                           device=s.device, threads=threads)
    t0 = time.perf_counter()
    agent_alex = make_agent(s.alex, options)
    agent_bob = agent_alex if s.bob == s.alex else make_agent(s.bob, options)
    setup_seconds = time.perf_counter() - t0
    t0 = time.perf_counter()
    report(SelfplayProgress(0, s.games, "game"))
    results = play_hidden_games(s.deal, agent_alex, agent_bob, s.games, seed=s.sample_seed,
                                progress=lambda done: report(
                                    SelfplayProgress(done, s.games, "game")))
    seconds = time.perf_counter() - t0
    out: dict[str, Any] = {
        "deal": list(s.deal), "alex": s.alex, "bob": s.bob, "hidden_hands": True,
        **hidden_games_summary(results), "exact_value": None, "sample_seed": s.sample_seed,
        "seconds": seconds, "setup_seconds": setup_seconds,
        "games_per_second": s.games / seconds if seconds > 0 else None,
        "threads": options.threads, "device": options.device,
        "determinizations": options.determinizations,
        "seconds_per_move": options.seconds_per_move,
    }
    if s.records is not None:
        records = []
        for game in range(min(s.num_records, s.games)):
            record = record_to_json(record_from_state(results[game].state))
            record["source"] = (f"tensorcfr pasur selfplay (hidden hands): {s.alex} (Alex) vs "
                                f"{s.bob} (Bob), seed {s.sample_seed + game}")
            records.append(record)
        _write_records(s.records, records)
        out["records"] = str(s.records)
        out["records_written"] = len(records)
    return out


def _open_selfplay(s: SelfplaySettings, threads: int,
                   report: Callable[[SelfplayProgress], None]) -> dict[str, Any]:
    """Open-hands players ``s.alex`` and ``s.bob`` play all ``s.games`` games at once."""
    from tensorcfr.games.pasur.agents import make_player
    from tensorcfr.games.pasur.playing.selfplay import play_games

    t0 = time.perf_counter()
    made: dict[str, Any] = {}
    for name in {s.alex, s.bob}:
        made[name] = make_player(name, s.deal, model=s.model, table=s.table, device=s.device,
                                 threads=threads)
    setup_seconds = time.perf_counter() - t0
    report(SelfplayProgress(0, 48, "play"))
    result = play_games(s.deal, made[s.alex], made[s.bob], s.games, sample_seed=s.sample_seed,
                        device=s.device, records=s.records is not None,
                        progress=lambda done: report(SelfplayProgress(done, 48, "play")))
    exact_value = next((p.value for p in made.values() if hasattr(p, "value")), None)
    out: dict[str, Any] = {
        "deal": list(s.deal), "alex": s.alex, "bob": s.bob, **result.summary(),
        "exact_value": exact_value, "sample_seed": s.sample_seed,
        "seconds": result.seconds, "setup_seconds": setup_seconds,
        "games_per_second": s.games / result.seconds if result.seconds > 0 else None,
        "threads": threads, "device": s.device,
    }
    misses = {n: p.misses for n, p in made.items() if hasattr(p, "misses")}
    if misses:
        out["table_positions_without_rows"] = misses["table"]
    if s.records is not None:
        records = []
        for game in range(min(s.num_records, s.games)):
            record = result.record(game)
            record["source"] = (f"tensorcfr pasur selfplay: {s.alex} (Alex) vs {s.bob} (Bob), "
                                f"sample seed {s.sample_seed}, game {game}")
            records.append(record)
        _write_records(s.records, records)
        out["records"] = str(s.records)
        out["records_written"] = len(records)
    return out


def run_selfplay(settings: SelfplaySettings, *,
                 on_progress: Callable[[SelfplayProgress], None] | None = None
                 ) -> dict[str, Any]:
    """Play the games ``settings`` describe; returns the JSON-ready result of ``pasur selfplay
    --json`` (``games``, ``mean_diff``, ``ci95``, ``min_diff``, ``max_diff``, win / tie
    rates, ``fair_value``, ``exact_value``, timings in seconds, ``seed``...). One-line
    :class:`TensorCFRError` for a bad device, records folder, table or model."""
    from tensorcfr.utils.device import resolve_device
    from tensorcfr.utils.io import check_output_dir
    from tensorcfr.utils.resources import set_threads

    s = settings
    if s.records is not None:
        check_output_dir(s.records, "--records")
    resolve_device(s.device, "--device")
    threads = set_threads(s.threads)
    report = on_progress or (lambda event: None)
    run = _hidden_selfplay if s.hidden else _open_selfplay
    result = run(s, threads, report)
    result["seed"] = s.seed
    return result
