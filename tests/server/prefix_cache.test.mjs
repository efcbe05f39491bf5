// Automatic prefix caching through the API (docs/SERVER.md "Prefix cache"), with the official
// openai SDK: requests whose prompts begin alike share the K/V of the common 64-token pages; the
// second one reports the hit (usage.prompt_tokens_details.cached_tokens, /metrics) and answers
// exactly what a server started with --no-prefix-cache answers; the n choices of one request
// prefill their prompt once.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { requireSetup, requireJs, startServer, metric } from './harness.mjs';

requireSetup('openai');
const OpenAI = requireJs('openai').default ?? requireJs('openai');

let cached, plain;  // {server, client}: the default server and one with --no-prefix-cache

// A system prompt of several pages (the test tokenizer is byte-level: about a token a byte).
const system = 'You are a careful solver. ' +
  'Work in short steps, check every result against the question, and state the answer once. '.repeat(4);
const ask = (q) => [{ role: 'system', content: system }, { role: 'user', content: q }];

async function start(args) {
  const server = await startServer(args);
  return { server, client: new OpenAI({ baseURL: `${server.url}/v1`, apiKey: 'unused', maxRetries: 0 }) };
}

before(async () => {
  cached = await start([]);
  plain = await start(['--no-prefix-cache']);
});
after(async () => {
  assert.equal((await cached.server.stop()).code, 0);
  assert.equal((await plain.server.stop()).code, 0);
});

async function metrics(s) {
  const m = await (await fetch(`${s.server.url}/metrics`)).text();
  return {
    queries: metric(m, 'hogwild_prefix_cache_queries_total'),
    hits: metric(m, 'hogwild_prefix_cache_hits_total'),
    rate: metric(m, 'hogwild_prefix_cache_hit_rate'),
  };
}

// Whole 64-token pages below the prompt's last token (which is always fed).
const pagesBelow = (n) => Math.floor((n - 1) / 64) * 64;

test('the same system prompt: the second request shares its pages and answers the same', async () => {
  const args = (q) => ({ model: '', messages: ask(q), max_tokens: 12, temperature: 0 });
  const first = await cached.client.chat.completions.create(args('What is 12 times 13?'));
  const p1 = first.usage.prompt_tokens;
  assert.ok(p1 > 3 * 64, `the prompt spans several pages (${p1} tokens)`);
  assert.equal(first.usage.prompt_tokens_details.cached_tokens, 0);
  assert.deepEqual(await metrics(cached), { queries: p1, hits: 0, rate: 0 });

  // The same messages again: every whole page below the last token is shared.
  const again = await cached.client.chat.completions.create(args('What is 12 times 13?'));
  assert.equal(again.usage.prompt_tokens, p1);
  assert.equal(again.usage.prompt_tokens_details.cached_tokens, pagesBelow(p1));
  let m = await metrics(cached);
  assert.equal(m.queries, 2 * p1);
  assert.equal(m.hits, pagesBelow(p1));
  assert.equal(m.rate, pagesBelow(p1) / (2 * p1));

  // Another question after the same system prompt: the whole pages before the question are
  // shared, not those from the page where the questions differ on. The tokenizer is byte-level, so
  // the common part is p3 - q3.length tokens less the template's few after the question, which
  // stay within the same page here.
  const q3 = 'And 7 plus 8? Answer with the number alone, then check it by counting on your fingers.';
  const other = await cached.client.chat.completions.create(args(q3));
  const p3 = other.usage.prompt_tokens;
  assert.equal(p1 - 'What is 12 times 13?'.length, p3 - q3.length);  // one token a byte
  const hit3 = other.usage.prompt_tokens_details.cached_tokens;
  assert.equal(hit3, 64 * Math.floor((p3 - q3.length) / 64));
  assert.ok(hit3 >= 4 * 64 && hit3 < pagesBelow(p3), `${hit3} of ${p3} tokens shared`);
  m = await metrics(cached);
  assert.equal(m.queries, 2 * p1 + p3);
  assert.equal(m.hits, pagesBelow(p1) + hit3);

  // The server without the cache prefills everything and answers the same text.
  for (const [q, reply] of [['What is 12 times 13?', again], [q3, other]]) {
    const ref = await plain.client.chat.completions.create(args(q));
    assert.equal(ref.usage.prompt_tokens_details.cached_tokens, 0);
    assert.equal(reply.choices[0].message.content, ref.choices[0].message.content);
    assert.equal(reply.choices[0].finish_reason, ref.choices[0].finish_reason);
  }
  assert.deepEqual(await metrics(plain), { queries: 0, hits: 0, rate: 0 });
});

