"""A real browser plays whole games on the page of ``tensorcfr pasur serve``.

Headless Debian Chromium driven by selenium: the test starts the server on a free localhost
port (through the CLI) and plays a whole hidden-hand game and a whole open-hands game by
clicking, at 1400x900 and at a phone-sized 420x800: every one of the human's 24 plays by
clicking cards (a capture choice where a card has several; a double-click once, which must
send one play), Hint, and Undo in open hands (hidden hands have no Undo button: a seeded
hidden game says it is practice). At each turn it checks that nothing overflows the window
and, in hidden mode, that no card the human may not see is in the page's DOM; every API
response of a hidden game is checked the same way. After the game it downloads the record
through the page's button and checks that the score the page shows equals the reference
engine's replay of that record, and that stepping through the analysis keeps the board and
the current row in view. Screenshots go to a temporary folder (``TENSORCFR_SCREENSHOTS=DIR``
keeps them; ``TENSORCFR_UPDATE_SCREENSHOTS=1`` also refreshes ``docs/pasur_play.png``, the
page in hidden mode, and ``docs/pasur_play_analysis.png``).

Needs ``/usr/bin/chromium`` and ``/usr/bin/chromedriver`` (``apt-get install -y chromium
chromium-driver``; ``make test`` installs them when it can), otherwise it is skipped.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from tensorcfr.games.pasur.engine.records import parse_record, replay_record
from tensorcfr.games.pasur.engine.rules import Action, apply_action, initial_state, random_deal

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
INSTALL = "apt-get install -y chromium chromium-driver"
REPO = Path(__file__).resolve().parents[1]
SEED = 3  # a deal whose exact solve is quick (about 0.1 s)

pytestmark = pytest.mark.skipif(
    not (os.access(CHROMIUM, os.X_OK) and os.access(CHROMEDRIVER, os.X_OK)),
    reason=f"browser test skipped: no {CHROMIUM} / {CHROMEDRIVER} (install with: {INSTALL})")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def server_url():
    port = _free_port()
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    proc = subprocess.Popen([sys.executable, "-m", "tensorcfr.cli.main", "pasur", "serve",
                             "--port", str(port)], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, env=env, text=True)
    url = f"http://127.0.0.1:{port}/"
    deadline = time.monotonic() + 60
    while True:
        try:
            with urllib.request.urlopen(url, timeout=2) as r:
                if r.status == 200:
                    break
        except OSError:
            pass
        if proc.poll() is not None or time.monotonic() > deadline:
            out = proc.stdout.read() if proc.stdout else ""
            proc.kill()
            pytest.fail(f"the server did not start: {out}")
        time.sleep(0.2)
    yield url
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    downloads = tmp_path_factory.mktemp("downloads")
    profile = tmp_path_factory.mktemp("chromium-profile")
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                 "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync",
                 f"--user-data-dir={profile}", "--window-size=1400,900"):
        options.add_argument(flag)
    options.add_experimental_option("prefs", {
        "download.default_directory": str(downloads),
        "download.prompt_for_download": False,
    })
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    driver.set_page_load_timeout(30)
    driver.downloads = downloads  # type: ignore[attr-defined]
    yield driver
    driver.quit()


@pytest.fixture(scope="module")
def shots(tmp_path_factory):
    keep = os.environ.get("TENSORCFR_SCREENSHOTS")
    folder = Path(keep) if keep else tmp_path_factory.mktemp("screenshots")
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def _wait(driver, script: str, timeout: float = 30.0, what: str = ""):
    """Poll a JS expression until it is truthy; returns its value."""
    deadline = time.monotonic() + timeout
    while True:
        value = driver.execute_script(f"return ({script});")
        if value:
            return value
        if time.monotonic() > deadline:
            state = driver.execute_script("return JSON.stringify(document.body.dataset)")
            err = driver.execute_script("return document.getElementById('error').textContent")
            raise AssertionError(f"timed out waiting for {what or script} (body {state}, "
                                 f"error {err!r})")
        time.sleep(0.05)


IDLE = "document.body.dataset.busy !== '1'"
HUMAN_TURN = (f"{IDLE} && (document.body.dataset.turn === 'human' || "
              "document.body.dataset.state === 'over')")
SIZES = {"wide": (1400, 900), "phone": (420, 800)}
CARD_KEYS = {"pool", "hands", "piles", "card", "captured", "cleanup", "deal", "rounds_to_come"}

RECORD_RESPONSES = """
window.__responses = [];
const realFetch = window.fetch;
window.fetch = async (...args) => {
  const res = await realFetch(...args);
  try { window.__responses.push([String(args[0]), await res.clone().text()]); } catch (e) {}
  return res;
};
"""


def _cards_in(obj, under=False):
    """Card indices anywhere in a JSON answer (ints under card-bearing keys)."""
    if isinstance(obj, dict):
        out = set()
        for k, v in obj.items():
            out |= _cards_in(v, k in CARD_KEYS or (under and k in ("Alex", "Bob")))
        return out
    if isinstance(obj, list):
        return set().union(*(_cards_in(v, under) for v in obj)) if obj else set()
    if isinstance(obj, int) and not isinstance(obj, bool) and under:
        return {obj}
    return set()


def _unseen(deal, history, me: int) -> set[int]:
    """The cards seat ``me`` may not see after ``history``: the other hand, the undealt."""
    state = initial_state(deal)
    for p in history:
        state = apply_action(state, Action(p["card"], tuple(p["captured"])))
    if state.is_terminal:
        return set()
    dealt = 4 + 8 * (state.round + 1)
    return set(state.hands[1 - me]) | set(deal[dealt:])


def _set_size(d, size: str) -> None:
    width, height = SIZES[size]
    d.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", {
        "width": width, "height": height, "deviceScaleFactor": 1, "mobile": False})


def _no_overflow(d, where: str) -> None:
    widths = d.execute_script("return [document.documentElement.scrollWidth, window.innerWidth]")
    assert widths[0] <= widths[1], f"the page overflows at {where}: {widths}"


def _in_viewport(d, element) -> bool:
    return d.execute_script(
        "const r = arguments[0].getBoundingClientRect();"
        "return r.left >= 0 && r.top >= 0 && r.right <= window.innerWidth + 0.5"
        " && r.bottom <= window.innerHeight + 0.5 && r.width > 0;", element)


def _start(d, url, mode: str, seat: str, size: str) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    _set_size(d, size)
    d.get(url)
    _wait(d, "document.body.dataset.ready === '1'", what="the page to load")
    d.execute_script(RECORD_RESPONSES + "window.pasurApp.aiDelayMs = 20;")
    _no_overflow(d, f"the new-game form ({size})")
    Select(d.find_element(By.ID, "mode-select")).select_by_value(mode)
    d.find_element(By.ID, "source-seed").click()
    d.find_element(By.ID, "seed-input").send_keys(str(SEED))
    Select(d.find_element(By.ID, "seat-select")).select_by_value(seat)
    d.find_element(By.ID, "start-btn").click()
    _wait(d, "document.body.dataset.state === 'playing'", what="the game to start")


def _play_whole_game(d, mode: str, seat: str, size: str, shots: Path) -> dict:
    """Click through the human's 24 plays; returns what was seen and done."""
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.by import By

    deal = random_deal(SEED)
    me = 0 if seat == "alex" else 1
    name = ("Alex", "Bob")[me]
    done = {"hinted": False, "undone": False, "chose": False, "double": False, "shot": False}
    for _ in range(200):
        _wait(d, HUMAN_TURN, what="the human's turn")
        if d.execute_script("return document.body.dataset.state") == "over":
            break
        view = d.execute_script("return window.pasurApp.view")
        plays = view["play_index"]
        _no_overflow(d, f"play {plays} ({mode}, {size})")
        if mode == "hidden":
            shown = {int(c) for c in d.execute_script(
                "return [...document.querySelectorAll('[data-card]')].map(e => e.dataset.card)")}
            assert not shown & _unseen(deal, view["history"], me), f"hidden card in the DOM at {plays}"
            assert len(d.find_elements(By.CSS_SELECTOR, ".hand .card.back")) == \
                view["hand_counts"][("Alex", "Bob")[1 - me]]
        else:
            # open hands: the rounds still to come are drawn
            strip = d.find_elements(By.CSS_SELECTOR, "#rounds-to-come .round")
            assert len(strip) == len(view["rounds_to_come"])
            if strip:
                assert len(strip[0].find_elements(By.CSS_SELECTOR, ".card")) == 8
        if not done["hinted"] and plays >= 2:
            d.find_element(By.ID, "hint-btn").click()
            _wait(d, f"!document.getElementById('hints').hidden && {IDLE}", what="the hints")
            kind = d.execute_script("return window.pasurApp.hints.kind")
            if mode == "hidden":  # the default agent's own score of each play
                assert kind == "estimate"
                assert "Estimate" in d.find_element(By.ID, "hints").text
                rows = d.find_elements(By.CSS_SELECTOR, "#hints-table tr[data-loss]")
                assert len(rows) == len(view["legal"])
            else:
                assert kind == "exact"
                rows = d.find_elements(By.CSS_SELECTOR, "#hints-table tr[data-loss]")
                assert len(rows) == len(view["legal"])
                assert 0 in [float(r.get_attribute("data-loss")) for r in rows]
            done["hinted"] = True
        if not done["shot"] and size == "wide" and plays >= 10:
            d.save_screenshot(str(shots / f"pasur_play_{mode}.png"))
            done["shot"] = True
        cards = d.find_elements(By.CSS_SELECTOR, f"#hand-{seat} .card.playable")
        assert cards, "no playable card at the human's turn"
        multi = [c for c in cards if int(c.get_attribute("data-actions")) > 1]
        single = [c for c in cards if int(c.get_attribute("data-actions")) == 1]
        if multi and not done["chose"]:
            card = multi[0]
            card.click()
            _wait(d, "!document.getElementById('choices').hidden", what="the capture choices")
            options = d.find_elements(By.CSS_SELECTOR, "#choices .choice")
            assert len(options) == int(card.get_attribute("data-actions"))
            for button in [*options, d.find_element(By.ID, "choices-cancel")]:
                assert _in_viewport(d, button), f"a chooser button is off the screen ({size})"
            options[-1].click()
            done["chose"] = True
        elif single and not done["double"] and plays >= 4:
            d.execute_script("arguments[0].scrollIntoView({block: 'center'})", single[0])
            ActionChains(d).double_click(single[0]).perform()  # one play, no error
            done["double"] = True
        else:
            (single or cards)[-1].click()
            if not single:
                _wait(d, "!document.getElementById('choices').hidden", what="the choices")
                d.find_elements(By.CSS_SELECTOR, "#choices .choice")[0].click()
        _wait(d, f"window.pasurApp.view.play_index > {plays} && {IDLE}", what="the play to land")
        assert d.find_element(By.ID, "error").get_attribute("hidden") is not None, \
            d.find_element(By.ID, "error").text
        history = d.execute_script("return window.pasurApp.view.history")
        assert history[plays]["player"] == name and history[plays]["by"] == "human"
        if done["double"] and len(history) > plays + 1:
            assert history[plays + 1]["by"] == "ai"  # the second click sent nothing
        if mode == "hidden" and not done["undone"]:  # no undo: the button is not shown
            assert not d.find_element(By.ID, "undo-btn").is_displayed()
            assert "practice deal" in d.find_element(By.ID, "deal-info").text  # a seeded deal
            done["undone"] = True
        if not done["undone"] and plays >= 10:
            _wait(d, HUMAN_TURN, what="the AI's reply")
            before = d.execute_script("return window.pasurApp.view.play_index")
            d.find_element(By.ID, "undo-btn").click()
            _wait(d, f"window.pasurApp.view.play_index < {before} && {IDLE}", what="the undo")
            assert d.execute_script("return window.pasurApp.view.play_index") == plays
            done["undone"] = True
    else:
        raise AssertionError("the game did not finish")
    return done


