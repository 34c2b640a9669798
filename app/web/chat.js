// One chat panel: a thread's conversation, streamed turns, interrupt cards, regenerate,
// edit-and-resend and branch navigation. Everything goes through the public HTTP API. A
// stream cut by an outage is rejoined from its last event once the server answers again;
// a message that never reached the server stays on screen, marked, with Retry.

import * as api from "./api.js";
import { connection } from "./connection.js";
import { clip, formatArgs, h, perFrame, textOf } from "./dom.js";
import { InterruptCard, askedText } from "./interrupts.js";
import { renderMarkdown } from "./markdown.js";

export const ASSISTANT = "agent";
const STREAM_MODE = ["values", "messages-tuple", "updates", "checkpoints", "tasks"];
const HISTORY_LIMIT = 1000;

/** sessionStorage key of a thread's open run: survives a reload, not a new tab. */
const runKey = (threadId) => `threadline.run.${threadId}`;
/** sessionStorage key of the replies cut short on a thread (stopped, or failed): the server
 * keeps only what a step saved, not the text a cut step had streamed. */
const keptKey = (threadId) => `threadline.kept.${threadId}`;
// Within this many pixels of the bottom, the reader is "at the bottom": the chat follows.
const BOTTOM_PX = 40;
const COMPOSER_MAX_PX = 200;
const ARGS_SHOWN = 80;

/** A stable key per message: tool results streamed without an id get one in the state. */
function keyOf(message) {
  if (message.type === "tool" && message.tool_call_id) return `tool:${message.tool_call_id}`;
  return message.id || null;
}

/** "human" | "ai" | "tool" | "system", whatever the message's exact class name. */
function roleOf(message) {
  const type = (message.type || message.role || "").toLowerCase();
  if (type.startsWith("ai") || type === "assistant") return "ai";
  if (type.startsWith("human") || type === "user") return "human";
  if (type.startsWith("tool")) return "tool";
  return type || "system";
}

/** Streamed tool call pieces added up by index, as LangChain adds them: a call's name and
 * id come with its first piece, its arguments' JSON text in pieces after. */
function addCallChunks(sofar, pieces) {
  const merged = sofar.map((call) => ({ ...call }));
  for (const piece of pieces) {
    const same = merged.find((call) => call.index === piece.index);
    if (same) same.args += piece.args || "";
    else merged.push({ ...piece, args: piece.args || "" });
  }
  return merged;
}

/** A call being streamed; its arguments show once their JSON is complete. */
function callOf(chunk) {
  let args = {};
  try {
    args = JSON.parse(chunk.args || "{}");
  } catch {
    // Not complete yet.
  }
  return { name: chunk.name, id: chunk.id, args };
}

export class ChatPanel {
  /**
   * @param slot   "A" or "B": which panel this is (its colour in the run view)
   * @param bus    EventTarget shared with the run view and the thread list
   */
  constructor({ slot, color, bus }) {
    this.slot = slot;
    this.color = color;
    this.bus = bus;
    this.threadId = null;
    this.state = null; // the ThreadState on screen (the head, or a branch's leaf)
    this.messages = []; // messages of that state, then of the run's `values` events
    this.partials = new Map(); // key -> message being streamed, not yet in `messages`
    this.chunkCounts = new Map(); // message id -> chunks received (shown as data-chunks)
    this.interrupts = [];
    this.tree = null;
    this.view = null; // checkpoint id of the branch shown when it is not the head
    this.run = null; // {runId, lastEventId, controller} while a run is open
    this.watching = null; // AbortController of the thread's stream, listened to when idle
    this.unsent = null; // {request, options} of a run the server never got
    this.answered = []; // the interrupts a run being started answers
    this.name = null; // the thread's metadata title, when it was renamed
    this.threadStatus = null; // as the server last said
    this.editing = null; // key of the user message being edited
    this.notice = null;
    this.kept = []; // replies cut short: {anchor, message}, shown after the message `anchor`
    this.threadError = null; // {error, message} of the thread's last run, when it failed
    this.gone = false; // the chat asked for does not exist (deleted, or a stale link)
    this.following = true; // keep the newest message in sight (until the reader scrolls up)
    this.elements = new Map(); // key -> {el, signature, text, nav}
    this.reads = 0; // reads of the thread so far; only the latest one is shown
    this.render = perFrame(() => this.draw());
    this.build();
  }

  // ---- the panel's DOM skeleton -------------------------------------------------------

  build() {
    this.title = h("h2", { class: "panel-title" }, "New chat");
    this.status = h("span", { class: "panel-status", role: "status" });
    // Not a live region: it would read every streamed piece of a reply, and a whole chat's
    // history when one is opened. A run's replies are said once it ends (`spoken`).
    this.list = h("div", { class: "messages" });
    this.spoken = h("div", { class: "visually-hidden", "aria-live": "polite" });
    this.goneEl = h(
      "p",
      { class: "gone", role: "status", hidden: true },
      "This chat no longer exists. Send a message to start a new one.",
    );
    this.empty = h(
      "div",
      { class: "empty" },
      this.goneEl,
      h("p", {}, "Ask about the weather or set a reminder:"),
      ...["weather in Paris tomorrow", "remind me to call mom tomorrow at 9"].map((text) =>
        h("button", { class: "chip", type: "button", onclick: () => this.send(text) }, text),
      ),
    );
    this.cardHost = h("div", { class: "card-host" });
    this.noticeEl = h("div", { class: "notice", hidden: true });
    this.input = h("textarea", {
      // Panel A's box is the skip link's target.
      id: this.slot === "A" ? "message" : `message-${this.slot.toLowerCase()}`,
      rows: 2,
      placeholder: "Message the agent (Enter sends, Shift+Enter for a new line)",
      "aria-label": `Message to chat ${this.slot}`,
      onkeydown: (e) => {
        if (e.key === "Enter" && !e.shiftKey) {
          e.preventDefault();
          this.submit();
        }
      },
      oninput: () => this.fitInput(),
    });
    this.sendButton = h("button", { type: "submit", class: "primary" }, "Send");
    this.stopButton = h(
      "button",
      { type: "button", class: "danger", hidden: true, onclick: () => this.stop() },
      "Stop",
    );
    this.jumpButton = h(
      "button",
      { type: "button", class: "jump", hidden: true, onclick: () => this.jumpToLatest() },
      h("span", { "aria-hidden": "true" }, "↓ "),
      "Latest",
      h("span", { class: "visually-hidden" }, " messages"),
    );
    const form = h(
      "form",
      {
        class: "composer",
        onsubmit: (e) => {
          e.preventDefault();
          this.submit();
        },
      },
      this.input,
      this.sendButton,
      this.stopButton,
    );
    this.el = h(
      "section",
      {
        class: "panel",
        dataset: { slot: this.slot },
        style: `--thread: ${this.color}`,
        "aria-label": `Chat ${this.slot}`,
      },
      h(
        "header",
        { class: "panel-head" },
        h("span", { class: "slot", "aria-hidden": "true" }, this.slot),
        this.title,
        this.status,
      ),
      h(
        "div",
        { class: "scroll" },
        this.empty,
        this.list,
        this.cardHost,
        // The live region is the host, always there: a region that appears with its text
        // is not read by every screen reader.
        h("div", { role: "status" }, this.noticeEl),
        // Kept in sight at the bottom of the scrolled area while the reader is above it.
        h("div", { class: "jump-host" }, this.jumpButton),
      ),
      form,
      this.spoken,
    );
    this.scroller = this.el.querySelector(".scroll");
    this.lastScrollTop = 0;
    this.scroller.addEventListener("scroll", () => this.onScroll(), { passive: true });
    // The reader's intent to go up is known before the scroll happens: a smooth scroll
    // takes a few frames, and a frame that scrolled to the end meanwhile would undo it.
    const listen = (name, handler) =>
      this.scroller.addEventListener(name, handler, { passive: true });
    let touchY = 0;
    listen("wheel", (e) => e.deltaY < 0 && this.unfollow());
    listen("touchstart", (e) => (touchY = e.touches[0].clientY));
    listen("touchmove", (e) => e.touches[0].clientY > touchY && this.unfollow());
    listen("keydown", (e) => ["ArrowUp", "PageUp", "Home"].includes(e.key) && this.unfollow());
  }

