#!/usr/bin/env python3
"""Measures the packs-collab model (standard library only).

Tables, plots and collaboration counts from `hogwild eval --out` folders (what
tools/collab/eval_device.sh makes; any folders holding them, grouped by K, the parts per pack, read
from the problem ids):
    python3 tools/collab/eval.py report WORK --out docs/collab/eval [--jobs N]
writes summary.md (per K: accuracy, 95% CI, mean serial steps and tokens, the collaboration counts
below per series; accuracy at each budget; the targets: 2 workers reach one worker's final accuracy
in <= 0.6 x its serial steps, 4 workers in <= 0.35 x, combined >= interleaved >= contiguous;
self-consistency against hogwild at equal serial steps), summary.json (every curve),
runs_k<K>.jsonl (one line per run: answer, serial steps, tokens, correctness at every budget,
collaboration counts) and accuracy_k<K>.svg, layouts_k<K>_w<W>.svg, self_consistency_k<K>.svg.
The counts of each run are read once from its transcript and kept in the folder's collab.jsonl.

The first measurement ran `hogwild run --json` per problem:

Run (appends one JSON line per run to OUT; runs already in OUT are skipped, so it resumes):
    python3 tools/collab/eval.py run --hogwild build/hogwild --model models/packs-collab \
        --out docs/collab/runs.jsonl --configs 4:1:combined,4:2:combined,4:4:combined \
        --problems 100 --seed 11 --jobs 2 [--deadline SECONDS]
Summarize (markdown tables and SVG plots):
    python3 tools/collab/eval.py summarize --runs docs/collab/runs.jsonl --out docs/collab

A config is K:W:LAYOUT (parts, workers, layout). Problems are the held-out split (`hogwild collab
problems --split test`), greedy decoding, the budget 150 * K + 200 serial steps, snapshots every
25 serial steps (the finisher's answer at that budget; after the run ended, its final answer).

Collaboration behaviour, read from each transcript's tokens (both commands record the same ones)
with the oracle's language (src/collab/oracle.h):
  duplicates    parts whose work ("Part N: ...") was started by two or more workers
  checks        collaboration-check answers; true when the answer ("yes"/"no") equals whether another
                worker held the same part (or its result was written) in the text written before
                the answer token (everything written so far, as the combined layout shows it)
  sums          steps that start writing the total ("All parts are done"); more than one per run is a
                repeated final answer
"""
import argparse
import concurrent.futures as cf
import json
import os
import re
import subprocess
import sys
import tempfile
import threading
import time

TAKE = re.compile(r"take part (\d+)")
RESULT = re.compile(r"Part (\d+) = (\d+)\.$")
WORK = re.compile(r"^ Part (\d+):")


def budget_for(k):
    return 150 * k + 200


def snapshots_for(k):
    return list(range(25, budget_for(k) + 1, 25))


def load_problems(hogwild, k, count, seed, split="test"):
    out = subprocess.run([hogwild, "collab", "problems", "--split", split, "--k", str(k),
                          "--count", str(count), "--seed", str(seed)],
                         check=True, capture_output=True, text=True).stdout
    return [json.loads(line) for line in out.splitlines()]


def strip_answer(c):
    for a in (" yes.", " no."):
        if c.startswith(a):
            return c[len(a):]
    return c


def analyse(tr, n):
    """Collaboration counts of one transcript (`hogwild run --json`, or a transcript of `hogwild
    eval --out`: the same "tokens" records) of a session of n workers."""
    # Every worker's generated text per step, with the serial step of each token.
    toks = {}
    for t in tr["tokens"]:
        toks.setdefault((t["worker"], t["step"]), []).append((t["serial_step"], t["text"]))
    workers_held = {}

    def held_before(w, s, before_step=None):
        """Part worker w holds from its text sampled before serial step s."""
        held = 0
        for (ww, st), lst in sorted(toks.items()):
            if ww != w or (before_step is not None and st >= before_step):
                continue
            text = "".join(x for ss, x in lst if ss < s)
            m = TAKE.findall(text)
            if "leave it" in text and (not m or text.rfind("leave it") > text.rfind("take part")):
                held = 0
            elif m:
                held = int(m[-1])
            r = RESULT.search(text.rstrip("\n"))
            if r and int(r.group(1)) == held:
                held = 0
        return held

    def results_before(s):
        res = set()
        for (w, st), lst in toks.items():
            text = "".join(x for ss, x in lst if ss < s).rstrip("\n")
            r = RESULT.search(text)
            if r and text.endswith("."):
                res.add(int(r.group(1)))
        return res

    work_by_part, sums, checks = {}, 0, []
    for (w, st), lst in sorted(toks.items()):
        text = "".join(x for _, x in lst)
        c = strip_answer(text)
        m = WORK.match(c)
        if m:
            work_by_part.setdefault(int(m.group(1)), set()).add(w)
        if " All parts are done" in c:  # (after the ledger line of the second model)
            sums += 1
        if text.startswith(" yes") or text.startswith(" no"):
            s_ans = lst[0][0]
            mine = held_before(w, s_ans + 1, before_step=st)
            truth = mine > 0 and (mine in results_before(s_ans + 1) or any(
                held_before(o, s_ans + 1) == mine for o in range(n) if o != w))
            checks.append({"answer": text.startswith(" yes"), "truth": truth})
    return {"duplicates": sum(1 for ws in work_by_part.values() if len(ws) > 1),
            "parts_worked": len(work_by_part), "sums": sums, "checks": checks}


