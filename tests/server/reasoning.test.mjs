// Reasoning output through the official openai SDK (docs/SERVER.md "Reasoning output"): the
// thinking in message.reasoning_content and delta.reasoning_content, the answer in content, for
// the deepseek_r1 parser (no start tag), the qwen3 parser (no thinking, thinking closed by the
// template, thinking opened by the template), include_reasoning false, and hogwild sessions (the
// workers' steps as reasoning, the answer as content). The expected split is computed here from
// the raw text, which /v1/completions returns unchanged for the same prompt and seed.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { requireSetup, requireJs, startServer, testModel, HOGWILD, WORK } from './harness.mjs';

requireSetup('openai');
const OpenAI = requireJs('openai').default ?? requireJs('openai');

const messages = [{ role: 'user', content: 'What is the sum of the primes below 10?' }];
const servers = {};

// A copy of the test model whose chat template opens <think> in its generation prompt (as
// Qwen3's thinking-only releases do).
function openingModel() {
  const dir = join(WORK, 'model-opening-think');
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  for (const f of readdirSync(testModel()))
    if (f !== 'tokenizer_config.json') symlinkSync(join(testModel(), f), join(dir, f));
  const cfg = JSON.parse(readFileSync(join(testModel(), 'tokenizer_config.json'), 'utf8'));
  const header = "'<|im_start|>assistant\\n'";
  const at = cfg.chat_template.lastIndexOf(header);
  assert.ok(at > 0, 'the template has a generation prompt');
  cfg.chat_template = cfg.chat_template.slice(0, at) + "'<|im_start|>assistant\\n<think>\\n'" +
    cfg.chat_template.slice(at + header.length);
  writeFileSync(join(dir, 'tokenizer_config.json'), JSON.stringify(cfg));
  return dir;
}

function client(s) {
  return new OpenAI({ baseURL: `${s.url}/v1`, apiKey: 'unused', maxRetries: 0 });
}

// The prompt the chat template renders (hogwild prompt), for /v1/completions.
function rendered(dir, kwargs = null) {
  const file = join(WORK, 'reasoning-messages.json');
  writeFileSync(file, JSON.stringify(messages));
  const args = ['prompt', '-m', dir, '--messages', file];
  if (kwargs) args.push('--template-kwargs', JSON.stringify(kwargs));
  return execFileSync(HOGWILD, args, { encoding: 'utf8' });
}

before(async () => {
  mkdirSync(WORK, { recursive: true });
  servers.auto = await startServer();
  servers.r1 = await startServer(['--reasoning-parser', 'deepseek_r1']);
  servers.opening = await startServer([], { model: openingModel() });
});
after(async () => {
  for (const s of Object.values(servers)) assert.equal((await s.stop()).code, 0);
});

const sampling = (seed) => ({ max_tokens: 40, seed, temperature: 1.5 });

// The raw text of a chat request: the completion of its rendered prompt with the same sampling.
async function raw(s, prompt, seed) {
  const r = await client(s).completions.create({ model: '', prompt, ...sampling(seed) });
  return r.choices[0].text;
}

// Texts apart by a blank line, unless one ends with it already (a finished step's separator).
function joinTexts(texts) {
  let out = '';
  for (const t of texts) out += (out && !out.endsWith('\n\n') ? '\n\n' : '') + t;
  return out;
}

// Non-streaming message and the streamed deltas joined, for the same request.
async function both(s, extra) {
  const c = client(s);
  const full = await c.chat.completions.create({ model: '', messages, ...extra });
  const stream = await c.chat.completions.create({ model: '', messages, ...extra, stream: true });
  let reasoning = '', content = '';
  for await (const ch of stream) {
    const d = ch.choices[0]?.delta ?? {};
    reasoning += d.reasoning_content ?? '';
    content += d.content ?? '';
  }
  return { message: full.choices[0].message, reasoning, content };
}

test('the parser is chosen from the chat template, or named', () => {
  assert.match(servers.auto.stderr, /reasoning parser qwen3/);
  assert.match(servers.r1.stderr, /reasoning parser deepseek_r1/);
  assert.match(servers.opening.stderr, /reasoning parser qwen3/);
});

