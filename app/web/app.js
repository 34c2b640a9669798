// The page: threads on the left, one or two chats in the middle, the run view on the right.
// The parts talk over one event bus (the chats announce runs and stream events, the run view
// and the thread list listen), so neither knows the other's insides.

import * as api from "./api.js";
import { ASSISTANT, ChatPanel } from "./chat.js";
import { clip, h, textOf } from "./dom.js";
import { RunView } from "./runview.js";

const COLORS = { A: "#2563eb", B: "#d9480f" };
const LAYOUT_KEY = "threadline.panels";

const bus = new EventTarget();
const panels = {
  A: new ChatPanel({ slot: "A", color: COLORS.A, bus }),
  B: new ChatPanel({ slot: "B", color: COLORS.B, bus }),
};
let focused = panels.A;
let split = false;

const chats = document.getElementById("chats");
const threadList = document.getElementById("thread-list");
const splitButton = document.getElementById("split");
const serverInfo = document.getElementById("server-info");
const runView = new RunView(document.getElementById("runview"), bus);

/** The panel that a click in the thread list or "New chat" acts on. */
function focus(panel) {
  focused = panel;
  for (const p of Object.values(panels)) p.el.classList.toggle("focused", p === panel && split);
  drawThreads();
}

function saveLayout() {
  const layout = { split, A: panels.A.threadId, B: panels.B.threadId };
  sessionStorage.setItem(LAYOUT_KEY, JSON.stringify(layout));
}

/** Show the second chat beside the first, or hide it (its thread leaves the run view). */
async function setSplit(on) {
  split = on;
  chats.classList.toggle("split", on);
  splitButton.textContent = on ? "Close chat B" : "Chat B beside";
  splitButton.setAttribute("aria-pressed", String(on));
  if (on) {
    chats.append(panels.B.el);
    focus(panels.B);
    if (!panels.B.threadId) panels.B.announce();
  } else {
    panels.B.el.remove();
    await panels.B.open(null);
    focus(panels.A);
  }
  saveLayout();
}

// ---- the thread list ------------------------------------------------------------------

let threads = [];

async function loadThreads() {
  try {
    threads = await api.post("/threads/search", {
      limit: 50,
      sort_by: "updated_at",
      sort_order: "desc",
      select: ["thread_id", "status", "updated_at", "values"],
    });
    serverInfo.dataset.kind = "";
  } catch (error) {
    threads = [];
    const hint = error.status === 401 || error.status === 403 ? " (set the API key below)" : "";
    serverInfo.textContent = `${error.message}${hint}`;
    serverInfo.dataset.kind = "error";
  }
  drawThreads();
}

/** The first user message; a thread's values are saved when a run ends, so a first turn
 * still running is named by the panel showing it. */
function threadTitle(thread, panel) {
  const first = (thread.values?.messages || []).find((m) => m.type === "human");
  if (first) return clip(textOf(first.content), 38);
  const shown = panel?.titleText();
  return shown && shown !== "New chat" ? clip(shown, 38) : "(empty)";
}

function drawThreads() {
  const shownIn = new Map();
  for (const p of Object.values(panels)) {
    if (p.threadId && (p === panels.A || split)) shownIn.set(p.threadId, p);
  }
  threadList.replaceChildren(
    ...threads.map((thread) => {
      const panel = shownIn.get(thread.thread_id);
      return h(
        "li",
        {},
        h(
          "button",
          {
            type: "button",
            class: `thread${panel ? " open" : ""}`,
            dataset: { threadId: thread.thread_id, status: thread.status },
            style: panel ? `--thread: ${panel.color}` : null,
            onclick: () => openThread(thread.thread_id),
          },
          panel ? h("span", { class: "slot" }, panel.slot) : null,
          h("span", { class: "thread-title" }, threadTitle(thread, panel)),
          h("span", { class: "dot", title: thread.status }),
        ),
      );
    }),
  );
  if (!threads.length) threadList.append(h("li", { class: "hint" }, "No chats yet."));
}

async function openThread(threadId) {
  await focused.open(threadId);
  saveLayout();
  drawThreads();
}

// ---- wiring ---------------------------------------------------------------------------

function setUpSidebar() {
  document.getElementById("new-chat").addEventListener("click", async () => {
    await focused.open(null);
    saveLayout();
    drawThreads();
    focused.input.focus();
  });
  splitButton.addEventListener("click", () => setUpSplitToggle());
  const key = document.getElementById("api-key");
  key.value = api.apiKey();
  key.addEventListener("change", () => {
    api.setApiKey(key.value.trim());
    start();
  });
}

function setUpSplitToggle() {
  setSplit(!split);
}

// A panel becomes the focused one when the user works in it.
for (const panel of Object.values(panels)) {
  panel.el.addEventListener("focusin", () => focused !== panel && focus(panel));
  panel.el.addEventListener("pointerdown", () => focused !== panel && focus(panel));
}
bus.addEventListener("panel", () => {
  saveLayout();
  loadThreads();
});
bus.addEventListener("run-end", () => loadThreads());
bus.addEventListener("run-open", () => loadThreads());

async function start() {
  try {
    const info = await api.get("/info");
    serverInfo.textContent = `Threadline ${info.version || ""} · assistant “${ASSISTANT}”`;
  } catch (error) {
    serverInfo.textContent = error.message;
  }
  runView.loadGraph(ASSISTANT);
  await loadThreads();
}

async function restore() {
  chats.append(panels.A.el);
  const layout = JSON.parse(sessionStorage.getItem(LAYOUT_KEY) || "{}");
  if (layout.split) await setSplit(true);
  await Promise.all([
    panels.A.open(layout.A || null),
    layout.split ? panels.B.open(layout.B || null) : null,
  ]);
  focus(panels.A);
}

setUpSidebar();
start().then(restore);
window.threadline = { panels, runView, bus }; // for the console and the end-to-end test
