// The run view: how the server drives the graph, live, for every thread on screen.
//   graph         the assistant's nodes and edges; the node each open run is at lights up
//   calls         one bar per run (one invoke per turn): its arguments, the steps it ran,
//                 the version saved after each, and why it returned
//   checkpointer  one row of versions per thread, each linked to its parent; other
//                 branches above the row; a click opens the version's state

import * as api from "./api.js";
import { clip, h, s, shortId, textOf } from "./dom.js";

const HISTORY_LIMIT = 1000;
const RUNS_LIMIT = 100;
// A run of the scripted model takes milliseconds: each position of the graph highlight is
// held at least this long, so a person can follow it. The calls and versions are not paced.
// When several positions queue up (a fast run), they pass quicker so the view catches up.
const HOLD_MS = 320;
const HOLD_MS_BEHIND = 120;
const VERSION_DX = 60;
const LANE_DY = 40;

/** Everything the view knows about one thread on screen. */
class Track {
  constructor(threadId, slot, color) {
    Object.assign(this, { threadId, slot, color });
    this.versions = new Map(); // checkpoint id -> version (see versionOf)
    this.runs = new Map(); // run id -> call (see callOf), in creation order
    this.running = new Map(); // task id -> node name, for the open run
    this.shown = null; // checkpoint id on screen in the chat
    this.title = "";
    this.positions = []; // graph positions waiting their turn (see HOLD_MS)
    this.position = { nodes: [], kind: "idle" };
    this.changedAt = 0;
    this.loads = 0; // reads from the server so far; only the latest one is applied
  }

  get head() {
    let head = null;
    for (const id of this.versions.keys()) if (!head || id > head) head = id;
    return head;
  }

  /** Queue a graph position; the ticker shows each for at least HOLD_MS. */
  moveTo(nodes, kind) {
    const last = this.positions.at(-1) || this.position;
    if (last.kind === kind && sameNodes(last.nodes, nodes)) return;
    this.positions.push({ nodes, kind });
  }
}

function sameNodes(a, b) {
  return a.length === b.length && a.every((n, i) => n === b[i]);
}

/** A version from a history item or a `checkpoints` stream event. */
function versionOf({ id, parent, metadata, next, tasks, createdAt }) {
  return {
    id,
    parent: parent || null,
    step: metadata?.step,
    source: metadata?.source,
    runId: metadata?.run_id || null,
    next: next || [],
    waiting: (tasks || []).some((t) => t.interrupts?.length),
    createdAt,
  };
}

/** History items as versions in id order, plus the live ones saved after the read. */
function mergeVersions(history, live) {
  const versions = new Map();
  for (const item of history) {
    const version = versionOf({
      id: item.checkpoint.checkpoint_id,
      parent: item.parent_checkpoint?.checkpoint_id,
      metadata: item.metadata,
      next: item.next,
      tasks: item.tasks,
      createdAt: item.created_at,
    });
    versions.set(version.id, version);
  }
  const newest = [...versions.keys()].reduce((a, b) => (a > b ? a : b), "");
  for (const version of live.values()) {
    if (version.id > newest) versions.set(version.id, version);
  }
  return new Map([...versions].sort(([a], [b]) => (a < b ? -1 : 1)));
}

/** A call (run) from the runs list, or from the request the chat just sent. */
function callOf(runId, kwargs, status = "running") {
  return { runId, kwargs: kwargs || {}, status, reason: null, error: null };
}

export class RunView {
  constructor(root, bus) {
    this.root = root;
    this.bus = bus;
    this.tracks = new Map(); // slot -> Track
    this.graph = null;
    this.selected = null; // {slot, id} of the version in the inspector
    this.build();
    bus.addEventListener("panel", (e) => this.onPanel(e.detail));
    bus.addEventListener("view", (e) => this.onView(e.detail));
    bus.addEventListener("run-open", (e) => this.onRunOpen(e.detail));
    bus.addEventListener("stream", (e) => this.onStream(e.detail));
    bus.addEventListener("run-end", (e) => this.onRunEnd(e.detail));
    setInterval(() => this.tick(), 100);
  }