  /** The reader scrolled: moving up stops following the conversation, coming back down
   * to the bottom follows it again. Our own scrolls only ever move down. */
  onScroll() {
    const top = this.scroller.scrollTop;
    if (top < this.lastScrollTop - 1) this.following = false;
    else if (this.atBottom()) this.following = true;
    this.lastScrollTop = top;
    this.jumpButton.hidden = this.following || this.atBottom();
  }

  unfollow() {
    if (this.scroller.scrollHeight > this.scroller.clientHeight) this.following = false;
  }

  atBottom() {
    const { scrollHeight, scrollTop, clientHeight } = this.scroller;
    return scrollHeight - scrollTop - clientHeight < BOTTOM_PX;
  }

  /** Scroll to the newest message and follow the conversation again. */
  jumpToLatest() {
    this.following = true;
    this.jumpButton.hidden = true;
    this.scrollToEnd();
  }

  scrollToEnd() {
    this.scroller.scrollTop = this.scroller.scrollHeight;
    this.lastScrollTop = this.scroller.scrollTop;
  }

  /** The composer grows with what is typed, up to a limit (then it scrolls). */
  fitInput() {
    this.input.style.height = "auto";
    const height = Math.min(this.input.scrollHeight + 2, COMPOSER_MAX_PX);
    this.input.style.height = `${height}px`;
  }

  // ---- opening a thread ---------------------------------------------------------------

  /** Show a thread (null: a new chat, created on the first message), at the head or at
   * `view`, the newest version of another branch. */
  async open(threadId, view = null) {
    this.run?.controller.abort(); // stop reading; the run itself goes on (on_disconnect)
    this.run = null;
    this.unwatch();
    Object.assign(this, { threadId, view, state: null, tree: null, editing: null });
    Object.assign(this, { unsent: null, name: null, threadStatus: null, threadError: null });
    Object.assign(this, { gone: false, following: true });
    this.kept = threadId ? readKept(threadId) : [];
    this.messages = [];
    this.partials.clear();
    this.interrupts = [];
    this.setNotice(null);
    this.setStatus(null);
    this.spoken.replaceChildren();
    this.announce(); // first: the address gets a new history entry
    this.setTitle(this.titleText());
    if (threadId) await this.load();
    this.render();
  }

  /** Read the thread and rejoin its open run; what cannot be read is said in the chat. */
  async load() {
    try {
      await this.refresh();
      await this.rejoin();
      this.watch();
    } catch (error) {
      if (error instanceof api.ApiError && error.status === 404 && this.view) {
        this.view = null; // a link to a branch that is gone: the head instead
        return this.load();
      }
      if (error instanceof api.ApiError && error.status === 404) {
        this.lost();
        return;
      }
      const why = error instanceof api.OfflineError ? "can't reach the server" : error.message;
      this.setNotice(`Could not open the chat: ${why}`, "error");
    }
  }

  /** The server answers again: read what changed meanwhile (an open run rejoins itself;
   * a message not sent stays as it is, for Retry). */
  async recover() {
    if (this.unsent) {
      this.setNotice(`${this.unsentWhat()}.`, "error", { retry: true });
      return;
    }
    if (this.run || !this.threadId) return;
    this.setNotice(null);
    await this.load();
  }

  /** The chat does not exist (any more): say so, and let the next message start a new
   * one rather than be sent to a thread that is gone. */
  lost() {
    this.run?.controller.abort();
    this.run = null;
    this.unwatch();
    sessionStorage.removeItem(keptKey(this.threadId));
    Object.assign(this, { threadId: null, view: null, state: null, tree: null, gone: true });
    Object.assign(this, { name: null, threadStatus: null, threadError: null, kept: [] });
    this.messages = [];
    this.partials.clear();
    this.interrupts = [];
    this.setBusy(false);
    this.setStatus(null);
    this.setNotice(null);
    this.setTitle(this.titleText());
    this.render();
  }

  /** Tell the rest of the page which thread this panel shows. */
  announce() {
    const detail = { slot: this.slot, threadId: this.threadId, color: this.color };
    this.bus.dispatchEvent(new CustomEvent("panel", { detail }));
  }

