#!/usr/bin/env python3
"""Measures the packs-collab model through `hogwild run --json` (standard library only).

Run (appends one JSON line per run to OUT; runs already in OUT are skipped, so it resumes):
    python3 tools/collab/eval.py run --hogwild build/hogwild --model models/packs-collab \
        --out docs/collab/runs.jsonl --configs 4:1:combined,4:2:combined,4:4:combined \
        --problems 100 --seed 11 --jobs 2 [--deadline SECONDS]
Summarize (markdown tables and SVG plots):
    python3 tools/collab/eval.py summarize --runs docs/collab/runs.jsonl --out docs/collab

A config is K:W:LAYOUT (parts, workers, layout). Problems are the held-out split (`hogwild collab
problems --split test`), greedy decoding, the budget 150 * K + 200 serial steps, snapshots every
25 serial steps (the finisher's answer at that budget; after the run ended, its final answer).

Collaboration behaviour, read from each transcript's steps and tokens with the oracle's language
(src/collab/oracle.h):
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


def analyse(tr, fmt):
    """Collaboration counts of one transcript."""
    check_text = fmt["collab_check"]["text"]
    n = tr["options"]["workers"]
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
        if c.startswith(" All parts are done"):
            sums += 1
        if text.startswith(" yes") or text.startswith(" no"):
            s_ans = lst[0][0]
            mine = held_before(w, s_ans + 1, before_step=st)
            truth = mine > 0 and (mine in results_before(s_ans + 1) or any(
                held_before(o, s_ans + 1) == mine for o in range(n) if o != w))
            checks.append({"answer": text.startswith(" yes"), "truth": truth})
    return {"duplicates": sum(1 for ws in work_by_part.values() if len(ws) > 1),
            "parts_worked": len(work_by_part), "sums": sums, "checks": checks}


def run_one(args, fmt, problem, k, w, layout):
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
    rec.update(analyse(tr, fmt))
    return rec


def cmd_run(args):
    fmt = json.load(open(os.path.join(args.model, "hogwild_format.json")))
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
        rec = run_one(args, fmt, *job)
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


def svg_plot(series, title, path, xlabel="serial steps (budget)", ylabel="accuracy", ymax=1.0):
    W, H, L, B = 640, 400, 60, 50
    xs = [x for _, pts in series for x, _ in pts]
    xmax = max(xs) if xs else 1
    colors = ["#1b9e77", "#d95f02", "#7570b3", "#e7298a", "#66a61e", "#e6ab02"]
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" font-family="sans-serif" font-size="12">',
           f'<rect width="{W}" height="{H}" fill="white"/>',
           f'<text x="{W / 2}" y="20" text-anchor="middle" font-size="14">{title}</text>']
    px = lambda x: L + (W - L - 20) * x / xmax
    py = lambda y: H - B - (H - B - 40) * y / ymax
    out.append(f'<line x1="{L}" y1="{py(0)}" x2="{W - 20}" y2="{py(0)}" stroke="black"/>')
    out.append(f'<line x1="{L}" y1="{py(0)}" x2="{L}" y2="{py(1)}" stroke="black"/>')
    for t in range(0, 11, 2):
        y = ymax * t / 10
        out.append(f'<text x="{L - 8}" y="{py(y) + 4}" text-anchor="end">{y:.2g}</text>')
        out.append(f'<line x1="{L}" y1="{py(y)}" x2="{W - 20}" y2="{py(y)}" stroke="#ddd"/>')
    step = max(1, round(xmax / 8 / 50) * 50) if xmax >= 400 else max(1, round(xmax / 8))
    for x in range(0, int(xmax) + 1, step):
        out.append(f'<text x="{px(x)}" y="{H - B + 16}" text-anchor="middle">{x}</text>')
    out.append(f'<text x="{W / 2}" y="{H - 10}" text-anchor="middle">{xlabel}</text>')
    out.append(f'<text x="15" y="{H / 2}" transform="rotate(-90 15 {H / 2})" text-anchor="middle">{ylabel}</text>')
    for i, (name, pts) in enumerate(series):
        c = colors[i % len(colors)]
        d = " ".join(f"{px(x):.1f},{py(y):.1f}" for x, y in pts)
        out.append(f'<polyline fill="none" stroke="{c}" stroke-width="2" points="{d}"/>')
        out.append(f'<text x="{W - 150}" y="{60 + 16 * i}" fill="{c}">{name}</text>')
    out.append("</svg>")
    open(path, "w").write("\n".join(out) + "\n")


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
                     os.path.join(args.out, f"accuracy_k{k}.svg"))
        for w in sorted({g[1] for g in groups if g[0] == k}):
            lay = [(f"{w} workers, {layout}", list(zip(summary[key]["budgets"], summary[key]["curve"])))
                   for layout in ("combined", "interleaved", "contiguous")
                   for key in [f"{k}:{w}:{layout}"] if key in summary]
            if len(lay) > 1:
                svg_plot(lay, f"K = {k} parts, {w} workers: layouts",
                         os.path.join(args.out, f"layouts_k{k}_w{w}.svg"))
    print(md)


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
    s = sub.add_parser("summarize")
    s.add_argument("--runs", required=True)
    s.add_argument("--out", required=True)
    args = ap.parse_args()
    {"run": cmd_run, "summarize": cmd_summarize, "loss": cmd_loss}[args.cmd](args)


if __name__ == "__main__":
    main()
