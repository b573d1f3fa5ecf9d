"""Game records (records.py): format, file errors, and replay of the 105 reference games."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any, Callable

import pytest

from tensorcfr.errors import InvalidRecordError, TensorCFRError
from tensorcfr.games.pasur.engine.records import (
    GameRecord,
    load_record,
    parse_record,
    record_from_state,
    record_to_json,
    replay_record,
    save_record,
)
from tensorcfr.games.pasur.engine.rules import (
    Action,
    apply_action,
    initial_state,
    legal_actions,
    play_game,
    random_deal,
    score,
)

DATA = Path(__file__).parent / "data"
EXPECTED = json.loads((DATA / "records_expected.json").read_text())


def good_record() -> dict[str, Any]:
    """A fresh copy of the first reference game (the paper's Figure 13 game)."""
    return copy.deepcopy(EXPECTED[0]["record"])


def test_all_reference_records_replay_legally_with_the_expected_points() -> None:
    assert len(EXPECTED) == 105
    for entry in EXPECTED:
        result = replay_record(parse_record(entry["record"]))
        assert result.legal, (entry["source"], result.illegal_play)
        assert result.illegal_play is None
        assert result.state.is_terminal and result.plays_applied == 48
        assert (result.alex_points, result.bob_points) == \
            (entry["alex_points"], entry["bob_points"]), entry["source"]
        assert result.utility == entry["alex_points"] - entry["bob_points"]
        # all 52 cards end in the two piles, and the pool is empty
        piles = result.state.piles
        assert sorted(piles[0] + piles[1]) == list(range(52)) and result.state.pool == ()


def test_figure13_game_breakdown() -> None:
    result = replay_record(parse_record(good_record()))
    d = result.as_dict()
    assert d["alex_points"] == EXPECTED[0]["alex_points"]
    assert set(d["breakdown"]) == {"alex", "bob"}
    for side in ("alex", "bob"):
        b = d["breakdown"][side]
        parts = ("clubs_bonus", "aces", "jacks", "ten_of_diamonds", "two_of_clubs", "sur_points")
        assert sum(b[k] for k in parts) == b["total"]
    assert d["breakdown"]["alex"]["clubs"] + d["breakdown"]["bob"]["clubs"] == 13
    assert d["legal"] and d["complete"] and "illegal_play" not in d


def test_json_roundtrip_and_atomic_save(tmp_path: Path) -> None:
    record = parse_record(good_record())
    expected_plays = [{"card": p["card"], "captured": sorted(p["captured"])}
                      for p in good_record()["plays"]]
    assert record_to_json(record) == {"deal": good_record()["deal"], "plays": expected_plays}
    path = tmp_path / "sub" / "game.json"
    save_record(path, record)
    assert load_record(path) == record
    assert json.loads(path.read_text()) == record_to_json(record)
    assert [p.name for p in path.parent.iterdir()] == ["game.json"]  # no temporary left
    # str paths too, and overwriting
    save_record(str(path), record)
    assert load_record(str(path)) == record


def test_record_from_state_roundtrip(tmp_path: Path) -> None:
    final = play_game(random_deal(11), lambda s, acts: acts[len(acts) // 2])
    record = record_from_state(final)
    assert record.deal == final.deal and len(record.plays) == 48
    assert all(isinstance(a, Action) for a in record.plays)
    save_record(tmp_path / "g.json", record)
    result = replay_record(load_record(tmp_path / "g.json"))
    assert result.legal and result.state == final
    assert (result.alex, result.bob) == score(final)


def test_record_from_unfinished_state_is_rejected() -> None:
    state = initial_state(random_deal(1))
    state = apply_action(state, legal_actions(state)[0])
    with pytest.raises(InvalidRecordError, match="48 plays"):
        record_from_state(state)


def test_extra_keys_are_ignored() -> None:
    obj = good_record()
    obj["source"] = "somewhere"
    obj["plays"][0]["notation"] = "7d"
    assert parse_record(obj) == parse_record(good_record())


# --------------------------------------------------------------------------- illegal plays

def test_illegal_lay_of_a_card_that_can_capture() -> None:
    obj = good_record()
    # play 5: Bob's Ks takes Kd in the game; laying it instead is illegal
    assert obj["plays"][5] == {"card": 51, "captured": [49]}
    obj["plays"][5] = {"card": 51, "captured": []}
    result = replay_record(parse_record(obj))
    assert not result.legal and not result.state.is_terminal
    ill = result.illegal_play
    assert ill is not None
    assert (ill.number, ill.player, ill.player_name) == (5, 1, "Bob")
    assert ill.reason == "Ks can capture Kd, so it cannot be laid"
    assert ill.message() == "play 5 (Bob): Ks can capture Kd, so it cannot be laid"
    assert result.plays_applied == 5  # the state just before the illegal play
    d = result.as_dict()
    assert d["illegal_play"]["number"] == 5 and d["illegal_play"]["player"] == "Bob"
    assert d["legal"] is False and d["complete"] is False


def test_illegal_play_by_alex_card_not_in_hand() -> None:
    obj = good_record()
    obj["plays"][0] = {"card": 51, "captured": []}  # Ks is in Bob's hand
    ill = replay_record(parse_record(obj)).illegal_play
    assert ill is not None and ill.number == 0 and ill.player_name == "Alex"
    assert ill.reason.startswith("Ks is not in Alex's hand")


def test_illegal_wrong_capture_and_plays_swapped() -> None:
    obj = good_record()
    obj["plays"][1] = {"card": 9, "captured": [3, 0, 25]}  # 3d+Ac+As+7d sums to 12
    ill = replay_record(parse_record(obj)).illegal_play
    assert ill is not None and ill.number == 1 and "sum with it to 11" in ill.reason
    obj = good_record()
    obj["plays"][0], obj["plays"][1] = obj["plays"][1], obj["plays"][0]
    ill = replay_record(parse_record(obj)).illegal_play
    assert ill is not None and ill.number == 0


def test_duplicate_captured_card_is_an_illegal_play_not_a_format_error() -> None:
    obj = good_record()
    obj["plays"][1] = {"card": 9, "captured": [0, 0, 25]}
    record = parse_record(obj)
    ill = replay_record(record).illegal_play
    assert ill is not None and ill.reason == "the captured set names a card twice"


# --------------------------------------------------------------------------- invalid records

def _bad(mutate: Callable[[dict[str, Any]], Any]) -> dict[str, Any]:
    obj = good_record()
    mutate(obj)
    return obj


BAD_RECORDS = [
    ("not an object", [1, 2, 3], "JSON object"),
    ("string", "deal", "JSON object"),
    ("no deal", _bad(lambda o: o.pop("deal")), "no 'deal' key"),
    ("no plays", _bad(lambda o: o.pop("plays")), "no 'plays' key"),
    ("no keys", {}, "no 'deal' or 'plays' key"),
    ("deal not a list", _bad(lambda o: o.update(deal="Ac As")), "deal must be a list"),
    ("51 cards", _bad(lambda o: o["deal"].pop()), "has 51"),
    ("53 cards", _bad(lambda o: o["deal"].append(5)), "has 53"),
    ("duplicate card", _bad(lambda o: o["deal"].__setitem__(51, o["deal"][0])), "twice"),
    ("index out of range", _bad(lambda o: o["deal"].__setitem__(51, 52)), "out of range"),
    ("negative index", _bad(lambda o: o["deal"].__setitem__(51, -1)), "out of range"),
    ("jack in pool", _bad(lambda o: o.update(deal=[40] + [c for c in o["deal"] if c != 40])),
     "Jack"),
    ("float in deal", _bad(lambda o: o["deal"].__setitem__(0, 0.5)), "integer"),
    ("string in deal", _bad(lambda o: o["deal"].__setitem__(0, "0")), "integer"),
    ("bool in deal", _bad(lambda o: o["deal"].__setitem__(0, False)), "integer"),
    ("plays not a list", _bad(lambda o: o.update(plays={"card": 1})), "plays must be a list"),
    ("47 plays", _bad(lambda o: o["plays"].pop()), "48 plays, this one has 47"),
    ("49 plays", _bad(lambda o: o["plays"].append({"card": 1, "captured": []})), "has 49"),
    ("no plays at all", _bad(lambda o: o.update(plays=[])), "has 0"),
    ("play not an object", _bad(lambda o: o["plays"].__setitem__(3, [13, []])), "play 3 must be"),
    ("play without card", _bad(lambda o: o["plays"][4].pop("card")), "play 4 has no 'card'"),
    ("play without captured", _bad(lambda o: o["plays"][4].pop("captured")),
     "play 4 has no 'captured'"),
    ("card not int", _bad(lambda o: o["plays"][2].update(card="4d")), "play 2 card must be"),
    ("card float", _bad(lambda o: o["plays"][2].update(card=13.0)), "play 2 card must be"),
    ("card out of range", _bad(lambda o: o["plays"][2].update(card=60)), "out of range"),
    ("captured not a list", _bad(lambda o: o["plays"][1].update(captured=0)),
     "captured must be a list"),
    ("captured non-int", _bad(lambda o: o["plays"][1].update(captured=[0, None])),
     "captured card must be"),
    ("captured out of range", _bad(lambda o: o["plays"][1].update(captured=[0, 99])),
     "out of range"),
]


@pytest.mark.parametrize("name,obj,message", BAD_RECORDS, ids=[b[0] for b in BAD_RECORDS])
def test_invalid_records_raise_one_line_errors(name: str, obj: Any, message: str) -> None:
    with pytest.raises(InvalidRecordError, match=message) as info:
        parse_record(obj)
    assert isinstance(info.value, TensorCFRError) and info.value.exit_code == 2
    assert "\n" not in str(info.value)


@pytest.mark.parametrize("name,obj,message", BAD_RECORDS[:12], ids=[b[0] for b in BAD_RECORDS[:12]])
def test_invalid_record_files(tmp_path: Path, name: str, obj: Any, message: str) -> None:
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(obj))
    with pytest.raises(InvalidRecordError, match=message):
        load_record(path)


@pytest.mark.parametrize("content,message", [
    (b"", "empty"),
    (b"   \n", "empty"),
    (b"{not json}", "not valid JSON"),
    (b"{\"deal\": [1, 2,, 3]}", "not valid JSON"),
    (b"\xff\xfe\x00garbage", "UTF-8"),
    (b"[" * 100000, "nested too deeply|truncated"),
])
def test_unreadable_files(tmp_path: Path, content: bytes, message: str) -> None:
    path = tmp_path / "bad.json"
    path.write_bytes(content)
    with pytest.raises(InvalidRecordError, match=message) as info:
        load_record(path)
    assert "\n" not in str(info.value)


@pytest.mark.parametrize("cut", [1, 10, 150, 400, 900, -3, -1])
def test_truncated_files_are_reported_as_truncated(tmp_path: Path, cut: int) -> None:
    text = json.dumps(good_record(), indent=2)
    path = tmp_path / "cut.json"
    path.write_text(text[:cut])
    with pytest.raises(InvalidRecordError, match="truncated"):
        load_record(path)


def test_missing_file_and_directory(tmp_path: Path) -> None:
    with pytest.raises(InvalidRecordError, match="no such file"):
        load_record(tmp_path / "nope.json")
    with pytest.raises(InvalidRecordError, match="directory"):
        load_record(tmp_path)


def test_game_record_is_a_plain_dataclass() -> None:
    record = parse_record(good_record())
    assert isinstance(record, GameRecord)
    assert isinstance(record.deal, tuple) and len(record.deal) == 52
    assert record.plays[1] == Action(9, (0, 25))
