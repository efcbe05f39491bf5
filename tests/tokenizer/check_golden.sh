#!/usr/bin/env bash
# Regenerates tests/data/tokenizer/golden_*.json with the reference (HF tokenizers via node) into
# OUT and fails if they differ from the committed files. Exit 77 (skip) without node_modules.
set -euo pipefail
SRC=$1 OUT=$2
if [ ! -d "$SRC/tools/js/node_modules/@anush008/tokenizers" ]; then
  echo "skip: tools/js/node_modules missing (run scripts/setup.sh)"; exit 77
fi
rm -rf "$OUT" && mkdir -p "$OUT"
node "$SRC/tools/js/tokenizer_corpus.mjs" > "$OUT/corpus.json"
node "$SRC/tools/js/tokenizer_synthetic.mjs" "$OUT/synthetic" > /dev/null
node "$SRC/tools/js/tokenizer_golden.mjs" "$OUT"
status=0
for f in "$OUT"/*.json "$OUT"/synthetic/*.json; do
  rel=${f#"$OUT"/}
  if ! cmp -s "$f" "$SRC/tests/data/tokenizer/$rel"; then
    echo "DIFFERS: tests/data/tokenizer/$rel (regenerate: node tools/js/tokenizer_{corpus,synthetic,golden}.mjs)"
    status=1
  fi
done
[ $status = 0 ] && echo "golden files match the reference"
exit $status
