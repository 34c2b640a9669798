// The card for a pending interrupt. The approval shape (LangChain's human-in-the-loop
// `{action_requests, review_configs}`) gets approve / edit / reject per action; any other
// value is shown as it is, with a free answer.

import { h } from "./dom.js";

export function isApproval(value) {
  return Boolean(value && typeof value === "object" && Array.isArray(value.action_requests));
}

/** What the card asks, in words: for a screen reader, as the card appears. */
export function askedText(interrupts) {
  return interrupts
    .map(({ value }) => {
      if (!isApproval(value)) {
        const question = questionText(value);
        return `The agent asks: ${question ?? JSON.stringify(value)}`;
      }
      const actions = value.action_requests.map((r) => r.description || r.name);
      return `The agent asks before acting: ${actions.join(" ")}`;
    })
    .join(" ");
}

export class InterruptCard {
  /** `onAnswer(resume)` gets the resume value for all `interrupts` at once. */
  constructor(interrupts, onAnswer) {
    this.interrupts = interrupts;
    this.onAnswer = onAnswer;
    this.answers = new Map(); // interrupt id -> resume value
    this.el = h(
      "div",
      { class: "interrupt-card", role: "group", "aria-label": "The agent asks", tabindex: -1 },
      ...interrupts.map((interrupt, i) => this.section(interrupt, i)),
    );
  }

  section(interrupt, i) {
    const key = interrupt.id || String(i);
    const answer = (value) => this.answer(key, value);
    return isApproval(interrupt.value)
      ? new ApprovalForm(interrupt.value, answer).el
      : freeAnswer(interrupt.value, answer);
  }

  /** One interrupt answered; resume once every one has an answer. */
  answer(key, value) {
    this.answers.set(key, value);
    if (this.answers.size < this.interrupts.length) return;
    this.el.classList.add("answered");
    // A button disabled drops the focus: the card holds it (the chat moves it on).
    if (this.el.contains(document.activeElement)) this.el.focus();
    for (const button of this.el.querySelectorAll("button")) button.disabled = true;
    if (this.interrupts.length === 1) {
      this.onAnswer(value);
    } else {
      // Several interrupts pending at once are answered by id.
      this.onAnswer(Object.fromEntries(this.answers));
    }
  }
}

/** Approve, edit or reject each action request; answers `{decisions: [...]}`. */
class ApprovalForm {
  constructor(value, onDone) {
    this.requests = value.action_requests;
    this.configs = value.review_configs || [];
    this.decisions = new Array(this.requests.length).fill(null);
    this.onDone = onDone;
    this.el = h(
      "div",
      { class: "approval" },
      h("div", { class: "card-title" }, "The agent asks before acting"),
      ...this.requests.map((request, i) => this.action(request, i)),
    );
  }

  allowed(name) {
    const config = this.configs.find((c) => c.action_name === name);
    return new Set(config?.allowed_decisions || ["approve", "edit", "reject"]);
  }

  action(request, i) {
    const allowed = this.allowed(request.name);
    const extra = h("div", { class: "extra" });
    const status = h("span", { class: "decided" });
    const buttons = h(
      "div",
      { class: "row" },
      allowed.has("approve") &&
        h(
          "button",
          {
            type: "button",
            class: "primary",
            onclick: () => this.decide(i, { type: "approve" }, status, "approved"),
          },
          "Approve",
        ),
      allowed.has("edit") &&
        h(
          "button",
          {
            type: "button",
            onclick: (e) =>
              reveal(extra, this.editForm(request, i, status, extra), e.currentTarget),
          },
          "Edit",
        ),
      allowed.has("reject") &&
        h(
          "button",
          {
            type: "button",
            class: "danger",
            onclick: (e) => reveal(extra, this.rejectForm(i, status, extra), e.currentTarget),
          },
          "Reject",
        ),
      status,
    );
    return h(
      "div",
      { class: "action", dataset: { action: request.name } },
      h("div", { class: "action-name" }, h("code", {}, request.name)),
      request.description ? h("p", { class: "description" }, request.description) : null,
      argsTable(request.args),
      buttons,
      extra,
    );
  }

  /** A field per argument; strings stay strings, anything else is read as JSON. */
  editForm(request, i, status, extra) {
    const fields = Object.entries(request.args || {}).map(([name, value]) => {
      const input = h("input", { name, type: "text", "aria-label": name });
      input.value = value == null ? "" : typeof value === "string" ? value : JSON.stringify(value);
      input.dataset.kind =
        value == null ? "nullable" : typeof value === "string" ? "string" : "json";
      return h("label", { class: "field" }, h("span", {}, name), input);
    });
    const problem = h("span", { class: "problem" });
    const form = h(
      "form",
      {
        class: "edit-form",
        onsubmit: (e) => {
          e.preventDefault();
          try {
            const args = readFields(form);
            extra.replaceChildren();
            this.decide(
              i,
              { type: "edit", edited_action: { name: request.name, args } },
              status,
              "edited",
            );
          } catch (error) {
            problem.textContent = error.message;
          }
        },
      },
      ...fields,
      h(
        "div",
        { class: "row" },
        h("button", { type: "submit", class: "primary" }, "Save and approve"),
        problem,
      ),
    );
    return form;
  }

