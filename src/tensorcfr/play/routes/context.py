"""What every route of the play server shares: :class:`ServerContext` and its helpers.

The context holds the store of games, the solution cache, the loaded players and the server's
options; :func:`server_context` hands it to a route (``Depends``). :meth:`ServerContext.run`
runs a session call under the game's lock and turns the session's one-line errors into HTTP
answers (400, 403 for a question that would reveal hidden cards, 404 for an unknown game).
Nothing here knows the rules.
"""

from dataclasses import dataclass, field
from typing import Any, Callable

from fastapi import HTTPException, Request

from tensorcfr.errors import HiddenCardsError, TensorCFRError
from tensorcfr.games.pasur.vocab import Mode
from tensorcfr.play.caches import AnalysisCache, PlayerCache, SolutionCache, analysis_key
from tensorcfr.play.limits import Busy, WorkGate
from tensorcfr.play.opponents import (
    ai_description,
    ai_names,
    ai_sees_your_hand,
    check_ai,
    make_hidden_agent,
)
from tensorcfr.play.store import GameStore

__all__ = ["ServerContext", "bad", "server_context"]

NO_SUCH_GAME = "no such game (unknown id, or the game has expired)"


def bad(message: str, code: int = 400) -> HTTPException:
    """An HTTP error whose JSON body is ``{"detail": message}``."""
    return HTTPException(status_code=code, detail=message)


@dataclass
class ServerContext:
    """The server's state and options (one per application)."""

    store: GameStore
    solutions: SolutionCache
    mode: Mode  # the mode new games start in
    players: PlayerCache = field(default_factory=lambda: PlayerCache(max_size=4))
    table: str | None = None
    model: str | None = None
    device: str = "cpu"
    table_deal: list[int] | None = None
    agent_errors: dict[str, str] = field(default_factory=dict)  # agents that cannot be built
    analyses: AnalysisCache = field(default_factory=AnalysisCache)
    analysis_gate: WorkGate = field(default_factory=WorkGate)
    work_gate: WorkGate = field(default_factory=lambda: WorkGate(
        max_running=4, max_waiting=16, what="AI replies and hints"))

    def __post_init__(self) -> None:
        for name in ai_names(Mode.HIDDEN):
            try:
                make_hidden_agent(name, device=self.device)
            except TensorCFRError as exc:
                self.agent_errors[name] = str(exc)

    def available(self, mode: Mode, name: str) -> bool:
        """Whether the AI ``name`` of ``mode`` can be played now (built, its files given)."""
        if mode is Mode.HIDDEN:
            return name not in self.agent_errors
        return {"table": self.table is not None, "model": self.model is not None}.get(name, True)

    def ai_offers(self, mode: Mode) -> list[dict[str, Any]]:
        """The AIs of ``mode`` as the page lists them, each with the registry's line."""
        out = []
        for name in ai_names(mode):
            text = ai_description(mode, name)
            if mode is Mode.OPEN and name == "table" and self.table:
                text += f" in {self.table}"
            if mode is Mode.OPEN and name == "model" and self.model:
                text += f" in {self.model}"
            offer = {"name": name, "available": self.available(mode, name), "description": text,
                     "sees_your_hand": ai_sees_your_hand(mode, name)}
            if name in self.agent_errors and mode is Mode.HIDDEN:
                offer["why_not"] = self.agent_errors[name]
            out.append(offer)
        return out

    def check_ai(self, mode: Mode, name: str) -> None:
        """A 400 when ``name`` is not offered in ``mode`` (:func:`check_ai`, the one check
        of a name) or not loaded."""
        try:
            check_ai(mode, name, "ai:")
        except TensorCFRError as exc:
            raise bad(str(exc)) from None
        if mode is Mode.OPEN and not self.available(mode, name):
            flag = "--table DIR" if name == "table" else "--model DIR"
            raise bad(f"the {name} AI is not available: start the server with {flag}")
        if mode is Mode.HIDDEN and name in self.agent_errors:
            raise bad(f"the {name} agent is not available: {self.agent_errors[name]}")

    def entry(self, game_id: str) -> Any:
        """The stored entry of ``game_id``; 404 if unknown or expired."""
        entry = self.store.get(game_id) if len(game_id) <= 64 else None
        if entry is None:
            raise bad(NO_SUCH_GAME, 404)
        return entry

    def run(self, game_id: str, action: Callable[[Any], Any]) -> Any:
        """``action(session)`` under the game's lock; session errors become 400 / 403."""
        entry = self.entry(game_id)
        with entry.lock:
            try:
                return action(entry.session)
            except HiddenCardsError as exc:
                raise bad(str(exc), 403) from None
            except TensorCFRError as exc:
                raise bad(str(exc)) from None

    def analysis(self, game_id: str) -> dict[str, Any]:
        """The game's analysis: from :attr:`analyses` when this deal and these plays were
        analysed before or are being analysed now (another upload of the same record
        included), else computed under :attr:`analysis_gate` (503 with ``Retry-After`` when
        it is full)."""

        def act(session: Any) -> dict[str, Any]:
            def analyse() -> dict[str, Any]:
                with self.analysis_gate.slot():
                    return session.analysis()

            try:
                return self.analyses.compute(analysis_key(session), analyse)
            except Busy as exc:
                raise _busy(exc) from None

        return self.run(game_id, act)

    def run_work(self, game_id: str, action: Callable[[Any], Any]) -> Any:
        """:meth:`run` for a request that makes an agent think or waits for an exact solve
        (an AI reply, a hint): at most :attr:`work_gate` of them at once over all games (each
        within the agent's budget per move), a 503 with ``Retry-After`` beyond."""

        def gated(session: Any) -> Any:
            try:
                with self.work_gate.slot():
                    return action(session)
            except Busy as exc:
                raise _busy(exc) from None

        return self.run(game_id, gated)

    @staticmethod
    def view(game_id: str, session: Any, at: int | None = None) -> dict[str, Any]:
        """The only way a game's state leaves the server: the session's view for the
        human's seat (hidden cards never in it)."""
        return {"game_id": game_id, **session.view(at=at)}


def _busy(exc: Busy) -> HTTPException:
    """The 503 of a full :class:`WorkGate`: its line, and ``Retry-After`` in seconds."""
    return HTTPException(status_code=503, detail=str(exc),
                         headers={"Retry-After": str(exc.retry_after)})


def server_context(request: Request) -> ServerContext:
    """The application's :class:`ServerContext` (a FastAPI dependency)."""
    return request.app.state.context


