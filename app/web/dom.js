// Small helpers shared by the chat and the run view.

/** Create an element: h("button", {class: "x", onclick}, "text", child, ...). */
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (value == null || value === false) continue;
    if (name.startsWith("on")) el.addEventListener(name.slice(2), value);
    else if (name === "dataset") Object.assign(el.dataset, value);
    else el.setAttribute(name, value === true ? "" : value);
  }
  el.append(...children.flat().filter((c) => c != null && c !== false));
  return el;
}

const SVG_NS = "http://www.w3.org/2000/svg";

/** Create an SVG element with attributes. */
export function s(tag, attrs = {}, ...children) {
  const el = document.createElementNS(SVG_NS, tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (value == null || value === false) continue;
    if (name.startsWith("on")) el.addEventListener(name.slice(2), value);
    else el.setAttribute(name, value);
  }
  el.append(...children.flat().filter((c) => c != null && c !== false));
  return el;
}

/** The text of a message's content: a string, or a list of content blocks. */
export function textOf(content) {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return "";
  return content
    .map((block) => (typeof block === "string" ? block : block?.type === "text" ? block.text : ""))
    .join("");
}

/** Ids are long UUIDs; their tail is enough to tell versions apart on screen. */
export function shortId(id) {
  return id ? `…${id.slice(-6)}` : "—";
}

/** Arguments as `key: value, ...` on one line. */
export function formatArgs(args) {
  if (!args || typeof args !== "object") return JSON.stringify(args);
  return Object.entries(args)
    .map(([key, value]) => `${key}: ${typeof value === "string" ? value : JSON.stringify(value)}`)
    .join(", ");
}

/** Cut long text for one-line summaries: by characters, not UTF-16 units (an emoji cut
 * in half leaves a lone surrogate), on one line. */
export function clip(text, max = 60) {
  const chars = Array.from(text.replace(/\s+/g, " "));
  return chars.length > max ? `${chars.slice(0, max - 1).join("")}…` : chars.join("");
}

/** Run `fn` at most once per animation frame (token events come much faster). */
export function perFrame(fn) {
  let queued = false;
  return () => {
    if (queued) return;
    queued = true;
    requestAnimationFrame(() => {
      queued = false;
      fn();
    });
  };
}
