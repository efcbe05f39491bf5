#!/usr/bin/env bash
# Writes the quantized models that tests/data/hf_golden_quant is computed on, with
# `hogwild make-model --quant` (AWQ GEMM, GPTQ sym / asym / desc_act, FP8 block-scaled e4m3).
# Dense tensors (embeddings, lm_head, norms, biases) are f32, as in tests/data/hf_golden.
#   - "<arch>-tiny-<fmt>": the tiny presets (hidden_size 64): dequantized-weight goldens only.
#   - "<arch>-wide-fp8": the tiny presets widened so that every in_features is a multiple of 128,
#     which transformers' own FP8 path (per-128-group activation quantization) needs; the Python
#     script also records transformers' native FP8 logits for these.
# Then, on the GPU machine (PyTorch + transformers; no network needed):
#   python3 tools/hf/make_golden_quant.py --models models/golden_quant --out tests/data/hf_golden_quant
# tests/golden/test_hf_golden_quant.cpp regenerates each model from the make_model_args stored in
# its golden .json (make-model is deterministic).
set -euo pipefail
cd "$(dirname "$0")/../.."
H=${HOGWILD:-build/hogwild}
if [ ! -x "$H" ]; then
  echo "error: $H not found; build it first (cmake --build build --target hogwild) or set HOGWILD" >&2
  exit 1
fi
out=models/golden_quant
rm -rf $out && mkdir -p $out/.presets

# Writes make_model_args.json: the arguments the C++ test passes back to make_model.
args_json() {  # dir arch preset seed quant group_size desc_act sym [config.json]
  python3 - "$@" <<'PY'
import json, sys
d, arch, preset, seed, quant, g, desc_act, sym = sys.argv[1:9]
a = {"arch": arch, "preset": preset, "dtype": "f32", "seed": int(seed), "quant": quant,
     "group_size": int(g), "desc_act": desc_act == "1", "sym": sym == "1"}
if len(sys.argv) > 9:
    a["preset"] = ""
    a["config"] = json.load(open(sys.argv[9]))
json.dump(a, open(d + "/make_model_args.json", "w"), indent=1)
PY
}

mk() {  # name arch preset seed quant group_size(0 = default) desc_act(0/1) sym(0/1)
  local flags="--quant $5"
  [ "$6" != 0 ] && flags="$flags --group-size $6"
  [ "$7" = 1 ] && flags="$flags --desc-act"
  [ "$8" = 0 ] && flags="$flags --no-sym"
  $H make-model --arch "$2" --preset "$3" --dtype f32 --seed "$4" $flags --out $out/$1 -q
  args_json $out/$1 "$2" "$3" "$4" "$5" "$6" "$7" "$8"
}

mk_wide() {  # name arch seed hidden_size head_dim intermediate_size (fp8)
  local p=$out/.presets/$1
  $H make-model --arch "$2" --preset tiny --dtype f32 --seed 0 --out "$p" -q
  python3 - "$p/config.json" "$out/$1.config.json" "$4" "$5" "$6" <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))
c.pop("hogwild", None)
c["hidden_size"], c["head_dim"], c["intermediate_size"] = map(int, sys.argv[3:6])
json.dump(c, open(sys.argv[2], "w"), indent=1)
PY
  $H make-model --arch "$2" --config "$out/$1.config.json" --dtype f32 --seed "$3" --quant fp8 \
    --out $out/$1 -q
  args_json $out/$1 "$2" "" "$3" fp8 0 0 1 "$out/$1.config.json"
  rm "$out/$1.config.json"
}

mk qwen3-tiny-awq qwen3 tiny 1 awq 0 0 1
mk qwen3-tiny-gptq qwen3 tiny 1 gptq 32 0 1
mk qwen3-tiny-gptq-asym-desc-act qwen3 tiny 2 gptq 32 1 0
mk qwen3-tiny-fp8 qwen3 tiny 1 fp8 0 0 1
mk phi3-tiny-awq phi3 tiny 1 awq 32 0 1
mk phi3-tiny-gptq-desc-act phi3 tiny 1 gptq 32 1 1
mk phi3-tiny-fp8 phi3 tiny 1 fp8 0 0 1
mk qwen2-tiny-gptq-asym qwen2 tiny 1 gptq 32 0 0
mk qwen2-tiny-awq qwen2 tiny 3 awq 0 0 1
mk llama-tiny-awq llama tiny 1 awq 0 0 1
mk llama-tiny-linear-gptq llama tiny-linear 3 gptq 64 0 1
mk mistral-tiny-fp8 mistral tiny 1 fp8 0 0 1
mk_wide qwen3-wide-fp8 qwen3 1 128 32 256
mk_wide phi3-wide-fp8 phi3 1 128 32 256
mk_wide llama-wide-fp8 llama 1 256 64 384
rm -rf $out/.presets
echo "wrote $(ls $out | wc -l) models in $out; next, on the GPU machine:"
echo "  python3 tools/hf/make_golden_quant.py --models $out --out tests/data/hf_golden_quant"
