"""Every console example in README.md and docs/**/*.md runs here and must print what the page shows.

What counts as an example: a fenced code block with at least one line ``$ tensorcfr ...``
followed by output lines. Every command of such a block runs, in order, in one working
directory (one module-scoped temporary folder, seeded with the files of
``tests/data/docs_examples/``), README.md first, then docs/ in name order, in this process
(``tensorcfr.cli.main.main`` with ``sys.argv`` set; stdout and stderr go to one stream, as on
a terminal 100 columns wide), and its output is compared with the lines under it.

A block whose commands show no output at all is a recipe (a long run, a server): it is not
run, but every command, sub-command and option in it must exist
(``test_docs_command_lines_parse``); so must those of the examples, of skipped blocks and the
``tensorcfr ...`` commands quoted in the pages' prose (``test_docs_inline_commands_parse``).
Every relative link must resolve, and README.md must link every page of docs/benchmarks/.

The masking convention (the same on both sides, so a page stays readable):

* A line ``...`` stands for any number of output lines (none included); ``...`` inside a line
  stands for any text on that line (as doctest's ELLIPSIS).
* Runs of spaces and of the box-drawing rules ``─━═`` count as one, and trailing spaces are
  dropped, so a table whose column grew by one digit still matches.
* ``(exit code N)`` at the end of an output line is the exit code the command must give
  (0 otherwise); it is not part of the output. ``# ...`` after a command is a shell comment.
* What varies from run to run is masked by ``MASKS`` below: durations with a decimal point
  (``0.213 s``, ``1.469 ms``) or in parentheses (``(2 s)``), rates (``4,586 games/s``), peak
  memory (``peak memory 265.9 MiB``, ``peak RSS 373 MiB``), the per-iteration time of
  ``solve``'s table, load averages, dates, and in JSON the values of keys that hold times,
  rates or memory (``seconds``, ``ms_per_iteration``, ``peak_rss_mb``, ...). Everything else
  (values, exploitabilities, counts, card lists) must match exactly: the examples run with one
  thread and fixed seeds.
* A float printed with more than 9 significant digits compares on its first 9 (the last
  digits of a float64 sum follow the order of summation).

Directives, an HTML comment on one of the two lines before the opening fence:

* ``<!-- doctest: skip (why) -->``: the block does not run (a server, minutes of work); the
  reason is reported as the skip reason. Keep them few: prefer a small setting in the page.
* ``<!-- doctest: stdin hint 6h 1 1*30 -->``: what the user types, one token per line read
  (``X*N`` repeats a token); each line read is echoed into the output as a terminal would.

An example may use the files of the examples above it (a solve, then a replay of its file);
a case run on its own (``-k``) first runs every block before it, unchecked. A command that
already ran and matched with the very same page output (a page repeating a README example)
is not run twice. ``test_docs_examples_collected`` prints how many examples ran and were
skipped (``pytest -s``).
"""

from __future__ import annotations

import io
import re
import shlex
import shutil
import sys
from contextlib import redirect_stderr, redirect_stdout
from dataclasses import dataclass, field
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "data" / "docs_examples"
COLUMNS = 100

#: (pattern, replacement), applied in order to every line of the page and of the output.
MASKS: list[tuple[re.Pattern[str], str]] = [
    # JSON values of keys that hold a time, a rate or memory: "seconds": 2.18
    (re.compile(r'("[a-z_]*(?:seconds|second|_ms|ms_per|rss|memory_mb|_time|time_)[a-z_]*"'
                r'\s*:\s*)-?\d[\d.eE+-]*'), r"\1<n>"),
    (re.compile(r"(peak[ A-Za-z]*?[ │]+)\d[\d,.]* ?(?:KiB|MiB|GiB|MB|GB)"), r"\1<memory>"),
    (re.compile(r"(ms / iteration[ │]+)\d[\d,.]*"), r"\1<time>"),
    (re.compile(r"\d[\d,]*(?:\.\d+)? games/s"), "<rate>"),
    (re.compile(r"(?<![\w.])\d[\d,]*\.\d+ ?(?:s|ms|µs|us|min|h)\b"), "<time>"),
    (re.compile(r"\((\d+) s\)"), "(<time>)"),  # a progress line's whole seconds: (2 s)
    (re.compile(r"load(?: average)?s?:? \d+(?:\.\d+)?(?:(?:-|, | to | / )\d+(?:\.\d+)?)*"),
     "load <load>"),
    # floats with more than 9 significant digits: the first 9 (the last ones follow summation order)
    (re.compile(r"(\d*\.0*[1-9]\d{8})\d+"), r"\1"),
    (re.compile(r"\d{4}-\d\d-\d\d(?:[T ]\d\d:\d\d(?::\d\d(?:\.\d+)?)?)?(?:Z|[+-]\d\d:?\d\d)?"),
     "<date>"),
]

