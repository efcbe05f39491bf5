#!/usr/bin/env bash
# The whole training run of the packs-collab model on a GPU machine, in one run
# (tools/collab/README.md, "The second model"):
#   tools/collab/device_pipeline.sh HOGWILD OUT
# HOGWILD is the hogwild binary (the CUDA build), or a .tar.xz of it and its shared libraries made by
# tools/collab/pack_binary.sh. The model directory is made from TEMPLATE (hogwild_format.json and
# tokenizer_config.json with the chat template, written by hand):
#   1. tokenizer: views of 250 scripted sessions rendered byte by byte (--bytes) are the corpus of
#      tools/collab/train_tokenizer.py (byte-level BPE, VOCAB ids); its golden ids are computed for
#      held-out texts (16 one-worker runs and 35 problems of test-frames);
#   2. traces: SESSIONS scripted sessions (seed 1) with that tokenizer, every core;
#   3. training: tools/collab/train.py for SECS seconds (its defaults: decision weight 3,
#      curriculum 0.2), the model saved through transformers with golden logits;
#   4. evaluation with `hogwild eval` on the GPU (tools/collab/eval_device.sh): K = 4 problems of
#      the test split, EVAL_COUNT of them, one worker, 2, 4 and 8 workers combined, 4 workers
#      interleaved and contiguous; then test-frames (new wording), one worker and 4 combined; both
#      within the time left before DEADLINE seconds after the start.
# OUT receives at most 8 files: log.txt (this script's output), model.tar.part-NN (the model
# directory as a tar cut in 15 MiB parts: cat model.tar.part-* | tar x), small.tgz (training log and
# output, trace statistics, tokenizer and logit goldens), eval.tar.xz (both evaluations: summary.md,
# the eval folders without transcripts, the logs) and transcripts.tar.xz (the first transcripts of
# every configuration).
# Environment (defaults): TASK (packs; countdown: the search task, with the countdown template, 4..5
# numbers per problem in the traces, and an evaluation of EVAL_COUNT held-out problems of 4 numbers
# by `hogwild eval`: one worker, 2 and 4 workers combined, greedy), TEMPLATE
# (tools/collab/model-template; countdown: tools/collab/countdown-template), SESSIONS (14000),
# SECS (270), VOCAB (2048), EVAL_COUNT (150), TF_COUNT (100), DEADLINE (520); eval_device.sh's own
# settings (DEVICE, PARALLEL, CONCURRENCY, ...) pass through.
set -uo pipefail
BIN=$(realpath "$1") OUT=$(realpath -m "$2")
HERE=$(cd "$(dirname "$0")" && pwd)
TASK=${TASK:-packs}
case $TASK in
  packs) TASK_ARGS=() DEFAULT_TEMPLATE=$HERE/model-template GOLDEN_SPLIT=test-frames ;;
  countdown)
    TASK_ARGS=(--task countdown --numbers-min 4 --numbers-max 5)
    DEFAULT_TEMPLATE=$HERE/countdown-template GOLDEN_SPLIT=test ;;
  *) echo "TASK must be packs or countdown, got '$TASK'" >&2; exit 2 ;;
esac
TEMPLATE=${TEMPLATE:-$DEFAULT_TEMPLATE} SESSIONS=${SESSIONS:-14000} SECS=${SECS:-270}
VOCAB=${VOCAB:-2048} EVAL_COUNT=${EVAL_COUNT:-150} TF_COUNT=${TF_COUNT:-100}
DEADLINE=${DEADLINE:-520}
START=$(date +%s)
D=/tmp/collab-data
rm -rf "$D" && mkdir -p "$D/small" "$OUT"
exec > >(tee -a "$OUT/log.txt") 2>&1
say() { echo "[$(($(date +%s) - START)) s] $*"; }
H=$BIN
if [[ $BIN == *.tar.xz ]]; then
  rm -rf /tmp/collab-bin && mkdir -p /tmp/collab-bin && tar xJf "$BIN" -C /tmp/collab-bin || exit 1
  H=/tmp/collab-bin/hogwild
fi
# The binary's library path: its packed lib/, then the machine's copy of what is still missing.
LDP=/tmp/collab-bin/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
for lib in $(LD_LIBRARY_PATH=$LDP ldd "$H" | awk '/not found/ {print $1}'); do
  f=$(find /usr/local/cuda*/ /opt /usr/lib /usr/local/lib -name "$lib" 2>/dev/null | head -1)
  if [[ -n $f ]]; then LDP=$LDP:$(dirname "$f"); else say "missing library: $lib"; fi
done
hw() { env "LD_LIBRARY_PATH=$LDP" "$H" "$@"; }
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,memory.used,memory.total --format=csv,noheader
python3 -c 'import torch, transformers, tokenizers; print("torch", torch.__version__, "transformers", transformers.__version__, "tokenizers", tokenizers.__version__)'
hw --version | head -1
M=$D/model-src
mkdir -p "$M" && cp "$TEMPLATE/hogwild_format.json" "$TEMPLATE/tokenizer_config.json" "$M/"

# 1. tokenizer
hw collab traces -m "$M" --bytes --text "${TASK_ARGS[@]}" --sessions 250 --seed 101 \
  --threads "$(nproc)" --max-context 16384 --keep-decision 0.3 --out "$D/corpus" || exit 1
hw collab traces -m "$M" --bytes --text "${TASK_ARGS[@]}" --split $GOLDEN_SPLIT --sessions 16 \
  --seed 202 --threads 1 --max-context 16384 --single 1.0 --out "$D/golden_traces" || exit 1
if [[ $TASK == countdown ]]; then
  for n in 3 4 5 6; do
    hw collab problems --task countdown --split test --numbers $n --count 9 --seed 303
  done | python3 -c 'import json, sys