  build() {
    this.graphSvg = s("svg", { class: "graph", role: "img", "aria-label": "The graph" });
    this.legend = h("div", { class: "legend" });
    this.calls = h("div", { class: "calls" });
    this.rows = h("div", { class: "rows" });
    this.inspector = h(
      "aside",
      { class: "inspector", "aria-label": "Version state" },
      h("p", { class: "hint" }, "Click a version to see its state."),
    );
    this.root.replaceChildren(
      h(
        "div",
        { class: "rv-top" },
        h("section", { class: "rv-graph" }, h("h2", {}, "Graph"), this.graphSvg, this.legend),
        h(
          "section",
          { class: "rv-calls" },
          h(
            "h2",
            {},
            "Calls ",
            h("small", {}, "one invoke per turn; it returns at END or an interrupt"),
          ),
          this.calls,
        ),
      ),
      h(
        "div",
        { class: "rv-bottom" },
        h(
          "section",
          { class: "rv-rows" },
          h("h2", {}, "Checkpointer ", h("small", {}, "a version after every step")),
          this.rows,
        ),
        this.inspector,
      ),
    );
  }

  // ---- the graph ----------------------------------------------------------------------

  async loadGraph(assistantId) {
    try {
      this.graph = await api.get(`/assistants/${assistantId}/graph`);
    } catch (error) {
      this.graphSvg.replaceChildren(s("text", { x: 10, y: 20 }, `No graph: ${error.message}`));
      return;
    }
    this.layout = layoutGraph(this.graph);
    this.drawGraph();
  }

  drawGraph() {
    const { nodes, width, height } = this.layout;
    const svg = this.graphSvg;
    svg.setAttribute("viewBox", `0 0 ${width} ${height}`);
    svg.setAttribute("width", width);
    svg.setAttribute("height", height);
    svg.replaceChildren(
      s(
        "defs",
        {},
        s(
          "marker",
          {
            id: "arrow",
            viewBox: "0 0 10 10",
            refX: 9,
            refY: 5,
            markerWidth: 7,
            markerHeight: 7,
            orient: "auto-start-reverse",
          },
          s("path", { d: "M0,0 L10,5 L0,10 z", class: "arrowhead" }),
        ),
      ),
      ...this.graph.edges.map((edge) =>
        s("path", {
          d: edgePath(edge, this.layout),
          class: `edge${edge.conditional ? " conditional" : ""}`,
          "marker-end": "url(#arrow)",
          "data-edge": `${edge.source}->${edge.target}`,
        }),
      ),
      ...[...nodes.values()].map((node) => this.nodeElement(node)),
    );
    this.highlight();
  }

  nodeElement(node) {
    const terminal = node.id === "__start__" || node.id === "__end__";
    const label = nodeLabel(node.id);
    return s(
      "g",
      { class: `node${terminal ? " terminal" : ""}`, "data-node": node.id },
      s("rect", {
        x: node.x - node.w / 2,
        y: node.y - node.h / 2,
        width: node.w,
        height: node.h,
        rx: terminal ? node.h / 2 : 7,
      }),
      s("text", { x: node.x, y: node.y + 4, "text-anchor": "middle" }, label),
      s("g", { class: "pips" }),
    );
  }

  /** Light the nodes each thread's run is at, in that thread's colour. */
  highlight() {
    if (!this.layout) return;
    for (const g of this.graphSvg.querySelectorAll(".node")) {
      const id = g.dataset.node;
      const here = [...this.tracks.values()].filter(
        (t) => t.position.kind !== "idle" && t.position.nodes.includes(id),
      );
      g.classList.remove("running", "waiting", "done", "error");
      g.style.removeProperty("--c");
      const pips = g.querySelector(".pips");
      pips.replaceChildren();
      if (!here.length) continue;
      g.classList.add(here[0].position.kind);
      g.style.setProperty("--c", here[0].color);
      const node = this.layout.nodes.get(id);
      here.forEach((track, i) => {
        const cx = node.x + node.w / 2 + 9 + i * 16;
        pips.append(
          s("circle", { cx, cy: node.y, r: 7, fill: track.color }),
          s("text", { x: cx, y: node.y + 3.5, "text-anchor": "middle" }, track.slot),
        );
      });
    }
    this.drawLegend();
  }

