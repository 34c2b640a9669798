// The run view: how the server drives the graph, live, for every thread on screen.
//   graph         the assistant's nodes and edges; the node each open run is at lights up
//   calls         one bar per run (one invoke per turn): its arguments, the steps it ran,
//                 the version saved after each, and why it returned
//   checkpointer  one row of versions per thread, each linked to its parent; other
//                 branches above the row, the versions of subgraphs below the version
//                 whose task ran them; a click opens the version's state

import * as api from "./api.js";
import { clip, h, s, shortId, textOf } from "./dom.js";
import {
  layoutVersions,
  loadSubgraphs,
  mergeVersions,
  nextLabel,
  placeSubgraphs,
  unique,
  versionOf,
} from "./versions.js";

const HISTORY_LIMIT = 1000;
const RUNS_LIMIT = 100;
const VERSION_DX = 60;
const LANE_DY = 40;
const SUB_DX = 44; // between two versions of a subgraph
const SUB_DY = 46; // between two rows of subgraph versions
const HISTORY_FIELDS = [
  "checkpoint",
  "parent_checkpoint",
  "metadata",
  "next",
  "tasks",
  "created_at",
];

/** Everything the view knows about one thread on screen. */
class Track {
  constructor(threadId, slot, color) {
    Object.assign(this, { threadId, slot, color });
    this.versions = new Map(); // checkpoint id -> version (see versionOf)
    this.subgraphs = new Map(); // namespace -> its versions (see loadSubgraphs)
    this.runs = new Map(); // run id -> call (see callOf), in creation order
    this.running = new Map(); // task id -> node name, for the open run
    this.shown = null; // checkpoint id on screen in the chat
    this.title = "";
    this.position = { nodes: [], kind: "idle" }; // where the graph shows the run
    this.loads = 0; // reads from the server so far; only the latest one is applied
  }

  get head() {
    let head = null;
    for (const id of this.versions.keys()) if (!head || id > head) head = id;
    return head;
  }

  moveTo(nodes, kind) {
    this.position = { nodes, kind };
  }
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
    bus.addEventListener("title", (e) => this.onTitle(e.detail));
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
        // Focusable: it scrolls when the graph is wider than the column (keyboard users).
        h(
          "section",
          { class: "rv-graph", tabindex: 0, "aria-labelledby": "rv-graph-title" },
          h("h2", { id: "rv-graph-title" }, "Graph"),
          this.graphSvg,
          this.legend,
        ),
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
    this.assistantId = assistantId;
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

  /** The chat's title (its name, or its first message) heads its calls and versions. */
  onTitle({ slot, text }) {
    const track = this.tracks.get(slot);
    if (!track) return;
    track.title = clip(text, 40);
    this.drawCalls();
    this.drawRows();
  }

  /** The server answers again: read every thread on screen anew. */
  recover() {
    if (!this.graph && this.assistantId) this.loadGraph(this.assistantId);
    for (const track of this.tracks.values()) this.load(track);
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
    this.highlight();
  }

  onStream({ threadId, runId, event, data }) {
    for (const track of this.tracksOf(threadId)) {
      if (event === "checkpoints") this.onCheckpoint(track, data);
      else if (event === "tasks") this.onTask(track, data);
      else if (event === "error" && track.runs.has(runId)) track.runs.get(runId).error = data;
    }
    if (event === "checkpoints" || event === "tasks") {
      this.drawCalls();
      this.highlight();
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
      this.endPosition(track, track.runs.get(runId)?.reason);
      this.highlight();
    }
  }

