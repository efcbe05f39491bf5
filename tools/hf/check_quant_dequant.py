#!/usr/bin/env python3
"""Checks make_golden_quant.py's dequantization (numpy alone, no torch) on the models of
tools/hf/make_golden_quant_models.sh, before they go to the GPU machine:
    python3 tools/hf/check_quant_dequant.py --models models/golden_quant [--hogwild build/hogwild]
For each quantized model it writes the dense f32 model of the same make_model_args without
--quant (make-model is deterministic: the values the quantizer started from) and checks every
tensor: dense ones identical, int4 layers within half the layer's largest step of the dense
values (round to nearest; a wrong nibble order, zero offset or g_idx is far outside), fp8 layers
within half an e4m3 step (2^-4 relative, 2^-10 * scale_inv below the smallest normal).
Exits 1 on the first violation."""
import argparse
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_golden_quant as mgq  # noqa: E402


def dense_twin(hogwild, args, out):
    cmd = [hogwild, "make-model", "--arch", args["arch"], "--dtype", "f32", "--seed",
           str(args["seed"]), "--out", out, "-q", "--force"]
    if args.get("config"):
        cfg = out + ".config.json"
        with open(cfg, "w") as f:
            json.dump(args["config"], f)
        cmd += ["--config", cfg]
    else:
        cmd += ["--preset", args["preset"]]
    subprocess.run(cmd, check=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--models", required=True)
    ap.add_argument("--hogwild", default="build/hogwild")
    a = ap.parse_args()
    bad = 0
    with tempfile.TemporaryDirectory() as tmp:
        for name in sorted(os.listdir(a.models)):
            d = os.path.join(a.models, name)
            if not os.path.isfile(os.path.join(d, "make_model_args.json")):
                continue
            args = json.load(open(os.path.join(d, "make_model_args.json")))
            twin = os.path.join(tmp, name)
            dense_twin(a.hogwild, args, twin)
            qc = json.load(open(os.path.join(d, "config.json")))["quantization_config"]
            stored = mgq.load_tensors(d)
            state, n = mgq.dense_state_dict(stored, qc)
            dense = mgq.load_tensors(twin)
            if set(state) != set(dense):
                print(f"{name}: tensor names differ: {sorted(set(state) ^ set(dense))[:6]}")
                bad += 1
                continue
            for k, w in state.items():
                ref = dense[k][1]
                m = k[: -len(".weight")]
                if w.shape != ref.shape:
                    problem = f"shape {w.shape} vs {ref.shape}"
                elif m + ".scales" in stored:
                    bound = stored[m + ".scales"][1].astype(np.float32).max() / 2 * 1.0001
                    err = float(np.abs(w - ref).max())
                    problem = f"int4 error {err:.3g} > {bound:.3g}" if err > bound else None
                elif m + ".weight_scale_inv" in stored:
                    si = float(stored[m + ".weight_scale_inv"][1].max())
                    tol = np.maximum(np.abs(ref) * 2.0 ** -4, 2.0 ** -10 * si) * 1.000001
                    problem = "fp8 error beyond half a step" if (np.abs(w - ref) > tol).any() else None
                else:
                    problem = None if np.array_equal(w, ref) else "dense tensor differs"
                if problem:
                    print(f"{name}: {k}: {problem}")
                    bad += 1
            print(f"{name}: {qc['quant_method']}, {n} layers dequantized, checked")
    if bad:
        print(f"{bad} problem(s)")
        sys.exit(1)


if __name__ == "__main__":
    main()