  drawLegend() {
    const words = {
      running: "running",
      waiting: "waiting at",
      done: "returned at",
      error: "failed at",
    };
    this.legend.replaceChildren(
      ...[...this.tracks.values()].map((track) => {
        const { nodes, kind } = track.position;
        const names = nodes.map(nodeLabel).join(", ");
        const where = kind === "idle" ? "no run open" : `${words[kind]} ${names}`;
        return h(
          "div",
          { class: "legend-item", dataset: { slot: track.slot, kind } },
          h("span", { class: "swatch", style: `background: ${track.color}` }, track.slot),
          h("span", {}, where),
        );
      }),
    );
  }

  /** Advance each thread's highlight, holding every position at least HOLD_MS. */
  tick() {
    const now = performance.now();
    let changed = false;
    for (const track of this.tracks.values()) {
      const hold = track.positions.length > 3 ? HOLD_MS_BEHIND : HOLD_MS;
      if (!track.positions.length || now - track.changedAt < hold) continue;
      track.position = track.positions.shift();
      track.changedAt = now;
      changed = true;
    }
    if (changed) this.highlight();
  }

  // ---- events from the chat panels ----------------------------------------------------

  async onPanel({ slot, threadId, color }) {
    if (!threadId) {
      this.tracks.delete(slot);
      this.drawAll();
      return;
    }
    const current = this.tracks.get(slot);
    if (current?.threadId === threadId) return;
    const track = new Track(threadId, slot, color);
    this.tracks.set(slot, track);
    if (this.selected?.slot === slot) this.select(null);
    this.drawAll();
    await this.load(track);
  }

  onView({ slot, threadId, checkpointId }) {
    const track = this.tracks.get(slot);
    if (!track || track.threadId !== threadId) return;
    track.shown = checkpointId;
    this.drawRows();
  }

  tracksOf(threadId) {
    return [...this.tracks.values()].filter((t) => t.threadId === threadId);
  }

  async onRunOpen({ threadId, runId, body }) {
    for (const track of this.tracksOf(threadId)) {
      if (!track.runs.has(runId)) track.runs.set(runId, callOf(runId, body));
      track.running.clear();
      // A new call starts: what is left of the previous one's replay is dropped.
      track.positions = [];
      track.moveTo(["__start__"], "running");
      if (!body) {
        // A rejoined run: its arguments come from the server.
        api
          .get(`/threads/${threadId}/runs/${runId}`)
          .then((run) => {
            const call = track.runs.get(runId);
            if (call) call.kwargs = run.kwargs || {};
            this.drawCalls();
          })
          .catch(() => {}); // the call stays listed without its arguments
      }
    }
    this.drawCalls();
  }

  onStream({ threadId, runId, event, data }) {
    for (const track of this.tracksOf(threadId)) {
      if (event === "checkpoints") this.onCheckpoint(track, data);
      else if (event === "tasks") this.onTask(track, data);
      else if (event === "error" && track.runs.has(runId)) track.runs.get(runId).error = data;
    }
    if (event === "checkpoints" || event === "tasks") {
      this.drawCalls();
      if (event === "checkpoints") this.drawRows();
    }
  }

  onCheckpoint(track, data) {
    const id = data?.config?.configurable?.checkpoint_id;
    if (!id) return;
    const version = versionOf({
      id,
      parent: data.parent_config?.configurable?.checkpoint_id,
      metadata: data.metadata,
      next: data.next,
      tasks: data.tasks,
    });
    track.versions.set(id, version);
    if (!track.title) track.title = titleOf(data.values);
  }

  /** A task starts (it has `input`) or ends (it has `result` or `error`). */
  onTask(track, data) {
    if (!data?.id) return;
    if ("input" in data || "triggers" in data) {
      track.running.set(data.id, data.name);
      track.moveTo([...new Set(track.running.values())], "running");
      return;
    }
    track.running.delete(data.id);
    if (data.interrupts?.length) track.moveTo([data.name], "waiting");
    else if (data.error) track.moveTo([data.name], "error");
  }

  async onRunEnd({ threadId, runId, error }) {
    for (const track of this.tracksOf(threadId)) {
      const call = track.runs.get(runId);
      if (call && error) call.error = error;
      track.running.clear();
      await this.load(track);
      const reason = track.runs.get(runId)?.reason;
      this.endPosition(track, reason);
    }
  }