  /** Read the shown version (the head, or the branch picked) and the conversation tree. */
  async refresh() {
    const threadId = this.threadId;
    const read = ++this.reads;
    const statePath = this.view
      ? `/threads/${threadId}/state/${this.view}`
      : `/threads/${threadId}/state`;
    const [state, tree, thread] = await Promise.all([
      api.get(statePath),
      api.get(`/threads/${threadId}/tree`),
      api.get(`/threads/${threadId}`),
    ]);
    if (read !== this.reads) return; // another thread or branch was read meanwhile
    this.state = state;
    this.tree = tree;
    this.messages = state.values?.messages || [];
    this.partials.clear();
    this.interrupts = state.interrupts || [];
    this.name = thread.metadata?.title || null;
    this.threadStatus = thread.status;
    this.threadError = thread.status === "error" ? thread.error || {} : null;
    this.setTitle(this.titleText());
    this.setStatus(shownStatus(thread.status, this.interrupts));
    const shown = state.checkpoint?.checkpoint_id || null;
    this.bus.dispatchEvent(
      new CustomEvent("view", { detail: { threadId, checkpointId: shown, slot: this.slot } }),
    );
    this.render();
  }

  /** The chat's name, else its first message on the branch shown. */
  titleText() {
    if (this.name) return this.name;
    const first = this.visibleMessages().find((m) => roleOf(m) === "human");
    return first ? clip(textOf(first.content), 48) : "New chat";
  }

  setTitle(text) {
    if (this.title.textContent === text) return;
    this.title.textContent = text;
    this.bus.dispatchEvent(new CustomEvent("title", { detail: { slot: this.slot, text } }));
  }

  /** The chat was renamed (null: the name was cleared) in the chat list. */
  rename(name) {
    this.name = name || null;
    this.setTitle(this.titleText());
  }

  setStatus(status) {
    if (this.status.textContent === (status || "")) return; // a live region: said once
    this.status.textContent = status || "";
    this.status.dataset.status = status || "";
  }

  /** After a reload: reattach to a run that is still going, from where we left off. */
  async rejoin() {
    const saved = JSON.parse(sessionStorage.getItem(runKey(this.threadId)) || "null");
    let runId = saved?.runId;
    let lastEventId = saved?.lastEventId ?? null;
    if (runId) {
      const run = await api.get(`/threads/${this.threadId}/runs/${runId}`).catch(() => null);
      if (!run || !["pending", "running"].includes(run.status)) runId = null;
    }
    if (!runId) {
      // Not ours (another tab, curl): follow it from its first event.
      const [running] = await api.get(`/threads/${this.threadId}/runs?status=running&limit=1`);
      const [pending] = running
        ? [null]
        : await api.get(`/threads/${this.threadId}/runs?status=pending&limit=1`);
      runId = (running || pending)?.run_id;
      lastEventId = null;
    }
    if (!runId) {
      sessionStorage.removeItem(runKey(this.threadId));
      if (saved?.runId || this.status.dataset.status === "busy") {
        // The run ended while the page loaded, after the state above was read.
        await this.refresh();
        const detail = { threadId: this.threadId, runId: saved?.runId };
        this.bus.dispatchEvent(new CustomEvent("run-end", { detail }));
      }
      return;
    }
    // Restore the reply that was half streamed when the page went away: the events
    // before lastEventId are not sent again.
    if (saved?.runId === runId) {
      for (const [key, message] of saved.partials || []) this.partials.set(key, message);
    }
    this.follow(runId, lastEventId, null, (handlers) =>
      api.joinStream(this.threadId, runId, lastEventId, handlers),
    );
  }

  // ---- runs ---------------------------------------------------------------------------

  submit() {
    const text = this.input.value.trim();
    if (!text || this.run) return;
    if (this.interrupts.length) {
      // The graph waits for that answer: a message now would not be read as one.
      this.setNotice("Answer the question above first.", "info");
      this.cardHost.querySelector("textarea, input, button")?.focus();
      return;
    }
    this.input.value = "";
    this.fitInput();
    this.send(text);
  }

  /** A new turn: the message as input, continuing the branch on screen. */
  send(text) {
    const input = { messages: [{ role: "user", content: text }] };
    return this.start({ input }, { shown: this.messages, pending: text });
  }

  /** Send again what the server never got. */
  retry() {
    const { request, options } = this.unsent;
    this.unsent = null;
    return this.start(request, options);
  }

  /**
   * Start a run and stream it. `shown` is what to display until the run's first values
   * (the conversation up to the fork point), `pending` an optimistic user message.
   */
  async start(request, options = {}) {
    if (this.run) return;
    const { shown, pending } = options;
    // On an older branch, the run must start from its leaf, not from the head.
    if (this.view && !("checkpoint_id" in request)) {
      request = { ...request, checkpoint_id: this.view };
    }
    this.unwatch(); // this run is followed as it starts, not found on the thread's stream
    this.setNotice(null);
    this.gone = false;
    this.jumpToLatest(); // a new turn: the reader wants to see it
    this.unsent = null;
    this.answered = this.interrupts; // shown again if the answer is not sent
    try {
      if (!this.threadId) {
        const thread = await api.post("/threads", { metadata: {} });
        this.threadId = thread.thread_id;
        this.announce();
      }
    } catch (error) {
      if (pending) this.partials.set("pending", { type: "human", content: pending, id: "pending" });
      this.notSent({ request, options }, error);
      return;
    }
    const body = {
      assistant_id: ASSISTANT,
      stream_mode: STREAM_MODE,
      stream_resumable: true,
      on_disconnect: "continue",
      ...request,
    };
    this.view = null;
    this.messages = shown ? [...shown] : this.messages;
    this.partials.clear();
    if (pending) {
      this.partials.set("pending", { type: "human", content: pending, id: "pending" });
    }
    this.interrupts = [];
    this.editing = null;
    this.render();
    this.follow(null, null, { request, options }, (handlers) =>
      api.streamRun(this.threadId, body, {
        ...handlers,
        onStart: (runId) => {
          this.run.runId = runId;
          this.save();
          this.bus.dispatchEvent(
            new CustomEvent("run-open", { detail: { threadId: this.threadId, runId, body } }),
          );
        },
      }),
    );
  }

