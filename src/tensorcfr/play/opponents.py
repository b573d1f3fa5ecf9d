"""The AI a human plays against, by mode: which names are offered, the one check of a name,
what each is (from the registry), and the factories.

* ``hidden`` hands: a hidden-hand agent of the registry (:data:`~.agents.AGENTS`, default
  :data:`DEFAULT_HIDDEN_AGENT`), built with the play server's time budget per move
  (:func:`make_hidden_agent`); its estimates of the human's plays are the hidden-mode hints
  (:func:`agent_estimates`).
* ``open`` hands: an open-hands player (:data:`~.agents.OPEN_PLAYERS`, default
  :data:`DEFAULT_OPEN_AI`) (:func:`make_ai`); ``exact`` plays from the shared
  :class:`~tensorcfr.play.caches.SolutionCache`.

A name enters through :func:`check_ai` (the ``--ai`` option, the ``ai`` field of a new game)
and the factories trust it. Descriptions are the registry's (:func:`ai_description`): the
page, the API and the docs show the same line. Nothing here knows HTTP or terminals; the
agents registry is imported when first asked (it loads torch and the models' libraries).
"""

from __future__ import annotations

import random
from typing import Any, Protocol, Sequence

from tensorcfr.errors import TensorCFRError
from tensorcfr.games.pasur.engine.rules import Action, GameState, legal_actions
from tensorcfr.games.pasur.vocab import Mode
from tensorcfr.play.caches import PlayerCache, SolutionCache

__all__ = ["DEFAULT_HIDDEN_AGENT", "DEFAULT_OPEN_AI", "ESTIMATE_MEASURES",
           "PLAY_REPLY_LIMIT_SECONDS", "PLAY_SECONDS_PER_MOVE", "PlayerLike", "UniformPlayer",
           "agent_estimates", "ai_description", "ai_names", "ai_sees_your_hand", "check_ai",
           "default_ai", "make_ai", "make_hidden_agent", "sample_action"]

DEFAULT_HIDDEN_AGENT = "distilled"
"""The hidden-hand agent a game is played against unless another is named: the strongest
agent measured that replies at once (about 1 ms a move): ``distilled``, the hidden model
retrained on ``round-search``'s choices, beats ``hidden-model`` by +1.01 points per deal
[+0.80, +1.22] and ``greedy`` by +2.78 over 2,000 duplicate deals (docs/pasur_tournament.md).
``round-search`` is stronger still (+0.76 [+0.12, +1.40] against it at 0.05 s a move) but
thinks for its whole budget at every move; it is one ``--ai round-search`` away. Its hints
are its own scores of the human's plays (:func:`agent_estimates`: the model's predicted
advantage of each play, from the human's observation)."""
DEFAULT_OPEN_AI = "exact"
"""The open-hands AI unless another is named: the optimum of the deal."""
PLAY_SECONDS_PER_MOVE = 0.8
"""The time budget per move of a hidden-hand agent in play (PIMC starts no draw it expects to
end after it, ISMCTS stops searching once it is spent, ``ismcts`` included), so that a reply
takes under a second on one core."""
PLAY_REPLY_LIMIT_SECONDS = 0.95
"""The hard limit on a PIMC play in play: when not even one draw's exact solve ends within it
(a hard first-round draw can take seconds), the agent plays the greedy play instead."""


class PlayerLike(Protocol):
    """The players interface of :mod:`tensorcfr.games.pasur.playing.players`."""

    def action_probs(self, states: Sequence[GameState]) -> list[list[tuple[Action, float]]]:
        ...


# --------------------------------------------------------------------------- names

def ai_names(mode: Mode) -> tuple[str, ...]:
    """The AIs a game in ``mode`` can be played against (the registry's, read when asked so
    that a newly registered agent is offered at once)."""
    from tensorcfr.games.pasur.agents import OPEN_PLAYER_NAMES, agent_names

    return agent_names() if mode is Mode.HIDDEN else OPEN_PLAYER_NAMES


def default_ai(mode: Mode) -> str:
    """The AI of a game in ``mode`` when none is named."""
    return DEFAULT_HIDDEN_AGENT if mode is Mode.HIDDEN else DEFAULT_OPEN_AI


def check_ai(mode: Mode, name: str, where: str = "ai:") -> str:
    """``name`` if it is an AI of ``mode``; the one error line otherwise, starting with
    ``where`` the name came from (``--ai`` on the command line, ``ai:`` for a request's field,
    as the server's other field errors read)."""
    names = ai_names(mode)
    if name not in names:
        raise TensorCFRError(f"{where} must be one of {', '.join(names)} with {mode} hands, "
                             f"got {name!r}")
    return name


def ai_description(mode: Mode, name: str) -> str:
    """The registry's line for the AI ``name`` of ``mode`` (a verb phrase: "the pimc AI
    draws ...")."""
    from tensorcfr.games.pasur.agents import AGENTS, OPEN_PLAYERS

    return AGENTS[name].description if mode is Mode.HIDDEN else OPEN_PLAYERS[name]


def ai_sees_your_hand(mode: Mode, name: str) -> bool:
    """Whether the AI ``name`` sees the human's hand: every AI of open hands; in hidden hands
    only an agent that is handed the true state (the cheating reference ``exact``)."""
    from tensorcfr.games.pasur.agents import AGENTS

    return mode is Mode.OPEN or AGENTS[name].sees_everything


# --------------------------------------------------------------------------- open hands

