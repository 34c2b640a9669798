// The page: the chat list, one or two chats, and the run view. The parts talk over one
// event bus (the chats announce runs and stream events; the run view, the chat list, the
// address bar and the tab title listen), so that none knows another's insides.

import * as api from "./api.js";
import { ASSISTANT, ChatPanel } from "./chat.js";
import { connection } from "./connection.js";
import { h } from "./dom.js";
import { Layout } from "./layout.js";
import { formatRoute, parseRoute } from "./route.js";
import { RunView } from "./runview.js";
import { setUpTheme } from "./theme.js";
import { ThreadList } from "./threads.js";

const COLORS = { A: "#2563eb", B: "#c2410c" };
const LAYOUT_KEY = "threadline.panels";

const bus = new EventTarget();
const panels = {
  A: new ChatPanel({ slot: "A", color: COLORS.A, bus }),
  B: new ChatPanel({ slot: "B", color: COLORS.B, bus }),
};
let focused = panels.A;
let split = false;
let addressShown = location.hash; // what the page last put in, or found in, the address bar

const chats = document.getElementById("chats");
const splitButton = document.getElementById("split");
const serverInfo = document.getElementById("server-info");
const layout = new Layout();
const runView = new RunView(document.getElementById("runview"), bus);
const threadList = new ThreadList(
  {
    list: document.getElementById("thread-list"),
    search: document.getElementById("thread-search"),
    info: serverInfo,
    found: document.getElementById("search-found"),
  },
  {
    panelOf: (threadId) => shownPanels().find((p) => p.threadId === threadId),
    onOpen: (threadId) => openThread(threadId),
    onChange: (threadId, thread) => {
      for (const panel of shownPanels().filter((p) => p.threadId === threadId)) {
        if (thread) panel.rename(thread.metadata?.title);
        else panel.open(null);
      }
    },
  },
);

function shownPanels() {
  return split ? [panels.A, panels.B] : [panels.A];
}

/** The panel that a click in the chat list or "New chat" acts on; the address and the
 * tab title are its. */
function focus(panel) {
  focused = panel;
  for (const p of Object.values(panels)) p.el.classList.toggle("focused", p === panel && split);
  showAddress(false);
  threadList.draw();
}

function saveLayout() {
  const saved = { split, A: panels.A.threadId, B: panels.B.threadId };
  sessionStorage.setItem(LAYOUT_KEY, JSON.stringify(saved));
}

/** Show the second chat beside the first, or hide it (its thread leaves the run view). */
async function setSplit(on) {
  split = on;
  chats.classList.toggle("split", on);
  layout.setSplit(on);
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

async function openThread(threadId, view = null) {
  layout.chatPicked();
  await focused.open(threadId, view);
  saveLayout();
  threadList.draw();
}

// ---- the address and the tab title ----------------------------------------------------

/** Put the focused chat in the address bar (a new history entry when `push`) and its
 * title in the tab. */
function showAddress(push) {
  const address = formatRoute(focused.threadId, focused.view);
  // The reader went to another address and its hashchange is still to come: that address
  // wins, not the one of the chat it is about to replace.
  const navigated = location.hash !== addressShown;
  if (!navigated && location.hash !== address && !(address === "#/" && !location.hash)) {
    if (push) history.pushState(null, "", address);
    else history.replaceState(null, "", address);
    addressShown = location.hash;
  }
  const title = focused.titleText();
  document.title =
    focused.threadId && title !== "New chat" ? `${title} · Threadline` : "Threadline";
}

window.addEventListener("hashchange", () => {
  addressShown = location.hash;
  const route = parseRoute(location.hash);
  const threadId = route?.threadId || null;
  const view = route?.view || null;
  if (threadId !== focused.threadId || view !== focused.view) openThread(threadId, view);
});

// ---- the connection banner ------------------------------------------------------------

const banner = document.getElementById("banner");
const countdown = h("span", { class: "countdown", "aria-hidden": "true" });
banner.append(
  h("span", {}, "Can't reach the server, retrying…"),
  countdown,
  h("button", { type: "button", onclick: () => connection.retryNow() }, "Retry now"),
);

function drawCountdown() {
  const seconds = Math.ceil(((connection.nextTryAt || Date.now()) - Date.now()) / 1000);
  countdown.textContent = seconds > 0 ? `next try in ${seconds} s` : "trying…";
}

let ticker = null;
connection.addEventListener("change", () => {
  banner.hidden = connection.online;
  document.body.classList.toggle("offline", !connection.online);
  clearInterval(ticker);
  if (!connection.online) {
    drawCountdown();
    ticker = setInterval(drawCountdown, 1000);
  } else {
    if (started) threadList.load();
    else start();
    runView.recover();
    for (const panel of shownPanels()) panel.recover();
  }
});

// ---- wiring ---------------------------------------------------------------------------

// The skip link: the address is the router's, so it focuses the box itself.
document.getElementById("skip").addEventListener("click", (e) => {
  e.preventDefault();
  layout.chatPicked();
  focused.input.focus();
});

function setUpSidebar() {
  document.getElementById("new-chat").addEventListener("click", async () => {
    await openThread(null);
    focused.input.focus();
  });
  splitButton.addEventListener("click", () => setSplit(!split));
  const key = document.getElementById("api-key");
  key.value = api.apiKey();
  key.addEventListener("change", () => {
    api.setApiKey(key.value.trim());
    start();
  });
  setUpTheme(document.getElementById("theme"));
}

// A panel becomes the focused one when the user works in it.
for (const panel of Object.values(panels)) {
  panel.el.addEventListener("focusin", () => focused !== panel && focus(panel));
  panel.el.addEventListener("pointerdown", () => focused !== panel && focus(panel));
}
bus.addEventListener("panel", (e) => {
  saveLayout();
  threadList.load();
  if (e.detail.slot === focused.slot) showAddress(true);
});
bus.addEventListener("view", (e) => {
  if (e.detail.slot === focused.slot) showAddress(false);
  threadList.draw();
});
bus.addEventListener("title", (e) => {
  if (e.detail.slot === focused.slot) showAddress(false);
  threadList.draw();
});
bus.addEventListener("run-end", () => threadList.load());
bus.addEventListener("run-open", () => threadList.load());

let started = false;

async function start() {
  try {
    const info = await api.get("/info");
    serverInfo.textContent = `Threadline ${info.version || ""} · assistant “${ASSISTANT}”`;
    started = true;
  } catch (error) {
    serverInfo.textContent =
      error instanceof api.OfflineError ? "Can't reach the server." : error.message;
    return;
  }
  runView.loadGraph(ASSISTANT);
  await threadList.load();
  threadList.checkReminders();
}

/** The chats shown before a reload, or the one the address names. */
async function restore() {
  chats.append(panels.A.el);
  const saved = JSON.parse(sessionStorage.getItem(LAYOUT_KEY) || "{}");
  const route = parseRoute(location.hash);
  if (saved.split) await setSplit(true);
  await Promise.all([
    panels.A.open(route ? route.threadId : saved.A || null, route?.view || null),
    saved.split ? panels.B.open(saved.B || null) : null,
  ]);
  focus(panels.A);
}

setUpSidebar();
start().then(restore);
window.threadline = { panels, runView, bus }; // for the console and the end-to-end tests