  /** Where the highlight rests once a call has returned. */
  endPosition(track, reason) {
    const head = track.versions.get(track.head);
    if (reason === "END") {
      track.moveTo(["__end__"], "done");
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
        api.post(`/threads/${threadId}/history`, { limit: HISTORY_LIMIT, select: HISTORY_FIELDS }),
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
    const subgraphs = await loadSubgraphs([...track.versions.values()], (ns) =>
      api.post(`/threads/${threadId}/history`, {
        limit: HISTORY_LIMIT,
        select: HISTORY_FIELDS,
        checkpoint: { checkpoint_ns: ns },
      }),
    ).catch(() => track.subgraphs); // kept as they were
    if (stale()) return;
    track.subgraphs = subgraphs;
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
    if (track.position.kind === "idle") {
      const head = track.versions.get(track.head);
      if (head?.waiting) track.moveTo(unique(head.next), "waiting");
    }
    this.drawAll();
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
    let width = 60 + Math.max(...versions.map((v) => place.get(v.id).depth)) * VERSION_DX;
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
        return s("path", { d, class: `parent-link${place.get(v.id).lane ? " off" : ""}` });
      });
    const dots = versions.map((v) => {
      const classes = [];
      if (v.id === head) classes.push("head");
      if (place.get(v.id).lane) classes.push("off");
      if (v.id === leafId) classes.push("leaf");
      return this.versionDot(track, v, at(v), classes);
    });
    const subs = this.subgraphRows(
      track,
      (id) => track.versions.has(id) && at(track.versions.get(id)),
      top,
    );
    width = Math.max(width, subs.width);
    const height = top + 42 + subs.lanes * SUB_DY;
    return s(
      "svg",
      { class: "versions", width, height, viewBox: `0 0 ${width} ${height}` },
      ...bands,
      ...links,
      ...subs.items,
      ...dots,
    );
  }

  /** One version's dot, its step inside and what is due next below; a click opens it. */
  versionDot(track, v, { x, y }, classes, { ns = null, node = null } = {}) {
    classes.unshift("version");
    if (this.isSelected(track, v.id)) classes.push("selected");
    if (v.waiting) classes.push("waiting");
    const open = () => this.select({ slot: track.slot, id: v.id, ns });
    const where = node ? `${node} version` : "version";
    return s(
      "g",
      {
        class: classes.join(" "),
        "data-checkpoint": v.id,
        "data-run": v.runId || "",
        "data-step": v.step,
        "data-ns": ns,
        tabindex: 0,
        role: "button",
        "aria-label": `${where} at step ${v.step}, next ${nextLabel(v)}`,
        onclick: open,
        // As a button: Enter or Space (not scrolling the page).
        onkeydown: (e) => {
          if (e.key !== "Enter" && e.key !== " ") return;
          e.preventDefault();
          open();
        },
      },
      s(
        "title",
        {},
        `${ns ? `${ns}\n` : ""}${v.id}\nstep ${v.step} · ${v.source}\nnext: ${nextLabel(v)}`,
      ),
      s("circle", { cx: x, cy: y, r: ns ? 6.5 : 8 }),
      s("text", { x, y: y + 3, "text-anchor": "middle", class: "step" }, String(v.step ?? "")),
      s("text", { x, y: y + 20, "text-anchor": "middle", class: "due" }, nextLabel(v)),
    );
  }

  /**
   * The subgraphs' versions, a row each below the rows of versions, starting under the
   * version whose task ran the subgraph (`anchorAt(id)`: where that version is drawn).
   */
  subgraphRows(track, anchorAt, top) {
    const { placed, lanes } = placeSubgraphs(track.subgraphs, anchorAt, SUB_DX);
    const items = [];
    let width = 0;
    for (const { subgraph, lane, anchor, xs } of placed) {
      const rowY = (n) => top + 42 + SUB_DY / 2 + n * SUB_DY;
      const y = rowY(lane);
      const versions = [...subgraph.versions.values()];
      const points = versions.map((v, i) => ({ x: xs[i], y }));
      // From below the version that ran it: a dot of the rows, or of a subgraph's row.
      const from = anchor.lane == null ? anchor.y + 8 : rowY(anchor.lane) + 6.5;
      const path = [`M${anchor.x},${from}`, `L${anchor.x},${y}`];
      path.push(...points.map((p) => `L${p.x},${p.y}`));
      items.push(
        s("path", { d: path.join(" "), class: "parent-link sub" }),
        s("text", { x: anchor.x + 4, y: y - 10, class: "sub-label" }, subgraph.node),
        ...versions.map((v, i) =>
          this.versionDot(track, v, points[i], ["sub"], { ns: subgraph.ns, node: subgraph.node }),
        ),
      );
      width = Math.max(width, (xs.at(-1) ?? anchor.x) + 40);
    }
    return { items, lanes, width };
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
      state = selection.ns
        ? await api.post(`/threads/${track.threadId}/state/checkpoint`, {
            checkpoint: { checkpoint_id: selection.id, checkpoint_ns: selection.ns },
          })
        : await api.get(`/threads/${track.threadId}/state/${selection.id}`);
    } catch (error) {
      this.inspector.replaceChildren(h("p", { class: "problem" }, error.message));
      return;
    }
    if (this.selected !== selection) return;
    this.inspector.replaceChildren(...stateView(state, track));
    this.inspector.scrollIntoView({ block: "nearest" }); // below the rows on a phone
  }
}

// ---- layout helpers (pure functions) --------------------------------------------------

/** START and END for the graph's two ends, else the node's name. */
function nodeLabel(id) {
  return { __start__: "START", __end__: "END" }[id] || id;
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
    return `resume: ${clip(text, 200)}`;
  }
  if (kwargs.input == null) return "input: null";
  const messages = kwargs.input.messages;
  const last = Array.isArray(messages) ? messages.at(-1) : null;
  return last ? `“${clip(textOf(last.content), 200)}”` : clip(JSON.stringify(kwargs.input), 200);
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
    ...(state.checkpoint?.checkpoint_ns
      ? [field("subgraph", h("code", { class: "wrap" }, state.checkpoint.checkpoint_ns))]
      : []),
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

/** Scrolling text is focusable, so that it scrolls from the keyboard too. */
function json(value) {
  return h("pre", { class: "json", tabindex: 0 }, JSON.stringify(value, null, 2));
}
