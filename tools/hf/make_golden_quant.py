#!/usr/bin/env python3
"""Golden logits from HF transformers for hogwild on quantized checkpoints (tests/golden/
test_hf_golden_quant.cpp).

Run on a machine with PyTorch + transformers (the GPU machine; no network needed):
    tools/hf/make_golden_quant_models.sh      # anywhere with build/hogwild: models/golden_quant/*
    python3 tools/hf/make_golden_quant.py --models models/golden_quant --out tests/data/hf_golden_quant

For every model directory (written by `hogwild make-model --quant`):
  1. The stored tensors are dequantized here, in Python, by the formats' public definitions:
     - AWQ GEMM (AutoAWQ awq/utils/packing_utils.py: unpack_awq, reverse_awq_order,
       dequantize_gemm): qweight int32 [in, out/8], column 8j + t of word j in nibble
       AWQ_REVERSE_ORDER[t] = [0, 4, 1, 5, 2, 6, 3, 7][t]; qzeros [in/G, out/8] the same way;
       scales fp16 [in/G, out]; W^T[k][o] = (q - z) * s of group k // G.
     - GPTQ (AutoGPTQ auto_gptq/nn_modules/qlinear/qlinear_cuda_old.py): qweight int32 [in/8, out],
       nibble i of [r][o] = input row 8r + i; qzeros [in/G, out/8], nibble i of [g][c] = column
       8c + i, plus 1 for checkpoint_format "gptq" (v1 stores z - 1); scales fp16 [in/G, out];
       g_idx int32 [in]: W^T[k][o] = (q - z[g_idx[k]][o]) * s[g_idx[k]][o].
     - FP8 (transformers integrations/finegrained_fp8.py): weight float8_e4m3fn [out, in],
       weight_scale_inv fp32 [ceil(out/bn), ceil(in/bk)]: W = weight.float() * scale_inv of its tile.
     The dense fp32 model (config.json without quantization_config) is written to a temporary
     directory and run by transformers in fp32, eager attention, on the CPU, exactly as
     tools/hf/make_golden.py does for the dense goldens.
  2. For FP8 (unless --no-native) transformers also loads the quantized directory itself
     (quant_method "fp8": FP8Linear) on the GPU in bf16; those logits go to a separate file, with
     the relative error transformers' own fp32 run has against them (the C++ test's bound there).
     Only models whose every in_features is a multiple of the block run it (its activation
     quantization needs that; the others record "native": {"skipped": why}). A failure of this
     step (no GPU, a transformers without FP8 support) is recorded in the .json under
     "native": {"error": ...} and reported at the end (exit 3).
Files, in tests/data/hf_golden's format (tests/data/hf_golden/README.md):
  <name>.json         prompt ids, greedy ids, shapes, make_model_args, versions, "native"
  <name>.logits.f32   float32 little-endian (n_prompt + n_decode, vocab_size)
  <name>.native.logits.f32   (FP8) transformers' FP8 path on prompt + its own greedy ids
"""
import argparse
import json
import os
import platform
import shutil
import sys
import tempfile

import numpy as np
import torch
import transformers
from transformers import AutoModelForCausalLM

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from make_golden import N_DECODE, N_PROMPT, prompt_ids  # noqa: E402  (same prompt as the dense goldens)

AWQ_REVERSE_ORDER = [0, 4, 1, 5, 2, 6, 3, 7]


def load_tensors(d):
    """Every tensor of the directory's safetensors files (one file or shards) as torch tensors."""
    from safetensors.torch import load_file

    files = sorted(f for f in os.listdir(d) if f.endswith(".safetensors"))
    if not files:
        raise SystemExit(f"{d}: no .safetensors file")
    out = {}
    for f in files:
        out.update(load_file(os.path.join(d, f)))
    return out


def nibbles(x):
    """int32 [..., n] -> int64 [..., n, 8]: nibble i = bits 4i..4i+3 of each word."""
    x = x.to(torch.int64) & 0xFFFFFFFF
    shifts = torch.arange(0, 32, 4, dtype=torch.int64)
    return (x.unsqueeze(-1) >> shifts) & 15


def dequant_awq(qweight, qzeros, scales):
    n_in, ow = qweight.shape
    n_out = ow * 8
    g_size = n_in // qzeros.shape[0]
    q = nibbles(qweight)[..., AWQ_REVERSE_ORDER].reshape(n_in, n_out)
    z = nibbles(qzeros)[..., AWQ_REVERSE_ORDER].reshape(qzeros.shape[0], n_out)
    g = torch.arange(n_in) // g_size
    w_t = (q.to(torch.float32) - z[g].to(torch.float32)) * scales.to(torch.float32)[g]
    return w_t.t().contiguous()  # [out, in]


