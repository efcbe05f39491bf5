#!/usr/bin/env python3
"""gpt-fast-style PyTorch decoder baseline for `hogwild bench` (docs/PERFLOG.md records its figures).

The fast plain-PyTorch way to decode many independent sequences, on the bench presets' shapes: a
decoder written in torch (no transformers), a static bf16 KV cache (batch, kv_heads, max_len,
head_dim) per layer that each step writes in place at the current position (index_copy_), a mask
over the cache positions <= that position, and the one-token step compiled with
torch.compile(mode="reduce-overhead", fullgraph=True), i.e. replayed as a CUDA graph. Batch = rows:
each sequence has its own copy of the context's KV; all sit at the same position (context + step);
greedy argmax picks the next tokens on the GPU. Weights are random bf16 made on the GPU (seeded, no
downloads); the cache is random up to the context (no prefill), as in `hogwild bench`, and holds
context + warm-up + timed steps (rounded up to 64), so the masked attention reads no more than that.
If torch.compile fails, a hand-captured torch.cuda.CUDAGraph of the eager step is used, then plain
eager; each result names its mode. Step ms = wall time of one step and a synchronize, median and
min of --steps after --warmup. Bytes per step = weights (all but the embedding table) + batch x
context x KV bytes of one token; GB/s = that / median step. Prints a markdown table; --json FILE
saves it after every configuration.

--attn: matmul (the default) = the query heads of a KV head as rows of two batched matmuls with an
fp32 softmax (K, V read once); sdpa-gqa = scaled_dot_product_attention(enable_gqa=True)
(sdpa-repeat where that keyword is missing); sdpa-repeat = K/V heads repeated to the query heads (as
gpt-fast does; the repeat copies the cache every step: 27 ms against 8.6 for matmul at 16 x 4096
on an H200, docs/PERFLOG.md 65cef49).

Run with a CUDA GPU and torch:  python3 tools/gptfast_baseline.py --json out/gptfast.json
"""
import argparse
import gc
import json
import statistics
import sys
import time

import torch
import torch._dynamo  # noqa: F401 - mark_static_address, reset
import torch.nn.functional as F

# Shapes of Qwen/Qwen3-8B and Qwen/QwQ-32B (config.json of each), as in tools/hf_baseline.py.
PRESETS = {
    "qwen3-8b": dict(hidden=4096, inter=12288, layers=36, heads=32, kv_heads=8, head_dim=128,
                     vocab=151936, eps=1e-6, rope_theta=1e6, qkv_bias=False, qk_norm=True),
    "qwq-32b": dict(hidden=5120, inter=27648, layers=64, heads=40, kv_heads=8, head_dim=128,
                    vocab=152064, eps=1e-5, rope_theta=1e6, qkv_bias=True, qk_norm=False),
}
ATTN = ["matmul", "sdpa-gqa", "sdpa-repeat"]  # the first is the default
DEFAULT_CONFIGS = ["1x1024", "8x1024", "1x8192", "8x8192", "16x4096", "64x4096"]


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def param(shape, gen, std=0.02):
    """A bf16 weight on the GPU: N(0, std), or ones when std is None (norm weights)."""
    t = torch.empty(shape, device="cuda", dtype=torch.bfloat16)
    t.fill_(1.0) if std is None else t.normal_(0.0, std, generator=gen)
    return torch.nn.Parameter(t, requires_grad=False)


def rms_norm(x, w, eps):
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)).to(x.dtype) * w


def rope(x, cos, sin):
    """x (..., head_dim) bf16; cos/sin (1, head_dim) fp32; halves rotated (Qwen's convention)."""
    half, xf = x.shape[-1] // 2, x.float()
    rot = torch.cat((-xf[..., half:], xf[..., :half]), dim=-1)
    return (xf * cos + rot * sin).to(x.dtype)


def attend(how, q, kc, vc, mask):
    """q (B, H, hd); kc/vc (B, KV, L, hd); mask (1, 1, 1, L) bool. Returns (B, H, hd)."""
    B, H, hd = q.shape
    KV = kc.shape[1]
    group = H // KV  # query heads per KV head
    if how == "matmul":
        qg = q.view(B, KV, group, hd)  # query head h reads KV head h // group
        s = torch.matmul(qg, kc.transpose(2, 3)).float() * (hd ** -0.5)  # (B, KV, g, L)
        s = s.masked_fill(~mask, float("-inf"))
        o = torch.matmul(torch.softmax(s, dim=-1).to(q.dtype), vc)  # (B, KV, g, hd)
        return o.reshape(B, H, hd)
    q1 = q.unsqueeze(2)  # (B, H, 1, hd)
    if how == "sdpa-gqa":
        o = F.scaled_dot_product_attention(q1, kc, vc, attn_mask=mask, enable_gqa=True)
    else:
        o = F.scaled_dot_product_attention(q1, kc.repeat_interleave(group, dim=1),
                                           vc.repeat_interleave(group, dim=1), attn_mask=mask)
    return o.reshape(B, H, hd)


