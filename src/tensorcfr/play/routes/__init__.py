"""The play server's routes, one module per concern (FastAPI ``APIRouter`` each):

* :mod:`.games`: the options, starting a game, the human's and the AI's plays, undo;
* :mod:`.insight`: hints and the end-of-game analysis;
* :mod:`.records`: downloading and loading game records;
* :mod:`.pages`: the page, its static files and the API page.

They share one :class:`.context.ServerContext` (the store of games, the solution cache, the
server's options) through FastAPI's dependency injection. Every answer about the game comes
from :mod:`tensorcfr.play.session`, the one place that knows the rules and the modes; routes
only translate HTTP to session calls and back.
"""