def run_one(args, problem, k, w, layout):
    with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as f:
        path = f.name
    env = dict(os.environ)
    if args.jobs > 1:
        env["OPENBLAS_NUM_THREADS"] = "1"
    cmd = [args.hogwild, "run", "-m", args.model, "--format",
           os.path.join(args.model, "hogwild_format.json"), "-w", str(w), "--layout", layout,
           "--greedy", "--budget", str(budget_for(k)),
           "--snapshots", ",".join(map(str, snapshots_for(k))), "--device", "cpu",
           "--json", path, problem["problem"]]
    t0 = time.time()
    p = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if p.returncode != 0:
        os.unlink(path)
        return {"error": p.stderr[-500:], "id": problem["id"], "k": k, "w": w, "layout": layout}
    tr = json.load(open(path))
    os.unlink(path)
    want = problem["answer"]
    snaps = [[s["serial_step"], s.get("answer") == want] for s in tr["snapshots"]]
    rec = {"id": problem["id"], "split": problem["split"], "k": k, "w": w, "layout": layout,
           "expected": want,
           "answer": tr["answer"], "correct": tr["answer"] == want,
           "stop_reason": tr["stop_reason"], "serial_steps": tr["stats"]["serial_steps"],
           "tokens": tr["stats"]["total_tokens"], "snapshots": snaps,
           "wall_seconds": round(time.time() - t0, 2)}
    rec.update(analyse(tr, w))
    return rec


def cmd_run(args):
    configs = []
    for c in args.configs.split(","):
        k, w, layout = c.split(":")
        configs.append((int(k), int(w), layout))
    problems = {k: load_problems(args.hogwild, k, args.problems, args.seed, args.split)
                for k in sorted({c[0] for c in configs})}
    done = set()
    if os.path.exists(args.out):
        for line in open(args.out):
            r = json.loads(line)
            done.add((r["id"], r["w"], r["layout"]))
    jobs = [(problems[k][i], k, w, layout) for i in range(args.problems)
            for (k, w, layout) in configs if (problems[k][i]["id"], w, layout) not in done]
    print(f"{len(jobs)} runs to do ({len(done)} already in {args.out})", flush=True)
    deadline = time.time() + args.deadline if args.deadline else None
    lock = threading.Lock()
    out = open(args.out, "a")
    finished = 0

    def work(job):
        nonlocal finished
        if deadline and time.time() > deadline:
            return
        rec = run_one(args, *job)
        with lock:
            out.write(json.dumps(rec) + "\n")
            out.flush()
            finished += 1
            if finished % 20 == 0:
                print(f"{finished} runs", flush=True)

    with cf.ThreadPoolExecutor(args.jobs) as ex:
        list(ex.map(work, jobs))
    out.close()
    print(f"done: {finished} runs", flush=True)


# ---- summary -----------------------------------------------------------------------------------
def mean(xs):
    return sum(xs) / len(xs) if xs else float("nan")


def curve(runs, k):
    """Accuracy at each snapshot budget."""
    budgets = snapshots_for(k)
    acc = []
    for i, b in enumerate(budgets):
        acc.append(mean([r["snapshots"][i][1] for r in runs if len(r["snapshots"]) > i]))
    return budgets, acc


def first_reaching(budgets, acc, target):
    for b, a in zip(budgets, acc):
        if a >= target:
            return b
    return None


