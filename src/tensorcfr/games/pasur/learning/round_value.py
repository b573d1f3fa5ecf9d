"""Training the round-end value network of the ``round-search`` agent.

The network (:class:`~..playing.round_search.RoundValueNet`, layout in
:mod:`..playing.round_search_kernel`) estimates, at the end of a round (both hands empty, so
everything it reads is public), **Alex's future points minus Bob's, expected over the deals
still possible**. Its training rows:

* games on random deals (seed ``seed + g``) with a mixed behaviour, so that the round ends
  a search visits (good and poor plays of both sides) are covered: per game a share
  ``eps`` of uniformly random plays (cycling :data:`RANDOM_SHARES`), the ``greedy`` play
  otherwise;
* at each round's end before rounds 2..6 (plays 8, 16, 24, 32, 40): the features, and as
  target the double-dummy value of the rest of the game (:mod:`..solving.double_dummy`:
  exact play by both, every card known) for ``futures`` random orders of the cards still to
  be dealt (the game's own order first), averaged. The target's expectation is the
  expected double-dummy value of the rest over the deals still possible; the noise of one
  deal is averaged by the regression.

Training is a plain MSE regression (Adam, mini-batches, torch on the CPU), every 5th game
held out; the manifest records the rows, the held-out RMSE against the target's standard
deviation and a per-round mean baseline, the seconds and the settings.

:func:`run_train_round_value` is the library call (``tensorcfr pasur train-round-value``
parses and prints). Rows checkpoint to ``rows.npz`` in the out folder every
:data:`CHECKPOINT_GAMES` games; a rerun with the same settings resumes.
"""

from __future__ import annotations

import random
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Callable

import numpy as np

from tensorcfr.errors import TensorCFRError
from tensorcfr.games.pasur.engine import rules
from tensorcfr.games.pasur.engine.observation import observe
from tensorcfr.games.pasur.playing.greedy import GreedyAgent
from tensorcfr.games.pasur.playing.round_search import RoundValueNet

__all__ = ["CHECKPOINT_GAMES", "RANDOM_SHARES", "RoundValueProgress", "TrainRoundValueSettings",
           "collect_round_ends", "features_dense", "run_train_round_value"]

RANDOM_SHARES = (0.0, 0.15, 0.35, 0.7, 1.0)
"""Shares of uniformly random plays of the behaviour, one per game in turn."""
CHECKPOINT_GAMES = 250
"""Games between two checkpoints of the rows."""
MAX_GAMES = 1_000_000
MAX_FUTURES = 64


@dataclass(frozen=True)
class TrainRoundValueSettings:
    """Everything a training run needs (validated).

    Attributes:
        games: games played to collect round ends (5 rows a game).
        out: the network's folder (``round_value.npz``, ``manifest.json``, ``rows.npz``).
        seed: seed of the deals, the behaviour, the futures and the training.
        futures: deals of the rest solved per round end (averaged into its target).
        hidden: the two hidden layers' widths.
        epochs: passes over the training rows.
        threads: torch threads.
    """

    games: int
    out: Path
    seed: int = 0
    futures: int = 1
    hidden: tuple[int, int] = (64, 32)
    epochs: int = 40
    threads: int = 1

    def __post_init__(self) -> None:
        from tensorcfr.utils.checks import check_int_range

        check_int_range(self.games, "--games", 1, MAX_GAMES)
        check_int_range(self.futures, "--futures", 1, MAX_FUTURES,
                        why="deals of the rest solved per round end")
        check_int_range(self.epochs, "--epochs", 1, 10_000)
        for width in self.hidden:
            check_int_range(width, "--hidden", 1, 1024)

    def rows_identity(self) -> dict[str, Any]:
        """What the rows depend on (a checkpoint is resumed only when it matches)."""
        return {"seed": self.seed, "futures": self.futures,
                "random_shares": list(RANDOM_SHARES)}


@dataclass(frozen=True)
class RoundValueProgress:
    """``stage``: ``games`` (``done`` of ``total`` games) or ``training`` (``done`` of
    ``total`` epochs)."""

    stage: str
    done: int
    total: int


def features_dense(next_round: int, pool: int, undealt: int, clubs_a: int, clubs_b: int,
                   last: int) -> np.ndarray:
    """The network's input of one round end as a dense 0/1 vector [NUM_FEATURES] (the
    kernel's :func:`leaf_features`, the one definition)."""
    from tensorcfr.games.pasur.playing.round_search_kernel import NUM_FEATURES, leaf_features

    index = np.zeros(128, dtype=np.int64)
    n = leaf_features(next_round, pool, undealt, clubs_a, clubs_b, last, index)
    x = np.zeros(NUM_FEATURES, dtype=np.float32)
    x[index[:n]] = 1.0
    return x


