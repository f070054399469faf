// The operator page: polls the Admin API's Status about once a second for
// nodes, groups, leaders and indexes, derives leader changes by comparing
// polls, and reads per-show seat counters for the shows in the catalog.
// Every Admin API call carries the bearer token typed in, which the Admin
// API requires (401 without it, 403 with another).

import { APIError, call, el, enc, explain, getJSON, localDates, randomId, store } from "./api.js";

const $ = (id) => document.getElementById(id);

// statusEveryMs paces Status polls; showsEveryMs the per-show counters,
// which cost a seat map read per show; catalogEveryMs the show list.
const statusEveryMs = 1000;
const showsEveryMs = 5000;
const catalogEveryMs = 30000;
// changesMax bounds the leader changes kept; showsMax the shows listed;
// showDays how many days of catalog shows are listed.
const changesMax = 50;
const showsMax = 40;
const showDays = 2;
const tokenKey = "seatledger.admin_token";

function adminHeaders() {
  const t = store.get(tokenKey, "");
  return t ? { Authorization: `Bearer ${t}` } : {};
}

$("token").value = store.get(tokenKey, "");
$("token-form").addEventListener("submit", (e) => {
  e.preventDefault();
  store.set(tokenKey, $("token").value.trim());
  pollStatus();
});
$("token-clear").addEventListener("click", () => {
  store.set(tokenKey, "");
  $("token").value = "";
});

function notice(text) {
  $("notice").hidden = !text;
  $("notice").textContent = text || "";
  $("notice").dataset.kind = "error";
}

// ---- status ----

let last = null; // group -> {leader, term} of the previous poll
const changes = [];
let statusTimer = 0;
let statusBusy = false; // one poll at a time: a Save during one waits for the next

async function pollStatus() {
  if (statusBusy) return;
  statusBusy = true;
  clearTimeout(statusTimer);
  try {
    const s = await getJSON("/v1/admin/status", adminHeaders());
    notice("");
    renderStatus(s);
    diffLeaders(s);
  } catch (err) {
    const refused = err instanceof APIError && (err.status === 401 || err.status === 403);
    notice(refused ? "The Admin API refused the credential: check the bearer token." : `Status failed: ${explain(err)}`);
  } finally {
    statusBusy = false;
    statusTimer = setTimeout(pollStatus, statusEveryMs);
  }
}

const ringPct = (x) => `${((Number(x) / 4294967296) * 100).toFixed(1)}%`;
const num = (x) => Number(x || 0);

function renderStatus(s) {
  $("asked").textContent = `Asking node ${s.node_id} (${s.version}) · ${new Date().toLocaleTimeString()}`;
  const groups = s.groups || [];
  const led = new Map();
  for (const g of groups) if (g.leader_id) led.set(g.leader_id, [...(led.get(g.leader_id) || []), g.group]);
  $("nodes").replaceChildren(...(s.nodes || []).map((n) => el("tr", { dataset: { node: n.id } },
    el("td", {}, el("strong", {}, n.id), n.id === s.node_id ? " (serving this page)" : ""),
    el("td", {}, n.raft_addr), el("td", {}, n.grpc_addr),
    el("td", { class: "num" }, String((led.get(n.id) || []).length)),
    el("td", {}, (led.get(n.id) || []).join(", ") || "—"))));
  $("groups").replaceChildren(...groups.map((g) => {
    const lag = num(g.commit_index) - num(g.applied_index);
    const uncommitted = num(g.last_index) - num(g.commit_index);
    const role = g.state === "Leader" ? "leader" : g.state === "Follower" ? "follower" : "other";
    return el("tr", { class: lag > 0 ? "lagging" : "", dataset: { group: String(g.group) } },
      el("td", {}, String(g.group)),
      el("td", {}, `${ringPct(g.range_start)}–${ringPct(num(g.range_end) + 1)}`),
      el("td", { class: "leader" }, g.leader_id ? el("strong", {}, g.leader_id) : el("span", { class: "pill other" }, "no leader")),
      el("td", { class: "num" }, String(g.term)),
      el("td", {}, el("span", { class: `pill ${role}` }, g.state)),
      el("td", { class: "num" }, String(g.last_index)),
      el("td", { class: "num" }, String(g.commit_index)),
      el("td", { class: "num" }, String(g.applied_index)),
      el("td", { class: "num" }, String(lag)),
      el("td", { class: "num" }, String(uncommitted)),
      el("td", {}, (g.replicas || []).join(", ")),
      el("td", {}, g.clock_ms && g.clock_ms !== "0" ? new Date(num(g.clock_ms)).toLocaleTimeString() : "—"));
  }));
}

// diffLeaders records every group whose leader or term changed since the
// previous poll. A change between two polls that came back (n1 → n2 → n1)
// shows as a term change.
function diffLeaders(s) {
  const now = new Map((s.groups || []).map((g) => [g.group, { leader: g.leader_id || "", term: num(g.term) }]));
  if (last) {
    const at = new Date().toLocaleTimeString();
    for (const [group, cur] of now) {
      const was = last.get(group);
      if (!was || (was.leader === cur.leader && was.term === cur.term)) continue;
      const what = cur.leader ? `${was.leader || "no leader"} → ${cur.leader}` : `${was.leader || "no leader"} → no leader`;
      changes.unshift(`${at} · group ${group}: ${what} (term ${was.term} → ${cur.term})`);
    }
    changes.splice(changesMax);
    if (changes.length) $("changes").replaceChildren(...changes.map((c) => el("li", {}, c)));
  }
  last = now;
}

