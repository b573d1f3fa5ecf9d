"""Hidden-hand agents: greedy, pimc, pimc-infer, hidden-model (and the match runner).

Whole games for the fast agents; the PIMC agents play the last rounds of games (their exact
solves of round-0 positions take seconds each).
"""

from __future__ import annotations

import math
import random
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tensorcfr.cli.main import app
from tensorcfr.errors import TensorCFRError
from tensorcfr.games.pasur.agents import AGENT_NAMES, AgentOptions, make_agent
from tensorcfr.games.pasur.engine import rules
from tensorcfr.games.pasur.engine.cards import parse_card
from tensorcfr.games.pasur.engine.determinize import determinize
from tensorcfr.games.pasur.engine.observation import Observation, observe
from tensorcfr.games.pasur.learning.hidden_model import (
    HiddenModelAgent,
    TrainHiddenSettings,
    run_train_hidden,
)
from tensorcfr.games.pasur.playing.agent import ExactAgent, RandomAgent
from tensorcfr.games.pasur.playing.greedy import GreedyAgent
from tensorcfr.games.pasur.playing.match import play_game, play_hidden_games
from tensorcfr.games.pasur.playing.pimc import PimcAgent
from tensorcfr.games.pasur.playing.pimc_infer import (
    PimcInferAgent,
    opponent_hand_log_likelihood,
    opponent_plays_this_round,
)

runner = CliRunner()


def cards(text: str) -> tuple[int, ...]:
    return tuple(sorted(parse_card(t) for t in text.split()))


def position(hand: str, pool: str, play_index: int = 8, player: int = 0) -> Observation:
    """A constructed observation: ``hand`` and ``pool``; everything else unseen."""
    mine, table = cards(hand), cards(pool)
    unseen = tuple(c for c in range(52) if c not in mine and c not in table)
    return Observation(player=player, play_index=play_index, initial_pool=table, hand=mine,
                       pool=table, history=(), piles=((), ()), surs=(0, 0),
                       last_capturer=None, opponent_hand_size=4, unseen=unseen)


def play(action: rules.Action) -> str:
    return action.notation()


def state_at(seed: int, play_index: int) -> rules.GameState:
    """The state of deal ``seed`` after ``play_index`` random plays."""
    state = rules.initial_state(rules.random_deal(seed))
    rng = random.Random(seed)
    while state.play_index < play_index:
        state = rules.apply_action(state, rng.choice(rules.legal_actions(state)))
    return state


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("hidden_model")
    run_train_hidden(TrainHiddenSettings(games=3, out=folder, rounds=40, seed=3))
    return folder


# --------------------------------------------------------------------------- greedy


def test_greedy_points_before_clubs() -> None:
    # Ts+Ah scores the Ace (1 point); 7d+4c takes a club but no point
    assert play(GreedyAgent().choose(position("7d Ts", "Ah 4c"))) == "Ts+Ah"


def test_greedy_clubs_break_a_tie_in_points() -> None:
    # no points either way: 7d+4c takes a club, 6h+5s does not (6h comes first in order)
    assert play(GreedyAgent().choose(position("6h 7d", "4c 5s"))) == "7d+4c"


def test_greedy_counts_a_sur_but_not_in_the_last_round() -> None:
    # 5h+Ah+5s sweeps the pool (Sur 5 + Ace 1) against Td+Ah's 4 points; in round 6 there
    # is no Sur, so Td+Ah's 4 points beat the sweep's 1
    assert play(GreedyAgent().choose(position("5h Td", "Ah 5s"))) == "5h+Ah+5s"
    assert play(GreedyAgent().choose(position("5h Td", "Ah 5s", play_index=40))) == "Td+Ah"


def test_greedy_leaves_fewest_cards_on_the_pool() -> None:
    # 4d+7s leaves three cards, 6h+2d+3s two; no points, no clubs either way
    assert play(GreedyAgent().choose(position("4d 6h", "7s 2d 3s Kh"))) == "6h+2d+3s"


def test_greedy_captures_rather_than_lays_on_equal_points() -> None:
    assert play(GreedyAgent().choose(position("3d 7h", "4s Kh"))) == "7h+4s"


def test_greedy_lays_the_least_useful_card() -> None:
    agent = GreedyAgent()
    # lowest points: keep the Ace and the 2 of clubs
    assert play(agent.choose(position("Ad 2c 5d", "Kh"))) == "5d"
    # a non-club before a club
    assert play(agent.choose(position("5c 5d", "Kh"))) == "5d"
    # fewest threats: 3 unseen Kings can take Kd, 8 cards (four 6s, four Jacks) can take 5d
    assert play(agent.choose(position("5d Kd", "Qh"))) == "Kd"
    # equal keys: the first in legal order
    assert play(agent.choose(position("5d 5h", "Kh"))) == "5d"


