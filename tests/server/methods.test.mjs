// The methods `hogwild eval` runs, through the API with the official openai SDK (docs/SERVER.md
// "Requests"): self-consistency (independent layout, the answer the workers' vote), Skeleton-of-
// Thought (hogwild.skeleton), n > 1 as independent samples, and their mistakes as 400s.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { requireSetup, requireJs, startServer, post, readSse, metric } from './harness.mjs';

requireSetup('openai');
const OpenAI = requireJs('openai').default ?? requireJs('openai');

let server, client;
const messages = [{ role: 'user', content: 'What is the sum of the primes below 10?' }];

before(async () => {
  server = await startServer();
  client = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: 'unused', maxRetries: 0 });
});
after(async () => {
  assert.equal((await server.stop()).code, 0);
});

// Self-consistency's plain vote (hogwild/answer.h majority_answer with equality): the largest
// class of equal answers, a tie to the class seen first; missing or blank answers do not vote.
function vote(answers) {
  const classes = [];
  for (const a of answers) {
    if (a == null || a.trim() === '') continue;
    const c = classes.find((k) => k.answer === a);
    if (c) c.count++; else classes.push({ answer: a, count: 1 });
  }
  let best = null;
  for (const c of classes) if (!best || c.count > best.count) best = c;
  return best ? best.answer : null;
}

test('self-consistency: independent samples, the answer their vote, streamed or not', async () => {
  const args = { model: '', messages, seed: 5, temperature: 1.0, hogwild: { workers: 3, layout: 'independent', budget: 40 } };
  const full = await client.chat.completions.create(args);
  const hw = full.hogwild;
  assert.equal(hw.options.layout, 'independent');
  assert.equal(hw.options.workers, 3);
  const ch = hw.choices[0];
  assert.equal(ch.workers.length, 3);
  assert.equal(ch.worker_answers.length, 3);
  assert.equal(ch.answer, vote(ch.worker_answers) ?? '');
  assert.equal(full.choices[0].message.content, vote(ch.worker_answers));
  assert.equal(ch.stats.tokens_per_worker.length, 3);
  // The reasoning: each sample's whole text, sample by sample (not interleaved by finishing order).
  const texts = ch.workers.flatMap((w) => w.steps.map((s) => s.text))
    .filter((t) => !/^\*\*\w+ \[\d+\]:\*\* $/.test(t));
  let joined = '';
  for (const t of texts) joined += (joined && !joined.endsWith('\n\n') ? '\n\n' : '') + t;
  assert.equal(full.choices[0].message.reasoning_content, joined);

  const stream = await client.chat.completions.create({ ...args, stream: true });
  let stats = null, content = '';
  for await (const c of stream) {
    if (c.hogwild?.event === 'stats') stats = c.hogwild;
    content += c.choices[0]?.delta?.content ?? '';
  }
  assert.deepEqual(stats.worker_answers, ch.worker_answers);
  assert.equal(content, ch.answer);
});

test('self-consistency beyond 8 samples: 12 workers labelled sample 1..12 (as run and eval label them), no seed shared across choices', async () => {
  const args = { model: '', messages, seed: 9, temperature: 1.0, n: 2, hogwild: { workers: 12, layout: 'independent', budget: 8 } };
  const full = await client.chat.completions.create(args);
  assert.equal(full.choices.length, 2);
  for (const ch of full.hogwild.choices) {
    assert.equal(ch.workers.length, 12);
    assert.deepEqual(ch.workers.map((w) => w.name), Array.from({ length: 12 }, (_, i) => `sample ${i + 1}`));
    assert.equal(ch.worker_answers.length, 12);
  }
  // Choice 1 draws with seed + 12: as a request of that seed alone.
  const one = await client.chat.completions.create({ ...args, n: 1, seed: 9 + 12 });
  assert.deepEqual(one.hogwild.choices[0].workers, full.hogwild.choices[1].workers);
});

test('Skeleton-of-Thought: an outline, then its points expanded; same seed same run', async () => {
  const args = { model: '', messages, seed: 2, temperature: 1.0, hogwild: { workers: 3, skeleton: true, budget: 80 } };
  const full = await client.chat.completions.create(args);
  const hw = full.hogwild;
  assert.deepEqual(hw.options, { workers: 3, layout: 'independent', budget: 80, collab_every: 1024, format: 'qwen3-math', skeleton: true });
  const ch = hw.choices[0];
  assert.ok(Array.isArray(ch.outline) && ch.outline.length <= 3, JSON.stringify(ch.outline));
  assert.equal(ch.stats.serial_steps <= 80, true);
  assert.ok(['stop', 'length'].includes(full.choices[0].finish_reason));
  const again = await client.chat.completions.create(args);
  assert.deepEqual(again.hogwild.choices[0].outline, ch.outline);
  assert.equal(again.choices[0].message.reasoning_content, full.choices[0].message.reasoning_content);
});