class _ExactAI:
    """The exact AI over the shared :class:`SolutionCache`.

    ``players.make_player("exact", deal, solution=...)`` is built for each question from the
    cached solution (so a game starts at once, hints and the AI share one solve, and the page
    can show a spinner while that solve runs). It is not kept: a held game must not hold its
    solution (5-60 MiB) beyond the cache's bound.
    """

    name = "exact"

    def __init__(self, deal: tuple[int, ...], solutions: SolutionCache, device: str) -> None:
        self.deal = deal
        self.solutions = solutions
        self.device = device

    def action_probs(self, states: Sequence[GameState]) -> list[list[tuple[Action, float]]]:
        from tensorcfr.games.pasur.agents import make_player

        player = make_player("exact", self.deal, device=self.device,
                             solution=self.solutions.get(self.deal))
        return player.action_probs(states)


class UniformPlayer:
    """Uniform over the legal plays (a placeholder for imported records: nobody plays)."""

    name = "random"

    def action_probs(self, states: Sequence[GameState]) -> list[list[tuple[Action, float]]]:
        out = []
        for state in states:
            actions = legal_actions(state)
            out.append([(a, 1.0 / len(actions)) for a in actions])
        return out


def make_ai(name: str, deal: Sequence[int], *, solutions: SolutionCache,
            model: str | None = None, table: str | None = None,
            device: str = "cpu", players: PlayerCache | None = None) -> PlayerLike:
    """The open-hands AI ``name`` (checked by :func:`check_ai`) for ``deal``
    (:func:`tensorcfr.games.pasur.agents.make_player`).

    ``exact`` plays uniformly among the optimal plays of the deal's cached exact solution;
    ``random`` uniformly; ``table`` needs a solved run folder of this deal (``tensorcfr pasur
    solve --method dcfr --out DIR``), ``model`` an XGBoost model folder. Raises
    :class:`TensorCFRError` (one line) for a missing/unsuitable file.
    """
    from tensorcfr.games.pasur.agents import make_player

    deal = tuple(int(c) for c in deal)
    if name == "exact":
        return _ExactAI(deal, solutions, device)
    if name == "table" and table is None:
        raise TensorCFRError("the table AI needs a strategy table: start with --table DIR "
                             "(a folder written by `tensorcfr pasur solve --method dcfr --out DIR`)")
    if name == "model" and model is None:
        raise TensorCFRError("the model AI needs a model: start with --model DIR")

    def build() -> Any:
        return make_player(name, deal, model=model, table=table, device=device)

    if players is None or name == "random":
        return build()
    return players.get((name, deal, model, table, device), build)


def sample_action(probs: Sequence[tuple[Action, float]], rng: random.Random) -> Action:
    """Draw one action from ``(action, probability)`` pairs with ``rng``."""
    total = sum(max(p, 0.0) for _, p in probs)
    if not probs:
        raise ValueError("no action to sample from")
    if total <= 0:
        return probs[rng.randrange(len(probs))][0]
    x = rng.random() * total
    acc = 0.0
    for action, p in probs:
        acc += max(p, 0.0)
        if x < acc:
            return action
    return probs[-1][0]


# --------------------------------------------------------------------------- hidden hands

def make_hidden_agent(name: str, *, device: str = "cpu", options: Any = None) -> Any:
    """The hidden-hand agent ``name`` (:func:`tensorcfr.games.pasur.agents.make_agent`), with
    the play server's budget per move (:data:`PLAY_SECONDS_PER_MOVE`,
    :data:`PLAY_REPLY_LIMIT_SECONDS`) unless ``options`` are given."""
    from tensorcfr.games.pasur.agents import AgentOptions, make_agent

    if options is None:
        options = AgentOptions(device=device, seconds_per_move=PLAY_SECONDS_PER_MOVE,
                               max_reply_seconds=PLAY_REPLY_LIMIT_SECONDS)
    return make_agent(name, options)


ESTIMATE_MEASURES = {
    "mean": "the mean final point difference for you (yours minus the AI's) over {samples} "
            "draw(s) of the hidden cards",
    "advantage": "the {agent} agent's own score of each play: its predicted advantage over "
                 "the average of your plays, in points (learned from play, from your view "
                 "of the table)",
}
"""What an agent's estimates are, by measure (:func:`agent_estimates`), as the hint says it."""


def agent_estimates(agent: Any, obs: Any) -> tuple[list[Any] | None, str]:
    """The hidden-hand ``agent``'s evaluation of the mover's legal plays in ``obs`` and its
    measure (a key of :data:`ESTIMATE_MEASURES`), from that observation only.

    ``"mean"``: the agent's :meth:`estimates` (final points difference, mover's side).
    ``"advantage"``: for a hidden-model agent (``hidden-model``, ``distilled``), which has no
    such estimates, its model's score of each play (the predicted advantage in points over the
    mean of the legal plays; the play it would choose scores highest). ``(None, "")``: the agent evaluates nothing.
    """
    estimates = agent.estimates(obs)
    if estimates is not None:
        return list(estimates), "mean"
    from tensorcfr.games.pasur.learning.hidden_model import HiddenModelAgent, decision_rows

    if isinstance(agent, HiddenModelAgent):
        import numpy as np

        from tensorcfr.games.pasur.playing.agent import PlayEstimate

        legal, rows = decision_rows(obs)
        scores = agent.model.predict(np.asarray(rows, dtype=np.float32))
        return [PlayEstimate(action=a, value=float(v), samples=1)
                for a, v in zip(legal, scores)], "advantage"
    return None, ""
