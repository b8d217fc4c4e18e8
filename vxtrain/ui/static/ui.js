// vxtrain ui: the one script, served by the ui itself (nothing from the internet).
// It only refreshes what the server drew (the jobs table, a job's summary) and appends a
// job's log lines as the server sends them (server-sent events); every page reads without it.
"use strict";

/** Fetch `src` (this site's, with its cookie) as text; null when it failed. */
async function fetchText(src) {
  try {
    const answer = await fetch(src, { credentials: "same-origin", cache: "no-store" });
    if (!answer.ok) {
      return { error: `HTTP ${answer.status}` };
    }
    return { text: await answer.text() };
  } catch (error) {
    return { error: String(error) };
  }
}

/** Put the fragment at `element.dataset.src` in `element` every `data-refresh-s` seconds
 * while the page is shown, and once more when it is shown again; `done()` true stops it.
 * Returns a function that refreshes now (one request at a time, one timer at a time). */
function keepFresh(element, done) {
  const period = 1000 * Number(element.dataset.refreshS || "5");
  let timer = null;
  let busy = false;
  let again = false;
  let last = element.innerHTML;
  function schedule() {
    clearTimeout(timer);
    timer = done() || document.hidden ? null : setTimeout(refresh, period);
  }
  async function refresh() {
    if (busy) {
      again = true; // after the request under way
      return;
    }
    busy = true;
    clearTimeout(timer);
    timer = null;
    const got = await fetchText(element.dataset.src);
    if (got.text !== undefined && got.text !== last) {
      element.innerHTML = got.text;
      last = got.text;
    }
    element.dataset.refreshes = String(Number(element.dataset.refreshes || "0") + 1);
    element.classList.toggle("stale", got.error !== undefined);
    element.title = got.error === undefined ? "" : `could not refresh: ${got.error}`;
    busy = false;
    if (again) {
      again = false;
      refresh();
    } else {
      schedule();
    }
  }
  document.addEventListener("visibilitychange", () => {
    if (!document.hidden && timer === null && !busy && !done()) {
      refresh(); // hidden pages ask nothing; shown again, at once
    }
  });
  schedule();
  return refresh;
}

/** The jobs table: refreshed in place. */
function jobsTable() {
  const section = document.getElementById("jobs");
  if (section) {
    keepFresh(section, () => false);
  }
}

/** The most lines a job page keeps (the oldest go first). */
const MAX_LINES = 10000;

/** One job: its summary refreshed while it is alive, its log lines followed. */
function jobPage() {
  const summary = document.getElementById("summary");
  const logs = document.getElementById("logs");
  if (!summary || !logs) {
    return;
  }
  const ended = () => summary.querySelector("dl.facts")?.dataset.terminal === "true";
  const refreshSummary = keepFresh(summary, ended);
  const status = document.getElementById("logs-status");
  const seen = new Set();
  let count = 0;
  const stream = new EventSource(logs.dataset.src);
  stream.addEventListener("log", (event) => {
    const line = JSON.parse(event.data);
    if (seen.has(line.id)) {
      return; // sent again after a reconnect
    }
    seen.add(line.id);
    const atBottom = logs.scrollTop + logs.clientHeight >= logs.scrollHeight - 4;
    const row = document.createElement("span");
    row.className = `line sev-${String(line.severity).toLowerCase()}`;
    row.dataset.replica = line.replica;
    row.dataset.timestamp = line.timestamp;
    const replica = document.createElement("span");
    replica.className = "replica";
    replica.textContent = `[${line.replica}] `;
    row.append(replica, document.createTextNode(`${line.text}\n`));
    logs.append(row);
    count += 1;
    while (logs.childElementCount > MAX_LINES) {
      logs.firstElementChild.remove();
    }
    if (atBottom) {
      logs.scrollTop = logs.scrollHeight;
    }
  });
  stream.addEventListener("state", (event) => {
    const state = JSON.parse(event.data).state;
    if (summary.querySelector("dl.facts")?.dataset.state !== state) {
      refreshSummary();
    }
  });
  stream.addEventListener("end", (event) => {
    stream.close();
    const state = JSON.parse(event.data).state.replace("JOB_STATE_", "");
    status.textContent = `The job ended ${state}: ${count} line${count === 1 ? "" : "s"}.`;
    logs.dataset.ended = "true";
    if (!ended()) {
      refreshSummary(); // its last state, times and cost
    }
  });
  stream.addEventListener("note", (event) => {
    status.textContent = JSON.parse(event.data).message;
  });
  stream.addEventListener("problem", (event) => {
    stream.close();
    status.textContent = `The lines cannot be read: ${JSON.parse(event.data).message}`;
  });
  stream.addEventListener("error", () => {
    if (stream.readyState === EventSource.CLOSED) {
      status.textContent = "The log stream stopped (is `vxtrain ui` still running?).";
    } else {
      status.textContent = "Reconnecting to the log stream…";
    }
  });
  stream.addEventListener("open", () => {
    status.textContent = "Following the job’s lines as they are written…";
  });
}

jobsTable();
jobPage();
