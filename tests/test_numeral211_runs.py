"""The Numeral211 runs as library calls (``games/numeral211/runs/run_*.py``: one settings
object, the same run as the CLI) and ``--storage classes|cells`` of ``numeral211 solve``
(stored in checkpoints, a resume with the other layout refused in one line)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from tensorcfr.errors import TensorCFRError
from tensorcfr.games.numeral211.game.config import GameConfig
from tensorcfr.games.numeral211.runs.run_abstract_solve import AbstractSolveSettings, solve_abstract
from tensorcfr.games.numeral211.runs.run_abstraction import (AbstractionSettings,
                                                             build_abstraction_file)
from tensorcfr.games.numeral211.runs.run_common import RunProgress
from tensorcfr.games.numeral211.runs.run_solve import SolveSettings, solve

from _cli_helpers import run_cli

SMALL = GameConfig(ranks="9TA", suits=2, max_bets=(2, 2, 2))
SMALL_ARGS = ["--ranks", "9TA", "--suits", "2", "--max-bets", "2"]
TINY = GameConfig(ranks="9TA", suits=2, max_bets=(1, 1, 1))
TINY_ARGS = ["--ranks", "9TA", "--suits", "2", "--max-bets", "1"]


def _one_line_error(code: int, out: str, err: str, fragment: str) -> None:
    assert code == 2 and out == "", err
    assert fragment in err and len(err.strip().splitlines()) == 1, err


def test_library_solve_is_the_cli_run(tmp_path, capsys, monkeypatch) -> None:
    events: list[RunProgress] = []
    strategy = tmp_path / "lib.npz"
    result = solve(SolveSettings(game=SMALL, iterations=4, eval_every=2, out=str(strategy)),
                   events.append)
    assert result.iterations == 4 and [p["iteration"] for p in result.curve] == [2, 4]
    assert result.exploitability == result.curve[-1]["exploitability"] > 0
    assert strategy.is_file()
    # progress: one start event, then one event per iteration, evaluations at 2 and 4
    assert [e.event for e in events] == ["start"] + ["iteration"] * 4
    assert [e.iteration for e in events] == [0, 1, 2, 3, 4]
    assert [e.evaluated for e in events[1:]] == [False, True, False, True]
    assert events[-1].exploitability == result.exploitability
    assert events[-1].exploitability_mbg == pytest.approx(result.exploitability * 200)
    code, out, err = run_cli(["numeral211", "solve", *SMALL_ARGS, "-n", "4", "--eval-every",
                              "2", "--json"], capsys, monkeypatch)
    assert code == 0, err
    cli = json.loads(out)
    assert [p["exploitability"] for p in cli["curve"]] == [
        p["exploitability"] for p in result.curve]
    lib = result.to_dict()
    assert set(cli) == set(lib)
    for key in ("game", "algo", "iterations", "exploitability", "exploitability_mbg",
                "memory_estimate_bytes", "sampling", "storage", "dtype", "threads"):
        assert cli[key] == lib[key], key
    assert lib["storage"] == "classes"
    # the average strategy of the returned solver is the strategy file's
    from tensorcfr.games.numeral211.solving import solver as n211

    _, policy, _ = n211.load_policy(strategy)
    ex = n211.exploitability(result.game, policy).exploitability
    assert ex == pytest.approx(result.exploitability, rel=1e-5)


def test_library_abstract_solve_is_the_cli_run(tmp_path, capsys, monkeypatch) -> None:
    bmap = tmp_path / "ehs.npz"
    deck = GameConfig(ranks="9TA", suits=2)  # `abstract` takes the deck only
    built = build_abstraction_file(AbstractionSettings(method="EHS", out=str(bmap), flop=2,
                                                       turn=3, game=deck))
    assert built.to_dict()["method"] == "ehs" and built.to_dict()["buckets"]["flop"] == 2
    code, out, err = run_cli(["numeral211", "abstract", "-m", "ehs", "--flop", "2", "--turn",
                              "3", "--ranks", "9TA", "--suits", "2", "--out",
                              str(tmp_path / "cli.npz"), "--json"], capsys, monkeypatch)
    assert code == 0, err
    assert {k: v for k, v in json.loads(out).items() if k not in ("seconds", "out")} == {
        k: v for k, v in built.to_dict().items() if k not in ("seconds", "out")}
    events: list[RunProgress] = []
    result = solve_abstract(AbstractSolveSettings(abstraction=str(bmap), game=TINY,
                                                  algo="cfr", iterations=4, eval_every=2),
                            events.append)
    assert events[0].event == "start" and events[0].label == "ehs cfr"
    assert result.iterations == 4 and result.to_dict()["solver"] == "cfr"
    code, out, err = run_cli(["numeral211", "solve", "--abstraction", str(bmap), *TINY_ARGS,
                              "--algo", "cfr", "-n", "4", "--eval-every", "2", "--json"],
                             capsys, monkeypatch)
    assert code == 0, err
    cli = json.loads(out)
    assert set(cli) == set(result.to_dict())
    assert [p["exploitability"] for p in cli["curve"]] == [
        p["exploitability"] for p in result.curve]


@pytest.mark.parametrize("make, fragment", [
    (lambda: SolveSettings(iterations=0), "--iterations"),
    (lambda: SolveSettings(dtype="float16"), "--dtype"),
    (lambda: SolveSettings(storage="boards"), "--storage"),
    (lambda: SolveSettings(checkpoint_minutes=0), "--checkpoint-minutes"),
    (lambda: SolveSettings(sample_boards=-1), "--sample-boards"),
    (lambda: AbstractSolveSettings(), "either --abstraction or --embedding"),
    (lambda: AbstractSolveSettings(abstraction="a.npz", algo="dcfr"), "cfr+"),
    (lambda: AbstractSolveSettings(abstraction="a.npz", storage="x"), "--storage"),
    (lambda: AbstractSolveSettings(abstraction="a.npz", iterations=0), "--iterations must be "
     "at least 1, got 0"),
    (lambda: AbstractSolveSettings(embedding="p.npz", eval_every=-1), "--eval-every"),
    (lambda: AbstractSolveSettings(embedding="p.npz", checkpoint_minutes=float("nan")),
     "--checkpoint-minutes"),
    (lambda: AbstractionSettings(method="kmeans", out="a.npz"), "--method"),
])
def test_settings_check_their_values(make, fragment) -> None:
    with pytest.raises(TensorCFRError, match=fragment):
        make()


def test_the_solve_settings_share_one_base() -> None:
    """The 17 options both solves take are one dataclass (checked once); each adds its own."""
    from dataclasses import fields

    from tensorcfr.games.numeral211.runs.run_common import RunSettings

    shared = {f.name for f in fields(RunSettings)}
    assert len(shared) == 17 and {"iterations", "save", "storage", "seed"} <= shared
    assert {f.name for f in fields(SolveSettings)} - shared == {"alpha", "beta", "gamma"}
    assert {"abstraction", "embedding", "cfr_br"} <= {f.name for f in
                                                      fields(AbstractSolveSettings)} - shared
    made = AbstractSolveSettings(abstraction="a.npz", dtype=" Float64 ", storage="CELLS")
    assert isinstance(made, RunSettings) and (made.dtype, made.storage) == ("float64", "cells")


def test_storage_option_checkpoints_and_resume(tmp_path, capsys, monkeypatch) -> None:
    ck = tmp_path / "cells.npz"
    base = ["numeral211", "solve", *SMALL_ARGS, "--eval-every", "2", "--json"]
    code, out, err = run_cli([*base, "-n", "2", "--storage", "cells", "--save", str(ck)],
                             capsys, monkeypatch)
    assert code == 0, err
    assert json.loads(out)["storage"] == "cells"
    meta = json.loads(str(np.load(ck)["meta"]))
    assert meta["storage"] == "cells"
    # resumed with the default (classes): refused, naming the option to give
    code, out, err = run_cli([*base, "-n", "4", "--resume", str(ck)], capsys, monkeypatch)
    _one_line_error(code, out, err, "--storage cells")
    # resumed with --storage cells: continues bitwise as a straight cell run
    code, out, err = run_cli([*base, "-n", "4", "--storage", "cells", "--resume", str(ck)],
                             capsys, monkeypatch)
    assert code == 0, err
    resumed = json.loads(out)
    code, out, err = run_cli([*base, "-n", "4", "--storage", "cells"], capsys, monkeypatch)
    straight = json.loads(out)
    assert [p["exploitability"] for p in resumed["curve"]] == [
        p["exploitability"] for p in straight["curve"]]
    # a cell checkpoint from before the storage was recorded: the shape error says what to do
    data = dict(np.load(ck))
    meta.pop("storage")
    data["meta"] = np.array(json.dumps(meta))
    old = tmp_path / "old.npz"
    np.savez(old, **data)
    code, out, err = run_cli([*base, "-n", "4", "--resume", str(old)], capsys, monkeypatch)
    _one_line_error(code, out, err, "--storage cells")
    code, out, err = run_cli([*base, "-n", "4", "--storage", "boards"], capsys, monkeypatch)
    _one_line_error(code, out, err, "--storage must be classes or cells")


def test_abstract_storage_is_part_of_the_run(tmp_path, capsys, monkeypatch) -> None:
    bmap = tmp_path / "ehs.npz"
    build_abstraction_file(AbstractionSettings(method="ehs", out=str(bmap), flop=2, turn=3,
                                               game=TINY))
    ck = tmp_path / "ck.npz"
    base = ["numeral211", "solve", "--abstraction", str(bmap), *TINY_ARGS, "--algo", "cfr",
            "--json"]
    code, out, err = run_cli([*base, "-n", "2", "--storage", "cells", "--save", str(ck)],
                             capsys, monkeypatch)
    assert code == 0, err
    assert json.loads(out)["storage"] == "cells"
    code, out, err = run_cli([*base, "-n", "4", "--resume", str(ck)], capsys, monkeypatch)
    _one_line_error(code, out, err, "--storage cells")
    code, out, err = run_cli([*base, "-n", "4", "--storage", "cells", "--resume", str(ck)],
                             capsys, monkeypatch)
    assert code == 0, err
    assert json.loads(out)["resumed_from"] == 2
