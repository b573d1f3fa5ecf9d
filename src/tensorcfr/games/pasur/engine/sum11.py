"""The sum-to-11 capture template of Pasur's numeric cards (paper: the 40 x 2764 matrix).

A numeric card (A..10, indices 0..39, value ``index // 4 + 1``) played from hand captures a
set of numeric pool cards when the played card and the captured cards together sum to 11.
Every such play is therefore a subset of the 40 numeric cards whose values sum to 11 and that
holds exactly one card of the player's hand. There are 2764 such subsets (sizes 2..7:
80, 440, 976, 920, 320 and 28); the paper stores them as a 0/1 matrix ``[40, 2764]`` and finds
the legal numeric captures of a whole tree layer with one matrix product. The subsets are
regenerated here rather than shipped as data.

>>> combos = sum11_combos()
>>> len(combos), combos[0]
(2764, (0, 36))
"""

from __future__ import annotations

from functools import lru_cache

import torch

from tensorcfr.games.pasur.engine.cards import NUM_NUMERIC

TARGET = 11


@lru_cache(maxsize=1)
def sum11_combos() -> tuple[tuple[int, ...], ...]:
    """All subsets (sorted card-index tuples, size >= 2) of the 40 numeric cards summing to 11.

    Ordered by size, then lexicographically by card index.
    """
    values = [c // 4 + 1 for c in range(NUM_NUMERIC)]
    found: list[tuple[int, ...]] = []

    def walk(start: int, remaining: int, chosen: list[int]) -> None:
        if remaining == 0:
            if len(chosen) >= 2:
                found.append(tuple(chosen))
            return
        for card in range(start, NUM_NUMERIC):
            if values[card] > remaining:
                break  # cards are sorted by value
            chosen.append(card)
            walk(card + 1, remaining - values[card], chosen)
            chosen.pop()

    walk(0, TARGET, [])
    return tuple(sorted(found, key=lambda s: (len(s), s)))


@lru_cache(maxsize=1)
def _cpu_matrix() -> torch.Tensor:
    combos = sum11_combos()
    rows = torch.tensor([c for combo in combos for c in combo], dtype=torch.int64)
    cols = torch.repeat_interleave(torch.arange(len(combos)),
                                   torch.tensor([len(combo) for combo in combos]))
    matrix = torch.zeros((NUM_NUMERIC, len(combos)), dtype=torch.uint8)
    matrix[rows, cols] = 1
    return matrix


def sum11_matrix(device: torch.device | str = "cpu") -> torch.Tensor:
    """The paper's template: a uint8 Tensor ``[40, 2764]``, entry ``[c, k]`` = 1 iff card ``c``
    belongs to subset ``k`` of :func:`sum11_combos`."""
    return _cpu_matrix().clone().to(device)


def combos_within(cards: set[int] | frozenset[int]) -> list[tuple[int, ...]]:
    """The sum-to-11 subsets made only of ``cards`` (the cards in play in a round)."""
    outside = torch.ones(NUM_NUMERIC, dtype=torch.int32)
    inside = [c for c in cards if 0 <= c < NUM_NUMERIC]
    outside[inside] = 0
    keep = (outside @ _cpu_matrix().to(torch.int32)) == 0
    combos = sum11_combos()
    return [combos[k] for k in torch.nonzero(keep).flatten().tolist()]
