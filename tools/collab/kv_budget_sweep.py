#!/usr/bin/env python3
"""Accuracy of the collaborating model under a KV budget (docs/ARCHITECTURE.md §11).

Runs `hogwild run` on held-out packs (models/packs-collab, greedy, CPU): first without a budget,
then with --kv-budget = prompt + max(128, f x the tokens the unbounded run generated) for each
fraction f and each --kv-policy of --policies, and writes one JSON object: per setting, the
accuracy, the mean tokens forgotten, the runs that forgot and of those the runs whose history was
within the budget after the last forgetting (the rest ran out of tokens that may go), and the
mean serial steps. With --redundancies, evict runs once per weight of R-KV's redundancy term
(--kv-redundancy; 0 = off, attention alone). Summarise needs a budget of at least the prompt, one summary step and the room
a summary starts ahead of the budget (docs/ARCHITECTURE.md §11): a smaller one is raised to that
least budget, and the run says so ("raised"); its "summaries" are the summaries that replaced
steps.

  tools/collab/kv_budget_sweep.py --bin build/hogwild --count 20 --out sweep.json
  tools/collab/kv_budget_sweep.py --policies evict,summarise --fractions 1,0.5,0.25 \
      --count 20 --out docs/collab/kv_budget/policies_k4_w4.json
  tools/collab/kv_budget_sweep.py --fractions 0.75,0.5,0.25 --redundancies 0,0.5,0.9 \
      --count 20 --out docs/collab/kv_budget/redundancy_k4_w4.json
  # the long packs on a GPU (K = 8, 8 workers):
  tools/collab/kv_budget_sweep.py --device cuda --k 8 --workers 8 --count 100 \
      --policies evict,summarise --fractions 1,0.5,0.25 --out policies_k8_w8.json
"""
import argparse
import json
import os
import re
import subprocess
import tempfile


DEVICE = "cpu"


