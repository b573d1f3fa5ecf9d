"""Routes of game records: download a finished game's record, load one to step through."""

from typing import Any

from fastapi import APIRouter, Body, Depends
from fastapi.responses import JSONResponse

from tensorcfr.errors import TensorCFRError
from tensorcfr.play.routes.context import ServerContext, bad, server_context
from tensorcfr.play.routes.models import Message
from tensorcfr.play.session import GameSession

router = APIRouter(prefix="/api", tags=["records"])
Context = Depends(server_context)


@router.get("/games/{game_id}/record", summary="The finished game as a game record",
            responses={400: {"model": Message}, 404: {"model": Message}})
def record(game_id: str, ctx: ServerContext = Context) -> Any:
    obj = ctx.run(game_id, lambda s: s.record_json())
    name = f"pasur-seed{obj['seed']}.json" if "seed" in obj else "pasur-game.json"
    return JSONResponse(obj, headers={"Content-Disposition": f'attachment; filename="{name}"'})


@router.post("/records", summary="Load a game record to step through with the analysis",
             responses={400: {"model": Message}})
def load_record(obj: Any = Body(..., description="a game record: {\"deal\": [...], "
                                                 "\"plays\": [...]}"),
                ctx: ServerContext = Context) -> dict[str, Any]:
    try:
        session = GameSession.from_record(obj, solutions=ctx.solutions)
    except TensorCFRError as exc:
        raise bad(str(exc)) from None
    ctx.solutions.prefetch(session.deal)
    gid = ctx.store.add(session)
    return ctx.view(gid, session)
