// `hogwild serve` through real clients: the official openai SDK (chat and completions, streaming
// and not), plain HTTP for the error cases, concurrency, disconnects, live steering and SIGTERM.
// Runs with node's test runner against servers it starts on loopback (harness.mjs).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { requireSetup, requireJs, startServer, post, readSse, metric, metricSum, testModel, HOGWILD, WORK } from './harness.mjs';

requireSetup('openai');
const OpenAI = requireJs('openai').default ?? requireJs('openai');

let server, client, model;
const problem = [{ role: 'user', content: 'What is the sum of the primes below 10?' }];

before(async () => {
  server = await startServer();
  client = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: 'unused', maxRetries: 0 });
  model = (await client.models.list()).data[0].id;
});
after(async () => {
  const { code } = await server.stop();
  assert.equal(code, 0, 'SIGTERM exits 0');
});

async function healthy() {
  const res = await fetch(`${server.url}/health`);
  assert.equal(res.status, 200);
  assert.equal((await res.json()).status, 'ok');
}

async function metrics() {
  return (await fetch(`${server.url}/metrics`)).text();
}

test('/v1/models and /health', async () => {
  const models = await client.models.list();
  assert.equal(models.data.length, 1);
  assert.equal(models.data[0].object, 'model');
  assert.equal(model, 'steps-model');
  assert.equal((await client.models.retrieve(model)).id, model);
  await healthy();
  const m = await metrics();
  assert.equal(metric(m, 'hogwild_model_loaded'), 1);
});

test('chat: stream == non-stream for the same seed, and the stream is well formed', async () => {
  // (This seed's run draws the end-of-turn token as its 24th: 20 tokens end by length.)
  const args = { model, messages: problem, max_tokens: 20, seed: 11, temperature: 0.9, top_p: 0.95 };
  const full = await client.chat.completions.create(args);
  assert.equal(full.object, 'chat.completion');
  assert.equal(full.choices.length, 1);
  assert.equal(full.choices[0].message.role, 'assistant');
  assert.equal(full.choices[0].finish_reason, 'length');
  assert.equal(full.usage.completion_tokens, 20);
  assert.ok(full.usage.prompt_tokens > 0);
  assert.equal(full.usage.total_tokens, full.usage.prompt_tokens + 20);

  const stream = await client.chat.completions.create({ ...args, stream: true, stream_options: { include_usage: true } });
  const chunks = [];
  for await (const c of stream) chunks.push(c);
  assert.equal(chunks[0].choices[0].delta.role, 'assistant', 'first delta carries the role');
  const text = chunks.map((c) => c.choices[0]?.delta?.content ?? '').join('');
  assert.equal(text, full.choices[0].message.content);
  const finals = chunks.filter((c) => c.choices[0]?.finish_reason);
  assert.equal(finals.length, 1);
  assert.equal(finals[0].choices[0].finish_reason, 'length');
  const last = chunks.at(-1);
  assert.deepEqual(last.choices, []);
  assert.deepEqual(last.usage, full.usage);
  for (const c of chunks.slice(0, -1)) assert.equal(c.usage, null);
  assert.ok(chunks.every((c) => c.id === chunks[0].id));
  // Same seed again: same text.
  const again = await client.chat.completions.create(args);
  assert.equal(again.choices[0].message.content, full.choices[0].message.content);
  // The raw stream is valid UTF-8 although the byte-level tokens split characters (a strict
  // decoder throws on any broken sequence), and its deltas rebuild the same text.
  const raw = await fetch(`${server.url}/v1/chat/completions`, {
    method: 'POST', headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ ...args, max_tokens: 200, stream: true }),
  });
  const bytes = new Uint8Array(await raw.arrayBuffer());
  const body = new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  const deltas = body.split('\n\n').filter((l) => l.startsWith('data: {'))
    .map((l) => JSON.parse(l.slice(6)).choices[0]?.delta?.content ?? '').join('');
  const long = await client.chat.completions.create({ ...args, max_tokens: 200 });
  assert.equal(deltas, long.choices[0].message.content);
  assert.ok([...deltas].length > 20);
  await healthy();
});