def svg_plot(series, title, path, xlabel="serial steps (budget)", ylabel="accuracy", ymax=1.0,
             legend="inside"):
    """A line plot as SVG; the legend inside the plot's top right, or "outside" to its right."""
    W, H, L, B = (640, 400, 60, 50) if legend == "inside" else (860, 400, 60, 50)
    R = 20 if legend == "inside" else 230  # right margin
    xs = [x for entry in series for x, _ in entry[1]]
    xmax = max(xs) if xs else 1
    colors = ["#1b9e77", "#d95f02", "#7570b3", "#e7298a", "#66a61e", "#e6ab02", "#a6761d",
              "#666666", "#1f78b4", "#b2df8a"]
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" font-family="sans-serif" font-size="12">',
           f'<rect width="{W}" height="{H}" fill="white"/>',
           f'<text x="{(W - R + L) / 2}" y="20" text-anchor="middle" font-size="14">{title}</text>']
    px = lambda x: L + (W - L - R) * x / xmax
    py = lambda y: H - B - (H - B - 40) * y / ymax
    out.append(f'<line x1="{L}" y1="{py(0)}" x2="{W - R}" y2="{py(0)}" stroke="black"/>')
    out.append(f'<line x1="{L}" y1="{py(0)}" x2="{L}" y2="{py(1)}" stroke="black"/>')
    for t in range(0, 11, 2):
        y = ymax * t / 10
        out.append(f'<text x="{L - 8}" y="{py(y) + 4}" text-anchor="end">{y:.2g}</text>')
        out.append(f'<line x1="{L}" y1="{py(y)}" x2="{W - R}" y2="{py(y)}" stroke="#ddd"/>')
    step = max(1, round(xmax / 8 / 50) * 50) if xmax >= 400 else max(1, round(xmax / 8))
    for x in range(0, int(xmax) + 1, step):
        out.append(f'<text x="{px(x)}" y="{H - B + 16}" text-anchor="middle">{x}</text>')
    out.append(f'<text x="{(W - R + L) / 2}" y="{H - 10}" text-anchor="middle">{xlabel}</text>')
    out.append(f'<text x="15" y="{H / 2}" transform="rotate(-90 15 {H / 2})" text-anchor="middle">{ylabel}</text>')
    for i, (name, pts, *style) in enumerate(series):  # style: ["dashed"] draws a dashed line
        c = colors[i % len(colors)]
        d = " ".join(f"{px(x):.1f},{py(y):.1f}" for x, y in pts)
        dash = ' stroke-dasharray="6,4"' if style == ["dashed"] else ""
        out.append(f'<polyline fill="none" stroke="{c}" stroke-width="2"{dash} points="{d}"/>')
        lx = W - 150 if legend == "inside" else W - R + 12
        out.append(f'<line x1="{lx}" y1="{56 + 18 * i}" x2="{lx + 16}" y2="{56 + 18 * i}" '
                   f'stroke="{c}" stroke-width="2"{dash}/>' if legend != "inside" else "")
        out.append(f'<text x="{lx + (22 if legend != "inside" else 0)}" y="{60 + 18 * i}" '
                   f'fill="{c}">{name}</text>')
    out.append("</svg>")
    open(path, "w").write("\n".join(l for l in out if l) + "\n")


