"""The ``hidden-model`` agent: a fast learned player of hidden-hand Pasur (XGBoost).

As in the paper's policy models (:mod:`.policy_model`), an XGBoost regressor scores each
legal play from one feature row; here the row holds only what the mover can see
(:class:`Observation`: its hand, the pool, the counts of the unseen cards, the scores, the
round) plus what the candidate play does (its card, its captures and the ``greedy`` facts of
:func:`greedy.play_facts`). The agent plays the play of the highest predicted score (the
first of equal ones, in legal order).

**Target** (``TARGET``): the play's *advantage* under a teacher, in points from the mover's
side: its whole-game value minus the mean value of the decision's legal plays.

* ``--teacher exact`` (the default, fast): the open-hands exact values
  (:func:`solve_exact`, one solve per game covers all its positions); the features still see
  only the observation, so the model learns the mean over the hidden cards of the exact
  values, which is what PIMC estimates with its draws.
* ``--teacher pimc``: PIMC's mean values over K determinizations (K solves per decision:
  slow).
* ``--teacher round-search``: the ``round-search`` agent's mean values over K draws of the
  opponent's hand (each searched to the round's end, the rest of the game valued by its
  network: :mod:`..playing.round_search`); an expert-iteration step, a model distilled
  from the searcher that does not assume it knows the cards to come.

The games that provide the decisions are played by a mixed behaviour (per play: the
teacher's best play with probability 0.6, ``greedy`` 0.2, uniform random 0.2; seeded), so
the positions are those of sensible play with some variety. With ``--behaviour MODEL`` (a
hidden-model folder, or ``hidden-model`` / ``distilled`` for the shipped ones) that model's
choice takes the 0.6 share instead of the teacher's best play: the apprentice generates the
positions and the teacher labels them (classic expert iteration; the same draws of the
seeded generator otherwise). Decisions with one legal play carry no information and are
skipped.

A model folder holds ``hidden_model.ubj`` (XGBoost's binary format) and ``manifest.json``
(format, version, feature set and columns, target, teacher, games, hyper-parameters, row
counts, RMSE and the target's variance, timings, versions), written atomically. Row
collection checkpoints to ``rows.npz`` in the folder every 30 seconds and resumes from it when
the same run is started again.

Units: targets and predictions in points; features as listed in :data:`FEATURE_COLUMNS`.
This module knows observations, the greedy facts and the exact solver; it does not know the
agent registry.
"""

from __future__ import annotations

import functools
import os
import platform
import random
import time
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np

from tensorcfr.errors import TensorCFRError
from tensorcfr.games.pasur.engine import rules
from tensorcfr.games.pasur.engine.cards import (
    NUM_CARDS,
    TEN_OF_DIAMONDS,
    TWO_OF_CLUBS,
    is_club,
)
from tensorcfr.games.pasur.engine.observation import Observation, observe
from tensorcfr.games.pasur.learning.hidden_kernel import INFO_SIZE, choose_index, pack_decision
from tensorcfr.games.pasur.learning.xgb_model import ModelKind, XGBoostModel
from tensorcfr.games.pasur.playing.agent import PlayEstimate, check_turn, mover_sign
from tensorcfr.games.pasur.playing.greedy import CARD_POINTS, GreedyAgent, greedy_key, play_facts
from tensorcfr.games.pasur.playing.pimc import PimcAgent
from tensorcfr.utils.io import atomic_path, write_json_atomic

__all__ = ["BEHAVIOUR_NAMES", "DEFAULT_MODEL_DIR", "DISTILLED_MODEL_DIR", "FEATURE_COLUMNS",
           "FEATURE_SET", "HiddenModel",
           "HiddenModelAgent", "TrainHiddenSettings", "TrainProgress", "decision_rows",
           "load_hidden_model", "load_rows_checkpoint",
           "run_train_hidden"]

