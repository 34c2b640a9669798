// The HTTP API as the page uses it: JSON requests and Server-Sent Events over fetch. Every
// call reports to the connection monitor whether the server answered.

import { connection } from "./connection.js";
import { readEvents } from "./sse.js";

const KEY_STORAGE = "threadline.apiKey";

/** The server answered with an error status. */
export class ApiError extends Error {
  constructor(status, detail) {
    super(`${status}: ${detail}`);
    this.status = status;
    this.detail = detail;
  }
}

/** The server could not be reached (or the connection broke mid-stream). */
export class OfflineError extends Error {
  constructor() {
    super("Can't reach the server.");
  }
}

export function apiKey() {
  return localStorage.getItem(KEY_STORAGE) || "";
}

export function setApiKey(value) {
  if (value) localStorage.setItem(KEY_STORAGE, value);
  else localStorage.removeItem(KEY_STORAGE);
}

function headers(extra = {}) {
  const result = { ...extra };
  const key = apiKey();
  // Sent only when set, so the page works the same against a server with auth off.
  if (key) result["x-api-key"] = key;
  return result;
}

async function failure(response) {
  let detail = response.statusText;
  try {
    const body = await response.json();
    detail = typeof body.detail === "string" ? body.detail : JSON.stringify(body.detail);
  } catch {
    // Not JSON: keep the status text.
  }
  return new ApiError(response.status, detail);
}

/** fetch, with a network failure turned into OfflineError (an abort stays an abort). */
async function send(path, init) {
  let response;
  try {
    response = await fetch(path, init);
  } catch (error) {
    if (init.signal?.aborted) throw error;
    connection.lost();
    throw new OfflineError();
  }
  connection.reached();
  if (!response.ok) throw await failure(response);
  return response;
}

/** A JSON request; resolves to the parsed body (null when there is none). */
export async function request(method, path, body) {
  const init = { method, headers: headers() };
  if (body !== undefined) {
    init.headers["content-type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  const response = await send(path, init);
  // 204, and 202 from a cancel, come without a body.
  const text = await response.text();
  return text ? JSON.parse(text) : null;
}

export const get = (path) => request("GET", path);
export const post = (path, body = {}) => request("POST", path, body);
export const patch = (path, body) => request("PATCH", path, body);
export const del = (path) => request("DELETE", path);

/** Read a stream's events; a connection that breaks mid-stream is an OfflineError. */
async function follow(response, onEvent, signal) {
  try {
    await readEvents(response.body, onEvent);
  } catch (error) {
    if (signal?.aborted) throw error;
    connection.lost();
    throw new OfflineError();
  }
}

/** The run id from a stream response's Content-Location (/threads/{t}/runs/{r}). */
function runIdOf(response) {
  const location = response.headers.get("content-location") || "";
  const match = location.match(/\/runs\/([^/?]+)/);
  return match ? match[1] : null;
}

/**
 * Start a run and stream it. `onStart(runId)` fires as soon as the headers arrive, before
 * any event, so the caller can remember the run for a rejoin after a reload or an outage.
 */
export async function streamRun(threadId, body, { onStart, onEvent, signal }) {
  const response = await send(`/threads/${threadId}/runs/stream`, {
    method: "POST",
    headers: headers({ "content-type": "application/json", accept: "text/event-stream" }),
    body: JSON.stringify(body),
    signal,
  });
  onStart?.(runIdOf(response));
  await follow(response, onEvent, signal);
}

/** Listen to a thread: the events of every run on it, from the one pending or running
 * now on, until the signal aborts or the connection ends. */
export async function threadStream(threadId, { onEvent, signal }) {
  const response = await send(`/threads/${threadId}/stream`, {
    headers: headers({ accept: "text/event-stream" }),
    signal,
  });
  await follow(response, onEvent, signal);
}

/** Rejoin a run's stream: what came after `lastEventId` is replayed, then it goes live. */
export async function joinStream(threadId, runId, lastEventId, { onEvent, signal }) {
  const response = await send(`/threads/${threadId}/runs/${runId}/stream`, {
    headers: headers({
      accept: "text/event-stream",
      "Last-Event-ID": lastEventId == null ? "-1" : String(lastEventId),
    }),
    signal,
  });
  await follow(response, onEvent, signal);
}