test('deepseek_r1: everything before </think> is reasoning, the rest content, streamed or not', async () => {
  const prompt = rendered(testModel());
  let split = 0, unterminated = 0;
  for (let seed = 1; seed <= 40 && (split < 2 || unterminated < 1); seed++) {
    const text = await raw(servers.r1, prompt, seed);
    const body = text.replace(/^\s*<think>/, '');  // a start tag of its own is dropped
    const end = body.indexOf('</think>');
    if (end < 0 && unterminated >= 1) continue;
    const want = end < 0 ? { reasoning: body, content: null }
      : { reasoning: body.slice(0, end), content: body.slice(end + 8) || null };
    const got = await both(servers.r1, sampling(seed));
    assert.equal(got.message.reasoning_content, want.reasoning, `seed ${seed}: ${JSON.stringify(text)}`);
    assert.equal(got.message.content, want.content, `seed ${seed}: ${JSON.stringify(text)}`);
    assert.equal(got.reasoning, want.reasoning, `seed ${seed} streamed`);
    assert.equal(got.content, want.content ?? '', `seed ${seed} streamed`);
    if (end < 0) unterminated++; else split++;
  }
  assert.ok(split >= 2 && unterminated >= 1, `found ${split} texts with </think>, ${unterminated} without`);
});

test('qwen3: no <think> at the start is all content; a thinking closed by the template too', async () => {
  const prompt = rendered(testModel());
  let checked = 0;
  for (let seed = 1; seed <= 10; seed++) {
    const text = await raw(servers.auto, prompt, seed);
    if (/^\s*<think>/.test(text)) continue;
    const got = await both(servers.auto, sampling(seed));
    assert.equal(got.message.reasoning_content ?? null, null, `seed ${seed}`);
    assert.equal(got.message.content, text);
    assert.equal(got.content, text);
    assert.equal(got.reasoning, '');
    checked++;
  }
  assert.ok(checked >= 5);
  // enable_thinking false: the template writes <think>\n\n</think>\n\n, the output is content
  // (</think> in it included).
  const kw = { enable_thinking: false };
  const closed = rendered(testModel(), kw);
  assert.match(closed, /<\/think>\s*$/);
  for (let seed = 1; seed <= 3; seed++) {
    const text = await raw(servers.auto, closed, seed);
    const got = await both(servers.auto, { ...sampling(seed), chat_template_kwargs: kw });
    assert.equal(got.message.content, text);
    assert.equal(got.content, text);
    assert.equal(got.reasoning, '');
  }
});

test('qwen3 with a template that opens <think>: the output starts inside the thinking', async () => {
  const prompt = rendered(join(WORK, 'model-opening-think'));
  assert.match(prompt, /<think>\n$/);
  for (let seed = 1; seed <= 6; seed++) {
    const text = await raw(servers.opening, prompt, seed);
    const body = text.replace(/^\s*<think>/, '');
    const end = body.indexOf('</think>');
    const reasoning = end < 0 ? body : body.slice(0, end);
    const content = end < 0 ? '' : body.slice(end + 8);
    const got = await both(servers.opening, sampling(seed));
    assert.equal(got.message.reasoning_content, reasoning, `seed ${seed}`);
    assert.equal(got.message.content, content || null, `seed ${seed}`);
    assert.equal(got.reasoning, reasoning);
    assert.equal(got.content, content);
    // include_reasoning false: the same content, no reasoning
    const off = await both(servers.opening, { ...sampling(seed), include_reasoning: false });
    assert.equal(off.message.reasoning_content, null);
    assert.equal(off.message.content, content || null);
    assert.equal(off.reasoning, '');
  }
});

test('hogwild: the finished steps then the unfinished ones are the reasoning, the answer the content', async () => {
  const c = client(servers.auto);
  const args = { model: '', messages, seed: 3, temperature: 1.0, hogwild: { workers: 3, budget: 60 } };
  const full = await c.chat.completions.create(args);
  const stream = await c.chat.completions.create({ ...args, stream: true });
  const ends = [], deltas = [];
  let content = '';
  for await (const ch of stream) {
    if (ch.hogwild?.event === 'step_end') ends.push(ch.hogwild.text);
    const d = ch.choices[0]?.delta ?? {};
    if (d.reasoning_content) deltas.push(d.reasoning_content);
    content += d.content ?? '';
  }
  assert.ok(ends.length > 0, 'some steps finished');
  assert.deepEqual(deltas.slice(0, ends.length), ends, 'each finished step, in finishing order');
  const unfinished = full.hogwild.choices[0].workers
    .map((w) => w.steps.filter((s) => !s.finished).map((s) => s.text))
    .flat()
    .filter((t) => !/^\*\*\w+ \[\d+\]:\*\* $/.test(t));  // openings with nothing written
  assert.ok(unfinished.length > 0);
  assert.deepEqual(deltas.slice(ends.length), [joinTexts(unfinished)]);
  assert.equal(full.choices[0].message.reasoning_content, deltas.join(''));
  const answer = full.hogwild.choices[0].answer;
  assert.equal(full.choices[0].message.content, answer === '' ? null : answer);
  assert.equal(content, answer);
});