test('completions: stream == non-stream, n choices, greedy', async () => {
  const args = { model, prompt: 'Once upon a time', max_tokens: 16, seed: 5, temperature: 0.7 };
  const full = await client.completions.create(args);
  assert.equal(full.object, 'text_completion');
  assert.equal(full.usage.completion_tokens, 16);
  const stream = await client.completions.create({ ...args, stream: true });
  let text = '';
  let finish = null;
  for await (const c of stream) {
    text += c.choices[0]?.text ?? '';
    finish = c.choices[0]?.finish_reason ?? finish;
  }
  assert.equal(text, full.choices[0].text);
  assert.equal(finish, 'length');
  const two = await client.completions.create({ ...args, n: 2 });
  assert.deepEqual(two.choices.map((c) => c.index), [0, 1]);
  assert.equal(two.choices[0].text, full.choices[0].text, 'choice 0 uses the request seed');
  // (choice 1 may stop early on the end-of-turn token)
  assert.ok(two.usage.completion_tokens >= 17 && two.usage.completion_tokens <= 32);
  const g1 = await client.completions.create({ model, prompt: 'abc', max_tokens: 8, temperature: 0 });
  const g2 = await client.completions.create({ model, prompt: 'abc', max_tokens: 8, temperature: 0, seed: 99 });
  assert.equal(g1.choices[0].text, g2.choices[0].text, 'temperature 0 is greedy: the seed does not matter');
  await healthy();
});

test('stop strings cut the text before them, streaming or not', async () => {
  const args = { model, prompt: 'The answer is', max_tokens: 40, seed: 21, temperature: 1.0 };
  const free = (await client.completions.create(args)).choices[0].text;
  const chars = [...free];
  assert.ok(chars.length >= 8, `need some text, got ${JSON.stringify(free)}`);
  const stop = chars.slice(5, 7).join('');
  const expected = free.slice(0, free.indexOf(stop));
  const cut = await client.completions.create({ ...args, stop: [stop, 'never-appears'] });
  assert.equal(cut.choices[0].text, expected);
  assert.equal(cut.choices[0].finish_reason, 'stop');
  assert.ok(cut.usage.completion_tokens < 40);
  let text = '';
  for await (const c of await client.completions.create({ ...args, stop, stream: true }))
    text += c.choices[0]?.text ?? '';
  assert.equal(text, expected);
  await healthy();
});

test('hogwild: per-worker events in the stream, transcript when not streaming, same seed same run', async () => {
  const args = {
    model, messages: problem, seed: 3, temperature: 1.0,
    hogwild: { workers: 3, layout: 'combined', budget: 150 },
  };
  const full = await client.chat.completions.create(args);
  const hw = full.hogwild;
  assert.equal(hw.session_id, full.id);
  assert.deepEqual(hw.options, { workers: 3, layout: 'combined', budget: 150, collab_every: 1024, format: 'qwen3-math' });
  const ch = hw.choices[0];
  assert.deepEqual(ch.workers.map((w) => w.name), ['Alice', 'Bob', 'Carol']);
  assert.equal(ch.stats.serial_steps, 150);
  assert.equal(ch.stop_reason, 'budget');
  assert.equal(ch.stats.tokens_per_worker.length, 3);
  assert.equal(full.usage.completion_tokens, ch.stats.total_tokens);
  const finished = ch.workers.flatMap((w) => w.steps.filter((s) => s.finished));
  assert.ok(finished.length > 0, 'some steps finished');
  for (const w of ch.workers) w.steps.forEach((s, i) => assert.equal(s.step, i + 1));
  for (const s of finished) assert.match(s.text, /\n\n$/);

  const stream = await client.chat.completions.create({ ...args, stream: true });
  const events = [];
  const content = [];
  for await (const c of stream) {
    if (c.hogwild) events.push(c.hogwild);
    else content.push(c);
  }
  assert.equal(events[0].event, 'session');
  assert.deepEqual(events[0].workers, ['Alice', 'Bob', 'Carol']);
  assert.equal(events.at(-1).event, 'stats');
  assert.deepEqual(events.at(-1).stats.tokens_per_worker, ch.stats.tokens_per_worker);
  // The per-worker token texts rebuild each worker's steps exactly as the transcript has them.
  for (let w = 0; w < 3; w++) {
    const mine = events.filter((e) => e.worker === w);
    const ends = mine.filter((e) => e.event === 'step_end').map((e) => e.text);
    assert.deepEqual(ends, ch.workers[w].steps.filter((s) => s.finished).map((s) => s.text));
    let rebuilt = '';
    for (const e of mine) if (e.event === 'step_start' || e.event === 'token') rebuilt += e.text;
    assert.equal(rebuilt, ch.workers[w].steps.map((s) => s.text).join(''));
    for (const e of mine.filter((x) => x.event === 'token')) {
      assert.equal(e.name, ['Alice', 'Bob', 'Carol'][w]);
      assert.ok(e.serial_step >= 0 && e.serial_step <= 150 && e.step >= 1);
    }
  }
  assert.equal(content.at(-1).choices[0].finish_reason, full.choices[0].finish_reason);
  await healthy();
});

