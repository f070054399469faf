// The waiting room of a hot show (docs/API.md, The waiting room). While a
// show's room is open the page shows the fan's place in it instead of the
// seat map: position, people ahead, estimated wait and a progress bar,
// updated by the show's live events (each says up to which place the room
// has admitted) and by reading the entry. Once admitted, it moves on to
// the seat map by itself, and every hold carries the admission token. The
// entry and the token are kept in localStorage, so a reload keeps the
// fan's place in line.

import { APIError, Write, enc, explain, getJSON, plural, store } from "./api.js";

const $ = (id) => document.getElementById(id);

const roomKey = "seatledger.room"; // show -> {entry_id, entry_token, place, admission_token, admission_expires_at}
// roomPollMs paces reading the entry while waiting; a live event whose
// admitted_through reaches the fan's place reads it at once.
const roomPollMs = 2000;

const entries = () => store.get(roomKey, {});
function saveEntry(show, e) {
  const all = entries();
  all[show] = { ...all[show], ...e };
  store.set(roomKey, all);
}
function dropEntry(show) {
  const all = entries();
  delete all[show];
  store.set(roomKey, all);
}

// cur is the room the page waits in: {show, alive, timer, first}.
let cur = null;

// admissionFor is the fan's admission token for show while it is valid.
export function admissionFor(show) {
  const e = entries()[show];
  if (!e || !e.admission_token || !(Date.parse(e.admission_expires_at) > Date.now())) return undefined;
  return e.admission_token;
}

// roomGate asks whether show's room is open and, unless the fan holds a
// valid admission (or again is set: a hold was refused for want of one),
// puts the fan in line. alive() says the page still shows this show.
export async function roomGate(show, alive, again) {
  leaveRoom();
  let st;
  try {
    st = await getJSON(`/v1/shows/${enc(show)}/waiting_room`);
  } catch {
    return; // no answer: the ledger still checks every hold
  }
  if (!alive()) return;
  if (!st.open || (!again && admissionFor(show))) {
    if (!st.open) dropEntry(show);
    return waiting(false);
  }
  cur = { show, alive, timer: 0, first: 0 };
  waiting(true);
  render({ state: "JOINING" });
  const known = entries()[show];
  if (known && known.entry_id && !again) return follow();
  try {
    const w = new Write("POST", `/v1/shows/${enc(show)}/waiting_room:join`, {});
    const e = await w.send();
    saveEntry(show, { entry_id: e.entry_id, entry_token: e.entry_token, place: 0, admission_token: "", admission_expires_at: "" });
    if (cur && cur.show === show) apply(e);
  } catch (err) {
    if (cur && cur.show === show) render({ state: "ERROR", message: explain(err) });
  }
  follow();
}

// roomEvent takes a live event's room object.
export function roomEvent(show, room) {
  if (!cur || cur.show !== show) return;
  if (!room.open) {
    dropEntry(show);
    leaveRoom();
    return waiting(false);
  }
  const e = entries()[show];
  if (e && e.place && Number(room.admitted_through) >= Number(e.place)) follow(0);
}

// leaveRoom stops following (the fan opened another show).
export function leaveRoom() {
  if (cur) clearTimeout(cur.timer);
  cur = null;
}

// follow reads the entry now (or after wait ms) and again every
// roomPollMs while it waits.
function follow(wait) {
  if (!cur) return;
  clearTimeout(cur.timer);
  const c = cur;
  c.timer = setTimeout(async () => {
    if (cur !== c || !c.alive()) return;
    const e = entries()[c.show];
    if (!e || !e.entry_id) return;
    try {
      const r = await getJSON(`/v1/shows/${enc(c.show)}/waiting_room/entries/${enc(e.entry_id)}?entry_token=${enc(e.entry_token)}`);
      if (cur !== c) return;
      if (apply(r)) return;
    } catch (err) {
      if (cur !== c) return;
      if (err instanceof APIError && err.status === 404) {
        dropEntry(c.show);
        return roomGate(c.show, c.alive, true);
      }
    }
    follow(roomPollMs);
  }, wait || 0);
}

// apply shows an entry's state; true once the fan is done waiting.
function apply(e) {
  const show = cur.show;
  switch (e.state) {
    case "ADMITTED":
      saveEntry(show, { admission_token: e.admission_token, admission_expires_at: e.admission_expires_at });
      leaveRoom();
      waiting(false);
      $("status").textContent = "It's your turn: pick your seats.";
      return true;
    case "CLOSED":
      dropEntry(show);
      leaveRoom();
      waiting(false);
      return true;
    case "EXPIRED":
      dropEntry(show);
      roomGate(show, cur.alive, true);
      return true;
  }
  if (e.place && e.place !== "0") saveEntry(show, { place: e.place });
  const pos = Number(e.position || 0);
  if (!cur.first || pos > cur.first) cur.first = pos;
  render({ ...e, position: pos, ahead: Number(e.people_ahead || 0), first: cur.first });
  return false;
}

function waiting(on) {
  $("show").dataset.room = on ? "waiting" : "";
  $("room").hidden = !on;
}

function render(e) {
  const pos = $("room-pos"), ahead = $("room-ahead"), wait = $("room-wait"), bar = $("room-bar");
  switch (e.state) {
    case "JOINING":
      pos.textContent = "Joining the waiting room…";
      ahead.textContent = wait.textContent = "";
      return;
    case "ERROR":
      pos.textContent = e.message;
      return;
    case "SOLD_OUT":
      pos.textContent = "Sold out for now: you keep your place, and we move on if seats are freed.";
      break;
    default:
      pos.textContent = `You're number ${e.position.toLocaleString()} in line.`;
  }
  ahead.textContent = `${plural(e.ahead, "person")} ahead of you.`.replace("persons", "people");
  const s = Number(e.estimated_wait_seconds || 0);
  wait.textContent = `Estimated wait: ${s < 60 ? plural(s, "second") : plural(Math.ceil(s / 60), "minute")}.`;
  bar.max = Math.max(1, e.first);
  bar.value = Math.max(0, e.first - e.position);
}
