"""The betting of one round as a small tree (the same for every history before it).

Each round of fixed-limit betting is a template of decision nodes (10 with the default 4 bets
per round), fold terminals (8) and *exits* that close the round (9: check-check and every
call).  The public tree of the whole game is the product of the rounds' templates: round r's
nodes repeat once per exit sequence of the earlier rounds (its *prefixes*).
"""

from __future__ import annotations

from dataclasses import dataclass

from tensorcfr.games.numeral211.game.config import GameConfig

__all__ = ["RoundBetting", "round_betting"]


@dataclass(frozen=True)
class RoundBetting:
    """Betting template of one round.

    ``histories[j]``, ``players[j]``: decision node j's in-round history and player to act
    (nodes in depth-first order, parents first); ``actions[j]``: action letters;
    ``children[j][a]``: ``("node", j')``, ``("fold", k)`` or ``("exit", e)``;
    ``fold_histories[k]``/``fold_player[k]``/``fold_bets[k]``: fold k's history, who folded and
    the bets+raises the *folder* matched in this round; ``exit_histories[e]``/``exit_bets[e]``:
    exit e's history and the bets+raises both matched.
    """

    histories: tuple[str, ...]
    players: tuple[int, ...]
    actions: tuple[tuple[str, ...], ...]
    children: tuple[tuple[tuple[str, int], ...], ...]
    fold_histories: tuple[str, ...]
    fold_player: tuple[int, ...]
    fold_bets: tuple[int, ...]
    exit_histories: tuple[str, ...]
    exit_bets: tuple[int, ...]

    @property
    def num_nodes(self) -> int:
        """Decision nodes of the template."""
        return len(self.histories)

    @property
    def num_slots(self) -> int:
        """Action slots (sum of the nodes' action counts)."""
        return sum(len(a) for a in self.actions)


def round_betting(config: GameConfig, r: int) -> RoundBetting:
    """The betting template of round ``r``."""
    first = config.first_to_act[r]
    cap = config.max_bets[r]
    histories: list[str] = []
    players: list[int] = []
    actions: list[tuple[str, ...]] = []
    children: list[list[tuple[str, int]]] = []
    folds: list[tuple[str, int, int]] = []
    exits: list[tuple[str, int]] = []

    def visit(history: str) -> int:
        j = len(histories)
        player = (first + len(history)) % 2
        bets = history.count("r")
        facing = bool(history) and history[-1] == "r"
        legal = (("f",) if facing else ()) + ("c",) + (("r",) if bets < cap else ())
        histories.append(history)
        players.append(player)
        actions.append(legal)
        children.append([])
        for a in legal:
            h = history + a
            if a == "f":
                folds.append((h, player, bets - 1))
                children[j].append(("fold", len(folds) - 1))
            elif a == "c" and (history == "c" or facing):
                exits.append((h, bets))
                children[j].append(("exit", len(exits) - 1))
            else:
                children[j].append(("node", visit(h)))
        return j

    visit("")
    return RoundBetting(tuple(histories), tuple(players), tuple(actions),
                        tuple(tuple(c) for c in children), tuple(f[0] for f in folds),
                        tuple(f[1] for f in folds), tuple(f[2] for f in folds),
                        tuple(e[0] for e in exits), tuple(e[1] for e in exits))
