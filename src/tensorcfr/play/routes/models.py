"""The play server's request bodies: strict pydantic models (no coercion, no unknown keys).

``{"seed": true}``, ``{"seed": "3"}`` and ``{"card": 22.0}`` are refused, as is a play without
its ``captured`` list. Seeds share the session's one range (0..2^63-1).
"""

from typing import Annotated, List, Literal, Optional, Union

from pydantic import BaseModel, ConfigDict, Field

from tensorcfr.games.pasur.vocab import Mode
from tensorcfr.play.session import SEED_MAX

__all__ = ["Message", "NewGameRequest", "PlayRequest"]

STRICT = ConfigDict(strict=True, extra="forbid")

CardIndex = Annotated[int, Field(ge=0, le=51, description="card index 4*rank + suit")]
Seed = Annotated[int, Field(ge=0, le=SEED_MAX, description="a seed, 0..2^63-1")]


class NewGameRequest(BaseModel):
    """A new game. Give at most one of ``seed`` and ``deal``; neither = a random deal."""

    model_config = STRICT
    seed: Optional[Seed] = Field(None, description="the seeded random deal (tensorcfr pasur deal)")
    deal: Optional[Union[str, List[int]]] = Field(
        None, description="52 card codes pool first (\"Ac As 9d Kd ...\") or 52 indices")
    # not strict: a JSON body has no Mode object, only its string ("hidden" or "open", no
    # other spelling or type: the enum's lax mode takes exactly its values)
    mode: Optional[Mode] = Field(
        None, strict=False, description="hidden hands (the real game) or open hands "
                                        "(double-dummy); default: the server's --mode")
    human: Literal["alex", "bob", "Alex", "Bob"] = "alex"
    ai: Optional[str] = Field(None, max_length=40, description=(
        "the opponent: a hidden-hand agent (hidden mode) or an open-hands AI (open mode); "
        "default: the mode's default"))
    ai_seed: Optional[Seed] = Field(None, description="seed of the AI's random draws")


class PlayRequest(BaseModel):
    """The human's play: a card from the hand and the pool cards it captures ([] = laid)."""

    model_config = STRICT
    card: CardIndex
    captured: List[CardIndex] = Field(..., max_length=40, description=(
        "the pool cards the play takes; [] lays the card"))
    notation: Optional[str] = Field(None, max_length=64, description=(
        "ignored: lets a client send back an entry of the view's `legal` list as is"))


class Message(BaseModel):
    """An error: one line."""

    detail: str
