// Subgraphs in the checkpointer rows: read by namespace (nested ones too), and placed
// under the version that ran them without overlapping.

import assert from "node:assert/strict";
import test from "node:test";

import { loadSubgraphs, placeSubgraphs, versionOf } from "../../app/web/versions.js";

const item = (id, ns, tasks = []) => ({
  checkpoint: { checkpoint_id: id, checkpoint_ns: ns },
  parent_checkpoint: null,
  metadata: { step: 0 },
  next: tasks.map((t) => t.name),
  tasks,
});
const subgraphTask = (name, ns) => ({ name, checkpoint: { checkpoint_ns: ns } });

test("a version's tasks name the subgraphs they run", () => {
  const version = versionOf({
    id: "a",
    tasks: [subgraphTask("writer", "writer:1"), { name: "plain", checkpoint: null }],
  });
  assert.deepEqual(version.subgraphs, [{ ns: "writer:1", node: "writer" }]);
});

test("subgraphs are read by namespace, nested ones too, each anchored where it ran", async () => {
  const histories = {
    "writer:1": [
      item("w2", "writer:1"),
      item("w1", "writer:1", [subgraphTask("inner", "writer:1|inner:9")]),
    ],
    "writer:1|inner:9": [item("i1", "writer:1|inner:9")],
  };
  const asked = [];
  const top = [
    versionOf({ id: "t1", tasks: [subgraphTask("writer", "writer:1")] }),
    versionOf({ id: "t2", tasks: [subgraphTask("writer", "writer:1")] }), // same run, later
  ];
  const found = await loadSubgraphs(top, async (ns) => (asked.push(ns), histories[ns]));
  assert.deepEqual(asked, ["writer:1", "writer:1|inner:9"]);
  assert.deepEqual([...found.keys()], ["writer:1", "writer:1|inner:9"]);
  assert.equal(found.get("writer:1").anchor, "t1");
  assert.deepEqual([...found.get("writer:1").versions.keys()], ["w1", "w2"]); // in id order
  assert.equal(found.get("writer:1|inner:9").anchor, "w1");
});

test("rows go below their anchor, on the first sub-lane free over their span", () => {
  const subgraph = (anchor, ids) => ({ anchor, versions: new Map(ids.map((id) => [id, {}])) });
  const subgraphs = new Map([
    ["a", subgraph("t1", ["a1", "a2", "a3"])],
    ["b", subgraph("t2", ["b1"])], // overlaps a: a lane of its own
    ["c", subgraph("t9", ["c1"])], // far to the right: back on the first lane
    ["d", subgraph("a2", ["d1"])], // inside a: below a's lane
    ["e", subgraph("gone", ["e1"])], // its anchor is not drawn: left out
  ]);
  const at = { t1: { x: 0, y: 10 }, t2: { x: 60, y: 10 }, t9: { x: 600, y: 10 } };
  const { placed, lanes } = placeSubgraphs(subgraphs, (id) => at[id], 40);
  const where = Object.fromEntries(placed.map((p) => [p.subgraph.anchor, [p.lane, p.xs]]));
  assert.deepEqual(where, {
    t1: [0, [40, 80, 120]],
    t2: [1, [100]],
    t9: [0, [640]],
    a2: [2, [120]],
  });
  assert.equal(lanes, 3);
});