class Layer(torch.nn.Module):
    def __init__(self, p, gen):
        super().__init__()
        D, ff, hd = p["hidden"], p["inter"], p["head_dim"]
        self.H, self.KV, self.hd, self.eps = p["heads"], p["kv_heads"], hd, p["eps"]
        self.qd, self.kvd = self.H * hd, self.KV * hd
        self.attn = ATTN[0]
        self.attn_norm = param((D,), gen, None)
        self.wqkv = param((self.qd + 2 * self.kvd, D), gen)  # q, k, v as one matrix
        self.bqkv = param((self.qd + 2 * self.kvd,), gen) if p["qkv_bias"] else None
        self.q_norm = param((hd,), gen, None) if p["qk_norm"] else None
        self.k_norm = param((hd,), gen, None) if p["qk_norm"] else None
        self.wo = param((D, self.qd), gen)
        self.mlp_norm = param((D,), gen, None)
        self.wgu = param((2 * ff, D), gen)  # gate and up as one matrix
        self.wdown = param((D, ff), gen)
        self.register_buffer("k_cache", None, persistent=False)
        self.register_buffer("v_cache", None, persistent=False)

    def forward(self, x, pos, cos, sin, mask):
        B = x.shape[0]
        h = rms_norm(x, self.attn_norm, self.eps)
        q, k, v = F.linear(h, self.wqkv, self.bqkv).split([self.qd, self.kvd, self.kvd], dim=-1)
        q = q.reshape(B, self.H, self.hd)
        k, v = k.reshape(B, self.KV, self.hd), v.reshape(B, self.KV, self.hd)
        if self.q_norm is not None:
            q = rms_norm(q, self.q_norm, self.eps)
            k = rms_norm(k, self.k_norm, self.eps)
        q, k = rope(q, cos, sin), rope(k, cos, sin)
        self.k_cache.index_copy_(2, pos, k.unsqueeze(2))  # in place at the step's position
        self.v_cache.index_copy_(2, pos, v.unsqueeze(2))
        o = attend(self.attn, q, self.k_cache, self.v_cache, mask)
        x = x + F.linear(o.reshape(B, self.qd), self.wo)
        h = rms_norm(x, self.mlp_norm, self.eps)
        g, u = F.linear(h, self.wgu).chunk(2, dim=-1)
        return x + F.linear(F.silu(g) * u, self.wdown)


class Decoder(torch.nn.Module):
    def __init__(self, p, seed):
        super().__init__()
        gen = torch.Generator(device="cuda").manual_seed(seed)
        self.p, self.seed = p, seed
        self.embed = param((p["vocab"], p["hidden"]), gen)
        self.layers = torch.nn.ModuleList([Layer(p, gen) for _ in range(p["layers"])])
        self.norm = param((p["hidden"],), gen, None)
        self.lm_head = param((p["vocab"], p["hidden"]), gen)
        for name in ("cos", "sin", "positions"):
            self.register_buffer(name, None, persistent=False)

    def weight_bytes(self):
        """Weights read by one step: every parameter but the embedding table (one row a token)."""
        total = sum(t.numel() * t.element_size() for t in self.parameters())
        return total - self.embed.numel() * self.embed.element_size()

    def drop_cache(self):
        for layer in self.layers:
            layer.k_cache = layer.v_cache = None
        self.cos = self.sin = self.positions = None

    def set_cache(self, batch, max_len, attn):
        """A fresh static cache per layer, random bf16 (the context 'already there'), and the
        RoPE tables and position list for max_len positions."""
        self.drop_cache()
        gen = torch.Generator(device="cuda").manual_seed(self.seed + 1)
        shape = (batch, self.p["kv_heads"], max_len, self.p["head_dim"])
        for layer in self.layers:
            layer.attn = attn
            for name in ("k_cache", "v_cache"):
                t = torch.empty(shape, device="cuda", dtype=torch.bfloat16)
                setattr(layer, name, t.normal_(0.0, 1.0, generator=gen))
        hd = self.p["head_dim"]
        inv = 1.0 / (self.p["rope_theta"] ** (
            torch.arange(0, hd, 2, device="cuda", dtype=torch.float64) / hd))
        ang = torch.arange(max_len, device="cuda", dtype=torch.float64)[:, None] * inv[None, :]
        ang = torch.cat((ang, ang), dim=-1)  # (max_len, hd)
        self.cos, self.sin = ang.cos().float(), ang.sin().float()
        self.positions = torch.arange(max_len, device="cuda", dtype=torch.long)
        try:  # fixed addresses, the caches mutated in place: static inputs of the CUDA graph
            for t in self.buffers():
                torch._dynamo.mark_static_address(t)
        except Exception as e:  # noqa: BLE001 - a hint only
            log(f"mark_static_address: {short(e)}")

    def forward(self, ids, pos):
        """ids (B,) int64, pos (1,) int64 on the GPU -> next token ids (B,) int64."""
        x = F.embedding(ids, self.embed)  # (B, D)
        cos, sin = self.cos[pos], self.sin[pos]  # (1, hd)
        mask = (self.positions <= pos).view(1, 1, 1, -1)
        for layer in self.layers:
            x = layer(x, pos, cos, sin, mask)
        x = rms_norm(x, self.norm, self.p["eps"])
        return F.linear(x, self.lm_head).argmax(dim=-1)


