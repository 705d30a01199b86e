// flightd's operator's page: polls api/state every 2 s while it is shown
// and renders it.
// Every value is set as text (never as HTML): table names and SQL come
// from clients.
"use strict";

const POLL_MS = 2000;
const CONFIRM_MS = 5000;

let last = null;        // the last state received
let lastAt = 0;         // when (browser clock)
let lastError = "";     // why the last poll failed
let pending = null;     // {id, until}: a cancel waiting for its confirmation
let timer = 0;

const $ = (id) => document.getElementById(id);

// api is the URL of an endpoint of the page's API. Without the user name
// and password a page opened as http://user:pass@host/ui/ has in its
// address: fetch refuses a URL that carries credentials (the browser sends
// those it was given for the page).
function api(name) {
  const u = new URL("api/" + name, location.href);
  u.username = "";
  u.password = "";
  return u.href;
}
const intFmt = new Intl.NumberFormat("en-US");

// ---- formatting ----

function el(tag, props, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(props || {})) {
    if (k === "class") e.className = v;
    else if (k === "data") for (const [dk, dv] of Object.entries(v)) e.dataset[dk] = String(dv);
    else if (k === "title") e.title = v;
    else e.setAttribute(k, v);
  }
  for (const c of children) {
    if (c === null || c === undefined) continue;
    e.append(c instanceof Node ? c : String(c));
  }
  return e;
}

// withUnit renders "12.3" + a muted "MiB".
function withUnit(value, unit) {
  const f = document.createDocumentFragment();
  f.append(value);
  if (unit) f.append(el("span", { class: "unit" }, unit));
  return f;
}

function bytes(n) {
  const units = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];
  let i = 0;
  while (n >= 1024 && i < units.length - 1) { n /= 1024; i++; }
  const digits = i === 0 || n >= 100 ? 0 : n >= 10 ? 1 : 2;
  return [n.toFixed(digits), units[i]];
}

function bytesText(n) { const [v, u] = bytes(n); return v + " " + u; }

// duration renders seconds as "850 ms", "12 s", "3 min 4 s", "2 h 5 min", "3 d 4 h".
function duration(s) {
  if (s < 0) s = 0;
  if (s < 1) return s === 0 ? "0 s" : Math.round(s * 1000) + " ms";
  if (s < 10) return (Math.round(s * 10) / 10) + " s";
  if (s < 60) return Math.round(s) + " s";
  const m = Math.floor(s / 60);
  if (m < 60) { const r = Math.round(s - m * 60); return r ? `${m} min ${r} s` : `${m} min`; }
  const h = Math.floor(m / 60);
  if (h < 24) { const r = m - h * 60; return r ? `${h} h ${r} min` : `${h} h`; }
  const d = Math.floor(h / 24);
  const r = h - d * 24;
  return r ? `${d} d ${r} h` : `${d} d`;
}

// ago renders a time (Unix ms) relative to the server's clock.
function ago(ms) {
  if (!ms) return "–";
  const s = (serverNow() - ms) / 1000;
  if (s < 1) return "just now";
  return duration(Math.floor(s)) + " ago";
}

function until(ms) {
  if (!ms) return "–";
  const s = (ms - serverNow()) / 1000;
  return s <= 0 ? "due" : "in " + duration(Math.ceil(s));
}

// serverNow is the server's clock now: the state's time plus what passed since.
function serverNow() { return last ? last.now + (Date.now() - lastAt) : Date.now(); }

function absTime(ms) { return ms ? new Date(ms).toISOString().replace("T", " ").replace(/\.\d+Z$/, " UTC") : ""; }

function numCell(col, value, content, title) {
  return el("td", { class: "num", data: { col, value }, title: title || "" }, content);
}

// ---- rendering ----

function render() {
  const s = last;
  if (!s) return;
  document.title = s.node ? `flightd · ${s.node}` : "flightd";
  $("version").textContent = s.version;
  $("node").textContent = s.node || "alone";
  $("uptime").textContent = s.started ? duration((s.now - s.started) / 1000) : "–";
  const m = s.memory;
  $("memory").textContent = m.resident_bytes ? bytesText(m.resident_bytes) + (m.limit_bytes ? " of " + bytesText(m.limit_bytes) : "") : "–";
  $("memory").title = m.ceiling_bytes ? "statements are cancelled above " + bytesText(m.ceiling_bytes) + " (--memory-ceiling)" : "";
  $("heap").textContent = bytesText(m.go_heap_bytes);
  $("load").textContent = `${s.load.running} running · ${s.load.queued} queued`;
  $("streams").textContent = intFmt.format(s.load.streams);

  const errs = $("errors");
  errs.hidden = s.errors.length === 0;
  errs.textContent = s.errors.join("\n");

  renderHealth(s);
  renderTables(s);
  renderStatements(s);
  renderNodes(s);
  renderStatus();
}