  /** Where the highlight rests once a call has returned. */
  endPosition(track, reason) {
    const head = track.versions.get(track.head);
    if (reason === "END") {
      track.moveTo(["__end__"], "done");
      track.moveTo([], "idle");
    } else if (reason === "interrupt" && head) {
      track.moveTo(unique(head.next), "waiting");
    } else if (reason === "error" || reason === "step limit") {
      const last = track.position.nodes.length ? track.position.nodes : unique(head?.next || []);
      track.moveTo(last, "error");
    } else {
      track.moveTo([], "idle");
    }
  }

  // ---- loading a thread's versions and calls ------------------------------------------

  /**
   * Read a thread's versions and calls from the server. Events of an open run can arrive
   * while the reads are under way: what they added after the reads is kept.
   */
  async load(track) {
    const threadId = track.threadId;
    const seq = ++track.loads;
    let history;
    let runs;
    try {
      [history, runs] = await Promise.all([
        api.post(`/threads/${threadId}/history`, {
          limit: HISTORY_LIMIT,
          select: ["checkpoint", "parent_checkpoint", "metadata", "next", "tasks", "created_at"],
        }),
        api.get(`/threads/${threadId}/runs?limit=${RUNS_LIMIT}`),
      ]);
    } catch (error) {
      this.rows.replaceChildren(h("p", { class: "problem" }, error.message));
      return;
    }
    // A later load (or another thread in this slot) wins over this one.
    const stale = () => this.tracks.get(track.slot) !== track || track.loads !== seq;
    if (stale()) return;
    track.versions = mergeVersions(history, track.versions);
    const calls = new Map();
    for (const run of [...runs].reverse()) {
      const call = callOf(run.run_id, run.kwargs, run.status);
      call.error = track.runs.get(run.run_id)?.error || null;
      calls.set(run.run_id, call);
    }
    for (const [runId, call] of track.runs) {
      if (!calls.has(runId) && !call.reason) calls.set(runId, call); // opened after the read
    }
    await Promise.all([...calls.values()].map((call) => this.explain(track, call)));
    if (stale()) return;
    track.runs = calls;
    if (!track.title) track.title = await this.titleOfThread(threadId);
    if (track.position.kind === "idle" && !track.positions.length) {
      const head = track.versions.get(track.head);
      if (head?.waiting) track.moveTo(unique(head.next), "waiting");
    }
    this.drawAll();
  }

  async titleOfThread(threadId) {
    try {
      const thread = await api.get(`/threads/${threadId}`);
      return titleOf(thread.values);
    } catch {
      return "";
    }
  }

  /** Why a finished call returned: END, interrupt, error, step limit or cancelled. */
  async explain(track, call) {
    const status = call.status;
    if (status === "pending" || status === "running") call.reason = null;
    else if (status === "interrupted") call.reason = "cancelled";
    else if (status === "timeout") call.reason = "timeout";
    else if (status === "error") {
      if (!call.error) {
        // The error itself is in the run's final values.
        const result = await api
          .get(`/threads/${track.threadId}/runs/${call.runId}/join`)
          .catch(() => null);
        call.error = result?.__error__ || { error: "Error", message: "" };
      }
      call.reason = /recursion/i.test(call.error.error || "") ? "step limit" : "error";
    } else {
      const last = this.versionsOf(track, call.runId).at(-1);
      call.reason = last && last.next.length ? "interrupt" : "END";
    }
  }

  versionsOf(track, runId) {
    return [...track.versions.values()].filter((v) => v.runId === runId);
  }

  // ---- drawing the calls --------------------------------------------------------------

  drawAll() {
    this.drawCalls();
    this.drawRows();
    this.highlight();
  }

  drawCalls() {
    const atBottom = this.calls.scrollHeight - this.calls.scrollTop - this.calls.clientHeight < 30;
    this.calls.replaceChildren(
      ...[...this.tracks.values()].map((track) =>
        h(
          "div",
          {
            class: "track-calls",
            dataset: { slot: track.slot },
            style: `--thread: ${track.color}`,
          },
          this.trackHead(track),
          ...[...track.runs.values()].map((call, i) => this.callElement(track, call, i + 1)),
          track.runs.size ? null : h("p", { class: "hint" }, "No calls yet."),
        ),
      ),
    );
    if (!this.tracks.size) this.calls.append(h("p", { class: "hint" }, "Open a chat."));
    if (atBottom) this.calls.scrollTop = this.calls.scrollHeight;
  }

