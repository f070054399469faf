// Calling seatledger's HTTP/JSON API from a page: a fan's identity, JSON
// reads, exactly-once writes, and errors in plain words. Shared by the
// booking page (book.js) and the operator page (admin.js).

// idPattern is the ledger's id syntax (fsm.ValidID): 1–64 of [A-Za-z0-9._:-].
const idPattern = /^[A-Za-z0-9._:-]{1,64}$/;

// Retrying a write: at most writeAttemptsMax tries within writeRetryMs, each
// after the server's Retry-After (or retryDelayMs), so a leader election in
// the cluster is ridden out without the fan doing anything.
const writeAttemptsMax = 6;
const writeRetryMs = 20000;
const retryDelayMs = 1000;

// randomId returns prefix followed by 24 random hex digits.
export function randomId(prefix) {
  const b = new Uint8Array(12);
  crypto.getRandomValues(b);
  return prefix + Array.from(b, (x) => x.toString(16).padStart(2, "0")).join("");
}

// store keeps small JSON values in localStorage; a browser that refuses
// storage (private mode) still works for the life of the page.
const memory = new Map();
export const store = {
  get(key, fallback) {
    try {
      const v = localStorage.getItem(key);
      return v === null ? fallback : JSON.parse(v);
    } catch {
      return memory.has(key) ? memory.get(key) : fallback;
    }
  },
  set(key, value) {
    memory.set(key, value);
    try {
      localStorage.setItem(key, JSON.stringify(value));
    } catch {
      // Storage full or refused: the in-memory copy serves this page.
    }
  },
};

// clientId is this browser's fan identity: made once at random and kept in
// localStorage, so holds and bookings stay this browser's across reloads.
export function clientId() {
  let id = store.get("seatledger.client_id", "");
  if (!idPattern.test(id)) {
    id = randomId("fan-");
    store.set("seatledger.client_id", id);
  }
  return id;
}

// APIError is a refused call: the HTTP status, the ledger's reason
// (google.rpc.ErrorInfo), its ErrorDetail, and the field a BadRequest names.
export class APIError extends Error {
  constructor(status, body, retryAfter) {
    super((body && body.message) || `HTTP ${status}`);
    this.status = status;
    this.reason = "";
    this.detail = {};
    this.field = "";
    this.retryAfterMs = retryAfter > 0 ? retryAfter * 1000 : 0;
    for (const d of (body && body.details) || []) {
      const type = d["@type"] || "";
      if (type.endsWith("google.rpc.ErrorInfo")) this.reason = d.reason || "";
      else if (type.endsWith("seatledger.v1.ErrorDetail")) this.detail = d;
      else if (type.endsWith("google.rpc.BadRequest") && d.field_violations && d.field_violations.length) {
        this.field = d.field_violations[0].field + " " + d.field_violations[0].description;
      }
    }
  }
}

// call sends one request and returns the JSON body, or throws an APIError
// (the server answered no) or a TypeError (the server could not be reached).
export async function call(method, path, body, headers) {
  const init = { method, headers: { Accept: "application/json", ...(headers || {}) }, cache: "no-store" };
  if (body !== undefined) {
    init.body = JSON.stringify(body);
    init.headers["Content-Type"] = "application/json";
  }
  const resp = await fetch(path, init);
  let data = null;
  const text = await resp.text();
  if (text) {
    try {
      data = JSON.parse(text);
    } catch {
      data = { message: text.trim() };
    }
  }
  if (!resp.ok) throw new APIError(resp.status, data, Number(resp.headers.get("Retry-After")));
  return data;
}

export const getJSON = (path, headers) => call("GET", path, undefined, headers);

