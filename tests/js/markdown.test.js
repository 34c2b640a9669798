// The markdown parser: what it recognises, and that hostile text stays text.

import assert from "node:assert/strict";
import test from "node:test";

import { inline, parse, safeUrl } from "../../app/web/markdown.js";

const text = (t) => ({ type: "text", text: t });

test("inline styles, code and links", () => {
  assert.deepEqual(inline('a **b** *c* ~~d~~ `e*f*` [g](https://x.org/p "T")'), [
    text("a "),
    { type: "strong", children: [text("b")] },
    text(" "),
    { type: "em", children: [text("c")] },
    text(" "),
    { type: "strike", children: [text("d")] },
    text(" "),
    { type: "code", text: "e*f*" },
    text(" "),
    { type: "link", href: "https://x.org/p", title: "T", children: [text("g")] },
  ]);
});

test("emphasis needs closing delimiters and no intraword underscores", () => {
  assert.deepEqual(inline("2 * 3 * 4"), [text("2 * 3 * 4")]);
  assert.deepEqual(inline("snake_case_name"), [text("snake_case_name")]);
  assert.deepEqual(inline("**open"), [text("**open")]);
  assert.deepEqual(inline("\\*not\\*"), [text("*not*")]);
});

test("bare and angle-bracket URLs; trailing punctuation is not part of them", () => {
  assert.deepEqual(inline("see https://a.org/x."), [
    text("see "),
    { type: "link", href: "https://a.org/x", children: [text("https://a.org/x")] },
    text("."),
  ]);
  assert.deepEqual(inline("<mailto:me@a.org>")[0].href, "mailto:me@a.org");
});

test("blocks: headings, lists, code, quotes, tables, rules", () => {
  const doc = parse(
    [
      "# Title",
      "",
      "Line one",
      "line two",
      "- a",
      "- b",
      "  1. nested",
      "",
      "```js",
      "let x = '<b>';",
      "```",
      "> quoted",
      "",
      "| k | v |",
      "|:--|--:|",
      "| 1 | 2 |",
      "",
      "---",
    ].join("\n"),
  );
  assert.deepEqual(
    doc.map((b) => b.type),
    ["heading", "paragraph", "list", "code", "quote", "table", "rule"],
  );
  assert.deepEqual(doc[1].children, [text("Line one"), { type: "break" }, text("line two")]);
  assert.equal(doc[2].items.length, 2);
  assert.equal(doc[2].items[1][1].type, "list");
  assert.equal(doc[2].items[1][1].ordered, true);
  assert.deepEqual(doc[3], { type: "code", lang: "js", text: "let x = '<b>';" });
  assert.deepEqual(doc[5].aligns, ["left", "right"]);
});

test("an unclosed fence (a reply still streaming) runs to the end", () => {
  assert.deepEqual(parse("text\n```py\nprint(1)"), [
    { type: "paragraph", children: [text("text")] },
    { type: "code", lang: "py", text: "print(1)" },
  ]);
});

test("only http(s) and mailto addresses become links", () => {
  for (const bad of [
    "javascript:alert(1)",
    "JaVaScRiPt:alert(1)",
    "java\tscript:alert(1)",
    " javascript:alert(1)",
    "data:text/html,<script>alert(1)</script>",
    "vbscript:msgbox(1)",
    "//evil.example/x",
    "/relative",
    "file:///etc/passwd",
  ]) {
    assert.equal(safeUrl(bad), null, bad);
  }
  assert.equal(safeUrl("https://example.org/a b"), "https://example.org/a%20b");
  assert.equal(inline("[x](javascript:alert(1))")[0].href, null);
});

test("raw HTML is text; images are links that are never loaded", () => {
  assert.deepEqual(parse("<img src=x onerror=alert(1)>"), [
    { type: "paragraph", children: [text("<img src=x onerror=alert(1)>")] },
  ]);
  assert.deepEqual(inline("![pixel](https://t.example/p.gif)"), [
    { type: "link", href: "https://t.example/p.gif", title: null, children: [text("pixel")] },
  ]);
});
