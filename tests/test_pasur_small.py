"""Small Pasur variants: the deck and deal parameters of ``python_pasur`` and the exact
exploitability of the agents on a tiny variant (issue 29, part 4)."""

from __future__ import annotations

import random
from math import comb

import pytest

pyspiel = pytest.importorskip("pyspiel")

from tensorcfr.games.openspiel.flatten import GameLoadError, load_game as load_spiel  # noqa: E402
from tensorcfr.games.pasur.engine import rules  # noqa: E402
from tensorcfr.games.pasur.playing import openspiel_game as og  # noqa: E402

TINY = og.PasurConfig(ranks="A5T", suits="cd", table_cards=1, hand_cards=2, rounds=1,
                      sorted_deal=True)
"""6 cards, 5 dealt: a few thousand histories (the CFR+ and agent tests)."""


def test_defaults_are_the_real_game() -> None:
    game = og.load_game()
    assert str(game) == "python_pasur()" and game.config == og.DEFAULT_CONFIG
    assert og.DEFAULT_CONFIG.is_default and og.DEFAULT_CONFIG.parameters() == {}
    assert game.num_distinct_actions() == og.NUM_DISTINCT_ACTIONS == 52 * 1059
    assert game.max_game_length() == 48 and game.max_utility() == og.MAX_UTILITY
    assert (og.DEFAULT_CONFIG.num_plays, og.DEFAULT_CONFIG.cards_dealt) == (48, 52)
    # every parameter spelled out at its default is the same game
    spelled = pyspiel.load_game("python_pasur(ranks=A23456789TJQK,suits=cdhs,table_cards=4,"
                                "hand_cards=4,rounds=6,clubs_for_bonus=7,sorted_deal=false)")
    assert str(spelled) == "python_pasur()"
    state = game.new_initial_state()
    assert len(state.chance_outcomes()) == 48


def test_variant_step_equals_the_reference_engine_under_the_defaults() -> None:
    """The variants' step, run with the real game's sizes, is rules.apply_legal_action."""
    rng = random.Random(5)
    for seed in range(3):
        state = rules.initial_state(rules.random_deal(seed))
        while not state.is_terminal:
            play = rng.choice(rules.legal_actions(state))
            expected = rules.apply_legal_action(state, play)
            got = og._apply_play_variant(og.DEFAULT_CONFIG, state, play)
            if (state.play_index + 1) % 8 == 0 and state.play_index + 1 < 48:
                # the variant leaves the next hands to the chance nodes
                expected = rules.GameState(**{**expected.__dict__, "hands": ((), ())})
            assert got == expected and got.history == expected.history
            state = rules.apply_legal_action(state, play)
        assert og.score(og.DEFAULT_CONFIG, state) == tuple(s.total for s in rules.score(state))


def test_sorted_deal_gives_every_set_its_uniform_probability() -> None:
    game = og.load_game(TINY)
    probabilities: dict[tuple[int, ...], float] = {}

    def walk(state, prob: float, cards: tuple[int, ...]) -> None:  # type: ignore[no-untyped-def]
        if not state.is_chance_node():
            probabilities[cards] = probabilities.get(cards, 0.0) + prob
            return
        for card, p in state.chance_outcomes():
            walk(state.child(card), prob * p, cards + (card,))

    walk(game.new_initial_state(), 1.0, ())
    # pool: 1 of 6 non-Jacks; Alex 2 of 5; Bob 2 of 3: each ordered by increasing card
    assert len(probabilities) == 6 * comb(5, 2) * comb(3, 2)
    assert all(p == pytest.approx(1 / len(probabilities)) for p in probabilities.values())
    for cards in probabilities:
        assert list(cards[1:3]) == sorted(cards[1:3]) and list(cards[3:5]) == sorted(cards[3:5])


@pytest.mark.parametrize("params, message", [
    ("ranks=A5X", "ranks holds 'X'"),
    ("ranks=AA5T", "ranks names 'A' twice"),
    ("suits=cz", "suits holds 'z'"),
    ("hand_cards=0", "hand_cards must be a whole number from 1 to 13"),
    ("hand_cards=5", "the deal needs 64 cards"),
    ("ranks=JQ,table_cards=5,hand_cards=1,rounds=1", "only 4 cards that are not Jacks"),
    ("clubs_for_bonus=6", "must be more than half the deck's 13 clubs"),
])
def test_bad_parameters_are_one_line_errors(params: str, message: str) -> None:
    with pytest.raises(og.PasurParameterError, match=message):
        pyspiel.load_game(f"python_pasur({params})")
    with pytest.raises(GameLoadError, match=message):
        load_spiel(f"python_pasur({params})")


def test_variant_resample_keeps_the_information_state() -> None:
    game = og.load_game(og.PasurConfig(ranks="A5TJ", suits="cdh", table_cards=1, hand_cards=2,
                                       rounds=2, clubs_for_bonus=3))
    rng = random.Random(1)
    for _ in range(5):
        state = game.new_initial_state()
        while not state.is_terminal():
            if state.is_chance_node():
                outcomes = state.chance_outcomes()
                state.apply_action(rng.choice(outcomes)[0])
                continue
            player = state.current_player()
            for replay in (True, False):
                drawn = state.resample_from_infostate(player, rng.random, replay=replay)
                assert drawn.information_state_string(player) == \
                    state.information_state_string(player)
                assert drawn.legal_actions() == state.legal_actions()
                assert len(drawn.history()) == (len(state.history()) if replay else 0)
            state.apply_action(rng.choice(state.legal_actions()))
        assert game.min_utility() <= state.returns()[0] <= game.max_utility()


