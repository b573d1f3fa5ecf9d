"""OpenSpiel games for the generic tensor CFR engine: loading and flattening."""

from tensorcfr.games.openspiel.flatten import (
    GameLoadError,
    UnsupportedGameError,
    flatten_game,
    load_game,
)

__all__ = ["GameLoadError", "UnsupportedGameError", "flatten_game", "load_game"]