  trackHead(track) {
    return h(
      "div",
      { class: "track-head" },
      h("span", { class: "slot" }, track.slot),
      h("span", { class: "track-title" }, track.title || "thread"),
      h("code", { title: track.threadId }, shortId(track.threadId)),
    );
  }

  callElement(track, call, n) {
    const open = !call.reason;
    const steps = this.stepsOf(track, call);
    return h(
      "div",
      {
        class: `call ${open ? "open" : "closed"}`,
        dataset: { runId: call.runId, reason: call.reason || "" },
        onmouseenter: () => this.markRun(call.runId, true),
        onmouseleave: () => this.markRun(call.runId, false),
      },
      h(
        "div",
        { class: "call-head" },
        h("span", { class: "n" }, `#${n}`),
        h("span", { class: "kind" }, callKind(call.kwargs)),
        h("span", { class: "call-args" }, callArgs(call.kwargs)),
        h(
          "span",
          { class: "from", title: "the version it started from" },
          this.fromLabel(track, call),
        ),
      ),
      h(
        "div",
        { class: "steps" },
        ...steps,
        open
          ? h("span", { class: "reason open" }, "running…")
          : h(
              "span",
              {
                class: "reason",
                title: call.error ? `${call.error.error}: ${call.error.message}` : "",
              },
              `→ ${call.reason}`,
            ),
      ),
    );
  }

  /** "from …abcd": the version the call loaded (named in the request, else the head). */
  fromLabel(track, call) {
    const named = call.kwargs.checkpoint_id || call.kwargs.checkpoint?.checkpoint_id;
    if (named) return `from ${shortId(named)}`;
    const first = this.versionsOf(track, call.runId)[0];
    if (!first) return "from the head";
    return first.parent ? `from ${shortId(first.parent)} (head)` : "from nothing (new thread)";
  }

  /** The call's steps: the node(s) that ran, then the version saved after them. */
  stepsOf(track, call) {
    const items = [];
    for (const version of this.versionsOf(track, call.runId)) {
      const parent = track.versions.get(version.parent);
      // An input, a fork (the copy a replay starts from) or a state update ran no node.
      const ran = ["input", "fork", "update"].includes(version.source)
        ? [version.source]
        : unique(parent?.next || ["?"]);
      ran.forEach((name, i) => (ran[i] = nodeLabel(name)));
      items.push(
        h("span", { class: "ran" }, ran.join(" ∥ ")),
        h("button", {
          type: "button",
          class: `dot${this.isSelected(track, version.id) ? " selected" : ""}`,
          title: `version ${version.id} (step ${version.step})`,
          "aria-label": `version at step ${version.step}`,
          onclick: () => this.select({ slot: track.slot, id: version.id }),
        }),
      );
    }
    if (!call.reason && track.running.size) {
      const now = unique([...track.running.values()]).map(nodeLabel);
      items.push(h("span", { class: "ran now" }, now.join(" ∥ ")));
    }
    return items;
  }

  markRun(runId, on) {
    for (const el of this.rows.querySelectorAll(`[data-run="${runId}"]`)) {
      el.classList.toggle("hover", on);
    }
  }

  // ---- drawing the checkpointer rows --------------------------------------------------

  drawRows() {
    this.rows.replaceChildren(
      ...[...this.tracks.values()].map((track) => {
        const holder = h(
          "div",
          { class: "row-scroll", dataset: { slot: track.slot } },
          this.rowSvg(track),
        );
        this.keepInSight(track, holder);
        return h(
          "div",
          { class: "track-row", style: `--thread: ${track.color}` },
          this.trackHead(track),
          holder,
        );
      }),
    );
  }

