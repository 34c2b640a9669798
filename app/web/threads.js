// The chat list: the caller's threads, newest first, a page at a time; search by title and
// by what was said; rename (the thread's metadata `title`) and delete. A chat where the
// agent said a reminder the reader has not seen yet is marked. While the server cannot be
// reached, the list stays as it was.

import * as api from "./api.js";
import { clip, h, textOf } from "./dom.js";

const PAGE = 50;
// A content search reads the threads' messages page by page, at most this many threads.
const SCAN_LIMIT = 500;
const SEARCH_DELAY_MS = 250;
const FIELDS = ["thread_id", "status", "updated_at", "metadata", "interrupts"];
const REMINDER_POLL_MS = 15_000;
// localStorage: {since, chats: {threadId: ISO time}}: when the reader last had each chat
// in front of them, and since when this browser keeps count.
const SEEN_KEY = "threadline.seen";

function readSeen() {
  let seen = null;
  try {
    seen = JSON.parse(localStorage.getItem(SEEN_KEY) || "null");
  } catch {
    // Unreadable: start counting now.
  }
  if (!seen?.since || typeof seen.chats !== "object") {
    seen = { since: new Date().toISOString(), chats: {} };
  }
  localStorage.setItem(SEEN_KEY, JSON.stringify(seen));
  return seen;
}

/** The text of a thread's first message, when it is the user's. */
function firstWords(message) {
  const type = message?.type || message?.role;
  return type === "human" || type === "user" ? textOf(message.content) : "";
}

export class ThreadList {
  /**
   * @param panelOf   threadId -> the chat panel showing it, if any
   * @param onOpen    (threadId) the reader picked a chat
   * @param onChange  (threadId, thread|null) a chat was renamed, or deleted (null)
   */
  constructor({ list, search, info, found }, { panelOf, onOpen, onChange }) {
    Object.assign(this, { list, info, panelOf, onOpen, onChange });
    this.foundStatus = found; // a live region: says how many chats a search found
    this.threads = [];
    this.more = false;
    this.reading = Promise.resolve(); // the list reads, one after another
    this.query = "";
    this.found = null; // threads matching the query, by content, once the scan is done
    this.scan = 0; // the latest scan; an older one's result is dropped
    this.menu = null; // thread id whose actions are open
    this.renaming = null;
    this.confirming = null;
    this.seen = readSeen();
    this.reminded = new Set(); // chats with a reminder said since the reader saw them
    setInterval(() => this.checkReminders(), REMINDER_POLL_MS);
    let timer;
    search.addEventListener("input", () => {
      this.query = search.value.trim();
      this.found = null;
      this.draw();
      clearTimeout(timer);
      timer = setTimeout(() => this.searchContent(), SEARCH_DELAY_MS);
    });
    list.addEventListener("keydown", (e) => {
      if (e.key !== "Escape" || !this.menu) return;
      e.stopPropagation(); // the menu closes, not the drawer around it
      this.closeMenu();
    });
  }

  /** The title shown for a thread: its name, else its first message (as on screen). */
  title(thread) {
    const named = thread.metadata?.title;
    if (named) return named;
    const shown = this.panelOf(thread.thread_id)?.titleText();
    if (shown && shown !== "New chat") return shown;
    return firstWords(thread.extracted?.first) || "(empty)";
  }

  async page(offset, limit, extract) {
    return api.post("/threads/search", {
      limit,
      offset,
      sort_by: "updated_at",
      sort_order: "desc",
      select: FIELDS,
      extract,
    });
  }

  /** Run a read of the list after the ones asked for before it, so that one answered late
   * cannot undo a later one (a page added by "Show more", say). */
  serially(read) {
    const done = this.reading.then(read);
    this.reading = done.catch(() => {});
    return done;
  }

  /** Read the list again, as many threads as are shown. */
  load() {
    return this.serially(async () => {
      const limit = Math.max(PAGE, this.threads.length);
      try {
        this.threads = await this.page(0, limit, { first: "values.messages[0]" });
        this.more = this.threads.length === limit;
        this.info.dataset.kind = "";
      } catch (error) {
        if (error instanceof api.ApiError) this.problem(error);
      }
      this.draw();
    });
  }

  /** Mark the chats where the agent said a reminder after the reader last saw them (and
   * read the list again when there is a new one: such a chat moved up). */
  async checkReminders() {
    let reminders;
    try {
      reminders = await api.get("/reminders");
    } catch {
      return; // offline or refused: the marks stay as they are
    }
    const news = new Set();
    for (const { thread_id: id, delivered_at: said } of reminders) {
      const seen = this.seen.chats[id] || this.seen.since;
      if (said && !this.panelOf(id) && Date.parse(said) > Date.parse(seen)) news.add(id);
    }
    const fresh = [...news].some((id) => !this.reminded.has(id));
    this.reminded = news;
    if (fresh) await this.load();
    else this.draw();
  }