  /**
   * Read a run's stream (new or rejoined) until the call returns. A stream that breaks or
   * ends while the run goes on (an outage, a server restart) is rejoined from its last
   * event once the server answers. `unsent` is the request of a new run, kept for Retry
   * if the server never got it.
   */
  async follow(runId, lastEventId, unsent, read) {
    const controller = new AbortController();
    const threadId = this.threadId;
    const before = new Set(this.withCuts(this.messages).map(keyOf)); // said already
    this.run = { runId, lastEventId, controller, error: null };
    this.setBusy(true);
    if (runId) {
      this.bus.dispatchEvent(new CustomEvent("run-open", { detail: { threadId, runId } }));
    }
    const handlers = { signal: controller.signal, onEvent: (frame) => this.onEvent(frame) };
    for (;;) {
      try {
        await read(handlers);
        if (!this.run.runId || (await this.runOver())) break;
      } catch (error) {
        if (controller.signal.aborted) return; // we switched threads: the run goes on
        if (!this.run.runId) {
          this.notSent(unsent, error);
          return;
        }
        if (!(error instanceof api.OfflineError)) {
          this.setNotice(error.message, "error");
          break;
        }
        this.setStatus("reconnecting…");
        await connection.whenOnline(controller.signal);
        if (controller.signal.aborted) return;
        this.setStatus("busy");
      }
      read = (h) => api.joinStream(threadId, this.run.runId, this.run.lastEventId, h);
    }
    if (this.threadId !== threadId || this.run?.controller !== controller) return;
    const finished = this.run;
    const partial = this.partialReply();
    this.run = null;
    sessionStorage.removeItem(runKey(threadId));
    try {
      await this.refresh();
      const kept = this.keepCut(finished, partial);
      if (finished.error && !kept) this.setNotice(finished.error, "error");
    } catch (error) {
      this.setNotice(error.message, "error");
    }
    // Send is back once the final state is in and the focus placed, not before: what the
    // reader (or a test) does next is not undone by them. (Unless a new run began.)
    if (!this.run) this.setBusy(false);
    this.bus.dispatchEvent(
      new CustomEvent("run-end", {
        detail: { threadId, runId: finished.runId, error: finished.errorEvent },
      }),
    );
    // The reader opened another chat meanwhile: what is on screen is not this run's.
    if (this.threadId !== threadId) return;
    this.drawCard();
    this.sayOutcome(before);
    // A question the agent asks takes the answer; otherwise the next message. Only after a
    // run sent from here, and when the reader is not at work elsewhere on the page.
    const active = document.activeElement;
    if (unsent && (active === document.body || this.el.contains(active))) {
      (this.cardHost.querySelector(".free textarea") || this.input).focus();
    }
    this.watch();
  }

  /** Say what the run brought, once it is over: its replies, whole, and the question it
   * asks. (Said as it streamed, a reply would be read again with every piece.) */
  sayOutcome(before) {
    const replies = this.visibleMessages().filter(
      (m) => roleOf(m) === "ai" && !before.has(keyOf(m)) && (textOf(m.content) || m.outcome),
    );
    for (const message of replies) {
      const words = [spokenText(textOf(message.content)), message.outcome && cutWhy(message)];
      this.say(`Assistant: ${words.filter(Boolean).join(" ")}`);
    }
    if (this.interrupts.length) this.say(askedText(this.interrupts));
  }

  /** Give a screen reader something to say: a line added to the polite live region (a
   * line removed is not read, so only the newest few stay). */
  say(text) {
    this.spoken.append(h("div", {}, text));
    while (this.spoken.childElementCount > 3) this.spoken.firstElementChild.remove();
  }

  /** The reply being streamed, when there is one with text. */
  partialReply() {
    const known = new Set(this.messages.map(keyOf));
    return [...this.partials]
      .filter(([key, m]) => !known.has(key) && roleOf(m) === "ai" && textOf(m.content))
      .map(([, m]) => m)
      .at(-1);
  }

  /**
   * A run that ended stopped or failed: keep what it had streamed of its reply (the
   * server saves a step's output only when the step ends), marked, after the last saved
   * message. Kept for the tab's session, as a reload shows it too.
   */
  keepCut(finished, partial) {
    const outcome = this.cutOutcome();
    if (!outcome || !finished.runId) return false;
    const anchor = keyOf(this.messages.at(-1) || {});
    if (!anchor) return false;
    const saved = partial && this.messages.some((m) => keyOf(m) === keyOf(partial));
    const message = {
      type: "ai",
      id: `kept:${finished.runId}`,
      content: partial && !saved ? textOf(partial.content) : "",
      outcome,
      error: outcome === "failed" ? errorText(this.threadError, finished.errorEvent) : null,
    };
    this.kept = [...this.kept.filter((k) => k.anchor !== anchor), { anchor, message }];
    sessionStorage.setItem(keptKey(this.threadId), JSON.stringify(this.kept));
    this.render();
    return true;
  }

  /** "stopped" or "failed" when the thread's last run ended so, else null. */
  cutOutcome() {
    if (this.view) return null;
    if (this.threadStatus === "error") return "failed";
    if (this.threadStatus === "interrupted" && !this.interrupts.length) return "stopped";
    return null;
  }

  /**
   * While no run is open here, listen to the thread's stream: a run that starts on it
   * elsewhere (a reminder come due, another tab) is followed as this page's own are,
   * from its first event. A stream cut by an outage is listened to again once the
   * server answers.
   */
  async watch() {
    const threadId = this.threadId;
    if (!threadId || this.run || this.watching) return;
    const controller = new AbortController();
    this.watching = controller;
    let started = null;
    const onEvent = ({ event, data }) => {
      if (event === "metadata" && data?.run_id) {
        started = data.run_id;
        controller.abort();
      }
    };
    let again = false; // listen again: the stream ended, or broke in an outage
    try {
      await api.threadStream(threadId, { onEvent, signal: controller.signal });
      again = true;
    } catch (error) {
      if (!controller.signal.aborted && error instanceof api.OfflineError) {
        await connection.whenOnline(controller.signal);
        again = true;
      }
    }
    if (this.watching !== controller) return; // unwatched: a run of ours, another thread
    this.watching = null;
    if (this.threadId !== threadId || this.run) return;
    if (!started) {
      if (again && !controller.signal.aborted) this.watch();
      return;
    }
    this.follow(started, null, null, (handlers) =>
      api.joinStream(threadId, started, null, handlers),
    );
  }

  unwatch() {
    this.watching?.abort();
    this.watching = null;
  }

  /** Whether the open run has returned (its stream may also end when the server stops). */
  async runOver() {
    try {
      const run = await api.get(`/threads/${this.threadId}/runs/${this.run.runId}`);
      return !["pending", "running"].includes(run.status);
    } catch (error) {
      if (error instanceof api.ApiError) return true; // gone
      throw error;
    }
  }