def test_greedy_batch_matches_single_choices() -> None:
    agent = GreedyAgent()
    observations = []
    for seed in range(3):
        state = rules.initial_state(rules.random_deal(seed))
        while not state.is_terminal:
            obs = observe(state, state.player)
            observations.append(obs)
            state = rules.apply_action(state, agent.choose(obs))
    assert agent.choose_many(observations) == [agent.choose(o) for o in observations]


# --------------------------------------------------------------------------- whole games


@pytest.mark.parametrize("name", ["random", "greedy", "hidden-model", "exact"])
def test_fast_agents_play_whole_legal_games_from_both_seats(name: str, model_dir: Path
                                                            ) -> None:
    options = AgentOptions(model=model_dir)
    agent = make_agent(name, options)
    for seed in range(1 if name == "exact" else 2):  # exact solves each game: one is enough
        for alex, bob in ((agent, RandomAgent()), (RandomAgent(), agent)):
            result = play_game(rules.random_deal(seed), alex, bob, seed)  # raises if illegal
            assert result.state.is_terminal and len(result.actions) == rules.NUM_PLAYS
            assert result.utility == result.alex_points - result.bob_points
            assert len(result.move_seconds[0]) == len(result.move_seconds[1]) == 24


@pytest.mark.parametrize("name", ["pimc", "pimc-infer"])
def test_pimc_agents_play_legal_moves_from_both_seats(name: str) -> None:
    agent = make_agent(name, AgentOptions(determinizations=2))
    start = state_at(5, 36)
    for alex, bob in ((agent, GreedyAgent()), (GreedyAgent(), agent)):
        result = play_game(start.deal, alex, bob, seed=1, start=start)
        assert result.state.is_terminal
        assert len(result.move_seconds[0]) == len(result.move_seconds[1]) == 6


def test_play_hidden_games_is_seeded() -> None:
    deal = rules.random_deal(4)
    first = [r.utility for r in play_hidden_games(deal, RandomAgent(), RandomAgent(), 5, 10)]
    again = [r.utility for r in play_hidden_games(deal, RandomAgent(), RandomAgent(), 5, 10)]
    assert first == again
    assert [r.seed for r in play_hidden_games(deal, RandomAgent(), GreedyAgent(), 3, 7)] == \
        [7, 8, 9]


def test_the_true_state_goes_only_to_agents_that_see_everything() -> None:
    seen: list[object] = []

    class Spy(RandomAgent):
        def choose(self, obs, state=None):  # type: ignore[no-untyped-def]
            seen.append(state)
            return super().choose(obs)

    spy = Spy()
    play_game(rules.random_deal(2), spy, GreedyAgent(), seed=0)
    assert len(seen) == 24 and all(s is None for s in seen)
    spy.sees_everything = True
    seen.clear()
    play_game(rules.random_deal(2), spy, GreedyAgent(), seed=0)
    assert all(isinstance(s, rules.GameState) for s in seen)


# --------------------------------------------------------------------------- determinism


@pytest.mark.parametrize("name", ["random", "greedy", "pimc", "pimc-infer"])
def test_agents_are_deterministic_given_the_seed(name: str) -> None:
    state = state_at(7, 42)
    obs = observe(state, state.player)
    choices = []
    for _ in range(2):
        agent = make_agent(name, AgentOptions(determinizations=3))
        agent.reset(11)
        choices.append(agent.choose(obs))
        if name.startswith("pimc"):
            choices.append(tuple((e.action, e.value, e.samples)
                                 for e in agent.estimates(obs) or []))
    assert choices[0] == choices[2 if name.startswith("pimc") else 1]
    if name.startswith("pimc"):
        assert choices[1] == choices[3]


@pytest.mark.parametrize("name", ["random", "greedy", "pimc", "pimc-infer", "hidden-model"])
def test_honest_agents_never_read_hidden_cards(name: str, model_dir: Path) -> None:
    """Two states that differ only in hidden cards give the same choice, even when the true
    state is (wrongly) handed to the agent."""
    for seed, at in ((3, 41), (6, 44)):
        state = state_at(seed, at)
        obs = observe(state, state.player)
        other = determinize(obs, random.Random(99))
        assert other.hands[1 - state.player] != state.hands[1 - state.player] or \
            other.deal != state.deal
        assert observe(other, other.player) == obs
        choices = []
        for truth in (state, other):
            agent = make_agent(name, AgentOptions(determinizations=2, model=model_dir))
            assert not agent.sees_everything
            agent.reset(5)
            choices.append(agent.choose(obs, truth))
        assert choices[0] == choices[1]


