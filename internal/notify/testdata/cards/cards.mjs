// Parses the Teams messages a Go test wrote (argv[2], a JSON array) as Teams would take them:
// each card with Microsoft's adaptivecards (the package Teams' renderers are built on), its
// Markdown with markdown-it. Prints a JSON array, one entry a message: what the parser
// reported, and each text's Markdown rendered to HTML, for the test to check.
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";

const require = createRequire(import.meta.url);
// The package's lib/ is ES modules written for bundlers; dist/ is its UMD bundle, which Node
// loads as it is.
const AC = require("adaptivecards/dist/adaptivecards.js");
const MarkdownIt = require("markdown-it");
const md = new MarkdownIt();

// texts walks a card's JSON for what Teams renders as Markdown: TextBlocks' text, Facts'
// titles and values.
function texts(node, out) {
  if (Array.isArray(node)) {
    node.forEach((n) => texts(n, out));
  } else if (node && typeof node === "object") {
    if (node.type === "TextBlock") out.push(node.text);
    if (node.type === "FactSet") node.facts.forEach((f) => out.push(f.title, f.value));
    Object.values(node).forEach((n) => texts(n, out));
  }
  return out;
}

function check(message) {
  const errors = [];
  if (message.type !== "message" || !Array.isArray(message.attachments) || message.attachments.length !== 1) {
    errors.push("not a message with one attachment");
    return { errors, texts: [] };
  }
  const att = message.attachments[0];
  if (att.contentType !== "application/vnd.microsoft.card.adaptive") errors.push(`contentType ${att.contentType}`);
  const card = new AC.AdaptiveCard();
  const ctx = new AC.SerializationContext();
  card.parse(att.content, ctx);
  for (let i = 0; i < ctx.eventCount; i++) errors.push(`parse: ${ctx.getEventAt(i).message}`);
  for (const e of card.validateProperties().validationEvents) errors.push(`validate: ${e.message}`);
  const v = card.version;
  if (!v || v.major !== 1 || v.minor > 5) errors.push(`version ${v}`);
  if (att.content.version !== `${v.major}.${v.minor}`) errors.push(`version ${att.content.version} read as ${v}`);
  const rendered = texts(att.content.body, []).map((text) => ({ text, html: md.render(text) }));
  const actions = [];
  for (let i = 0; i < card.getActionCount(); i++) {
    const a = card.getActionAt(i);
    actions.push({ type: a.getJsonTypeName(), title: a.title, url: a.url });
  }
  return { errors, texts: rendered, actions, elements: card.getItemCount() };
}

const messages = JSON.parse(readFileSync(process.argv[2], "utf8"));
process.stdout.write(JSON.stringify(messages.map(check)));
