#!/usr/bin/env python3
"""bf16 golden logits from HF transformers on the GPU, for hogwild's CUDA backend (tests/cuda).

Run on the GPU machine (PyTorch + transformers + a CUDA GPU):
    python3 tools/hf/make_golden_bf16.py --models models/golden_bf16 --out tests/data/hf_golden_bf16
on the models written by tools/hf/make_golden_bf16_models.sh (bf16 safetensors). For each model:
  model = from_pretrained(dtype=torch.bfloat16, attn_implementation="sdpa").cuda()
  the 120 prompt ids of make_golden.py in ONE forward (use_cache), then HF's own greedy
  continuation, one token per forward through the KV cache (argmax of the bf16 logits, first
  index on ties, as generate(do_sample=False) picks): 32 ids, 33 forwards, 152 logit rows
  (row i predicts token i+1), the same schedule as the CUDA test feeds.
It writes
  <name>.json            ids, argmax and top-2 margin of every row, error figures of HF's own bf16
                         against fp32 (below), versions (torch, transformers, CUDA, GPU name)
  <name>.logits.bf16.f32 float32 little-endian (152, vocab_size): HF's bf16 logits (exact bf16
                         values, widened)
  <name>.logits.f32.f32  float32 little-endian (152, vocab_size): the same model and ids in fp32 on
                         the GPU (TF32 off, eager attention, one forward): the "exact" reference
Sanity figures in the json (all relative errors: per row max |a - b| / max |b|, then max over rows):
  hf_bf16_vs_fp32        HF's own bf16 error against its fp32 forward (the bf16 noise floor)
  hf_bf16_step_vs_full   HF bf16 incremental logits against one bf16 forward over all 152 ids
  generate_agrees        model.generate(do_sample=False) in bf16 returns the same 32 ids
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

from make_golden import N_DECODE, N_PROMPT, prompt_ids


def err(a, b):
    """(max |a - b|, max over rows of max_v |a - b| / max_v |b|) for (rows, vocab) arrays."""
    d = np.abs(a.astype(np.float64) - b.astype(np.float64))
    return float(d.max()), float((d.max(-1) / np.abs(b).max(-1)).max())


def incremental(model, ids):
    """Prompt in one forward, then greedy ids one per forward: ((152, vocab) fp32 logits, ids)."""
    x = torch.tensor([ids], dtype=torch.long, device="cuda")
    out = model(x, use_cache=True)
    rows, past, greedy = [out.logits[0].float()], out.past_key_values, []
    for _ in range(N_DECODE):
        nxt = int(rows[-1][-1].argmax())
        greedy.append(nxt)
        out = model(torch.tensor([[nxt]], device="cuda"), past_key_values=past, use_cache=True)
        rows.append(out.logits[0].float())
        past = out.past_key_values
    return torch.cat(rows).cpu().numpy(), greedy


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--models", required=True,
                    help="folder of model dirs (make_golden_bf16_models.sh)")
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    assert torch.cuda.is_available(), "needs a CUDA GPU"
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.manual_seed(0)
    os.makedirs(args.out, exist_ok=True)
    for name in sorted(os.listdir(args.models)):
        d = os.path.join(args.models, name)
        if not os.path.isfile(os.path.join(d, "config.json")):
            continue
        model = AutoModelForCausalLM.from_pretrained(d, dtype=torch.bfloat16,
                                                     attn_implementation="sdpa").cuda().eval()
        cfg = model.config
        ids = prompt_ids(cfg.vocab_size)
        with torch.no_grad():
            logits, greedy = incremental(model, ids)
            x = torch.tensor([ids], dtype=torch.long, device="cuda")
            gen = model.generate(x, attention_mask=torch.ones_like(x), do_sample=False,
                                 max_new_tokens=N_DECODE, min_new_tokens=N_DECODE,
                                 eos_token_id=None, pad_token_id=0, temperature=None, top_p=None,
                                 top_k=None)[0, N_PROMPT:].tolist()
            full_ids = torch.tensor([ids + greedy], dtype=torch.long, device="cuda")
            full = model(full_ids).logits[0].float().cpu().numpy()
            del model
            m32 = AutoModelForCausalLM.from_pretrained(d, dtype=torch.float32,
                                                       attn_implementation="eager").cuda().eval()
            ref32 = m32(full_ids).logits[0].float().cpu().numpy()
            del m32
        n_rows = N_PROMPT + N_DECODE
        assert logits.shape == (n_rows, cfg.vocab_size), logits.shape
        if gen != greedy:
            print(f"{name}: warning: generate() differs from the incremental loop", file=sys.stderr)
        top2 = np.sort(logits, axis=-1)[:, -2:]
        margin = (top2[:, 1] - top2[:, 0]).tolist()
        logits.astype("<f4").tofile(os.path.join(args.out, f"{name}.logits.bf16.f32"))
        ref32.astype("<f4").tofile(os.path.join(args.out, f"{name}.logits.f32.f32"))
        a_bf, r_bf = err(logits, ref32)
        a_sf, r_sf = err(logits, full)
        meta = {
            "name": name,
            "architectures": cfg.architectures,
            "vocab_size": cfg.vocab_size,
            "n_prompt": N_PROMPT,
            "n_decode": N_DECODE,
            "prompt_ids": ids,
            "greedy_ids": greedy,
            "row_argmax": logits.argmax(-1).tolist(),
            "row_top2_margin": margin,
            "logits_file": f"{name}.logits.bf16.f32",
            "logits_fp32_file": f"{name}.logits.f32.f32",
            "logits_shape": [n_rows, cfg.vocab_size],
            "max_abs_logit": float(np.abs(logits).max()),
            "hf_bf16_vs_fp32": {"max_abs": a_bf, "max_rel": r_bf},
            "hf_bf16_step_vs_full": {"max_abs": a_sf, "max_rel": r_sf},
            "generate_agrees": gen == greedy,
            "make_model_args": json.load(open(os.path.join(d, "make_model_args.json"))),
            "schedule": "prompt in one forward, then one greedy id per forward (KV cache)",
            "device": torch.cuda.get_device_name(0),
            "dtype": "bfloat16", "attn_implementation": "sdpa",
            "fp32_reference": {"dtype": "float32", "attn_implementation": "eager",
                               "tf32": False, "schedule": "one forward over all 152 ids"},
            "versions": {"torch": torch.__version__, "transformers": transformers.__version__,
                         "cuda": torch.version.cuda, "numpy": np.__version__,
                         "python": platform.python_version()},
        }
        with open(os.path.join(args.out, f"{name}.json"), "w") as f:
            json.dump(meta, f, indent=1)
        print(f"{name}: {cfg.architectures[0]} max|logit| {meta['max_abs_logit']:.2f} "
              f"bf16-vs-fp32 abs {a_bf:.3g} rel {r_bf:.3g}; step-vs-full abs {a_sf:.3g} "
              f"rel {r_sf:.3g}; min margin {min(margin):.3g}; generate agrees {gen == greedy}")


if __name__ == "__main__":
    main()