EXIT_CODE = re.compile(r"\s*\(exit code (\d+)\)\s*$")
DIRECTIVE = re.compile(r"<!--\s*doctest:\s*(\w+)\s*(.*?)\s*-->")
BOX_RUN = re.compile(r"([─━═])\1+")
SPACE_RUN = re.compile(r"\s+")


@dataclass
class Command:
    """One ``$ tensorcfr ...`` line of a page (continuation lines joined) and its output."""

    line: int
    text: str
    output: list[str] = field(default_factory=list)
    exit_code: int = 0

    @property
    def argv(self) -> list[str]:
        return shlex.split(self.text, comments=True)


@dataclass
class Block:
    """A fenced block with ``$ tensorcfr`` lines; ``kind`` is example, recipe or skip."""

    path: Path
    line: int
    commands: list[Command]
    skip: str | None = None
    stdin: list[str] | None = None

    @property
    def rel(self) -> str:
        return self.path.relative_to(ROOT).as_posix()

    @property
    def id(self) -> str:
        return f"{self.rel}:{self.line}"

    @property
    def kind(self) -> str:
        if not any(c.output for c in self.commands):
            return "recipe"
        return "skip" if self.skip is not None else "example"


def doc_pages() -> list[Path]:
    """README.md and every Markdown page under docs/, in a fixed order."""
    return [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def _stdin_tokens(spec: str) -> list[str]:
    tokens: list[str] = []
    for token in spec.split():
        word, star, count = token.rpartition("*")
        tokens.extend([word] * int(count) if star and count.isdigit() else [token])
    return tokens


def parse_blocks(path: Path) -> list[Block]:
    """The blocks of one page that hold ``$ tensorcfr`` lines, with their directives."""
    lines = path.read_text(encoding="utf-8").splitlines()
    blocks: list[Block] = []
    i = 0
    while i < len(lines):
        if not lines[i].startswith("```"):
            i += 1
            continue
        start = i
        i += 1
        body: list[tuple[int, str]] = []
        while i < len(lines) and not lines[i].startswith("```"):
            body.append((i + 1, lines[i]))
            i += 1
        i += 1
        if not any(text.startswith("$ tensorcfr") for _, text in body):
            continue
        block = Block(path, start + 1, _commands(body, recipe_comments=True))
        for before in lines[max(0, start - 2):start]:
            for name, arg in DIRECTIVE.findall(before):
                if name == "skip":
                    block.skip = arg.strip("() ") or "marked skip"
                elif name == "stdin":
                    block.stdin = _stdin_tokens(arg)
                else:
                    raise ValueError(f"{path}:{start}: unknown doctest directive {name!r}")
        if block.kind != "recipe":
            block.commands = _commands(body, recipe_comments=False)
        blocks.append(block)
    return blocks


def _commands(body: list[tuple[int, str]], recipe_comments: bool) -> list[Command]:
    commands: list[Command] = []
    k = 0
    while k < len(body):
        number, text = body[k]
        if text.startswith("$ "):
            parts = [text[2:]]
            while parts[-1].endswith("\\") and k + 1 < len(body):
                parts[-1] = parts[-1][:-1]
                k += 1
                parts.append(body[k][1].strip())
            commands.append(Command(number, " ".join(p.strip() for p in parts)))
        elif commands and not (recipe_comments and text.startswith("#")):
            commands[-1].output.append(text)
        k += 1
    for command in commands:
        while command.output and not command.output[-1].strip():
            command.output.pop()
        for n, out in enumerate(command.output):
            match = EXIT_CODE.search(out)
            if match:
                command.exit_code = int(match.group(1))
                command.output[n] = out[:match.start()]
    return commands


ALL_BLOCKS: list[Block] = [b for page in doc_pages() for b in parse_blocks(page)]
RUN_BLOCKS = [b for b in ALL_BLOCKS if b.kind != "recipe"]


# ----------------------------------------------------------------------------- matching

def normalize(line: str) -> str:
    """One output or page line with the varying parts masked and runs of blanks collapsed."""
    for pattern, replacement in MASKS:
        line = pattern.sub(replacement, line)
    line = BOX_RUN.sub(r"\1", line)
    return SPACE_RUN.sub(" ", line).strip()


def expected_regex(expected: list[str]) -> re.Pattern[str]:
    """The page's output lines as one regex over the normalized output (``...`` = wildcard)."""
    parts: list[str] = []
    for line in expected:
        norm = normalize(line)
        if norm == "...":
            parts.append(r"(?:[^\n]*\n)*?")
        else:
            parts.append("[^\n]*".join(re.escape(piece) for piece in norm.split("...")) + r"\n")
    return re.compile("".join(parts))


def output_matches(expected: list[str], actual: str) -> bool:
    text = "".join(normalize(line) + "\n" for line in actual.rstrip("\n").splitlines()
                   if line.strip())
    wanted = [line for line in expected if line.strip()]
    return expected_regex(wanted).fullmatch(text) is not None


# ----------------------------------------------------------------------------- running

class _EchoInput(io.StringIO):
    """Standard input that writes each line it gives into the output, as a terminal echoes."""

    def __init__(self, text: str, echo: io.StringIO) -> None:
        super().__init__(text)
        self.echo = echo

    def readline(self, size: int | None = -1) -> str:  # type: ignore[override]
        line = super().readline(size if size is not None else -1)
        self.echo.write(line)
        return line

    def isatty(self) -> bool:
        return False


def run_command(command: Command, stdin: list[str] | None,
                monkeypatch: pytest.MonkeyPatch) -> tuple[int, str]:
    """Run one page command in this process; return (exit code, stdout and stderr together)."""
    from tensorcfr.cli.main import main

    out = io.StringIO()
    text = "".join(token + "\n" for token in stdin or [])
    with monkeypatch.context() as m:
        m.setattr(sys, "argv", command.argv)
        # click names the program after __main__ when Python runs a module (python -m pytest)
        m.setattr(sys.modules["__main__"], "__package__", None, raising=False)
        m.setattr(sys, "stdin", _EchoInput(text, out))
        code = 0
        with redirect_stdout(out), redirect_stderr(out):
            try:
                main()
            except SystemExit as exc:
                code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    return code, out.getvalue()


@dataclass
class Session:
    """The module's one working folder and what already ran in it."""

    folder: Path
    done: set[str] = field(default_factory=set)
    passed: set[tuple[str, tuple[str, ...], tuple[str, ...]]] = field(default_factory=set)


@pytest.fixture(scope="module")
def session(tmp_path_factory: pytest.TempPathFactory) -> Session:
    """One working folder for every page (seeded with tests/data/docs_examples/)."""
    folder = tmp_path_factory.mktemp("docs_examples")
    if FIXTURES.is_dir():
        shutil.copytree(FIXTURES, folder, dirs_exist_ok=True)
    return Session(folder)


@pytest.fixture(autouse=True)
def _terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", str(COLUMNS))
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    # The CLI's consoles are built at import; one built while COLUMNS held another value (an
    # earlier test in the same process) keeps that width, so make them read COLUMNS again.
    from tensorcfr.cli import common

    for console in (common.console, common.err_console):
        monkeypatch.setattr(console, "_width", None)
    for name in ("NO_COLOR", "FORCE_COLOR", "TERM"):
        monkeypatch.delenv(name, raising=False)


def _describe(block: Block, command: Command, code: int, actual: str) -> str:
    """The failure message: the command, the exit codes, and the page against the output as a
    diff of masked lines (``-`` the page, ``+`` the command)."""
    import difflib

    wanted = [normalize(line) for line in command.output if line.strip()]
    got = [normalize(line) for line in actual.splitlines() if line.strip()]
    diff = "\n".join(difflib.unified_diff(wanted, got, "the page", "the command", lineterm="", n=2))
    return (f"{block.rel}:{command.line}: `$ {command.text}`: exit code {code} (the page says "
            f"{command.exit_code})\n{diff}\n--- the command printed:\n{actual}")


@pytest.mark.parametrize("block", RUN_BLOCKS, ids=[b.id for b in RUN_BLOCKS])
def test_docs_example(block: Block, session: Session, monkeypatch: pytest.MonkeyPatch) -> None:
    """Run one console example of a page and compare its output with the page."""
    if block.skip is not None:
        pytest.skip(f"{block.id}: {block.skip}")
    monkeypatch.chdir(session.folder)
    for earlier in RUN_BLOCKS[:RUN_BLOCKS.index(block)]:  # the files this block may need
        if earlier.skip is None and earlier.id not in session.done:
            for command in earlier.commands:
                run_command(command, earlier.stdin, monkeypatch)
            session.done.add(earlier.id)
    for command in block.commands:
        key = (command.text, tuple(command.output), tuple(block.stdin or ()))
        if command.output and key in session.passed:
            continue  # the same command with the same page output, already run and matched
        code, actual = run_command(command, block.stdin, monkeypatch)
        assert code == command.exit_code, _describe(block, command, code, actual)
        if command.output:
            assert output_matches(command.output, actual), _describe(block, command, code, actual)
            session.passed.add(key)
    session.done.add(block.id)


# ----------------------------------------------------------------------------- static checks

def _click_root():
    import typer

    from tensorcfr.cli.main import app
    return typer.main.get_command(app)


ALL_COMMANDS = [(b, c) for b in ALL_BLOCKS for c in b.commands if c.argv[:1] == ["tensorcfr"]]


@pytest.mark.parametrize("block,command", ALL_COMMANDS,
                         ids=[f"{b.rel}:{c.line}" for b, c in ALL_COMMANDS])
def test_docs_command_lines_parse(block: Block, command: Command) -> None:
    """Every ``$ tensorcfr`` line of every block (recipes and skipped ones too) names
    commands and options that exist."""
    _check_command_line(block.rel, command)


def _check_command_line(rel: str, command: Command) -> None:
    cmd = _click_root()
    words = command.argv[1:]
    path = ["tensorcfr"]
    while hasattr(cmd, "list_commands") and words and not words[0].startswith("-"):
        sub = cmd.get_command(None, words[0])  # type: ignore[arg-type]
        assert sub is not None, f"{rel}:{command.line}: no command {' '.join(path)} {words[0]}"
        path.append(words.pop(0))
        cmd = sub
    known = {"--help"}
    for param in cmd.params:
        if param.param_type_name == "option":
            known.update([*param.opts, *param.secondary_opts])
    for word in words:
        if word.startswith("-") and not re.fullmatch(r"-\d[\d.e-]*", word):
            name = word.split("=", 1)[0]
            assert name in known, (f"{rel}:{command.line}: `{' '.join(path)}` has no "
                                   f"option {name}")


INLINE_COMMAND = re.compile(r"`((?:\.venv/bin/)?tensorcfr [^`]+)`")


def _inline_commands() -> list[tuple[str, Command]]:
    """``tensorcfr ...`` in the pages' prose (inline code) and in blocks without ``$``."""
    found = []
    for page in doc_pages():
        text = page.read_text(encoding="utf-8")
        for match in INLINE_COMMAND.finditer(text):
            line = text.count("\n", 0, match.start()) + 1
            words = match.group(1).split()
            words[0] = "tensorcfr"
            found.append((page.relative_to(ROOT).as_posix(), Command(line, " ".join(words))))
    return found


INLINE_COMMANDS = _inline_commands()


@pytest.mark.parametrize("rel,command", INLINE_COMMANDS,
                         ids=[f"{rel}:{c.line}" for rel, c in INLINE_COMMANDS])
def test_docs_inline_commands_parse(rel: str, command: Command) -> None:
    """A command quoted in prose names commands and options that exist, as the blocks do."""
    try:
        command.argv
    except ValueError:
        pytest.skip(f"{rel}:{command.line}: not a command line: {command.text}")
    _check_command_line(rel, command)


def test_docs_examples_collected() -> None:
    """The collection itself: the pages hold examples, and every skip gives its reason."""
    examples = [b for b in ALL_BLOCKS if b.kind == "example"]
    skipped = [b for b in ALL_BLOCKS if b.kind == "skip"]
    recipes = [b for b in ALL_BLOCKS if b.kind == "recipe"]
    assert len(examples) >= 10, [b.id for b in examples]
    assert all(b.skip for b in skipped)
    assert len(skipped) <= 6, f"too many skipped examples: {[(b.id, b.skip) for b in skipped]}"
    print(f"\n{len(examples)} examples run ({sum(len(b.commands) for b in examples)} commands), "
          f"{len(skipped)} skipped "
          f"({'; '.join(f'{b.id}: {b.skip}' for b in skipped)}), {len(recipes)} recipes "
          f"({sum(len(b.commands) for b in recipes)} command lines checked only)")


# ----------------------------------------------------------------------------- links

LINK = re.compile(r"\]\(([^)\s]+)\)")


def _links(page: Path) -> list[tuple[int, str]]:
    found = []
    in_code = False
    for number, line in enumerate(page.read_text(encoding="utf-8").splitlines(), 1):
        if line.startswith("```"):
            in_code = not in_code
            continue
        if not in_code:
            found.extend((number, target) for target in LINK.findall(line))
    return found


@pytest.mark.parametrize("page", doc_pages(),
                         ids=[p.relative_to(ROOT).as_posix() for p in doc_pages()])
def test_docs_relative_links_resolve(page: Path) -> None:
    """Every relative link of a page points at a file or folder that exists."""
    broken = []
    for number, target in _links(page):
        if re.match(r"[a-z]+:", target) or target.startswith("#"):
            continue
        if not (page.parent / target.split("#", 1)[0]).exists():
            broken.append(f"{page.relative_to(ROOT)}:{number}: {target}")
    assert not broken, "\n".join(broken)


def _heading_anchors(page: Path) -> set[str]:
    """The anchors GitHub gives ``page``'s headings: the text without markup, lower case,
    punctuation other than ``-`` and ``_`` dropped, spaces as ``-``; a repeated one gets
    ``-1``, ``-2``, ..."""
    anchors: set[str] = set()
    seen: dict[str, int] = {}
    in_code = False
    for line in page.read_text(encoding="utf-8").splitlines():
        if line.startswith("```"):
            in_code = not in_code
            continue
        heading = None if in_code else re.match(r"#{1,6}\s+(.*?)\s*#*\s*$", line)
        if heading is None:
            continue
        text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading.group(1).replace("`", ""))
        slug = re.sub(r"[^\w\- ]", "", text.strip().lower()).replace(" ", "-")
        count = seen.get(slug, 0)
        seen[slug] = count + 1
        anchors.add(slug if count == 0 else f"{slug}-{count}")
    return anchors


