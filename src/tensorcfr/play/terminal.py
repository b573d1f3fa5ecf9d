"""The terminal game: ``tensorcfr pasur play``, drawn with rich.

The table is drawn after each play from the session's view: in hidden mode (the real game)
your hand, the rival's hand as card backs with its count, the pool, the piles and the running
score; in open mode both hands and a strip of the rounds still to come. Plays are numbered
from 0 as in game records. At the human's turn the legal plays are listed with numbers; the
player types a number, a play in card notation (``7d``, ``3d+Ac+7d``), or a command: ``hint``
(open: every legal play with its exact value and loss; hidden: the agent's estimates),
``undo`` (open hands only: in hidden hands it is refused, since it would show the AI's answer
to another play), ``help``, ``quit``. A hidden-hand game says whether its deal is secret (drawn
by the session from the system's secure random source) or practice (the player named it). A card that has several captures, or is not in the hand, is
answered with the reason and the choices. After the game everything is revealed: the final
score with its breakdown, the deal's exact value and the move list with the points each play
cost (and, in hidden mode, its cost against the agent's estimate at that moment).

It knows how to draw and read, nothing of the rules beyond what the session answers.
"""

from __future__ import annotations

from typing import Any, Callable

from rich.console import Console
from rich.table import Table
from rich.text import Text

from tensorcfr.games.pasur.engine.cards import card_code, parse_card
from tensorcfr.errors import IllegalMoveError, TensorCFRError
from tensorcfr.games.pasur.engine.rules import PLAYERS, Action, illegal_reason
from tensorcfr.games.pasur.vocab import Mode
from tensorcfr.play.session import GameSession
from tensorcfr.utils.interrupts import Terminated
from tensorcfr.utils.io import write_text_or_elsewhere

SUIT_SYMBOLS = "♣♦♥♠"
RANK_LABELS = ["A", "2", "3", "4", "5", "6", "7", "8", "9", "10", "J", "Q", "K"]
HELP = ("type the number of a play, or a play in card notation (7d, 3d+Ac+7d); "
        "commands: hint, undo, help, quit")
HELP_HIDDEN = ("type the number of a play, or a play in card notation (7d, 3d+Ac+7d); "
               "commands: hint, help, quit (no undo in hidden hands)")