  /**
   * Scroll a redrawn row so the newest version of the branch on screen is in sight when
   * versions were added or the branch changed; otherwise keep where the reader scrolled.
   * The position lives on the track: rows are redrawn faster than frames are painted.
   */
  keepInSight(track, holder) {
    const leaf = holder.querySelector(".version.leaf");
    const key = `${track.versions.size}:${leaf?.dataset.checkpoint}`;
    if (track.rowKey !== key) {
      track.rowKey = key;
      track.rowScroll = null; // follow the leaf
    }
    holder.addEventListener("scroll", () => {
      if (holder.isConnected) track.rowScroll = holder.scrollLeft;
    });
    requestAnimationFrame(() => {
      if (!holder.isConnected) return;
      if (track.rowScroll == null) {
        // The branch's newest version and the thread's newest (the head), when it is off it.
        const marks = holder.querySelectorAll(".version.leaf circle, .version.head circle");
        const x = Math.max(0, ...[...marks].map((c) => Number(c.getAttribute("cx"))));
        track.rowScroll = Math.max(0, x + 40 - holder.clientWidth);
      }
      holder.scrollLeft = track.rowScroll;
    });
  }

  rowSvg(track) {
    const versions = [...track.versions.values()];
    if (!versions.length) return h("p", { class: "hint" }, "No versions yet.");
    const { place, lanes, leafId } = layoutVersions(track);
    const top = 16 + lanes * LANE_DY;
    const at = (v) => ({
      x: 26 + place.get(v.id).depth * VERSION_DX,
      y: top - place.get(v.id).lane * LANE_DY,
    });
    const width = 60 + Math.max(...versions.map((v) => place.get(v.id).depth)) * VERSION_DX;
    const head = track.head;
    const bands = this.runBands(track, versions, place, at, top);
    const links = versions
      .filter((v) => track.versions.has(v.parent))
      .map((v) => {
        const a = at(track.versions.get(v.parent));
        const b = at(v);
        // Straight along a row; an S-curve up to a branch above it.
        const mid = VERSION_DX / 2;
        const d =
          a.y === b.y
            ? `M${a.x},${a.y} L${b.x},${b.y}`
            : `M${a.x},${a.y} C${a.x + mid},${a.y} ${b.x - mid},${b.y} ${b.x},${b.y}`;
        return s("path", { d, class: `link${place.get(v.id).lane ? " off" : ""}` });
      });
    const dots = versions.map((v) => {
      const { x, y } = at(v);
      const classes = ["version"];
      if (v.id === head) classes.push("head");
      if (place.get(v.id).lane) classes.push("off");
      if (this.isSelected(track, v.id)) classes.push("selected");
      if (v.waiting) classes.push("waiting");
      if (v.id === leafId) classes.push("leaf");
      return s(
        "g",
        {
          class: classes.join(" "),
          "data-checkpoint": v.id,
          "data-run": v.runId || "",
          "data-step": v.step,
          tabindex: 0,
          role: "button",
          "aria-label": `version at step ${v.step}, next ${nextLabel(v)}`,
          onclick: () => this.select({ slot: track.slot, id: v.id }),
          onkeydown: (e) => {
            if (e.key === "Enter") this.select({ slot: track.slot, id: v.id });
          },
        },
        s("title", {}, `${v.id}\nstep ${v.step} · ${v.source}\nnext: ${nextLabel(v)}`),
        s("circle", { cx: x, cy: y, r: 8 }),
        s("text", { x, y: y + 3.5, "text-anchor": "middle", class: "step" }, String(v.step ?? "")),
        s("text", { x, y: y + 22, "text-anchor": "middle", class: "due" }, nextLabel(v)),
      );
    });
    return s(
      "svg",
      { class: "versions", width, height: top + 42, viewBox: `0 0 ${width} ${top + 42}` },
      ...bands,
      ...links,
      ...dots,
    );
  }

  /** A faint band behind the versions each call saved on the main row, numbered. */
  runBands(track, versions, place, at, top) {
    const order = [...track.runs.keys()];
    const groups = new Map();
    for (const v of versions) {
      if (place.get(v.id).lane || !v.runId) continue;
      if (!groups.has(v.runId)) groups.set(v.runId, []);
      groups.get(v.runId).push(at(v).x);
    }
    return [...groups].map(([runId, xs]) => {
      const n = order.indexOf(runId) + 1;
      const x0 = Math.min(...xs) - 15;
      const x1 = Math.max(...xs) + 15;
      return s(
        "g",
        { class: `band${n % 2 ? "" : " even"}`, "data-run": runId },
        s("rect", { x: x0, y: top - 14, width: x1 - x0, height: 52, rx: 6 }),
        n ? s("text", { x: x0 + 4, y: top + 34, class: "band-label" }, `#${n}`) : null,
      );
    });
  }