  /** The server never got the run: the page stays as it was, the message marked. */
  notSent(unsent, error) {
    this.run = null;
    if (error instanceof api.ApiError && error.status === 404 && this.threadId) {
      // The chat was deleted meanwhile: a message goes to a new chat on Retry, an answer
      // to a question of the deleted one nowhere.
      const pending = unsent?.options.pending;
      this.lost();
      if (!pending) return;
      this.unsent = { request: { input: unsent.request.input }, options: { pending } };
      this.partials.set("pending", { type: "human", content: pending, id: "pending" });
      const text = "This chat no longer exists. Retry sends your message in a new chat.";
      this.setNotice(text, "error", { retry: true });
      this.render();
      return;
    }
    this.setBusy(false);
    this.setStatus(shownStatus(this.threadStatus, this.answered));
    this.unsent = unsent;
    this.interrupts = this.answered; // the server's state has not changed
    const why = error instanceof api.OfflineError ? "can't reach the server" : error.message;
    this.setNotice(`${this.unsentWhat()}: ${why}.`, "error", { retry: true });
    this.render();
  }

  unsentWhat() {
    const { request, options } = this.unsent;
    if (options.pending) return "Your message was not sent";
    return request.command ? "Your answer was not sent" : "Not sent";
  }

  /** One SSE frame of the open run. */
  onEvent({ event, data, id }) {
    const run = this.run;
    if (!run) return;
    if (id != null) run.lastEventId = id;
    if (event === "metadata" && data?.run_id) run.runId = data.run_id;
    else if (event === "values") this.onValues(data);
    else if (event === "messages") this.onMessage(data);
    else if (event === "error") {
      run.errorEvent = data;
      run.error = `The run failed: ${data?.error || "error"}: ${data?.message || ""}`;
    }
    this.save();
    this.bus.dispatchEvent(
      new CustomEvent("stream", {
        detail: { threadId: this.threadId, runId: run.runId, event, data, id },
      }),
    );
    this.render();
  }

  /** The state after a step: it replaces what was streamed so far. */
  onValues(data) {
    if (!data || typeof data !== "object") return;
    if (Array.isArray(data.messages)) {
      this.messages = data.messages;
      const saved = new Set(this.messages.map(keyOf));
      for (const key of [...this.partials.keys()]) {
        if (saved.has(key) || key === "pending") this.partials.delete(key);
      }
      if (!this.state) this.setTitle(this.titleText());
    }
    if (Array.isArray(data.__interrupt__)) this.interrupts = data.__interrupt__;
  }

  /** A `messages-tuple` part: a chunk of the reply being written, or a whole message. */
  onMessage(data) {
    const [chunk] = Array.isArray(data) ? data : [data];
    if (!chunk) return;
    const key = keyOf(chunk);
    if (!key || this.messages.some((m) => keyOf(m) === key)) return;
    const role = roleOf(chunk);
    if (role !== "ai") {
      this.partials.set(key, chunk);
      return;
    }
    this.chunkCounts.set(key, (this.chunkCounts.get(key) || 0) + 1);
    const sofar = this.partials.get(key) || { type: "ai", id: chunk.id, content: "" };
    const callChunks = addCallChunks(sofar.callChunks || [], chunk.tool_call_chunks || []);
    this.partials.set(key, {
      ...sofar,
      content: textOf(sofar.content) + textOf(chunk.content),
      callChunks,
      // A message sent whole (not streamed) has no pieces, only its calls.
      tool_calls: callChunks.length
        ? callChunks.map(callOf)
        : chunk.tool_calls?.length
          ? chunk.tool_calls
          : sofar.tool_calls,
    });
  }

  /** Remember the open run, so a reload can rejoin it without losing a token. */
  save() {
    if (!this.run?.runId) return;
    const record = {
      runId: this.run.runId,
      lastEventId: this.run.lastEventId,
      partials: [...this.partials].filter(([key]) => key !== "pending"),
    };
    sessionStorage.setItem(runKey(this.threadId), JSON.stringify(record));
  }

  setBusy(busy) {
    // The focus may be on what hides or goes now (Send, Stop, the buttons of a question
    // answered): it moves to the control in its place, not to the page's body.
    const active = document.activeElement;
    const lost =
      [this.sendButton, this.stopButton].includes(active) || this.cardHost.contains(active);
    this.sendButton.hidden = busy;
    this.stopButton.hidden = !busy;
    this.el.classList.toggle("busy", busy);
    if (busy) this.setStatus("busy");
    if (lost) (busy ? this.stopButton : this.input).focus();
  }

  /** Cancel the open run; it stops at its next step and keeps what it saved. */
  async stop() {
    const runId = this.run?.runId;
    if (!runId) return;
    try {
      await api.post(`/threads/${this.threadId}/runs/${runId}/cancel?action=interrupt`, {});
      this.setNotice("Stopped. The reply so far is kept.", "info");
    } catch (error) {
      this.setNotice(`Could not stop the run: ${error.message}`, "error");
    }
  }

  /** Answer the pending interrupt(s). */
  resume(value) {
    return this.start({ command: { resume: value } });
  }

  // ---- regenerate, edit and branches --------------------------------------------------

  /** Versions from the first to the one on screen, each with its values. */
  async branchVersions() {
    // A page ends early on a long thread (the server bounds its size): page on.
    const history = [];
    while (history.length < HISTORY_LIMIT) {
      const page = await api.post(`/threads/${this.threadId}/history`, {
        limit: HISTORY_LIMIT - history.length,
        ...(history.length ? { before: history.at(-1).checkpoint } : {}),
      });
      if (!page.length) break;
      history.push(...page);
    }
    const byId = new Map(history.map((v) => [v.checkpoint.checkpoint_id, v]));
    const chain = [];
    let id = this.state?.checkpoint?.checkpoint_id;
    while (id && byId.has(id)) {
      const version = byId.get(id);
      chain.unshift(version);
      id = version.parent_checkpoint?.checkpoint_id;
    }
    return { chain, byId };
  }

  /** The oldest version of the branch that holds the message, and its parent. */
  async firstWith(messageId) {
    const { chain, byId } = await this.branchVersions();
    const first = chain.find((v) => (v.values?.messages || []).some((m) => m.id === messageId));
    const parentId = first?.parent_checkpoint?.checkpoint_id;
    return { first, parent: parentId ? byId.get(parentId) : null, byId };
  }