for line in sys.stdin:
    if line.strip():
        print(json.dumps({"text": json.loads(line)["problem"]}))' >"$D/golden_problems.jsonl"
else
  for k in 2 3 4 5 6 7 8; do
    hw collab problems --split test-frames --k $k --count 5 --seed 303 --format text
  done | python3 -c 'import json, sys
text = sys.stdin.read().split("What is the sum of the answers to all parts?\n")
for t in text:
    if t.strip():
        print(json.dumps({"text": t + "What is the sum of the answers to all parts?"}))' \
    >"$D/golden_problems.jsonl"
fi
cat "$D/golden_traces.jsonl" "$D/golden_problems.jsonl" >"$D/golden_text.jsonl"
python3 "$HERE/train_tokenizer.py" --corpus "$D/corpus.jsonl" --model "$M" --vocab-size "$VOCAB" \
  --golden-text "$D/golden_text.jsonl" --golden "$D/small/tokenizer_golden.json" || exit 1
say "tokenizer done"

# 2. traces
hw collab traces -m "$M" "${TASK_ARGS[@]}" --sessions "$SESSIONS" --seed 1 --threads "$(nproc)" \
  --out "$D/train" | tee "$D/small/traces.txt" || exit 1
hw collab traces -m "$M" "${TASK_ARGS[@]}" --split test --sessions 8 --seed 7 --threads 1 \
  --out "$D/golden" || exit 1
say "traces done: $(du -sh "$D" | cut -f1)"

# 3. training
python3 "$HERE/train.py" --data "$D/train" --model "$M" --out "$D/model" --seconds "$SECS" \
  --golden-data "$D/golden" --golden-out "$D/golden_out" --log "$D/model/training_log.json" \
  2>&1 | tee "$D/small/train.txt"
[[ -f $D/model/model.safetensors ]] || { say "TRAINING FAILED"; exit 1; }
cp "$D/golden_out/"* "$D/model/training_log.json" "$D/small/" 2>/dev/null
sha256sum "$D/model/model.safetensors" | tee "$D/small/sha256.txt"
du -sh "$D/model"
tar cf - -C "$D" model | split -b 15M -d - "$OUT/model.tar.part-"
(cd "$D" && tar czf "$OUT/small.tgz" small)  # (again at the end, with the evaluation's summaries)
say "model packed"

# 4. evaluation on the GPU, in the time left
left=$((DEADLINE - ($(date +%s) - START) - 25))
if [[ $TASK == countdown ]]; then
  # Held-out problems of 4 numbers; one worker, 2 and 4 workers combined, each in a third of the
  # time left (an eval stopped by the clock keeps the problems it finished).
  hw collab problems --task countdown --split test --numbers 4 --count "$EVAL_COUNT" --seed 11 \
    --out "$D/cd_test.jsonl" || exit 1
  mkdir -p "$D/eval"
  for w in 1 2 4; do
    method=hogwild
    [[ $w == 1 ]] && method=single
    timeout $((left / 3)) env "LD_LIBRARY_PATH=$LDP" "$H" eval -m "$D/model" \
      --dataset "$D/cd_test.jsonl" --question-field problem --id-field id \
      --budgets 256,512,1024,2048 --method $method -w $w --layout combined --greedy \
      --device "${DEVICE:-cuda}" --out "$D/eval/w$w" >"$D/eval/w$w.log" 2>&1
    say "countdown eval, $w worker(s): $(tail -3 "$D/eval/w$w.log" | tr '\n' ' ')"
  done
  env "LD_LIBRARY_PATH=$LDP" "$H" eval report --out "$D/eval/report" "$D/eval/w1" "$D/eval/w2" \
    "$D/eval/w4" >"$D/small/summary_test.md" 2>&1
  cat "$D/small/summary_test.md" | head -40
  (cd "$D" && tar cJf "$OUT/eval.tar.xz" eval && tar czf "$OUT/small.tgz" small)
  say "done"
  ls -la "$OUT"
  exit 0
fi
tf=$((left / 4))
MODEL=$D/model KS=4 COUNT=$EVAL_COUNT FIRST=$EVAL_COUNT TIME_LIMIT=$((left - tf)) TRANSCRIPTS=10 \
  ONLY='single|hw2-combined|hw4-combined|hw8-combined|hw4-interleaved|hw4-contiguous' \
  bash "$HERE/eval_device.sh" "$BIN" "$D/eval_test" "$D/work_test" >/dev/null 2>&1
cat "$D/eval_test/summary.md" 2>/dev/null | head -40
MODEL=$D/model KS=4 COUNT=$TF_COUNT FIRST=$TF_COUNT TIME_LIMIT=$tf SPLIT=test-frames TRANSCRIPTS=10 \
  ONLY='single|hw4-combined' \
  bash "$HERE/eval_device.sh" "$BIN" "$D/eval_tf" "$D/work_tf" >/dev/null 2>&1
cat "$D/eval_tf/summary.md" 2>/dev/null | head -20
mkdir -p "$D/eval"
cp -r "$D/eval_test" "$D/eval/test" 2>/dev/null
cp -r "$D/eval_tf" "$D/eval/test-frames" 2>/dev/null
mv "$D/eval/test/transcripts.tar.xz" "$OUT/transcripts.tar.xz" 2>/dev/null
rm -f "$D/eval/test-frames/transcripts.tar.xz"
(cd "$D" && tar cJf "$OUT/eval.tar.xz" eval)
cp "$D/eval_test/summary.md" "$D/small/summary_test.md" 2>/dev/null
cp "$D/eval_tf/summary.md" "$D/small/summary_test_frames.md" 2>/dev/null
(cd "$D" && tar czf "$OUT/small.tgz" small)
say "done"
ls -la "$OUT"