test('>= 32 concurrent requests, hogwild and plain, all answered; same seed same output under load', async () => {
  const plain = (i) => ({ model, messages: [{ role: 'user', content: `hi ${i}` }], max_tokens: 6, seed: i, temperature: 1.0 });
  const hog = (i) => ({ model, messages: problem, seed: i, hogwild: { workers: 2, budget: 6 } });
  const alone = await post(`${server.url}/v1/chat/completions`, plain(7));
  const reqs = [];
  for (let i = 0; i < 36; i++) reqs.push(post(`${server.url}/v1/chat/completions`, i % 6 === 0 ? hog(i) : plain(i)));
  const res = await Promise.all(reqs);
  const ids = new Set();
  res.forEach((r, i) => {
    assert.equal(r.status, 200, r.text);
    ids.add(r.json.id);
    if (i % 6 === 0) assert.equal(r.json.hogwild.choices[0].stats.serial_steps, 6);
    else assert.equal(r.json.usage.completion_tokens, 6);
  });
  assert.equal(ids.size, 36);
  assert.equal(res[7].json.choices[0].message.content, alone.json.choices[0].message.content);
  const m = await metrics();
  assert.equal(metric(m, 'hogwild_requests_running'), 0);
  assert.equal(metric(m, 'hogwild_requests_queued'), 0);
  assert.equal(metric(m, 'hogwild_kv_cache_blocks'), 0);
  assert.equal(metric(m, 'hogwild_sessions_active'), 0);
  assert.equal(metricSum(m, 'hogwild_generated_tokens_total') > 0, true);
  await healthy();
});

