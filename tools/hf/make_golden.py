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
        model = AutoModelForCausalLM.from_pretrained(d, dtype=torch.float32, attn_implementation="eager")
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
        with open(os.path.join(args.out, f"{name}.json"), "w") as f:
            json.dump(meta, f, indent=1)
        print(f"{name}: {cfg.architectures[0]} logits {logits.shape} greedy {greedy[:8]}...")


if __name__ == "__main__":
    main()
