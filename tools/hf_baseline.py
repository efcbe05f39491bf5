#!/usr/bin/env python3
"""HF transformers baseline for `hogwild bench` (figures in docs/PERFLOG.md).

W independent sequences that share the same context, decoded together as one batch by
transformers (bf16, SDPA attention, greedy next token on the GPU) - what a user of HF gets without
a shared cache: each sequence holds and reads its own copy of the context's KV.
Models are the bench presets with random bf16 weights made on the GPU (no downloads); the context
KV cache is random too (no prefill), as in `hogwild bench`. Prints a table; --json FILE saves it.

Run with a CUDA GPU, torch and transformers:  python3 tools/hf_baseline.py --json out/hf.json
"""
import argparse
import json
import statistics
import time

import torch
import transformers
from transformers import AutoModelForCausalLM, DynamicCache, Qwen2Config, Qwen3Config

# Shapes of Qwen/Qwen3-8B and Qwen/QwQ-32B (config.json of each).
PRESETS = {
    "qwen3-8b": (Qwen3Config, dict(hidden_size=4096, intermediate_size=12288, num_hidden_layers=36,
                                   num_attention_heads=32, num_key_value_heads=8, head_dim=128,
                                   vocab_size=151936, max_position_embeddings=40960,
                                   rms_norm_eps=1e-6, rope_theta=1e6, tie_word_embeddings=False)),
    "qwq-32b": (Qwen2Config, dict(hidden_size=5120, intermediate_size=27648, num_hidden_layers=64,
                                  num_attention_heads=40, num_key_value_heads=8,
                                  vocab_size=152064, max_position_embeddings=40960,
                                  rms_norm_eps=1e-5, rope_theta=1e6, tie_word_embeddings=False)),
}


def make_model(name):
    cls, kw = PRESETS[name]
    cfg = cls(**kw)
    cfg._attn_implementation = "sdpa"
    old = torch.get_default_dtype()
    torch.set_default_dtype(torch.bfloat16)
    try:
        with torch.device("cuda"):
            model = AutoModelForCausalLM.from_config(cfg)
    finally:
        torch.set_default_dtype(old)
    return model.eval()


def random_cache(model, workers, context):
    cfg = model.config
    hd = getattr(cfg, "head_dim", None) or cfg.hidden_size // cfg.num_attention_heads
    try:
        cache = DynamicCache(config=cfg)
    except TypeError:
        cache = DynamicCache()
    g = torch.Generator(device="cuda").manual_seed(0)
    for layer in range(cfg.num_hidden_layers):
        shape = (workers, cfg.num_key_value_heads, context, hd)
        k = torch.randn(shape, generator=g, device="cuda", dtype=torch.bfloat16)
        v = torch.randn(shape, generator=g, device="cuda", dtype=torch.bfloat16)
        cache.update(k, v, layer)
    return cache


@torch.inference_mode()
def bench(model, workers, context, warmup, repeat):
    cache = random_cache(model, workers, context)
    tok = torch.randint(0, model.config.vocab_size, (workers, 1), device="cuda")
    times = []
    for step in range(warmup + repeat):
        pos = torch.full((workers, 1), context + step, device="cuda", dtype=torch.long)
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        out = model(input_ids=tok, past_key_values=cache, position_ids=pos,
                    cache_position=pos[0], use_cache=True)
        tok = out.logits[:, -1].argmax(-1, keepdim=True)
        torch.cuda.synchronize()
        if step >= warmup:
            times.append((time.perf_counter() - t0) * 1e3)
    del cache, out
    torch.cuda.empty_cache()
    ms = statistics.median(times)
    return {"step_ms": ms, "tok_s_per_sequence": 1e3 / ms, "tok_s_aggregate": workers * 1e3 / ms}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--preset", nargs="+", default=list(PRESETS))
    ap.add_argument("--workers", nargs="+", type=int, default=[1, 2, 4, 8])
    ap.add_argument("--context", nargs="+", type=int, default=[1024, 8192, 16384])
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=8)
    ap.add_argument("--json", help="write results here")
    a = ap.parse_args()
    res = {"device": torch.cuda.get_device_name(), "torch": torch.__version__,
           "transformers": transformers.__version__, "results": []}
    print(f"| model | context | sequences | step ms | tok/s/seq | tok/s agg |", flush=True)
    print("|---|---|---|---|---|---|", flush=True)
    for name in a.preset:
        model = make_model(name)
        for ctx in a.context:
            for w in a.workers:
                try:
                    r = bench(model, w, ctx, a.warmup, a.repeat)
                except torch.OutOfMemoryError:
                    torch.cuda.empty_cache()
                    r = {"error": "out of memory"}
                r.update(model=name, context=ctx, workers=w)
                res["results"].append(r)
                if "error" in r:
                    print(f"| {name} | {ctx} | {w} | OOM | | |", flush=True)
                else:
                    print(f"| {name} | {ctx} | {w} | {r['step_ms']:.2f} | "
                          f"{r['tok_s_per_sequence']:.1f} | {r['tok_s_aggregate']:.1f} |", flush=True)
        del model
        torch.cuda.empty_cache()
        if a.json:
            with open(a.json, "w") as f:
                json.dump(res, f, indent=2)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(res, f, indent=2)


if __name__ == "__main__":
    main()