test('hogwild: the second session shares the rules prompt and writes the same steps', async () => {
  const args = {
    model: '', messages: ask('What is the sum of the primes below 10?'), temperature: 0,
    hogwild: { workers: 2, budget: 16 },
  };
  const before = await metrics(cached);
  await cached.client.chat.completions.create(args);
  const second = await cached.client.chat.completions.create(args);
  const ref = await plain.client.chat.completions.create(args);
  const p = second.usage.prompt_tokens;
  assert.equal(second.usage.prompt_tokens_details.cached_tokens, pagesBelow(p));
  assert.equal(second.hogwild.choices[0].stats.prompt_cached_tokens, pagesBelow(p));
  const m = await metrics(cached);
  assert.equal(m.queries - before.queries, 2 * p);
  assert.equal(m.hits - before.hits, pagesBelow(p));
  const steps = (r) => r.hogwild.choices[0].workers.map((w) => w.steps.map((s) => s.text));
  assert.deepEqual(steps(second), steps(ref));
  assert.equal(second.choices[0].message.content, ref.choices[0].message.content);
});

test('n = 4: the choices prefill their prompt once and answer as without the cache', async () => {
  // A system prompt nothing cached yet begins with: the first choice prefills it; the three
  // others wait for its pages, share every whole page below the last token and prefill the rest.
  const own = 'You check sums twice. ' +
    'Add the numbers in order, write each partial sum, and give the total on its own line. '.repeat(4);
  const args = {
    model: '', temperature: 1.0, seed: 5, n: 4, max_tokens: 12,
    messages: [{ role: 'system', content: own }, { role: 'user', content: 'What is 17 plus 25 plus 8?' }],
  };
  const before = await metrics(cached);
  const four = await cached.client.chat.completions.create(args);
  const p = four.usage.prompt_tokens;
  const s = pagesBelow(p);
  assert.ok(s >= 4 * 64, `${s} of ${p} tokens in whole pages`);
  assert.equal(four.usage.prompt_tokens_details.cached_tokens, 0);
  assert.deepEqual(four.usage.prompt_tokens_details.cached_tokens_per_choice, [0, s, s, s]);
  const m = await metrics(cached);
  assert.equal(m.queries - before.queries, 4 * p);
  assert.equal(m.hits - before.hits, 3 * s);
  // Prefilled: the whole prompt once, then the tokens after the shared pages for each other choice.
  assert.equal((m.queries - m.hits) - (before.queries - before.hits), p + 3 * (p - s));

  const ref = await plain.client.chat.completions.create(args);
  assert.deepEqual(ref.usage.prompt_tokens_details.cached_tokens_per_choice, [0, 0, 0, 0]);
  assert.equal(ref.choices.length, 4);
  for (let i = 0; i < 4; ++i) {
    assert.equal(four.choices[i].index, i);
    assert.equal(four.choices[i].message.content, ref.choices[i].message.content, `choice ${i}`);
    assert.equal(four.choices[i].finish_reason, ref.choices[i].finish_reason);
  }
  const texts = new Set(four.choices.map((c) => c.message.content));
  assert.ok(texts.size > 1, 'the choices were sampled apart');
});
