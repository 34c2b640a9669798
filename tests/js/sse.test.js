// The SSE reader against every way a network can cut a stream into chunks.

import assert from "node:assert/strict";
import test from "node:test";

import { readEvents } from "../../app/web/sse.js";

/** A byte stream that hands `bytes` over in pieces cut at `cuts`. */
function streamOf(bytes, cuts) {
  const edges = [0, ...cuts, bytes.length];
  return new ReadableStream({
    start(controller) {
      for (let i = 1; i < edges.length; i++)
        controller.enqueue(bytes.slice(edges[i - 1], edges[i]));
      controller.close();
    },
  });
}

async function read(bytes, cuts) {
  const events = [];
  await readEvents(streamOf(bytes, cuts), (event) => events.push(event));
  return events;
}

// Three events with \r\n, \r and \n line ends, a comment, multi-line data, a non-ASCII
// character (two bytes in UTF-8) and an unfinished event at the end, which is dropped.
const STREAM = new TextEncoder().encode(
  [
    'event: metadata\r\nid: 1\r\ndata: {"run_id": "r"}\r\n\r\n',
    ": heartbeat\r\n\r\n",
    'event: messages\rid: 2\rdata: {"text": "°C"}\r\r',
    "event: values\nid: 3\ndata: line one\ndata: line two\n\n",
    "event: end\r\nid: 4\r\ndata: null\r\n",
  ].join(""),
);
const EXPECTED = [
  { event: "metadata", id: "1", data: { run_id: "r" } },
  { event: "messages", id: "2", data: { text: "°C" } },
  { event: "values", id: "3", data: "line one\nline two" },
];

test("the stream in one chunk", async () => {
  assert.deepEqual(await read(STREAM, []), EXPECTED);
});

test("the stream cut in two at every byte", async () => {
  for (let cut = 1; cut < STREAM.length; cut++) {
    assert.deepEqual(await read(STREAM, [cut]), EXPECTED, `cut at byte ${cut}`);
  }
});

test("the stream byte by byte", async () => {
  const cuts = Array.from({ length: STREAM.length - 1 }, (_, i) => i + 1);
  assert.deepEqual(await read(STREAM, cuts), EXPECTED);
});

test("a \\r\\n split between two chunks is one line end, not two", async () => {
  const bytes = new TextEncoder().encode("event: values\r\nid: 7\r\ndata: 1\r\n\r\n");
  const cut = "event: values\r".length;
  assert.deepEqual(await read(bytes, [cut]), [{ event: "values", id: "7", data: 1 }]);
});
