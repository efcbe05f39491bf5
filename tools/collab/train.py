#!/usr/bin/env python3
"""Trains the packs-collab model: a Qwen3ForCausalLM from scratch on the scripted traces of
`hogwild collab traces` (tools/collab/README.md has the exact commands and figures).

    python3 tools/collab/train.py --data DATA/train --model models/packs-collab --out OUT \
        --seconds 330 [--golden-data DATA/golden] [--eval-problems test_k4.jsonl]

DATA/train.<t>.tok/.msk/.idx: uint16 token ids, uint8 loss flags (flag i: token i is a target; 1
trained, 2 trained with --decision-weight: the decision tokens and the ledger lines of
src/collab/oracle_picker.h), int64 (offset, length) per example. The loss is the weighted mean of
the target tokens' cross-entropies (weight 1, or --decision-weight for flag 2).
Curriculum (--curriculum F): for the first fraction F of the time budget the batches are drawn from
the rows whose longest example is shortest (short packs, few workers: 30% of the rows at the start,
growing linearly to all of them at F), then from all rows.
Examples are packed into rows of --seq tokens; attention never crosses examples (flex_attention
with a document mask) and positions restart at each example, so every example is trained exactly
as the engine shows that view to the model. The model is our own
PyTorch module with transformers' parameter names; at the end it is loaded into
transformers.Qwen3ForCausalLM (its fp32 logits must match ours), saved with save_pretrained in bf16,
and the golden logits of tests/collab are computed from the saved directory on the CPU in fp32.
"""
import argparse
import glob
import json
import math
import os
import platform
import shutil
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


# ---- data ----------------------------------------------------------------------------------------
def load_shards(prefix):
    toks, msks, starts, lens = [], [], [], []
    base = 0
    for idx_path in sorted(glob.glob(prefix + ".*.idx")):
        stem = idx_path[:-4]
        idx = np.fromfile(idx_path, dtype="<i8").reshape(-1, 2)
        tok = np.fromfile(stem + ".tok", dtype="<u2")
        msk = np.fromfile(stem + ".msk", dtype=np.uint8)
        assert len(tok) == len(msk) and (len(idx) == 0 or idx[-1].sum() == len(tok)), stem
        toks.append(tok)
        msks.append(msk)
        starts.append(idx[:, 0] + base)
        lens.append(idx[:, 1])
        base += len(tok)
    if not toks:
        raise SystemExit(f"no shards {prefix}.*.idx")
    return (np.concatenate(toks), np.concatenate(msks), np.concatenate(starts),
            np.concatenate(lens))


def pack_rows(lens, seq, rng):
    """Rows of example ids, each fitting seq tokens: the largest example left, then repeatedly the
    largest that still fits (best fit by length buckets)."""
    import bisect
    buckets = {}
    for i in rng.permutation(len(lens)):
        n = int(lens[i])
        if n <= seq:
            buckets.setdefault(n, []).append(int(i))
    sizes = sorted(buckets)
    rows = []
    while sizes:
        top = sizes[-1]
        row = [buckets[top].pop()]
        if not buckets[top]:
            sizes.pop()
        room = seq - top
        while True:
            j = bisect.bisect_right(sizes, room) - 1
            if j < 0:
                break
            n = sizes[j]
            row.append(buckets[n].pop())
            if not buckets[n]:
                del sizes[j]
            room -= n
        rows.append(row)
    return [rows[i] for i in rng.permutation(len(rows))]


def build_rows(tok, msk, starts, lens, rows, seq):
    """Rows of seq tokens (int16 ids, uint8 loss flags, int16 positions restarting at each example,
    int16 example index in the row; -1 = padding), built with flat gathers."""
    n = len(rows)
    ex = np.fromiter((e for row in rows for e in row), dtype=np.int64)
    row_of = np.repeat(np.arange(n, dtype=np.int64), [len(r) for r in rows])
    doc_of = np.fromiter((d for row in rows for d in range(len(row))), dtype=np.int64)
    l = lens[ex].astype(np.int64)
    # offset of each example inside its row: exclusive cumulative length within the row
    cum = np.cumsum(l) - l
    row_start = np.zeros(n, dtype=np.int64)
    first = np.r_[0, np.cumsum([len(r) for r in rows])[:-1]]
    row_start[:] = cum[first]
    off = cum - row_start[row_of]
    total = int(l.sum())
    within = np.arange(total, dtype=np.int64) - np.repeat(cum, l)
    src = np.repeat(starts[ex].astype(np.int64), l) + within
    dst = np.repeat(row_of * seq + off, l) + within
    X = np.zeros(n * seq, dtype=np.int16)
    L = np.zeros(n * seq, dtype=np.uint8)
    P = np.zeros(n * seq, dtype=np.int16)
    D = np.full(n * seq, -1, dtype=np.int16)
    X[dst] = tok[src].astype(np.int16)
    L[dst] = msk[src]
    P[dst] = within.astype(np.int16)
    D[dst] = np.repeat(doc_of, l).astype(np.int16)
    return X.reshape(n, seq), L.reshape(n, seq), P.reshape(n, seq), D.reshape(n, seq)


