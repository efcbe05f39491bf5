#!/usr/bin/env bash
# The default job: two workers solve a GSM8k-style problem with a generated Qwen3-architecture
# model (random weights) and the real Qwen3 tokenizer.
set -euo pipefail
cd "$(dirname "$0")/.."
echo "demo: not ready yet"