def _check_responses(d, mode: str, seat: str) -> int:
    """Every API answer of a hidden game, until it was over, holds no card the human may not
    see then. Returns how many were checked."""
    if mode != "hidden":
        return 0
    deal = random_deal(SEED)
    me = 0 if seat == "alex" else 1
    unseen = _unseen(deal, [], me)
    checked = 0
    for url, text in d.execute_script("return window.__responses"):
        if "/api/" not in url:
            continue
        obj = json.loads(text)
        if isinstance(obj, dict) and "history" in obj:
            if obj.get("game_over"):
                break  # everything is revealed after the game
            unseen = _unseen(deal, obj["history"], me)
        assert not _cards_in(obj) & unseen, f"a hidden card in the answer of {url}"
        checked += 1
    return checked


def _download_record(d) -> dict:
    from selenium.webdriver.common.by import By

    for old in d.downloads.glob("*"):  # type: ignore[attr-defined]
        old.unlink()
    d.find_element(By.ID, "download-btn").click()
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        files = [f for f in d.downloads.glob("*.json")]  # type: ignore[attr-defined]
        if files:
            time.sleep(0.2)
            return json.loads(files[0].read_text(encoding="utf-8"))
        time.sleep(0.1)
    raise AssertionError("the record was not downloaded")


GAMES = [("hidden", "alex", "wide"), ("open", "bob", "phone"), ("hidden", "bob", "phone"),
         ("open", "alex", "wide")]