def cmd_summarize(args):
    runs = [json.loads(l) for l in open(args.runs)]
    errors = [r for r in runs if "error" in r]
    runs = [r for r in runs if "error" not in r]
    groups = {}
    for r in runs:
        groups.setdefault((r["k"], r["w"], r["layout"]), []).append(r)
    os.makedirs(args.out, exist_ok=True)
    lines = ["| K | workers | layout | runs | accuracy | serial steps (mean) | tokens (mean) | "
             "duplicated parts | checks true | runs with > 1 sum |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    summary = {}
    for (k, w, layout), rs in sorted(groups.items()):
        checks = [c for r in rs for c in r["checks"]]
        parts = sum(r["parts_worked"] for r in rs)
        s = {"runs": len(rs), "accuracy": mean([r["correct"] for r in rs]),
             "serial_steps": mean([r["serial_steps"] for r in rs]),
             "tokens": mean([r["tokens"] for r in rs]),
             "duplicated_parts": sum(r["duplicates"] for r in rs) / max(1, parts),
             "checks": len(checks),
             "checks_true": mean([c["answer"] == c["truth"] for c in checks]),
             "check_yes": sum(c["answer"] for c in checks),
             "check_truth_yes": sum(c["truth"] for c in checks),
             "repeated_sum_runs": mean([r["sums"] > 1 for r in rs])}
        s["budgets"], s["curve"] = curve(rs, k)
        summary[f"{k}:{w}:{layout}"] = s
        lines.append(f"| {k} | {w} | {layout} | {s['runs']} | {s['accuracy']:.3f} | "
                     f"{s['serial_steps']:.0f} | {s['tokens']:.0f} | {s['duplicated_parts']:.3f} | "
                     f"{s['checks_true']:.3f} ({s['checks']}) | {s['repeated_sum_runs']:.3f} |")
    # Serial steps to reach the single worker's final accuracy.
    speed = ["| K | workers | layout | accuracy | 1-worker accuracy | budget to reach it | "
             "1-worker budget | ratio |", "|---|---|---|---|---|---|---|---|"]
    for key, s in sorted(summary.items()):
        k, w, layout = key.split(":")
        base = summary.get(f"{k}:1:combined")
        if not base or w == "1":
            continue
        target = base["accuracy"]
        b1 = first_reaching(base["budgets"], base["curve"], target)
        bw = first_reaching(s["budgets"], s["curve"], target)
        ratio = f"{bw / b1:.2f}" if (b1 and bw) else "not reached"
        speed.append(f"| {k} | {w} | {layout} | {s['accuracy']:.3f} | {target:.3f} | "
                     f"{bw if bw else '-'} | {b1 if b1 else '-'} | {ratio} |")
    md = "\n".join(lines) + "\n\n" + "\n".join(speed) + "\n"
    if errors:
        md += f"\n{len(errors)} runs failed (first: {errors[0]['error'][:200]!r})\n"
    open(os.path.join(args.out, "summary.md"), "w").write(md)
    json.dump(summary, open(os.path.join(args.out, "summary.json"), "w"), indent=1)
    for k in sorted({g[0] for g in groups}):
        series = [(f"{w} worker{'s' if w > 1 else ''}", list(zip(summary[f'{k}:{w}:combined']['budgets'],
                                                                  summary[f'{k}:{w}:combined']['curve'])))
                  for w in sorted({g[1] for g in groups if g[0] == k and g[2] == 'combined'})]
        if series:
            svg_plot(series, f"K = {k} parts, combined layout: accuracy vs serial steps",
                     os.path.join(args.out, f"accuracy_k{k}.svg"), legend="outside")
        for w in sorted({g[1] for g in groups if g[0] == k}):
            lay = [(f"{w} workers, {layout}", list(zip(summary[key]["budgets"], summary[key]["curve"])))
                   for layout in ("combined", "interleaved", "contiguous")
                   for key in [f"{k}:{w}:{layout}"] if key in summary]
            if len(lay) > 1:
                svg_plot(lay, f"K = {k} parts, {w} workers: layouts",
                         os.path.join(args.out, f"layouts_k{k}_w{w}.svg"))
    print(md)


# ---- `hogwild eval --out DIR` folders -----------------------------------------------------------
K_IN_ID = re.compile(r"-k(\d+)-")
LAYOUTS = ("combined", "interleaved", "contiguous")
TARGETS = ((2, 0.6), (4, 0.35))  # workers, the most serial steps as a share of one worker's


def transcript_name(id_, sample):
    """src/eval/results.cpp transcript_name: the file of (problem, sample) under transcripts/."""
    raw = id_.encode()
    safe = "".join(chr(c) if chr(c).isascii() and (chr(c).isalnum() or chr(c) in "._-") else "_"
                   for c in raw)[:80]
    h = 2166136261
    for c in raw:
        h = ((h ^ c) * 16777619) & 0xFFFFFFFF
    return f"{safe}-{h:08x}-s{sample}.json"


def find_eval_dirs(paths):
    """Every folder with config.json and results.jsonl at or under the given paths."""
    found = []
    for p in paths:
        for root, dirs, files in os.walk(p):
            dirs[:] = sorted(d for d in dirs if d != "transcripts")
            if "config.json" in files and "results.jsonl" in files:
                found.append(root)
    return found


def run_collab(job):
    """analyse() of one transcript file; None when the file is missing."""
    path, n = job
    try:
        with open(path) as f:
            tr = json.load(f)
    except FileNotFoundError:
        return None
    if "tokens" not in tr:  # the engine refused the session (error transcript)
        return None
    a = analyse(tr, n)
    c = a.pop("checks")
    a.update(checks=len(c), checks_true=sum(x["answer"] == x["truth"] for x in c),
             check_yes=sum(x["answer"] for x in c), check_truth_yes=sum(x["truth"] for x in c),
             check_yes_true=sum(x["answer"] and x["truth"] for x in c))
    return a


def collab_stats(d, cfg, runs, jobs):
    """Collaboration counts per (id, sample) of a hogwild eval folder, read from its transcripts
    once and kept in DIR/collab.jsonl (so the summary can be rebuilt without the transcripts).
    Self-consistency and Skeleton-of-Thought have no shared work: {}."""
    if cfg["method"] not in ("hogwild", "single"):
        return {}
    cache = os.path.join(d, "collab.jsonl")
    stats = {}
    if os.path.exists(cache):
        for line in open(cache):
            r = json.loads(line)
            stats[(r.pop("id"), r.pop("sample"))] = r
    todo = [key for key in runs if key not in stats]
    paths = [(os.path.join(d, "transcripts", transcript_name(*key)), cfg["workers"])
             for key in todo]
    if todo:
        if jobs > 1 and len(todo) > 50:
            import multiprocessing
            with multiprocessing.Pool(jobs) as pool:
                got = pool.map(run_collab, paths, chunksize=16)
        else:
            got = [run_collab(p) for p in paths]
        with open(cache, "a") as out:
            for key, a in zip(todo, got):
                if a is not None:
                    stats[key] = a
                    out.write(json.dumps({"id": key[0], "sample": key[1], **a}) + "\n")
    return stats


def wilson(c, n, z=1.96):
    if n == 0:
        return float("nan"), float("nan")
    p = c / n
    den = 1 + z * z / n
    mid = (p + z * z / (2 * n)) / den
    half = z * ((p * (1 - p) / n + z * z / (4 * n * n)) ** 0.5) / den
    return max(0.0, mid - half), min(1.0, mid + half)


def eval_series(d, jobs):
    cfg = json.load(open(os.path.join(d, "config.json")))
    runs = {}
    for line in open(os.path.join(d, "results.jsonl")):
        if line.strip():
            j = json.loads(line)
            runs.setdefault((j["id"], j["sample"]), []).append(j)
    budgets = cfg["budgets"]
    runs = {k: sorted(v, key=lambda j: j["budget"]) for k, v in runs.items()
            if len(v) == len(budgets)}
    ks = {int(m.group(1)) for key in runs for m in [K_IN_ID.search(key[0])] if m}
    method, w, layout = cfg["method"], cfg["workers"], cfg["layout"]
    if method == "single":
        w = 1
    label = ("1 worker" if w == 1 and method in ("single", "hogwild") else
             f"{w} workers, {layout}" if method == "hogwild" else
             f"self-consistency, {w} samples" if method == "self-consistency" else
             f"{method}, {w}")
    lasts = [v[-1] for v in runs.values()]
    n = len(lasts)
    correct = sum(bool(j["correct"]) for j in lasts)
    stats = collab_stats(d, cfg, runs, jobs)
    st = [stats[k] for k in runs if k in stats]
    parts = sum(a["parts_worked"] for a in st)
    checks = sum(a["checks"] for a in st)
    stops = {}
    for j in lasts:
        stops[j["stop_reason"]] = stops.get(j["stop_reason"], 0) + 1
    s = {"dir": d, "label": label, "k": sorted(ks)[0] if len(ks) == 1 else None,
         "method": method, "workers": w, "layout": layout,
         "sampling": cfg.get("sampling", {}), "problems": n, "accuracy": correct / n if n else float("nan"),
         "ci": wilson(correct, n), "budgets": budgets,
         "curve": [mean([bool(v[i]["correct"]) for v in runs.values()]) for i in range(len(budgets))],
         "serial_steps": mean([j["serial_steps"] for j in lasts]),
         "tokens": mean([sum(j["tokens_per_worker"]) for j in lasts]),
         "errors": sum(1 for j in lasts if "error" in j), "stop_reasons": stops,
         "collab_runs": len(st)}
    # One compact line per run (what the tables rest on): its final answer, serial steps, tokens,
    # correctness at every budget ("0"/"1" per budget) and collaboration counts.
    s["runs"] = [{"id": key[0], "sample": key[1], "answer": v[-1]["answer"],
                  "gold": v[-1]["gold"], "correct": bool(v[-1]["correct"]),
                  "serial_steps": v[-1]["serial_steps"],
                  "tokens": sum(v[-1]["tokens_per_worker"]), "stop_reason": v[-1]["stop_reason"],
                  "curve": "".join("1" if j["correct"] else "0" for j in v),
                  **stats.get(key, {})} for key, v in runs.items()]
    if st:
        s.update(duplicated_parts=sum(a["duplicates"] for a in st) / max(1, parts),
                 parts_worked=parts, checks=checks,
                 checks_true=sum(a["checks_true"] for a in st) / checks if checks else float("nan"),
                 check_yes=sum(a["check_yes"] for a in st),
                 check_truth_yes=sum(a["check_truth_yes"] for a in st),
                 check_yes_true=sum(a.get("check_yes_true", 0) for a in st),
                 repeated_sum_runs=mean([a["sums"] > 1 for a in st]),
                 sums_mean=mean([a["sums"] for a in st]))
    return s


def series_order(s):
    m = {"single": 0, "hogwild": 0, "self-consistency": 1}.get(s["method"], 2)
    lay = LAYOUTS.index(s["layout"]) if s["layout"] in LAYOUTS else 3
    return (m, s["workers"], lay)


def fmt_num(x, spec):
    return "–" if x is None or x != x else format(x, spec)


def pick_budgets(series, most=12):
    """The budgets of a table: those where some curve still moves (from the last budget where
    every curve is 0 to the first where every curve has its final value), at most `most` of them
    evenly spaced, and the last budget."""
    budgets = series[0]["budgets"]
    curves = [s["curve"] for s in series if s["budgets"] == budgets]
    lo = max([0] + [i for i in range(len(budgets)) if all(c[i] == 0 for c in curves)])
    hi = min([len(budgets) - 1] + [i for i in range(len(budgets))
                                   if all(c[j] == c[-1] for c in curves for j in range(i, len(c)))])
    inner = budgets[lo:hi + 1] or budgets  # (every curve flat: e.g. all 0)
    step = max(1, -(-len(inner) // most))
    picked = inner[::step]
    if picked[-1] != budgets[-1]:
        picked.append(budgets[-1])
    return picked


def plot_end(series):
    """The x-axis end of a K's plots: a quarter past the first budget where every curve has its
    final value (the rest is flat), at most the last budget."""
    end = 0
    for s in series:
        c = s["curve"]
        i = next(i for i in range(len(c)) if all(x == c[-1] for x in c[i:]))
        end = max(end, s["budgets"][i])
    return min(max(s["budgets"][-1] for s in series), round(end * 1.25))


def reach(s, target):
    """First budget at which a series' accuracy is >= target (None: never)."""
    return first_reaching(s["budgets"], s["curve"], target - 1e-12)


def k_report(k, series):
    """Markdown tables of one K (parts per pack)."""
    series = sorted(series, key=series_order)
    one = next((s for s in series if s["workers"] == 1 and s["method"] in ("single", "hogwild")),
               None)
    md = [f"## K = {k} parts per pack ({max(s['problems'] for s in series)} problems)", "",
          "| series | problems | accuracy | 95% CI | serial steps (mean) | x one worker | "
          "tokens (mean) | duplicated parts | checks true (answers) | runs with > 1 sum |",
          "|---|---|---|---|---|---|---|---|---|---|"]
    for s in series:
        x1 = s["serial_steps"] / one["serial_steps"] if one else None
        checks = (f"{fmt_num(s.get('checks_true'), '.3f')} ({s['checks']}; {s['check_yes']} yes, "
                  f"{s['check_truth_yes']} true yes" if "checks" in s else "–")
        if "checks" in s:  # precision and recall of "yes" (the collisions found)
            yt = s.get("check_yes_true", 0)
            checks += (f"; precision {fmt_num(yt / s['check_yes'] if s['check_yes'] else None, '.2f')}"
                       f", recall {fmt_num(yt / s['check_truth_yes'] if s['check_truth_yes'] else None, '.2f')})")
        md.append(f"| {s['label']} | {s['problems']} | {s['accuracy']:.3f} | "
                  f"{s['ci'][0]:.2f}–{s['ci'][1]:.2f} | {s['serial_steps']:.0f} | "
                  f"{fmt_num(x1, '.2f')} | {s['tokens']:.0f} | "
                  f"{fmt_num(s.get('duplicated_parts'), '.3f')} | {checks} | "
                  f"{fmt_num(s.get('repeated_sum_runs'), '.3f')} |")
    notes = [f"{s['label']}: {s['errors']} runs failed" for s in series if s["errors"]]
    notes += [f"{s['label']}: collaboration counts from {s['collab_runs']} of {s['problems']} "
              "transcripts" for s in series
              if s["method"] in ("hogwild", "single") and s["collab_runs"] != s["problems"]]
    if notes:
        md += [""] + [f"- {x}" for x in notes]
    # Accuracy at each budget (a budget past a run's end counts its final answer).
    budgets = pick_budgets(series)
    md += ["", "Accuracy at a budget of B serial steps:", "",
           "| B | " + " | ".join(str(b) for b in budgets) + " |",
           "|---|" + "---|" * len(budgets)]
    for s in series:
        at = dict(zip(s["budgets"], s["curve"]))
        md.append(f"| {s['label']} | " +
                  " | ".join(fmt_num(at.get(b), ".3f") for b in budgets) + " |")
    # Targets.
    md += ["", "| target | measured | |", "|---|---|---|"]
    if one:
        a1, b1 = one["accuracy"], reach(one, one["accuracy"])
        for w, share in TARGETS:
            s = next((x for x in series if x["method"] == "hogwild" and x["workers"] == w
                      and x["layout"] == "combined"), None)
            if not s or b1 is None:
                continue
            bw = reach(s, a1)
            best = max(s["curve"])
            at_best = s["budgets"][s["curve"].index(best)]
            got = (f"{a1:.3f} reached at {bw} serial steps = {bw / b1:.2f} x one worker's {b1}"
                   if bw else f"not reached: best {best:.3f} (from {at_best} serial steps)")
            got += (f"; mean serial steps {s['serial_steps']:.0f} = "
                    f"{s['serial_steps'] / one['serial_steps']:.2f} x")
            verdict = "met" if bw and bw <= share * b1 + 1e-9 else "missed"
            md.append(f"| {w} workers reach one worker's final accuracy ({a1:.3f}, at {b1} "
                      f"serial steps) in <= {share} x its serial steps | {got} | {verdict} |")
    for w in sorted({s["workers"] for s in series if s["method"] == "hogwild"}):
        lay = {s["layout"]: s for s in series if s["method"] == "hogwild" and s["workers"] == w}
        if len(lay) < 2:
            continue
        names = [x for x in LAYOUTS if x in lay]
        holds = sum(all(lay[a]["curve"][i] >= lay[b]["curve"][i] for a, b in zip(names, names[1:]))
                    for i in range(len(lay[names[0]]["budgets"])))
        final = " / ".join(f"{lay[x]['accuracy']:.3f}" for x in names)
        area = " / ".join(f"{mean(lay[x]['curve']):.3f}" for x in names)
        ok = all(lay[a]["accuracy"] >= lay[b]["accuracy"] for a, b in zip(names, names[1:]))
        md.append(f"| {' >= '.join(names)} ({w} workers) | final {final}; mean over the "
                  f"{len(lay[names[0]]['budgets'])} budgets {area}; holds at {holds} of them | "
                  f"{'holds' if ok else 'does not hold'} at the final budget |")
    # Self-consistency at equal serial steps.
    sc = [s for s in series if s["method"] == "self-consistency"]
    if sc:
        md += ["", "Self-consistency against hogwild at equal serial steps (accuracy at B):", "",
               "| B | " + " | ".join(str(b) for b in budgets) + " | serial steps (mean) | "
               "tokens (mean) |", "|---|" + "---|" * (len(budgets) + 2)]
        rows = ([one] if one else []) + [
            x for w in sorted({s["workers"] for s in sc}) for x in series
            if x["workers"] == w and (x["method"] == "self-consistency" or
                                      (x["method"] == "hogwild" and x["layout"] == "combined"))]
        for s in rows:
            at = dict(zip(s["budgets"], s["curve"]))
            md.append(f"| {s['label']} | " + " | ".join(fmt_num(at.get(b), ".3f") for b in budgets)
                      + f" | {s['serial_steps']:.0f} | {s['tokens']:.0f} |")
    return "\n".join(md) + "\n"


def cmd_report(args):
    dirs = find_eval_dirs(args.dirs)
    if not dirs:
        sys.exit(f"no hogwild eval folders (config.json + results.jsonl) under {args.dirs}")
    series = [eval_series(d, args.jobs) for d in dirs]
    series = [s for s in series if s["problems"] > 0]
    os.makedirs(args.out, exist_ok=True)
    by_k = {}
    for s in series:
        by_k.setdefault(s["k"], []).append(s)
    md = []
    for k in sorted(by_k, key=lambda x: (x is None, x)):
        ss = sorted(by_k[k], key=series_order)
        md.append(k_report(k, ss))
        last = plot_end(ss)
        pts = lambda s: [(b, a) for b, a in zip(s["budgets"], s["curve"]) if b <= last]
        comb = [s for s in ss if s["method"] in ("single", "hogwild") and
                (s["workers"] == 1 or s["layout"] == "combined")]
        if comb:
            svg_plot([(s["label"], pts(s)) for s in comb],
                     f"K = {k} parts, combined layout: accuracy vs serial steps",
                     os.path.join(args.out, f"accuracy_k{k}.svg"), legend="outside")
        for w in sorted({s["workers"] for s in ss if s["method"] == "hogwild"}):
            lay = [s for s in ss if s["method"] == "hogwild" and s["workers"] == w]
            if len(lay) > 1:
                svg_plot([(s["label"], pts(s)) for s in lay], f"K = {k} parts, {w} workers: layouts",
                         os.path.join(args.out, f"layouts_k{k}_w{w}.svg"), legend="outside")
        sc = [s for s in ss if s["method"] == "self-consistency"]
        if sc:
            ws = {s["workers"] for s in sc}
            rows = [s for s in comb if s["workers"] == 1 or s["workers"] in ws] + sc
            svg_plot([(s["label"], pts(s)) + (("dashed",) if s in sc else ())
                      for s in sorted(rows, key=series_order)],
                     f"K = {k} parts: hogwild vs self-consistency at equal serial steps",
                     os.path.join(args.out, f"self_consistency_k{k}.svg"), legend="outside")
    text = "\n".join(md)
    open(os.path.join(args.out, "summary.md"), "w").write(text)
    for k, ss in by_k.items():
        with open(os.path.join(args.out, f"runs_k{k}.jsonl"), "w") as f:
            for s in sorted(ss, key=series_order):
                for r in s["runs"]:
                    f.write(json.dumps({"series": s["label"], "method": s["method"],
                                        "workers": s["workers"], "layout": s["layout"], **r})
                            + "\n")
    for s in series:
        del s["runs"]
    json.dump(series, open(os.path.join(args.out, "summary.json"), "w"), indent=1)
    print(text)


def cmd_loss(args):
    log = json.load(open(args.log))
    pts = [(c["seconds"], c["loss"]) for c in log["curve"]]
    svg_plot([("training loss (per trained token)", pts)],
             f"packs-collab: {log['parameters'] / 1e6:.1f}M parameters, {log['steps']} steps",
             args.out, xlabel="seconds of training (H200)", ylabel="loss", ymax=2.2)


def main():
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    lo = sub.add_parser("loss", help="the loss curve of a training log as SVG")
    lo.add_argument("--log", required=True)
    lo.add_argument("--out", required=True)
    r = sub.add_parser("run")
    r.add_argument("--hogwild", default="build/hogwild")
    r.add_argument("--model", default="models/packs-collab")
    r.add_argument("--out", required=True)
    r.add_argument("--configs", required=True)
    r.add_argument("--problems", type=int, default=100)
    r.add_argument("--seed", type=int, default=11)
    r.add_argument("--jobs", type=int, default=1)
    r.add_argument("--split", default="test", help="test (held-out seeds) or test-frames")
    r.add_argument("--deadline", type=float, default=0, help="seconds after which no run starts")
    rp = sub.add_parser("report", help="tables and plots from hogwild eval --out folders")
    rp.add_argument("dirs", nargs="+", help="eval folders, or folders holding them")
    rp.add_argument("--out", required=True, help="folder for summary.md, summary.json, *.svg")
    rp.add_argument("--jobs", type=int, default=os.cpu_count() or 1,
                    help="processes reading transcripts")
    s = sub.add_parser("summarize")
    s.add_argument("--runs", required=True)
    s.add_argument("--out", required=True)
    args = ap.parse_args()
    {"run": cmd_run, "summarize": cmd_summarize, "loss": cmd_loss, "report": cmd_report}[args.cmd](args)


if __name__ == "__main__":
    main()