  rejectForm(i, status, extra) {
    const message = h("input", {
      type: "text",
      name: "message",
      placeholder: "Why not? (optional)",
      "aria-label": "Reason",
    });
    return h(
      "form",
      {
        class: "reject-form",
        onsubmit: (e) => {
          e.preventDefault();
          extra.replaceChildren();
          this.decide(
            i,
            { type: "reject", message: message.value.trim() || null },
            status,
            "rejected",
          );
        },
      },
      message,
      h("button", { type: "submit", class: "danger" }, "Reject"),
    );
  }

  /** Record one decision; answer when every action has one. */
  decide(i, decision, status, label) {
    this.decisions[i] = decision;
    status.textContent = label;
    if (this.decisions.every(Boolean)) this.onDone({ decisions: this.decisions });
  }
}

/** Show a form in `host`, scrolled into sight, its first field focused; Escape closes it
 * and gives the focus back to the button that opened it. */
function reveal(host, form, opener) {
  host.replaceChildren(form);
  form.addEventListener("keydown", (e) => {
    if (e.key !== "Escape") return;
    e.stopPropagation();
    host.replaceChildren();
    opener.focus();
  });
  form.scrollIntoView({ block: "nearest" });
  form.querySelector("input, textarea")?.focus({ preventScroll: true });
}

/** An argument as text: strings as they are, anything else as JSON. */
function shown(value) {
  if (value == null) return "—";
  return typeof value === "string" ? value : JSON.stringify(value);
}

function argsTable(args) {
  const rows = Object.entries(args || {}).map(([name, value]) =>
    h("tr", {}, h("th", {}, name), h("td", {}, shown(value))),
  );
  return h("table", { class: "args-table" }, h("tbody", {}, rows));
}

function readFields(form) {
  const args = {};
  for (const input of form.querySelectorAll("input")) {
    const raw = input.value;
    if (input.dataset.kind === "string") args[input.name] = raw;
    else if (input.dataset.kind === "nullable") args[input.name] = raw.trim() ? raw : null;
    else {
      try {
        args[input.name] = JSON.parse(raw);
      } catch {
        throw new Error(`${input.name}: not valid JSON`);
      }
    }
  }
  return args;
}

// The fields a question is commonly put in, when the value is an object around it.
const QUESTION_FIELDS = ["question", "message", "prompt", "text", "query"];

/** The question as words, when the value is one: a string, or an object whose only
 * field is a string under one of the names above. Else null (shown as JSON). */
export function questionText(value) {
  if (typeof value === "string") return value;
  if (!value || typeof value !== "object" || Array.isArray(value)) return null;
  const entries = Object.entries(value);
  if (entries.length !== 1) return null;
  const [name, text] = entries[0];
  return QUESTION_FIELDS.includes(name) && typeof text === "string" ? text : null;
}

/** Any other interrupt: its value, and a free answer (JSON when it parses as JSON). */
function freeAnswer(value, onDone) {
  const question = questionText(value);
  const area = h("textarea", {
    rows: 2,
    "aria-label": "Answer",
    placeholder: "Your answer (Enter sends, Shift+Enter for a new line)",
    onkeydown: (e) => {
      // As in the composer.
      if (e.key === "Enter" && !e.shiftKey && !e.isComposing) {
        e.preventDefault();
        area.form.requestSubmit();
      }
    },
  });
  return h(
    "form",
    {
      class: "free",
      onsubmit: (e) => {
        e.preventDefault();
        if (!area.value.trim()) return;
        onDone(parseAnswer(area.value));
      },
    },
    h("div", { class: "card-title" }, "The agent asks"),
    question == null
      ? h("pre", { class: "value" }, JSON.stringify(value, null, 2))
      : h("p", { class: "question" }, question),
    area,
    h("div", { class: "row" }, h("button", { type: "submit", class: "primary" }, "Answer")),
  );
}

function parseAnswer(text) {
  const trimmed = text.trim();
  if (
    /^[[{"]/.test(trimmed) ||
    ["true", "false", "null"].includes(trimmed) ||
    /^-?\d/.test(trimmed)
  ) {
    try {
      return JSON.parse(trimmed);
    } catch {
      // Not JSON after all: send the text.
    }
  }
  return text;
}
