"""Routes that evaluate plays: hints (exact values in open mode, the hidden-hand agent's
estimates in hidden mode) and the end-of-game analysis. What may be shown when is decided by
the session (a 403 when an answer would reveal hidden cards)."""

from typing import Any, Optional

from fastapi import APIRouter, Depends, Query

from tensorcfr.play.routes.context import ServerContext, server_context
from tensorcfr.play.routes.models import Message

router = APIRouter(prefix="/api", tags=["hints and analysis"])
Context = Depends(server_context)


@router.get("/games/{game_id}/hints",
            summary="Every legal play of the player to move with its value: exact (open "
                    "hands, or a finished game) or the agent's estimate (hidden hands)",
            responses={400: {"model": Message}, 403: {"model": Message},
                       404: {"model": Message}, 503: {"model": Message}})
def hints(game_id: str, at: Optional[int] = Query(None, ge=0, le=48),
          ctx: ServerContext = Context) -> dict[str, Any]:
    return ctx.run_work(game_id, lambda s: s.hint_report(at))  # bounded (503 beyond)


@router.get("/games/{game_id}/analysis",
            summary="Final score, the deal's exact value, every play with the points it cost "
                    "(and, in hidden mode, against the agent's estimate)",
            responses={403: {"model": Message}, 404: {"model": Message},
                       503: {"model": Message}})
def analysis(game_id: str, ctx: ServerContext = Context) -> dict[str, Any]:
    return ctx.analysis(game_id)  # cached, and bounded in concurrency (play/limits.py)
