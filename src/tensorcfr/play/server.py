"""The Pasur web server: a JSON API over :mod:`tensorcfr.play.session` and the page.

``create_app()`` builds the FastAPI application; ``tensorcfr pasur serve`` runs it with uvicorn.

* Game state lives on the server under an unguessable id (``secrets.token_urlsafe``); clients
  only ever receive :meth:`GameSession.view` objects, never the session itself.
* Every request body is a pydantic model (card indices 0..51, bounded lists); request bodies
  over :data:`MAX_BODY_BYTES` are refused with 413. An illegal play is a 400 whose ``detail``
  is the rules engine's reason; an unknown or expired id a 404; a bad deal or record a 400
  with the project's one-line message.
* Memory is bounded: at most ``max_games`` games (the least recently used goes first), games
  idle for ``ttl_seconds`` expire, and exact solutions sit in a bounded LRU
  (:class:`SolutionCache`).
* No request touches the file system: the page's three files are read from the package once,
  at start-up; records are uploaded and downloaded as JSON bodies.

fastapi is imported inside :func:`create_app` so that ``tensorcfr --help`` stays fast.
"""

# No "from __future__ import annotations": FastAPI reads the endpoints' annotations at run time.

import secrets
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from importlib import resources
from typing import Any, Callable

from tensorcfr.play.session import GameSession, PlayerCache, SolutionCache

__all__ = ["GameStore", "MAX_BODY_BYTES", "create_app", "load_static"]

MAX_BODY_BYTES = 256 * 1024
"""Largest request body accepted (a game record is about 3 KiB)."""

STATIC_FILES = {"index.html": "text/html; charset=utf-8",
                "app.js": "text/javascript; charset=utf-8",
                "style.css": "text/css; charset=utf-8"}

CSP = ("default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; "
       "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'")


def load_static() -> dict[str, bytes]:
    """The page's files, read from the installed package (once, at start-up)."""
    folder = resources.files("tensorcfr.play") / "static"
    return {name: (folder / name).read_bytes() for name in STATIC_FILES}


@dataclass
class _Entry:
    session: GameSession
    lock: threading.Lock = field(default_factory=threading.Lock)
    last_used: float = 0.0


class GameStore:
    """Games by id, bounded in number and in idle time. Thread-safe.

    ``clock`` (seconds, monotonic) is injectable for tests.
    """

    def __init__(self, max_games: int = 256, ttl_seconds: float = 2 * 3600,
                 clock: Callable[[], float] = time.monotonic) -> None:
        if max_games < 1:
            raise ValueError("max_games must be at least 1")
        self.max_games = max_games
        self.ttl_seconds = ttl_seconds
        self.clock = clock
        self._games: OrderedDict[str, _Entry] = OrderedDict()
        self._lock = threading.Lock()

    def _expire(self, now: float) -> None:
        while self._games:
            gid, entry = next(iter(self._games.items()))
            if now - entry.last_used <= self.ttl_seconds:
                break
            del self._games[gid]

    def add(self, session: GameSession) -> str:
        """Store ``session`` under a new unguessable id (evicting the oldest if full)."""
        gid = secrets.token_urlsafe(18)
        now = self.clock()
        with self._lock:
            self._expire(now)
            self._games[gid] = _Entry(session, last_used=now)
            while len(self._games) > self.max_games:
                self._games.popitem(last=False)
        return gid

    def get(self, gid: str) -> _Entry | None:
        """The entry of ``gid`` (refreshing its idle time), or None if unknown or expired."""
        now = self.clock()
        with self._lock:
            self._expire(now)
            entry = self._games.get(gid)
            if entry is None:
                return None
            entry.last_used = now
            self._games.move_to_end(gid)
            return entry

    def __len__(self) -> int:
        with self._lock:
            self._expire(self.clock())
            return len(self._games)


class _TooLarge(Exception):
    pass


class _BodyLimit:
    """ASGI middleware: 413 for a request body over ``limit`` bytes (declared or streamed)."""

    def __init__(self, app: Any, limit: int) -> None:
        self.app = app
        self.limit = limit

    async def _refuse(self, send: Any) -> None:
        body = ('{"detail":"request body over %d bytes"}' % self.limit).encode()
        await send({"type": "http.response.start", "status": 413,
                    "headers": [(b"content-type", b"application/json"),
                                (b"content-length", str(len(body)).encode())]})
        await send({"type": "http.response.body", "body": body})

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = dict(scope.get("headers") or []).get(b"content-length")
        if declared is not None and (not declared.isdigit() or int(declared) > self.limit):
            await self._refuse(send)
            return
        received = 0
        started = False

        async def limited_receive() -> Any:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.limit:
                    raise _TooLarge
            return message

        async def tracking_send(message: Any) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, limited_receive, tracking_send)
        except _TooLarge:
            if not started:
                await self._refuse(send)