  /** Run again the node that wrote this reply, from the version just before it. */
  async regenerate(messageId) {
    if (this.run) return;
    const { parent } = await this.firstWith(messageId);
    if (!parent) {
      this.setNotice("Cannot find the version before this reply.", "error");
      return;
    }
    await this.start(
      { input: null, checkpoint_id: parent.checkpoint.checkpoint_id },
      { shown: parent.values?.messages || [] },
    );
  }

  /** New input at the version before this message was added: a sibling turn. */
  async editAndResend(messageId, text) {
    if (this.run) return;
    const { parent: input, byId } = await this.firstWith(messageId);
    if (!input) {
      this.setNotice("Cannot find the version before this message.", "error");
      return;
    }
    // `input` is the turn's input version; the fork point is its parent. A first turn has
    // none: its input version (empty state) is the only place to fork from.
    const parentId = input.parent_checkpoint?.checkpoint_id;
    const base = input.metadata?.source === "input" && parentId ? byId.get(parentId) : input;
    await this.start(
      {
        input: { messages: [{ role: "user", content: text }] },
        checkpoint_id: base.checkpoint.checkpoint_id,
      },
      { shown: base.values?.messages || [], pending: text },
    );
  }

  /** Show a sibling turn: its branch down to its newest leaf. */
  async switchSibling(turn, delta) {
    if (this.run) return;
    const turns = new Map(this.tree.turns.map((t) => [t.turn_id, t]));
    const siblings = this.tree.turns
      .filter((t) => t.parent_turn_id === turn.parent_turn_id)
      .sort((a, b) => a.sibling_index - b.sibling_index);
    let target = siblings[turn.sibling_index + delta];
    if (!target) return;
    while (target.children.length) target = turns.get(target.children.at(-1));
    const leaf = target.last_checkpoint_id;
    this.view = leaf === this.tree.head_checkpoint_id ? null : leaf;
    this.editing = null;
    await this.refresh();
  }

  /** Turn ids from the first turn to the one ending at the version on screen. */
  shownPath() {
    if (!this.tree) return [];
    const shown = this.state?.checkpoint?.checkpoint_id;
    const turns = new Map(this.tree.turns.map((t) => [t.turn_id, t]));
    let turn = this.tree.turns.find((t) => t.last_checkpoint_id === shown);
    if (!turn) return this.tree.head_path.map((id) => turns.get(id));
    const path = [];
    for (; turn; turn = turns.get(turn.parent_turn_id)) path.unshift(turn);
    return path;
  }

  /**
   * Which turn each user message opens. Matched from the end by text, so a turn the
   * messages do not show (a state update, say) is skipped rather than shifting the rest.
   */
  turnsByMessage(messages) {
    const path = this.shownPath().filter((t) => t.user_message);
    const result = new Map();
    let p = path.length - 1;
    for (let i = messages.length - 1; i >= 0 && p >= 0; i--) {
      if (roleOf(messages[i]) !== "human") continue;
      const text = textOf(messages[i].content);
      let q = p;
      while (q >= 0 && textOf(path[q].user_message.content) !== text) q--;
      if (q < 0) continue;
      result.set(i, path[q]);
      p = q - 1;
    }
    return result;
  }

  // ---- drawing ------------------------------------------------------------------------

  /** All messages on screen, the state's then the streamed ones, and the replies cut
   * short after the messages they followed. */
  visibleMessages() {
    const known = new Set(this.messages.map(keyOf));
    const streamed = [...this.partials].filter(([key]) => !known.has(key)).map(([, m]) => m);
    return this.withCuts([...this.messages, ...streamed]);
  }

  /** `messages` with the kept replies in place; and, at the head, the thread's last run
   * when it ended stopped or failed and nothing kept here says so (another tab's run, a
   * new tab): its marker after the last message. */
  withCuts(messages) {
    const cuts = this.kept.map((k) => ({ ...k.message, anchor: k.anchor }));
    const outcome = this.run ? null : this.cutOutcome();
    const last = keyOf(this.messages.at(-1) || {});
    if (outcome && last && !cuts.some((c) => c.anchor === last)) {
      const error = outcome === "failed" ? errorText(this.threadError) : null;
      cuts.push({ type: "ai", id: "cut:head", content: "", outcome, error, anchor: last });
    }
    if (!cuts.length) return messages;
    const result = [];
    for (const message of messages) {
      result.push(message);
      result.push(...cuts.filter((c) => c.anchor === keyOf(message)));
    }
    return result;
  }

  draw() {
    const messages = this.visibleMessages();
    this.empty.hidden = messages.length > 0 || Boolean(this.run) || this.interrupts.length > 0;
    this.goneEl.hidden = !this.gone;
    // While a run streams the tree is not read again: each message keeps its "< i/n >".
    const navs = this.run ? null : this.branchNavs(messages);
    const seen = new Set();
    let previous = null;
    messages.forEach((message, index) => {
      const key = keyOf(message) || `index:${index}`;
      seen.add(key);
      let entry = this.elements.get(key);
      const nav = navs ? navs.get(index) || null : entry?.nav || null;
      const editing = this.editing === key;
      const unsent = key === "pending" && Boolean(this.unsent);
      const text = textOf(message.content);
      // What the element shows besides its text: a change rebuilds it. Only a message's
      // own changes count, so a run starting or ending leaves the others as they are
      // (a selection, an open tool result).
      const signature = JSON.stringify([
        roleOf(message),
        message.name,
        message.status,
        message.tool_calls?.length ? message.tool_calls : null,
        message.outcome,
        message.error,
        nav && nav.label,
        editing,
        unsent,
        this.retryable(message),
      ]);
      if (entry?.signature === signature && entry.text !== text && patchText(entry.el, text)) {
        entry.text = text; // a streamed piece: only the end of the text changed
        entry.el.querySelector(".regenerate")?.setAttribute("aria-label", regenerateLabel(text));
      } else if (!entry || entry.signature !== signature || entry.text !== text) {
        const el = this.messageElement(message, key, { nav, editing, unsent });
        if (entry) {
          keepOpen(entry.el, el);
          entry.el.replaceWith(el);
        }
        entry = { el, signature, text, nav };
        this.elements.set(key, entry);
      }
      const chunks = this.chunkCounts.get(message.id);
      if (chunks) entry.el.dataset.chunks = String(chunks);
      // Keep DOM order equal to message order (a fork can reorder keys).
      const expected = previous ? previous.nextSibling : this.list.firstChild;
      if (expected !== entry.el) this.list.insertBefore(entry.el, expected);
      previous = entry.el;
    });
    for (const [key, entry] of this.elements) {
      if (!seen.has(key)) {
        entry.el.remove();
        this.elements.delete(key);
      }
    }
    this.drawCard();
    // Follow the conversation unless the reader scrolled up to read something.
    if (this.following) this.scrollToEnd();
    this.jumpButton.hidden = this.following || this.atBottom();
  }