def short(e):
    s = f"{type(e).__name__}: {e}".replace("\n", " ")
    return s if len(s) <= 400 else s[:400] + "..."


def sdpa_has_gqa():
    q = torch.zeros(1, 4, 1, 128, device="cuda", dtype=torch.bfloat16)
    k = torch.zeros(1, 2, 8, 128, device="cuda", dtype=torch.bfloat16)
    try:
        F.scaled_dot_product_attention(q, k, k, enable_gqa=True)
        return True
    except Exception as e:  # noqa: BLE001 - TypeError where the keyword is missing
        log(f"scaled_dot_product_attention(enable_gqa=True) unavailable ({short(e)})")
        return False


def cudagraph_skips():
    try:
        from torch._dynamo.utils import counters
        return int(counters["inductor"]["cudagraph_skips"])
    except Exception:  # noqa: BLE001
        return 0


def reset_compiled():
    """Drops the compiled code, guards and CUDA graphs of the previous shapes."""
    try:
        torch._dynamo.reset()
        from torch._inductor import cudagraph_trees
        cudagraph_trees.reset_cudagraph_trees()
    except Exception as e:  # noqa: BLE001
        log(f"reset: {short(e)}")


def compiled_step(model):
    fn = torch.compile(model, mode="reduce-overhead", fullgraph=True, dynamic=False)

    def step(ids, pos):
        torch.compiler.cudagraph_mark_step_begin()  # a new step: the last outputs may be reused
        return fn(ids, pos)
    return step


def graph_step(model, ids, pos0):
    """The eager step captured by hand: static inputs copied in, the graph replayed."""
    s_ids = ids.clone()
    s_pos = torch.full((1,), pos0, device="cuda", dtype=torch.long)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            model(s_ids, s_pos)
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        s_out = model(s_ids, s_pos)

    def step(ids, pos):
        s_ids.copy_(ids)
        s_pos.copy_(pos)
        graph.replay()
        return s_out
    return step


def run_steps(step, ids, pos0, n, times=None):
    """n steps at positions pos0.., each fed the previous step's tokens; wall ms into times."""
    pos = torch.zeros(1, device="cuda", dtype=torch.long)
    for i in range(n):
        pos.fill_(pos0 + i)
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        out = step(ids, pos)
        torch.cuda.synchronize()
        if times is not None:
            times.append((time.perf_counter() - t0) * 1e3)
        ids = out.clone()
    return ids