  isSelected(track, id) {
    return this.selected?.slot === track.slot && this.selected.id === id;
  }

  // ---- the inspector ------------------------------------------------------------------

  async select(selection) {
    this.selected = selection;
    this.drawRows();
    this.drawCalls();
    if (!selection) {
      this.inspector.replaceChildren(
        h("p", { class: "hint" }, "Click a version to see its state."),
      );
      return;
    }
    const track = this.tracks.get(selection.slot);
    this.inspector.replaceChildren(h("p", { class: "hint" }, "Loading…"));
    let state;
    try {
      state = await api.get(`/threads/${track.threadId}/state/${selection.id}`);
    } catch (error) {
      this.inspector.replaceChildren(h("p", { class: "problem" }, error.message));
      return;
    }
    if (this.selected !== selection) return;
    this.inspector.replaceChildren(...stateView(state, track));
  }
}

// ---- layout helpers (pure functions) --------------------------------------------------

/** START and END for the graph's two ends, else the node's name. */
function nodeLabel(id) {
  return { __start__: "START", __end__: "END" }[id] || id;
}

function unique(names) {
  const counts = new Map();
  for (const name of names) counts.set(name, (counts.get(name) || 0) + 1);
  return [...counts].map(([name, n]) => (n > 1 ? `${name}×${n}` : name));
}

/** What is due next at a version, in a few characters. */
function nextLabel(version) {
  if (!version.next.length) return "END";
  return unique(version.next.map((n) => (n === "__start__" ? "input" : n))).join(",");
}

function titleOf(values) {
  const first = (values?.messages || []).find(
    (m) => (m.type || m.role) === "human" || m.role === "user",
  );
  return first ? clip(textOf(first.content), 40) : "";
}

function callKind(kwargs) {
  if (kwargs.command) return "resume";
  const fork = kwargs.checkpoint_id || kwargs.checkpoint?.checkpoint_id;
  if (kwargs.input == null) return fork ? "regenerate" : "continue";
  return fork ? "input (fork)" : "input";
}

function callArgs(kwargs) {
  if (kwargs.command) {
    const resume = kwargs.command.resume;
    const decisions = resume?.decisions;
    const text = Array.isArray(decisions)
      ? decisions.map((d) => d.type).join(", ")
      : JSON.stringify(resume);
    return `resume: ${clip(text, 50)}`;
  }
  if (kwargs.input == null) return "input: null";
  const messages = kwargs.input.messages;
  const last = Array.isArray(messages) ? messages.at(-1) : null;
  return last ? `“${clip(textOf(last.content), 44)}”` : clip(JSON.stringify(kwargs.input), 50);
}

/**
 * Place versions: depth (x) from the root; lane 0 is the branch on screen (its ancestors,
 * then the newest child onwards); every other branch gets the lowest lane above it that is
 * free over its span.
 */
