"""The Pasur web server: the FastAPI application over :mod:`tensorcfr.play.session`.

``create_app()`` assembles the application from the routers of :mod:`tensorcfr.play.routes`
(games, hints and analysis, records, the page); ``tensorcfr pasur serve`` runs it with uvicorn.
This module holds only what concerns every route: the ``Host`` check (DNS rebinding,
:mod:`tensorcfr.play.hosts`), request-size limits, security headers, readable messages for
malformed requests and the OpenAPI description.

* Game state lives on the server under an unguessable id (:class:`GameStore`); clients only
  ever receive :meth:`GameSession.view` objects, built for the human's seat (in hidden mode
  from the human's observation: no hidden card is ever sent).
* Every request body is a strict pydantic model (no coercion, no unknown keys); request
  bodies over :data:`MAX_BODY_BYTES` are refused with 413, declared or streamed (chunked). An
  illegal play is a 400 whose ``detail`` is the rules engine's reason; an unknown or expired
  id a 404; a question whose answer would reveal hidden cards a 403.
* A request whose ``Host`` header is not a name this server is known by (the loopback names,
  ``--host``, ``--allowed-host``) gets a 400 before any route sees it: a web page cannot
  drive the server through DNS rebinding.
* Work is bounded: an analysis is cached by deal and plays, and at most a few run at once
  (:mod:`tensorcfr.play.limits`; the others wait briefly or get a 503 with ``Retry-After``).
* Memory is bounded: at most ``max_games`` games (the least recently used goes first), games
  idle for ``ttl_seconds`` expire, and exact solutions sit in a bounded LRU
  (:class:`SolutionCache`, ``cache_size`` solutions); see docs/pasur_play.md for the figures.

fastapi is imported inside :func:`create_app` so that ``tensorcfr --help`` stays fast.
"""

# No "from __future__ import annotations": FastAPI reads the endpoints' annotations at run time.

import time
from typing import Any, Callable, Sequence

from tensorcfr.play.hosts import HostPolicy
from tensorcfr.play.limits import WorkGate
from tensorcfr.games.pasur.vocab import Mode
from tensorcfr.play.caches import SolutionCache
from tensorcfr.play.session import DEFAULT_MODE
from tensorcfr.play.store import GameStore

__all__ = ["GameStore", "MAX_BODY_BYTES", "create_app", "load_static", "readable_error"]

MAX_BODY_BYTES = 256 * 1024
"""Largest request body accepted (a game record is about 3 KiB)."""

CSP = ("default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; "
       "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'")


def load_static() -> dict[str, bytes]:
    """The page's files, read from the installed package (see :mod:`.routes.pages`)."""
    from tensorcfr.play.routes.pages import load_static as load

    return load()


class _BodyLimit:
    """ASGI middleware: 413 for a request body over ``limit`` bytes, whether its length is
    declared (Content-Length) or not (chunked). The body is read here, in full, before the
    application sees it (bodies are small: a record is about 3 KiB)."""

    def __init__(self, app: Any, limit: int) -> None:
        self.app = app
        self.limit = limit

    async def _refuse(self, send: Any) -> None:
        body = ('{"detail":"the request body is over %d bytes"}' % self.limit).encode()
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
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] != "http.request":  # the client went away
                return
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.limit:
                await self._refuse(send)
                return
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        body = b"".join(chunks)
        sent = False

        async def replay() -> Any:
            nonlocal sent
            if not sent:
                sent = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()  # after the body: wait for the disconnect

        await self.app(scope, replay, send)


class _HostCheck:
    """ASGI middleware: 400 with a one-line JSON ``detail`` for a request whose ``Host``
    header the :class:`~tensorcfr.play.hosts.HostPolicy` does not allow (or that has none),
    before any route or body is read."""

    def __init__(self, app: Any, policy: HostPolicy) -> None:
        self.app = app
        self.policy = policy

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            hosts = [v for k, v in scope.get("headers") or [] if k == b"host"]
            header = hosts[0].decode("latin-1") if len(hosts) == 1 else None
            if not self.policy.allows(header):
                body = (b'{"detail":"this server does not answer to that Host header (a guard '
                        b'against DNS rebinding): use the address it listens on, or start it '
                        b'with --allowed-host NAME"}')
                await send({"type": "http.response.start", "status": 400,
                            "headers": [(b"content-type", b"application/json"),
                                        (b"content-length", str(len(body)).encode())]})
                await send({"type": "http.response.body", "body": body})
                return
        await self.app(scope, receive, send)


def _run_deal(folder: str) -> list[int] | None:
    """The deal of a DCFR run folder (its manifest), or None if it does not say."""
    from tensorcfr.utils.manifest import peek_manifest

    manifest = peek_manifest(folder)
    deal = manifest.get("deal") if manifest is not None else None
    return [int(c) for c in deal] if isinstance(deal, list) and len(deal) == 52 else None


