#!/usr/bin/env bash
# Writes the models that tests/data/hf_golden was computed on (run here, then carry models/golden
# to the GPU machine and run tools/hf/make_golden.py there). tests/golden/test_hf_golden.cpp
# regenerates each model from the make_model_args stored in its golden .json.
set -euo pipefail
cd "$(dirname "$0")/../.."
H=${HOGWILD:-build/hogwild}
out=models/golden
rm -rf $out && mkdir -p $out
mk() {  # name arch preset seed
  $H make-model --arch "$2" --preset "$3" --dtype f32 --seed "$4" --out $out/$1 -q
  echo "{\"arch\": \"$2\", \"preset\": \"$3\", \"dtype\": \"f32\", \"seed\": $4}" > $out/$1/make_model_args.json
}
for a in qwen3 qwen2 llama mistral phi3; do mk $a-tiny $a tiny 1; done
mk qwen3-tiny-yarn qwen3 tiny-yarn 2
mk llama-tiny-linear llama tiny-linear 3
