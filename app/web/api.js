// The HTTP API as the page uses it: JSON requests and Server-Sent Events over fetch.
// EventSource cannot POST nor set headers (x-api-key, Last-Event-ID), so streams are read
// from a fetch body with a small SSE parser.

const KEY_STORAGE = "threadline.apiKey";

export class ApiError extends Error {
  constructor(status, detail) {
    super(`${status}: ${detail}`);
    this.status = status;
    this.detail = detail;
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

/** A JSON request; resolves to the parsed body (null when there is none). */
export async function request(method, path, body) {
  const init = { method, headers: headers() };
  if (body !== undefined) {
    init.headers["content-type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  const response = await fetch(path, init);
  if (!response.ok) throw await failure(response);
  // 204, and 202 from a cancel, come without a body.
  const text = await response.text();
  return text ? JSON.parse(text) : null;
}

export const get = (path) => request("GET", path);
export const post = (path, body = {}) => request("POST", path, body);

/**
 * Read an SSE response body, calling onEvent({event, data, id}) per frame.
 * Resolves when the server closes the stream (the run returned) or `signal` aborts.
 */
async function readEvents(response, onEvent) {
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buffer += value.replace(/\r\n?/g, "\n");
    let end;
    while ((end = buffer.indexOf("\n\n")) >= 0) {
      const frame = parseFrame(buffer.slice(0, end));
      buffer = buffer.slice(end + 2);
      if (frame) onEvent(frame);
    }
  }
}

/** One SSE frame; null for comments (heartbeats) and frames without data. */
function parseFrame(text) {
  let event = "message";
  let id = null;
  const data = [];
  for (const line of text.split("\n")) {
    if (!line || line.startsWith(":")) continue;
    const colon = line.indexOf(":");
    const field = colon < 0 ? line : line.slice(0, colon);
    const value = colon < 0 ? "" : line.slice(colon + 1).replace(/^ /, "");
    if (field === "event") event = value;
    else if (field === "data") data.push(value);
    else if (field === "id") id = value;
  }
  if (!data.length) return null;
  const raw = data.join("\n");
  let parsed;
  try {
    parsed = JSON.parse(raw);
  } catch {
    parsed = raw;
  }
  return { event, data: parsed, id };
}

/** The run id from a stream response's Content-Location (/threads/{t}/runs/{r}). */
function runIdOf(response) {
  const location = response.headers.get("content-location") || "";
  const match = location.match(/\/runs\/([^/?]+)/);
  return match ? match[1] : null;
}

/**
 * Start a run and stream it. `onStart(runId)` fires as soon as the headers arrive, before
 * any event, so the caller can remember the run for a rejoin after a reload.
 */
export async function streamRun(threadId, body, { onStart, onEvent, signal }) {
  const response = await fetch(`/threads/${threadId}/runs/stream`, {
    method: "POST",
    headers: headers({ "content-type": "application/json", accept: "text/event-stream" }),
    body: JSON.stringify(body),
    signal,
  });
  if (!response.ok) throw await failure(response);
  onStart?.(runIdOf(response));
  await readEvents(response, onEvent);
}

/** Rejoin a run's stream: what came after `lastEventId` is replayed, then it goes live. */
export async function joinStream(threadId, runId, lastEventId, { onEvent, signal }) {
  const response = await fetch(`/threads/${threadId}/runs/${runId}/stream`, {
    headers: headers({
      accept: "text/event-stream",
      "Last-Event-ID": lastEventId == null ? "-1" : String(lastEventId),
    }),
    signal,
  });
  if (!response.ok) throw await failure(response);
  await readEvents(response, onEvent);
}