# --------------------------------------------------------------------------- pimc


def test_pimc_with_the_true_state_plays_like_exact() -> None:
    pimc, exact = PimcAgent(determinizations=1), ExactAgent()
    checked = 0
    for seed in range(3):
        state = state_at(seed, 34)
        while not state.is_terminal:
            obs = observe(state, state.player)
            estimates = pimc.estimates_from_states(obs, [state])
            best = max(e.value for e in estimates)
            pimc_choice = next(e.action for e in estimates if e.value == best)
            assert pimc_choice == exact.choose(obs, state)
            assert [e.action for e in estimates] == obs.legal_actions()
            assert all(e.samples == 1 for e in estimates)
            checked += 1
            state = rules.apply_action(state, random.Random(checked).choice(
                rules.legal_actions(state)))
    assert checked == 3 * 14


def test_pimc_values_are_from_the_movers_side() -> None:
    state = state_at(2, 45)  # Bob to move
    assert state.player == 1
    obs = observe(state, 1)
    estimates = PimcAgent(1).estimates_from_states(obs, [state])
    from tensorcfr.games.pasur.solving.exact import solve_exact

    truth = dict(solve_exact(state).action_values(state))
    assert [e.value for e in estimates] == [-truth[e.action] for e in estimates]


def test_pimc_time_budget_still_draws_once() -> None:
    agent = PimcAgent(determinizations=50, seconds_per_move=1e-9)
    agent.reset(0)
    state = state_at(1, 43)
    estimates = agent.estimates(observe(state, state.player))
    assert estimates and all(e.samples == 1 for e in estimates)


def test_bad_options_raise_one_line_errors() -> None:
    with pytest.raises(TensorCFRError, match="--determinizations must be between 1"):
        AgentOptions(determinizations=0)
    with pytest.raises(TensorCFRError, match="unknown agent"):
        make_agent("nobody")
    with pytest.raises(TensorCFRError, match="train-hidden"):
        HiddenModelAgent(Path("/nonexistent/model"))
    assert {"greedy", "pimc", "pimc-infer", "hidden-model"} <= set(AGENT_NAMES)


# --------------------------------------------------------------------------- pimc-infer


def _constructed_inference_position() -> tuple[Observation, tuple[int, ...]]:
    """Round 1: Alex took Kc with Kd; Bob took 4d with 7h (0 points) while a 10 or a 6
    would have taken the Ace and a Jack the Ace and the 4: a greedy-like Bob holds none."""
    pool = [parse_card(c) for c in "Ah 4d Kc Qh".split()]
    alex = [parse_card(c) for c in "Kd 2s 5c 9h".split()]
    bob = [parse_card(c) for c in "7h 3s 8s Qs".split()]
    rest = [c for c in range(52) if c not in pool + alex + bob]
    deal = tuple(pool + alex + bob + rest)
    state = rules.initial_state(deal)
    state = rules.apply_action(state, rules.Action(parse_card("Kd"), (parse_card("Kc"),)))
    state = rules.apply_action(state, rules.Action(parse_card("7h"), (parse_card("4d"),)))
    return observe(state, 0), tuple(sorted(state.hands[1]))


