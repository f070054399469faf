// The booking page: browse the catalog (city → movie → cinema → show), a
// live seat map fed by the show's Server-Sent Events, holds with a
// countdown, a simulated payment and confirm, tickets with QR codes, and
// the waiting line. State the ledger owns (seat states, holds, the line) is
// only ever shown as the ledger last reported it; the page keeps just what
// a fan needs to act: hold tokens and queue tokens, in localStorage.

import { APIError, Write, clientId, el, enc, explain, getJSON, localDates, money, plural, retryable, store } from "./api.js";
import { admissionFor, leaveRoom, roomEvent, roomGate } from "./room.js";

const $ = (id) => document.getElementById(id);

// Limits the ledger enforces too (fsm/limits.go); checked here first so
// the fan hears it before a round trip.
const seatsPerHoldMax = 10;
const holdTTLMaxSeconds = 1800;
// extendSeconds is what "+5 min" asks for: expiry becomes now + 5 min.
const extendSeconds = 300;
// queuePollMs paces polling a waiting-line entry; an SSE change polls sooner.
const queuePollMs = 2000;
// browseDaysMax is how many days of shows the day picker offers.
const browseDaysMax = 7;
// reopenDelaysMs are the waits before reopening a stream the browser gave
// up on (an EventSource closes for good on a non-200 answer).
const reopenDelaysMs = [1000, 2000, 5000];

const me = clientId();

// ---- stored state: what this browser needs to act on its holds ----

// holds: hold_id -> {hold_id, show_id, hold_token, seat_ids, expires_at,
// max_expires_at, amount_minor, currency, skew, state, payment_ref}.
// expires_at is in ledger time (ms); skew is ledger time minus this
// browser's clock, measured from the answer that carried the time.
const holdsKey = "seatledger.holds";
const queueKey = "seatledger.queue";
const loadHolds = () => store.get(holdsKey, {});
function saveHold(h) {
  const all = loadHolds();
  all[h.hold_id] = h;
  store.set(holdsKey, all);
}
function dropHold(id) {
  const all = loadHolds();
  delete all[id];
  store.set(holdsKey, all);
}
const showHolds = (show, state) => Object.values(loadHolds()).filter((h) => h.show_id === show && h.state === state);

const ledgerNow = (skew) => Date.now() + (skew || 0);
const skewOf = (ts) => (ts ? Date.parse(ts) - Date.now() : 0);

// Forget holds of other shows that must have ended long ago (a hold lives
// at most 45 minutes), so the stored list does not grow for ever; bookings
// stay, for their tickets.
(function pruneHolds() {
  const all = loadHolds();
  for (const [id, h] of Object.entries(all)) {
    if (h.state === "HELD" && !(ledgerNow(h.skew) < (h.max_expires_at || h.expires_at || 0) + 3600000)) delete all[id];
  }
  store.set(holdsKey, all);
})();

// hold TTL: the Options select, or ?hold_ttl=SECONDS in the page's URL (for
// demos and the browser tests: a hold that expires while you watch).
(function ttlFromURL() {
  const n = Number(new URLSearchParams(location.search).get("hold_ttl"));
  if (Number.isInteger(n) && n >= 1 && n <= holdTTLMaxSeconds) {
    const o = el("option", { value: String(n) }, `${plural(n, "second")} (from the link)`);
    $("ttl").prepend(o);
    $("ttl").value = String(n);
  }
})();
const ttlSeconds = () => Number($("ttl").value) || undefined;

// ---- messages ----

// notice shows a message that needs the fan's attention, with buttons
// for what they can do about it.
function notice(kind, text, ...actions) {
  const n = $("notice");
  n.replaceChildren(el("p", {}, text));
  if (actions.length) n.append(el("p", { class: "actions" }, actions));
  n.dataset.kind = kind;
  n.hidden = false;
}
function clearNotice() {
  $("notice").hidden = true;
  $("notice").replaceChildren();
}
// say tells screen readers about a change that needs no action.
const say = (text) => ($("status").textContent = text);
const action = (label, fn, cls) => el("button", { type: "button", class: cls || "", onclick: fn }, label);

// failed shows a refused write; a write that may be retried gets a
// "Try again" button that resends the same request id.
function failed(err, write, after) {
  if (retryable(err) && write) {
    notice("error", explain(err), action("Try again", async () => {
      clearNotice();
      try {
        after(await write.send(retrying));
      } catch (e) {
        failed(e, write, after);
      }
    }));
    return;
  }
  notice("error", explain(err));
}
const retrying = (err) => say(`${explain(err)} Retrying…`);

// ---- routing ----

let show = null; // the open show's view, or null

// segment decodes one part of the address; a malformed one is kept as is.
function segment(s) {
  try {
    return decodeURIComponent(s);
  } catch {
    return s;
  }
}