  /** The chat is in front of the reader: what was said there is seen. */
  markSeen(threadId) {
    this.seen.chats[threadId] = new Date().toISOString();
    localStorage.setItem(SEEN_KEY, JSON.stringify(this.seen));
    this.reminded.delete(threadId);
  }

  loadMore() {
    return this.serially(async () => {
      const before = this.threads.length;
      try {
        const next = await this.page(before, PAGE, { first: "values.messages[0]" });
        const known = new Set(this.threads.map((t) => t.thread_id));
        this.threads.push(...next.filter((t) => !known.has(t.thread_id)));
        this.more = next.length === PAGE;
      } catch (error) {
        if (error instanceof api.ApiError) this.problem(error);
      }
      this.draw();
      this.list.querySelectorAll(".thread")[before]?.focus(); // the first one loaded now
    });
  }

  problem(error) {
    const hint = error.status === 401 || error.status === 403 ? " (set the API key below)" : "";
    this.info.textContent = `${error.message}${hint}`;
    this.info.dataset.kind = "error";
  }

  /** Threads whose title or messages hold the query: the server is asked for their
   * messages a page at a time (it has no text search of its own). */
  async searchContent() {
    const query = this.query.toLowerCase();
    if (!query) return;
    const scan = ++this.scan;
    const found = [];
    try {
      for (let offset = 0; offset < SCAN_LIMIT; offset += PAGE) {
        const extract = { first: "values.messages[0]", messages: "values.messages" };
        const threads = await this.page(offset, PAGE, extract);
        if (scan !== this.scan) return;
        for (const thread of threads) {
          const said = (thread.extracted?.messages || []).map((m) => textOf(m.content));
          const texts = [this.title(thread), ...said];
          if (texts.some((t) => t.toLowerCase().includes(query))) found.push(thread);
        }
        if (threads.length < PAGE) break;
      }
    } catch {
      return; // offline or refused: the title matches stay on screen
    }
    this.found = found;
    this.draw();
  }

  /** What the list shows: every thread, or the matches of the query. */
  shown() {
    if (!this.query) return this.threads;
    if (this.found) return this.found;
    const query = this.query.toLowerCase();
    return this.threads.filter((t) => this.title(t).toLowerCase().includes(query));
  }

  draw() {
    const shown = this.shown();
    const rows = shown.map((thread) => this.row(thread));
    if (!shown.length) {
      const text = this.query ? (this.found ? "No chats match." : "Searching…") : "No chats yet.";
      rows.push(h("li", { class: "hint" }, text));
    } else if (this.query && !this.found) {
      rows.push(h("li", { class: "hint" }, "Searching the messages too…"));
    }
    if (this.more && !this.query) {
      rows.push(
        h(
          "li",
          {},
          h(
            "button",
            { type: "button", class: "more", onclick: () => this.loadMore() },
            "Show more",
          ),
        ),
      );
    }
    const spot = this.focusSpot();
    this.list.replaceChildren(...rows);
    if (spot) this.restoreFocus(spot);
    // Said once the search is done, not at every key typed.
    const n = shown.length;
    let found = "";
    if (this.query && this.found) {
      found = n ? `${n} chat${n > 1 ? "s" : ""} found.` : "No chats match.";
    }
    if (this.foundStatus.textContent !== found) this.foundStatus.textContent = found;
  }

  /** Where the keyboard focus is in the list, if it is: its row (by thread id, and its
   * place), which of the row's controls, and what was typed there. The rows are drawn
   * anew (a poll, a run, a rename), and the focus would fall to the page's body. */
  focusSpot() {
    const active = document.activeElement;
    if (!this.list.contains(active)) return null;
    const row = active.closest("li");
    const input = active.matches("input");
    return {
      id: row.dataset.threadId, // none: the "Show more" row
      at: [...this.list.querySelectorAll(".thread-row")].indexOf(row),
      control: [...row.querySelectorAll("button, input")].indexOf(active),
      typed: input ? [active.value, active.selectionStart, active.selectionEnd] : null,
    };
  }

  restoreFocus({ id, at, control, typed }) {
    const row = id
      ? this.list.querySelector(`.thread-row[data-thread-id="${id}"]`)
      : this.list.querySelector(".more")?.closest("li");
    if (!row) {
      this.focusRowAt(at);
      return;
    }
    const controls = row.querySelectorAll("button, input");
    const target = controls[control] || controls[0];
    if (typed && target.matches("input")) {
      target.value = typed[0];
      target.setSelectionRange(typed[1], typed[2]);
    }
    target.focus({ preventScroll: true });
  }

  /** Focus the chat at this place in the list (its chat gone, the next one), else the
   * last one, else "New chat". */
  focusRowAt(at) {
    const threads = this.list.querySelectorAll(".thread");
    const target = threads[Math.min(at, threads.length - 1)] || document.getElementById("new-chat");
    target.focus({ preventScroll: true });
  }

