"""Playing Pasur against the AI: a game-session layer, a web server and a terminal game.

``session`` knows no web and no terminal: a game (deal, human seat, AI, history with undo),
hints and the end-of-game analysis from the exact solution, records, and ``view(seat)``, the
only thing a client is ever shown. ``server`` (FastAPI) and ``terminal`` (rich) sit on top.
"""