// ---- shows ----

let catalog = { at: 0, shows: [] }; // {show_id, label, starts_at}
let showsTimer = 0;
let showsBusy = false;

async function catalogShows() {
  if (Date.now() - catalog.at < catalogEveryMs) return catalog.shows;
  const out = new Map();
  const cities = (await getJSON("/v1/cities?page_size=100")).cities || [];
  for (const c of cities) {
    const cinemas = (await getJSON(`/v1/cities/${enc(c.city_id)}/cinemas?page_size=100`)).cinemas || [];
    for (const k of cinemas) {
      for (const date of localDates(c.time_zone, showDays)) {
        const r = await getJSON(`/v1/cinemas/${enc(k.cinema_id)}/shows?date=${date}&page_size=100`);
        for (const s of r.shows || []) {
          out.set(s.show_id, { show_id: s.show_id, label: `${s.movie_title} · ${s.cinema_name} · ${s.screen_name}`, starts_at: s.starts_at });
        }
      }
    }
  }
  catalog = { at: Date.now(), shows: [...out.values()] };
  return catalog.shows;
}

async function pollShows() {
  if (showsBusy) return;
  showsBusy = true;
  clearTimeout(showsTimer);
  try {
    const listed = await catalogShows();
    const extra = $("watch").value.split(/[\s,]+/).filter(Boolean)
      .filter((id) => !listed.some((s) => s.show_id === id)).map((id) => ({ show_id: id, label: id, starts_at: "" }));
    const shows = [...extra, ...listed].slice(0, showsMax);
    const rows = await Promise.all(shows.map(async (s) => {
      try {
        const m = await getJSON(`/v1/shows/${enc(s.show_id)}/seats?consistency=STALE`);
        return { s, m };
      } catch (err) {
        return { s, err };
      }
    }));
    $("shows").replaceChildren(...rows.map(({ s, m, err }) => el("tr", { dataset: { show: s.show_id } },
      el("td", { class: "wrap" }, el("a", { href: `/#/show/${enc(s.show_id)}` }, s.label), s.label === s.show_id ? "" : el("span", { class: "hint" }, ` ${s.show_id}`)),
      el("td", {}, s.starts_at ? new Date(s.starts_at).toLocaleString() : "—"),
      ...(err ? [el("td", { colspan: "5" }, explain(err))] : [
        el("td", { class: "num free" }, String(m.free)),
        el("td", { class: "num held" }, String(m.held)),
        el("td", { class: "num booked" }, String(m.booked)),
        el("td", { class: "num" }, String(m.revision)),
        el("td", {}, m.served_by || "—")]))));
  } catch (err) {
    $("shows").replaceChildren(el("tr", {}, el("td", { colspan: "7" }, `Could not list shows: ${explain(err)}`)));
  } finally {
    showsBusy = false;
    showsTimer = setTimeout(pollShows, showsEveryMs);
  }
}
$("watch-form").addEventListener("submit", (e) => {
  e.preventDefault();
  pollShows();
});

// ---- waiting room ----

function renderRoom(r) {
  $("room-status").dataset.open = String(!!r.open);
  const armed = r.auto_open_arrivals_per_second
    ? ` · opens by itself at ${r.auto_open_arrivals_per_second} holds/s (admitting ${r.auto_open_admit_per_second}/s)`
    : "";
  $("room-status").textContent = (r.open
    ? `${r.show_id}: open at ${r.admit_per_second}/s${r.sold_out ? ", sold out" : ""} · ${r.waiting} waiting · ${r.admitted} admitted of ${r.joined} joined`
    : `${r.show_id}: no waiting room (holds need no admission)`) + armed;
}

// setRoom opens (rate > 0) or closes a show's room through the Admin API,
// arming it to open by itself when a threshold is set (0 disarms). Each
// click is its own request: a request id of its own, so that opening
// again after a close is not taken for a retry of the first opening.
async function setRoom(open) {
  const show = $("room-show").value.trim();
  if (!show) return;
  const auto = Number($("room-auto").value) || 0;
  const body = { open, client_id: "operator-page", request_id: randomId("room"), auto_open_arrivals_per_second: auto };
  if (open || auto > 0) body.admit_per_second = Number($("room-rate").value);
  try {
    renderRoom(await call("POST", `/v1/admin/shows/${enc(show)}/waiting_room`, body, adminHeaders()));
  } catch (err) {
    $("room-status").dataset.open = "";
    $("room-status").textContent = `${show}: ${explain(err)}`;
  }
}

$("room-form").addEventListener("submit", (e) => {
  e.preventDefault();
  setRoom(true);
});
$("room-close").addEventListener("click", () => setRoom(false));
$("room-read").addEventListener("click", async () => {
  const show = $("room-show").value.trim();
  if (!show) return;
  try {
    renderRoom(await getJSON(`/v1/shows/${enc(show)}/waiting_room`));
  } catch (err) {
    $("room-status").textContent = `${show}: ${explain(err)}`;
  }
});

pollStatus();
pollShows();
