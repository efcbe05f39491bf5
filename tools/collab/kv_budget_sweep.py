#!/usr/bin/env python3
"""Accuracy of the collaborating model under a KV budget (docs/ARCHITECTURE.md §11).

Runs `hogwild run` on held-out packs (models/packs-collab, greedy, CPU): first without a budget,
then with --kv-budget = prompt + max(128, f x the tokens the unbounded run generated) for each
fraction f, and writes one JSON object: per setting, the accuracy, the mean tokens forgotten, the
runs that forgot and of those the runs whose history was within the budget after the last
forgetting (the rest ran out of tokens that may go), and the mean serial steps.

  tools/collab/kv_budget_sweep.py --bin build/hogwild --count 20 --out sweep.json
"""
import argparse
import json
import os
import subprocess
import tempfile


def run(binary, model, problem, workers, extra, path):
    with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as f:
        f.write(problem)
        pfile = f.name
    try:
        subprocess.run([binary, "run", "--device", "cpu", "-m", model, "-w", str(workers),
                        "--greedy", "--no-live", "--json", path, "-f", pfile] + extra,
                       check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        with open(path) as f:
            return json.load(f)
    finally:
        os.unlink(pfile)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bin", default="build/hogwild")
    ap.add_argument("--model", default="models/packs-collab")
    ap.add_argument("--k", type=int, default=4)
    ap.add_argument("--seed", type=int, default=11)
    ap.add_argument("--count", type=int, default=20)
    ap.add_argument("--workers", type=int, default=4)
    ap.add_argument("--fractions", default="0.75,0.5,0.25")
    ap.add_argument("--chunk", type=int, default=0, help="--kv-chunk (0 = the default)")
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    packs = subprocess.run([a.bin, "collab", "problems", "--split", "test", "--k", str(a.k),
                            "--seed", str(a.seed), "--count", str(a.count)],
                           check=True, capture_output=True, text=True).stdout.splitlines()
    packs = [json.loads(p) for p in packs]
    fractions = [float(x) for x in a.fractions.split(",")]
    settings = {"none": []}
    settings.update({f"{f:g}": [] for f in fractions})
    path = tempfile.mktemp(suffix=".json")
    for p in packs:
        base = run(a.bin, a.model, p["problem"], a.workers, [], path)
        prompt = base["stats"]["prompt_tokens"]
        generated = base["stats"]["total_tokens"]
        settings["none"].append({"id": p["id"], "right": str(base["answer"]) == str(p["answer"]),
                                 "forgotten": 0, "serial_steps": base["stats"]["serial_steps"]})
        for f in fractions:
            budget = prompt + max(128, int(f * generated))
            extra = ["--kv-budget", str(budget)]
            if a.chunk:
                extra += ["--kv-chunk", str(a.chunk)]
            r = run(a.bin, a.model, p["problem"], a.workers, extra, path)
            forgotten = sum(x["end"] - x["begin"] for e in r["forgotten"] for x in e["ranges"])
            last = r["forgotten"][-1] if r["forgotten"] else None
            settings[f"{f:g}"].append({"id": p["id"], "right": str(r["answer"]) == str(p["answer"]),
                                       "budget": budget, "forgotten": forgotten,
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
                         "mean_serial_steps": sum(r["serial_steps"] for r in rows) / n}
    out = {"model": a.model, "k": a.k, "seed": a.seed, "count": a.count, "workers": a.workers,
           "chunk": a.chunk or 16, "summary": summary, "runs": settings}
    with open(a.out, "w") as f:
        json.dump(out, f, indent=1)
    print(json.dumps(summary, indent=1))


if __name__ == "__main__":
    main()