  /** For every turn with siblings: where its "< i/n >" goes, and the turn. */
  branchNavs(messages) {
    const navs = new Map();
    if (!this.tree) return navs;
    const humans = [...this.turnsByMessage(messages)].sort((a, b) => a[0] - b[0]);
    humans.forEach(([index, turn], n) => {
      if (turn.sibling_count < 2) return;
      const siblings = this.tree.turns.filter((t) => t.parent_turn_id === turn.parent_turn_id);
      const edited = siblings.some(
        (t) => textOf(t.user_message?.content) !== textOf(turn.user_message.content),
      );
      // An edit shows its siblings on the user message, a regenerate on the reply.
      let at = index;
      if (!edited) {
        const end = n + 1 < humans.length ? humans[n + 1][0] : messages.length;
        for (let i = end - 1; i > index; i--) {
          if (roleOf(messages[i]) === "ai" && !messages[i].outcome) {
            at = i;
            break;
          }
        }
      }
      navs.set(at, { turn, label: `${turn.sibling_index + 1}/${turn.sibling_count}` });
    });
    return navs;
  }

  messageElement(message, key, { nav, editing, unsent }) {
    const role = roleOf(message);
    if (role === "tool") return this.toolElement(message);
    if (message.outcome) return this.cutElement(message, key);
    const text = textOf(message.content);
    const body = editing ? this.editor(message, key, text) : bubble(role, text, message);
    const calls = (message.tool_calls || []).map(toolCall);
    const actions = editing || key === "pending" ? [] : this.actions(role, message, key);
    return h(
      "div",
      { class: `msg ${role}${unsent ? " unsent" : ""}`, dataset: { role, key } },
      speaker(role),
      text || editing ? body : null,
      calls,
      h(
        "div",
        { class: "msg-foot" },
        unsent ? h("span", { class: "unsent-mark" }, "Not sent") : null,
        nav ? this.navElement(nav) : null,
        // Hidden while a run is open (by the stylesheet, so nothing is rebuilt for it).
        actions.length ? h("span", { class: "msg-actions" }, actions) : null,
      ),
    );
  }

  /** A reply cut short: what it had said, and why it stops there. */
  cutElement(message, key) {
    const text = textOf(message.content);
    const why = [
      h("span", { "aria-hidden": "true" }, message.outcome === "failed" ? "⚠ " : "■ "),
      cutWhy(message),
    ];
    const retry = this.retryable(message)
      ? h(
          "span",
          { class: "msg-actions" },
          h(
            "button",
            { class: "link", type: "button", onclick: () => this.retryCut(message.anchor) },
            glyph("↻"),
            "Retry",
          ),
        )
      : null;
    return h(
      "div",
      { class: `msg ai cut ${message.outcome}`, dataset: { role: "ai", key } },
      speaker("ai"),
      text ? bubble("ai", text, message) : null,
      h("div", { class: "msg-foot" }, h("span", { class: "cut-mark" }, why), retry),
    );
  }

  /** A failed turn can be run again while it is the last one, from where it failed. */
  retryable(message) {
    return (
      message.outcome === "failed" &&
      !this.view &&
      this.threadStatus === "error" &&
      message.anchor === keyOf(this.messages.at(-1) || {})
    );
  }

  /** Run the failed step again, from the version it failed at. */
  retryCut(anchor) {
    if (this.run) return;
    this.kept = this.kept.filter((k) => k.anchor !== anchor);
    sessionStorage.setItem(keptKey(this.threadId), JSON.stringify(this.kept));
    return this.start({ input: null }, { shown: this.messages });
  }

  toolElement(message) {
    const text = textOf(message.content);
    const failed = message.status === "error";
    return h(
      "details",
      { class: `msg tool${failed ? " failed" : ""}`, dataset: { role: "tool" } },
      h(
        "summary",
        {},
        h("span", { class: "tool-icon", "aria-hidden": "true" }, "↳"),
        h("b", {}, message.name || "tool"),
        h("span", { class: "args" }, clip(text, 90)),
      ),
      h("pre", { tabindex: 0 }, prettyJson(text)),
    );
  }

  /** A message's buttons, named with the message they act on (there is one per message). */
  actions(role, message, key) {
    const text = textOf(message.content);
    // A reply worth regenerating has text; a bare tool call is part of the same turn.
    if (role === "ai" && message.id && text) {
      return [
        h(
          "button",
          {
            class: "link regenerate",
            type: "button",
            "aria-label": regenerateLabel(text),
            onclick: () => this.regenerate(message.id),
          },
          glyph("↻"),
          "Regenerate",
        ),
      ];
    }
    if (role === "human" && message.id) {
      return [
        h(
          "button",
          {
            class: "link edit",
            type: "button",
            "aria-label": `Edit your message “${clip(text, 40)}”`,
            onclick: () => {
              this.editing = key;
              this.render();
            },
          },
          glyph("✎"),
          "Edit",
        ),
      ];
    }
    return [];
  }

  editor(message, key, text) {
    const cancel = () => {
      this.editing = null;
      this.render();
      requestAnimationFrame(() => this.list.querySelector(`[data-key="${key}"] .edit`)?.focus());
    };
    const area = h("textarea", {
      rows: 2,
      class: "edit-text",
      "aria-label": "Edited message",
      onkeydown: (e) => {
        if (e.key === "Escape") cancel();
        // As in the composer: Enter sends, Shift+Enter is a new line.
        if (e.key === "Enter" && !e.shiftKey && !e.isComposing) {
          e.preventDefault();
          area.form.requestSubmit();
        }
      },
    });
    area.value = text;
    requestAnimationFrame(() => {
      area.focus();
      area.scrollIntoView({ block: "nearest" });
    });
    return h(
      "form",
      {
        class: "editor",
        onsubmit: (e) => {
          e.preventDefault();
          const edited = area.value.trim();
          if (edited) this.editAndResend(message.id, edited);
        },
      },
      area,
      h(
        "div",
        { class: "row" },
        h("button", { type: "submit", class: "primary" }, "Send"),
        h("button", { type: "button", onclick: cancel }, "Cancel"),
      ),
    );
  }