def _round_end_rows(state: rules.GameState, futures: int, rng: random.Random
                    ) -> tuple[np.ndarray, float]:
    """The features of the round end ``state`` (play 8, 16, ..., 40) and its target: the
    mean over ``futures`` orders of the undealt cards (the state's own first) of the
    double-dummy points to come, Alex minus Bob."""
    from tensorcfr.games.pasur.solving.double_dummy import dd_value, position_arrays

    hands, masks, pos = position_arrays(state)
    t, pool, _ra, _rb, clubs_a, clubs_b, last, _points = pos
    k = t // rules.PLAYS_PER_ROUND
    x = features_dense(k, pool, int(masks[k - 1, 0]), clubs_a, clubs_b, last)
    base = rules.utility(state)
    total = 0.0
    cut = 4 + rules.PLAYS_PER_ROUND * k
    for f in range(futures):
        if f == 0:
            s = state
        else:
            rest = list(state.deal[cut:])
            rng.shuffle(rest)
            deal = tuple(state.deal[:cut]) + tuple(rest)
            s = replace(state, deal=deal, hands=rules.round_hands(deal, k))
        total += dd_value(s) - base
    return x, total / futures


def collect_round_ends(first_game: int, games: int, seed: int, futures: int
                       ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Rows of games ``first_game .. first_game + games - 1``: features [R, NUM_FEATURES]
    (float32), targets [R] (float32) and each row's game index [R] (int64)."""
    greedy = GreedyAgent()
    xs, ys, gs = [], [], []
    for g in range(first_game, first_game + games):
        rng = random.Random(f"round-value:{seed}:{g}")
        eps = RANDOM_SHARES[g % len(RANDOM_SHARES)]
        state = rules.initial_state(rules.random_deal(seed * 1_000_003 + g))
        while not state.is_terminal:
            if state.play_index % rules.PLAYS_PER_ROUND == 0 and state.play_index > 0:
                x, y = _round_end_rows(state, futures, rng)
                xs.append(x)
                ys.append(y)
                gs.append(g)
            legal = rules.legal_actions(state)
            if len(legal) == 1:
                action = legal[0]
            elif rng.random() < eps:
                action = rng.choice(legal)
            else:
                action = greedy.choose(observe(state, state.player))
            state = rules.apply_legal_action(state, action)
    from tensorcfr.games.pasur.playing.round_search_kernel import NUM_FEATURES

    if not xs:
        return (np.zeros((0, NUM_FEATURES), np.float32), np.zeros(0, np.float32),
                np.zeros(0, np.int64))
    return np.stack(xs), np.asarray(ys, np.float32), np.asarray(gs, np.int64)


def _load_rows(path: Path, identity: dict[str, Any]
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray, int] | None:
    import os

    from tensorcfr.games.pasur.playing.round_search_kernel import NUM_FEATURES
    from tensorcfr.utils.reading import check_game_rows, damaged, load_npz, strict_json_loads

    if not os.path.lexists(path):  # a FIFO or device there is refused, not read
        return None
    what = "the round-value rows checkpoint"
    arrays = load_npz(path, what, required=("x", "y", "g", "games", "identity"))
    x, y, g, stored = (arrays[n] for n in ("x", "y", "g", "identity"))
    try:
        stored = strict_json_loads(str(stored)) if stored.shape == () else None
    except ValueError:
        stored = None
    if not isinstance(stored, dict):
        raise damaged(path, what, "identity is not one JSON object")
    if stored != identity:
        raise TensorCFRError(f"{path} holds rows of other settings ({stored}); "
                             "remove it or use another --out")
    done = check_game_rows(path, what, arrays, NUM_FEATURES, game_key="g")
    return x, y, g, done


def _save_rows(path: Path, identity: dict[str, Any], x: np.ndarray, y: np.ndarray,
               g: np.ndarray, games: int) -> None:
    import json

    from tensorcfr.utils.io import atomic_path

    with atomic_path(path) as tmp:
        with open(tmp, "wb") as handle:
            np.savez(handle, x=x, y=y, g=g, games=np.int64(games),
                     identity=np.asarray(json.dumps(identity)))


def _train(x: np.ndarray, y: np.ndarray, test: np.ndarray, settings: TrainRoundValueSettings,
           on_progress: Callable[[RoundValueProgress], None]
           ) -> tuple[dict[str, np.ndarray], dict[str, float]]:
    """Fit the MLP; its weights as the kernel reads them and the RMSEs."""
    import torch

    torch.manual_seed(settings.seed)
    h1, h2 = settings.hidden
    model = torch.nn.Sequential(torch.nn.Linear(x.shape[1], h1), torch.nn.ReLU(),
                                torch.nn.Linear(h1, h2), torch.nn.ReLU(),
                                torch.nn.Linear(h2, 1))
    train = ~test
    xt = torch.from_numpy(x[train])
    yt = torch.from_numpy(y[train])
    xv = torch.from_numpy(x[test])
    yv = torch.from_numpy(y[test])
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3, weight_decay=1e-5)
    scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, settings.epochs)
    generator = torch.Generator().manual_seed(settings.seed)
    batch = 256
    for epoch in range(settings.epochs):
        model.train()
        order = torch.randperm(len(xt), generator=generator)
        for start in range(0, len(xt), batch):
            idx = order[start:start + batch]
            optimizer.zero_grad()
            loss = torch.nn.functional.mse_loss(model(xt[idx]).squeeze(-1), yt[idx])
            loss.backward()
            optimizer.step()
        scheduler.step()
        on_progress(RoundValueProgress("training", epoch + 1, settings.epochs))
    model.eval()
    with torch.no_grad():
        rmse_train = float(torch.sqrt(torch.mean((model(xt).squeeze(-1) - yt) ** 2)))
        rmse_test = (float(torch.sqrt(torch.mean((model(xv).squeeze(-1) - yv) ** 2)))
                     if len(xv) else float("nan"))
    layers = [m for m in model if isinstance(m, torch.nn.Linear)]
    weights = {"w1": layers[0].weight.detach().double().numpy().T.copy(),
               "b1": layers[0].bias.detach().double().numpy().copy(),
               "w2": layers[1].weight.detach().double().numpy().T.copy(),
               "b2": layers[1].bias.detach().double().numpy().copy(),
               "w3": layers[2].weight.detach().double().numpy()[0].copy(),
               "b3": layers[2].bias.detach().double().numpy().copy()}
    return weights, {"train": rmse_train, "test": rmse_test}


