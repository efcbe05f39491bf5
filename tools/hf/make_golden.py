#!/usr/bin/env python3
"""Golden logits from HF transformers for hogwild's CPU engine (tests/golden).

Run on a machine with PyTorch + transformers (the GPU machine; it runs on its CPU in fp32):
    python3 tools/hf/make_golden.py --models models/golden --out tests/data/hf_golden
For every model directory made by `hogwild make-model` (see tools/hf/make_golden_models.sh) it writes
  <name>.json        arch, prompt ids, greedy ids, shapes, library versions
  <name>.logits.f32  float32 little-endian, shape (n_prompt + n_decode, vocab_size): the logits of
                     every position of prompt + greedy tokens (row i predicts token i+1)
The greedy ids come from model.generate(do_sample=False); the logits from one forward over
prompt + greedy ids (equal to incremental decoding in exact arithmetic).

Mixture-of-experts models (Qwen3MoeForCausalLM, tools/hf/make_golden_models_moe.sh) are loaded with
the eager experts loop (modeling_qwen3_moe.py; transformers 5.x merges the per-expert tensors that
make-model writes into experts.gate_up_proj / down_proj, conversion_mapping.py), and a golden is
refused when transformers reports missing, unexpected or mismatched weights (they would be random).
"""
import argparse
import json
import os
import platform
import sys

import numpy as np
import torch
import transformers
from transformers import AutoModelForCausalLM

N_PROMPT = 120
N_DECODE = 32


def prompt_ids(vocab_size):
    # Deterministic, spread over the vocabulary, avoids id 0.
    return [1 + (i * 7919 + 13) % (vocab_size - 1) for i in range(N_PROMPT)]


def is_moe(d):
    with open(os.path.join(d, "config.json")) as f:
        cfg = json.load(f)
    return cfg.get("model_type") == "qwen3_moe" or "Qwen3MoeForCausalLM" in cfg.get("architectures", [])


def load(d):
    """The model of directory d in fp32 with eager attention (and eager experts for MoE), and the
    name of the experts implementation in use (None for dense models)."""
    kw = dict(dtype=torch.float32, attn_implementation="eager", output_loading_info=True)
    moe = is_moe(d)

    def from_pretrained(**extra):
        res = AutoModelForCausalLM.from_pretrained(d, **kw, **extra)
        return res if isinstance(res, tuple) else (res, {})

    if moe:
        try:  # transformers 5.x: @use_experts_implementation; older versions loop per expert anyway
            model, info = from_pretrained(experts_implementation="eager")
        except (TypeError, ValueError) as e:
            print(f"{d}: experts_implementation not accepted ({e}); loading without it", file=sys.stderr)
            model, info = from_pretrained()
    else:
        model, info = from_pretrained()
    bad = {k: list(info.get(k) or []) for k in ("missing_keys", "unexpected_keys", "mismatched_keys")}
    bad = {k: v for k, v in bad.items() if v}
    if bad:
        msg = f"{d}: transformers did not load every weight: " + "; ".join(
            f"{k}: {v[:6]}{' ...' if len(v) > 6 else ''}" for k, v in bad.items())
        if moe:
            raise SystemExit(msg)
        print("warning: " + msg, file=sys.stderr)
    experts = None
    if moe:
        experts = getattr(model.config, "_experts_implementation", None) or "eager (default)"
    return model, experts


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--models", required=True, help="folder of model dirs (one per golden case)")
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.set_num_threads(max(1, os.cpu_count() or 1))
    os.makedirs(args.out, exist_ok=True)
    for name in sorted(os.listdir(args.models)):
        d = os.path.join(args.models, name)
        if not os.path.isfile(os.path.join(d, "config.json")):
            continue
        model, experts = load(d)
        model.eval()
        cfg = model.config
        ids = prompt_ids(cfg.vocab_size)
        x = torch.tensor([ids], dtype=torch.long)
        with torch.no_grad():
            gen = model.generate(x, attention_mask=torch.ones_like(x), do_sample=False,
                                 max_new_tokens=N_DECODE, min_new_tokens=N_DECODE,
                                 eos_token_id=None, pad_token_id=0, temperature=None, top_p=None,
                                 top_k=None)
            greedy = gen[0, N_PROMPT:].tolist()
            full = torch.tensor([ids + greedy], dtype=torch.long)
            logits = model(full).logits[0].float().numpy()
        assert logits.shape == (N_PROMPT + N_DECODE, cfg.vocab_size)
        # Consistency of the reference itself: argmax of the one-forward logits = generate's tokens.
        am = logits[N_PROMPT - 1:-1].argmax(-1).tolist()
        if am != greedy:
            print(f"{name}: warning: argmax of full forward differs from generate", file=sys.stderr)
        logits.astype("<f4").tofile(os.path.join(args.out, f"{name}.logits.f32"))
        meta = {
            "name": name,
            "architectures": cfg.architectures,
            "vocab_size": cfg.vocab_size,
            "n_prompt": N_PROMPT,
            "n_decode": N_DECODE,
            "prompt_ids": ids,
            "greedy_ids": greedy,
            "logits_file": f"{name}.logits.f32",
            "logits_shape": list(logits.shape),
            "make_model_args": json.load(open(os.path.join(d, "make_model_args.json")))
            if os.path.exists(os.path.join(d, "make_model_args.json")) else None,
            "versions": {"torch": torch.__version__, "transformers": transformers.__version__,
                         "numpy": np.__version__, "python": platform.python_version()},
            "device": "cpu", "dtype": "float32", "attn_implementation": "eager",
        }
        if experts is not None:
            meta["experts_implementation"] = experts
            meta["moe"] = {k: getattr(cfg, k, None) for k in (
                "num_experts", "num_experts_per_tok", "moe_intermediate_size", "norm_topk_prob",
                "decoder_sparse_step", "mlp_only_layers")}
        with open(os.path.join(args.out, f"{name}.json"), "w") as f:
            json.dump(meta, f, indent=1)
        print(f"{name}: {cfg.architectures[0]} logits {logits.shape} greedy {greedy[:8]}...")


if __name__ == "__main__":
    main()
