#!/usr/bin/env bash
# The whole training run on the GPU machine, in one call (tools/collab/README.md):
#   tools/collab/device_pipeline.sh CARRY OUT SESSIONS SECONDS [tok]
# CARRY holds the hogwild binary (built here with -DHOGWILD_CUDA=OFF), lib.tar.xz (its shared
# libraries), corpus.jsonl + golden_text.jsonl (only with `tok`: train the tokenizer first) and
# test_k4.jsonl (the one-worker check). OUT receives what comes back: the tokenizer files, the
# training log, the golden logits, the model (model.safetensors in 15 MB parts, with KEEP_MODEL=1)
# and, with EVAL_SECONDS > 0, evaluation runs on the machine's CPU cores (tools/collab/eval.py).
set -euo pipefail
C=$1 OUT=$2 SESSIONS=$3 SECS=$4 TOK=${5:-}
M=models/packs-collab D=/tmp/collab-data
mkdir -p $D /tmp/collab-lib && tar xJf $C/lib.tar.xz -C /tmp/collab-lib
export LD_LIBRARY_PATH=/tmp/collab-lib/lib PYTHONUNBUFFERED=1
H=$C/hogwild
nvidia-smi --query-gpu=name,memory.used,memory.total --format=csv,noheader
python3 -c 'import torch, transformers, tokenizers; print("torch", torch.__version__, "transformers", transformers.__version__, "tokenizers", tokenizers.__version__)'
if [[ $TOK == tok ]]; then
  python3 tools/collab/train_tokenizer.py --corpus $C/corpus.jsonl --model $M --vocab-size 2048 \
    --golden-text $C/golden_text.jsonl --golden $OUT/tokenizer_golden.json
  cp $M/tokenizer.json $OUT/
fi
t0=$(date +%s)
$H collab traces -m $M --sessions "$SESSIONS" --seed 1 --threads "$(nproc)" --out $D/train
$H collab traces -m $M --split test --sessions 8 --seed 7 --threads 1 --out $D/golden
echo "traces: $(($(date +%s) - t0)) s"; du -sh $D
python3 tools/collab/train.py --data $D/train --model $M --out $D/model --seconds "$SECS" \
  --golden-data $D/golden --golden-out $D/golden_out --eval-problems $C/test_k4.jsonl \
  --eval-count "${EVAL_COUNT:-64}" --eval-max-new "${EVAL_MAX_NEW:-900}" --log $D/train_log.json \
  2>&1 | tee $D/train.txt || echo "TRAINING FAILED"
cp $D/model/config.json $D/model/generation_config.json $D/golden_out/* $D/ 2>/dev/null || true
(cd $D && tar czf $OUT/small.tgz $(ls config.json generation_config.json train_log.json train.txt \
  packs_collab.json packs_collab.logits.f32 2>/dev/null))
if [[ ${KEEP_MODEL:-0} == 1 && -f $D/model/model.safetensors ]]; then
  split -b 15M -d $D/model/model.safetensors $OUT/model.safetensors.part-
  sha256sum $D/model/model.safetensors
fi
if [[ ${EVAL_SECONDS:-0} -gt 0 && -f $D/model/model.safetensors ]]; then
  python3 tools/collab/eval.py run --hogwild $H --model $D/model --out $OUT/runs_device.jsonl \
    --configs "${EVAL_CONFIGS:-4:1:combined,4:2:combined,4:4:combined,4:8:combined,4:4:interleaved,4:4:contiguous}" \
    --problems 100 --seed 11 --jobs "$(nproc)" --deadline "$EVAL_SECONDS" || echo "EVAL FAILED"
fi
ls -la $OUT
