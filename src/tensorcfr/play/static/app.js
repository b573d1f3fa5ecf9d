/* Pasur page: talks to the JSON API of `tensorcfr pasur serve`; no framework, no build step. */
"use strict";

(function () {
  const RANKS = "A23456789TJQK";
  const RANK_LABEL = ["A", "2", "3", "4", "5", "6", "7", "8", "9", "10", "J", "Q", "K"];
  const SUIT_SYM = ["\u2663", "\u2666", "\u2665", "\u2660"];
  const SUIT_NAME = ["clubs", "diamonds", "hearts", "spades"];
  const PLAYERS = ["Alex", "Bob"];
  const AI_DELAY_MS = 450;      // pause before the AI answers, so the human's play is seen
  const SPINNER_DELAY_MS = 200; // only show the spinner for slow requests
  const SEED_MAX = 9223372036854775807n; // 2^63-1: the seed range of the CLI and the API
  const SEED_SLOT = "__seed__";

  const $ = (id) => document.getElementById(id);
  const app = {
    view: null,         // the last view from the server
    gameId: null,
    hints: null,        // hints of the shown position
    analysis: null,
    at: null,           // stepping through a finished game: the position shown (null = live)
    busy: 0,
    inFlight: false,    // a play is on its way: further clicks are ignored (a double-click)
    options: null,
    aiDelayMs: AI_DELAY_MS, // tests may shorten it
  };
  window.pasurApp = app; // for tests and curious users

  // ------------------------------------------------------------------ cards

  function cardCode(c) { return RANKS[c >> 2] + "cdhs"[c & 3]; }
  function cardText(c) { return RANK_LABEL[c >> 2] + SUIT_SYM[c & 3]; }
  function el(tag, cls, text) {
    const e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined) e.textContent = text;
    return e;
  }

  function cardEl(c, size) {
    const rank = c >> 2, suit = c & 3;
    const e = el("div", "card" + (suit === 1 || suit === 2 ? " red" : "") + (rank >= 10 ? " face" : "") +
      (size ? " " + size : ""));
    e.dataset.card = String(c);
    e.dataset.code = cardCode(c);
    e.title = RANK_LABEL[rank] + " of " + SUIT_NAME[suit];
    const corner = (pos) => {
      const k = el("span", "corner " + pos);
      k.append(RANK_LABEL[rank]);
      k.append(el("span", "s", SUIT_SYM[suit]));
      return k;
    };
    e.append(corner("tl"));
    const pip = el("span", "pip");
    if (rank >= 10) { pip.append(RANK_LABEL[rank]); pip.append(el("span", "s", SUIT_SYM[suit])); }
    else pip.textContent = SUIT_SYM[suit];
    e.append(pip);
    e.append(corner("br"));
    return e;
  }

  function playText(p) {
    // "7♦ takes A♣ 3♦" or "7♦ laid"
    if (!p.captured.length) return cardText(p.card) + " laid";
    return cardText(p.card) + " takes " + p.captured.map(cardText).join(" ");
  }

  function playNodes(p) {
    const span = el("span", "play");
    span.append(cardEl(p.card, "tiny"));
    if (p.captured.length) {
      span.append(el("span", "arrow", " takes "));
      p.captured.forEach((c) => span.append(cardEl(c, "tiny")));
    } else {
      span.append(el("span", "arrow", " laid"));
    }
    return span;
  }

  function signed(x) { return x > 0 ? "+" + x : String(x); }

  // ------------------------------------------------------------------ requests

  function setBusy(delta, text) {
    app.busy += delta;
    document.body.dataset.busy = app.busy > 0 ? "1" : "0";
    if (delta > 0) {
      const token = app.busy;
      setTimeout(() => {
        if (app.busy > 0 && app.busy >= token) {
          $("spinner-text").textContent = text || "Working\u2026";
          $("spinner").hidden = false;
        }
      }, SPINNER_DELAY_MS);
    } else if (app.busy <= 0) {
      $("spinner").hidden = true;
    }
  }

  async function api(method, path, body, spinnerText, seedDigits) {
    setBusy(1, spinnerText);
    try {
      const init = { method: method, headers: {} };
      if (body !== undefined) {
        init.headers["Content-Type"] = "application/json";
        init.body = JSON.stringify(body);
        if (seedDigits) init.body = init.body.replace(JSON.stringify(SEED_SLOT), seedDigits);
      }
      const res = await fetch(path, init);
      let data = null;
      try { data = await res.json(); } catch (e) { data = null; }
      if (!res.ok) {
        const msg = data && typeof data.detail === "string" ? data.detail : res.status + " " + res.statusText;
        const err = new Error(msg);
        err.status = res.status;
        throw err;
      }
      return data;
    } finally {
      setBusy(-1);
    }
  }

  let errorTimer = null;
  function showError(msg) {
    const box = $("error");
    box.textContent = msg;
    box.hidden = false;
    clearTimeout(errorTimer);
    errorTimer = setTimeout(() => { box.hidden = true; }, 7000);
  }
  function clearError() { $("error").hidden = true; }

  // ------------------------------------------------------------------ setup

  function showSetup() {
    document.body.dataset.state = "setup";
    $("setup").hidden = false;
    $("game").hidden = true;
  }

  async function loadOptions() {
    try {
      app.options = await api("GET", "/api/options");
    } catch (e) {
      showError("cannot reach the server: " + e.message);
      return;
    }
    $("mode-select").value = app.options.mode;
    fillAis();
  }

  function modeOptions() {
    const mode = $("mode-select").value;
    return app.options.modes.find((m) => m.name === mode);
  }

  function fillAis() {
    if (!app.options) return;
    const m = modeOptions();
    const sel = $("ai-select");
    sel.innerHTML = "";
    m.ais.forEach((ai) => {
      const o = el("option", "", ai.name + (ai.available ? "" : " (not loaded)"));
      o.value = ai.name;
      o.disabled = !ai.available;
      o.title = ai.description;
      sel.append(o);
    });
    sel.value = m.default_ai;
    $("mode-note-hidden").hidden = m.name !== "hidden";
    $("mode-note-open").hidden = m.name !== "open";
    updateAiNote();
  }

  function updateAiNote() {
    if (!app.options) return;
    const m = modeOptions();
    const ai = m.ais.find((a) => a.name === $("ai-select").value);
    $("ai-note").textContent = ai ? "The " + ai.name + " AI " + ai.description + "." +
      (m.name === "hidden" ? (ai.sees_your_hand ? " It cheats: it sees every card (a reference)."
        : " It does not see your hand.") : "") : "";
    if (ai && ai.name === "table" && app.options.table_deal) {
      // a strategy table is solved for one deal: play that one
      $("deal-input").value = app.options.table_deal.map(cardCode).join(" ");
      $("source-deal").checked = true;
      $("ai-note").textContent += " Its deal is filled in below.";
    }
  }

  async function startGame(ev) {
    ev.preventDefault();
    clearError();
    const source = document.querySelector("input[name=deal-source]:checked").value;
    const body = { mode: $("mode-select").value, human: $("seat-select").value, ai: $("ai-select").value };
    let seedDigits = null;
    if (source === "seed") {
      const raw = $("seed-input").value.trim();
      if (!/^\d+$/.test(raw) || BigInt(raw) > SEED_MAX) {
        showError("the seed must be a whole number from 0 to 2^63-1"); return;
      }
      seedDigits = String(BigInt(raw)); // sent as written: exact beyond 2^53
      body.seed = SEED_SLOT;
    } else if (source === "deal") {
      const text = $("deal-input").value.trim();
      if (!text) { showError("paste a deal: 52 cards, pool first"); return; }
      body.deal = text;
    }
    try {
      const view = await api("POST", "/api/games", body, "Dealing\u2026", seedDigits);
      enterGame(view);
    } catch (e) {
      showError(e.message);
    }
  }

  // ------------------------------------------------------------------ game flow

  function enterGame(view) {
    app.gameId = view.game_id;
    app.analysis = null;
    app.hints = null;
    app.at = null;
    $("setup").hidden = true;
    $("game").hidden = false;
    $("analysis").hidden = true;
    document.body.dataset.analysis = "0";
    document.body.dataset.estimates = "0";
    setView(view);
    if (view.game_over) finishGame();
    else maybeAi();
  }

  function setView(view) {
    app.view = view;
    app.hints = null;
    render();
  }

  async function maybeAi() {
    const v = app.view;
    if (!v || !v.ai_to_move) return;
    const ai = PLAYERS[1 - PLAYERS.indexOf(v.human)];
    setStatus(ai + " is thinking\u2026");
    await new Promise((r) => setTimeout(r, app.aiDelayMs));
    if (app.view !== v) return; // the user undid or started a new game meanwhile
    const text = v.mode === "hidden" || v.solution_ready || v.ai !== "exact" ? ai + " is thinking\u2026"
      : "Solving the deal exactly (once per deal, about a second)\u2026";
    try {
      const next = await api("POST", "/api/games/" + v.game_id + "/ai", undefined, text);
      if (app.gameId !== v.game_id) return;
      setView(next);
      if (next.game_over) finishGame();
      else maybeAi();
    } catch (e) {
      showError(e.message);
    }
  }

  async function play(action) {
    const v = app.view;
    if (app.inFlight || !v || !v.your_turn) return; // a double-click: one play only
    app.inFlight = true;
    document.body.dataset.inflight = "1";
    closeChoices();
    try {
      const next = await api("POST", "/api/games/" + v.game_id + "/play",
        { card: action.card, captured: action.captured });
      setView(next);
      if (next.game_over) finishGame();
      else maybeAi();
    } catch (e) {
      showError(e.message);
    } finally {
      app.inFlight = false;
      document.body.dataset.inflight = "0";
    }
  }

  async function undo() {
    if (!app.view || !app.view.can_undo) return;
    try {
      setView(await api("POST", "/api/games/" + app.view.game_id + "/undo"));
    } catch (e) {
      showError(e.message);
    }
  }

  async function showHints() {
    const v = app.view;
    if (!v || v.over) return;
    const q = app.at !== null ? "?at=" + app.at : "";
    try {
      const text = v.hint_kind === "estimate" ? "The " + v.ai + " agent is estimating your plays\u2026"
        : v.solution_ready ? "Computing hints\u2026" : "Solving the deal exactly (about a second)\u2026";
      const data = await api("GET", "/api/games/" + v.game_id + "/hints" + q, undefined, text);
      if (app.view !== v) return;
      app.hints = data;
      if (data.kind === "exact") v.solution_ready = true;
      render();
    } catch (e) {
      showError(e.message);
    }
  }

  async function finishGame() {
    const v = app.view;
    try {
      const a = await api("GET", "/api/games/" + v.game_id + "/analysis", undefined,
        "Analysing the game\u2026");
      if (app.gameId !== v.game_id) return;
      app.analysis = a;
      renderAnalysis();
      render();
    } catch (e) {
      showError(e.message);
    }
  }

  async function stepTo(at) {
    const v = app.view;
    if (!v || !v.game_over) return;
    at = Math.max(0, Math.min(v.num_positions - 1, at));
    try {
      const next = await api("GET", "/api/games/" + v.game_id + "?at=" + at);
      app.at = at === next.num_positions - 1 ? null : at;
      setView(next);
      renderAnalysis();
      keepInView();
    } catch (e) {
      showError(e.message);
    }
  }

  async function playOn() {
    const v = app.view;
    const at = app.at === null ? v.num_positions - 1 : app.at;
    if (!v || !v.game_over || at >= 48) return;
    try {
      enterGame(await api("POST", "/api/games/" + v.game_id + "/play-on?at=" + at, undefined,
        "Setting up the position\u2026"));
    } catch (e) {
      showError(e.message);
    }
  }

  async function downloadRecord() {
    const v = app.view;
    try {
      const rec = await api("GET", "/api/games/" + v.game_id + "/record");
      app.record = rec;
      const blob = new Blob([JSON.stringify(rec, null, 1) + "\n"], { type: "application/json" });
      const a = document.createElement("a");
      a.href = URL.createObjectURL(blob);
      a.download = rec.seed !== undefined ? "pasur-seed" + rec.seed + ".json" : "pasur-game.json";
      document.body.append(a);
      a.click();
      setTimeout(() => { URL.revokeObjectURL(a.href); a.remove(); }, 1000);
    } catch (e) {
      showError(e.message);
    }
  }

  function uploadRecord(ev) {
    const file = ev.target.files && ev.target.files[0];
    ev.target.value = "";
    if (!file) return;
    if (file.size > 200000) { showError("that file is too large to be a game record"); return; }
    const reader = new FileReader();
    reader.onload = async () => {
      let obj;
      try { obj = JSON.parse(reader.result); } catch (e) {
        showError("not a game record: the file is not valid JSON"); return;
      }
      try {
        const view = await api("POST", "/api/records", obj, "Loading and analysing\u2026");
        enterGame(view);
      } catch (e) {
        showError(e.message);
      }
    };
    reader.readAsText(file);
  }

  // Stepping through the analysis: the board and the current row both in view. The analysis
  // table scrolls in its own box; the window scrolls only to bring the board back.
  function keepInView() {
    const board = document.querySelector(".table-area").getBoundingClientRect();
    if (board.top < 0 || board.top > window.innerHeight * 0.5) {
      window.scrollBy(0, board.top - 4);
    }
    const row = document.querySelector("#analysis-table tr.current");
    const box = $("analysis-scroll");
    if (row && box) {
      const r = row.getBoundingClientRect(), b = box.getBoundingClientRect();
      const head = box.querySelector("thead").getBoundingClientRect().height;
      if (r.top < b.top + head) box.scrollTop -= b.top + head - r.top;
      else if (r.bottom > b.bottom) box.scrollTop += r.bottom - b.bottom;
    }
  }

  // ------------------------------------------------------------------ rendering

  function setStatus(html) { $("status").innerHTML = html; }

  function render() {
    const v = app.view;
    if (!v) return;
    if (!v.game_over && app.analysis) { // undone after the end: the game goes on
      app.analysis = null;
      $("analysis").hidden = true;
      document.body.dataset.analysis = "0";
    }
    document.body.dataset.state = v.imported ? "review" : (v.game_over ? "over" : "playing");
    document.body.dataset.turn = v.your_turn ? "human" : (v.ai_to_move ? "ai" : "none");
    document.body.dataset.plays = String(v.play_index);
    const human = v.human, ai = PLAYERS[1 - PLAYERS.indexOf(human)];
    $("round-info").textContent = v.over ? "Game over \u00b7 48 plays"
      : "Round " + v.round + " of 6 \u00b7 " + v.play_index + " of 48 plays made" +
        (v.visibility === "hidden" ? " \u00b7 " + v.undealt_count + " cards to deal" : "");
    // a hidden-hand game never gets its seed before the end (the seed would be the deal)
    const dealText = v.seed !== null && v.seed !== undefined ? "deal seed " + v.seed
      : v.visibility === "hidden" ? (v.practice ? "practice deal: you chose it, so every card can be known"
        : "secret deal") : "deal";
    $("deal-info").textContent = dealText
      + (v.ai ? " \u00b7 opponent: " + v.ai + " AI" : "") + (v.imported ? " \u00b7 loaded record" : "");
    $("deal-info").dataset.practice = v.practice ? "1" : "0";
    renderBadge(v);
    renderRoundsToCome(v);
    renderSeat($("seat-top"), v.imported ? "Bob" : ai, v);
    renderSeat($("seat-bottom"), v.imported ? "Alex" : human, v);

    const pool = $("pool");
    pool.innerHTML = "";
    const lp = v.last_play;
    v.pool.forEach((c) => {
      const e = cardEl(c);
      if (lp && lp.captured.length === 0 && lp.card === c) e.classList.add("just-played");
      pool.append(e);
    });
    renderLastPlay(v);
    renderScore(v);
    renderMoveList(v);
    renderHints(v);
    renderControls(v);
    renderStatus(v);
  }

  function renderBadge(v) {
    const badge = $("mode-badge");
    badge.dataset.mode = v.mode;
    if (v.mode === "hidden") {
      badge.textContent = "Hidden hands";
      if (v.over) badge.append(el("span", "long", " \u00b7 all cards revealed"));
      badge.title = "Each side sees only its own hand, the pool and the cards played. The " +
        (v.ai || "") + " AI " + (v.ai_sees_your_hand ? "cheats: it sees every card." : "does not see your hand.");
    } else {
      badge.textContent = "Open hands";
      badge.append(el("span", "long", " \u00b7 double-dummy"));
      badge.title = "Both players see every card of the deal, as in a double-dummy bridge problem. " +
        "This is the game the solver solves exactly.";
    }
  }

  function renderRoundsToCome(v) {
    const box = $("rounds-to-come");
    box.innerHTML = "";
    const rounds = v.rounds_to_come || [];
    box.hidden = v.visibility !== "open" || !rounds.length || v.over;
    if (box.hidden) return;
    box.append(el("span", "label", "Rounds to come"));
    rounds.forEach((r) => {
      const part = el("span", "round");
      part.dataset.round = String(r.round);
      part.append(el("span", "r", "r" + r.round));
      ["Alex", "Bob"].forEach((name) => {
        const who = el("span", "who");
        who.append(el("span", "n", name[0]));
        r[name].forEach((c) => who.append(cardEl(c, "tiny")));
        part.append(who);
      });
      box.append(part);
    });
  }

  function renderSeat(box, name, v) {
    const key = name.toLowerCase();
    box.innerHTML = "";
    box.id = "seat-" + (box.classList.contains("top") ? "top" : "bottom");
    box.dataset.player = name;
    box.classList.toggle("to-move", v.to_move === name);
    const head = el("div", "seat-head");
    head.append(el("span", "name", name));
    let role = name === v.human ? "you" : (v.ai ? v.ai + " AI" +
      (v.mode === "hidden" && !v.over ? (v.ai_sees_your_hand ? " \u00b7 sees every card" : " \u00b7 does not see your hand") : "") : "");
    if (v.imported) role = v.human && name === v.human ? "human" : "";
    if (role) head.append(el("span", "role", role));
    if (v.to_move === name) head.append(el("span", "turn", "to play"));
    const pts = el("span", "pts", v.score[name].total + " pts");
    pts.id = "points-" + key;
    head.append(pts);
    box.append(head);

    const hand = el("div", "cards hand");
    hand.id = "hand-" + key;
    const cards = v.hands[name];
    const legalByCard = new Map();
    if (v.your_turn && name === v.human) {
      v.legal.forEach((a, i) => {
        if (!legalByCard.has(a.card)) legalByCard.set(a.card, []);
        legalByCard.get(a.card).push(Object.assign({ index: i }, a));
      });
    }
    const hintByCard = new Map();
    if (app.hints && app.hints.player === name && app.hints.hints.length) {
      app.hints.hints.forEach((h) => {
        const best = hintByCard.get(h.card);
        if (best === undefined || h.loss < best) hintByCard.set(h.card, h.loss);
      });
    }
    if (cards === null) {
      for (let i = 0; i < v.hand_counts[name]; i++) hand.append(el("div", "card back"));
      hand.dataset.count = String(v.hand_counts[name]);
      hand.title = v.hand_counts[name] + " cards, hidden";
      hand.append(el("span", "count", v.hand_counts[name] + (v.hand_counts[name] === 1 ? " card" : " cards")));
    } else {
      cards.forEach((c) => {
        const e = cardEl(c);
        const actions = legalByCard.get(c);
        if (actions) {
          e.classList.add("playable");
          e.tabIndex = 0;
          e.setAttribute("role", "button");
          e.dataset.legal = "1";
          e.dataset.actions = String(actions.length);
          e.title += actions.length > 1 ? " \u2014 several captures: you choose" : " \u2014 " + playText(actions[0]);
          const go = () => {
            if (app.inFlight) return; // a play is on its way
            if (actions.length === 1) play(actions[0]); else openChoices(c, actions);
          };
          e.addEventListener("click", go);
          e.addEventListener("keydown", (ev) => { if (ev.key === "Enter" || ev.key === " ") { ev.preventDefault(); go(); } });
          e.addEventListener("mouseenter", () => highlightTargets(actions.length === 1 ? actions[0].captured : []));
          e.addEventListener("mouseleave", () => highlightTargets([]));
        }
        if (hintByCard.has(c)) {
          const loss = hintByCard.get(c);
          const b = el("span", "hint-badge" + (loss === 0 ? " best" : ""), loss === 0 ? "\u2713" : "\u2212" + loss);
          b.title = (app.hints.kind === "estimate" ? "estimate: " : "") +
            (loss === 0 ? "a best play" : "its best play loses " + loss + " point(s)");
          e.append(b);
        }
        hand.append(e);
      });
    }
    box.append(hand);

    const pileBox = el("div", "pile-box");
    const pile = v.piles[name];
    const clubs = pile.filter((c) => (c & 3) === 0).length;
    const label = el("div", "pile-label", "captured " + pile.length + " cards \u00b7 " + clubs + " clubs");
    label.id = "pile-count-" + key;
    pileBox.append(label);
    const pileEl = el("div", "pile");
    pileEl.id = "pile-" + key;
    const lp = v.last_play;
    pile.forEach((c) => {
      const e = cardEl(c, "small");
      if (lp && lp.player === name && (lp.card === c || lp.captured.includes(c)) && lp.captured.length) {
        e.classList.add("just-played");
      }
      pileEl.append(e);
    });
    pileBox.append(pileEl);
    box.append(pileBox);
    // the hand sits on the left, the pile on the right
    box.insertBefore(hand, pileBox);
  }

  function highlightTargets(cards) {
    document.querySelectorAll("#pool .card").forEach((e) => {
      e.classList.toggle("target", cards.includes(Number(e.dataset.card)));
    });
  }

  function openChoices(card, actions) {
    const box = $("choices");
    box.innerHTML = "";
    document.querySelectorAll(".hand .card").forEach((e) => e.classList.toggle("selected", Number(e.dataset.card) === card));
    box.append(el("h3", "", cardText(card) + " can capture several ways. Choose one:"));
    actions.forEach((a) => {
      const b = el("button", "choice");
      b.type = "button";
      b.dataset.actionIndex = String(a.index);
      b.dataset.notation = a.notation;
      b.append(cardEl(a.card, "tiny"));
      b.append(el("span", "arrow", "takes"));
      a.captured.forEach((c) => b.append(cardEl(c, "tiny")));
      if (app.hints && app.hints.player === app.view.human) {
        const h = app.hints.hints.find((x) => x.notation === a.notation);
        if (h) b.append(el("span", "muted", h.best ? " \u2713 best" : " \u2212" + h.loss + " pts"));
      }
      b.addEventListener("click", () => play(a));
      b.addEventListener("mouseenter", () => highlightTargets(a.captured));
      b.addEventListener("mouseleave", () => highlightTargets([]));
      box.append(b);
    });
    const cancel = el("button", "btn cancel", "Cancel");
    cancel.type = "button";
    cancel.id = "choices-cancel";
    cancel.addEventListener("click", closeChoices);
    box.append(cancel);
    box.hidden = false;
  }

  function closeChoices() {
    $("choices").hidden = true;
    highlightTargets([]);
    document.querySelectorAll(".hand .card.selected").forEach((e) => e.classList.remove("selected"));
  }

  function renderLastPlay(v) {
    const box = $("last-play");
    box.innerHTML = "";
    box.className = "last-play";
    const p = v.last_play;
    if (!p) {
      box.append(el("span", "muted", v.play_index === 0 ? "The cards are dealt. " + (v.to_move || "") + " plays first." : ""));
      return;
    }
    if (p.by === "ai") box.classList.add("ai");
    box.dataset.number = String(p.number);
    box.dataset.by = p.by;
    const who = p.by === "human" ? "You (" + p.player + ")" : p.player + (p.by === "ai" ? " (AI)" : "");
    box.append(el("span", "who", who));
    box.append(el("span", "", p.captured.length ? "played" : "laid"));
    box.append(cardEl(p.card, "small"));
    if (p.captured.length) {
      box.append(el("span", "", "and captured"));
      p.captured.forEach((c) => box.append(cardEl(c, "small")));
    } else {
      box.append(el("span", "", "in the pool"));
    }
    if (p.points) box.append(el("span", "gain", signed(p.points) + " pts"));
    if (p.sur) box.append(el("span", "sur", "SUR +5"));
    if (p.cleanup && p.cleanup.length) {
      box.append(el("span", "", "\u00b7 last pool (" + p.cleanup.map(cardText).join(" ") + ") to " + p.cleanup_to));
    }
  }

  function renderScore(v) {
    const keys = ["clubs", "aces", "jacks", "ten_of_diamonds", "two_of_clubs", "surs", "total"];
    PLAYERS.forEach((name) => {
      const s = v.score[name];
      const k = name.toLowerCase();
      keys.forEach((key) => {
        const cell = $("score-" + k + "-" + key);
        let text = String(s[key]);
        if (key === "clubs") text = s.clubs + (s.clubs_bonus ? " \u2192 7" : "");
        if (key === "surs") text = s.surs ? s.surs + " \u00d7 5 = " + s.sur_points : "0";
        if (key === "ten_of_diamonds" || key === "two_of_clubs") text = s[key] ? String(s[key]) : "\u2013";
        cell.textContent = text;
        cell.dataset.value = String(s[key]);
      });
      $("score-head-" + k).classList.toggle("you", !v.imported && name === v.human);
    });
  }

  function renderMoveList(v) {
    const list = $("move-list");
    list.innerHTML = "";
    list.hidden = $("plays-title").hidden = !v.history.length; // no empty box at the start
    v.history.forEach((p) => {
      const li = el("li", p.by);
      li.value = p.number;
      li.dataset.number = String(p.number);
      li.append(el("strong", "", p.player + " "));
      li.append(document.createTextNode(playText(p)));
      if (p.points) li.append(el("span", "pts", " " + signed(p.points)));
      if (p.sur) li.append(el("span", "pts", " Sur"));
      list.append(li);
    });
    list.scrollTop = list.scrollHeight;
  }

  function renderHints(v) {
    const box = $("hints");
    const h = app.hints;
    if (!h || v.over) { box.hidden = true; box.innerHTML = ""; return; }
    box.innerHTML = "";
    box.dataset.kind = h.kind;
    if (h.kind === "none") {
      box.append(el("p", "muted", "The " + h.agent + " agent gives no estimates (play against " +
        "pimc for estimated hints). The exact analysis of every play comes after the game."));
      box.hidden = false;
      return;
    }
    const table = el("table");
    table.id = "hints-table";
    const cap = h.kind === "estimate"
      ? "Estimate by the " + h.agent + " agent for " + h.player + " (not exact: " + h.what + "):"
      : "Exact values for " + h.player + " (final point difference, optimal play after):";
    table.append(el("caption", "", cap));
    const head = el("tr");
    [ "Play", h.kind === "estimate" ? "Estimate" : "Value", "Loss"].forEach((t, i) => head.append(el("th", i ? "num" : "", t)));
    table.append(head);
    const rows = h.hints.slice().sort((a, b) => a.loss - b.loss);
    rows.forEach((x) => {
      const tr = el("tr", x.best ? "best" : "lose");
      tr.dataset.notation = x.notation;
      tr.dataset.loss = String(x.loss);
      const td = el("td");
      td.append(playNodes(x));
      tr.append(td);
      tr.append(el("td", "num", signed(x.value)));
      tr.append(el("td", "num loss", x.best ? "best" : "\u2212" + x.loss));
      table.append(tr);
    });
    box.append(table);
    box.hidden = false;
  }

  function renderControls(v) {
    $("hint-btn").disabled = v.over || !v.hints_available || (!v.your_turn && app.at === null);
    $("hint-btn").textContent = v.hint_kind === "estimate" && !v.game_over ? "Hint (estimate)" : "Hint";
    $("undo-btn").disabled = !v.can_undo || app.busy > 0;
    // hidden hands have no undo (it would show the AI's answer to another play, so its
    // cards); "Play on from here" after the game tries another line
    $("undo-btn").hidden = v.imported || v.mode === "hidden";
    $("download-btn").hidden = !v.game_over;
  }

  function renderStatus(v) {
    if (v.game_over && app.at === null) {
      const a = app.analysis;
      setStatus(a ? "Game over: Alex " + a.final.Alex.total + " \u2013 Bob " + a.final.Bob.total + ". Every card is shown; see the analysis."
        : "Game over. Analysing\u2026");
      return;
    }
    if (app.at !== null) {
      setStatus("Position before play " + v.at + (v.to_move ? " (" + v.to_move + " to play)" : "") +
        ". Use \u25c0 \u25b6 or click a play in the analysis.");
      return;
    }
    if (v.your_turn) {
      const several = v.legal.some((a, i) => v.legal.findIndex((b) => b.card === a.card) !== i);
      setStatus("<strong>Your turn</strong> (" + v.human + "): click a card to play it." +
        (several ? " A card with several captures asks which one." : ""));
    } else if (v.ai_to_move) {
      setStatus(v.to_move + " is thinking\u2026");
    }
  }

  function renderAnalysis() {
    const a = app.analysis;
    const v = app.view;
    if (!a) return;
    const box = $("analysis");
    box.hidden = false;
    document.body.dataset.analysis = "1";
    const alex = a.final.Alex.total, bob = a.final.Bob.total;
    const head = $("result-line");
    head.className = "";
    if (a.human && !v.imported) {
      const mine = a.final[a.human].total, theirs = a.final[a.human === "Alex" ? "Bob" : "Alex"].total;
      head.textContent = (mine > theirs ? "You won " : mine < theirs ? "You lost " : "A tie ") +
        mine + " \u2013 " + theirs;
      head.className = mine > theirs ? "won" : mine < theirs ? "lost" : "";
    } else {
      head.textContent = "Final score: Alex " + alex + " \u2013 Bob " + bob;
    }
    head.dataset.alex = String(alex);
    head.dataset.bob = String(bob);
    $("value-line").textContent = "Exact value of the deal (optimal play by both): Alex " +
      signed(a.exact_value) + ". This game: Alex " + signed(a.final.utility) + ".";
    if (a.human) {
      const other = a.human === "Alex" ? "Bob" : "Alex";
      $("cost-line").textContent = "Your plays (" + a.human + ") gave away " + a.human_cost +
        " point(s) against optimal play; " + other + "'s gave away " + a.cost[other] + ".";
    } else {
      $("cost-line").textContent = "Points given away against optimal play: Alex " + a.cost.Alex +
        ", Bob " + a.cost.Bob + ".";
    }
    $("cost-line").dataset.cost = String(a.human_cost);
    const est = a.estimate;
    const withEst = !!(est && est.available);
    document.body.dataset.estimates = withEst ? "1" : "0";
    $("estimate-line").hidden = !est;
    if (est) {
      $("estimate-line").textContent = withEst
        ? "Against the " + est.agent + " agent's estimate at each of your turns (what a player could have known), " +
          "your plays gave away " + est.human_cost + " point(s)."
        : (est.message ? est.message[0].toUpperCase() + est.message.slice(1) : "No estimates") +
          ": the cost against an estimate is not shown.";
    }
    const at = app.at === null ? v.num_positions - 1 : app.at;
    document.body.dataset.stepping = app.at === null ? "0" : "1";
    $("step-label").textContent = at >= 48 ? "final position" : "before play " + at + " of 48";
    $("step-prev").disabled = at <= 0;
    $("step-first").disabled = at <= 0;
    $("step-next").disabled = at >= v.num_positions - 1;
    $("step-last").disabled = at >= v.num_positions - 1;
    $("play-on-btn").disabled = at >= 48;
    const body = $("analysis-table").querySelector("tbody");
    body.innerHTML = "";
    a.plays.forEach((p) => {
      const tr = el("tr", p.by === "human" || (v.imported && a.human === p.player) ? "human" : "");
      if (p.number === at) tr.classList.add("current");
      tr.dataset.number = String(p.number);
      tr.dataset.cost = String(p.cost);
      tr.append(el("td", "num", String(p.number)));
      tr.append(el("td", "", p.player + (p.by === "human" ? " (you)" : p.by === "ai" ? " (AI)" : "")));
      const td = el("td");
      td.append(playNodes(p));
      if (p.sur) td.append(el("span", "muted", " Sur"));
      tr.append(td);
      tr.append(el("td", "num", p.points ? signed(p.points) : ""));
      tr.append(el("td", "num " + (p.cost === 0 ? "cost-0" : "cost-bad"), p.cost === 0 ? "\u2713" : "\u2212" + p.cost));
      const e = p.estimate_cost;
      tr.append(el("td", "num est-col " + (e === undefined ? "" : e === 0 ? "cost-0" : "cost-bad"),
        e === undefined ? "" : e === 0 ? "\u2713" : "\u2212" + e));
      tr.append(el("td", "muted", p.cost === 0 ? (p.alternatives > 1 ? "" : "only play") :
        p.best.slice(0, 3).map(notationText).join(", ") + (p.best.length > 3 ? ", \u2026" : "")));
      tr.addEventListener("click", () => stepTo(p.number));
      body.append(tr);
    });
    renderGraph(a);
  }

  // "7d+Ac+4d" -> "7♦ takes A♣ 4♦", "7d" -> "7♦ laid"
  function notationText(n) {
    const cards = n.split("+").map((c) => RANKS.indexOf(c[0]) * 4 + "cdhs".indexOf(c[1]));
    return playText({ card: cards[0], captured: cards.slice(1) });
  }

  // The running exact value (Alex's side) over the game, and the agent's estimates of the
  // human's positions in hidden mode, as a small SVG line chart.
  function renderGraph(a) {
    const box = $("eval-graph");
    box.innerHTML = "";
    if (!a.plays.length) { box.hidden = true; return; }
    const ns = "http://www.w3.org/2000/svg";
    const W = 480, H = 120, P = 18;
    const exact = a.plays.map((p) => p.value_alex).concat([a.final.utility]);
    // only estimates of the final points difference share the exact line's scale (the
    // hidden-model's scores are advantages over the average play: not drawn)
    const sameScale = !a.estimate || a.estimate.measure !== "advantage";
    const est = a.plays.map((p) => p.estimate_value === undefined || !sameScale ? null
      : (p.player === "Alex" ? 1 : -1) * p.estimate_value);
    const all = exact.concat(est.filter((x) => x !== null)).concat([0]);
    const lo = Math.min(...all), hi = Math.max(...all), span = Math.max(1, hi - lo);
    const x = (i) => P + (W - 2 * P) * i / 48, y = (val) => P + (H - 2 * P) * (hi - val) / span;
    const svg = document.createElementNS(ns, "svg");
    svg.setAttribute("viewBox", "0 0 " + W + " " + H);
    svg.setAttribute("role", "img");
    svg.setAttribute("aria-label", "evaluation over the game, Alex's side");
    const line = (pts, cls) => {
      const pl = document.createElementNS(ns, "polyline");
      pl.setAttribute("points", pts.map(([i, v]) => x(i).toFixed(1) + "," + y(v).toFixed(1)).join(" "));
      pl.setAttribute("class", cls);
      svg.append(pl);
    };
    line([[0, 0], [48, 0]], "zero");
    line(exact.map((v, i) => [i, v]), "exact");
    const ep = est.map((v, i) => [i, v]).filter(([, v]) => v !== null);
    if (ep.length) ep.forEach(([i, v]) => {
      const c = document.createElementNS(ns, "circle");
      c.setAttribute("cx", x(i).toFixed(1)); c.setAttribute("cy", y(v).toFixed(1)); c.setAttribute("r", "2.5");
      c.setAttribute("class", "estimate");
      svg.append(c);
    });
    const at = app.at === null ? 48 : app.at;
    line([[at, lo], [at, hi]], "cursor");
    box.append(svg);
    box.append(el("p", "muted", "Exact value of the position (line, Alex's side: optimal play by both from there)" +
      (ep.length ? "; dots: the " + a.estimate.agent + " agent's estimate at your turns" : "") + "."));
    box.hidden = false;
  }

  // ------------------------------------------------------------------ wiring

  document.addEventListener("DOMContentLoaded", () => {
    $("new-game-form").addEventListener("submit", startGame);
    $("ai-select").addEventListener("change", updateAiNote);
    $("mode-select").addEventListener("change", fillAis);
    $("seed-input").addEventListener("focus", () => { $("source-seed").checked = true; });
    $("deal-input").addEventListener("focus", () => { $("source-deal").checked = true; });
    $("new-game-btn").addEventListener("click", () => { closeChoices(); showSetup(); });
    $("upload-input").addEventListener("change", uploadRecord);
    $("hint-btn").addEventListener("click", showHints);
    $("undo-btn").addEventListener("click", undo);
    $("download-btn").addEventListener("click", downloadRecord);
    $("step-first").addEventListener("click", () => stepTo(0));
    $("step-prev").addEventListener("click", () => stepTo((app.at === null ? app.view.num_positions - 1 : app.at) - 1));
    $("step-next").addEventListener("click", () => stepTo((app.at === null ? app.view.num_positions - 1 : app.at) + 1));
    $("step-last").addEventListener("click", () => stepTo(48));
    $("play-on-btn").addEventListener("click", playOn);
    document.addEventListener("keydown", (ev) => {
      if (ev.key === "Escape") closeChoices();
    });
    showSetup();
    loadOptions().then(() => { document.body.dataset.ready = "1"; });
  });
})();