function renderHealth(s) {
  const failing = s.tables.filter((t) => t.failed_rounds > 0);
  const tbody = $("health").tBodies[0];
  $("health").hidden = failing.length === 0;
  const streaming = s.tables.filter((t) => t.realtime).length;
  $("health-ok").hidden = failing.length !== 0;
  $("health-ok").textContent = streaming === 0 ? "No table keeps a log." :
    `All ${streaming} ${streaming === 1 ? "table" : "tables"} with a log tier without errors.`;
  tbody.replaceChildren(...failing.map((t) => el("tr", { data: { table: `${t.database}.${t.table}` } },
    el("td", {}, el("span", { class: "db" }, t.database + "."), el("span", { class: "name" }, t.table)),
    numCell("failed_rounds", t.failed_rounds, el("span", { class: "bad" }, intFmt.format(t.failed_rounds))),
    el("td", { title: absTime(t.retry_at) }, until(t.retry_at)),
    el("td", { class: "error-text" }, t.last_error),
  )));
}

function tableKind(t) {
  const buckets = `${t.buckets} ${t.buckets === 1 ? "bucket" : "buckets"}`;
  if (t.primary_key.length) {
    return el("span", { title: "primary key (" + t.primary_key.join(", ") + ")" }, "primary key · " + (t.buckets < 0 ? "dynamic buckets" : buckets));
  }
  return el("span", {}, t.buckets < 0 ? "append" : "append · " + buckets);
}

function tieringCell(s, t) {
  const owner = s.node && t.owner ? el("span", { class: "muted" }, " on " + t.owner) : null;
  let pill;
  if (t.error) pill = el("span", { class: "pill bad", title: t.error }, "unreadable");
  else if (!t.realtime) pill = el("span", { class: "pill idle", title: "lakestream.enabled is off: writes commit to the lake directly" }, "no log");
  else if (t.failed_rounds > 0) pill = el("span", { class: "pill bad", title: t.last_error }, `failing × ${t.failed_rounds}`);
  else if (t.freshness_seconds > 0 && t.lag_seconds > 2 * t.freshness_seconds) pill = el("span", { class: "pill warn", title: "the oldest log row waits longer than twice the freshness" }, "behind");
  else pill = el("span", { class: "pill ok" }, "ok");
  return el("td", { data: { col: "tiering" }, title: t.owner ? "tiered by node " + t.owner : "" }, pill, owner);
}

function renderTables(s) {
  $("table-count").textContent = s.tables.length ? String(s.tables.length) : "";
  $("no-tables").hidden = s.tables.length !== 0;
  $("tables").hidden = s.tables.length === 0;
  $("tables").tBodies[0].replaceChildren(...s.tables.map((t) => {
    const [sz, szUnit] = bytes(t.size_bytes);
    const lag = t.realtime ? numCell("lag_rows", t.lag_rows, intFmt.format(t.lag_rows)) : numCell("lag_rows", "", "–");
    const lagAge = !t.realtime ? "–" : t.lag_seconds < 0 ? "?" : t.lag_rows === 0 ? "–" : withUnit(...splitDuration(t.lag_seconds));
    return el("tr", { data: { table: `${t.database}.${t.table}` } },
      el("td", {}, el("span", { class: "db" }, t.database + "."), el("span", { class: "name" }, t.table)),
      el("td", {}, tableKind(t)),
      numCell("rows", t.rows, intFmt.format(t.rows), t.realtime ? `${intFmt.format(t.lake_rows)} in the lake + ${intFmt.format(t.lag_rows)} in the log` : ""),
      t.snapshot_id ? numCell("size", t.size_bytes, withUnit(sz, szUnit), `${intFmt.format(t.files)} data ${t.files === 1 ? "file" : "files"}`) : numCell("size", 0, "–"),
      numCell("snapshot", t.snapshot_id, t.snapshot_id ? intFmt.format(t.snapshot_id) : "–"),
      el("td", { title: absTime(t.snapshot_time) }, t.snapshot_time ? ago(t.snapshot_time) : "–"),
      numCell("freshness", t.freshness_seconds, t.freshness_seconds ? withUnit(...splitDuration(t.freshness_seconds)) : "–"),
      lag,
      numCell("lag_seconds", t.lag_seconds, lagAge),
      tieringCell(s, t),
    );
  }));
}

// splitDuration is duration's text cut into its number and its unit
// when it has one unit ("12" "s"), else the whole text and no unit.
function splitDuration(s) {
  const d = duration(s);
  const m = /^([\d.]+) (\S+)$/.exec(d);
  return m ? [m[1], m[2]] : [d, ""];
}