MODEL_FORMAT = "tensorcfr-pasur-hidden-model"
MODEL_VERSION = 1
MODEL_FILE = "hidden_model.ubj"
MANIFEST = "manifest.json"
ROWS_CHECKPOINT = "rows.npz"
FEATURE_SET = "pasur-hidden-v1"
TARGET = ("advantage of the play under the teacher: its whole-game value minus the mean of "
          "the decision's legal plays, points from the mover's side")
TEACHERS = ("exact", "pimc", "round-search")
DEFAULT_MODEL_DIR = Path(str(resources.files("tensorcfr.games.pasur") / "data" / "hidden_model"))
"""The small model shipped with the package (``hidden-model`` without ``--model``)."""
DISTILLED_MODEL_DIR = Path(str(resources.files("tensorcfr.games.pasur") / "data" / "distilled"))
"""The ``distilled`` agent's model: a hidden model trained on ``round-search``'s values (one
round of expert iteration: ``tensorcfr pasur train-hidden --teacher round-search -k 16
--games 400 --seed 1000``)."""
TEACHER_BEHAVIOUR = "teacher"
"""``--behaviour`` of the default mixed behaviour: the teacher's best play takes the 0.6."""
SHIPPED_MODELS: dict[str, Path] = {"hidden-model": DEFAULT_MODEL_DIR,
                                   "distilled": DISTILLED_MODEL_DIR}
"""``--behaviour`` names of the shipped model folders."""
BEHAVIOUR_NAMES = (TEACHER_BEHAVIOUR, *SHIPPED_MODELS)

_RANK_NAMES = "A23456789TJQK"
FEATURE_COLUMNS: list[str] = (
    ["round", "ply_in_round", "hand_size", "opponent_hand_size", "undealt", "score_diff",
     "my_clubs", "opponent_clubs", "pool_size", "pool_numeric_sum", "pool_points",
     "pool_clubs", "unseen_aces", "unseen_jacks", "unseen_ten_of_diamonds",
     "unseen_two_of_clubs", "unseen_clubs", "is_alex", "last_capturer_is_me",
     "legal_plays"]
    + [f"unseen_{r}" for r in _RANK_NAMES] + [f"pool_{r}" for r in _RANK_NAMES]
    + [f"hand_{r}" for r in _RANK_NAMES]
    + ["points_now", "clubs_taken", "aces_taken", "jacks_taken", "ten_taken", "two_taken",
       "pool_left", "lay_card_points", "lay_card_club", "lay_threats", "card_rank",
       "card_is_club", "captured_count", "is_lay", "card_points", "is_greedy_choice"])
NUM_FEATURES = len(FEATURE_COLUMNS)

