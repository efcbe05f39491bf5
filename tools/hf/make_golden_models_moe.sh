#!/usr/bin/env bash
# Writes the Qwen3-MoE models (Qwen3MoeForCausalLM) that tests/data/hf_golden/qwen3_moe-* are
# computed on, into models/golden-moe (the dense ones: make_golden_models.sh). Run here, carry
# models/golden-moe to the machine with PyTorch + transformers and run there
#     python3 tools/hf/make_golden.py --models models/golden-moe --out tests/data/hf_golden
# tests/golden/test_hf_golden.cpp regenerates each model from the make_model_args in its .json.
#   qwen3_moe-tiny               8 experts, top-2, norm_topk_prob true, every layer sparse
#   qwen3_moe-tiny-dense-layers  6 layers, decoder_sparse_step 2, mlp_only_layers [3]
#   qwen3_moe-tiny-no-norm       top-3, norm_topk_prob false
set -euo pipefail
cd "$(dirname "$0")/../.."
H=${HOGWILD:-build/hogwild}
out=${1:-models/golden-moe}  # the folder to write (argument 1)
[ -x "$H" ] || { echo "$H not found: build it first (cmake --build build --target hogwild) or set HOGWILD" >&2; exit 1; }
rm -rf "$out" && mkdir -p "$out"
mk() {  # name arch preset seed
  "$H" make-model --arch "$2" --preset "$3" --dtype f32 --seed "$4" --out "$out/$1" -q
  echo "{\"arch\": \"$2\", \"preset\": \"$3\", \"dtype\": \"f32\", \"seed\": $4}" > "$out/$1/make_model_args.json"
}
mk qwen3_moe-tiny qwen3_moe tiny 11
mk qwen3_moe-tiny-dense-layers qwen3_moe tiny-dense-layers 12
mk qwen3_moe-tiny-no-norm qwen3_moe tiny-no-norm 13
echo "wrote $(ls "$out" | wc -l) models to $out"