function layoutVersions(track) {
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

/**
 * Layered layout: rank by the longest path from START over forward edges (back edges,
 * found by a depth-first search, are drawn as curves on the left).
 */
function layoutGraph(graph) {
  const out = new Map(graph.nodes.map((n) => [n.id, []]));
  for (const e of graph.edges) out.get(e.source)?.push(e.target);
  const back = new Set();
  const state = new Map();
  const visit = (id) => {
    state.set(id, "open");
    for (const next of out.get(id) || []) {
      if (state.get(next) === "open") back.add(`${id}->${next}`);
      else if (!state.has(next)) visit(next);
    }
    state.set(id, "done");
  };
  const start = graph.nodes.find((n) => n.id === "__start__") || graph.nodes[0];
  if (start) visit(start.id);
  for (const n of graph.nodes) if (!state.has(n.id)) visit(n.id);
  const rank = new Map(graph.nodes.map((n) => [n.id, 0]));
  for (let i = 0; i < graph.nodes.length; i++) {
    for (const e of graph.edges) {
      if (back.has(`${e.source}->${e.target}`)) continue;
      rank.set(e.target, Math.max(rank.get(e.target), rank.get(e.source) + 1));
    }
  }
  const ranks = [];
  for (const n of graph.nodes) (ranks[rank.get(n.id)] ||= []).push(n.id);
  const widest = Math.max(...ranks.map((r) => r?.length || 0));
  const colW = 120;
  const rowH = 62;
  const left = 70; // room for back edges
  const width = left + widest * colW + 30;
  const nodes = new Map();
  ranks.forEach((ids, r) => {
    (ids || []).forEach((id, i) => {
      const x = left + (widest * colW) / 2 + (i - (ids.length - 1) / 2) * colW;
      const terminal = id === "__start__" || id === "__end__";
      nodes.set(id, { id, x, y: 26 + r * rowH, w: terminal ? 64 : 96, h: 28, rank: r });
    });
  });
  return { nodes, back, width, height: 26 + (ranks.length - 1) * rowH + 30 };
}

function edgePath(edge, layout) {
  const a = layout.nodes.get(edge.source);
  const b = layout.nodes.get(edge.target);
  if (!a || !b) return "";
  if (layout.back.has(`${edge.source}->${edge.target}`)) {
    // Out of the left side, up, and into the target's left side.
    const span = Math.abs(a.rank - b.rank);
    const x0 = a.x - a.w / 2;
    const x1 = b.x - b.w / 2;
    const bend = Math.min(x0, x1) - 22 - 14 * span;
    return `M${x0},${a.y} C${bend},${a.y} ${bend},${b.y} ${x1 - 2},${b.y}`;
  }
  const y0 = a.y + a.h / 2;
  const y1 = b.y - b.h / 2 - 2;
  const mid = (y0 + y1) / 2;
  return `M${a.x},${y0} C${a.x},${mid} ${b.x},${mid} ${b.x},${y1}`;
}

// ---- the state of one version ---------------------------------------------------------

function stateView(state, track) {
  const id = state.checkpoint?.checkpoint_id;
  const meta = state.metadata || {};
  const messages = state.values?.messages || [];
  return [
    h(
      "header",
      { class: "inspector-head" },
      h("span", { class: "slot", style: `background: ${track.color}` }, track.slot),
      h("b", {}, `Version ${shortId(id)}`),
      h("span", {}, ` step ${meta.step} · ${meta.source}`),
    ),
    field("checkpoint", h("code", { class: "wrap" }, id || "—")),
    field("parent", h("code", { class: "wrap" }, state.parent_checkpoint?.checkpoint_id || "none")),
    field(
      "next",
      state.next.length
        ? state.next.map((n) => h("span", { class: "chip" }, n))
        : h("span", { class: "chip end" }, "nothing: the graph is done (END)"),
    ),
    field(
      "tasks",
      state.tasks.length
        ? h(
            "ul",
            { class: "tasks" },
            state.tasks.map((t) =>
              h(
                "li",
                {},
                h("b", {}, t.name),
                ` ${shortId(t.id)}`,
                t.interrupts?.length ? h("span", { class: "chip waiting" }, "interrupt") : null,
                t.error ? h("span", { class: "chip error" }, t.error) : null,
                t.result ? h("span", { class: "chip" }, "finished") : null,
              ),
            ),
          )
        : "none",
    ),
    field("interrupts", state.interrupts.length ? json(state.interrupts) : "none"),
    field(
      "values",
      h(
        "ol",
        { class: "value-messages" },
        messages.map((m) =>
          h(
            "li",
            {},
            h("b", {}, `${m.type}: `),
            clip(textOf(m.content) || (m.tool_calls || []).map((c) => `${c.name}()`).join(" "), 70),
          ),
        ),
      ),
      h("details", {}, h("summary", {}, "raw values"), json(state.values)),
    ),
    field("metadata", json(meta)),
    field("created", state.created_at || "—"),
  ];
}

function field(name, ...content) {
  return h(
    "div",
    { class: "field", dataset: { field: name } },
    h("h3", {}, name),
    h("div", {}, ...content),
  );
}

function json(value) {
  return h("pre", { class: "json" }, JSON.stringify(value, null, 2));
}