_IS_CLUB = tuple(is_club(c) for c in range(NUM_CARDS))
_VALUE = tuple(c // 4 + 1 if c < 40 else 0 for c in range(NUM_CARDS))

DEFAULT_PARAMS: dict[str, Any] = {"objective": "reg:squarederror", "eval_metric": "rmse",
                                  "tree_method": "hist", "max_depth": 6, "eta": 0.1,
                                  "min_child_weight": 1.0}
"""Smaller trees than the per-deal policy models: the model must stay under 2 MB and fast."""


# --------------------------------------------------------------------------- features


def _decision_prefix(obs: Observation, legal_count: int) -> list[float]:
    """The features shared by every play of one decision (the first 59 columns)."""
    me = obs.player
    my_points, opp_points = obs.points()
    if me == 1:
        my_points, opp_points = opp_points, my_points
    unseen_ranks = [0] * 13
    unseen_clubs = 0
    for c in obs.unseen:
        unseen_ranks[c >> 2] += 1
        unseen_clubs += _IS_CLUB[c]
    pool_ranks = [0] * 13
    pool_sum = pool_points = pool_clubs = 0
    for c in obs.pool:
        pool_ranks[c >> 2] += 1
        pool_sum += _VALUE[c]
        pool_points += CARD_POINTS[c]
        pool_clubs += _IS_CLUB[c]
    hand_ranks = [0] * 13
    for c in obs.hand:
        hand_ranks[c >> 2] += 1
    unseen = set(obs.unseen)
    last = obs.last_capturer
    return [obs.play_index // 8, obs.play_index % 8, len(obs.hand), obs.opponent_hand_size,
            obs.undealt_count, my_points - opp_points,
            sum(1 for c in obs.piles[me] if _IS_CLUB[c]),
            sum(1 for c in obs.piles[1 - me] if _IS_CLUB[c]),
            len(obs.pool), pool_sum, pool_points, pool_clubs,
            unseen_ranks[0], unseen_ranks[10], int(TEN_OF_DIAMONDS in unseen),
            int(TWO_OF_CLUBS in unseen), unseen_clubs, int(me == 0),
            -1 if last is None else int(last == me), legal_count,
            *unseen_ranks, *pool_ranks, *hand_ranks]


def decision_rows(obs: Observation, legal: Sequence[rules.Action] | None = None
                  ) -> tuple[list[rules.Action], list[list[float]]]:
    """The legal plays of ``obs`` and one feature row each (:data:`FEATURE_COLUMNS`)."""
    legal = list(obs.legal_actions() if legal is None else legal)
    prefix = _decision_prefix(obs, len(legal))
    facts = play_facts(obs, legal)
    keys = [greedy_key(f) for f in facts]
    best = max(range(len(keys)), key=lambda i: (keys[i], -i))
    rows = []
    for i, (action, f) in enumerate(zip(legal, facts)):
        card = action.card
        rows.append(prefix + [*f, card >> 2, int(_IS_CLUB[card]), len(action.captured),
                              int(not action.captured), CARD_POINTS[card], int(i == best)])
    return legal, rows


# --------------------------------------------------------------------------- model


MAX_MODEL_BYTES = 2 * 2**30
"""Largest XGBoost model file read."""


def _train_command_hint() -> str:
    return "train one with `tensorcfr pasur train-hidden --games N --out DIR`"


class HiddenModel(XGBoostModel):
    """A loaded hidden-hand model: the XGBoost booster and its manifest; ``predict`` gives
    the advantage (points) of each row [N, NUM_FEATURES] -> float32 [N]."""

    kind = ModelKind(what="a hidden-hand model", format=MODEL_FORMAT, version=MODEL_VERSION,
                     model_file=MODEL_FILE, feature_set=FEATURE_SET,
                     feature_columns=tuple(FEATURE_COLUMNS), max_model_bytes=MAX_MODEL_BYTES,
                     hint=_train_command_hint(), compile_forest=True)


def load_hidden_model(path: str | os.PathLike[str] | None = None, threads: int = 1
                      ) -> HiddenModel:
    """Load a folder written by :func:`run_train_hidden` (``None``: the shipped default).

    Raises:
        TensorCFRError / CorruptFileError: a missing or unreadable model, in one line that
            names the train command.
    """
    folder = DEFAULT_MODEL_DIR if path is None else Path(path)
    if not folder.is_dir() or not os.path.lexists(folder / MANIFEST):
        what = "no hidden-hand model is installed" if path is None else \
            f"{folder} is not a hidden-hand model folder"
        raise TensorCFRError(f"{what}: {_train_command_hint()} and pass --model DIR")
    if folder.resolve() in {shipped.resolve() for shipped in SHIPPED_MODELS.values()}:
        return _shipped_model(folder.resolve(), int(threads),
                              (folder / MANIFEST).stat().st_mtime_ns)
    return HiddenModel.load(folder, threads=threads)


@functools.lru_cache(maxsize=8)
def _shipped_model(folder: Path, threads: int, manifest_mtime_ns: int) -> HiddenModel:
    """One loaded copy of a model shipped with the package, shared by every agent that plays
    it (read only: predictions allocate their own buffers). Loading one is about 0.2 s and
    2.8 MiB (the booster and its compiled trees): the play server builds an agent for every
    new hidden-hand game and holds up to ``max_games`` of them. ``manifest_mtime_ns`` keys a
    replaced model apart from the old one."""
    return HiddenModel.load(folder, threads=threads)


class HiddenModelAgent:
    """Plays the legal play of the highest predicted advantage (first of equal ones).

    A decision is one compiled call (:func:`.hidden_kernel.choose_index`: the feature rows,
    the compiled forest, the choice; tens of microseconds with the Python around it) when the
    model's trees compiled (:attr:`HiddenModel.forest`); otherwise :func:`decision_rows` and
    XGBoost, batched by :meth:`choose_many`. Both give the same plays (tested).
    """

    name = "hidden-model"
    sees_everything = False

    def __init__(self, model: str | os.PathLike[str] | None = None, threads: int = 1) -> None:
        self.model = load_hidden_model(model, threads=threads)

    def reset(self, seed: int) -> None:
        """Nothing to reset: the agent is deterministic."""

    def _predict(self, observations: Sequence[Observation]
                 ) -> list[tuple[list[rules.Action], np.ndarray]]:
        """The legal plays of each observation and their predictions, through
        :func:`decision_rows` and one :meth:`HiddenModel.predict` call (the reference path)."""
        legal_lists, all_rows = [], []
        for obs in observations:
            legal, rows = decision_rows(obs, check_turn(obs, self.name))
            legal_lists.append(legal)
            all_rows.extend(rows)
        pred = self.model.predict(np.asarray(all_rows, dtype=np.float32))
        out, start = [], 0
        for legal in legal_lists:
            out.append((legal, pred[start:start + len(legal)]))
            start += len(legal)
        return out

    def _compiled_choice(self, obs: Observation, legal: list[rules.Action]) -> int:
        """Index in ``legal`` of the play of the highest prediction, in one compiled call
        (buffers are the call's own: an agent may serve several threads)."""
        forest = self.model.forest
        n = len(legal)
        info = np.empty(INFO_SIZE, dtype=np.int64)
        plays = np.empty((n, 2), dtype=np.int64)
        pack_decision(obs, legal, info, plays)
        return choose_index(info, plays, np.empty((n, NUM_FEATURES), dtype=np.float32),
                            np.empty(n, dtype=np.float32), forest.base, forest.feature,
                            forest.threshold, forest.default_left, forest.leaf)

    def choose(self, obs: Observation, state: rules.GameState | None = None) -> rules.Action:
        """The play of the highest predicted advantage."""
        if self.model.forest is None:
            return self.choose_many([obs])[0]
        legal = check_turn(obs, self.name)
        return legal[self._compiled_choice(obs, legal)] if len(legal) > 1 else legal[0]

    def choose_many(self, observations: Sequence[Observation]) -> list[rules.Action]:
        """:meth:`choose` for many observations (without compiled trees: one XGBoost call)."""
        if self.model.forest is not None:
            return [self.choose(obs) for obs in observations]
        return [legal[int(np.argmax(pred))] for legal, pred in self._predict(observations)]

    def estimates(self, obs: Observation) -> list[PlayEstimate] | None:
        """None: the model predicts advantages, not final points differences."""
        return None


# --------------------------------------------------------------------------- training


@dataclass(frozen=True)
class TrainHiddenSettings:
    """Everything a ``train-hidden`` run needs (validated on creation).

    Attributes:
        games: games played to collect decisions (each a random deal, seed ``seed + i``).
        out: the model folder.
        teacher: ``exact`` (open-hands values, one solve per game), ``pimc`` or
            ``round-search``.
        seed: seed of the deals, the behaviour and the data split.
        threads: XGBoost threads.
        determinizations: K of the ``pimc`` and ``round-search`` teachers.
        rounds: most boosting rounds (early stopping after 30 without improvement).
        max_depth: XGBoost tree depth.
        eta: XGBoost learning rate.
        device: torch device of the exact solver.
        behaviour: who makes the 0.6 share of the plays of the games played: ``teacher``
            (its best play, the default), ``hidden-model`` or ``distilled`` (the shipped
            models) or a hidden-model folder (expert iteration: the apprentice plays, the
            teacher labels).
    """

    games: int
    out: Path
    teacher: str = "exact"
    seed: int = 0
    threads: int = 1
    determinizations: int = 8
    rounds: int = 300
    max_depth: int = 6
    eta: float = 0.1
    device: str = "cpu"
    behaviour: str = TEACHER_BEHAVIOUR

    def __post_init__(self) -> None:
        from tensorcfr.utils.checks import MAX_SEED, check_int_range

        check_int_range(self.games, "--games", 1, MAX_TRAIN_GAMES,
                        why="each game is solved exactly")
        if self.teacher not in TEACHERS:
            raise TensorCFRError(f"--teacher must be one of {', '.join(TEACHERS)}, got "
                                 f"{self.teacher!r}")
        if self.threads < 1:
            raise TensorCFRError(f"--threads must be at least 1, got {self.threads}")
        check_int_range(self.seed, "--seed", 0, MAX_SEED - self.games,
                        why="game i is seeded SEED+i, a 64-bit integer")
        check_int_range(self.determinizations, "--determinizations", 1, 100_000,
                        why="draws per play, each an exact solve")
        check_int_range(self.rounds, "--rounds", 1, MAX_ROUNDS, why="boosting rounds")
        check_int_range(self.max_depth, "--max-depth", 1, MAX_DEPTH,
                        why="deeper XGBoost trees than this are never useful")
        if not (isinstance(self.eta, (int, float)) and 0 < self.eta <= 1):
            raise TensorCFRError(f"--eta must be a learning rate in (0, 1], got {self.eta}")
        from tensorcfr.utils.device import resolve_device

        resolve_device(self.device, "--device")
        out = Path(self.out)
        if out.exists() and not out.is_dir():
            raise TensorCFRError(f"--out {out} exists and is not a folder")
        if not isinstance(self.behaviour, str) or (
                self.behaviour not in BEHAVIOUR_NAMES
                and not os.path.isfile(Path(self.behaviour) / MANIFEST)):
            raise TensorCFRError(f"--behaviour must be {', '.join(BEHAVIOUR_NAMES)} or a "
                                 f"hidden-model folder (with {MANIFEST}), got "
                                 f"{self.behaviour!r}")

    @property
    def behaviour_folder(self) -> Path | None:
        """The model folder of the behaviour (None: the teacher's best play)."""
        if self.behaviour == TEACHER_BEHAVIOUR:
            return None
        return SHIPPED_MODELS.get(self.behaviour, Path(self.behaviour))


MAX_TRAIN_GAMES = 10_000_000
"""Most games one ``train-hidden`` run plays (each solved exactly: days of CPU already)."""
MAX_ROUNDS = 100_000
"""Most boosting rounds."""
MAX_DEPTH = 64
"""Deepest XGBoost tree."""


@dataclass(frozen=True)
class TrainProgress:
    """Where a run is: ``stage`` (``games`` or ``training``) and games done of total."""

    stage: str
    done: int
    total: int


def _game_rows(settings: TrainHiddenSettings, game: int,
               behaviour: HiddenModelAgent | None = None
               ) -> tuple[list[list[float]], list[float]]:
    """Feature rows and advantage targets of every decision of game ``game``; ``behaviour``
    (the loaded ``settings.behaviour`` model, None for the teacher) makes the 0.6 share."""
    from tensorcfr.games.pasur.solving.exact import StateNotSolvedError, solve_exact

    seed = settings.seed + game
    deal = rules.random_deal(seed)
    rng = random.Random(f"train-hidden:{seed}")
    greedy = GreedyAgent()
    pimc = None
    solution = None
    if settings.teacher == "pimc":
        pimc = PimcAgent(settings.determinizations, device=settings.device)
        pimc.reset(seed)
    elif settings.teacher == "round-search":
        from tensorcfr.games.pasur.playing.round_search import RoundSearchAgent

        pimc = RoundSearchAgent(settings.determinizations, device=settings.device)
        pimc.reset(seed)
    state = rules.initial_state(deal)
    xs: list[list[float]] = []
    ys: list[float] = []
    while not state.is_terminal:
        obs = observe(state, state.player)
        legal = obs.legal_actions()
        if pimc is not None:
            values = [e.value for e in pimc.estimates(obs) or []]
        else:
            if solution is None:
                solution = solve_exact(state, device=settings.device)
            try:
                solved = solution.action_values(state)
            except StateNotSolvedError:  # pragma: no cover - the solve covers every state
                solution = solve_exact(state, device=settings.device)
                solved = solution.action_values(state)
            by_action = dict(solved)
            sign = mover_sign(state.player)
            values = [sign * by_action[a] for a in legal]
        if len(legal) > 1:
            mean = sum(values) / len(values)
            _, rows = decision_rows(obs, legal)
            xs.extend(rows)
            ys.extend(v - mean for v in values)
        draw = rng.random()
        if draw < 0.6 and behaviour is not None:
            action = behaviour.choose(obs)
        elif draw < 0.6:
            action = legal[max(range(len(legal)), key=lambda i: (values[i], -i))]
        elif draw < 0.8:
            action = greedy.choose(obs)
        else:
            action = rng.choice(legal)
        state = rules.apply_action(state, action)
    return xs, ys


def load_rows_checkpoint(path: str | os.PathLike[str]) -> dict[str, Any]:
    """Read a ``rows.npz`` checkpoint of ``train-hidden``: ``x`` float32 [N, NUM_FEATURES]
    (finite), ``y`` float32 [N] (finite), ``game`` int [N] (each in ``0..games-1``),
    ``games`` (games done) and ``ident`` (teacher|seed|determinizations|feature set, then
    |behaviour when it is not the teacher's: see :func:`_behaviour_ident`).

    Raises :class:`CorruptFileError` (one line naming the file) for a truncated or damaged
    file, NaN/inf rows, rows of another feature count, or missing arrays.
    """
    from tensorcfr.utils.reading import check_game_rows, damaged, load_npz

    what = "the rows checkpoint"
    arrays = load_npz(path, what, required=("x", "y", "game", "games", "ident"))
    done = check_game_rows(path, what, arrays, NUM_FEATURES, features=FEATURE_SET,
                           max_games=MAX_TRAIN_GAMES)
    ident = arrays["ident"]
    if ident.shape != () or ident.dtype.kind != "U":
        raise damaged(path, what, "ident must be one text")
    return {"x": arrays["x"], "y": arrays["y"], "game": arrays["game"], "games": done,
            "ident": str(ident)}


def _behaviour_ident(settings: TrainHiddenSettings) -> str:
    """``teacher``, or ``model sha256 <first 16 hex digits of its model file>``: the same
    model under another path (a shipped name or its folder) is the same behaviour."""
    import hashlib

    folder = settings.behaviour_folder
    if folder is None:
        return TEACHER_BEHAVIOUR
    try:
        digest = hashlib.sha256((folder / MODEL_FILE).read_bytes()).hexdigest()
    except OSError as exc:
        raise TensorCFRError(f"--behaviour {settings.behaviour}: cannot read "
                             f"{folder / MODEL_FILE}: {exc.strerror or exc}") from None
    return f"model sha256 {digest[:16]}"


def _rows_ident(settings: TrainHiddenSettings, behaviour: str) -> str:
    """The ``ident`` of a rows checkpoint: the options its rows depend on. The default
    behaviour adds no field, so checkpoints written before ``--behaviour`` still resume."""
    fields = [settings.teacher, str(settings.seed), str(settings.determinizations), FEATURE_SET]
    if behaviour != TEACHER_BEHAVIOUR:
        fields.append(behaviour)
    return "|".join(fields)


def _ident_difference(saved: str, settings: TrainHiddenSettings, behaviour: str) -> str:
    """The option in which a saved checkpoint's ident differs from ``settings``."""
    names = ("--teacher", "--seed", "--determinizations", "the feature set", "--behaviour")
    mine = [settings.teacher, str(settings.seed), str(settings.determinizations), FEATURE_SET,
            behaviour]
    theirs = saved.split("|")
    if len(theirs) == 4:
        theirs.append(TEACHER_BEHAVIOUR)
    for name, a, b in zip(names, mine, theirs + [""] * len(names)):
        if a != b:
            return f"{name} {a} (the saved rows used {b or 'none'})"
    return "other options"


def _collect_rows(settings: TrainHiddenSettings, on_progress: Callable[[TrainProgress], None]
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Rows, targets and game numbers of ``settings.games`` games; resumes from and writes
    the ``rows.npz`` checkpoint of the out folder (a checkpoint of other options is refused,
    naming the option). SIGINT / SIGTERM stop between two games: the rows so far are saved
    and :class:`~tensorcfr.errors.InterruptedRun` says where."""
    from tensorcfr.utils.interrupts import deferred_stop, interrupted

    out = Path(settings.out)
    checkpoint = out / ROWS_CHECKPOINT
    behaviour = _behaviour_ident(settings)
    ident = _rows_ident(settings, behaviour)
    xs: list[np.ndarray] = []
    ys: list[np.ndarray] = []
    gs: list[np.ndarray] = []
    done = 0
    if os.path.lexists(checkpoint):
        saved = load_rows_checkpoint(checkpoint)
        if saved["ident"] != ident:
            raise TensorCFRError(
                f"{checkpoint} holds the rows of a run with other options: "
                f"{_ident_difference(saved['ident'], settings, behaviour)}; give the same "
                "options to continue it, or another --out")
        done = min(saved["games"], settings.games)
        keep = saved["game"] < done
        xs.append(saved["x"][keep])
        ys.append(saved["y"][keep])
        gs.append(saved["game"][keep])
    on_progress(TrainProgress("games", done, settings.games))

    def save(games_done: int) -> None:
        out.mkdir(parents=True, exist_ok=True)
        with atomic_path(checkpoint) as tmp:
            with open(tmp, "wb") as fh:
                np.savez(fh, x=np.concatenate(xs) if xs else np.zeros((0, NUM_FEATURES),
                                                                       np.float32),
                         y=np.concatenate(ys) if ys else np.zeros(0, np.float32),
                         game=np.concatenate(gs) if gs else np.zeros(0, np.int32),
                         games=games_done, ident=ident)

    folder = settings.behaviour_folder
    apprentice = None if folder is None else HiddenModelAgent(folder)
    last_save = time.perf_counter()
    with deferred_stop() as stop:
        for game in range(done, settings.games):
            x, y = _game_rows(settings, game, apprentice)
            xs.append(np.asarray(x, dtype=np.float32).reshape(-1, NUM_FEATURES))
            ys.append(np.asarray(y, dtype=np.float32))
            gs.append(np.full(len(y), game, dtype=np.int32))
            on_progress(TrainProgress("games", game + 1, settings.games))
            if stop.requested:
                save(game + 1)
                raise interrupted(stop, f"the rows of {game + 1:,} of {settings.games:,} games "
                                  f"are in {checkpoint}; run the same command to continue")
            if time.perf_counter() - last_save > 30 or game + 1 == settings.games:
                save(game + 1)
                last_save = time.perf_counter()
    if not xs:
        return (np.zeros((0, NUM_FEATURES), np.float32), np.zeros(0, np.float32),
                np.zeros(0, np.int32))
    return np.concatenate(xs), np.concatenate(ys), np.concatenate(gs)


def _versions() -> dict[str, str]:
    import xgboost

    from tensorcfr import __version__

    return {"tensorcfr": __version__, "xgboost": xgboost.__version__,
            "numpy": np.__version__, "python": platform.python_version()}


def _rmse(pred: np.ndarray, y: np.ndarray) -> float:
    return float(np.sqrt(np.mean((pred.astype(np.float64) - y) ** 2))) if len(y) else \
        float("nan")


def _behaviour_text(settings: TrainHiddenSettings) -> str:
    """The manifest's ``behaviour``: who played the games (unchanged for the default)."""
    if settings.behaviour_folder is None:
        return "per play: teacher's best 0.6, greedy 0.2, uniform random 0.2"
    return (f"per play: the choice of the hidden model {settings.behaviour} "
            f"({_behaviour_ident(settings)}) 0.6, greedy 0.2, uniform random 0.2")


def run_train_hidden(settings: TrainHiddenSettings,
                     on_progress: Callable[[TrainProgress], None] = lambda p: None
                     ) -> dict[str, Any]:
    """Collect decisions, train the model, save it in ``settings.out``; returns the manifest.

    Games are split for evaluation by game (every 5th game is held out; with fewer than 5
    games the last one), so the held-out RMSE is measured on positions of unseen deals; the
    held-out rows also stop the boosting early (30 rounds without improvement) once there
    are at least 1,000 of them (tiny runs train all ``rounds``).
    """
    import xgboost

    started = time.perf_counter()
    x, y, game = _collect_rows(settings, on_progress)
    rows_seconds = time.perf_counter() - started
    if len(y) < 10:
        raise TensorCFRError(f"only {len(y)} training rows: play more --games")
    held = (game % 5 == 4) if settings.games >= 5 else (game == settings.games - 1)
    if held.all() or not held.any():
        held = np.zeros(len(y), dtype=bool)
        held[len(y) * 4 // 5:] = True
    train, test = ~held, held
    on_progress(TrainProgress("training", 0, settings.rounds))
    params = {**DEFAULT_PARAMS, "max_depth": settings.max_depth, "eta": settings.eta,
              "nthread": settings.threads, "seed": settings.seed}
    dtrain = xgboost.DMatrix(x[train], label=y[train])
    dtest = xgboost.DMatrix(x[test], label=y[test])
    t0 = time.perf_counter()
    booster = xgboost.train(params, dtrain, num_boost_round=settings.rounds,
                            evals=[(dtrain, "train"), (dtest, "test")],
                            early_stopping_rounds=30 if test.sum() >= 1000 else None,
                            verbose_eval=False)
    train_seconds = time.perf_counter() - t0
    best = getattr(booster, "best_iteration", None)
    if best is not None:
        booster = booster[: best + 1]
    model = HiddenModel(booster=booster, manifest={}, path=Path(settings.out))
    pred_train, pred_test = model.predict(x[train]), model.predict(x[test])
    out = Path(settings.out)
    out.mkdir(parents=True, exist_ok=True)
    with atomic_path(out / MODEL_FILE) as tmp:
        tmp.write_bytes(bytes(booster.save_raw(raw_format="ubj")))
    manifest = {
        "format": MODEL_FORMAT, "version": MODEL_VERSION, "model_file": MODEL_FILE,
        "features": {"name": FEATURE_SET, "columns": FEATURE_COLUMNS},
        "target": TARGET, "teacher": settings.teacher,
        "determinizations": (settings.determinizations if settings.teacher != "exact"
                             else None),
        "games": settings.games, "seed": settings.seed,
        "behaviour": _behaviour_text(settings),
        "params": params, "max_rounds": settings.rounds, "rounds":
            int(booster.num_boosted_rounds()),
        "rows": {"total": int(len(y)), "train": int(train.sum()), "test": int(test.sum())},
        "rmse": {"train": _rmse(pred_train, y[train]), "test": _rmse(pred_test, y[test])},
        "target_std": {"train": float(np.std(y[train])), "test": float(np.std(y[test]))},
        "seconds": {"rows": rows_seconds, "train": train_seconds,
                    "total": time.perf_counter() - started},
        "model_bytes": (out / MODEL_FILE).stat().st_size,
        "threads": settings.threads, "versions": _versions(),
    }
    write_json_atomic(out / MANIFEST, manifest)
    return manifest
