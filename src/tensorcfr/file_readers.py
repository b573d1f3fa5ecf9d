"""Every reader of a file a user hands a command, with a factory that writes a valid sample of
its file: the registry ``tests/test_readers_fuzz.py`` walks to damage each file every way a
careless or unlucky user would (truncated, flipped bytes, a key, array or column missing,
null, of the wrong type, NaN or infinity, a FIFO, a device or a folder in its place) and to
check that the reader answers in one line naming the file, without a traceback or a hang.

A new reader is covered by adding a :class:`FileReader` to :data:`READERS`. ``container``
tells the fuzzer how to damage the file's structure (``json``, ``jsonl``, ``npz``,
``parquet``, ``csv``; ``binary``: bytes only); ``json_member`` names an NPZ array that holds
JSON metadata (damaged key by key too). ``read()`` does what the command does with the file
(load it and use it once), so damage that a loader lets through and its first use trips on
is found too.

The factories write small files (a 3-rank Numeral211 variant, Kuhn poker, a 2-round XGBoost
booster): the whole registry is written in about a second.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Literal

__all__ = ["FileReader", "READERS", "Sample"]

Container = Literal["json", "jsonl", "npz", "parquet", "csv", "binary"]


@dataclass
class Sample:
    """A valid file (``file``) and the read a command does with it (``read()``: raises
    :class:`~tensorcfr.errors.TensorCFRError` with one line naming ``file`` when the file is
    damaged)."""

    file: Path
    read: Callable[[], Any]


@dataclass(frozen=True)
class FileReader:
    """One reader: its name, how its file is built (``container``), and ``make(folder)``,
    which writes a valid sample under ``folder`` and returns it."""

    name: str
    container: Container
    make: Callable[[Path], Sample]
    json_member: str | None = None


# ----------------------------------------------------------------------------- Pasur


def _deck_file(folder: Path) -> Sample:
    from tensorcfr.games.pasur.batch import read_decks
    from tensorcfr.games.pasur.engine.rules import random_deal

    path = folder / "decks.csv"
    path.write_text("".join(",".join(map(str, random_deal(i))) + "\n" for i in range(3)))
    return Sample(path, lambda: read_decks(str(path), 0, 2))


def _mm_table(folder: Path) -> Sample:
    from tensorcfr.games.pasur.learning.analysis import _read_paper_mm

    path = folder / "MM.csv"
    path.write_text("Deck,MM_WINS,MM_SCORES,MR_WINS,RM_WINS\n0,55.5,1.5,80,20\n"
                    "1,45.0,-0.5,70,30\n2,50,0,75,25\n")
    return Sample(path, lambda: _read_paper_mm(path))


def _batch_rows() -> list[dict[str, Any]]:
    rows = []
    for deck in range(6):
        rows.append({"deck": deck, "status": "ok", "error": None,
                     "deal": list(range(52)), "alex_jacks": deck % 3, "alex_clubs": deck + 2,
                     "exact_value": deck - 3, "exact_fair_value": float(deck > 2),
                     "exact_vs_random_fair_value": 0.5 + deck / 20,
                     "random_vs_exact_fair_value": 0.5 - deck / 20, "seconds": 1.5})
    return rows


def _batch_table(folder: Path) -> Sample:
    import pyarrow as pa
    import pyarrow.parquet as pq

    from tensorcfr.games.pasur.learning.analysis import _table16, load_batches

    batch = folder / "batch"
    batch.mkdir()
    pq.write_table(pa.Table.from_pylist(_batch_rows()), str(batch / "decks.parquet"))

    def read() -> Any:
        rows = load_batches([batch])
        return _table16(rows, 2, 1)

    return Sample(batch / "decks.parquet", read)


def _batch_journal(folder: Path) -> Sample:
    from tensorcfr.games.pasur.batch import _read_journal, write_table

    out = folder / "batchrun"
    out.mkdir()
    path = out / "decks.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in _batch_rows()))

    def read() -> Any:
        write_table(out)  # what a run does with the journal
        return _read_journal(path)

    return Sample(path, read)


def _tournament_rows() -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    for deal in range(2):
        rows.append({"id": f"exact/{deal}", "kind": "exact", "deal": deal, "status": "ok",
                     "error": None, "exact_value": 3 - deal, "states": 10, "seconds": 0.1})
        for seating in (0, 1):
            rows.append({"id": f"game/random/greedy/{deal}/{seating}", "a": "random",
                         "b": "greedy", "deal": deal, "seating": seating,
                         "alex": "random" if seating == 0 else "greedy",
                         "bob": "greedy" if seating == 0 else "random", "game_seed": deal,
                         "kind": "game", "status": "ok", "error": None, "utility": 2 - seating,
                         "alex_points": 10, "bob_points": 8, "a_diff": 1,
                         "alex_move_seconds_median": 0.01, "bob_move_seconds_median": 0.02,
                         "plays": 48, "play_codes": [deal + seating] * 48, "seconds": 0.5})
    return rows


def _tournament_journal(folder: Path) -> Sample:
    from tensorcfr.games.pasur.tournament import (
        TournamentSettings,
        _Deals,
        _journal_rows,
        _write_tables,
    )

    out = folder / "tournament"
    out.mkdir()
    path = out / "games.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in _tournament_rows()))
    settings = TournamentSettings(agents=("random", "greedy"), out=out, deals=2,
                                  in_process=True)

    def read() -> Any:
        _write_tables(settings, _Deals(settings))  # what a run does with the journal
        return _journal_rows(path)

    return Sample(path, read)


def _finished_tournament(folder: Path) -> Path:
    """A tournament folder as a run leaves it: identity, journal and tables (two deals)."""
    from tensorcfr.games.pasur.tournament import (IDENTITY_FILE, TournamentSettings, _Deals,
                                                  _identity, _write_tables)

    out = folder / "finished"
    out.mkdir()
    settings = TournamentSettings(agents=("random", "greedy"), out=out, deals=2,
                                  in_process=True)
    (out / "games.jsonl").write_text("".join(json.dumps(row) + "\n"
                                             for row in _tournament_rows()))
    (out / IDENTITY_FILE).write_text(json.dumps(_identity(settings, "")))
    _write_tables(settings, _Deals(settings))
    return out


def _tournament_games_table(folder: Path) -> Sample:
    from tensorcfr.games.pasur.tournament_merge import MergeSettings, merge_tournaments

    out = _finished_tournament(folder)
    return Sample(out / "games.parquet",
                  lambda: merge_tournaments(MergeSettings(runs=(out,))))


def _tournament_games_for_price(folder: Path) -> Sample:
    from tensorcfr.games.pasur.tournament_price import _read_run

    out = _finished_tournament(folder)
    return Sample(out / "games.parquet", lambda: _read_run(out))


def _tournament_price_table(folder: Path) -> Sample:
    import pyarrow as pa
    import pyarrow.parquet as pq

    from tensorcfr.games.pasur.tournament_merge import MergeSettings, merge_tournaments
    from tensorcfr.games.pasur.tournament_price import PRICE_GAMES_TABLE, _schemas, game_losses

    out = _finished_tournament(folder)
    rows = []
    for g in pq.read_table(str(out / "games.parquet")).to_pylist():
        values = [g["exact_value"]] * 20 + [g["utility"]] * 29  # 49 position values
        alex, bob = game_losses(values)
        rows.append({key: g[key] for key in ("a", "b", "deal", "seating", "alex", "bob",
                                             "exact_value", "utility")} | {
            "values": values, "alex_loss": alex, "bob_loss": bob,
            "alex_loss_total": sum(alex), "bob_loss_total": sum(bob), "seconds": 0.01,
            "status": "ok", "error": None})
    path = out / PRICE_GAMES_TABLE
    pq.write_table(pa.Table.from_pylist(rows, schema=_schemas()[0]), str(path))
    return Sample(path, lambda: merge_tournaments(MergeSettings(runs=(out,))))


def _price_journal(folder: Path) -> Sample:
    import pyarrow.parquet as pq

    from tensorcfr.games.pasur.tournament_price import (PRICE_JOURNAL, PriceSettings, _codes_crc,
                                                        _game_id, run_price_analysis)

    out = _finished_tournament(folder)
    rows = []
    for g in pq.read_table(str(out / "games.parquet")).to_pylist():
        rows.append({"id": _game_id(g), "crc": _codes_crc(g["play_codes"]), "status": "ok",
                     "error": None, "seconds": 0.01,
                     "values": [g["exact_value"]] * 20 + [g["utility"]] * 29})
    path = out / PRICE_JOURNAL
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return Sample(path, lambda: run_price_analysis(PriceSettings(run=out)))


def _round_value_net(folder: Path, member: str) -> Sample:
    from tensorcfr.games.pasur.playing.round_search import RoundValueNet

    net = RoundValueNet.zero()
    net.w3[:] = 0.5  # not all zeros: a damaged value shows
    net.manifest.update({"kind": "trained", "rmse": 3.5})
    out = folder / "round_value"
    net.save(out)
    return Sample(out / member, lambda: RoundValueNet.load(out))


def _round_value_rows(folder: Path) -> Sample:
    import numpy as np

    from tensorcfr.games.pasur.learning.round_value import _load_rows, _save_rows
    from tensorcfr.games.pasur.playing.round_search_kernel import NUM_FEATURES

    path = folder / "rows.npz"
    identity = {"seed": 0, "futures": 4, "format": "round-value-rows-1"}
    rng = np.random.default_rng(0)
    _save_rows(path, identity, rng.random((12, NUM_FEATURES), dtype=np.float32),
               rng.random(12, dtype=np.float32), np.repeat(np.arange(3), 4), 3)
    return Sample(path, lambda: _load_rows(path, identity))


def _run_identity(folder: Path) -> Sample:
    from tensorcfr.utils.journal import check_run_identity

    path = folder / "tournament.json"
    identity = {"format": "tensorcfr-pasur-tournament-1", "agents": ["random", "greedy"],
                "seed": 0, "deals": 2, "determinizations": 32, "seconds_per_move": None,
                "simulations": 1000, "model": None}
    path.write_text(json.dumps(identity))
    return Sample(path, lambda: check_run_identity(path, identity, what="tournament"))


def _game_record(folder: Path) -> Sample:
    from tensorcfr.errors import InvalidRecordError
    from tensorcfr.games.pasur.engine import rules
    from tensorcfr.games.pasur.engine.records import (
        load_record,
        record_from_state,
        replay_record,
        save_record,
    )

    state = rules.initial_state(rules.random_deal(3))
    while not state.is_terminal:
        state = rules.apply_action(state, rules.legal_actions(state)[0])
    path = folder / "game.json"
    save_record(path, record_from_state(state))

    def read() -> Any:  # as `pasur replay` reports it: the file, then the reason
        try:
            return replay_record(load_record(path))
        except InvalidRecordError as exc:
            raise InvalidRecordError(f"{path}: {exc}") from None

    return Sample(path, read)


def _booster(num_features: int) -> Any:
    import numpy as np
    import xgboost

    rng = np.random.default_rng(0)
    x = rng.random((64, num_features), dtype=np.float32)
    return xgboost.train({"max_depth": 2, "nthread": 1}, xgboost.DMatrix(x, label=x[:, 0]),
                         num_boost_round=2)


def _hidden_model_folder(folder: Path) -> Path:
    from tensorcfr.games.pasur.learning import hidden_model as hm

    model = folder / "hidden"
    model.mkdir()
    (model / hm.MODEL_FILE).write_bytes(bytes(_booster(hm.NUM_FEATURES).save_raw("ubj")))
    (model / hm.MANIFEST).write_text(json.dumps({
        "format": hm.MODEL_FORMAT, "version": hm.MODEL_VERSION, "model_file": hm.MODEL_FILE,
        "features": {"name": hm.FEATURE_SET, "columns": hm.FEATURE_COLUMNS},
        "target": hm.TARGET, "teacher": "exact", "games": 2, "seed": 0, "rounds": 2}))
    return model


def _hidden_model_reader(folder: Path) -> Callable[[], Any]:
    import numpy as np

    from tensorcfr.games.pasur.learning.hidden_model import NUM_FEATURES, load_hidden_model

    return lambda: load_hidden_model(folder).predict(np.zeros((1, NUM_FEATURES), np.float32))


def _hidden_manifest(folder: Path) -> Sample:
    from tensorcfr.games.pasur.learning.hidden_model import MANIFEST

    model = _hidden_model_folder(folder)
    return Sample(model / MANIFEST, _hidden_model_reader(model))


def _hidden_booster(folder: Path) -> Sample:
    from tensorcfr.games.pasur.learning.hidden_model import MODEL_FILE

    model = _hidden_model_folder(folder)
    return Sample(model / MODEL_FILE, _hidden_model_reader(model))


def _policy_model_folder(folder: Path) -> Path:
    from tensorcfr.games.pasur.learning import policy_model as pm

    model = folder / "policy"
    model.mkdir()
    (model / pm.MODEL_FILE).write_bytes(bytes(_booster(pm.NUM_FEATURES).save_raw("ubj")))
    (model / pm.MANIFEST).write_text(json.dumps({
        "format": pm.MODEL_FORMAT, "version": pm.MODEL_VERSION, "model_file": pm.MODEL_FILE,
        "features": {"name": pm.FEATURE_SET, "columns": pm.FEATURE_COLUMNS}}))
    return model


def _policy_manifest(folder: Path) -> Sample:
    from tensorcfr.games.pasur.learning.policy_model import MANIFEST, load_policy_model

    model = _policy_model_folder(folder)
    return Sample(model / MANIFEST, lambda: load_policy_model(model))


def _dcfr_run_folder(folder: Path) -> Path:
    """A DCFR run folder (manifest and a 12-row strategy table of the core columns), as
    ``pasur solve --method dcfr --out`` writes and ``selfplay/serve --table`` read."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from tensorcfr.games.pasur.solving.dcfr_run import RUN_FORMAT, RUN_MANIFEST, RUN_TABLE
    from tensorcfr.games.pasur.solving import strategy_table as st

    run = folder / "run"
    run.mkdir()
    n = 12
    columns = {"round": [0] * n, "ply": [i % 8 for i in range(n)],
               "turn": [(i % 8) // 2 for i in range(n)], "player": [i % 2 for i in range(n)],
               "node": list(range(n)), "edge": list(range(n)), "card": list(range(n)),
               "captured_mask": [0] * n, "captured": [[] for _ in range(n)],
               "probability": [0.5] * n, "reach": [1.0] * n, "node_value": [0.0] * n,
               "action_value": [0.0] * n}
    metadata = {st._META_KEY: json.dumps({"format": st.TABLE_FORMAT,
                                          "version": st.TABLE_VERSION}).encode()}
    table = pa.Table.from_pydict(columns, schema=st.TABLE_SCHEMA.with_metadata(metadata))
    pq.write_table(table, str(run / RUN_TABLE))
    (run / RUN_MANIFEST).write_text(json.dumps({"format": RUN_FORMAT,
                                                "files": {"strategy_table": RUN_TABLE}}))
    return run


def _strategy_table(folder: Path) -> Sample:
    from tensorcfr.games.pasur.solving.dcfr_run import RUN_TABLE, check_run_folder

    run = _dcfr_run_folder(folder)
    return Sample(run / RUN_TABLE, lambda: check_run_folder(run))


def _dcfr_run_manifest(folder: Path) -> Sample:
    from tensorcfr.games.pasur.solving.dcfr_run import RUN_MANIFEST, check_run_folder

    run = _dcfr_run_folder(folder)
    return Sample(run / RUN_MANIFEST, lambda: check_run_folder(run))


def _rows_checkpoint(folder: Path) -> Sample:
    import numpy as np

    from tensorcfr.games.pasur.learning.hidden_model import NUM_FEATURES, load_rows_checkpoint

    path = folder / "rows.npz"
    rng = np.random.default_rng(0)
    np.savez(path, x=rng.random((12, NUM_FEATURES), dtype=np.float32),
             y=rng.random(12, dtype=np.float32), game=np.repeat(np.arange(3, dtype=np.int32), 4),
             games=3, ident="exact|0|8|pasur-hidden-v1")
    return Sample(path, lambda: load_rows_checkpoint(path))


# ----------------------------------------------------------------------------- Numeral211


def _small_config() -> Any:
    from tensorcfr.games.numeral211.game.config import GameConfig

    return GameConfig(ranks="9TA", suits=2, max_bets=(1, 1, 1))


def _bucket_map(folder: Path) -> Sample:
    from tensorcfr.games.numeral211.abstraction.abstractions import lossless_bucket_map
    from tensorcfr.games.numeral211.runs.run_abstract_solve import load_abstraction_file

    config = _small_config()
    path = folder / "buckets.npz"
    lossless_bucket_map(config).save(path)

    def read() -> Any:  # what `numeral211 solve --abstraction FILE` does with the file
        return load_abstraction_file(path, config)

    return Sample(path, read)


def _embedding(folder: Path) -> Sample:
    import numpy as np

    from tensorcfr.games.numeral211.abstraction.embedding_net import (
        EMBEDDING_FORMAT,
        EmbeddingFile,
        load_embedding,
        save_embedding,
    )
    from tensorcfr.games.numeral211.game.isomorphism import isomorphism

    config = _small_config()
    counts = isomorphism(config).isomorphic_classes()
    phi = {r: np.full((3, counts[r]), 1 / 3, dtype=np.float32) for r in (1, 2)}
    path = folder / "phi.npz"
    save_embedding(path, EmbeddingFile(config, phi, {"format": EMBEDDING_FORMAT,
                                                     "game": config.to_dict()}))
    return Sample(path, lambda: load_embedding(path))


def _numeral211_policy(folder: Path) -> Sample:
    from tensorcfr.games.numeral211.solving import solver as n211

    config = _small_config()
    game = n211.build_game(config)
    solver = n211.make_solver(game, "cfr+")
    solver.iterate(1)
    path = folder / "strategy.npz"
    n211.save_policy(path, game, solver.average_policy(), algo="cfr+", iterations=1)
    return Sample(path, lambda: n211.load_policy(path))


def _numeral211_checkpoint(folder: Path) -> Sample:
    from tensorcfr.games.numeral211.solving import solver as n211

    config = _small_config()
    game = n211.build_game(config)
    solver = n211.make_solver(game, "cfr+")
    solver.iterate(1)
    path = folder / "checkpoint.npz"
    n211.save_checkpoint(path, solver, config)
    return Sample(path, lambda: n211.load_checkpoint(path, n211.make_solver(game, "cfr+"),
                                                     config))


# ----------------------------------------------------------------------------- generic CFR


def _kuhn_solver() -> Any:
    from tensorcfr.core.solver import TensorCFRSolver
    from tensorcfr.games.openspiel.flatten import flatten_game

    solver = TensorCFRSolver(flatten_game("kuhn_poker"), "cfr+")
    solver.iterate(2)
    return solver


def _generic_policy(folder: Path) -> Sample:
    from tensorcfr.core.policy_io import load_policy, save_policy

    solver = _kuhn_solver()
    path = folder / "kuhn_policy.npz"
    save_policy(path, solver.tree, solver.average_policy())
    return Sample(path, lambda: load_policy(path))


def _generic_checkpoint(folder: Path) -> Sample:
    from tensorcfr.core.policy_io import read_checkpoint, save_checkpoint

    solver = _kuhn_solver()
    path = folder / "kuhn_checkpoint.npz"
    save_checkpoint(solver, path)

    def read() -> Any:
        data = read_checkpoint(path)
        data.check_tree(solver.tree)
        return data

    return Sample(path, read)


def _bench_results(folder: Path) -> Sample:
    from tensorcfr.bench.openspiel_bench import load_results

    path = folder / "openspiel_results.json"
    path.write_text(json.dumps(_SMALL_BENCH_RESULTS))
    # what `tensorcfr bench --render FILE` reads (the markdown report rendered in memory;
    # the plot, slower, is left out)
    return Sample(path, lambda: load_results(path))


_SMALL_BENCH_RESULTS: dict[str, Any] = {  # a real run's first game, two solvers, rounded
    "meta": {"config": {"solvers": ["ours", "openspiel_cpp"], "games": ["kuhn_poker"],
                        "reps": 2, "warmup": 2, "device": "cpu"}},
    "games": [{"key": "kuhn_poker", "game_string": "kuhn_poker", "nodes": 58, "terminals": 30,
               "infosets": 12, "max_depth": 5, "turn_based_wrapper": False, "count_s": 0.0677,
               "results": [
                   {"solver": "ours", "status": "ok", "setup_s": 0.6974, "first_iter_s": 0.0006,
                    "warmup_ms_per_iter": 0.22, "ms_per_iter": 0.0724,
                    "cpu_ms_per_iter": 0.0283, "ms_per_iter_reps": [0.0969, 0.0748],
                    "cpu_ms_per_iter_reps": [0.0406, 0.0379], "iterations_per_rep": 1364,
                    "baseline_rss_mb": 236.4062, "peak_rss_mb": 249.9727,
                    "peak_above_baseline_mb": 13.5664},
                   {"solver": "openspiel_cpp", "status": "ok", "setup_s": 0.0001,
                    "first_iter_s": 0.0001, "warmup_ms_per_iter": 0.076, "ms_per_iter": 0.0499,
                    "cpu_ms_per_iter": 0.0251, "ms_per_iter_reps": [0.059, 0.0568],
                    "cpu_ms_per_iter_reps": [0.029, 0.0264], "iterations_per_rep": 3947,
                    "baseline_rss_mb": 28.4102, "peak_rss_mb": 28.625,
                    "peak_above_baseline_mb": 0.2148}]}]}


READERS: tuple[FileReader, ...] = (
    FileReader("deck file", "csv", _deck_file),
    FileReader("paper MM table", "csv", _mm_table),
    FileReader("batch table (decks.parquet)", "parquet", _batch_table),
    FileReader("batch journal (decks.jsonl)", "jsonl", _batch_journal),
    FileReader("tournament journal (games.jsonl)", "jsonl", _tournament_journal),
    FileReader("run identity (tournament.json)", "json", _run_identity),
    FileReader("tournament games table (games.parquet), as a merge reads it", "parquet",
               _tournament_games_table),
    FileReader("tournament games table (games.parquet), as the price analysis reads it",
               "parquet", _tournament_games_for_price),
    FileReader("tournament price table (price_games.parquet)", "parquet",
               _tournament_price_table),
    FileReader("price analysis journal (price.jsonl)", "jsonl", _price_journal),
    FileReader("round-search value network (round_value.npz)", "npz",
               lambda folder: _round_value_net(folder, "round_value.npz")),
    FileReader("round-search value network manifest", "json",
               lambda folder: _round_value_net(folder, "manifest.json")),
    FileReader("train-round-value rows.npz", "npz", _round_value_rows),
    FileReader("game record", "json", _game_record),
    FileReader("hidden-model manifest", "json", _hidden_manifest),
    FileReader("hidden-model booster", "binary", _hidden_booster),
    FileReader("policy-model manifest", "json", _policy_manifest),
    FileReader("train-hidden rows.npz", "npz", _rows_checkpoint),
    FileReader("Pasur strategy table (strategy.parquet)", "parquet", _strategy_table),
    FileReader("DCFR run manifest", "json", _dcfr_run_manifest),
    FileReader("Numeral211 bucket map", "npz", _bucket_map, json_member="meta"),
    FileReader("Numeral211 Phi (embedding)", "npz", _embedding, json_member="meta"),
    FileReader("Numeral211 strategy", "npz", _numeral211_policy, json_member="meta"),
    FileReader("Numeral211 checkpoint", "npz", _numeral211_checkpoint, json_member="meta"),
    FileReader("generic CFR policy", "npz", _generic_policy),
    FileReader("generic CFR checkpoint", "npz", _generic_checkpoint),
    FileReader("benchmark results (bench --render)", "json", _bench_results),
)
"""Every file reader; the fuzz test covers each."""