def _round_baseline_rmse(x: np.ndarray, y: np.ndarray, test: np.ndarray) -> float:
    """Held-out RMSE of the per-round mean of the training targets (what the network must
    beat)."""
    from tensorcfr.games.pasur.playing.round_search_kernel import FEAT_ROUND

    rounds = x[:, FEAT_ROUND:FEAT_ROUND + 5].argmax(1)
    pred = np.zeros(test.sum())
    for r in range(5):
        train_r = (~test) & (rounds == r)
        mean = float(y[train_r].mean()) if train_r.any() else 0.0
        pred[rounds[test] == r] = mean
    return float(np.sqrt(np.mean((pred - y[test]) ** 2))) if test.any() else float("nan")


def run_train_round_value(settings: TrainRoundValueSettings,
                          on_progress: Callable[[RoundValueProgress], None] = lambda p: None
                          ) -> dict[str, Any]:
    """Collect round ends (resuming ``rows.npz``), train the network, write it to
    ``settings.out``; returns the manifest (also written)."""
    from tensorcfr.utils.io import check_output_dir

    out = check_output_dir(settings.out)
    out.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    identity = settings.rows_identity()
    rows_path = out / "rows.npz"
    loaded = _load_rows(rows_path, identity)
    from tensorcfr.games.pasur.playing.round_search_kernel import NUM_FEATURES

    if loaded is None:
        x = np.zeros((0, NUM_FEATURES), np.float32)
        y = np.zeros(0, np.float32)
        g = np.zeros(0, np.int64)
        done = 0
    else:
        x, y, g, done = loaded
        if done > settings.games:
            keep = g < settings.games
            x, y, g, done = x[keep], y[keep], g[keep], settings.games
    on_progress(RoundValueProgress("games", done, settings.games))
    collect_seconds = 0.0
    while done < settings.games:
        step = min(CHECKPOINT_GAMES, settings.games - done)
        t0 = time.perf_counter()
        bx, by, bg = collect_round_ends(done, step, settings.seed, settings.futures)
        collect_seconds += time.perf_counter() - t0
        x, y, g = np.concatenate([x, bx]), np.concatenate([y, by]), np.concatenate([g, bg])
        done += step
        _save_rows(rows_path, identity, x, y, g, done)
        on_progress(RoundValueProgress("games", done, settings.games))
    if len(y) < 10:
        raise TensorCFRError(f"{len(y)} rows are too few to train on: play more --games")
    test = (g % 5) == 4
    if not test.any() or test.all():
        test = np.arange(len(y)) % 5 == 4
    t0 = time.perf_counter()
    weights, rmse = _train(x, y, test, settings, on_progress)
    train_seconds = time.perf_counter() - t0
    manifest = {
        "format": "tensorcfr-pasur-round-value", "version": 1,
        "target": "double-dummy points to come after a round's end, Alex minus Bob, mean "
                  f"over {settings.futures} deal(s) of the rest",
        "games": settings.games, "seed": settings.seed, "futures": settings.futures,
        "hidden": list(settings.hidden), "epochs": settings.epochs,
        "random_shares": list(RANDOM_SHARES),
        "rows": {"total": int(len(y)), "train": int((~test).sum()), "test": int(test.sum())},
        "rmse": rmse, "target_std": {"test": float(y[test].std())},
        "round_mean_rmse": {"test": _round_baseline_rmse(x, y, test)},
        "seconds": {"collect": round(collect_seconds, 1), "train": round(train_seconds, 1),
                    "total": round(time.perf_counter() - started, 1)},
        "threads": settings.threads,
    }
    RoundValueNet.from_arrays(weights, manifest).save(out)
    return manifest