def _run_deal(folder: str) -> list[int] | None:
    """The deal of a DCFR run folder (its manifest), or None if it does not say."""
    import json
    from pathlib import Path

    try:
        manifest = json.loads((Path(folder) / "manifest.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    deal = manifest.get("deal") if isinstance(manifest, dict) else None
    return [int(c) for c in deal] if isinstance(deal, list) and len(deal) == 52 else None


def openapi_html(spec: dict[str, Any]) -> str:
    """A self-contained HTML page listing the API of an OpenAPI description: every path and
    method with its summary, parameters, request body schema and responses."""
    from html import escape

    def schema_name(schema: dict[str, Any]) -> str:
        if "$ref" in schema:
            return schema["$ref"].rsplit("/", 1)[-1]
        if "anyOf" in schema:
            return " | ".join(schema_name(s) for s in schema["anyOf"])
        return str(schema.get("type", "object"))

    info = spec.get("info", {})
    rows = []
    for path, methods in spec.get("paths", {}).items():
        for method, op in methods.items():
            params = ", ".join(
                f"{p['name']} ({p.get('in')}, {schema_name(p.get('schema', {}))})"
                for p in op.get("parameters", []))
            body = op.get("requestBody", {}).get("content", {}).get("application/json", {})
            body_text = schema_name(body.get("schema", {})) if body else ""
            codes = ", ".join(op.get("responses", {}))
            rows.append(f"<tr><td><code>{escape(method.upper())}</code></td>"
                        f"<td><code>{escape(path)}</code></td><td>{escape(op.get('summary', ''))}"
                        f"</td><td>{escape(params)}</td><td>{escape(body_text)}</td>"
                        f"<td>{escape(codes)}</td></tr>")
    schemas = []
    for name, schema in spec.get("components", {}).get("schemas", {}).items():
        fields = "; ".join(f"{k}: {schema_name(v)}" for k, v in schema.get("properties", {}).items())
        schemas.append(f"<tr><td><code>{escape(name)}</code></td><td>{escape(fields)}</td></tr>")
    return ("<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<title>{escape(info.get('title', 'API'))} API</title>"
            "<link rel=\"stylesheet\" href=\"/static/style.css\"></head>"
            "<body class=\"api-docs\"><main class=\"panel\">"
            f"<h1>{escape(info.get('title', 'API'))} {escape(str(info.get('version', '')))}</h1>"
            f"<p>{escape(info.get('description', ''))}</p>"
            "<p>The machine-readable description: <a href=\"/openapi.json\">/openapi.json</a>. "
            "Errors are JSON <code>{\"detail\": \"...\"}</code>.</p>"
            "<table class=\"analysis-table\"><thead><tr><th>method</th><th>path</th><th>what</th>"
            "<th>parameters</th><th>JSON body</th><th>responses</th></tr></thead><tbody>"
            + "".join(rows) + "</tbody></table><h2>Schemas</h2>"
            "<table class=\"analysis-table\"><tbody>" + "".join(schemas)
            + "</tbody></table><p><a href=\"/\">back to the game</a></p></main></body></html>")


def create_app(*, table: str | None = None, model: str | None = None, max_games: int = 256,
               ttl_seconds: float = 2 * 3600, cache_size: int = 8, device: str = "cpu",
               clock: Callable[[], float] = time.monotonic,
               solutions: SolutionCache | None = None, mode: str = "open") -> Any:
    """The FastAPI application.

    Args:
        table: a solved run folder (``tensorcfr pasur solve --method dcfr --out DIR``): offers
            the ``table`` AI. ``model``: an XGBoost model folder: offers the ``model`` AI.
        max_games: games held at once; ``ttl_seconds``: idle time after which a game expires.
        cache_size: exact solutions kept (each 5-60 MiB).
        device: torch device of the solver and the model.
        mode: ``"open"`` (open hands, the game as solved; what ``tensorcfr pasur serve``
            runs) or ``"hidden"``: the groundwork of a hidden-hand mode. Every view is built
            for the human's seat by :meth:`GameSession.view` with that visibility, so the
            other hand and the undealt cards are never sent; hints and the analysis (exact
            values, which reveal the hidden cards) are refused until the game is over. Not
            offered on the command line yet: the AI still plays the open-hands solution.
    """
    from typing import Annotated, List, Literal, Optional, Union

    from fastapi import Body, FastAPI, HTTPException, Query, Request
    from fastapi.exceptions import RequestValidationError
    from fastapi.responses import JSONResponse, Response
    from pydantic import BaseModel, ConfigDict, Field

    from tensorcfr import __version__
    from tensorcfr.errors import TensorCFRError
    from tensorcfr.games.pasur.engine.rules import parse_deal, random_deal, validate_deal
    from tensorcfr.play.session import AI_NAMES, VISIBILITIES

    if mode not in VISIBILITIES:
        raise ValueError(f"mode must be one of {VISIBILITIES}, got {mode!r}")
    static = load_static()
    store = GameStore(max_games=max_games, ttl_seconds=ttl_seconds, clock=clock)
    cache = solutions if solutions is not None else SolutionCache(max_size=cache_size,
                                                                   device=device)
    players = PlayerCache(max_size=4)
    table_deal = _run_deal(table) if table is not None else None
    available = {"exact": True, "random": True, "table": table is not None,
                 "model": model is not None}
    descriptions = {
        "exact": "plays an optimal move (exact minimax solution of the deal)",
        "random": "plays a uniformly random legal move",
        "table": "plays the DCFR strategy table" + (f" in {table}" if table else ""),
        "model": "plays the learned XGBoost policy" + (f" in {model}" if model else ""),
    }

    app = FastAPI(
        title="tensorcfr Pasur",
        # FastAPI's /docs and /redoc pages load their scripts from a CDN: off (nothing is
        # fetched from the internet); the API description is GET /openapi.json, and /docs
        # is a plain page built from it here.
        docs_url=None,
        redoc_url=None,
        version=__version__,
        description="Play open-hands (double-dummy) Pasur against the AI, with hints and an "
                    "exact analysis of every play. Card indices are 4*rank + suit "
                    "(rank A..K = 0..12, suit clubs, diamonds, hearts, spades = 0..3).",
    )
    app.state.store = store
    app.state.solutions = cache

    # ------------------------------------------------------------------ models

    CardIndex = Annotated[int, Field(ge=0, le=51, description="card index 4*rank + suit")]

    class NewGameRequest(BaseModel):
        """A new game. Give at most one of ``seed`` and ``deal``; neither = a random deal."""

        model_config = ConfigDict(extra="forbid")
        seed: Optional[int] = Field(None, ge=0, le=2**63 - 1,
                                    description="the seeded random deal (tensorcfr pasur deal)")
        deal: Optional[Union[str, List[int]]] = Field(
            None, description="52 card codes pool first (\"Ac As 9d Kd ...\") or 52 indices")
        human: Literal["alex", "bob", "Alex", "Bob"] = "alex"
        ai: Literal["exact", "random", "table", "model"] = "exact"
        ai_seed: Optional[int] = Field(None, ge=0, le=2**63 - 1,
                                       description="seed of the AI's random draws")

    class PlayRequest(BaseModel):
        """The human's play: a card from the hand and the pool cards it captures ([] = laid)."""

        model_config = ConfigDict(extra="forbid")
        card: CardIndex
        captured: List[CardIndex] = Field(default_factory=list, max_length=40)
        notation: Optional[str] = Field(None, max_length=64, description=(
            "ignored: lets a client send back an entry of the view's `legal` list as is"))

    class Message(BaseModel):
        detail: str

    # ------------------------------------------------------------------ helpers

    def bad(message: str, code: int = 400) -> HTTPException:
        return HTTPException(status_code=code, detail=message)

    def entry_of(game_id: str) -> Any:
        if len(game_id) > 64:
            raise bad("no such game (unknown id, or the game has expired)", 404)
        entry = store.get(game_id)
        if entry is None:
            raise bad("no such game (unknown id, or the game has expired)", 404)
        return entry

    def view_of(game_id: str, session: GameSession, at: int | None = None) -> dict[str, Any]:
        # the only place a game's state leaves the server: built for the human's seat
        return {"game_id": game_id, **session.view(visibility=mode, at=at)}

    def exact_values_allowed(session: GameSession) -> None:
        if mode == "hidden" and not session.over:
            raise bad("exact values reveal the hidden cards: hints and the analysis come "
                      "after the game in hidden-hand mode", 403)

    def run(game_id: str, action: Callable[[GameSession], Any]) -> Any:
        entry = entry_of(game_id)
        with entry.lock:
            try:
                return action(entry.session)
            except TensorCFRError as exc:
                raise bad(str(exc)) from None

    # ------------------------------------------------------------------ middleware

    @app.middleware("http")
    async def security_headers(request: Request, call_next: Any) -> Any:
        response = await call_next(request)
        response.headers.setdefault("Content-Security-Policy", CSP)
        response.headers.setdefault("X-Content-Type-Options", "nosniff")
        response.headers.setdefault("Referrer-Policy", "no-referrer")
        return response

    app.add_middleware(_BodyLimit, limit=MAX_BODY_BYTES)

    @app.exception_handler(RequestValidationError)
    async def validation_error(request: Request, exc: RequestValidationError) -> Any:
        """A malformed request is a 400 with one line naming the field (like bad deals)."""
        errors = exc.errors()
        first = errors[0] if errors else {"loc": (), "msg": "invalid request"}
        where = ".".join(str(p) for p in first.get("loc", ()) if p != "body") or "request"
        more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
        return JSONResponse({"detail": f"{where}: {first.get('msg', 'invalid')}{more}"},
                            status_code=400)

    # ------------------------------------------------------------------ page

    def static_response(name: str) -> Response:
        return Response(static[name], media_type=STATIC_FILES[name],
                        headers={"Cache-Control": "no-cache"})

    @app.get("/", include_in_schema=False)
    def page() -> Response:
        return static_response("index.html")

    def described_api() -> dict[str, Any]:
        """FastAPI's OpenAPI description, with the 400 this server answers for a malformed
        request in place of FastAPI's default 422 (see ``validation_error``)."""
        if app.openapi_schema:
            return app.openapi_schema
        from fastapi.openapi.utils import get_openapi

        spec = get_openapi(title=app.title, version=app.version, description=app.description,
                           routes=app.routes)
        for methods in spec.get("paths", {}).values():
            for op in methods.values():
                responses = op.get("responses", {})
                if responses.pop("422", None) is not None:
                    responses.setdefault("400", {
                        "description": "Invalid request (one line naming the field)",
                        "content": {"application/json": {
                            "schema": {"$ref": "#/components/schemas/Message"}}}})
        schemas = spec.get("components", {}).get("schemas", {})
        for unused in ("HTTPValidationError", "ValidationError"):
            schemas.pop(unused, None)
        app.openapi_schema = spec
        return spec

    app.openapi = described_api  # type: ignore[method-assign]
    api_page: list[bytes] = []

    @app.get("/docs", include_in_schema=False)
    def api_docs() -> Response:
        """The API as a plain page built from the OpenAPI description (no CDN, no script)."""
        if not api_page:
            api_page.append(openapi_html(app.openapi()).encode())
        return Response(api_page[0], media_type="text/html; charset=utf-8")

    @app.get("/static/{name}", include_in_schema=False)
    def static_file(name: str) -> Response:
        if name not in static or name == "index.html":
            raise bad("not found", 404)
        return static_response(name)

    # ------------------------------------------------------------------ API

    @app.get("/api/options", summary="The AIs offered and the server's limits")
    def options() -> dict[str, Any]:
        return {
            "version": __version__,
            "mode": mode,
            "mode_note": ("open hands (double-dummy): both players see every card of the deal"
                          if mode == "open" else "hidden hands: each side sees only its own "
                          "hand, the pool and the cards played"),
            "ais": [{"name": n, "available": available[n], "description": descriptions[n]}
                    for n in AI_NAMES],
            "table_deal": table_deal,
            "max_games": store.max_games,
            "ttl_seconds": store.ttl_seconds,
        }

    @app.post("/api/games", summary="Start a game", responses={400: {"model": Message}})
    def new_game(req: NewGameRequest) -> dict[str, Any]:
        if req.seed is not None and req.deal is not None:
            raise bad("give a seed or a deal, not both")
        if not available[req.ai]:
            flag = "--table DIR" if req.ai == "table" else "--model DIR"
            raise bad(f"the {req.ai} AI is not available: start the server with {flag}")
        seed = req.seed
        try:
            if isinstance(req.deal, str):
                deal = parse_deal(req.deal)
            elif req.deal is not None:
                deal = validate_deal(req.deal)
            else:
                if seed is None:
                    seed = secrets.randbelow(1_000_000)
                deal = random_deal(seed)
            ai_seed = req.ai_seed if req.ai_seed is not None else secrets.randbelow(2**31)
            session = GameSession(deal, req.human, req.ai, solutions=cache, ai_seed=ai_seed,
                                  seed=seed, table=table, model=model, device=device,
                                  players=players)
        except TensorCFRError as exc:
            raise bad(str(exc)) from None
        cache.prefetch(session.deal)  # hints and the exact AI need it: start now
        gid = store.add(session)
        return view_of(gid, session)

    @app.get("/api/games/{game_id}", summary="The game as the human sees it",
             responses={404: {"model": Message}})
    def get_game(game_id: str, at: Optional[int] = Query(None, ge=0, le=48, description=(
            "a finished game: the position before play `at`"))) -> dict[str, Any]:
        return run(game_id, lambda s: view_of(game_id, s, at))

    @app.post("/api/games/{game_id}/play", summary="The human's play",
              responses={400: {"model": Message}, 404: {"model": Message}})
    def play(game_id: str, req: PlayRequest) -> dict[str, Any]:
        def act(s: GameSession) -> dict[str, Any]:
            s.play({"card": req.card, "captured": req.captured})
            return view_of(game_id, s)
        return run(game_id, act)

    @app.post("/api/games/{game_id}/ai", summary="The AI's next play (when it is its turn)",
              responses={400: {"model": Message}, 404: {"model": Message}})
    def ai_play(game_id: str) -> dict[str, Any]:
        def act(s: GameSession) -> dict[str, Any]:
            s.ai_play()
            return view_of(game_id, s)
        return run(game_id, act)

    @app.post("/api/games/{game_id}/undo",
              summary="Take back the human's last play (and the AI's replies)",
              responses={400: {"model": Message}, 404: {"model": Message}})
    def undo(game_id: str) -> dict[str, Any]:
        def act(s: GameSession) -> dict[str, Any]:
            s.undo()
            return view_of(game_id, s)
        return run(game_id, act)

    @app.get("/api/games/{game_id}/hints",
             summary="Every legal play with its exact value for the player to move",
             responses={400: {"model": Message}, 403: {"model": Message},
                        404: {"model": Message}})
    def hints(game_id: str, at: Optional[int] = Query(None, ge=0, le=48)) -> dict[str, Any]:
        def act(s: GameSession) -> dict[str, Any]:
            if at is not None and not s.over:
                raise bad("only a finished game can be stepped through")
            exact_values_allowed(s)
            state = s.states[at] if at is not None and at < len(s.states) else s.state
            return {"at": state.play_index, "player": ("Alex", "Bob")[state.player]
                    if not state.is_terminal else None, "hints": s.hints(at)}
        return run(game_id, act)

    @app.get("/api/games/{game_id}/analysis",
             summary="Final score, the deal's exact value, every play with the points it cost",
             responses={403: {"model": Message}, 404: {"model": Message}})
    def analysis(game_id: str) -> dict[str, Any]:
        def act(s: GameSession) -> dict[str, Any]:
            exact_values_allowed(s)
            return s.analysis()
        return run(game_id, act)

    @app.get("/api/games/{game_id}/record", summary="The finished game as a game record",
             responses={400: {"model": Message}, 404: {"model": Message}})
    def record(game_id: str) -> Any:
        obj = run(game_id, lambda s: s.record_json())
        name = f"pasur-seed{obj['seed']}.json" if "seed" in obj else "pasur-game.json"
        return JSONResponse(obj, headers={"Content-Disposition": f'attachment; filename="{name}"'})

    @app.post("/api/records", summary="Load a game record to step through with the analysis",
              responses={400: {"model": Message}})
    def load_record(obj: Any = Body(..., description="a game record: {\"deal\": [...], \"plays\": [...]}")) -> dict[str, Any]:
        try:
            session = GameSession.from_record(obj, solutions=cache)
        except TensorCFRError as exc:
            raise bad(str(exc)) from None
        cache.prefetch(session.deal)
        gid = store.add(session)
        return view_of(gid, session)

    return app