MICRO = og.PasurConfig(ranks="A5T", suits="cd", table_cards=0, hand_cards=2, rounds=1,
                       sorted_deal=True)
"""6 cards, 4 dealt, no face-up card: 1,548 histories (OpenSpiel's exploitability in seconds)."""


def test_variant_play_from_a_built_resample_reaches_the_end() -> None:
    game = og.load_game(og.PasurConfig(ranks="A5TJ", suits="cdh", table_cards=1, hand_cards=2,
                                       rounds=2, clubs_for_bonus=3, sorted_deal=True))
    rng = random.Random(3)
    state = game.new_initial_state()
    while state.is_chance_node() or state.current_player() != 1:
        state.apply_action(rng.choice([a for a, _ in state.chance_outcomes()])
                           if state.is_chance_node() else rng.choice(state.legal_actions()))
    drawn = state.resample_from_infostate(1, rng.random, replay=False)
    while not drawn.is_terminal():  # the next round is dealt from the cards left
        drawn.apply_action(rng.choice([a for a, _ in drawn.chance_outcomes()])
                           if drawn.is_chance_node() else rng.choice(drawn.legal_actions()))
    assert len(drawn.rules_state.deal) == 9


def test_cfr_plus_and_an_agent_measured_exactly_and_checked_by_openspiel() -> None:
    from tensorcfr.games.pasur.exploitability import ExploitabilitySettings, run_exploitability

    report = run_exploitability(ExploitabilitySettings(
        config=MICRO, agents=("greedy", "exact"), check_every=25, cross_check="greedy"))
    assert report.size["histories"] == 1548 and report.size["infosets"] == 579
    assert report.solve["reached"] and report.solve["nash_conv"] <= 1e-3
    rows = {row.name: row for row in report.rows}
    assert rows["cfr+"].exploitability <= 5e-4
    assert rows["uniform"].exploitability > rows["greedy"].exploitability > \
        rows["cfr+"].exploitability
    assert rows["exact"].status == "not applicable" and rows["exact"].exploitability is None
    check = report.cross_check
    assert check is not None and check["policy"] == "greedy"
    assert check["openspiel"] == pytest.approx(rows["greedy"].exploitability, abs=1e-9)
    # exploitability is NashConv / 2, and the best responses bound the policy's value
    greedy = rows["greedy"]
    assert greedy.nash_conv == pytest.approx(2 * greedy.exploitability)
    # head to head: antisymmetric, and nobody gains on the equilibrium beyond its NashConv
    matches = report.head_to_head
    assert matches["greedy"]["uniform"] == pytest.approx(-matches["uniform"]["greedy"])
    assert matches["greedy"]["cfr+"] <= rows["cfr+"].nash_conv
    assert greedy.best_response_values[0] >= greedy.policy_value - 1e-12


def test_pimc_and_ismcts_tabulate_seeded_policies() -> None:
    from tensorcfr.games.pasur.exploitability import (ExploitabilitySettings,
                                                      _ismcts_choices, _pimc_choices,
                                                      representative_states)

    game = og.load_game(MICRO)
    states = representative_states(game)
    some = dict(list(states.items())[:20])
    settings = ExploitabilitySettings(config=MICRO, determinizations=8, simulations=20)
    pimc = _pimc_choices(some, settings, lambda done: None)
    assert pimc == _pimc_choices(some, settings, lambda done: None)  # seeded
    ismcts = _ismcts_choices(game, some, settings, lambda done: None)
    for key, state in some.items():
        assert set(pimc[key]) <= set(state.legal_actions())
        assert set(ismcts[key]) <= set(state.legal_actions())
        assert sum(ismcts[key].values()) == pytest.approx(1.0)


def test_cli_reports_json_and_refuses_bad_input(capsys: pytest.CaptureFixture[str],
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    import json

    from tests._cli_helpers import run_cli

    base = ["pasur", "agent-exploitability", "--ranks", "A5T", "--suits", "cd",
            "--table-cards", "0"]
    code, out, err = run_cli([*base, "--agents", "random,exact", "--cross-check", "none",
                              "--json"], capsys, monkeypatch)
    assert code == 0, err
    report = json.loads(out)
    assert report["threads"] == 1 and report["solve"]["reached"]
    names = [row["name"] for row in report["rows"]]
    assert names[0] == "cfr+" and names[-1] == "exact"
    code, out, err = run_cli([*base, "--agents", "random,nobody"], capsys, monkeypatch)
    assert code == 2 and err.count("\n") == 1 and "unknown agent 'nobody'" in err
    code, out, err = run_cli([*base, "--hand-cards", "4"], capsys, monkeypatch)
    assert code == 2 and err.count("\n") == 1 and "the deal needs 8 cards" in err