  navElement({ turn, label }) {
    const first = turn.sibling_index === 0;
    const last = turn.sibling_index === turn.sibling_count - 1;
    return h(
      "span",
      { class: "branch-nav", title: "Branches of this turn" },
      h(
        "button",
        {
          type: "button",
          class: "link prev",
          disabled: first,
          "aria-label": "Previous branch",
          onclick: () => this.switchSibling(turn, -1),
        },
        "‹",
      ),
      h("span", { class: "count" }, label),
      h(
        "button",
        {
          type: "button",
          class: "link next",
          disabled: last,
          "aria-label": "Next branch",
          onclick: () => this.switchSibling(turn, +1),
        },
        "›",
      ),
    );
  }

  /** The interrupt card, rebuilt only when the interrupts change (it holds form input). */
  drawCard() {
    const interrupts = this.run ? [] : this.interrupts;
    const signature = JSON.stringify(interrupts);
    if (signature === this.cardSignature) return;
    this.cardSignature = signature;
    this.cardHost.replaceChildren();
    if (!interrupts.length) return;
    const card = new InterruptCard(interrupts, (value) => this.resume(value));
    this.cardHost.append(card.el);
  }

  /** A line under the chat; with `retry`, a Retry button for the run that was not sent. */
  setNotice(text, kind = "info", { retry = false } = {}) {
    this.notice = text;
    this.noticeEl.hidden = !text;
    this.noticeEl.dataset.kind = kind;
    // Not `retry ? button : null`: replaceChildren() would show a null as the text "null".
    this.noticeEl.replaceChildren(h("span", {}, text || ""));
    if (retry) {
      this.noticeEl.append(
        h("button", { type: "button", class: "retry", onclick: () => this.retry() }, "Retry"),
      );
    }
  }
}

/** Who speaks, for a screen reader (the bubbles' side and colour say it on screen). */
function speaker(role) {
  const who = { human: "You said:", ai: "Assistant:" }[role];
  return who ? h("span", { class: "visually-hidden" }, `${who} `) : null;
}

/** An icon before a button's word: seen, not read. */
function glyph(text) {
  return h("span", { "aria-hidden": "true" }, `${text} `);
}

function regenerateLabel(text) {
  return `Regenerate the reply “${clip(text, 40)}”`;
}

/** A reply's words without its markdown (as text: a live region holds nothing to focus,
 * such as a link or a table's scroller). */
function spokenText(markdown) {
  const el = h("div", {}, renderMarkdown(markdown));
  // Blocks, cells and lines read apart, not run together.
  const apart = "p, li, th, td, pre, blockquote, br, h1, h2, h3, h4, h5, h6";
  for (const part of el.querySelectorAll(apart)) part.after(" ");
  return el.textContent.replace(/\s+/g, " ").trim();
}

/** Why a reply cut short stops there. */
function cutWhy(message) {
  if (message.outcome !== "failed") return "Stopped";
  return `No reply: the run failed${message.error ? ` (${message.error})` : ""}.`;
}

/** The status shown: "interrupted" with no question pending is a run that was stopped,
 * which needs nothing from the reader (unlike a question waiting for an answer). */
function shownStatus(status, interrupts) {
  return status === "interrupted" && !interrupts?.length ? "stopped" : status;
}

/** A run's failure in a few words: `{error, message}` from the thread or the stream. */
function errorText(...errors) {
  const error = errors.find((e) => e?.error || e?.message);
  if (!error) return null;
  return [error.error, error.message].filter(Boolean).join(": ");
}

/** The replies kept on a thread, as `keepCut` saved them. */
function readKept(threadId) {
  try {
    const kept = JSON.parse(sessionStorage.getItem(keptKey(threadId)) || "[]");
    return Array.isArray(kept) ? kept : [];
  } catch {
    return [];
  }
}

/** A reply grown by a streamed piece: draw its markdown again, but put in only the blocks
 * that changed, so that the ones before (a selection in them) stay as they are. False
 * when the element has no markdown to patch (it is rebuilt instead). */
function patchText(el, text) {
  const target = el.querySelector(":scope > .bubble.markdown");
  if (!target || !text) return false;
  const fresh = [...renderMarkdown(text).childNodes];
  fresh.forEach((node, i) => {
    const old = target.childNodes[i];
    if (!old) target.append(node);
    else if (!old.isEqualNode(node)) old.replaceWith(node);
  });
  while (target.childNodes.length > fresh.length) target.lastChild.remove();
  return true;
}

/** A message drawn again keeps its expanded parts (a tool result, a call's arguments). */
function keepOpen(from, to) {
  const all = (el) => (el.matches("details") ? [el] : []).concat(...el.querySelectorAll("details"));
  const before = all(from);
  all(to).forEach((details, i) => {
    if (before[i]?.open) details.open = true;
  });
}

/** A tool call: its name and arguments on one line; long arguments expand in full. */
function toolCall(call) {
  const args = formatArgs(call.args);
  const line = [
    h("span", { class: "tool-icon", "aria-hidden": "true" }, "⚙"),
    h("b", {}, call.name),
    h("span", { class: "args" }, `(${clip(args, ARGS_SHOWN)})`),
  ];
  if (args.length <= ARGS_SHOWN) return h("div", { class: "tool-call" }, line);
  return h(
    "details",
    { class: "tool-call long" },
    h("summary", { "aria-label": `${call.name}: show all the arguments` }, line),
    h("pre", { class: "call-args", tabindex: 0 }, JSON.stringify(call.args, null, 2)),
  );
}

/** A message's text: the agent's as markdown, the user's as they typed it. */
function bubble(role, text, message) {
  if (role !== "ai") return h("div", { class: "bubble" }, text);
  if (!text) return h("div", { class: "bubble" }, message.tool_calls?.length ? "" : "…");
  return h("div", { class: "bubble markdown" }, renderMarkdown(text));
}

function prettyJson(text) {
  try {
    return JSON.stringify(JSON.parse(text), null, 2);
  } catch {
    return text;
  }
}