  row(thread) {
    const id = thread.thread_id;
    const panel = this.panelOf(id);
    if (panel) this.markSeen(id); // shown in a panel, as it is drawn here
    const reminded = this.reminded.has(id);
    const title = this.title(thread);
    // "interrupted" with no question pending: stopped by the reader, nothing waits.
    const pending = Object.keys(thread.interrupts || {}).length;
    const status = thread.status === "interrupted" && !pending ? "stopped" : thread.status;
    const open = h(
      "button",
      {
        type: "button",
        class: `thread${panel ? " open" : ""}`,
        dataset: { threadId: id, status },
        style: panel ? `--thread: ${panel.color}` : null,
        "aria-current": panel ? "true" : null,
        onclick: () => this.onOpen(id),
      },
      panel ? h("span", { class: "slot", "aria-hidden": "true" }, panel.slot) : null,
      h("span", { class: "thread-title" }, clip(title, 60)),
      reminded ? h("span", { class: "reminded", title: "New reminder" }, "⏰") : null,
      reminded ? h("span", { class: "visually-hidden" }, " (new reminder)") : null,
      status === "idle" ? null : h("span", { class: "visually-hidden" }, ` (${status})`),
      h("span", { class: "dot", title: status, "aria-hidden": "true" }),
    );
    const toggle = h(
      "button",
      {
        type: "button",
        class: "icon row-menu",
        "aria-label": `Rename or delete “${clip(title, 40)}”`,
        "aria-expanded": String(this.menu === id),
        onclick: () => {
          if (this.menu === id) {
            this.closeMenu();
            return;
          }
          this.openMenu(id);
          this.list.querySelector(".thread-actions button")?.focus();
        },
      },
      "⋯",
    );
    return h(
      "li",
      { class: "thread-row", dataset: { threadId: id } },
      h("div", { class: "thread-line" }, open, toggle),
      this.menu === id ? this.actions(thread, title) : null,
    );
  }

  openMenu(id) {
    Object.assign(this, { menu: id, renaming: null, confirming: null });
    this.draw();
  }

  /** Close the open actions (Escape, Cancel); the focus goes back to their ⋯ button. */
  closeMenu() {
    const id = this.menu;
    this.openMenu(null);
    this.list.querySelector(`.thread-row[data-thread-id="${id}"] .row-menu`)?.focus();
  }

  actions(thread, title) {
    const id = thread.thread_id;
    if (this.renaming === id) return this.renameForm(thread, title);
    if (this.confirming === id) {
      return h(
        "div",
        { class: "thread-actions confirm", role: "group", "aria-label": "Delete this chat?" },
        h("span", {}, "Delete this chat and all its versions?"),
        h("button", { type: "button", class: "danger", onclick: () => this.remove(id) }, "Delete"),
        h("button", { type: "button", onclick: () => this.closeMenu() }, "Cancel"),
      );
    }
    return h(
      "div",
      { class: "thread-actions" },
      h(
        "button",
        {
          type: "button",
          onclick: () => {
            this.renaming = id;
            this.draw();
            this.list.querySelector(".rename input")?.select();
          },
        },
        "Rename",
      ),
      h(
        "button",
        {
          type: "button",
          class: "danger",
          onclick: () => {
            this.confirming = id;
            this.draw();
            this.list.querySelector(".confirm button")?.focus();
          },
        },
        "Delete",
      ),
    );
  }

  renameForm(thread, title) {
    const input = h("input", { type: "text", "aria-label": "Chat name", maxlength: 200 });
    input.value = title === "(empty)" ? "" : title;
    return h(
      "form",
      {
        class: "thread-actions rename",
        onsubmit: (e) => {
          e.preventDefault();
          this.rename(thread, input.value.trim());
        },
      },
      input,
      h("button", { type: "submit", class: "primary" }, "Save"),
      h("button", { type: "button", onclick: () => this.closeMenu() }, "Cancel"),
    );
  }

  async rename(thread, title) {
    try {
      const updated = await api.patch(`/threads/${thread.thread_id}`, {
        metadata: { title: title || null },
      });
      thread.metadata = updated.metadata;
      this.onChange(thread.thread_id, updated);
    } catch (error) {
      this.info.textContent = `Could not rename the chat: ${error.message}`;
      return;
    }
    this.openMenu(null);
    this.list.querySelector(`[data-thread-id="${thread.thread_id}"] .thread`)?.focus();
  }

  async remove(threadId) {
    const rows = [...this.list.querySelectorAll(".thread-row")];
    const at = rows.findIndex((row) => row.dataset.threadId === threadId);
    try {
      await api.del(`/threads/${threadId}`);
    } catch (error) {
      this.info.textContent = `Could not delete the chat: ${error.message}`;
      return;
    }
    this.threads = this.threads.filter((t) => t.thread_id !== threadId);
    this.found = this.found?.filter((t) => t.thread_id !== threadId) || null;
    this.onChange(threadId, null);
    this.openMenu(null);
    // The next chat: not the search box, whose keyboard would cover a phone's screen.
    this.focusRowAt(at);
  }
}
