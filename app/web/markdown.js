// Markdown in the agent's replies, safe by construction: the text is parsed into a tree of
// a fixed set of node types, and the tree is drawn with DOM calls that only ever create
// those elements and text nodes. No string of the model's output is ever parsed as HTML,
// so raw HTML in a reply shows as the text it is; the one attribute taken from the text, a
// link's address, is kept only for http(s) and mailto URLs. Images are shown as links,
// never loaded: an image address in a reply could carry the conversation to a third party.
//
// Covered: paragraphs (a single newline is a line break, as in chat apps), headings, fenced
// and indented code, block quotes, lists (nested by indentation), tables, rules, and inline
// code, strong, emphasis, strikethrough, links, autolinks and backslash escapes. A fence not
// closed yet (a reply still streaming) runs to the end of the text.

import { h } from "./dom.js";

const LINK_PROTOCOLS = new Set(["http:", "https:", "mailto:"]);

/** The URL to link to, normalised, or null when it is not one we link. */
export function safeUrl(text) {
  let url;
  try {
    url = new URL(text.trim());
  } catch {
    return null; // relative or malformed
  }
  return LINK_PROTOCOLS.has(url.protocol) ? url.href : null;
}

// ---- blocks ---------------------------------------------------------------------------

const FENCE = /^ {0,3}(`{3,}|~{3,})\s*([^`\s]*)[^`]*$/;
const HEADING = /^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$/;
const RULE = /^ {0,3}([-*_])(?:[ \t]*\1){2,}[ \t]*$/;
const QUOTE = /^ {0,3}> ?(.*)$/;
const ITEM = /^( {0,3})([-*+]|\d{1,9}[.)])(?:[ \t]+(.*))?$/;
const TABLE_DELIMITER = /^ {0,3}\|?\s*:?-+:?\s*(\|\s*:?-+:?\s*)*\|?\s*$/;
const BLANK = /^\s*$/;

/** The block nodes of `text`. */
export function parse(text) {
  return blocks(text.replace(/\r\n?/g, "\n").split("\n"));
}

function blocks(lines) {
  const out = [];
  let i = 0;
  while (i < lines.length) {
    const line = lines[i];
    let match;
    if (BLANK.test(line)) {
      i++;
    } else if ((match = line.match(FENCE))) {
      const end = lines.findIndex((l, j) => j > i && closesFence(l, match[1]));
      const stop = end < 0 ? lines.length : end;
      out.push({ type: "code", lang: match[2], text: lines.slice(i + 1, stop).join("\n") });
      i = stop + 1;
    } else if ((match = line.match(HEADING))) {
      out.push({ type: "heading", level: match[1].length, children: inline(match[2] || "") });
      i++;
    } else if (RULE.test(line)) {
      out.push({ type: "rule" });
      i++;
    } else if (QUOTE.test(line)) {
      const inner = [];
      for (; i < lines.length && (match = lines[i].match(QUOTE)); i++) inner.push(match[1]);
      out.push({ type: "quote", children: blocks(inner) });
    } else if (ITEM.test(line)) {
      i = list(lines, i, out);
    } else if (/^( {4}|\t)/.test(line)) {
      const code = [];
      for (; i < lines.length && (/^( {4}|\t)/.test(lines[i]) || BLANK.test(lines[i])); i++) {
        code.push(lines[i].replace(/^( {4}|\t)/, ""));
      }
      while (BLANK.test(code.at(-1))) code.pop();
      out.push({ type: "code", lang: "", text: code.join("\n") });
    } else if (line.includes("|") && TABLE_DELIMITER.test(lines[i + 1] || "")) {
      i = table(lines, i, out);
    } else {
      const para = [];
      for (
        ;
        i < lines.length && !BLANK.test(lines[i]) && (!para.length || !startsBlock(lines, i));
        i++
      ) {
        para.push(lines[i].trim());
      }
      out.push({ type: "paragraph", children: inline(para.join("\n")) });
    }
  }
  return out;
}

function closesFence(line, fence) {
  const trimmed = line.trim();
  return trimmed.length >= fence.length && trimmed === fence[0].repeat(trimmed.length);
}

/** Whether line i opens a block that interrupts a paragraph. */
function startsBlock(lines, i) {
  const line = lines[i];
  return (
    FENCE.test(line) ||
    HEADING.test(line) ||
    RULE.test(line) ||
    QUOTE.test(line) ||
    ITEM.test(line) ||
    (line.includes("|") && TABLE_DELIMITER.test(lines[i + 1] || ""))
  );
}

/** A list from line i: its items' lines, de-indented, are blocks in their own right. */
function list(lines, i, out) {
  const first = lines[i].match(ITEM);
  const ordered = /\d/.test(first[2]);
  const items = [];
  let loose = false;
  while (i < lines.length) {
    const match = lines[i].match(ITEM);
    if (!match || /\d/.test(match[2]) !== ordered || match[1].length > first[1].length + 1) break;
    const indent = match[1].length + match[2].length + 1;
    const body = [match[3] || ""];
    i++;
    for (; i < lines.length; i++) {
      const line = lines[i];
      if (BLANK.test(line)) {
        const next = lines.slice(i + 1).find((l) => !BLANK.test(l));
        if (next === undefined || leading(next) < indent) break;
        loose = true;
        body.push("");
      } else if (leading(line) >= Math.min(indent, first[1].length + 2)) {
        body.push(line.slice(Math.min(leading(line), indent)));
      } else if (ITEM.test(line) || startsBlock(lines, i) || BLANK.test(body.at(-1))) {
        break;
      } else {
        body.push(line.trim()); // a lazy continuation of the item's paragraph
      }
    }
    items.push(blocks(body));
    while (i < lines.length && BLANK.test(lines[i])) {
      const next = lines[i + 1];
      if (next && ITEM.test(next) && next.match(ITEM)[1].length <= first[1].length + 1) {
        loose = true;
        i++;
      } else break;
    }
  }
  const start = ordered ? parseInt(first[2], 10) : null;
  out.push({ type: "list", ordered, start, loose, items });
  return i;
}

function leading(line) {
  return line.match(/^ */)[0].length;
}

function table(lines, i, out) {
  const aligns = cells(lines[i + 1]).map((cell) => {
    const left = cell.startsWith(":");
    const right = cell.endsWith(":");
    return left && right ? "center" : right ? "right" : left ? "left" : null;
  });
  const row = (line) => aligns.map((_, k) => inline(cells(line)[k] || ""));
  const head = row(lines[i]);
  const body = [];
  for (i += 2; i < lines.length && lines[i].includes("|") && !BLANK.test(lines[i]); i++) {
    body.push(row(lines[i]));
  }
  out.push({ type: "table", aligns, head, body });
  return i;
}

/** A table row's cells: split at pipes that are not escaped, outer pipes dropped. */
function cells(line) {
  const parts = line
    .trim()
    .replace(/^\|/, "")
    .replace(/(?<!\\)\|$/, "")
    .split(/(?<!\\)\|/);
  return parts.map((cell) => cell.trim().replace(/\\\|/g, "|"));
}

// ---- inline ---------------------------------------------------------------------------

const ESCAPABLE = /[\\`*_{}[\]()#+\-.!|~<>"']/;
const BARE_URL = /^(?:https?:\/\/|mailto:)[^\s<]+/;
const EMPHASIS = [
  ["**", "strong"],
  ["__", "strong"],
  ["~~", "strike"],
  ["*", "em"],
  ["_", "em"],
];

/** The inline nodes of `text`: {type: "text" | "break" | "code" | "strong" | "em" |
 * "strike" | "link", ...}. */
export function inline(text) {
  const out = [];
  let plain = "";
  const flush = () => {
    if (plain) out.push({ type: "text", text: plain });
    plain = "";
  };
  let i = 0;
  while (i < text.length) {
    const rest = text.slice(i);
    const c = text[i];
    let found = null;
    if (c === "\\" && ESCAPABLE.test(text[i + 1] || "")) {
      plain += text[i + 1];
      i += 2;
      continue;
    }
    if (c === "\n") found = { node: { type: "break" }, length: 1 };
    else if (c === "`") found = codeSpan(rest);
    else if (c === "[" || (c === "!" && text[i + 1] === "[")) found = link(rest);
    else if (c === "<") found = autolink(rest);
    else if ((c === "h" || c === "m") && !/\w/.test(text[i - 1] || "")) found = bareUrl(rest);
    else if ("*_~".includes(c)) found = emphasis(rest, text[i - 1]);
    if (found) {
      flush();
      out.push(found.node);
      i += found.length;
    } else {
      // A run of backticks that opens nothing stays one piece, or its tail would open.
      const run = c === "`" ? rest.match(/^`+/)[0] : c;
      plain += run;
      i += run.length;
    }
  }
  flush();
  return out;
}

function codeSpan(rest) {
  const ticks = rest.match(/^`+/)[0];
  const close = new RegExp(`(?<!\`)${ticks}(?!\`)`, "g");
  close.lastIndex = ticks.length;
  const match = close.exec(rest);
  if (!match) return null;
  let code = rest.slice(ticks.length, match.index).replace(/\n/g, " ");
  if (/^ .*[^ ].* $/.test(code)) code = code.slice(1, -1);
  return { node: { type: "code", text: code }, length: match.index + ticks.length };
}

function link(rest) {
  const image = rest[0] === "!";
  const open = image ? 1 : 0;
  let depth = 0;
  let end = -1;
  for (let k = open; k < rest.length; k++) {
    if (rest[k] === "\\") k++;
    else if (rest[k] === "[") depth++;
    else if (rest[k] === "]" && --depth === 0) {
      end = k;
      break;
    }
  }
  if (end < 0) return null;
  const target = rest
    .slice(end + 1)
    .match(/^\(\s*<?([^\s<>()]*(?:\([^\s()]*\)[^\s<>()]*)*)>?(?:\s+"([^"]*)")?\s*\)/);
  if (!target) return null;
  const label = rest.slice(open + 1, end);
  const children = image ? [{ type: "text", text: label || "image" }] : inline(label);
  const node = { type: "link", href: safeUrl(target[1]), title: target[2] || null, children };
  return { node, length: end + 1 + target[0].length };
}

function autolink(rest) {
  const match = rest.match(/^<((?:https?:\/\/|mailto:)[^\s<>]+)>/);
  if (!match) return null;
  const node = {
    type: "link",
    href: safeUrl(match[1]),
    children: [{ type: "text", text: match[1] }],
  };
  return { node, length: match[0].length };
}

function bareUrl(rest) {
  const match = rest.match(BARE_URL);
  if (!match) return null;
  // Trailing punctuation ends the sentence, not the address (a ")" only when unbalanced).
  let url = match[0].replace(/[.,:;!?'"*_~]+$/, "");
  while (url.endsWith(")") && count(url, "(") < count(url, ")")) url = url.slice(0, -1);
  const node = { type: "link", href: safeUrl(url), children: [{ type: "text", text: url }] };
  return { node, length: url.length };
}

function count(text, char) {
  return text.split(char).length - 1;
}

/** `**strong**`, `*em*`, `~~strike~~` (and the `_` forms): the delimiter must be followed
 * by a non-space, closed by the same delimiter after a non-space; `_` not inside a word. */
function emphasis(rest, before) {
  for (const [mark, type] of EMPHASIS) {
    if (!rest.startsWith(mark) || /\s/.test(rest[mark.length] || " ")) continue;
    if (mark[0] === "_" && /\w/.test(before || "")) continue;
    let from = mark.length;
    for (;;) {
      const at = rest.indexOf(mark, from);
      if (at < 0) break;
      const inside = rest.slice(mark.length, at);
      const after = rest[at + mark.length] || "";
      const doubled = mark.length === 1 && after === mark; // `*a**b*`: skip the `**`
      if (inside && !/\s$/.test(inside) && !doubled && !(mark[0] === "_" && /\w/.test(after))) {
        return { node: { type, children: inline(inside) }, length: at + mark.length };
      }
      from = at + (doubled ? 2 : 1);
    }
  }
  return null;
}

// ---- drawing --------------------------------------------------------------------------

/** The DOM of `text` rendered: a fragment of the fixed element set (see the top). */
export function renderMarkdown(text) {
  const fragment = document.createDocumentFragment();
  fragment.append(...parse(text).map(block));
  return fragment;
}

function block(node) {
  switch (node.type) {
    case "paragraph":
      return h("p", {}, node.children.map(span));
    case "heading":
      return h(`h${node.level}`, {}, node.children.map(span));
    case "rule":
      return h("hr");
    case "quote":
      return h("blockquote", {}, node.children.map(block));
    case "code":
      return codeBlock(node);
    case "list":
      return h(
        node.ordered ? "ol" : "ul",
        { start: node.start !== 1 ? node.start : null },
        node.items.map((item) => h("li", {}, listItem(item, node.loose))),
      );
    case "table":
      return h(
        "div",
        { class: "table-scroll", tabindex: 0 },
        h(
          "table",
          {},
          h(
            "thead",
            {},
            h(
              "tr",
              {},
              node.head.map((c, k) => cell("th", c, node.aligns[k])),
            ),
          ),
          h(
            "tbody",
            {},
            node.body.map((row) =>
              h(
                "tr",
                {},
                row.map((c, k) => cell("td", c, node.aligns[k])),
              ),
            ),
          ),
        ),
      );
    default:
      throw new Error(`unknown block ${node.type}`);
  }
}

/** A tight item's one paragraph is shown without its margins. */
function listItem(children, loose) {
  if (!loose && children[0]?.type === "paragraph") {
    return [...children[0].children.map(span), ...children.slice(1).map(block)];
  }
  return children.map(block);
}

function cell(tag, children, align) {
  return h(tag, { style: align ? `text-align: ${align}` : null }, children.map(span));
}

function codeBlock(node) {
  const copy = h(
    "button",
    {
      type: "button",
      class: "copy",
      onclick: async () => {
        try {
          await navigator.clipboard.writeText(node.text);
          copy.textContent = "Copied";
        } catch {
          copy.textContent = "Copy failed";
        }
        setTimeout(() => (copy.textContent = "Copy"), 1500);
      },
    },
    "Copy",
  );
  return h(
    "div",
    { class: "code-block" },
    h("div", { class: "code-head" }, h("span", {}, node.lang || "code"), copy),
    h("pre", { tabindex: 0 }, h("code", {}, node.text)), // focusable: it may scroll
  );
}

function span(node) {
  switch (node.type) {
    case "text":
      return document.createTextNode(node.text);
    case "break":
      return h("br");
    case "code":
      return h("code", {}, node.text);
    case "strong":
      return h("strong", {}, node.children.map(span));
    case "em":
      return h("em", {}, node.children.map(span));
    case "strike":
      return h("del", {}, node.children.map(span));
    case "link":
      // An address we do not link (javascript:, a relative path) shows as plain text.
      if (!node.href) return h("span", { class: "unlinked" }, node.children.map(span));
      return h(
        "a",
        { href: node.href, title: node.title, target: "_blank", rel: "noopener noreferrer" },
        node.children.map(span),
      );
    default:
      throw new Error(`unknown inline ${node.type}`);
  }
}
