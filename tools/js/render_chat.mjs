// Reference renderer for hogwild's chat-template tests: renders each case with @huggingface/jinja
// the way transformers.js does (Template(source).render(context)).
// Usage: node tools/js/render_chat.mjs CASES.json  → prints a JSON array, one entry per case:
//   {"out": "..."} or {"error": "..."}.
// A case is {"template": source, "context": {...}} (context = every template variable).
import { readFileSync } from "node:fs";
import { Template } from "@huggingface/jinja";

const cases = JSON.parse(readFileSync(process.argv[2], "utf8"));
const results = cases.map((c) => {
  try {
    return { out: new Template(c.template).render(c.context) };
  } catch (e) {
    return { error: String(e && e.message ? e.message : e) };
  }
});
process.stdout.write(JSON.stringify(results));
