// signoff inbox: live updates over server-sent events, selection, and small checks.
// The page works without this script (forms post as usual); with it, calls appear and
// settle without a reload. Text from runs is only ever set with textContent.
"use strict";
(function () {
  const body = document.body;
  const page = body.dataset.page;
  const live = document.getElementById("live");
  const ignored = new Set(); // keys the server said are not for this list (filters, other pages)
  const listed = Number(body.dataset.listed) || 0; // when the server listed this page's calls

  function span(seconds) {
    seconds = Math.max(0, Math.floor(seconds));
    for (const [unit, size] of [["d", 86400], ["h", 3600], ["m", 60]]) {
      if (seconds >= size) return Math.floor(seconds / size) + unit;
    }
    return seconds + "s";
  }
  function refreshAges() {
    for (const el of document.querySelectorAll("[data-since]")) {
      const since = Date.parse(el.dataset.since);
      if (!isNaN(since)) el.textContent = span((Date.now() - since) / 1000);
    }
  }
  setInterval(refreshAges, 10000);

  function setLive(text, on) {
    if (!live) return;
    live.textContent = text;
    live.className = "live " + (on ? "on" : "off");
  }

  function markDecided(row, info) {
    if (row.classList.contains("decided")) return;
    row.classList.add("decided", info && info.approved === true ? "ok" : "bad");
    const box = row.querySelector("input[type=checkbox]");
    if (box) { box.checked = false; box.disabled = true; }
    const state = row.querySelector("td.state");
    if (state) state.textContent = info ? info.text : "no longer waiting";
  }

  async function fetchRows(keys) {
    const params = new URLSearchParams(location.search);
    params.delete("page");
    for (const key of keys) params.append("key", key);
    const response = await fetch("/rows?" + params.toString(), { credentials: "same-origin" });
    if (!response.ok) return [];
    const doc = new DOMParser().parseFromString(await response.text(), "text/html");
    return Array.from(doc.querySelectorAll("tr[data-key]"));
  }

  async function applyList(state) {
    const tbody = document.querySelector("#calls tbody");
    const rows = new Map(Array.from(tbody.querySelectorAll("tr[data-key]")).map((r) => [r.dataset.key, r]));
    for (const [key, row] of rows) {
      // a scan older than the page may not know a call the page lists: only a newer one settles it
      if (!(key in state.waiting) && (state.at >= listed || key in state.decided)) markDecided(row, state.decided[key]);
    }
    const wanted = Object.keys(state.waiting).filter((key) => {
      const row = rows.get(key);
      if (!row) return !ignored.has(key);
      return !row.classList.contains("decided") && row.dataset.votes !== String(state.waiting[key]);
    });
    if (wanted.length) {
      const fresh = await fetchRows(wanted);
      const got = new Set(fresh.map((r) => r.dataset.key));
      for (const key of wanted) if (!got.has(key) && !rows.has(key)) ignored.add(key);
      for (const row of fresh) {
        const old = rows.get(row.dataset.key);
        const box = old && old.querySelector("input[type=checkbox]");
        if (old) {
          row.querySelector("input[type=checkbox]").checked = box ? box.checked : false;
          old.replaceWith(row);
        } else {
          row.classList.add("fresh");
          tbody.insertBefore(row, tbody.firstChild);
        }
      }
    }
    const empty = tbody.querySelector("tr.empty");
    if (empty) empty.hidden = tbody.querySelector("tr[data-key]") !== null;
    updateSelection();
  }

  function applyCall(state) {
    const key = body.dataset.key;
    if (!key || key in state.waiting || (state.at < listed && !(key in state.decided))) return;
    const info = state.decided[key];
    const banner = document.getElementById("decided-banner");
    const text = document.getElementById("decided-text");
    if (banner && text) {
      text.textContent = info ? info.text : "decided elsewhere";
      banner.classList.add(info && info.approved === true ? "ok" : "bad");
      banner.hidden = false;
    }
    const actions = document.getElementById("actions");
    if (actions) actions.hidden = true;
  }

  let busy = Promise.resolve();
  function connect() {
    const source = new EventSource("/events");
    source.onopen = () => setLive("live", true);
    source.onerror = () => {
      // CLOSED: the server refused the stream (too many open pages, say), and the browser will not retry
      if (source.readyState === EventSource.CLOSED) setLive("live updates stopped: reload the page", false);
      else setLive("reconnecting…", false);
    };
    source.addEventListener("state", (event) => {
      const state = JSON.parse(event.data);
      if (state.problem) setLive(state.problem, false); else setLive("live", true);
      busy = busy.then(() => (page === "list" ? applyList(state) : page === "call" ? applyCall(state) : null))
        .catch(() => setLive("reconnecting…", false));
    });
  }

  function updateSelection() {
    const form = document.getElementById("bulk");
    if (!form) return;
    const picked = document.querySelectorAll("tr[data-key]:not(.decided) input[type=checkbox]:checked").length;
    document.getElementById("selected").textContent = picked + " selected";
    for (const button of form.querySelectorAll("button")) button.disabled = picked === 0;
  }

  if (page === "list") {
    document.addEventListener("change", (event) => {
      if (event.target.id === "pick-all") {
        for (const box of document.querySelectorAll("tr[data-key]:not(.decided) input[type=checkbox]:not(:disabled)")) {
          box.checked = event.target.checked;
        }
      }
      updateSelection();
    });
    updateSelection();
  }

  for (const form of document.querySelectorAll("form.edit-form")) {
    form.addEventListener("submit", (event) => {
      const problem = form.querySelector(".edit-problem");
      try {
        const value = JSON.parse(form.querySelector("textarea").value);
        if (value === null || typeof value !== "object" || Array.isArray(value)) throw new Error("a JSON object is needed, e.g. {\"command\": \"ls\"}");
        problem.hidden = true;
      } catch (error) {
        event.preventDefault();
        problem.textContent = "not valid: " + error.message;
        problem.hidden = false;
      }
    });
  }

  if (page === "list" || page === "call") connect();

  // The model's text in this call's run as it comes (GET /call/text): one <pre> per model turn.
  const liveText = document.getElementById("live-text");
  if (liveText && window.EventSource) {
    const turns = liveText.querySelector(".turns");
    const pre = (turn) => {
      let el = turns.querySelector(`pre[data-turn="${Number(turn)}"]`);
      if (!el) {
        el = document.createElement("pre");
        el.dataset.turn = String(Number(turn));
        turns.appendChild(el);
      }
      return el;
    };
    const query = new URLSearchParams({ run: liveText.dataset.run, id: liveText.dataset.call });
    const text = new EventSource("/call/text?" + query.toString());
    text.addEventListener("turns", (event) => {
      turns.textContent = "";
      for (const [turn, value] of Object.entries(JSON.parse(event.data).turns)) pre(turn).textContent = value;
      liveText.hidden = turns.childElementCount === 0;
    });
    text.addEventListener("text", (event) => {
      const delta = JSON.parse(event.data);
      const el = pre(delta.turn);
      el.textContent = delta.restart ? delta.text : el.textContent + delta.text;
      liveText.hidden = false;
    });
    text.addEventListener("closed", () => text.close());
  }
})();
