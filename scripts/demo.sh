#!/usr/bin/env bash
# The default job (`make demo`): four workers of our own small model (models/packs-collab, a
# 19M-parameter Qwen3ForCausalLM trained from scratch to collaborate in the hogwild layout; see
# tools/collab/README.md) solve a held-out 4-part word problem on the CPU, greedy. Watch the
# workers take different parts, their steps move into the shared history, the idle ones stop, and
# one of them add up the results in \boxed{}.
#
# The problem is the first pack of the held-out set (`hogwild collab problems --split test
# --wording first --k 4 --seed 11`: the first model's wording): no training example contains it. How often the model is right over the whole
# held-out set, and how many serial steps it needs with 1/2/4/8 workers: docs/COLLAB.md.
#
# Environment: BUILD (default build), DEMO_DIR (default build/demo), WORKERS (4), LAYOUT
# (combined), SEED (11, the problem set's seed), INDEX (0, which pack of it). Extra arguments are
# passed to `hogwild run`.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
HOGWILD=$BUILD/hogwild
DEMO_DIR=${DEMO_DIR:-$BUILD/demo}
WORKERS=${WORKERS:-4}
LAYOUT=${LAYOUT:-combined}
SEED=${SEED:-11}
INDEX=${INDEX:-0}
MODEL=models/packs-collab

[[ -x $HOGWILD ]] || { echo "demo: $HOGWILD not found; run 'make build' first" >&2; exit 1; }
[[ -f $MODEL/model.safetensors ]] || {
  echo "demo: $MODEL/model.safetensors is missing; it is part of the repository (git checkout)" >&2
  exit 1
}
mkdir -p "$DEMO_DIR"
PROBLEM=$("$HOGWILD" collab problems --split test --wording first --k 4 --seed "$SEED" \
  --count $((INDEX + 1)) --format text | tail -n 5)
ANSWER=$("$HOGWILD" collab problems --split test --wording first --k 4 --seed "$SEED" \
  --count $((INDEX + 1)) |
  tail -n 1 | sed 's/.*"answer":"\([0-9]*\)".*/\1/')

cat <<EOF
================================================================================
hogwild demo: $WORKERS workers, one shared KV cache, CPU backend, greedy decoding
model:   $MODEL (19M parameters, trained for this layout; tools/collab/README.md)
problem: held-out pack $INDEX of 'hogwild collab problems --split test --wording first --k 4 --seed $SEED'
$PROBLEM
expected answer: $ANSWER
================================================================================
EOF
"$HOGWILD" run -m "$MODEL" --format "$MODEL/hogwild_format.json" -w "$WORKERS" \
  --layout "$LAYOUT" --greedy --device cpu --budget 1000 --json "$DEMO_DIR/transcript.json" "$@" \
  "$PROBLEM"
echo
echo "expected answer: $ANSWER"
echo "transcript (every token with worker, step and serial step): $DEMO_DIR/transcript.json"
echo "one worker for comparison: WORKERS=1 make demo; other problems: INDEX=1 make demo"
