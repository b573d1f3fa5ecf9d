"""Routes of a game in play: the server's options, a new game, the human's and the AI's
plays, undo, and the game as the human sees it. The rules, the modes and what a hidden-hand
game keeps secret (its deal, drawn by :func:`new_deal` from the system's cryptographic
source unless the player names one; no undo) are the session's."""

import secrets
from typing import Any, Optional

from fastapi import APIRouter, Depends, Query

from tensorcfr import __version__
from tensorcfr.errors import TensorCFRError
from tensorcfr.games.pasur.engine.rules import parse_deal
from tensorcfr.play.routes.context import ServerContext, bad, server_context
from tensorcfr.play.routes.models import Message, NewGameRequest, PlayRequest
from tensorcfr.games.pasur.vocab import Mode
from tensorcfr.play.opponents import default_ai
from tensorcfr.play.session import GameSession, new_deal

router = APIRouter(prefix="/api", tags=["games"])
Context = Depends(server_context)
ERRORS = {400: {"model": Message}, 404: {"model": Message}}

@router.get("/options", summary="The modes, the AIs offered and the server's limits")
def options(ctx: ServerContext = Context) -> dict[str, Any]:
    return {
        "version": __version__,
        "mode": ctx.mode,
        "mode_note": ctx.mode.note,
        "modes": [{"name": m, "note": m.note, "default_ai": default_ai(m),
                   "ais": ctx.ai_offers(m)} for m in Mode],
        "ais": ctx.ai_offers(ctx.mode),
        "table_deal": ctx.table_deal,
        "max_games": ctx.store.max_games,
        "ttl_seconds": ctx.store.ttl_seconds,
    }


@router.post("/games", summary="Start a game", responses={400: {"model": Message}})
def new_game(req: NewGameRequest, ctx: ServerContext = Context) -> dict[str, Any]:
    if req.seed is not None and req.deal is not None:
        raise bad("give a seed or a deal, not both")
    mode = req.mode or ctx.mode
    ai = req.ai or default_ai(mode)
    ctx.check_ai(mode, ai)
    try:
        choice = new_deal(req.seed, parse_deal(req.deal) if isinstance(req.deal, str)
                          else req.deal)
        ai_seed = req.ai_seed if req.ai_seed is not None else secrets.randbelow(2**31)
        session = GameSession(choice.deal, req.human, ai, mode=mode, solutions=ctx.solutions,
                              ai_seed=ai_seed, seed=choice.seed, table=ctx.table,
                              model=ctx.model, device=ctx.device, players=ctx.players,
                              practice=choice.chosen)
    except TensorCFRError as exc:
        raise bad(str(exc)) from None
    if session.mode is Mode.OPEN:
        ctx.solutions.prefetch(session.deal)  # hints and the exact AI need it: start now
    gid = ctx.store.add(session)
    return ctx.view(gid, session)


@router.get("/games/{game_id}", summary="The game as the human sees it",
            responses={404: {"model": Message}})
def get_game(game_id: str, at: Optional[int] = Query(None, ge=0, le=48, description=(
        "a finished game: the position before play `at`")),
        ctx: ServerContext = Context) -> dict[str, Any]:
    return ctx.run(game_id, lambda s: ctx.view(game_id, s, at))


@router.post("/games/{game_id}/play", summary="The human's play", responses=ERRORS)
def play(game_id: str, req: PlayRequest, ctx: ServerContext = Context) -> dict[str, Any]:
    def act(s: GameSession) -> dict[str, Any]:
        s.play({"card": req.card, "captured": req.captured})
        return ctx.view(game_id, s)
    return ctx.run(game_id, act)


@router.post("/games/{game_id}/ai", summary="The AI's next play (when it is its turn)",
             responses={**ERRORS, 503: {"model": Message}})
def ai_play(game_id: str, ctx: ServerContext = Context) -> dict[str, Any]:
    def act(s: GameSession) -> dict[str, Any]:
        s.ai_play()
        return ctx.view(game_id, s)
    return ctx.run_work(game_id, act)  # bounded over all games (503 beyond)


@router.post("/games/{game_id}/undo",
             summary="Take back the human's last play (and the AI's replies); open hands only "
                     "(403 in hidden hands)",
             responses={**ERRORS, 403: {"model": Message}})
def undo(game_id: str, ctx: ServerContext = Context) -> dict[str, Any]:
    def act(s: GameSession) -> dict[str, Any]:
        s.undo()
        return ctx.view(game_id, s)
    return ctx.run(game_id, act)


@router.post("/games/{game_id}/play-on", summary="A new game continuing a finished one from "
             "the position before play `at` (same deal, mode, seat and AI)", responses=ERRORS)
def play_on(game_id: str, at: int = Query(..., ge=0, le=47),
            ctx: ServerContext = Context) -> dict[str, Any]:
    session = ctx.run(game_id, lambda s: s.play_on(at))
    if session.mode is Mode.OPEN:
        ctx.solutions.prefetch(session.deal)
    gid = ctx.store.add(session)
    return ctx.view(gid, session)