async function waitCancelled(before, ms) {
  const t0 = Date.now();
  for (;;) {
    const m = await metrics();
    const done = metric(m, 'hogwild_requests_total{method="hogwild",outcome="cancelled"}') > before
      && metric(m, 'hogwild_requests_running') === 0 && metric(m, 'hogwild_requests_queued') === 0;
    if (done) return Date.now() - t0;
    if (Date.now() - t0 > ms) assert.fail(`request not freed within ${ms} ms:\n${m}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

test('a client disconnect frees its request within a second (streaming and not)', async () => {
  // A run that only a cancel ends (no end-of-turn token during collaboration, a huge budget).
  // The client leaves once the workers decode (a prefill chunk of the long collaboration prompt
  // is one forward of a few hundred ms on this CPU; a cancel acts between forwards).
  const long = { model, messages: problem, seed: 1, temperature: 1.0, hogwild: { workers: 2, budget: 1000000 } };
  let before = metric(await metrics(), 'hogwild_requests_total{method="hogwild",outcome="cancelled"}');
  const ac = new AbortController();
  const res = await fetch(`${server.url}/v1/chat/completions`, {
    method: 'POST', headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ ...long, stream: true }), signal: ac.signal,
  });
  await readSse(res, (ev) => { if (ev.hogwild?.event === 'token') ac.abort(); }).catch((e) => {
    if (e.name !== 'AbortError') throw e;
  });
  await waitCancelled(before, 1000);
  before += 1;
  const tokens = metric(await metrics(), 'hogwild_generated_tokens_total{method="hogwild"}');
  const ac2 = new AbortController();
  const pending = fetch(`${server.url}/v1/chat/completions`, {
    method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(long), signal: ac2.signal,
  }).catch((e) => e);
  for (;;) {  // wait until its workers decode
    if (metric(await metrics(), 'hogwild_generated_tokens_total{method="hogwild"}') > tokens) break;
    await new Promise((r) => setTimeout(r, 10));
  }
  ac2.abort();
  assert.equal((await pending).name, 'AbortError');
  await waitCancelled(before, 1000);
  await healthy();
});

test('live steering: a note goes into the shared history between serial steps and shows in the stream', async () => {
  const res = await fetch(`${server.url}/v1/chat/completions`, {
    method: 'POST', headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ model, messages: problem, stream: true, seed: 2, hogwild: { workers: 2, budget: 400 } }),
  });
  let sent = null;
  const events = await readSse(res, async (ev) => {
    if (sent || !ev.hogwild || ev.hogwild.event !== 'token' || ev.hogwild.serial_step < 3) return;
    sent = await post(`${server.url}/v1/hogwild/sessions/${ev.id}/messages`, { role: 'user', content: 'Check n = 2 first.' });
    assert.equal(sent.status, 200, sent.text);
  });
  assert.equal(sent.status, 200, sent.text);
  assert.equal(sent.json.status, 'queued');
  const notes = events.filter((e) => e.hogwild?.event === 'note').map((e) => e.hogwild);
  assert.equal(notes.length, 1);
  assert.equal(notes[0].author, 'User');
  assert.equal(notes[0].text, '**Note from User:** Check n = 2 first.\n\n');
  assert.ok(notes[0].serial_step > 3);
  // The note comes between serial steps: tokens before it in the stream are from earlier
  // forwards, tokens after it from its forward or later.
  const at = events.findIndex((e) => e.hogwild?.event === 'note');
  for (const e of events.slice(0, at)) if (e.hogwild?.event === 'token') assert.ok(e.hogwild.serial_step <= notes[0].serial_step);
  for (const e of events.slice(at + 1)) if (e.hogwild?.event === 'token') assert.ok(e.hogwild.serial_step >= notes[0].serial_step);
  assert.equal(events.at(-1), '[DONE]');
  // Steering what is not a running hogwild session: one that ended is 409, an unknown id 404.
  const gone = await post(`${server.url}/v1/hogwild/sessions/${events[0].id}/messages`, { content: 'late' });
  assert.equal(gone.status, 409);
  assert.equal(gone.json.error.code, 'session_ended');
  const unknown = await post(`${server.url}/v1/hogwild/sessions/chatcmpl-0/messages`, { content: 'x' });
  assert.equal(unknown.status, 404);
  assert.equal(unknown.json.error.code, 'session_not_found');
  const plain = await fetch(`${server.url}/v1/chat/completions`, {
    method: 'POST', headers: { 'Content-Type': 'application/json' },
    // n = 8 sessions one after the other: alive long after a few events, whatever the tokens.
    body: JSON.stringify({ model, messages: problem, stream: true, max_tokens: 2000, n: 8 }),
  });
  let conflict = null;
  await readSse(plain, async (ev, all) => {
    if (conflict || all.length < 3) return;
    conflict = await post(`${server.url}/v1/hogwild/sessions/${ev.id}/messages`, { content: 'x' });
    await plain.body.cancel().catch(() => {});
  }).catch(() => {});
  assert.equal(conflict.status, 409);
  assert.equal(conflict.json.error.code, 'not_hogwild');
  const bad = await post(`${server.url}/v1/hogwild/sessions/x/messages`, { content: '' });
  assert.equal(bad.status, 400);
  await healthy();
});

// (body, status, error type, param) — plain HTTP, every kind of client mistake.
test('every bad request is a 4xx with an OpenAI-shaped error; /health stays 200', async () => {
  const chat = `${server.url}/v1/chat/completions`;
  const ok = { model, messages: problem };
  const cases = [
    ['{"messages": [', 400, 'invalid_request_error', null],
    ['[1, 2]', 400, 'invalid_request_error', null],
    ['"hello"', 400, 'invalid_request_error', null],
    [new Uint8Array([0x7b, 0x22, 0x6d, 0xff, 0x22, 0x3a, 0x31, 0x7d]), 400, 'invalid_request_error', null],
    [{ ...ok, model: 'gpt-4o' }, 404, 'not_found_error', 'model'],
    [{ model }, 400, 'invalid_request_error', 'messages'],
    [{ ...ok, messages: 'hi' }, 400, 'invalid_request_error', 'messages'],
    [{ ...ok, max_tokens: '5' }, 400, 'invalid_request_error', 'max_tokens'],
    [{ ...ok, max_tokens: 0 }, 400, 'invalid_request_error', 'max_tokens'],
    [{ ...ok, temperature: 3 }, 400, 'invalid_request_error', 'temperature'],
    [{ ...ok, temperature: 'warm' }, 400, 'invalid_request_error', 'temperature'],
    [{ ...ok, top_p: 0 }, 400, 'invalid_request_error', 'top_p'],
    [{ ...ok, top_p: 1.5 }, 400, 'invalid_request_error', 'top_p'],
    [{ ...ok, n: 0 }, 400, 'invalid_request_error', 'n'],
    [{ ...ok, n: 100 }, 400, 'invalid_request_error', 'n'],
    [{ ...ok, stop: '' }, 400, 'invalid_request_error', 'stop'],
    [{ ...ok, stop: ['ok', ''] }, 400, 'invalid_request_error', 'stop'],
    [{ ...ok, stream: 1 }, 400, 'invalid_request_error', 'stream'],
    [{ ...ok, hogwild: { workers: 0 } }, 400, 'invalid_request_error', 'hogwild.workers'],
    [{ ...ok, hogwild: { workers: 9 } }, 400, 'invalid_request_error', 'hogwild.workers'],
    [{ ...ok, hogwild: { budget: -5 } }, 400, 'invalid_request_error', 'hogwild.budget'],
    [{ ...ok, hogwild: { layout: 'spiral' } }, 400, 'invalid_request_error', 'hogwild.layout'],
    [{ ...ok, tools: [{ type: 'function', function: { name: 'f' } }] }, 400, 'invalid_request_error', 'tools'],
    [{ ...ok, messages: [{ role: 'user', content: 'x'.repeat(5000) }] }, 400, 'invalid_request_error', 'messages'],
  ];
  for (const [body, status, type, param] of cases) {
    const r = await post(chat, body);
    const what = typeof body === 'string' ? body : JSON.stringify(body).slice(0, 80);
    assert.equal(r.status, status, `${what}: ${r.text}`);
    assert.equal(r.json.error.type, type, what);
    assert.equal(r.json.error.param, param, what);
    assert.ok(r.json.error.message.length > 0);
    await healthy();
  }
  // The context error gives the token counts.
  const long = await post(chat, { ...ok, messages: [{ role: 'user', content: 'x'.repeat(5000) }] });
  assert.equal(long.json.error.code, 'context_length_exceeded');
  assert.match(long.json.error.message, /maximum context length is 4096 tokens\. However, you requested \d+ tokens \(\d+ in the messages, 1 in the completion\)/);
  const over = await post(`${server.url}/v1/completions`, { model, prompt: 'hi', max_tokens: 5000 });
  assert.equal(over.status, 400);
  assert.match(over.json.error.message, /\(\d+ in the prompt, 5000 in the completion\)/);
  // Oversized body: 413.
  const big = await post(chat, JSON.stringify({ ...ok, pad: 'x'.repeat(5 << 20) }));
  assert.equal(big.status, 413);
  assert.equal(big.json.error.code, 'request_too_large');
  // A JSON body of 20 KB sent as a form (curl -d's default Content-Type) meets cpp-httplib's 8 KiB
  // cap on forms: the error says which Content-Type to send.
  const form = await fetch(chat, {
    method: 'POST',
    headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
    body: JSON.stringify({ ...ok, pad: 'x'.repeat(20000) }),
  });
  assert.equal(form.status, 413);
  const formErr = (await form.json()).error;
  assert.equal(formErr.code, 'request_too_large');
  assert.match(formErr.message, /Content-Type: application\/json/);
  // Unknown route, wrong method.
  const nf = await fetch(`${server.url}/v1/nothing`);
  assert.equal(nf.status, 404);
  assert.equal((await nf.json()).error.type, 'not_found_error');
  // The SDK surfaces these as its own error classes.
  await assert.rejects(client.chat.completions.create({ ...ok, temperature: 9 }), (e) => e.status === 400 && e.param === 'temperature');
  await assert.rejects(client.chat.completions.create({ ...ok, model: 'nope' }), (e) => e.status === 404);
  await healthy();
});

test('API key: 401 without it or with a wrong one; the page and /health stay open', async () => {
  const s = await startServer(['--api-key', 'sekret']);
  try {
    const chat = `${s.url}/v1/chat/completions`;
    const none = await post(chat, { model, messages: problem, max_tokens: 2 });
    assert.equal(none.status, 401);
    assert.equal(none.json.error.type, 'authentication_error');
    const wrong = await post(chat, { model, messages: problem, max_tokens: 2 }, { Authorization: 'Bearer nope' });
    assert.equal(wrong.status, 401);
    const good = await post(chat, { model, messages: problem, max_tokens: 2 }, { Authorization: 'Bearer sekret' });
    assert.equal(good.status, 200);
    assert.equal((await fetch(`${s.url}/metrics`)).status, 401);
    assert.equal((await fetch(`${s.url}/health`)).status, 200);
    assert.equal((await fetch(`${s.url}/`)).status, 200);
    const sdk = new OpenAI({ baseURL: `${s.url}/v1`, apiKey: 'sekret', maxRetries: 0 });
    assert.equal((await sdk.chat.completions.create({ model, messages: problem, max_tokens: 3 })).usage.completion_tokens, 3);
  } finally {
    assert.equal((await s.stop()).code, 0);
  }
});

test('a full queue answers 429 with Retry-After; SIGTERM drains the running request and exits 0', async () => {
  const s = await startServer(['--max-queue', '0', '--max-sessions', '1']);
  // Runs ~2 s (the prefill of the collaboration prompt, then 1500 serial steps).
  const body = { model, messages: problem, stream: true, seed: 4, hogwild: { workers: 1, budget: 1500 } };
  const first = await fetch(`${s.url}/v1/chat/completions`, {
    method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(body),
  });
  const events = readSse(first);
  const busy = await post(`${s.url}/v1/chat/completions`, { model, messages: problem, max_tokens: 2 });
  assert.equal(busy.status, 429);
  assert.equal(busy.headers.get('retry-after'), '1');
  assert.equal(busy.json.error.type, 'rate_limit_error');
  const stopped = s.stop();  // SIGTERM
  const done = await events;
  assert.equal(done.at(-1), '[DONE]', 'the running request finished');
  const usage = done.filter((e) => e.choices?.[0]?.finish_reason);
  assert.equal(usage[0].choices[0].finish_reason, 'length');
  const { code } = await stopped;
  assert.equal(code, 0);
  assert.match(s.stderr, /draining/);
});

test('while the model loads: /health and the API answer 503 with Retry-After, then 200', async () => {
  // A copy of the model whose generation_config.json (read once, during loading) is a FIFO:
  // loading blocks on it until the test writes it.
  const model = testModel();
  const dir = join(WORK, 'fifo-model');
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir);
  for (const f of readdirSync(model))
    if (f !== 'generation_config.json') symlinkSync(join(model, f), join(dir, f));
  const fifo = join(dir, 'generation_config.json');
  execFileSync('mkfifo', [fifo]);
  const gen = readFileSync(join(model, 'generation_config.json'));
  const s = await startServer([], { wait: false, model: dir });
  let fed = false;
  const feed = async () => {  // one writer, so the reader sees the file exactly once
    if (!fed && s.proc.exitCode === null) await writeFile(fifo, gen);
    fed = true;
  };
  try {
    const health = await fetch(`${s.url}/health`);
    assert.equal(health.status, 503);
    assert.deepEqual(await health.json(), { status: 'loading' });
    assert.equal(health.headers.get('retry-after'), '5');
    const chat = await post(`${s.url}/v1/chat/completions`, { messages: problem });
    assert.equal(chat.status, 503);
    assert.equal(chat.json.error.code, 'model_loading');
    assert.equal((await fetch(`${s.url}/v1/models`)).status, 503);
    await feed();
    let ready = false;
    for (let i = 0; i < 400 && !ready; i++) {
      ready = (await fetch(`${s.url}/health`)).status === 200;
      if (!ready) await new Promise((r) => setTimeout(r, 25));
    }
    assert.ok(ready, `the server did not become ready: ${s.stderr}`);
    const r = await post(`${s.url}/v1/completions`, { prompt: 'hi', max_tokens: 2 });
    assert.equal(r.status, 200);
  } finally {
    await feed();  // a server still loading would wait for it
    assert.equal((await s.stop()).code, 0);
  }
});

test('SIGTERM while the model loads stops the server with exit 0', async () => {
  const dir = join(WORK, 'fifo-model');  // made by the test above; its loading blocks for good
  const s = await startServer([], { wait: false, model: dir });
  assert.equal((await fetch(`${s.url}/health`)).status, 503);
  const { code } = await s.stop();
  assert.equal(code, 0);
  assert.match(s.stderr, /SIGTERM while the model was loading: stopped/);
});

test('hogwild serve stops on bad arguments with a message, before loading anything', () => {
  const cases = [
    [['-m', '/nonexistent/model'], "model directory '/nonexistent/model' does not exist"],
    [['-m', testModel(), '--port', '70000'], '--port 70000: give 0..65535'],
    [['-m', testModel(), '--api-key-file', '/nonexistent/key'], "--api-key-file: cannot read '/nonexistent/key'"],
    [['-m', testModel(), '--format', 'no-such'], "cannot read formatting file 'no-such'"],
    [['-m', testModel(), '--max-sessions', '0'], '--max-sessions must be 1..4096, got 0'],
    // Counts that would start a thread or hold a queue slot each are bounded.
    [['-m', testModel(), '--max-sessions', '100000'], '--max-sessions must be 1..4096, got 100000'],
    [['-m', testModel(), '--max-queue', '1000000000'], '--max-queue must be 0..100000 requests'],
    [['-m', testModel(), '--threads', '100000'], '--threads must be 0..4096'],
    [['-m', testModel(), '--threads', '-1'], '--threads must be 0..4096'],
    [['-m', testModel(), '--max-connections', '-1'], '--max-connections must be 0..1000000'],
    [['-m', testModel(), '--reasoning-parser', 'deepseek-r1'], "--reasoning-parser: unknown reasoning parser 'deepseek-r1'; use qwen3, deepseek_r1 or none"],
  ];
  for (const [args, message] of cases) {
    const r = spawnSync(HOGWILD, ['serve', ...args], { encoding: 'utf8', timeout: 30000 });
    assert.equal(r.status, 1, `${args.join(' ')}: ${r.stderr}`);
    assert.ok(r.stderr.includes(message), `${args.join(' ')}: ${r.stderr}`);
  }
});

// A formatting file: `serve --format FILE` takes it (only built-in names were accepted), and a model
// directory's own hogwild_format.json is the default without --format, as for run and eval.
test('hogwild serve takes a formatting file, and a model directory\'s hogwild_format.json by default', async () => {
  mkdirSync(WORK, { recursive: true });
  const own = JSON.stringify({ base: 'qwen3-math', worker_names: ['Ann', 'Ben', 'Cy'] });
  const file = join(WORK, 'own_format.json');
  await writeFile(file, own);
  const dir = join(WORK, 'model-with-format');
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  for (const f of readdirSync(testModel())) symlinkSync(join(testModel(), f), join(dir, f));
  await writeFile(join(dir, 'hogwild_format.json'), own);
  const body = { messages: problem, seed: 1, hogwild: { workers: 3, budget: 4 } };
  for (const [args, model] of [[['--format', file], null], [[], dir]]) {
    const s = await startServer(args, { model });
    try {
      const r = await post(`${s.url}/v1/chat/completions`, body);
      assert.equal(r.status, 200, JSON.stringify(r.json));
      assert.deepEqual(r.json.hogwild.choices[0].workers.map((w) => w.name), ['Ann', 'Ben', 'Cy']);
    } finally {
      await s.stop();
    }
  }
});

// `stop` on a hogwild request cuts the content, not the answer in `hogwild` (docs/SERVER.md
// "Requests"). A formatting whose step prefix holds \boxed{17 apples} makes every finished step's
// answer "17 apples", so the first step to finish ends the session with it.
test('stop on a hogwild request cuts the content, not hogwild.choices[i].answer, streaming or not', async () => {
  mkdirSync(WORK, { recursive: true });
  const file = join(WORK, 'answer_in_prefix_format.json');
  await writeFile(file, JSON.stringify({ base: 'qwen3-math', step_prefix: '**{name} [{step}]:** \\boxed{17 apples} ' }));
  const s = await startServer(['--format', file]);
  try {
    const c = new OpenAI({ baseURL: `${s.url}/v1`, apiKey: 'unused', maxRetries: 0 });
    const args = { model: '', messages: problem, seed: 1, temperature: 1.0, stop: [' apples'], hogwild: { workers: 2, budget: 150 } };
    const full = await c.chat.completions.create(args);
    const ch = full.hogwild.choices[0];
    assert.equal(ch.stop_reason, 'answer');
    assert.equal(ch.answer, '17 apples');
    assert.equal(full.choices[0].message.content, '17');
    assert.equal(full.choices[0].finish_reason, 'stop');
    const answered = ch.workers.flatMap((w) => w.steps.filter((st) => st.answer !== undefined));
    assert.ok(answered.length > 0 && answered.every((st) => st.answer === '17 apples' && st.text.includes('\\boxed{17 apples}')));
    let content = '', stats = null;
    for await (const chunk of await c.chat.completions.create({ ...args, stream: true })) {
      if (chunk.hogwild?.event === 'stats') stats = chunk.hogwild;
      content += chunk.choices[0]?.delta?.content ?? '';
    }
    assert.equal(content, '17');
    assert.equal(stats.answer, '17 apples');
  } finally {
    await s.stop();
  }
});

test('without max_tokens a completion stops at generation_config.json\'s max_new_tokens', async () => {
  const dir = join(WORK, 'model-with-max-new-tokens');
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  for (const f of readdirSync(testModel())) if (f !== 'generation_config.json') symlinkSync(join(testModel(), f), join(dir, f));
  const gen = JSON.parse(readFileSync(join(testModel(), 'generation_config.json'), 'utf8'));
  await writeFile(join(dir, 'generation_config.json'), JSON.stringify({ ...gen, max_new_tokens: 7 }));
  const s = await startServer([], { model: dir });
  try {
    let lengths = 0;
    for (let seed = 1; seed <= 6; seed++) {
      const r = await post(`${s.url}/v1/completions`, { prompt: 'Once upon a time', seed, temperature: 1.0 });
      assert.equal(r.status, 200, r.text);
      const c = r.json.usage.completion_tokens;
      assert.ok(c >= 1 && c <= 7, `seed ${seed}: ${c} tokens`);
      if (r.json.choices[0].finish_reason === 'length') {
        assert.equal(c, 7);
        lengths += 1;
      }
    }
    assert.ok(lengths > 0, 'some run reached max_new_tokens');
    // max_tokens still wins, above it too.
    const more = await post(`${s.url}/v1/completions`, { prompt: 'Once upon a time', seed: 1, max_tokens: 12, temperature: 1.0 });
    assert.equal(more.status, 200, more.text);
    assert.ok(more.json.usage.completion_tokens > 7 || more.json.choices[0].finish_reason === 'stop', more.text);
  } finally {
    await s.stop();
  }
});