function renderStatements(s) {
  const list = s.statements;
  $("statement-count").textContent = list.length ? String(list.length) : "";
  $("no-statements").hidden = list.length !== 0;
  $("statements").hidden = list.length === 0;
  if (pending && (Date.now() > pending.until || !list.some((st) => st.id === pending.id))) pending = null;
  $("statements").tBodies[0].replaceChildren(...list.map((st) => {
    const since = st.started_at || st.queued_at;
    const forSeconds = Math.max(0, (serverNow() - since) / 1000);
    const confirming = pending && pending.id === st.id;
    const button = el("button", { class: confirming ? "cancel confirm" : "cancel", type: "button", data: { id: st.id },
      title: confirming ? "click again to end the statement" : "end this statement (its client gets CANCELLED)" },
      confirming ? "Confirm cancel" : "Cancel");
    return el("tr", { data: { id: st.id, state: st.state, kind: st.kind } },
      numCell("id", st.id, String(st.id)),
      el("td", {}, el("span", { class: st.state === "running" ? "pill ok" : "pill warn" }, st.state)),
      el("td", {}, st.lane),
      el("td", {}, st.kind),
      el("td", {}, st.user || el("span", { class: "muted" }, "–")),
      el("td", {}, st.client || el("span", { class: "muted" }, "–")),
      numCell("for", forSeconds, withUnit(...splitDuration(forSeconds)), (st.started_at ? "running since " : "queued since ") + absTime(since)),
      numCell("rows_sent", st.rows_sent, intFmt.format(st.rows_sent)),
      el("td", { class: "sql", title: st.sql }, st.sql),
      el("td", {}, button),
    );
  }));
}

function renderNodes(s) {
  // A server alone has one node: it is the header's.
  $("nodes-section").hidden = s.nodes.length < 2;
  $("node-count").textContent = String(s.nodes.length);
  $("nodes").tBodies[0].replaceChildren(...s.nodes.map((n) => {
    let state;
    if (!n.self) state = el("span", { class: "pill idle" }, "member");
    else if (n.ready) state = el("span", { class: "pill ok" }, "ready (this node)");
    else state = el("span", { class: "pill bad", title: n.last_error }, "not ready (this node)");
    return el("tr", { data: { node: n.id } },
      el("td", { class: "name" }, n.id || "–"),
      el("td", {}, n.address || "–"),
      el("td", { title: absTime(n.started) }, ago(n.started)),
      el("td", { title: absTime(n.last_heartbeat) }, ago(n.last_heartbeat)),
      numCell("tables_owned", n.tables_owned, intFmt.format(n.tables_owned)),
      el("td", {}, state, n.self && !n.ready ? el("div", { class: "error-text bad" }, n.last_error) : null),
    );
  }));
}

function renderStatus() {
  const st = $("status");
  if (!lastAt) { st.textContent = lastError ? "cannot reach the server: " + lastError : "connecting…"; st.classList.toggle("stale", !!lastError); return; }
  const s = Math.floor((Date.now() - lastAt) / 1000);
  const when = s < 1 ? "just now" : duration(s) + " ago";
  st.classList.toggle("stale", !!lastError);
  st.textContent = lastError ? `not updating (${lastError}); last update ${when}` : `live · updated ${when}` + (last && last.user ? ` · ${last.user}` : "");
}

function notice(text, isError) {
  const n = $("notice");
  n.textContent = text;
  n.className = isError ? "banner error" : "banner";
  n.hidden = false;
}

// ---- polling and cancelling ----

async function poll() {
  clearTimeout(timer);
  if (document.hidden) return; // polled again when the page is shown (visibilitychange)
  try {
    const r = await fetch(api("state"), { cache: "no-store", credentials: "same-origin" });
    if (!r.ok) throw new Error(r.status === 401 ? "not authorised: reload the page to log in" : `HTTP ${r.status}`);
    last = await r.json();
    lastAt = Date.now();
    lastError = "";
    render();
  } catch (e) {
    lastError = e.message || String(e);
    renderStatus();
  }
  timer = setTimeout(poll, POLL_MS);
}

async function cancel(id) {
  try {
    const r = await fetch(api("cancel"), {
      method: "POST",
      credentials: "same-origin",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ id }),
    });
    const body = await r.json().catch(() => ({}));
    if (!r.ok) throw new Error(body.error || `HTTP ${r.status}`);
    notice(`Statement ${id} cancelled.`, false);
  } catch (e) {
    notice(`Statement ${id} was not cancelled: ${e.message || e}`, true);
  }
  pending = null;
  poll();
}

document.addEventListener("DOMContentLoaded", () => {
  $("statements").addEventListener("click", (ev) => {
    const b = ev.target.closest("button.cancel");
    if (!b) return;
    const id = Number(b.dataset.id);
    if (pending && pending.id === id) {
      b.disabled = true;
      b.textContent = "Cancelling…";
      cancel(id);
      return;
    }
    pending = { id, until: Date.now() + CONFIRM_MS };
    render();
  });
  // A page in a background tab asks nothing of the server.
  document.addEventListener("visibilitychange", () => { if (!document.hidden) poll(); });
  setInterval(renderStatus, 1000);
  poll();
});