@torch.no_grad()
def bench(model, batch, context, attn, steps, warmup, use_compile, state):
    p = model.p
    warmup = max(warmup, 3)  # compile, record the CUDA graph, replay it once
    max_len = -(-(context + warmup + steps + 1) // 64) * 64
    model.set_cache(batch, max_len, attn)
    torch.cuda.reset_peak_memory_stats()
    gen = torch.Generator(device="cuda").manual_seed(model.seed + 2)
    ids = torch.randint(0, p["vocab"], (batch,), device="cuda", generator=gen)
    r = {"max_len": max_len}
    notes, t_warm = [], time.perf_counter()
    modes = ["compile"] if use_compile and state.get("compile_error") is None else []
    for mode in modes + ["cudagraph", "eager"]:  # the first that runs its warm-up steps
        try:
            skips = cudagraph_skips()
            if mode == "compile":
                step = compiled_step(model)
            elif mode == "cudagraph":
                reset_compiled()
                step = graph_step(model, ids, context)
            else:
                step = model
            ids = run_steps(step, ids, context, warmup)
            if mode == "compile" and cudagraph_skips() != skips:
                mode = "compile-no-cudagraph"  # inductor ran the step without a CUDA graph
            break
        except Exception as e:  # noqa: BLE001
            oom = isinstance(e, torch.cuda.OutOfMemoryError) or "out of memory" in str(e).lower()
            if mode == "eager" or oom:  # no fallback helps
                raise
            notes.append(f"{mode} failed: {short(e)}")
            log(notes[-1])
            if mode == "compile":
                state["compile_error"] = notes[-1]
    r["warmup_s"] = round(time.perf_counter() - t_warm, 1)
    times = []
    run_steps(step, ids, context + warmup, steps, times)
    med, low = statistics.median(times), min(times)
    kv_token = p["layers"] * 2 * p["kv_heads"] * p["head_dim"] * 2
    nbytes = model.weight_bytes() + batch * context * kv_token
    r.update(mode=mode, median_ms=med, min_ms=low, tok_s_aggregate=batch * 1e3 / med,
             tok_s_per_sequence=1e3 / med, bytes_per_step=nbytes,
             gb_s=nbytes / (med * 1e-3) / 1e9,
             peak_gib=torch.cuda.max_memory_allocated() / 2**30, notes=notes)
    return r


def release(model):
    if model is not None:
        model.drop_cache()
    reset_compiled()
    gc.collect()
    torch.cuda.empty_cache()


def row(r):
    head = f"| {r['preset']} | {r['batch']} | {r['context']} | {r['attn']} |"
    if "error" in r:
        return head + " error | | | | | | |"
    return (head + f" {r['mode']} | {r['median_ms']:.2f} | {r['min_ms']:.2f} | "
            f"{r['tok_s_aggregate']:.1f} | {r['tok_s_per_sequence']:.1f} | "
            f"{r['bytes_per_step'] / 1e9:.2f} | {r['gb_s']:.0f} |")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--preset", nargs="+", default=["qwen3-8b"], choices=list(PRESETS))
    ap.add_argument("--configs", nargs="+", default=DEFAULT_CONFIGS, help="BATCHxCONTEXT ...")
    ap.add_argument("--attn", nargs="+", default=[ATTN[0]], choices=ATTN)
    ap.add_argument("--steps", type=int, default=50)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--no-compile", action="store_true",
                    help="skip torch.compile: hand-captured CUDA graph of the eager step")
    ap.add_argument("--json", help="write results here")
    a = ap.parse_args()
    if not torch.cuda.is_available():
        sys.exit("needs a CUDA GPU")
    configs = [tuple(int(v) for v in s.lower().split("x")) for s in a.configs]  # (batch, ctx)
    gqa = sdpa_has_gqa()
    res = {"device": torch.cuda.get_device_name(), "torch": torch.__version__,
           "cuda": torch.version.cuda,
           "gpu_memory_gib": torch.cuda.get_device_properties(0).total_memory / 2**30,
           "steps": a.steps, "warmup": max(a.warmup, 3), "sdpa_enable_gqa": gqa,
           "compile": not a.no_compile, "results": []}
    state = {}

    def save():
        res["compile_error"] = state.get("compile_error")
        if a.json:
            with open(a.json, "w") as f:
                json.dump(res, f, indent=2)

    print("| preset | batch | context | attention | mode | step ms (median) | step ms (min) | "
          "tok/s aggregate | tok/s per sequence | GB read per step | GB/s |", flush=True)
    print("|---|---|---|---|---|---|---|---|---|---|---|", flush=True)
    for name in a.preset:
        try:
            model = Decoder(PRESETS[name], a.seed).eval()
            log(f"{name}: {model.weight_bytes() / 1e9:.2f} GB of weights read per step")
        except Exception as e:  # noqa: BLE001
            res["results"].append({"preset": name, "error": short(e)})
            log(f"{name}: {short(e)}")
            continue
        for batch, context in configs:
            for attn in a.attn:
                used = "sdpa-repeat" if attn == "sdpa-gqa" and not gqa else attn
                r = {"preset": name, "batch": batch, "context": context, "attn": used}
                log(f"{name} {batch}x{context} {used}: running")
                try:
                    r.update(bench(model, batch, context, used, a.steps, a.warmup,
                                   not a.no_compile, state))
                except Exception as e:  # noqa: BLE001
                    r["error"] = short(e)
                    log(f"{name} {batch}x{context} {used}: {r['error']}")
                release(model)
                res["results"].append(r)
                print(row(r), flush=True)
                save()
        del model
        release(None)
    save()


if __name__ == "__main__":
    main()
