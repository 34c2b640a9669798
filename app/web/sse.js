// Server-Sent Events read from a fetch body. EventSource cannot POST nor set headers
// (x-api-key, Last-Event-ID), so the page parses the stream itself, as the HTML standard
// says: lines end at \r\n, \r or \n, a blank line ends an event, and an event cut off by
// the end of the stream is dropped.

/**
 * Call onEvent({event, data, id}) per event of `body` (a ReadableStream of bytes);
 * resolves when the stream ends. `data` is parsed as JSON when it is JSON.
 */
export async function readEvents(body, onEvent) {
  const reader = body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  let lines = [];
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buffer += value;
    // A \r at the end may be the first half of a \r\n split across two chunks: it waits
    // for the next chunk, or it would end one line here and an empty one there.
    const cut = buffer.endsWith("\r") ? buffer.length - 1 : buffer.length;
    const complete = buffer.slice(0, cut).split(/\r\n|\r|\n/);
    buffer = complete.pop() + buffer.slice(cut);
    for (const line of complete) {
      if (line) {
        lines.push(line);
        continue;
      }
      const event = parseEvent(lines);
      lines = [];
      if (event) onEvent(event);
    }
  }
}

/** One event from its lines; null for comments (heartbeats) and events without data. */
function parseEvent(lines) {
  let event = "message";
  let id = null;
  const data = [];
  for (const line of lines) {
    if (line.startsWith(":")) continue;
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