# ---- model (transformers' Qwen3 names) -------------------------------------------------------------
class RMSNorm(nn.Module):
    def __init__(self, n, eps):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(n))
        self.eps = eps

    def forward(self, x):
        dt = x.dtype
        x = x.float()
        x = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)
        return self.weight * x.to(dt)


def rotate_half(x):
    a, b = x.chunk(2, dim=-1)
    return torch.cat((-b, a), dim=-1)


class Attention(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.h, self.kv, self.d = c["heads"], c["kv_heads"], c["head_dim"]
        hs = c["hidden"]
        self.q_proj = nn.Linear(hs, self.h * self.d, bias=False)
        self.k_proj = nn.Linear(hs, self.kv * self.d, bias=False)
        self.v_proj = nn.Linear(hs, self.kv * self.d, bias=False)
        self.o_proj = nn.Linear(self.h * self.d, hs, bias=False)
        self.q_norm = RMSNorm(self.d, c["eps"])
        self.k_norm = RMSNorm(self.d, c["eps"])

    def forward(self, x, cos, sin, mask, attn):
        B, T, _ = x.shape
        q = self.q_norm(self.q_proj(x).view(B, T, self.h, self.d)).transpose(1, 2)
        k = self.k_norm(self.k_proj(x).view(B, T, self.kv, self.d)).transpose(1, 2)
        v = self.v_proj(x).view(B, T, self.kv, self.d).transpose(1, 2)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        o = attn(q, k, v, mask)
        return self.o_proj(o.transpose(1, 2).reshape(B, T, self.h * self.d))


class MLP(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.gate_proj = nn.Linear(c["hidden"], c["ffn"], bias=False)
        self.up_proj = nn.Linear(c["hidden"], c["ffn"], bias=False)
        self.down_proj = nn.Linear(c["ffn"], c["hidden"], bias=False)

    def forward(self, x):
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class Layer(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.input_layernorm = RMSNorm(c["hidden"], c["eps"])
        self.self_attn = Attention(c)
        self.post_attention_layernorm = RMSNorm(c["hidden"], c["eps"])
        self.mlp = MLP(c)

    def forward(self, x, cos, sin, mask, attn):
        x = x + self.self_attn(self.input_layernorm(x), cos, sin, mask, attn)
        return x + self.mlp(self.post_attention_layernorm(x))


class Trunk(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.embed_tokens = nn.Embedding(c["vocab"], c["hidden"])
        self.layers = nn.ModuleList([Layer(c) for _ in range(c["layers"])])
        self.norm = RMSNorm(c["hidden"], c["eps"])
        inv = 1.0 / (c["rope_theta"] ** (torch.arange(0, c["head_dim"], 2).float() / c["head_dim"]))
        self.register_buffer("inv_freq", inv, persistent=False)


class Qwen3(nn.Module):
    """Qwen3ForCausalLM with tied embeddings; forward returns the final hidden states."""

    def __init__(self, c):
        super().__init__()
        self.c = c
        self.model = Trunk(c)
        self.attn = None  # set by the caller: (q, k, v, mask) -> (B, H, T, D)

    def forward(self, ids, pos, mask):
        f = pos.float()[..., None] * self.model.inv_freq
        emb = torch.cat((f, f), dim=-1)
        x = self.model.embed_tokens(ids)
        cos = emb.cos().to(x.dtype)[:, None]
        sin = emb.sin().to(x.dtype)[:, None]
        for layer in self.model.layers:
            x = layer(x, cos, sin, mask, self.attn)
        return self.model.norm(x)

    def logits(self, h):
        return h @ self.model.embed_tokens.weight.t()


def init_weights(m, n_layers):
    for name, p in m.named_parameters():
        if p.dim() == 2:
            std = 0.02 / math.sqrt(2 * n_layers) if name.endswith(("o_proj.weight", "down_proj.weight")) else 0.02
            nn.init.normal_(p, std=std)


def sdpa_attn(q, k, v, mask):
    if mask is None:  # one causal sequence per row (right padding)
        return F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
    return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, enable_gqa=True)


def make_flex():
    from torch.nn.attention.flex_attention import create_block_mask, flex_attention

    def attn(q, k, v, mask):
        return flex_attention(q, k, v, block_mask=mask, enable_gqa=True)

    def mask_for(docs):
        B, T = docs.shape

        def doc_causal(b, h, qi, ki):
            return (docs[b, qi] == docs[b, ki]) & (qi >= ki)

        try:
            return create_block_mask(doc_causal, B, None, T, T, device=docs.device, _compile=True)
        except TypeError:
            return create_block_mask(doc_causal, B, None, T, T, device=docs.device)

    return attn, mask_for


def dense_mask(docs):
    T = docs.shape[1]
    causal = torch.ones(T, T, dtype=torch.bool, device=docs.device).tril()
    return (docs[:, :, None] == docs[:, None, :]) & causal[None]


# ---- engine-like greedy decoding of one worker (a check of the trained model, not the metric) ------
def greedy_single(model, tok, problems, fmt, device, max_new=900):
    """One worker, as `hogwild run -w 1 --collab-every 0` shows it: the engine writes the step
    prefix after every step end; the model writes the rest. Returns (correct, serial steps)."""
    prefix = tok.encode(fmt["step_prefix"].replace("{name}", fmt["worker_names"][0])).ids
    seqs, n_prompt = [], []
    for p in problems:
        user = fmt["chat"]["user"].replace("{rules}", fmt["rules_single"]).replace("{problem}", p["problem"])
        text = f"<|user|>\n{user}<|end|>\n<|assistant|>\n"
        ids = tok.encode(text).ids + prefix
        seqs.append(ids)
        n_prompt.append(len(ids))
    done = [None] * len(seqs)
    steps = [0] * len(seqs)
    texts = [""] * len(seqs)
    import re
    for _ in range(max_new):
        live = [i for i in range(len(seqs)) if done[i] is None]
        if not live:
            break
        T = max(len(seqs[i]) for i in live)
        ids = torch.zeros(len(live), T, dtype=torch.long)
        for r, i in enumerate(live):
            ids[r, :len(seqs[i])] = torch.tensor(seqs[i])
        pos = torch.arange(T)[None].expand(len(live), T)
        with torch.no_grad(), torch.autocast("cuda", dtype=torch.bfloat16):
            h = model(ids.to(device), pos.to(device), None)
            last = torch.tensor([len(seqs[i]) - 1 for i in live], device=device)
            nxt = model.logits(h[torch.arange(len(live), device=device), last].float()).argmax(-1).tolist()
        for r, i in enumerate(live):
            t = nxt[r]
            seqs[i].append(t)
            steps[i] += 1
            piece = tok.decode([t])
            texts[i] += piece
            if texts[i].endswith("\n\n") and re.search(r"[.?!]\s*$", texts[i][:-2]):
                m = re.search(r"\\boxed\{([^{}]*)\}", texts[i])
                if m:
                    done[i] = m.group(1)
                    continue
                texts[i] = ""
                seqs[i].extend(prefix)
    correct = [done[i] == problems[i]["answer"] for i in range(len(seqs))]
    return correct, steps


# ---- main ------------------------------------------------------------------------------------------
def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", required=True, help="shard prefix of `hogwild collab traces`")
    ap.add_argument("--model", required=True, help="directory with tokenizer + formatting files")
    ap.add_argument("--out", required=True, help="output model directory")
    ap.add_argument("--seconds", type=float, default=300, help="training wall time")
    ap.add_argument("--seq", type=int, default=2048)
    ap.add_argument("--rows", type=int, default=64, help="rows per batch")
    ap.add_argument("--lr", type=float, default=2e-3)
    ap.add_argument("--warmup", type=int, default=150)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--hidden", type=int, default=512)
    ap.add_argument("--layers", type=int, default=8)
    ap.add_argument("--heads", type=int, default=8)
    ap.add_argument("--kv-heads", type=int, default=4)
    ap.add_argument("--ffn", type=int, default=1024)
    ap.add_argument("--attn", default="flex", choices=["flex", "sdpa"])
    ap.add_argument("--golden-data", help="shard prefix of held-out traces for the golden logits")
    ap.add_argument("--golden-out", help="golden logits output folder")
    ap.add_argument("--eval-problems", help="held-out problems JSONL for the one-worker check")
    ap.add_argument("--eval-count", type=int, default=64)
    ap.add_argument("--eval-max-new", type=int, default=900)
    ap.add_argument("--log", help="loss curve JSON output")
    ap.add_argument("--decision-weight", type=float, default=3.0,
                    help="loss weight of the tokens flagged 2 (decisions, ledgers)")
    ap.add_argument("--curriculum", type=float, default=0.2,
                    help="fraction of the time budget spent going from short rows to all rows")
    args = ap.parse_args()
    t_start = time.time()
    torch.manual_seed(args.seed)
    rng = np.random.default_rng(args.seed)
    dev = "cuda"
    torch.backends.cuda.matmul.allow_tf32 = True

    from tokenizers import Tokenizer
    import transformers
    from transformers import Qwen3Config, Qwen3ForCausalLM
    tok = Tokenizer.from_file(os.path.join(args.model, "tokenizer.json"))
    fmt = json.load(open(os.path.join(args.model, "hogwild_format.json")))
    vocab = tok.get_vocab_size()
    vocab = (vocab + 63) // 64 * 64
    hf_cfg = Qwen3Config(vocab_size=vocab, hidden_size=args.hidden, intermediate_size=args.ffn,
                         num_hidden_layers=args.layers, num_attention_heads=args.heads,
                         num_key_value_heads=args.kv_heads, head_dim=args.hidden // args.heads,
                         max_position_embeddings=args.seq, rms_norm_eps=1e-6,
                         tie_word_embeddings=True, attention_bias=False, use_sliding_window=False,
                         bos_token_id=None, eos_token_id=tok.token_to_id("<|end|>"),
                         pad_token_id=tok.token_to_id("<|endoftext|>"))
    theta = getattr(hf_cfg, "rope_theta", None) or hf_cfg.rope_parameters["rope_theta"]
    c = dict(vocab=vocab, hidden=args.hidden, layers=args.layers, heads=args.heads,
             kv_heads=args.kv_heads, head_dim=args.hidden // args.heads, ffn=args.ffn, eps=1e-6,
             rope_theta=float(theta))
    print("config", c, flush=True)

    tk, mk, starts, lens = load_shards(args.data)
    rows = pack_rows(lens, args.seq, rng)
    X, L, P, D = build_rows(tk, mk, starts, lens, rows, args.seq)
    n_tok, n_loss, n_weighted = int(lens.sum()), int((mk > 0).sum()), int((mk == 2).sum())
    # rows by their longest example (the curriculum's order: short packs first)
    row_len = np.array([max(int(lens[e]) for e in r) for r in rows])
    by_len = np.argsort(row_len, kind="stable")
    print(f"weighted targets (decisions, ledgers): {n_weighted} of {n_loss}", flush=True)
    print(f"data: {len(lens)} examples, {n_tok} tokens ({n_loss} with loss), {len(rows)} rows "
          f"({n_tok / (len(rows) * args.seq):.3f} full), built in {time.time() - t_start:.0f} s",
          flush=True)

    model = Qwen3(c).to(dev)
    init_weights(model, args.layers)
    n_params = sum(p.numel() for p in model.parameters())
    print(f"parameters: {n_params}", flush=True)
    decay = [p for p in model.parameters() if p.dim() == 2]
    other = [p for p in model.parameters() if p.dim() != 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1},
                             {"params": other, "weight_decay": 0.0}],
                            lr=args.lr, betas=(0.9, 0.95), eps=1e-8, fused=True)
    if args.attn == "flex":
        attn, mask_for = make_flex()
    else:
        attn, mask_for = sdpa_attn, lambda d: dense_mask(d)[:, None]
    model.attn = attn
    trunk = torch.compile(model)

    def batch(rows_idx):
        x = torch.from_numpy(X[rows_idx].astype(np.int64)).to(dev, non_blocking=True)
        l = torch.from_numpy(L[rows_idx]).to(dev, non_blocking=True)
        p = torch.from_numpy(P[rows_idx].astype(np.int64)).to(dev, non_blocking=True)
        d = torch.from_numpy(D[rows_idx].astype(np.int32)).to(dev, non_blocking=True)
        return x, l, p, d

    def loss_of(x, l, p, d):
        h = trunk(x, p, mask_for(d))
        # logits of position i predict token i + 1; flag i + 1 says whether that is trained
        flags = l[:, 1:].reshape(-1)
        w = flags.bool()
        hs = h[:, :-1].reshape(-1, h.shape[-1])[w]
        logits = model.logits(hs).float()
        ce = F.cross_entropy(logits, x[:, 1:].reshape(-1)[w], reduction="none")
        wt = (flags[w] == 2).float() * (args.decision_weight - 1.0) + 1.0
        return (ce * wt).sum() / wt.sum()

    perm = rng.permutation(len(rows))
    cursor, step, curve = 0, 0, []
    t0 = None
    seen_tok = seen_loss = 0
    run_loss, run_n = 0.0, 0
    while True:
        if cursor + args.rows > len(perm):
            perm, cursor = rng.permutation(len(rows)), 0
        idx = np.sort(perm[cursor:cursor + args.rows])
        cursor += args.rows
        cfrac = min(1.0, (time.time() - t0) / args.seconds) if t0 is not None else 0.0
        if args.curriculum > 0 and cfrac < args.curriculum:
            top = max(args.rows, int(len(rows) * (0.3 + 0.7 * cfrac / args.curriculum)))
            idx = np.sort(by_len[rng.integers(0, min(top, len(rows)), args.rows)])
        x, l, p, d = batch(idx)
        if t0 is not None:
            frac = min(1.0, (time.time() - t0) / args.seconds)
        else:
            frac = 0.0
        lr = args.lr * min(1.0, (step + 1) / args.warmup) * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * frac)))
        for g in opt.param_groups:
            g["lr"] = lr
        try:
            with torch.autocast("cuda", dtype=torch.bfloat16):
                loss = loss_of(x, l, p, d)
            loss.backward()
        except Exception as e:  # flex_attention unavailable: dense masks through SDPA
            if step > 0 or model.attn is sdpa_attn:
                raise
            print(f"flex_attention failed ({type(e).__name__}: {e}); using SDPA", flush=True)
            opt.zero_grad(set_to_none=True)
            model.attn, mask_for = sdpa_attn, (lambda dd: dense_mask(dd)[:, None])
            trunk = torch.compile(model)
            with torch.autocast("cuda", dtype=torch.bfloat16):
                loss = loss_of(x, l, p, d)
            loss.backward()
        gn = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)
        step += 1
        seen_tok += int(args.rows * args.seq)
        if step == 3:  # compilation done: the time budget starts here
            torch.cuda.synchronize()
            t0 = time.time()
            seen_tok = seen_loss = 0
            print(f"compiled and warmed up at {t0 - t_start:.0f} s", flush=True)
        run_loss += loss.item() if step % 25 == 0 else 0.0
        if step % 25 == 0 and t0 is not None:
            el = time.time() - t0
            curve.append({"step": step, "seconds": round(el, 2), "loss": round(loss.item(), 5),
                          "lr": lr, "grad_norm": round(float(gn), 4),
                          "tokens": seen_tok, "rows_seen": step * args.rows})
            if step % 100 == 0:
                print(f"step {step} t {el:.0f}s loss {loss.item():.4f} lr {lr:.2e} "
                      f"gn {float(gn):.2f} {seen_tok / max(el, 1e-9) / 1e6:.2f} Mtok/s "
                      f"epochs {step * args.rows / len(rows):.2f}", flush=True)
            if el >= args.seconds:
                break
    train_seconds = time.time() - t0
    print(f"trained {step} steps in {train_seconds:.0f} s, {seen_tok} row tokens", flush=True)

    # ---- save through transformers, check it computes what we trained --------------------------
    model.eval()
    hf = Qwen3ForCausalLM(hf_cfg)
    sd = {k: v.detach().float().cpu() for k, v in model.state_dict().items()}
    missing, unexpected = hf.load_state_dict(sd, strict=False)
    assert not unexpected and set(missing) <= {"lm_head.weight"}, (missing, unexpected)
    hf.tie_weights()
    hf = hf.float().eval()
    ids = torch.from_numpy(X[0:1, :256].astype(np.int64))
    with torch.no_grad():
        want = hf(ids).logits[0]
        mine = model.float().cpu()
        mine.attn = sdpa_attn
        causal = torch.ones(1, 1, 256, 256, dtype=torch.bool).tril()
        got = mine.logits(mine(ids, torch.arange(256)[None], causal)[0])
    rel = ((got - want).abs().max() / want.abs().max()).item()
    print(f"ours vs transformers Qwen3ForCausalLM (fp32, CPU): max rel diff {rel:.2e}", flush=True)
    assert rel < 1e-4, rel
    hf = hf.to(torch.bfloat16)
    hf.config.torch_dtype = torch.bfloat16
    os.makedirs(args.out, exist_ok=True)
    hf.save_pretrained(args.out, safe_serialization=True)
    for f in ["tokenizer.json", "tokenizer_config.json", "hogwild_format.json"]:
        shutil.copy(os.path.join(args.model, f), os.path.join(args.out, f))
    gen = {"do_sample": False, "eos_token_id": hf_cfg.eos_token_id,
           "pad_token_id": hf_cfg.pad_token_id, "transformers_version": transformers.__version__}
    json.dump(gen, open(os.path.join(args.out, "generation_config.json"), "w"), indent=2)
    model = mine.to(dev)

    summary = {"parameters": n_params, "config": c, "steps": step, "train_seconds": train_seconds,
               "rows_per_step": args.rows, "seq": args.seq, "lr": args.lr, "warmup": args.warmup,
               "seed": args.seed, "examples": int(len(lens)), "tokens": n_tok, "loss_tokens": n_loss,
               "rows": len(rows), "row_tokens_seen": seen_tok, "ours_vs_hf_rel": rel,
               "weighted_tokens": n_weighted, "decision_weight": args.decision_weight,
               "curriculum": args.curriculum,
               "versions": {"torch": torch.__version__, "transformers": transformers.__version__,
                            "python": platform.python_version()},
               "curve": curve}

    # ---- golden logits from the saved directory (what tests/collab compares our CPU engine to) ---
    if args.golden_data and args.golden_out:
        from transformers import AutoModelForCausalLM
        gtk, _, gst, gln = load_shards(args.golden_data)
        ex = max(range(len(gln)), key=lambda i: gln[i] if gln[i] <= 400 else -1)
        prompt = [int(t) for t in gtk[gst[ex]:gst[ex] + min(int(gln[ex]), 400) - 1]][-160:]
        ref = AutoModelForCausalLM.from_pretrained(args.out, dtype=torch.float32,
                                                   attn_implementation="eager").eval()
        x = torch.tensor([prompt])
        with torch.no_grad():
            g = ref.generate(x, attention_mask=torch.ones_like(x), do_sample=False, max_new_tokens=32,
                             min_new_tokens=32, eos_token_id=None, pad_token_id=0)
            greedy = g[0, len(prompt):].tolist()
            logits = ref(torch.tensor([prompt + greedy])).logits[0].float().numpy()
        os.makedirs(args.golden_out, exist_ok=True)
        logits.astype("<f4").tofile(os.path.join(args.golden_out, "packs_collab.logits.f32"))
        json.dump({"generator": "tools/collab/train.py", "prompt_ids": prompt, "greedy_ids": greedy,
                   "logits_file": "packs_collab.logits.f32", "logits_shape": list(logits.shape),
                   "device": "cpu", "dtype": "float32", "attn_implementation": "eager",
                   "versions": summary["versions"]},
                  open(os.path.join(args.golden_out, "packs_collab.json"), "w"))
        print(f"golden: {len(prompt)} prompt + {len(greedy)} greedy tokens", flush=True)

    # ---- one-worker check on held-out problems ----------------------------------------------
    if args.eval_problems:
        probs = [json.loads(l) for l in open(args.eval_problems)][:args.eval_count]
        model.attn = sdpa_attn
        t1 = time.time()
        ok, steps = greedy_single(model, tok, probs, fmt, dev, args.eval_max_new)
        acc = sum(ok) / len(ok)
        summary["single_worker_check"] = {"problems": len(ok), "accuracy": acc,
                                          "mean_tokens": sum(steps) / len(steps),
                                          "file": os.path.basename(args.eval_problems)}
        print(f"one-worker greedy check: {sum(ok)}/{len(ok)} right ({acc:.3f}), "
              f"{sum(steps) / len(steps):.0f} tokens each, {time.time() - t1:.0f} s", flush=True)
    if args.log:
        json.dump(summary, open(args.log, "w"), indent=1)
    print(f"total {time.time() - t_start:.0f} s", flush=True)


if __name__ == "__main__":
    main()
