#!/usr/bin/env bash
# Writes the models that tests/data/hf_golden_bf16 was computed on: the 7 tiny golden presets of
# make_golden_models.sh and two Qwen3-MoE ones (same families, RoPE scalings, GQA, tying, partial rotary, initializer
# 0.1), widened to the head_dim the CUDA attention kernel supports (64 or 128; the tiny presets
# have 16/32). qwen3 keeps heads*head_dim != hidden_size; qwen2/llama/phi3 get
# hidden_size = heads*head_dim (their HF configs may derive head_dim from it). Weights are written
# in bf16, so HF (torch.bfloat16) and hogwild's CUDA backend hold the same values.
# `--config` models get norms = 1 and biases = 0 (the jitter of the tiny presets is preset-only).
# Run here, carry models/golden_bf16 to the GPU machine, run tools/hf/make_golden.py --bf16 there.
# tests/cuda/test_cuda_hf_golden.cpp regenerates each model from the make_model_args (config
# included) stored in its golden .json.
set -euo pipefail
cd "$(dirname "$0")/../.."
H=${HOGWILD:-build/hogwild}
out=models/golden_bf16
rm -rf $out && mkdir -p $out/.presets
mk() {  # name arch preset seed hidden_size head_dim intermediate_size
  local p=$out/.presets/$1
  $H make-model --arch "$2" --preset "$3" --dtype bf16 --seed 0 --out "$p" -q
  python3 - "$p/config.json" "$out/$1.config.json" "$5" "$6" "$7" <<'EOF'
import json, sys
c = json.load(open(sys.argv[1]))
c.pop("hogwild", None)
c["hidden_size"], c["head_dim"], c["intermediate_size"] = map(int, sys.argv[3:6])
json.dump(c, open(sys.argv[2], "w"), indent=1)
EOF
  $H make-model --arch "$2" --config "$out/$1.config.json" --dtype bf16 --seed "$4" --out $out/$1 -q
  python3 - "$out/$1.config.json" "$out/$1/make_model_args.json" "$2" "$4" <<'EOF'
import json, sys
json.dump({"arch": sys.argv[3], "config": json.load(open(sys.argv[1])), "dtype": "bf16",
           "seed": int(sys.argv[4])}, open(sys.argv[2], "w"), indent=1)
EOF
}
mk qwen3-tiny qwen3 tiny 1 128 128 256
mk qwen3-tiny-yarn qwen3 tiny-yarn 2 128 128 256
mk qwen2-tiny qwen2 tiny 1 256 64 320
mk llama-tiny llama tiny 1 256 64 256
mk llama-tiny-linear llama tiny-linear 3 256 64 256
mk mistral-tiny mistral tiny 1 128 64 256
mk phi3-tiny phi3 tiny 1 256 64 256
# Qwen3-MoE (CUDA's cuda/moe.h): 8 experts of 32, top-2, and top-3 without renormalisation
mk qwen3_moe-tiny qwen3_moe tiny 11 128 128 256
mk qwen3_moe-tiny-no-norm qwen3_moe tiny-no-norm 13 128 128 256
rm -rf $out/.presets
