"""Sizes of a Numeral211 variant: decision nodes, infosets, suit-isomorphic and outcome
classes, terminals and the solver's memory estimate (what ``tensorcfr numeral211 info``
prints).  Counts are plain integers, memory in bytes; nothing here solves or prints."""

from __future__ import annotations

import math
from typing import Any

from tensorcfr.games.numeral211.game.config import GameConfig

__all__ = ["game_sizes"]


def game_sizes(config: GameConfig, with_outcomes: bool = True) -> dict[str, Any]:
    """Sizes of a variant, as ``numeral211 info --json`` prints them: per-round lists
    (preflop, flop, turn) of decision nodes (public), infosets (both players), isomorphic
    classes, fold terminals, betting prefixes, canonical boards, action slots, the count of
    showdowns, and the solver's memory estimate in bytes per dtype; with ``with_outcomes``
    the outcome classes per round (slower: it ranks every class)."""
    import torch

    from tensorcfr.games.numeral211.game.outcomes import outcome_classes
    from tensorcfr.games.numeral211.solving.solver import build_game, estimate_bytes

    game = build_game(config)
    n = config.num_cards
    decision_nodes, infosets, folds = [], [], []
    shown = 0
    for r, betting in enumerate(game.betting):
        shown += config.public_cards[r]
        nodes = betting.num_nodes * game.prefixes[r]
        decision_nodes.append(nodes)
        folds.append(len(betting.fold_histories) * game.prefixes[r])
        boards = math.perm(n, shown)  # ordered public cards
        infosets.append(nodes * boards * math.comb(n - shown, 2))
    showdowns = game.prefixes[-1] * len(game.betting[-1].exit_histories)
    info: dict[str, Any] = {
        "game": config.describe(), "parameters": config.to_dict(),
        "cards": n, "private_hands": config.num_hands,
        "decision_nodes": decision_nodes, "infosets": infosets,
        "isomorphic_classes": game.iso.isomorphic_classes(),
        "fold_terminals": folds, "showdowns": showdowns,
        "betting_prefixes": list(game.prefixes), "canonical_boards": list(game.num_boards),
        "action_slots": [t.num_slots for t in game.rounds],
        "memory_estimate_bytes": {"float32": estimate_bytes(game),
                                  "float64": estimate_bytes(build_game(
                                      config, dtype=torch.float64))},
    }
    if with_outcomes:
        info["outcome_classes"] = outcome_classes(config)
    return info