@pytest.mark.parametrize("page", doc_pages(),
                         ids=[p.relative_to(ROOT).as_posix() for p in doc_pages()])
def test_docs_anchor_links_name_a_heading(page: Path) -> None:
    """Every link to ``#anchor`` (in the page or in another page of the repository) names a
    heading that page has."""
    broken = []
    for number, target in _links(page):
        if re.match(r"[a-z]+:", target) or "#" not in target:
            continue
        path, anchor = target.split("#", 1)
        dest = page if not path else page.parent / path
        if dest.suffix != ".md" or not dest.is_file():
            continue
        if anchor not in _heading_anchors(dest):
            broken.append(f"{page.relative_to(ROOT)}:{number}: {target}")
    assert not broken, "\n".join(broken)


def test_every_benchmark_page_is_listed_in_readme() -> None:
    """Every page under docs/benchmarks/ is linked from README.md (its Documentation list),
    so none is reachable from nowhere."""
    readme = ROOT / "README.md"
    linked = {(ROOT / target.split("#", 1)[0]).resolve() for _, target in _links(readme)
              if not re.match(r"[a-z]+:", target) and not target.startswith("#")}
    pages = sorted((ROOT / "docs" / "benchmarks").glob("*.md"))
    orphans = [p.relative_to(ROOT).as_posix() for p in pages if p.resolve() not in linked]
    assert not orphans, f"benchmark pages README.md does not link: {orphans}"


def test_every_docs_page_is_reachable_from_readme() -> None:
    """Following relative links from README.md reaches every Markdown page under docs/."""
    seen: set[Path] = set()
    todo = [(ROOT / "README.md").resolve()]
    while todo:
        page = todo.pop()
        if page in seen:
            continue
        seen.add(page)
        for _, target in _links(page):
            if re.match(r"[a-z]+:", target) or target.startswith("#"):
                continue
            linked = (page.parent / target.split("#", 1)[0]).resolve()
            if linked.suffix == ".md" and linked.is_file():
                todo.append(linked)
    unreachable = [p.relative_to(ROOT).as_posix() for p in sorted((ROOT / "docs").rglob("*.md"))
                   if p.resolve() not in seen]
    assert not unreachable, f"pages no link from README.md leads to: {unreachable}"