function route() {
  const parts = location.hash.replace(/^#\/?/, "").split("/").filter(Boolean).map(segment);
  clearNotice();
  for (const s of ["browse", "show", "bookings"]) $(s).hidden = true;
  if (parts[0] === "show" && parts[1]) return openShow(parts[1]);
  closeShow();
  if (parts[0] === "bookings") return openBookings();
  const b = {};
  for (let i = 0; i + 1 < parts.length; i += 2) b[parts[i]] = parts[i + 1];
  return openBrowse(b);
}

function crumbs(items) {
  const nav = $("crumbs");
  nav.replaceChildren();
  items.forEach(([label, href], i) => {
    if (i) nav.append(el("span", { "aria-hidden": "true" }, " › "));
    nav.append(href ? el("a", { href }, label) : el("span", { "aria-current": "page" }, label));
  });
}

// ---- browse ----

let browseSeq = 0; // the newest browse render; older answers are dropped
let citiesCache = null;
const browseDay = new Map(); // "city/movie/cinema" -> chosen date

async function cities() {
  if (!citiesCache) citiesCache = (await getJSON("/v1/cities?page_size=100")).cities || [];
  return citiesCache;
}

// remember keeps a listing so the show page can title itself.
function remember(listing) {
  try {
    sessionStorage.setItem("seatledger.listing." + listing.show_id, JSON.stringify(listing));
  } catch {
    // Only the show page's title is lost.
  }
}
function listingOf(id) {
  try {
    return JSON.parse(sessionStorage.getItem("seatledger.listing." + id) || "null");
  } catch {
    return null;
  }
}

async function openBrowse(b) {
  $("browse").hidden = false;
  const seq = ++browseSeq;
  const list = $("browse-list");
  $("browse-days").hidden = true;
  $("browse-hint").textContent = "";
  list.replaceChildren(el("li", { class: "hint" }, "Loading…"));
  try {
    const all = await cities();
    const city = all.find((c) => c.city_id === b.city);
    if (seq !== browseSeq) return;
    if (!city) return browseCities(all);
    if (!b.movie) return await browseMovies(seq, city);
    if (!b.cinema) return await browseCinemas(seq, city, b.movie);
    return await browseShows(seq, city, b.movie, b.cinema);
  } catch (err) {
    if (seq !== browseSeq) return;
    list.replaceChildren();
    notice("error", explain(err), action("Try again", route));
  }
}

function choices(items, none) {
  $("browse-list").replaceChildren(...items.map(([label, href, sub]) =>
    el("li", {}, el("a", { class: "choice", href }, el("strong", {}, label), sub ? el("span", {}, sub) : null))));
  if (!items.length) $("browse-list").append(el("li", { class: "hint" }, none || "Nothing here yet."));
}

function freshness(f) {
  if (!f) return;
  const at = f.as_of ? new Date(f.as_of).toLocaleTimeString() : "?";
  $("browse-fresh").textContent = `Catalog as of ${at}, served by ${f.served_by || "?"} (at most ${f.max_staleness || "2s"} old).`;
}

function browseCities(all) {
  crumbs([["Browse"]]);
  $("browse-title").textContent = "Choose a city";
  $("browse-hint").textContent = "Or jump straight to the demo screening.";
  choices([...all.map((c) => [c.name, `#/city/${enc(c.city_id)}`]), ["Demo screening", "#/show/demo", "show id demo"]]);
}

async function browseMovies(seq, city) {
  const r = await getJSON(`/v1/cities/${enc(city.city_id)}/movies?page_size=100`);
  if (seq !== browseSeq) return;
  crumbs([["Browse", "#/"], [city.name]]);
  $("browse-title").textContent = `Movies in ${city.name}`;
  choices((r.movies || []).map((m) => [m.title, `#/city/${enc(city.city_id)}/movie/${enc(m.movie_id)}`,
    m.duration_minutes ? `${m.duration_minutes} min` : ""]));
  freshness(r.freshness);
}

async function movieTitle(city, movie) {
  const r = await getJSON(`/v1/cities/${enc(city)}/movies?page_size=100`);
  return ((r.movies || []).find((m) => m.movie_id === movie) || { title: movie }).title;
}

async function browseCinemas(seq, city, movie) {
  const [r, title] = await Promise.all([
    getJSON(`/v1/cities/${enc(city.city_id)}/movies/${enc(movie)}/cinemas?page_size=100`), movieTitle(city.city_id, movie)]);
  if (seq !== browseSeq) return;
  const base = `#/city/${enc(city.city_id)}/movie/${enc(movie)}`;
  crumbs([["Browse", "#/"], [city.name, `#/city/${enc(city.city_id)}`], [title]]);
  $("browse-title").textContent = `${title}: choose a cinema`;
  choices((r.cinemas || []).map((c) => [c.name, `${base}/cinema/${enc(c.cinema_id)}`, c.address]));
  freshness(r.freshness);
}

async function browseShows(seq, city, movie, cinema) {
  const key = `${city.city_id}/${movie}/${cinema}`;
  const dates = localDates(city.time_zone, browseDaysMax);
  const [c, title] = await Promise.all([getJSON(`/v1/cinemas/${enc(cinema)}`), movieTitle(city.city_id, movie)]);
  const load = async (date) => {
    const r = await getJSON(`/v1/cinemas/${enc(cinema)}/shows?date=${date}&page_size=100`);
    return { r, shows: (r.shows || []).filter((s) => s.movie_id === movie) };
  };
  // Start on the chosen day, else the first day with a show of this movie.
  let date = browseDay.get(key);
  let got = null;
  for (const d of date ? [date] : dates) {
    got = await load(d);
    date = d;
    if (got.shows.length) break;
  }
  if (seq !== browseSeq) return;
  browseDay.set(key, date);
  const base = `#/city/${enc(city.city_id)}/movie/${enc(movie)}`;
  crumbs([["Browse", "#/"], [city.name, `#/city/${enc(city.city_id)}`], [title, base], [c.name]]);
  $("browse-title").textContent = `${title} at ${c.name}`;
  $("browse-hint").textContent = c.address || "";
  renderDays(dates, date, city.time_zone, (d) => { browseDay.set(key, d); route(); });
  const when = new Intl.DateTimeFormat(undefined, { timeZone: city.time_zone, weekday: "short", day: "numeric", month: "short", hour: "2-digit", minute: "2-digit" });
  choices(got.shows.map((s) => {
    remember({ ...s, time_zone: city.time_zone });
    const free = s.free_seats_known ? `${s.free_seats} of ${s.total_seats} seats free` : `${s.total_seats} seats`;
    return [when.format(new Date(s.starts_at)), `#/show/${enc(s.show_id)}`, `${s.screen_name} · ${free}`];
  }), "No shows of this movie here on this day: try another day.");
  freshness(got.r.freshness);
}

function renderDays(dates, chosen, zone, pick) {
  const box = $("browse-days");
  const fmt = new Intl.DateTimeFormat(undefined, { timeZone: "UTC", weekday: "short", day: "numeric", month: "short" });
  box.replaceChildren(...dates.map((d) => el("button", { type: "button", "aria-pressed": String(d === chosen), onclick: () => pick(d) },
    fmt.format(new Date(d + "T12:00:00Z")))));
  box.hidden = false;
}

$("byid-form").addEventListener("submit", (e) => {
  e.preventDefault();
  location.hash = `#/show/${enc($("byid").value.trim())}`;
});

// ---- the show page ----

function newShowView(id) {
  return {
    id,
    seats: new Map(), // seat_id -> seat (state as the stream last said)
    buttons: new Map(), // seat_id -> button
    layout: "", // the seat ids in order, to know when to rebuild the grid
    cats: new Map(), // category name -> {price_minor, currency, idx}
    revision: 0,
    selected: new Set(),
    suggested: new Set(),
    es: null,
    reopens: 0,
    reopenTimer: 0,
    snapshots: 0,
    queueTimer: 0,
    busy: false,
  };
}

function closeShow() {
  leaveRoom();
  if (!show) return;
  if (show.es) show.es.close();
  clearTimeout(show.reopenTimer);
  clearTimeout(show.queueTimer);
  show = null;
}

async function openShow(id) {
  $("show").hidden = false;
  if (show && show.id === id) return;
  closeShow();
  const v = (show = newShowView(id));
  $("map").replaceChildren();
  $("map").dataset.snapshots = "0";
  titleShow(id, null);
  renderSelection();
  renderHolds();
  renderQueue();
  let m;
  try {
    // A quick first paint, and a plain answer for an unknown show (an
    // EventSource would only see a failed stream).
    m = await getJSON(`/v1/shows/${enc(id)}/seats?consistency=STALE`);
    if (show !== v) return;
    titleShow(id, m);
    applySnapshot(m, m.revision);
  } catch (err) {
    if (show !== v) return;
    $("live").dataset.state = "down";
    $("live").textContent = "Not live";
    notice("error", err instanceof APIError && err.status === 404 ? `There is no show "${id}".` : explain(err),
      action("Back to browsing", () => (location.hash = "#/")));
    return;
  }
  openStream(v, 0);
  roomGate(id, () => show === v); // a hot show's waiting room (room.js)
  if (!listingOf(id)) nameFromCatalog(v, m);
  restoreHolds(v);
  restoreQueue(v);
  renderBooked(v);
}

// nameFromCatalog titles a show opened by a direct link (nothing was
// remembered while browsing) from its catalog listing and its city's time
// zone. A show that is not listed keeps its own title.
async function nameFromCatalog(v, m) {
  try {
    const l = await getJSON(`/v1/shows/${enc(v.id)}/listing`);
    const city = (await cities()).find((c) => c.city_id === l.city_id);
    remember({ ...l, time_zone: city && city.time_zone });
  } catch {
    return;
  }
  if (show === v) titleShow(v.id, m);
}

function titleShow(id, m) {
  const l = listingOf(id);
  if (l) {
    const when = new Date(l.starts_at).toLocaleString(undefined, { timeZone: l.time_zone || undefined, weekday: "short", day: "numeric", month: "short", hour: "2-digit", minute: "2-digit" });
    $("show-title").textContent = l.movie_title;
    $("show-sub").textContent = `${l.cinema_name} · ${l.screen_name} · ${when}`;
    crumbs([["Browse", "#/"], [l.cinema_name, `#/city/${enc(l.city_id)}/movie/${enc(l.movie_id)}/cinema/${enc(l.cinema_id)}`], [l.movie_title]]);
  } else {
    $("show-title").textContent = (m && m.title) || id;
    $("show-sub").textContent = `Show ${id}`;
    crumbs([["Browse", "#/"], [(m && m.title) || id]]);
  }
  document.title = `${$("show-title").textContent} · seatledger`;
}

// ---- the live stream ----

// openStream watches the show. The browser's EventSource reconnects by
// itself after a dropped connection and sends Last-Event-ID, so the ledger
// resumes with exactly the changes after the last revision seen. When the
// browser gives up (the server answered with an error), the page opens a
// new stream from the same revision with ?from_revision=.
function openStream(v, from) {
  const url = `/v1/shows/${enc(v.id)}/events` + (from ? `?from_revision=${from}` : "");
  const es = new EventSource(url);
  v.es = es;
  live("connecting", from ? `Reconnecting from revision ${from}…` : "Connecting…");
  es.onopen = () => {
    v.reopens = 0;
    live("live", "Live");
  };
  es.onerror = () => {
    if (show !== v || v.es !== es) return;
    if (es.readyState !== EventSource.CLOSED) {
      live("connecting", `Connection lost; resuming after revision ${v.revision}…`);
      return;
    }
    const wait = reopenDelaysMs[Math.min(v.reopens++, reopenDelaysMs.length - 1)];
    live("connecting", `Connection lost; retrying in ${Math.round(wait / 1000)} s…`);
    v.reopenTimer = setTimeout(() => show === v && openStream(v, v.revision), wait);
  };
  const on = (name, fn) => es.addEventListener(name, (e) => {
    if (show !== v || v.es !== es) return;
    fn(JSON.parse(e.data));
  });
  on("snapshot", (ev) => streamSnapshot(v, ev));
  on("reset", (ev) => streamSnapshot(v, ev));
  on("changes", (ev) => applyChanges(v, ev));
}

function live(state, text) {
  $("live").dataset.state = state;
  $("live").textContent = state === "live" && show ? `${text} · revision ${show.revision}` : text;
}

function streamSnapshot(v, ev) {
  v.snapshots++;
  $("map").dataset.snapshots = String(v.snapshots);
  applySnapshot(ev.snapshot, ev.revision);
  live("live", "Live");
}

// applySnapshot replaces the seat map (a snapshot, a reset or the first read).
function applySnapshot(m, revision) {
  const v = show;
  v.revision = Number(revision);
  v.cats = new Map((m.categories || []).map((c, i) => [c.name, { ...c, idx: i % 6 }]));
  v.seats = new Map((m.seats || []).map((s) => [s.seat_id, s]));
  const layout = (m.seats || []).map((s) => s.seat_id).join(",");
  if (layout !== v.layout) buildGrid(v, m.seats || []);
  v.layout = layout;
  renderCats(v);
  afterChange(v, [...v.seats.keys()]);
}

function applyChanges(v, ev) {
  const rev = Number(ev.revision);
  if (rev <= v.revision) return; // already seen (never expected: revisions only grow)
  v.revision = rev;
  const ids = [];
  for (const c of ev.changes || []) {
    const s = v.seats.get(c.seat_id);
    if (!s) continue;
    s.state = c.state;
    ids.push(c.seat_id);
  }
  afterChange(v, ids);
  live("live", "Live");
  if (ev.room) roomEvent(v.id, ev.room);
  if (v.queue) pollQueueSoon(v);
}

// afterChange redraws changed seats and tells the fan what the change
// means for them: a chosen seat someone else took, a hold of theirs that
// the ledger ended.
function afterChange(v, ids) {
  const own = ownSeats(v);
  const lost = [];
  for (const id of ids) {
    const s = v.seats.get(id);
    if (v.selected.has(id) && s.state !== "FREE") {
      v.selected.delete(id);
      lost.push(id);
    }
    if (s.state === "FREE" && own.held.has(id)) checkHoldOf(v, id);
    drawSeat(v, id, own);
  }
  if (lost.length) {
    notice("error", `${lost.join(", ")} ${lost.length === 1 ? "was" : "were"} just taken by someone else, so we took ${lost.length === 1 ? "it" : "them"} off your choice.`);
  }
  $("map").dataset.revision = String(v.revision);
  renderSelection();
  renderCounts(v);
}

// ---- the seat grid ----

// ownSeats is the fan's seats in the show: held (live holds) and booked.
function ownSeats(v) {
  const own = { held: new Set(), booked: new Set() };
  for (const h of showHolds(v.id, "HELD")) for (const id of h.seat_ids) own.held.add(id);
  for (const h of showHolds(v.id, "CONFIRMED")) for (const id of h.seat_ids) own.booked.add(id);
  return own;
}

function buildGrid(v, seats) {
  const map = $("map");
  map.replaceChildren();
  v.buttons.clear();
  let row = null;
  let rowName = null;
  for (const s of seats) {
    if (s.row !== rowName) {
      rowName = s.row;
      row = el("div", { class: "row", role: "group", "aria-label": `Row ${s.row}` }, el("span", { class: "row-name", "aria-hidden": "true" }, s.row));
      map.append(row);
    }
    const b = el("button", { type: "button", class: "seat", tabindex: v.buttons.size ? "-1" : "0", dataset: { seat: s.seat_id },
      onclick: () => onSeat(s.seat_id) }, String(s.number));
    v.buttons.set(s.seat_id, b);
    row.append(b);
  }
}

// The seat map is one stop in the Tab order: arrow keys move between
// seats (Home and End to a row's ends), Enter or Space picks one. The seat
// last focused keeps the stop, so Tab comes back to it.
$("map").addEventListener("focusin", (e) => {
  const b = e.target.closest("button.seat");
  if (!b) return;
  for (const other of $("map").querySelectorAll('button.seat[tabindex="0"]')) if (other !== b) other.tabIndex = -1;
  b.tabIndex = 0;
});
$("map").addEventListener("keydown", (e) => {
  const b = e.target.closest("button.seat");
  if (!b) return;
  const rows = [...$("map").querySelectorAll(".row")].map((r) => [...r.querySelectorAll("button.seat")]);
  const r = rows.findIndex((row) => row.includes(b));
  const c = rows[r].indexOf(b);
  const to = {
    ArrowLeft: [r, c - 1], ArrowRight: [r, c + 1], ArrowUp: [r - 1, c], ArrowDown: [r + 1, c],
    Home: [r, 0], End: [r, rows[r].length - 1],
  }[e.key];
  if (!to) return;
  e.preventDefault();
  const row = rows[Math.max(0, Math.min(rows.length - 1, to[0]))];
  row[Math.max(0, Math.min(row.length - 1, to[1]))].focus();
});

function seatView(v, id, own) {
  const s = v.seats.get(id);
  if (s.state === "BOOKED") return own.booked.has(id) ? ["booked", "booked by you"] : ["booked", "booked"];
  if (s.state === "HELD") return own.held.has(id) ? ["mine", "held by you"] : ["held", "held by someone else"];
  return v.selected.has(id) ? ["selected", "chosen by you"] : ["free", "free"];
}

function drawSeat(v, id, own) {
  const b = v.buttons.get(id);
  const s = v.seats.get(id);
  if (!b || !s) return;
  const [cls, words] = seatView(v, id, own);
  const cat = v.cats.get(s.category) || { idx: 0 };
  b.className = `seat s-${cls} cat-${cat.idx}${v.suggested.has(id) ? " suggested" : ""}`;
  b.setAttribute("aria-label", `${id}, row ${s.row} seat ${s.number}, ${s.category} ${money(s.price_minor, cat.currency)}, ${words}${v.suggested.has(id) ? ", suggested" : ""}`);
  if (cls === "free" || cls === "selected") b.setAttribute("aria-pressed", String(cls === "selected"));
  else b.removeAttribute("aria-pressed");
}

function redraw(v) {
  const own = ownSeats(v);
  for (const id of v.seats.keys()) drawSeat(v, id, own);
  renderCounts(v);
}

function renderCats(v) {
  $("cats").replaceChildren(...[...v.cats.values()].map((c) =>
    el("li", {}, el("span", { class: `swatch cat-${c.idx}` }), `${c.name} ${money(c.price_minor, c.currency)}`)));
  const sel = $("best-cat");
  const keep = sel.value;
  sel.replaceChildren(el("option", { value: "" }, "Any"),
    ...[...v.cats.values()].map((c) => el("option", { value: c.name }, `${c.name} (${money(c.price_minor, c.currency)})`)));
  sel.value = [...v.cats.keys()].includes(keep) ? keep : "";
}

function renderCounts(v) {
  let free = 0, held = 0, booked = 0;
  for (const s of v.seats.values()) {
    if (s.state === "FREE") free++;
    else if (s.state === "HELD") held++;
    else if (s.state === "BOOKED") booked++;
  }
  $("counts").textContent = `${free} free · ${held} held · ${booked} booked · revision ${v.revision}`;
  if ($("live").dataset.state === "live") live("live", "Live");
}

// onSeat: a free seat toggles in the fan's choice; a seat of theirs points
// at their hold; a seat someone else has is asked for anyway (the map may
// be a moment old) together with the fan's choice, so the fan gets either
// the seat or the ledger's best alternatives in one click.
function onSeat(id) {
  const v = show;
  if (!v || v.busy) return;
  const [cls] = seatView(v, id, ownSeats(v));
  if (cls === "free") {
    if (v.selected.size >= seatsPerHoldMax) {
      notice("error", `You can hold at most ${seatsPerHoldMax} seats at once.`);
      return;
    }
    v.selected.add(id);
  } else if (cls === "selected") {
    v.selected.delete(id);
  } else if (cls === "mine") {
    notice("info", `You already hold ${id}: see “Your holds”.`);
    return;
  } else {
    const want = [...v.selected, id].slice(-seatsPerHoldMax);
    holdSeats(v, { seat_ids: want });
    return;
  }
  v.suggested.clear();
  clearNotice();
  redraw(v);
  renderSelection();
}

function priceOf(v, ids) {
  let sum = 0, cur = "";
  for (const id of ids) {
    const s = v.seats.get(id);
    if (!s) continue;
    sum += Number(s.price_minor || 0);
    cur = (v.cats.get(s.category) || {}).currency || cur;
  }
  return money(sum, cur);
}

function renderSelection() {
  const v = show;
  const n = v ? v.selected.size : 0;
  $("sel-list").textContent = n ? `${[...v.selected].join(", ")} · ${plural(n, "seat")} · ${priceOf(v, v.selected)}` : "No seats chosen yet.";
  $("hold-btn").textContent = n ? `Hold ${plural(n, "seat")}` : "Hold seats";
  $("hold-btn").disabled = !n || (v && v.busy);
  $("clear-btn").disabled = !n;
}

$("hold-btn").addEventListener("click", () => show && show.selected.size && holdSeats(show, { seat_ids: [...show.selected] }));
$("clear-btn").addEventListener("click", () => {
  if (!show) return;
  show.selected.clear();
  redraw(show);
  renderSelection();
});
$("best-form").addEventListener("submit", (e) => {
  e.preventDefault();
  if (!show) return;
  const count = Number($("best-count").value);
  if (!(count >= 1 && count <= seatsPerHoldMax)) {
    notice("error", `Ask for 1 to ${seatsPerHoldMax} seats.`);
    return;
  }
  holdSeats(show, { count, category: $("best-cat").value || undefined, wait: $("best-wait").checked || undefined });
});

function setBusy(v, busy) {
  v.busy = busy;
  $("best-btn").disabled = busy;
  renderSelection();
}

// ---- holds ----

// holdSeats asks the ledger for seats (named, or the best count) and
// explains a refusal with what the fan can do next.
async function holdSeats(v, body) {
  const w = new Write("POST", `/v1/shows/${enc(v.id)}/holds`, { ...body, ttl_seconds: ttlSeconds(), admission_token: admissionFor(v.id) });
  setBusy(v, true);
  clearNotice();
  try {
    const r = await w.send(retrying);
    // 202: sold out, and the fan joined the waiting line (the body is the
    // queue entry, not a hold).
    if (r.entry_id && !r.hold_id) {
      if (show === v) queued(v, r, body);
    } else held(v, r);
  } catch (err) {
    if (show === v) holdRefused(v, body, err, w);
  } finally {
    setBusy(v, false);
  }
}

function held(v, r) {
  const h = {
    hold_id: r.hold_id, show_id: v.id, hold_token: r.hold_token, seat_ids: r.seat_ids, state: "HELD",
    expires_at: Date.parse(r.expires_at), max_expires_at: Date.parse(r.max_expires_at),
    amount_minor: r.amount_minor, currency: r.currency, skew: skewOf(r.applied_at), title: $("show-title").textContent,
  };
  saveHold(h);
  if (show !== v) return;
  for (const id of r.seat_ids) v.selected.delete(id);
  v.suggested.clear();
  redraw(v);
  renderSelection();
  renderHolds();
  say(`Held ${r.seat_ids.join(", ")} for you.`);
}

function holdRefused(v, body, err, w) {
  const d = (err instanceof APIError && err.detail) || {};
  switch (err.reason) {
    case "SEATS_TAKEN": {
      for (const id of d.taken_seat_ids || []) v.selected.delete(id);
      const alt = d.suggested_seat_ids || [];
      v.suggested = new Set(alt);
      redraw(v);
      renderSelection();
      if (!alt.length) return notice("error", `${explain(err)} No other seats are free together right now.`);
      const best = alt.length === 1 ? `The best free seat now is ${alt[0]}` : `The best ${alt.length} free seats now are ${alt.join(", ")}`;
      return notice("error", `${explain(err)} ${best} (${priceOf(v, alt)}).`,
        action(`Hold ${alt.join(", ")} instead`, () => holdSeats(v, { seat_ids: alt }), "primary"));
    }
    case "ADMISSION_REQUIRED":
      // The room opened, or the admission lapsed: back in line.
      roomGate(v.id, () => show === v, true);
      return notice("error", "This show has a waiting room: you're in line for your turn to pick seats.");
    case "SOLD_OUT":
      return notice("error", explain(err),
        action(`Wait in line for ${plural(body.count, "seat")}`, () => holdSeats(v, { ...body, wait: true }), "primary"));
    default:
      return failed(err, w, (r) => held(v, r));
  }
}

// restoreHolds checks this browser's stored holds of the show with the
// ledger: a reload keeps a live hold and its countdown.
async function restoreHolds(v) {
  for (const h of [...showHolds(v.id, "HELD"), ...showHolds(v.id, "CONFIRMED")]) {
    try {
      const info = await getJSON(`/v1/shows/${enc(v.id)}/holds/${enc(h.hold_id)}`);
      syncHold(h, info);
    } catch (err) {
      if (err instanceof APIError && err.status === 404) dropHold(h.hold_id);
    }
  }
  if (show !== v) return;
  redraw(v);
  renderHolds();
  renderBooked(v);
}

// syncHold records what the ledger says of a hold.
function syncHold(h, info) {
  const state = (info.state || "").replace("HOLD_STATE_", "");
  if (state === "HELD") {
    h.expires_at = Date.parse(info.expires_at);
    h.skew = skewOf(info.as_of);
  }
  h.state = state;
  if (state === "HELD" || state === "CONFIRMED" || state === "REFUNDED") saveHold(h);
  else dropHold(h.hold_id);
  return state;
}

// checkHoldOf asks why a seat of the fan's hold became free: expired or
// released elsewhere (another tab), and says so.
const checking = new Set();
async function checkHoldOf(v, seat) {
  const h = showHolds(v.id, "HELD").find((x) => x.seat_ids.includes(seat));
  if (!h || checking.has(h.hold_id)) return;
  checking.add(h.hold_id);
  try {
    const info = await getJSON(`/v1/shows/${enc(v.id)}/holds/${enc(h.hold_id)}`);
    const state = syncHold(h, info);
    if (state === "EXPIRED") expiredNotice(h);
  } catch {
    // The countdown still ends the hold on this page.
  } finally {
    checking.delete(h.hold_id);
    if (show === v) {
      redraw(v);
      renderHolds();
    }
  }
}

function expiredNotice(h) {
  notice("error", `Your hold on ${h.seat_ids.join(", ")} expired, so the seats went back on sale.`);
}

function renderHolds() {
  const box = $("holds");
  const v = show;
  const hs = v ? showHolds(v.id, "HELD") : [];
  box.replaceChildren(...hs.map((h) => holdCard(v, h)));
  if (!hs.length) box.append(el("p", { class: "hint" }, "None yet."));
  tick();
}

function holdCard(v, h) {
  const card = el("article", { class: "hold", dataset: { hold: h.hold_id } },
    el("p", {}, el("strong", {}, h.seat_ids.join(", ")), ` · ${money(h.amount_minor, h.currency)}`),
    el("p", { class: "countdown" }, "Held for you for ", el("time", { class: "left" }, ""), "."),
    el("div", { class: "row-buttons" },
      action("Pay and confirm", () => payForm(v, h, card), "primary pay-btn"),
      action("+5 min", () => extend(v, h), "extend-btn"),
      action("Release", () => release(v, h), "release-btn")));
  return card;
}

// tick updates every countdown; a hold whose time is up by the ledger's
// clock (as far as this browser knows it) is over.
function tick() {
  if (!show) return;
  for (const h of showHolds(show.id, "HELD")) {
    const card = document.querySelector(`[data-hold="${CSS.escape(h.hold_id)}"]`);
    const left = Math.ceil((h.expires_at - ledgerNow(h.skew)) / 1000);
    if (left <= 0) {
      dropHold(h.hold_id);
      expiredNotice(h);
      renderHolds();
      redraw(show);
      return;
    }
    if (card) {
      const t = card.querySelector(".left");
      t.textContent = `${Math.floor(left / 60)}:${String(left % 60).padStart(2, "0")}`;
      t.setAttribute("datetime", `PT${left}S`);
      card.classList.toggle("urgent", left <= 30);
    }
  }
}
setInterval(tick, 250);

async function extend(v, h) {
  const w = new Write("POST", `/v1/shows/${enc(v.id)}/holds/${enc(h.hold_id)}:extend`, { hold_token: h.hold_token, ttl_seconds: extendSeconds });
  const done = (r) => {
    h.expires_at = Date.parse(r.expires_at);
    h.skew = skewOf(r.applied_at);
    saveHold(h);
    tick();
    const capped = r.expires_at === r.max_expires_at;
    notice("info", capped ? "Extended as far as allowed: a hold lasts at most 45 minutes in all." : "Extended: you have 5 more minutes.");
  };
  try {
    done(await w.send(retrying));
  } catch (err) {
    if (err.reason === "HOLD_EXPIRED" || err.reason === "HOLD_CANCELLED") {
      dropHold(h.hold_id);
      renderHolds();
      redraw(v);
    }
    failed(err, w, done);
  }
}

async function release(v, h) {
  const w = new Write("POST", `/v1/shows/${enc(v.id)}/holds/${enc(h.hold_id)}:release`, { hold_token: h.hold_token });
  const done = () => {
    dropHold(h.hold_id);
    if (show === v) {
      renderHolds();
      redraw(v);
    }
    notice("info", `Released ${h.seat_ids.join(", ")}.`);
  };
  try {
    done(await w.send(retrying));
  } catch (err) {
    if (err.reason === "HOLD_EXPIRED" || err.reason === "HOLD_CANCELLED" || err.reason === "HOLD_NOT_FOUND") return done();
    failed(err, w, done);
  }
}

// payForm is the simulated payment step: the page makes a payment
// reference, as a payment provider would, and the ledger records it with
// the booking. The same reference and request id are reused if the fan
// retries, so a confirm is never done twice.
function payForm(v, h, card) {
  if (card.querySelector("form")) return;
  const form = el("form", { class: "pay", "aria-label": "Payment" },
    el("p", { class: "hint" }, "Simulated payment: no money moves."),
    el("label", {}, "Name on card ", el("input", { name: "name", autocomplete: "cc-name", placeholder: "A. Fan" })),
    el("label", {}, "Card number ", el("input", { name: "card", inputmode: "numeric", value: "4242 4242 4242 4242" })),
    el("div", { class: "row-buttons" },
      el("button", { type: "submit", class: "primary confirm-btn" }, `Pay ${money(h.amount_minor, h.currency)}`),
      action("Cancel", () => form.remove())));
  form.addEventListener("submit", (e) => {
    e.preventDefault();
    confirm(v, h, form);
  });
  card.append(form);
  form.querySelector("input").focus();
}

// confirms keeps each hold's confirm write (and so its request id) for
// the life of the page, however often the hold's card is redrawn.
const confirms = new Map();

async function confirm(v, h, form) {
  if (!h.payment_ref) {
    h.payment_ref = `sim-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 8)}`;
    saveHold(h);
  }
  if (!confirms.has(h.hold_id)) {
    confirms.set(h.hold_id, new Write("POST", `/v1/shows/${enc(v.id)}/holds/${enc(h.hold_id)}:confirm`,
      { hold_token: h.hold_token, payment_ref: h.payment_ref }));
  }
  const w = confirms.get(h.hold_id);
  const btn = form.querySelector("button[type=submit]");
  btn.disabled = true;
  btn.textContent = "Paying…";
  const done = (r) => {
    confirms.delete(h.hold_id);
    saveHold({ ...h, state: "CONFIRMED" });
    if (show !== v) return;
    renderHolds();
    redraw(v);
    renderBooked(v);
    notice("good", `Booked! ${r.seat_ids.join(", ")} are yours. The ledger recorded payment ${r.payment_ref}. Your tickets are below.`);
  };
  try {
    done(await w.send(retrying));
  } catch (err) {
    btn.disabled = false;
    btn.textContent = `Pay ${money(h.amount_minor, h.currency)}`;
    if (["HOLD_EXPIRED", "HOLD_CANCELLED", "HOLD_GONE"].includes(err.reason)) {
      dropHold(h.hold_id);
      renderHolds();
      redraw(v);
      return notice("error", `${explain(err)} (payment ${h.payment_ref} is void)`);
    }
    if (err.reason === "HOLD_CONFIRMED") return done({ seat_ids: h.seat_ids, payment_ref: h.payment_ref });
    failed(err, w, done);
  }
}

// ---- bookings and tickets ----

function renderBooked(v) {
  const box = $("booked");
  const bs = showHolds(v.id, "CONFIRMED").concat(showHolds(v.id, "REFUNDED"));
  box.replaceChildren(...bs.map((h) => bookingCard(h)));
  if (!bs.length) box.append(el("p", { class: "hint" }, "None yet."));
}

function bookingCard(h) {
  const card = el("article", { class: "booking", dataset: { booking: h.hold_id } },
    el("h3", {}, `Booking ${h.hold_id}`),
    el("p", { class: "hint" }, "Loading tickets…"));
  loadTickets(h, card);
  return card;
}

async function loadTickets(h, card) {
  try {
    const b = await getJSON(`/v1/shows/${enc(h.show_id)}/bookings/${enc(h.hold_id)}?hold_token=${enc(h.hold_token)}`);
    const info = b.booking || {};
    const state = (info.state || "").replace("HOLD_STATE_", "");
    card.replaceChildren(
      el("h3", {}, `${h.title || h.show_id} · ${(info.seat_ids || []).join(", ")}`),
      el("p", {}, `${state === "REFUNDED" ? "Refunded" : "Confirmed"} · ${money(info.amount_minor, info.currency)} · payment ${info.payment_ref}`),
      el("ul", { class: "tickets" }, (b.tickets || []).map((t) => el("li", { class: "ticket" },
        t.qr_url && t.code ? el("img", { src: t.qr_url, alt: `QR code of the ticket for seat ${t.seat_id}`, width: "132", height: "132" }) : null,
        el("p", {}, el("strong", {}, `Seat ${t.seat_id}`), ` · row ${t.row} · ${t.category}`),
        t.code ? el("code", { class: "code", title: t.code }, t.code) : el("p", { class: "hint" }, "No longer valid (refunded)")))),
      state === "CONFIRMED" ? action("Refund", () => refund(h, card)) : null);
  } catch (err) {
    card.replaceChildren(el("h3", {}, `Booking ${h.hold_id}`), el("p", { class: "hint" }, explain(err)));
  }
}

async function refund(h, card) {
  const w = new Write("POST", `/v1/shows/${enc(h.show_id)}/holds/${enc(h.hold_id)}:refund`, { hold_token: h.hold_token, reason: "asked for on the web page" });
  const done = () => {
    saveHold({ ...h, state: "REFUNDED" });
    notice("info", `Refunded: ${h.seat_ids.join(", ")} are back on sale.`);
    loadTickets(h, card);
  };
  try {
    done(await w.send(retrying));
  } catch (err) {
    failed(err, w, done);
  }
}

async function openBookings() {
  $("bookings").hidden = false;
  crumbs([["Browse", "#/"], ["My bookings"]]);
  const box = $("bookings-list");
  box.replaceChildren(el("p", { class: "hint" }, "Loading…"));
  // The list is this browser's bookings, read with their hold tokens: a
  // client's whole list (GET /v1/clients/{id}/bookings) is for the booking
  // site's backend (docs/API.md, Credentials), which this demo page lacks.
  try {
    const stored = loadHolds();
    const mine = Object.values(stored).filter((h) => h.state === "CONFIRMED" || h.state === "REFUNDED");
    const bookings = await Promise.all(mine.map((h) =>
      getJSON(`/v1/shows/${enc(h.show_id)}/holds/${enc(h.hold_id)}?hold_token=${enc(h.hold_token)}`).catch(() => h)));
    const items = bookings.map((b) => {
      const h = stored[b.hold_id];
      const state = (b.state || "").replace("HOLD_STATE_", "").toLowerCase();
      const li = el("li", {},
        el("p", {}, el("a", { href: `#/show/${enc(b.show_id)}` }, b.show_id), ` · ${(b.seat_ids || []).join(", ")} · ${money(b.amount_minor, b.currency)} · ${state}`));
      if (h) li.append(action("Show tickets", (e) => {
        e.target.remove();
        const card = el("article", { class: "booking" });
        li.append(card);
        loadTickets(h, card);
      }));
      return li;
    });
    box.replaceChildren(items.length ? el("ul", { class: "blist" }, items) : el("p", { class: "hint" }, "No bookings yet."));
  } catch (err) {
    box.replaceChildren(el("p", {}, explain(err)));
  }
}

// ---- the waiting line ----

// queued keeps the entry e of a hold answered 202 (joined the line).
function queued(v, e, body) {
  const q = { show_id: v.id, entry_id: e.entry_id, queue_token: e.queue_token, count: body.count,
    category: body.category || "", position: e.position, seats_ahead: e.seats_ahead };
  const all = store.get(queueKey, {});
  all[v.id] = q;
  store.set(queueKey, all);
  v.queue = q;
  renderQueue();
  notice("info", `Sold out for now: you are number ${q.position} in the waiting line. Keep this page open: when seats free up they are held for you.`);
  pollQueueSoon(v, queuePollMs);
}

function restoreQueue(v) {
  const q = store.get(queueKey, {})[v.id];
  if (!q) return;
  v.queue = q;
  renderQueue();
  pollQueueSoon(v, 0);
}

function forgetQueue(v) {
  const all = store.get(queueKey, {});
  delete all[v.id];
  store.set(queueKey, all);
  v.queue = null;
  clearTimeout(v.queueTimer);
  renderQueue();
}

function pollQueueSoon(v, ms) {
  clearTimeout(v.queueTimer);
  v.queueTimer = setTimeout(() => pollQueue(v), ms === undefined ? 150 : ms);
}

async function pollQueue(v) {
  const q = v.queue;
  if (!q || show !== v) return;
  try {
    const e = await getJSON(`/v1/shows/${enc(v.id)}/queue/${enc(q.entry_id)}?queue_token=${enc(q.queue_token)}`);
    if (show !== v || v.queue !== q) return;
    if (e.state === "OFFERED") return offered(v, e);
    if (e.state !== "WAITING") return forgetQueue(v);
    q.position = e.position;
    q.seats_ahead = e.seats_ahead;
    renderQueue();
  } catch (err) {
    if (err instanceof APIError && (err.status === 404 || err.status === 403)) return forgetQueue(v);
  }
  pollQueueSoon(v, queuePollMs);
}

function offered(v, e) {
  forgetQueue(v);
  const state = (e.hold_state || "").replace("HOLD_STATE_", "");
  if (state !== "HELD") {
    return notice("error", "Seats were offered to you from the waiting line, but the offer has ended.");
  }
  let amount = 0, cur = "";
  for (const id of e.seat_ids || []) {
    const s = v.seats.get(id);
    if (s) {
      amount += Number(s.price_minor || 0);
      cur = (v.cats.get(s.category) || {}).currency || cur;
    }
  }
  const h = { hold_id: e.hold_id, show_id: v.id, hold_token: e.hold_token, seat_ids: e.seat_ids || [], state: "HELD",
    expires_at: Date.parse(e.offer_expires_at), amount_minor: String(amount), currency: cur, skew: skewOf(e.as_of),
    title: $("show-title").textContent };
  saveHold(h);
  redraw(v);
  renderHolds();
  notice("good", `Good news: seats freed up. ${h.seat_ids.join(", ")} ${h.seat_ids.length === 1 ? "is" : "are"} now held for you. Pay to confirm before the time runs out.`);
}

function renderQueue() {
  const q = show && show.queue;
  $("queue").hidden = !q;
  if (!q) return;
  $("queue-body").replaceChildren(
    el("p", { class: "queue-pos" }, `You are number ${q.position} in line for ${plural(q.count, "seat")}${q.category ? ` (${q.category})` : ""}.`),
    el("p", { class: "hint" }, q.seats_ahead ? `Fans ahead of you want ${plural(q.seats_ahead, "seat")} in all.` : "You are next."),
    action("Leave the line", () => leaveQueue(show)));
}

async function leaveQueue(v) {
  const q = v.queue;
  if (!q) return;
  const w = new Write("DELETE", `/v1/shows/${enc(v.id)}/queue/${enc(q.entry_id)}`, { queue_token: q.queue_token });
  try {
    await w.send(retrying);
    forgetQueue(v);
    notice("info", "You left the waiting line.");
  } catch (err) {
    if (err instanceof APIError && err.reason === "NOT_QUEUED") {
      return pollQueue(v); // already offered seats: show the offer
    }
    failed(err, w, () => forgetQueue(v));
  }
}

// ---- start ----

$("who").textContent = `You are ${me}`;
window.addEventListener("hashchange", route);
route();