test('n > 1: independent samples, choice i drawn with seed + 8 i', async () => {
  const args = { model: '', messages, max_tokens: 12, temperature: 1.0 };
  const three = await client.chat.completions.create({ ...args, seed: 20, n: 3 });
  assert.equal(three.choices.length, 3);
  for (let i = 0; i < 3; i++) {
    const one = await client.chat.completions.create({ ...args, seed: 20 + 8 * i });
    assert.deepEqual(three.choices[i].message, one.choices[0].message, `choice ${i}`);
  }
});

test('method mistakes are 400s naming the field', async () => {
  const url = `${server.url}/v1/chat/completions`;
  const cases = [
    [{ skeleton: true, layout: 'combined' }, 'hogwild.layout'],
    [{ skeleton: 'yes' }, 'hogwild.skeleton'],
    [{ layout: 'independent', workers: 65 }, 'hogwild.workers'],
    [{ skeleton: true, workers: 65 }, 'hogwild.workers'],
    [{ layout: 'combined', workers: 9 }, 'hogwild.workers'],
    [{ layout: 'self-consistency' }, 'hogwild.layout'],
  ];
  for (const [hogwild, param] of cases) {
    const r = await post(url, { messages, hogwild });
    assert.equal(r.status, 400, JSON.stringify(hogwild));
    assert.equal(r.json.error.type, 'invalid_request_error');
    assert.equal(r.json.error.param, param, JSON.stringify(r.json));
  }
  const r = await post(`${server.url}/v1/completions`, { prompt: 'x', include_reasoning: false });
  assert.equal(r.status, 400);
  assert.equal(r.json.error.param, 'include_reasoning');
});

test('/metrics: requests by outcome, tokens and the stages\' histograms per method; KV reserved while a session runs', async () => {
  const metrics = async () => (await fetch(`${server.url}/metrics`)).text();
  const cases = [
    ['plain', { messages, max_tokens: 5, seed: 1 }],
    ['hogwild', { messages, seed: 1, hogwild: { workers: 2, budget: 6 } }],
    ['self_consistency', { messages, seed: 1, temperature: 1.0, hogwild: { workers: 3, layout: 'independent', budget: 6 } }],
    ['skeleton_of_thought', { messages, seed: 2, temperature: 1.0, hogwild: { workers: 3, skeleton: true, budget: 30 } }],
  ];
  const methods = cases.map(([m]) => m);
  for (const [method, body] of cases) {
    const before = await metrics();
    const r = await client.chat.completions.create({ model: '', ...body });
    const after = await metrics();
    const d = (sample) => {
      const a = metric(after, sample), b = metric(before, sample);
      assert.ok(a !== undefined && b !== undefined, `${sample} in /metrics`);
      return a - b;
    };
    for (const m of methods)
      assert.equal(d(`hogwild_requests_total{method="${m}",outcome="finished"}`), m === method ? 1 : 0, `${method}: finished ${m}`);
    const l = `{method="${method}"}`;
    assert.equal(d(`hogwild_generated_tokens_total${l}`), r.usage.completion_tokens, method);
    assert.equal(d(`hogwild_prompt_tokens_total${l}`), r.usage.prompt_tokens, method);
    for (const h of ['request_prepare', 'request_queue', 'time_to_first_token']) {
      assert.equal(d(`hogwild_${h}_seconds_count${l}`), 1, `${method} ${h}`);
      assert.equal(d(`hogwild_${h}_seconds_bucket{method="${method}",le="+Inf"}`), 1, `${method} ${h}`);
    }
    assert.ok(d(`hogwild_inter_token_seconds_count${l}`) >= 1, method);
  }
  // A running session reserves the KV it can fill: at least what it holds; nothing once it ends.
  const ac = new AbortController();
  const res = await fetch(`${server.url}/v1/chat/completions`, {
    method: 'POST', headers: { 'Content-Type': 'application/json' }, signal: ac.signal,
    body: JSON.stringify({ model: '', messages, seed: 3, stream: true, hogwild: { workers: 2, budget: 100000 } }),
  });
  let seen = null;
  await readSse(res, async (ev) => {
    if (seen || ev.hogwild?.event !== 'token') return;
    seen = await metrics();
    ac.abort();
  }).catch((e) => { if (e.name !== 'AbortError') throw e; });
  const reserved = metric(seen, 'hogwild_kv_cache_reserved_tokens');
  const held = metric(seen, 'hogwild_kv_cache_tokens');
  assert.ok(held > 0 && reserved >= held, `reserved ${reserved}, held ${held}`);
  assert.ok(metric(seen, 'hogwild_kv_cache_capacity_tokens') >= 0);
  for (let i = 0; ; i++) {
    const m = await metrics();
    if (metric(m, 'hogwild_kv_cache_reserved_tokens') === 0 && metric(m, 'hogwild_requests_running') === 0) break;
    assert.ok(i < 100, `KV still reserved after the client left:\n${m}`);
    await new Promise((r) => setTimeout(r, 50));
  }
});