def dequant_gptq(qweight, qzeros, scales, g_idx, v1_zeros):
    rows, n_out = qweight.shape
    n_in = rows * 8
    q = nibbles(qweight).permute(0, 2, 1).reshape(n_in, n_out)  # row 8r + i
    z = nibbles(qzeros).reshape(qzeros.shape[0], n_out) + (1 if v1_zeros else 0)
    if g_idx is None:
        g_idx = torch.arange(n_in) // (n_in // qzeros.shape[0])
    g = g_idx.to(torch.int64)
    w_t = (q.to(torch.float32) - z[g].to(torch.float32)) * scales.to(torch.float32)[g]
    return w_t.t().contiguous()


def dequant_fp8(weight, scale_inv, block_n, block_k):
    n_out, n_in = weight.shape
    s = scale_inv.to(torch.float32)
    s = s.repeat_interleave(block_n, 0)[:n_out].repeat_interleave(block_k, 1)[:, :n_in]
    return weight.to(torch.float32) * s


def dense_state_dict(tensors, qc):
    """The dense fp32 state dict a quantized checkpoint defines; counts the dequantized layers."""
    method = qc["quant_method"]
    out, n = {}, 0
    skip = (".qzeros", ".scales", ".g_idx", ".weight_scale_inv")
    for name, t in tensors.items():
        if name.endswith(skip):
            continue
        if name.endswith(".qweight"):
            m = name[: -len(".qweight")]
            if method == "awq":
                w = dequant_awq(t, tensors[m + ".qzeros"], tensors[m + ".scales"])
            elif method == "gptq":
                w = dequant_gptq(t, tensors[m + ".qzeros"], tensors[m + ".scales"],
                                 tensors.get(m + ".g_idx"),
                                 qc.get("checkpoint_format", "gptq") == "gptq")
            else:
                raise SystemExit(f"{name}: qweight in a {method} checkpoint")
            out[m + ".weight"] = w
            n += 1
        elif t.dtype == torch.float8_e4m3fn:
            m = name[: -len(".weight")]
            bn, bk = qc["weight_block_size"]
            out[name] = dequant_fp8(t, tensors[m + ".weight_scale_inv"], bn, bk)
            n += 1
        else:
            out[name] = t.to(torch.float32)
    return out, n


def write_dense_dir(src, dst, state):
    from safetensors.torch import save_file

    cfg = json.load(open(os.path.join(src, "config.json")))
    cfg.pop("quantization_config", None)
    cfg["torch_dtype"] = "float32"
    os.makedirs(dst, exist_ok=True)
    with open(os.path.join(dst, "config.json"), "w") as f:
        json.dump(cfg, f, indent=1)
    for extra in ("generation_config.json",):
        if os.path.exists(os.path.join(src, extra)):
            shutil.copy(os.path.join(src, extra), os.path.join(dst, extra))
    save_file({k: v.contiguous() for k, v in state.items()}, os.path.join(dst, "model.safetensors"),
              metadata={"format": "pt"})


def greedy_and_logits(model, ids, device):
    x = torch.tensor([ids], dtype=torch.long, device=device)
    with torch.no_grad():
        gen = model.generate(x, attention_mask=torch.ones_like(x), do_sample=False,
                             max_new_tokens=N_DECODE, min_new_tokens=N_DECODE, eos_token_id=None,
                             pad_token_id=0, temperature=None, top_p=None, top_k=None)
        greedy = gen[0, N_PROMPT:].tolist()
        logits = forward_logits(model, ids + greedy, device)
    return greedy, logits


def forward_logits(model, ids, device):
    with torch.no_grad():
        full = torch.tensor([ids], dtype=torch.long, device=device)
        return model(full).logits[0].float().cpu().numpy()


def worst_row_rel_error(a, b):
    """max over rows of max|a - b| / max|b| (the C++ tests' measure)."""
    diff = np.abs(a.astype(np.float64) - b.astype(np.float64)).max(axis=1)
    ref = np.abs(b.astype(np.float64)).max(axis=1)
    return float((diff / ref).max())


def native_fp8(d, dense_model, vocab):
    """transformers' own FP8 path on the GPU: greedy ids, logits, and HF fp32's error against it."""
    if not torch.cuda.is_available():
        raise RuntimeError("no CUDA device (transformers' FP8Linear needs a GPU)")
    try:
        model = AutoModelForCausalLM.from_pretrained(d, dtype=torch.bfloat16, device_map="cuda")
    except (ImportError, ValueError) as e:  # device_map needing accelerate: load, then move
        print(f"{d}: device_map='cuda' failed ({e}); loading, then .to('cuda')", file=sys.stderr)
        model = AutoModelForCausalLM.from_pretrained(d, dtype=torch.bfloat16).to("cuda")
    model.eval()
    fp8_modules = [n for n, m in model.named_modules() if "FP8" in type(m).__name__]
    if not fp8_modules:
        raise RuntimeError("transformers loaded no FP8 module (quantization_config ignored?)")
    ids = prompt_ids(vocab)
    greedy, logits = greedy_and_logits(model, ids, "cuda")
    ref = forward_logits(dense_model, ids + greedy, "cpu")
    del model
    torch.cuda.empty_cache()
    return {"greedy_ids": greedy, "logits": logits, "fp8_modules": len(fp8_modules),
            "hf_fp32_max_rel_error": worst_row_rel_error(ref, logits)}