def card_markup(card: int) -> str:
    """``4♦`` in red (diamonds, hearts) or bold (clubs, spades) rich markup."""
    text = RANK_LABELS[card // 4] + SUIT_SYMBOLS[card % 4]
    return f"[red]{text}[/]" if card % 4 in (1, 2) else f"[bold]{text}[/]"


def cards_markup(cards: Any) -> str:
    return " ".join(card_markup(c) for c in cards) or "[dim]-[/]"


def action_markup(action: Action) -> str:
    if action.is_lay:
        return f"{card_markup(action.card)} laid"
    return f"{card_markup(action.card)} takes {cards_markup(action.captured)}"


def _notation_markup(notation: str) -> str:
    """``6h+As+4d`` (a play in card notation) as rich markup: ``6♥ takes A♠ 4♦``."""
    card, *captured = (parse_card(code) for code in notation.split("+"))
    return action_markup(Action(card, tuple(captured)))


def rounds_markup(rounds: list[dict[str, Any]]) -> str:
    """The rounds to come as one compact strip: ``r2 A: 4♦ 7♣ .. / B: ..  r3 ...``."""
    return "   ".join(f"[dim]r{r['round']}[/] A {cards_markup(r['Alex'])} / "
                       f"B {cards_markup(r['Bob'])}" for r in rounds)


def _score_line(s: dict[str, int]) -> str:
    parts = [f"clubs {s['clubs']}" + (" (+7)" if s["clubs_bonus"] else ""),
             f"A {s['aces']}", f"J {s['jacks']}"]
    if s["ten_of_diamonds"]:
        parts.append("10♦ 3")
    if s["two_of_clubs"]:
        parts.append("2♣ 2")
    if s["surs"]:
        parts.append(f"Surs {s['surs']}x5")
    return ", ".join(parts)


class TerminalGame:
    """One game in the terminal; ``read`` reads a line (``input`` by default, EOF = quit)."""

    def __init__(self, session: GameSession, console: Console,
                 read: Callable[[Any], str] | None = None,
                 record_path: str | None = None) -> None:
        self.session = session
        self.console = console
        self.read = read or console.input
        self.record_path = record_path
        self.help = HELP_HIDDEN if session.mode is Mode.HIDDEN else HELP
        self.commands = "hint, quit" if session.mode is Mode.HIDDEN else "hint, undo, quit"

    # ----------------------------------------------------------------- drawing

    def draw_table(self) -> None:
        s = self.session
        v = s.view()
        c = self.console
        ai = PLAYERS[s.ai_seat]
        if v["over"]:
            head = "game over"
        else:
            head = (f"round {v['round']}/6 · {v['play_index']} of 48 plays made · "
                    f"{v['to_move']} to play")
        c.rule(f"[bold]{head}[/]", style="green")
        for name in (ai, PLAYERS[s.human]):
            who = "you" if name == PLAYERS[s.human] else f"{s.ai_name} AI"
            total = v["score"][name]["total"]
            pile = v["piles"][name]
            if v["hands"][name] is None:  # hidden: card backs and the count
                n = v["hand_counts"][name]
                hand = ("[blue]▮[/] " * n).strip() + f" [dim]({n})[/]" if n else "[dim]-[/]"
            else:
                hand = cards_markup(v["hands"][name])
            pad = " " * max(0, 15 - len(Text.from_markup(hand).plain))
            c.print(f"  [bold]{name:<4}[/] {who:<9}  hand {hand}{pad}"
                    f"  pile {len(pile):>2} cards  [bold]{total:>2} pts[/] "
                    f"[dim]({_score_line(v['score'][name])})[/]", highlight=False)
            if name == ai:
                c.print(f"  [green]pool[/]                 {cards_markup(v['pool'])}",
                        highlight=False)
        if v["visibility"] == Mode.OPEN:
            rounds = v.get("rounds_to_come") or []
            for i in range(0, len(rounds), 3):  # three rounds a line
                label = "rounds to come" if i == 0 else ""
                c.print(f"  [dim]{label:<14}[/] {rounds_markup(rounds[i:i + 3])}",
                        highlight=False)
            if not v["over"]:
                c.print("  [dim]open hands (double-dummy): both players see all cards[/]",
                        highlight=False)
        else:
            c.print(f"  [dim]hidden hands: {v['undealt_count']} cards still to be dealt; the "
                    f"{s.ai_name} AI does not see your hand[/]", highlight=False)

    def show_play(self, info: Any) -> None:
        who = "you" if info.by == "human" else f"[bold magenta]{PLAYERS[info.player]} (AI)[/]"
        extra = []
        if info.points:
            extra.append(f"[green]+{info.points} pts[/]")
        if info.sur:
            extra.append("[bold yellow]SUR[/]")
        if info.cleanup:
            extra.append(f"last pool {cards_markup(info.cleanup)} to {PLAYERS[info.cleanup_to]}")
        self.console.print(f"[bold]#{info.number}[/] {who}: {action_markup(info.action)}"
                           + ("  " + "  ".join(extra) if extra else ""), highlight=False)

    def show_hints(self) -> None:
        s = self.session
        if s.mode is Mode.OPEN and not s.solution_ready():
            with self.console.status("solving the deal exactly (about a second)..."):
                report = s.hint_report()
        elif s.mode is Mode.HIDDEN:
            with self.console.status(f"the {s.ai_name} agent is thinking..."):
                report = s.hint_report()
        else:
            report = s.hint_report()
        if report["kind"] == "none":
            self.console.print(f"{report['message']}; the exact analysis of every play comes "
                               "after the game", highlight=False)
            return
        if report["kind"] == "exact":
            self.console.print(f"[bold]exact values for {PLAYERS[s.human]}[/] (the final point "
                               "difference if you make that play and both play optimally "
                               "after)", highlight=False)
        else:
            self.console.print(f"[bold]estimates by the {report['agent']} agent for "
                               f"{PLAYERS[s.human]}[/] (an estimate, not exact: "
                               f"{report['what']})", highlight=False)
        table = Table()
        table.add_column("#", justify="right")
        table.add_column("play")
        table.add_column("value" if report["kind"] == "exact" else "estimate", justify="right")
        table.add_column("loss", justify="right")
        for i, h in enumerate(report["hints"], 1):
            a = Action(h["card"], tuple(h["captured"]))
            table.add_row(str(i), action_markup(a), f"{h['value']:+g}",
                          "[green]best[/]" if h["best"] else f"[red]-{h['loss']:g}[/]")
        self.console.print(table)

    def show_analysis(self) -> None:
        s = self.session
        c = self.console
        a = s.analysis()
        alex, bob = a["final"]["Alex"], a["final"]["Bob"]
        c.print("[bold]final score[/]", highlight=False)
        table = Table()
        table.add_column("")
        table.add_column("Alex", justify="right")
        table.add_column("Bob", justify="right")
        for key, label in (("clubs", "clubs (count)"), ("clubs_bonus", "clubs bonus (7+)"),
                           ("aces", "Aces"), ("jacks", "Jacks"),
                           ("ten_of_diamonds", "10 of diamonds"), ("two_of_clubs", "2 of clubs")):
            table.add_row(label, str(alex[key]), str(bob[key]))
        table.add_row("Surs", f"{alex['sur_points']} ({alex['surs']}x5)",
                      f"{bob['sur_points']} ({bob['surs']}x5)")
        table.add_section()
        table.add_row("[bold]total[/]", f"[bold]{alex['total']}[/]", f"[bold]{bob['total']}[/]")
        c.print(table)
        me = PLAYERS[s.human]
        mine, theirs = a["final"][me]["total"], a["final"][PLAYERS[s.ai_seat]]["total"]
        verdict = "you won" if mine > theirs else "you lost" if mine < theirs else "a tie"
        c.print(f"[bold]{verdict} {mine}-{theirs}[/]. Exact value of the deal (optimal play by "
                f"both): Alex {a['exact_value']:+d}; this game: Alex {a['final']['utility']:+d}.",
                highlight=False)
        c.print(f"your plays ({me}) gave away [bold]{a['human_cost']}[/] point(s) against optimal "
                f"play with every card known; the AI's gave away {a['ai_cost']}.",
                highlight=False)
        est = a.get("estimate")
        with_estimates = bool(est and est["available"])
        if with_estimates:
            c.print(f"against the {est['agent']} agent's estimate at each turn (what a player "
                    f"could have known) your plays gave away [bold]{est['human_cost']:g}[/] "
                    "point(s).", highlight=False)
        elif est:
            c.print(f"[dim]{est.get('message', '')}: no cost against an estimate.[/]",
                    highlight=False)
        c.print("[bold]move list[/] (cost = points a play gave away against the best play "
                "there)", highlight=False)
        moves = Table()
        for name, justify in (("#", "right"), ("player", "left"), ("play", "left"),
                              ("pts", "right"), ("cost", "right"), ("best", "left")):
            moves.add_column(name, justify=justify)  # type: ignore[arg-type]
        if with_estimates:
            moves.add_column("cost vs estimate", justify="right")
        for p in a["plays"]:
            action = Action(p["card"], tuple(p["captured"]))
            who = p["player"] + (" (you)" if p["by"] == "human" else "")
            cost = "[green]ok[/]" if p["cost"] == 0 else f"[red]-{p['cost']}[/]"
            best = "" if p["cost"] == 0 else ", ".join(
                _notation_markup(n) for n in p["best"][:2]) + (
                f" [dim](+{len(p['best']) - 2})[/]" if len(p["best"]) > 2 else "")
            row = [str(p["number"]), who, action_markup(action),
                   f"+{p['points']}" if p["points"] else "", cost, best]
            if with_estimates:
                e = p.get("estimate_cost")
                row.append("" if e is None else "[green]ok[/]" if e == 0 else f"[red]-{e:g}[/]")
            moves.add_row(*row)
        c.print(moves)

    # ----------------------------------------------------------------- the loop

    def _ask(self, actions: list[Action]) -> Action | str:
        """The human's choice: an action, or one of the commands hint/undo/quit."""
        c = self.console
        for i, a in enumerate(actions, 1):
            c.print(f"  [cyan]{i:>2}[/]) {action_markup(a)}", highlight=False)
        while True:
            try:
                raw = self.read(Text(f"your play [1-{len(actions)}, {self.commands}]: ",
                                     style="bold"))
            except Terminated:  # SIGTERM is no answer: the command stops as interrupted
                raise
            except (EOFError, KeyboardInterrupt):  # Ctrl+D / Ctrl+C at the prompt: quit
                c.print()
                return "quit"
            text = raw.strip().lower()
            if text in ("q", "quit", "exit"):
                return "quit"
            if text in ("h", "hint"):
                return "hint"
            if text in ("u", "undo"):
                return "undo"
            if text in ("?", "help"):
                c.print(self.help, highlight=False)
                continue
            if text.isdigit() and 1 <= int(text) <= len(actions):
                return actions[int(text) - 1]
            found = [a for a in actions if a.notation().lower() == text
                     or (card_code(a.card).lower() == text
                         and sum(b.card == a.card for b in actions) == 1)]
            if found:
                return found[0]
            c.print(self.why_not(raw.strip(), actions), highlight=False)

    def why_not(self, raw: str, actions: list[Action]) -> str:
        """Why ``raw`` is not a play, as the API says it, and the choices (markup)."""
        def listing(subset: list[Action]) -> str:
            return "; ".join(f"[cyan]{actions.index(a) + 1}[/]) {action_markup(a)}"
                             for a in subset)

        try:
            card, *captured = (parse_card(code) for code in raw.split("+"))
        except (TensorCFRError, ValueError):
            return (f"[red]not a legal play or command: {raw!r}[/] (type 1-{len(actions)}, a "
                    f"card like 7d, or a capture like 7d+4c; {self.commands}, help)")
        same_card = [a for a in actions if a.card == card]
        if not captured and len(same_card) > 1:
            return (f"[red]{card_markup(card)} can capture "
                    f"{len(same_card)} ways:[/] {listing(same_card)} (type the number or the "
                    "capture, e.g. " + same_card[0].notation() + ")")
        reason = illegal_reason(self.session.state, Action(card, tuple(sorted(captured))))
        if reason is None:  # pragma: no cover - a legal play is found above
            reason = "not one of the listed plays"
        return f"[red]{reason}[/]; your plays: {listing(same_card or actions)}"

    def run(self) -> int:
        """Play until the end or ``quit``; returns 0 (finished) or 1 (quit)."""
        s = self.session
        c = self.console
        if s.mode is Mode.OPEN:
            c.print(f"Pasur, open hands: you are [bold]{PLAYERS[s.human]}[/], the {s.ai_name} "
                    f"AI is {PLAYERS[s.ai_seat]}. {self.help}.", highlight=False)
        else:
            sees = ("it cheats: it sees every card" if s.ai_sees_everything
                    else "it does not see your hand")
            c.print(f"Pasur, hidden hands: you are [bold]{PLAYERS[s.human]}[/], the {s.ai_name} "
                    f"AI is {PLAYERS[s.ai_seat]} ({sees}). {self.help}.", highlight=False)
            if s.practice:
                seed = f" (seed {s.seed})" if s.seed is not None else ""
                c.print(f"[yellow]practice game: you chose the deal{seed}, so you can know "
                        "every card, the AI's included[/]; for a real game leave out --seed "
                        "and --deal", highlight=False)
            else:
                c.print("[dim]the deal comes from the system's secure random source: nobody "
                        "can know the hidden cards before the end[/]", highlight=False)
        self.draw_table()
        while not s.over:
            if s.ai_to_move:
                if s.ai_name == "exact" and s.mode is Mode.OPEN and not s.solution_ready():
                    with c.status("solving the deal exactly (once, about a second)..."):
                        info = s.ai_play()
                else:
                    info = s.ai_play()
                self.show_play(info)
                self.draw_table()
                continue
            choice = self._ask(s.legal())
            if choice == "quit":
                c.print("game abandoned; no record saved (a record needs all 48 plays).")
                return 1
            if choice == "hint":
                self.show_hints()
                continue
            if choice == "undo":
                try:
                    n = s.undo()
                except IllegalMoveError as exc:
                    c.print(f"[red]{exc}[/]", highlight=False)
                    continue
                c.print(f"took back {n} play(s).", highlight=False)
                self.draw_table()
                continue
            assert isinstance(choice, Action)
            self.show_play(s.play(choice))
            self.draw_table()
        if not s.solution_ready():
            with c.status("analysing the game..."):
                s.analysis()
        self.show_analysis()
        if self.record_path is not None:  # checked before the first play (--record)
            saved, failure = write_text_or_elsewhere(self.record_path, s.record_text(),
                                                     prefix="pasur-record")
            if failure is None:
                c.print(f"record saved to {saved}", highlight=False)
            else:  # the game is not lost: said on the screen, with where it went
                c.print(Text(f"{failure}; the record was saved to {saved} instead",
                             style="yellow"), highlight=False)
        return 0