def test_inference_favours_the_true_hand() -> None:
    obs, true_hand = _constructed_inference_position()
    plays = opponent_plays_this_round(obs)
    assert len(plays.views) == 1
    true_ll = opponent_hand_log_likelihood(plays, true_hand)
    rng = random.Random(0)
    sampled = [opponent_hand_log_likelihood(plays, rng.sample(obs.unseen, 3))
               for _ in range(400)]
    top = max(sampled)
    log_mean = top + math.log(sum(math.exp(x - top) for x in sampled) / len(sampled))
    # the true hand is more likely than an average uniform hand (log-likelihood ratio > 0.3)
    assert true_ll - log_mean > 0.3
    # a hand with the 10 of diamonds (it would have taken Ah for 4 points) is far less likely
    bad = cards("Td 3s 8s")
    assert opponent_hand_log_likelihood(plays, bad) < true_ll - 1
    # the resampled draws hold a 10, a 6 or a Jack less often than uniform draws
    agent = PimcInferAgent(determinizations=8)
    hands, weights = agent.weighted_hands(obs, 400, random.Random(1))
    risky = [any(c // 4 in (5, 9, 10) for c in h) for h in hands]
    uniform_share = sum(risky) / len(risky)
    weighted_share = sum(w for w, r in zip(weights, risky) if r) / sum(weights)
    assert weighted_share < uniform_share - 0.15


def test_inference_weighting_stops_at_its_deadline() -> None:
    """With a time budget the weighting stops at its share of it (pimc-infer at K = 1,000
    and 0.05 s a move used to weigh 8,000 hands, ~1 s): a deadline already passed weighs
    only the first CANDIDATES_PER_DRAW hands, the same ones as without a deadline."""
    obs, _ = _constructed_inference_position()
    agent = PimcInferAgent(determinizations=8)
    full_hands, full_weights = agent.weighted_hands(obs, 100, random.Random(3))
    hands, weights = agent.weighted_hands(obs, 100, random.Random(3), deadline=0.0)
    assert len(full_hands) == 100 and len(hands) == agent.candidates_per_draw
    top = max(full_weights[:len(hands)])
    assert hands == full_hands[:len(hands)]
    assert weights == pytest.approx([w / top for w in full_weights[:len(hands)]])


def test_inference_is_uniform_before_the_opponent_plays_this_round() -> None:
    state = state_at(4, 16)  # Alex's first play of round 3
    obs = observe(state, 0)
    _, weights = PimcInferAgent(4).weighted_hands(obs, 20, random.Random(0))
    assert weights == [1.0] * 20


# --------------------------------------------------------------------------- hidden-model


def test_hidden_model_trains(model_dir: Path) -> None:
    import json

    manifest = json.loads((model_dir / "manifest.json").read_text())
    assert manifest["teacher"] == "exact" and manifest["rows"]["train"] > 100
    # squared training error well below the target's variance: not a constant predictor
    assert manifest["rmse"]["train"] ** 2 < 0.6 * manifest["target_std"]["train"] ** 2
    agent = HiddenModelAgent(model_dir)
    obs = position("Ts 7d", "Ah 4c")
    assert agent.choose(obs) in obs.legal_actions()


def test_hidden_model_batch_matches_single_choices(model_dir: Path) -> None:
    agent = HiddenModelAgent(model_dir)
    state = rules.initial_state(rules.random_deal(8))
    observations = []
    while not state.is_terminal:
        obs = observe(state, state.player)
        observations.append(obs)
        state = rules.apply_action(state, agent.choose(obs))
    assert agent.choose_many(observations) == [agent.choose(o) for o in observations]


# --------------------------------------------------------------------------- CLI


def test_selfplay_cli_plays_hidden_agents(tmp_path: Path) -> None:
    result = runner.invoke(app, ["pasur", "selfplay", "--seed", "1", "--alex", "greedy",
                                 "--bob", "random", "--games", "3", "--json",
                                 "--records", str(tmp_path / "rec"), "--num-records", "1"])
    assert result.exit_code == 0, result.output
    import json

    out = json.loads(result.stdout)
    assert out["hidden_hands"] and out["games"] == 3
    assert out["alex_move_seconds"]["plays"] == 72
    assert (tmp_path / "rec" / "game_00000.json").is_file()


@pytest.mark.parametrize("args, message", [
    (["--alex", "nobody", "--bob", "random"], "unknown player"),
    (["--alex", "pimc", "--bob", "random", "-k", "0"], "--determinizations must be between 1"),
    (["--alex", "greedy", "--bob", "table"], "open-hands player"),
])
def test_selfplay_cli_bad_agents_fail_in_one_line(args: list[str], message: str) -> None:
    result = runner.invoke(app, ["pasur", "selfplay", "--seed", "1", "--games", "2", *args])
    assert result.exit_code == 2
    assert message in result.output and "Traceback" not in result.output
    assert len(result.output.strip().splitlines()) == 1


def test_train_hidden_cli_bad_input(tmp_path: Path) -> None:
    result = runner.invoke(app, ["pasur", "train-hidden", "--games", "2", "--out",
                                 str(tmp_path / "m"), "--teacher", "oracle"])
    assert result.exit_code == 2 and "--teacher" in result.output
    assert len(result.output.strip().splitlines()) == 1


def test_the_shipped_hidden_model_loads_out_of_the_box() -> None:
    agent = make_agent("hidden-model")
    obs = position("Ts 7d", "Ah 4c")
    assert agent.choose(obs) in obs.legal_actions()
