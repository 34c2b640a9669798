// The checkpointer's versions as the run view draws them: what a version is (from a
// history item or a stream event), how the rows are laid out (the branch on screen on one
// line, other branches above it), and the subgraphs' versions, read by namespace and laid
// out below the version whose task ran them.

/** A version from a history item or a `checkpoints` stream event. */
export function versionOf({ id, parent, metadata, next, tasks, createdAt }) {
  return {
    id,
    parent: parent || null,
    step: metadata?.step,
    source: metadata?.source,
    runId: metadata?.run_id || null,
    next: next || [],
    waiting: (tasks || []).some((t) => t.interrupts?.length),
    // The subgraphs its tasks run, each in a namespace of its own ("node:task id").
    subgraphs: (tasks || [])
      .filter((t) => t.checkpoint?.checkpoint_ns)
      .map((t) => ({ ns: t.checkpoint.checkpoint_ns, node: t.name })),
    createdAt,
  };
}

/** A version from a history item. */
function fromItem(item) {
  return versionOf({
    id: item.checkpoint.checkpoint_id,
    parent: item.parent_checkpoint?.checkpoint_id,
    metadata: item.metadata,
    next: item.next,
    tasks: item.tasks,
    createdAt: item.created_at,
  });
}

const byId = ([a], [b]) => (a < b ? -1 : 1);

/** History items as versions in id order, plus the live ones saved after the read. */
export function mergeVersions(history, live) {
  const versions = new Map();
  for (const item of history) {
    const version = fromItem(item);
    versions.set(version.id, version);
  }
  const newest = [...versions.keys()].reduce((a, b) => (a > b ? a : b), "");
  for (const version of live.values()) {
    if (version.id > newest) versions.set(version.id, version);
  }
  return new Map([...versions].sort(byId));
}

/** Names with repeats counted: [a, a, b] -> [a×2, b]. */
export function unique(names) {
  const counts = new Map();
  for (const name of names) counts.set(name, (counts.get(name) || 0) + 1);
  return [...counts].map(([name, n]) => (n > 1 ? `${name}×${n}` : name));
}

/** What is due next at a version, in a few characters. */
export function nextLabel(version) {
  if (!version.next.length) return "END";
  return unique(version.next.map((n) => (n === "__start__" ? "input" : n))).join(",");
}

/**
 * Place versions: depth (x) from the root; lane 0 is the branch on screen (its ancestors,
 * then the newest child onwards); every other branch gets the lowest lane above it that is
 * free over its span.
 */
export function layoutVersions(track) {
  const versions = [...track.versions.values()]; // sorted by id: parents come first
  const children = new Map();
  for (const v of versions) {
    if (!children.has(v.parent)) children.set(v.parent, []);
    children.get(v.parent).push(v.id);
  }
  const main = new Set();
  let id = track.shown && track.versions.has(track.shown) ? track.shown : track.head;
  for (let v = track.versions.get(id); v; v = track.versions.get(v.parent)) main.add(v.id);
  for (let kids = children.get(id); kids?.length; kids = children.get(id)) {
    id = kids.at(-1);
    main.add(id);
  }
  const place = new Map();
  const depthOf = (v) => (track.versions.has(v.parent) ? place.get(v.parent).depth + 1 : 0);
  const taken = []; // lane -> list of [from, to] depth spans
  for (const v of versions) {
    if (place.has(v.id)) continue;
    if (main.has(v.id)) {
      place.set(v.id, { depth: depthOf(v), lane: 0 });
      continue;
    }
    // A new branch: follow its oldest unplaced child to the end.
    const branch = [v];
    for (let kids = children.get(v.id); kids;) {
      const next = kids.find((k) => !main.has(k) && !branch.some((b) => b.id === k));
      if (!next) break;
      branch.push(track.versions.get(next));
      kids = children.get(next);
    }
    const from = depthOf(v);
    const span = [from - 1, from + branch.length - 1];
    let lane = 1;
    while ((taken[lane] || []).some(([a, b]) => a <= span[1] && span[0] <= b)) lane++;
    (taken[lane] ||= []).push(span);
    branch.forEach((b, i) => place.set(b.id, { depth: from + i, lane }));
  }
  return { place, lanes: Math.max(0, taken.length - 1), leafId: id };
}

// ---- subgraphs ----------------------------------------------------------------------

const SUBGRAPH_DEPTH = 3; // subgraphs inside subgraphs, this deep at most

/**
 * The subgraphs the versions' tasks ran, each with its own versions: ns -> {ns, node,
 * anchor (the id of the version whose task ran it), versions (a Map in id order)}.
 * `read(ns)` gives a namespace's history items; subgraphs inside them are read too.
 */
export async function loadSubgraphs(versions, read, depth = 1) {
  const found = new Map();
  for (const version of versions) {
    for (const { ns, node } of version.subgraphs) {
      if (!found.has(ns)) found.set(ns, { ns, node, anchor: version.id, versions: new Map() });
    }
  }
  const inner = await Promise.all(
    [...found.values()].map(async (subgraph) => {
      const items = await read(subgraph.ns);
      subgraph.versions = new Map(
        items.map((item) => [item.checkpoint.checkpoint_id, fromItem(item)]).sort(byId),
      );
      const versions = [...subgraph.versions.values()];
      return depth < SUBGRAPH_DEPTH ? loadSubgraphs(versions, read, depth + 1) : new Map();
    }),
  );
  for (const nested of inner) for (const [ns, subgraph] of nested) found.set(ns, subgraph);
  return found;
}

/**
 * Where each subgraph's row goes under the rows of versions: it starts below the version
 * that ran it (`anchorAt(id)` -> {x, y}, or null when that version is not drawn) and takes
 * the first sub-lane free over its span. Returns [{subgraph, lane, x0, y0, xs}] (xs: the x
 * of each of its versions) and the number of sub-lanes.
 */
export function placeSubgraphs(subgraphs, anchorAt, dx) {
  const placed = [];
  const taken = []; // sub-lane -> list of [x0, x1]
  const where = new Map(); // version id -> {x, lane} for subgraphs inside subgraphs
  for (const subgraph of subgraphs.values()) {
    const anchor = anchorAt(subgraph.anchor) || where.get(subgraph.anchor);
    if (!anchor) continue;
    const xs = [...subgraph.versions.keys()].map((_, i) => anchor.x + (i + 1) * dx);
    const span = [anchor.x, xs.at(-1) ?? anchor.x];
    let lane = anchor.lane == null ? 0 : anchor.lane + 1;
    while ((taken[lane] || []).some(([a, b]) => a <= span[1] + dx / 2 && span[0] <= b + dx / 2)) {
      lane++;
    }
    (taken[lane] ||= []).push(span);
    [...subgraph.versions.keys()].forEach((id, i) => where.set(id, { x: xs[i], lane }));
    placed.push({ subgraph, lane, anchor, xs });
  }
  return { placed, lanes: taken.length };
}
