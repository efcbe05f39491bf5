#!/usr/bin/env python3
"""Trains the byte-level BPE tokenizer of the packs-collab model (tools/collab/README.md).

    python3 tools/collab/train_tokenizer.py --corpus corpus.jsonl --model models/packs-collab \
        --vocab-size 2048 --golden-text golden_text.jsonl --golden tests/data/collab/tokenizer_golden.json

corpus.jsonl: {"text": ...} per line (`hogwild collab traces --bytes --text`: views of scripted
sessions rendered byte by byte, before any tokenizer exists). The pre-tokenizer is Qwen2's (the
same Split regex, then ByteLevel): every digit is its own piece, so numbers are written one token
per digit. Special tokens take ids 0..3. Writes MODEL/tokenizer.json; MODEL/tokenizer_config.json
(chat template, eos) is written by hand and only checked here. The golden file holds the ids that
this `tokenizers` version gives for held-out texts (tests/collab compares ours to them).
"""
import argparse
import json
import os
import platform

import tokenizers
from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers, trainers

# Qwen2's pre-tokenizer regex (tokenizer.json of Qwen2/Qwen3): contractions, letters with one
# leading non-letter, single digits, punctuation runs, newlines, spaces.
PATTERN = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}"
           r"| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")
SPECIAL = ["<|endoftext|>", "<|user|>", "<|assistant|>", "<|end|>"]


def read_texts(path):
    with open(path) as f:
        return [json.loads(line)["text"] for line in f if line.strip()]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--corpus", required=True)
    ap.add_argument("--model", required=True, help="model directory (tokenizer_config.json there)")
    ap.add_argument("--vocab-size", type=int, default=2048)
    ap.add_argument("--golden-text", help="held-out texts (JSONL) for the golden ids")
    ap.add_argument("--golden", help="output: golden ids JSON")
    args = ap.parse_args()

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(PATTERN), behavior="isolated", invert=False),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
    ])
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=args.vocab_size, min_frequency=2,
                                  special_tokens=SPECIAL, show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    texts = read_texts(args.corpus)
    tok.train_from_iterator(texts, trainer, length=len(texts))
    out = os.path.join(args.model, "tokenizer.json")
    tok.save(out)
    print(f"trained on {len(texts)} texts ({sum(map(len, texts))} bytes): vocab {tok.get_vocab_size()}"
          f" -> {out}")

    # Checks through transformers: the directory loads and the chat template renders.
    import transformers
    try:
        from transformers import AutoTokenizer
        hf = AutoTokenizer.from_pretrained(args.model)
        msgs = [{"role": "user", "content": "Part 1: Mia has 23 pens.\nWhat is the sum?"}]
        rendered = hf.apply_chat_template(msgs, tokenize=False, add_generation_prompt=True)
        want = "<|user|>\nPart 1: Mia has 23 pens.\nWhat is the sum?<|end|>\n<|assistant|>\n"
        print("transformers chat template:", "OK" if rendered == want else f"DIFFERS {rendered!r}")
        ids = hf(want, add_special_tokens=True)["input_ids"]
        print("transformers ids == tokenizers ids:", ids == tok.encode(want).ids)
    except Exception as e:  # reported, not fatal: the golden ids come from `tokenizers` itself
        print(f"transformers check FAILED: {type(e).__name__}: {e}")
    for w in [" All", " Nothing", " I", " Part", " take", " part", " Alice", " Heidi", ".\n\n", " Left",
              " Sum", " none", " twice",
              " yes", " no"]:
        print(f"{w!r}: {tok.encode(w).tokens}")
    sample = texts[0][-400:]
    enc = tok.encode(sample)
    assert tok.decode(enc.ids, skip_special_tokens=False) == sample
    print(f"sample: {len(sample)} bytes -> {len(enc.ids)} tokens")

    if args.golden_text and args.golden:
        cases = []
        extra = ["", " ", "12345 + 678 = 13023.", "\\boxed{4521}", "Ünïcödé ✓ 日本 🙂",
                 "<|user|>\nhi<|end|>\n<|assistant|>\n", "tabs\tand\r\nnewlines\n\n\n",
                 "Alice: Is someone else doing my part? (yes/no): no. I take part 3.\n\n"]
        for text in extra + read_texts(args.golden_text):
            cases.append({"text": text, "ids": tok.encode(text).ids})
        meta = {"generator": "tools/collab/train_tokenizer.py",
                "versions": {"tokenizers": tokenizers.__version__,
                             "transformers": transformers.__version__,
                             "python": platform.python_version()},
                "cases": cases}
        os.makedirs(os.path.dirname(args.golden) or ".", exist_ok=True)
        with open(args.golden, "w") as f:
            json.dump(meta, f, ensure_ascii=False)
        print(f"golden: {len(cases)} cases -> {args.golden}")


if __name__ == "__main__":
    main()