@pytest.mark.parametrize("mode, seat, size", GAMES, ids=[f"{m}-{s}" for m, _, s in GAMES])
def test_play_whole_game_in_browser(server_url, browser, shots, capsys, mode, seat, size):
    from selenium.webdriver.common.by import By

    d = browser
    t0 = time.perf_counter()
    _start(d, server_url, mode, seat, size)
    badge = d.find_element(By.ID, "mode-badge").text
    assert ("Hidden hands" if mode == "hidden" else "Open hands") in badge
    sources = d.execute_script(  # nothing on the page comes from another origin
        "return [...document.querySelectorAll('script[src],link[href],img[src]')]"
        ".map(e => e.src || e.href)")
    assert all(src.startswith(server_url) or src.startswith("data:") for src in sources)
    header = d.find_element(By.CSS_SELECTOR, ".topbar").size["height"]
    assert header < 70, f"the header wraps ({header} px high)"
    turnbar = d.find_element(By.ID, "hint-btn")
    assert _in_viewport(d, turnbar), "Hint is not on screen without scrolling"
    if mode == "hidden":
        role = d.find_element(By.CSS_SELECTOR, "#seat-top .role").text
        assert "does not see your hand" in role

    done = _play_whole_game(d, mode, seat, size, shots)
    assert done["hinted"] and done["undone"] and done["double"]
    checked = _check_responses(d, mode, seat)
    assert mode == "open" or checked > 48

    _wait(d, "document.body.dataset.analysis === '1'", what="the analysis")
    _no_overflow(d, f"the analysis ({mode}, {size})")
    rows = d.find_elements(By.CSS_SELECTOR, "#analysis-table tbody tr")
    assert len(rows) == 48
    assert len(d.find_elements(By.CSS_SELECTOR, "#analysis-table tbody tr.human")) == 24
    # after the game every card is revealed
    assert d.execute_script("return window.pasurApp.view.visibility") == "open"
    if size == "wide":
        d.save_screenshot(str(shots / f"pasur_play_{mode}_end.png"))

    record = _download_record(d)
    assert record["mode"] == mode
    result = replay_record(parse_record(record))
    assert result.legal and result.state.is_terminal
    shown = (int(d.find_element(By.ID, "score-alex-total").text),
             int(d.find_element(By.ID, "score-bob-total").text))
    assert shown == (result.alex_points, result.bob_points)
    head = d.find_element(By.ID, "result-line")
    assert (int(head.get_attribute("data-alex")), int(head.get_attribute("data-bob"))) == shown
    for key in ("clubs", "aces", "jacks", "ten_of_diamonds", "two_of_clubs", "surs"):
        assert int(d.find_element(By.ID, f"score-alex-{key}").get_attribute("data-value")) == \
            getattr(result.alex, key)

    # step through the analysis: the board and the current row in view together
    d.find_element(By.ID, "step-first").click()
    _wait(d, "window.pasurApp.view.play_index === 0 && " + IDLE, what="stepping to play 0")
    for _ in range(3 if size == "wide" else 1):
        before = d.execute_script("return window.pasurApp.view.play_index")
        d.find_element(By.ID, "step-next").click()
        _wait(d, f"window.pasurApp.view.play_index === {before + 1} && {IDLE}", what="a step")
    row = d.find_element(By.CSS_SELECTOR, "#analysis-table tr.current")
    assert _in_viewport(d, row) and _in_viewport(d, d.find_element(By.ID, "pool")), size
    _no_overflow(d, f"stepping ({mode}, {size})")

    if mode == "open" and size == "wide":  # load the record back: the same analysis
        path = d.downloads / "uploaded.json"  # type: ignore[attr-defined]
        path.write_text(json.dumps(record), encoding="utf-8")
        d.find_element(By.ID, "upload-input").send_keys(str(path))
        _wait(d, "document.body.dataset.state === 'review' && document.body.dataset.analysis"
              " === '1' && " + IDLE, what="the uploaded record")
        assert int(d.find_element(By.ID, "score-alex-total").text) == result.alex_points
    with capsys.disabled():  # shown in `make test` / CI output: the browser test ran
        print(f"\nbrowser test ran: {mode} hands at {SIZES[size]}, 48 plays in "
              f"{time.perf_counter() - t0:.1f} s; score {shown[0]}-{shown[1]} equals the "
              f"record's replay; {checked} API answers checked for hidden cards")
    if os.environ.get("TENSORCFR_UPDATE_SCREENSHOTS") == "1" and size == "wide":
        if mode == "hidden":
            shutil.copy(shots / "pasur_play_hidden.png", REPO / "docs" / "pasur_play.png")
        else:
            shutil.copy(shots / "pasur_play_open_end.png", REPO / "docs" / "pasur_play_analysis.png")