def native_skip_reason(d, qc):
    """Why transformers' FP8 path cannot run this shape (its activation quantization splits every
    input into groups of block_k), or None."""
    c = json.load(open(os.path.join(d, "config.json")))
    bk = qc["weight_block_size"][1]
    head_dim = c.get("head_dim") or c["hidden_size"] // c["num_attention_heads"]
    ins = {"hidden_size": c["hidden_size"], "intermediate_size": c["intermediate_size"],
           "num_attention_heads * head_dim": c["num_attention_heads"] * head_dim}
    bad = [f"{k} {v}" for k, v in ins.items() if v % bk]
    if bad:
        return f"in_features not a multiple of block {bk}: {', '.join(bad)}"
    return None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--models", required=True, help="folder of quantized model dirs")
    ap.add_argument("--out", required=True)
    ap.add_argument("--no-native", action="store_true", help="skip transformers' own FP8 path")
    args = ap.parse_args()
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.set_num_threads(max(1, os.cpu_count() or 1))
    os.makedirs(args.out, exist_ok=True)
    names = sorted(n for n in os.listdir(args.models)
                   if os.path.isfile(os.path.join(args.models, n, "config.json")))
    if not names:
        raise SystemExit(f"{args.models}: no model directories; run tools/hf/make_golden_quant_models.sh")
    native_failures = []
    for name in names:
        d = os.path.join(args.models, name)
        qc = json.load(open(os.path.join(d, "config.json"))).get("quantization_config")
        if not qc:
            raise SystemExit(f"{d}: config.json has no quantization_config")
        state, n_layers = dense_state_dict(load_tensors(d), qc)
        with tempfile.TemporaryDirectory() as tmp:
            write_dense_dir(d, tmp, state)
            model = AutoModelForCausalLM.from_pretrained(tmp, dtype=torch.float32,
                                                         attn_implementation="eager")
            model.eval()
            cfg = model.config
            ids = prompt_ids(cfg.vocab_size)
            greedy, logits = greedy_and_logits(model, ids, "cpu")
            assert logits.shape == (N_PROMPT + N_DECODE, cfg.vocab_size)
            am = logits[N_PROMPT - 1:-1].argmax(-1).tolist()
            if am != greedy:
                print(f"{name}: warning: argmax of full forward differs from generate", file=sys.stderr)
            logits.astype("<f4").tofile(os.path.join(args.out, f"{name}.logits.f32"))
            native = None
            skip = native_skip_reason(d, qc) if qc["quant_method"] == "fp8" else None
            if qc["quant_method"] == "fp8" and skip:
                native = {"skipped": skip}
            elif qc["quant_method"] == "fp8" and not args.no_native:
                try:
                    r = native_fp8(d, model, cfg.vocab_size)
                    r["logits"].astype("<f4").tofile(
                        os.path.join(args.out, f"{name}.native.logits.f32"))
                    native = {"logits_file": f"{name}.native.logits.f32",
                              "logits_shape": list(r["logits"].shape),
                              "greedy_ids": r["greedy_ids"],
                              "hf_fp32_max_rel_error": r["hf_fp32_max_rel_error"],
                              "fp8_modules": r["fp8_modules"],
                              "device": torch.cuda.get_device_name(0), "dtype": "bfloat16"}
                except Exception as e:  # recorded, reported at the end
                    native = {"error": f"{type(e).__name__}: {e}"[:2000]}
                    native_failures.append(name)
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
            "quantization_config": qc,
            "dequantized_layers": n_layers,
            "make_model_args": json.load(open(os.path.join(d, "make_model_args.json"))),
            "versions": {"torch": torch.__version__, "transformers": transformers.__version__,
                         "numpy": np.__version__, "python": platform.python_version()},
            "device": "cpu", "dtype": "float32", "attn_implementation": "eager",
        }
        if native is not None:
            meta["native"] = native
        with open(os.path.join(args.out, f"{name}.json"), "w") as f:
            json.dump(meta, f, indent=1)
        extra = ""
        if native and "hf_fp32_max_rel_error" in native:
            extra = f", native fp8 (HF fp32 vs it: {native['hf_fp32_max_rel_error']:.3g})"
        print(f"{name}: {cfg.architectures[0]} {qc['quant_method']} {n_layers} layers dequantized, "
              f"logits {logits.shape} greedy {greedy[:8]}...{extra}")
    if native_failures:
        for name in native_failures:
            err = json.load(open(os.path.join(args.out, f"{name}.json")))["native"]["error"]
            print(f"{name}: transformers' native FP8 path failed: {err}", file=sys.stderr)
        print("the dequantized goldens are written; rerun with --no-native to skip the native FP8 "
              "reference", file=sys.stderr)
        sys.exit(3)


if __name__ == "__main__":
    main()