def run(binary, model, problem, workers, extra, path):
    with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as f:
        f.write(problem)
        pfile = f.name
    try:
        subprocess.run([binary, "run", "--device", DEVICE, "-m", model, "-w", str(workers),
                        "--greedy", "--no-live", "--json", path, "-f", pfile] + extra,
                       check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        with open(path) as f:
            return json.load(f)
    finally:
        os.unlink(pfile)


def least_summarise_budget(binary, model, problem, workers):
    """The least --kv-budget `run` accepts with --kv-policy summarise (from its refusal)."""
    with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as f:
        f.write(problem)
        pfile = f.name
    try:
        r = subprocess.run([binary, "run", "--device", DEVICE, "-m", model, "-w", str(workers),
                            "--greedy", "--no-live", "--kv-budget", "1", "--kv-policy",
                            "summarise", "-f", pfile], capture_output=True, text=True)
    finally:
        os.unlink(pfile)
    m = re.search(r"give at least (\d+) tokens", r.stderr)
    if not m:
        raise RuntimeError("no least budget in: " + r.stderr[-500:])
    return int(m.group(1))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bin", default="build/hogwild")
    ap.add_argument("--model", default="models/packs-collab")
    ap.add_argument("--k", type=int, default=4)
    ap.add_argument("--seed", type=int, default=11)
    ap.add_argument("--wording", default="first",
                    help="collab problems --wording: first (the six frames models/packs-collab "
                         "was trained on) or grammar")
    ap.add_argument("--count", type=int, default=20)
    ap.add_argument("--workers", type=int, default=4)
    ap.add_argument("--fractions", default="0.75,0.5,0.25")
    ap.add_argument("--chunk", type=int, default=0, help="--kv-chunk (0 = the default)")
    ap.add_argument("--policies", default="evict", help="comma-separated --kv-policy values")
    ap.add_argument("--device", default="cpu", help="run's --device (cpu, cuda, auto)")
    ap.add_argument("--redundancies", default="0",
                    help="comma-separated --kv-redundancy weights of the evict runs (0 = off)")
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    global DEVICE
    DEVICE = a.device
    packs = subprocess.run([a.bin, "collab", "problems", "--split", "test", "--k", str(a.k),
                            "--seed", str(a.seed), "--count", str(a.count),
                            "--wording", a.wording],
                           check=True, capture_output=True, text=True).stdout.splitlines()
    packs = [json.loads(p) for p in packs]
    fractions = [float(x) for x in a.fractions.split(",")]
    policies = a.policies.split(",")
    redundancies = [float(x) for x in a.redundancies.split(",")]
    # (policy, redundancy weight): summarise takes no weight
    runs = [(p, w) for p in policies for w in (redundancies if p == "evict" else [0.0])]

    def name(policy, w, f):  # evict alone, without the term, keeps the first sweep's names
        r = f" r{w:g}" if w > 0 else ""
        return f"{f:g}{r}" if policies == ["evict"] else f"{policy}{r} {f:g}"
    settings = {"none": []}
    settings.update({name(p, w, f): [] for p, w in runs for f in fractions})
    path = tempfile.mktemp(suffix=".json")
    for p in packs:
        base = run(a.bin, a.model, p["problem"], a.workers, [], path)
        prompt = base["stats"]["prompt_tokens"]
        generated = base["stats"]["total_tokens"]
        settings["none"].append({"id": p["id"], "right": str(base["answer"]) == str(p["answer"]),
                                 "forgotten": 0, "serial_steps": base["stats"]["serial_steps"]})
        least = (least_summarise_budget(a.bin, a.model, p["problem"], a.workers)
                 if "summarise" in policies else 0)
        for policy, w in runs:
            for f in fractions:
                budget = prompt + max(128, int(f * generated))
                raised = policy == "summarise" and budget < least
                budget = max(budget, least) if policy == "summarise" else budget
                extra = ["--kv-budget", str(budget), "--kv-policy", policy]
                if a.chunk and policy == "evict":
                    extra += ["--kv-chunk", str(a.chunk)]
                if w > 0:
                    extra += ["--kv-redundancy", f"{w:g}"]
                r = run(a.bin, a.model, p["problem"], a.workers, extra, path)
                forgotten = sum(x["end"] - x["begin"] for e in r["forgotten"]
                                for x in e["ranges"])
                last = r["forgotten"][-1] if r["forgotten"] else None
                settings[name(policy, w, f)].append({
                    "id": p["id"], "right": str(r["answer"]) == str(p["answer"]),
                    "budget": budget, "raised": raised, "forgotten": forgotten,
                    "summaries": sum("summary" in e for e in r["forgotten"]),
                    "kept": last["kept"] if last else None,
                    # None: nothing was forgotten (no event says the length)
                    "met": last["kept"] <= budget if last else None,
                    "serial_steps": r["stats"]["serial_steps"]})
    summary = {}
    for name, rows in settings.items():
        n = len(rows)
        summary[name] = {"accuracy": sum(r["right"] for r in rows) / n,
                         "runs_that_forgot": sum(r.get("met") is not None for r in rows),
                         "budget_met": sum(r.get("met") is True for r in rows),
                         "mean_forgotten": sum(r["forgotten"] for r in rows) / n,
                         "mean_serial_steps": sum(r["serial_steps"] for r in rows) / n,
                         "mean_budget": sum(r.get("budget", 0) for r in rows) / n,
                         "budgets_raised": sum(r.get("raised", False) for r in rows),
                         "runs_summarised": sum(r.get("summaries", 0) > 0 for r in rows)}
    out = {"model": a.model, "k": a.k, "seed": a.seed, "wording": a.wording, "count": a.count,
           "workers": a.workers,
           "chunk": a.chunk or 16, "policies": policies, "redundancies": redundancies,
           "summary": summary, "runs": settings}
    with open(a.out, "w") as f:
        json.dump(out, f, indent=1)
    print(json.dumps(summary, indent=1))


if __name__ == "__main__":
    main()