def readable_error(error: dict[str, Any]) -> str:
    """One line for one pydantic validation error: the field, what is wrong, what was sent."""
    import json

    loc = [str(p) for p in error.get("loc", ()) if p != "body"]
    kind = error.get("type", "")
    if kind == "json_invalid":
        reason = (error.get("ctx") or {}).get("error", "")
        return ("the request body is not valid JSON" + (f" ({reason})" if reason else ""))
    where = ".".join(p for p in loc if not p.isdigit()) or "request"
    if kind == "missing":
        return f"{where}: required"
    if kind == "extra_forbidden":
        return f"{where}: not a field of this request"
    msg = str(error.get("msg", "invalid"))
    msg = msg[:1].lower() + msg[1:]
    if "input" in error and kind not in ("model_attributes_type",):
        try:
            given = json.dumps(error["input"])
        except (TypeError, ValueError):
            given = repr(error["input"])
        if len(given) <= 40:
            msg += f", got {given}"
    return f"{where}: {msg}"


def create_app(*, table: str | None = None, model: str | None = None, max_games: int = 256,
               ttl_seconds: float = 2 * 3600, cache_size: int = 4, device: str = "cpu",
               clock: Callable[[], float] = time.monotonic,
               solutions: SolutionCache | None = None, mode: Mode | str = DEFAULT_MODE,
               host: str = "127.0.0.1", allowed_hosts: Sequence[str] = (),
               max_analyses: int = 2) -> Any:
    """The FastAPI application.

    Args:
        table: a solved run folder (``tensorcfr pasur solve --method dcfr --out DIR``): offers
            the ``table`` AI (open hands). ``model``: an XGBoost model folder: the ``model``
            AI (open hands).
        max_games: games held at once; ``ttl_seconds``: idle time after which a game expires.
        cache_size: exact solutions kept (each 5-60 MiB), 1..``CACHE_SIZE_LIMIT``; max_games
            1..``MAX_GAMES_LIMIT`` (:mod:`tensorcfr.play.limits`).
        device: torch device of the solver and the model (checked here:
            :class:`~tensorcfr.errors.TensorCFRError` for one that is not usable).
        mode: the mode new games start in unless the request names one: ``"hidden"`` (the
            real game; hints are the agent's estimates, exact values after the game) or
            ``"open"`` (double-dummy study mode); a :class:`Mode`, or its string (parsed
            here: a one-line :class:`~tensorcfr.errors.TensorCFRError` for another).
        host: the address the server listens on; with ``allowed_hosts`` it decides the
            ``Host`` headers answered (:meth:`HostPolicy.for_listen`; others get a 400).
        max_analyses: analyses computed at once (as many more may wait, up to 30 s each;
            the rest get a 503).
    """
    from fastapi import FastAPI, Request
    from fastapi.exceptions import RequestValidationError
    from fastapi.responses import JSONResponse

    from tensorcfr import __version__
    from tensorcfr.play.routes import games, insight, pages, records
    from tensorcfr.play.routes.context import ServerContext

    from tensorcfr.play.limits import CACHE_SIZE_LIMIT
    from tensorcfr.utils.device import resolve_device

    mode = Mode.parse(mode)
    resolve_device(device, "device")  # a bad device fails here, not at the first AI move
    if not 1 <= cache_size <= CACHE_SIZE_LIMIT:
        raise ValueError(f"cache_size must be 1..{CACHE_SIZE_LIMIT}, got {cache_size}")
    policy = HostPolicy.for_listen(host, allowed_hosts)
    app = FastAPI(
        title="tensorcfr Pasur",
        # FastAPI's /docs and /redoc pages load their scripts from a CDN: off (nothing is
        # fetched from the internet); the API description is GET /openapi.json, and /docs
        # is a plain page built from it (routes/pages.py).
        docs_url=None,
        redoc_url=None,
        version=__version__,
        description="Play Pasur against the AI, with hidden hands (the real game: the AI is a "
                    "hidden-hand agent, hints are its estimates) or open hands (double-dummy: "
                    "exact hints), and an exact analysis of every play after the game. Card "
                    "indices are 4*rank + suit (rank A..K = 0..12, suit clubs, diamonds, "
                    "hearts, spades = 0..3).",
    )
    store = GameStore(max_games=max_games, ttl_seconds=ttl_seconds, clock=clock)
    cache = solutions if solutions is not None else SolutionCache(max_size=cache_size,
                                                                   device=device)
    app.state.context = ServerContext(store=store, solutions=cache, mode=mode, table=table,
                                      model=model, device=device,
                                      table_deal=_run_deal(table) if table else None,
                                      analysis_gate=WorkGate(max_running=max_analyses,
                                                             max_waiting=max_analyses))
    app.state.store = store
    app.state.solutions = cache
    app.state.static = pages.load_static()
    for router in (games.router, insight.router, records.router, pages.router):
        app.include_router(router)

    @app.middleware("http")
    async def security_headers(request: Request, call_next: Any) -> Any:
        response = await call_next(request)
        response.headers.setdefault("Content-Security-Policy", CSP)
        response.headers.setdefault("X-Content-Type-Options", "nosniff")
        response.headers.setdefault("Referrer-Policy", "no-referrer")
        return response

    app.add_middleware(_BodyLimit, limit=MAX_BODY_BYTES)
    app.add_middleware(_HostCheck, policy=policy)  # added last: runs first
    app.state.host_policy = policy

    @app.exception_handler(RequestValidationError)
    async def validation_error(request: Request, exc: RequestValidationError) -> Any:
        """A malformed request is a 400 with one readable line naming the field."""
        errors = exc.errors()
        first = readable_error(errors[0]) if errors else "invalid request"
        more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
        return JSONResponse({"detail": first + more}, status_code=400)

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
    return app