// retryable tells whether a write may be sent again as it is: the server
// could not be reached, had no leader, did not know the outcome, or asked
// the client to slow down. Resending is safe because the request id is the
// same: the ledger applies it at most once and replays the first answer.
export function retryable(err) {
  if (!(err instanceof APIError)) return true; // network error: outcome unknown
  return err.status === 503 || err.status === 504 || err.reason === "RATE_LIMITED";
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// Write is one mutating action of a fan: its request_id is drawn once, when
// the action is made, and every retry (automatic, or the fan pressing "Try
// again") sends the same id, so a hold or confirm that did happen is never
// done twice.
export class Write {
  constructor(method, path, body) {
    this.method = method;
    this.path = path;
    this.body = { ...body, client_id: clientId(), request_id: randomId("r-") };
  }

  // send tries until the ledger answers, retrying what is retryable.
  // onRetry(err, attempt) is told before each retry.
  async send(onRetry) {
    const deadline = Date.now() + writeRetryMs;
    for (let attempt = 1; ; attempt++) {
      try {
        if (this.method === "DELETE") {
          const q = new URLSearchParams(this.body).toString();
          return await call("DELETE", `${this.path}?${q}`);
        }
        return await call(this.method, this.path, this.body);
      } catch (err) {
        const wait = (err instanceof APIError && err.retryAfterMs) || retryDelayMs;
        if (!retryable(err) || attempt >= writeAttemptsMax || Date.now() + wait > deadline) throw err;
        if (onRetry) onRetry(err, attempt);
        await sleep(wait);
      }
    }
  }
}

// enc escapes one path segment.
export const enc = encodeURIComponent;

// money formats minor units (a string in JSON: int64) in a currency.
export function money(minor, currency) {
  const n = Number(minor || 0) / 100;
  if (!currency) return n.toFixed(2);
  try {
    return new Intl.NumberFormat(undefined, { style: "currency", currency }).format(n);
  } catch {
    return `${n.toFixed(2)} ${currency}`;
  }
}

// localDates lists the next n dates (YYYY-MM-DD) in a time zone, from
// today: the catalog's dates are calendar days in the city's zone.
export function localDates(zone, n) {
  const fmt = new Intl.DateTimeFormat("en-CA", { timeZone: zone || "UTC", year: "numeric", month: "2-digit", day: "2-digit" });
  const out = [];
  for (let d = 0; out.length < n && d < n + 2; d++) {
    const s = fmt.format(new Date(Date.now() + d * 86400000));
    if (!out.includes(s)) out.push(s);
  }
  return out;
}

// plural returns "1 seat" or "3 seats".
export const plural = (n, word) => `${n} ${word}${n === 1 ? "" : "s"}`;

// el builds an element: el("button", {class: "x", onclick: f}, "text", child).
export function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith("on")) e.addEventListener(k.slice(2), v);
    else if (k === "class") e.className = v;
    else if (k === "dataset") Object.assign(e.dataset, v);
    else e.setAttribute(k, v === true ? "" : v);
  }
  for (const c of children.flat()) {
    if (c === undefined || c === null || c === false) continue;
    e.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return e;
}

// explain says in plain words why the ledger refused a call. The booking
// page adds actions (alternatives, the waiting line) for the reasons that
// have one.
export function explain(err) {
  if (!(err instanceof APIError)) {
    return "We could not reach the server. Check your connection; it is safe to try again.";
  }
  const d = err.detail || {};
  const seats = (ids) => (ids || []).join(", ");
  switch (err.reason) {
    case "SEATS_TAKEN":
      return `Sorry, ${seats(d.taken_seat_ids)} ${(d.taken_seat_ids || []).length === 1 ? "was" : "were"} just taken by someone else.`;
    case "SOLD_OUT":
      return "Sold out: there are not enough free seats for that many people right now.";
    case "QUEUE_FULL":
      return "Sold out, and the waiting line is full. Please try again later.";
    case "HOLD_EXPIRED":
      return "Your hold expired before the booking was confirmed, so the seats went back on sale. Your payment was not taken.";
    case "HOLD_CANCELLED":
      return "This hold was released, so it cannot be confirmed. Your payment was not taken.";
    case "HOLD_GONE":
    case "HOLD_NOT_FOUND":
      return "We cannot find this hold any more. Your payment was not taken.";
    case "HOLD_CONFIRMED":
      return "These seats are already booked and paid for.";
    case "HOLD_NOT_CONFIRMED":
      return "Only a confirmed booking can be refunded.";
    case "NOT_HOLD_OWNER":
    case "HOLD_TOKEN_INVALID":
      return "This hold belongs to another browser.";
    case "TOO_MANY_HOLDS":
      return `You already hold seats ${d.limit_value || 8} times for this show. Confirm or release a hold first.`;
    case "RATE_LIMITED":
      return "You are clicking faster than the box office can keep up. Wait a second and try again.";
    case "UNKNOWN_SEAT":
      return "That seat does not exist in this show.";
    case "SHOW_NOT_FOUND":
      return "There is no such show.";
    case "NOT_QUEUED":
      return "You are no longer in the waiting line.";
    case "TOO_MANY_WATCHERS":
      return "Too many people are watching this show on this server. Live updates will retry shortly.";
    case "NOT_LEADER":
    case "UNAVAILABLE":
      return "The box office is briefly unavailable (the cluster is choosing a leader). It is safe to try again.";
    case "OUTCOME_UNKNOWN":
      return "We could not tell whether that went through. Trying again is safe: it will not be done twice.";
    case "REQUEST_ID_REUSED":
      return "This page sent a request id twice for different actions. Reload the page and try again.";
    case "INVALID_ARGUMENT":
      return `The request was refused: ${err.field || err.message}.`;
    default:
      if (err.status === 401 || err.status === 403) return "Not allowed: " + err.message;
      return err.message || `The server answered ${err.status}.`;
  }
}
