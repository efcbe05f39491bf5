// `hogwild run` and the server's hogwild requests are built by one function (engine/request.h
// make_request): the same mistake is the same sentence from the CLI (exit 1, "error: ...") and in
// the server's 400 through its HTTP API (with the field's JSON path as `param`). The expected
// sentences are written out here, so a change of wording on either side fails.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync, readdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { requireSetup, startServer, post, testModel, HOGWILD, WORK } from './harness.mjs';

requireSetup();

const question = 'What is the sum of the primes below 10?';
const messages = [{ role: 'user', content: question }];
let server;

before(async () => {
  server = await startServer();
});
after(async () => {
  assert.equal((await server.stop()).code, 0);
});

// `hogwild ARGS...`: refused with exit status 1; returns the sentence of its "error: " line.
function cliRefuses(...args) {
  const r = spawnSync(HOGWILD, args, { encoding: 'utf8', timeout: 120000 });
  assert.equal(r.status, 1, `hogwild ${args.join(' ')}: ${r.stderr}`);
  const lines = r.stderr.split('\n').filter((l) => l.startsWith('error: '));
  assert.equal(lines.length, 1, r.stderr);
  return lines[0].slice('error: '.length);
}

// `hogwild run -m MODEL --no-live FLAGS... PROBLEM`, refused.
const runRefuses = (model, flags, problem) => cliRefuses('run', '-m', model, '--no-live', ...flags, problem);

// POST `body` to `url`: a 400 invalid_request_error about `param`; returns its message.
async function apiRefuses(url, body, param) {
  const r = await post(url, body);
  assert.equal(r.status, 400, r.text);
  assert.equal(r.json.error.type, 'invalid_request_error', r.text);
  assert.equal(r.json.error.param, param, r.text);
  return r.json.error.message;
}

// A copy of the test model whose directory holds `format` as hogwild_format.json: the default
// formatting of both `hogwild run` and `hogwild serve` (formatting.h model_formatting_ref).
function modelWithFormat(name, format) {
  const dir = join(WORK, name);
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  for (const f of readdirSync(testModel())) symlinkSync(join(testModel(), f), join(dir, f));
  writeFileSync(join(dir, 'hogwild_format.json'), JSON.stringify(format));
  return dir;
}

const independent = 'or use the independent layout (1..64 workers that do not see each other)';

test('a hogwild mistake is the same sentence from hogwild run and in the 400, naming the field', async () => {
  const chat = `${server.url}/v1/chat/completions`;
  // The prompt's tokens as a request that runs counts them: the sentence of a kv_budget below
  // the prompt gives them. Two workers, the default of both.
  const ok = await post(chat, { messages, seed: 1, max_tokens: 1, hogwild: { budget: 1 } });
  assert.equal(ok.status, 200, ok.text);
  const prompt = ok.json.usage.prompt_tokens;
  assert.ok(prompt > 100, ok.text);
  const names = `names 8 workers: give 1..8, add names to "worker_names" in a formatting file, ${independent}`;
  // [run's flags, the request's hogwild fields, param, the sentence of both]
  const cases = [
    [['-w', '9'], { workers: 9 }, 'hogwild.workers', `workers is 9; the formatting 'qwen3-math' ${names}`],
    [['-w', '0'], { workers: 0 }, 'hogwild.workers', `workers is 0; the formatting 'qwen3-math' ${names}`],
    [['--layout', 'independent', '-w', '65'], { layout: 'independent', workers: 65 }, 'hogwild.workers',
      'workers is 65; it must be in 1..64 workers'],
    [['--layout', 'spiral'], { layout: 'spiral' }, 'hogwild.layout',
      "unknown layout 'spiral': use combined, interleaved, contiguous or independent"],
    [['--budget', '-1'], { budget: -1 }, 'hogwild.budget',
      'budget is -1; it must be in 0..1000000 serial steps (0 = until an answer)'],
    [['--kv-budget', '100'], { kv_budget: 100 }, 'hogwild.kv_budget',
      `kv_budget is 100, but the prompt (${prompt} tokens) and the history's last 128 tokens are never forgotten; give at least ${prompt + 128} tokens, or 0 for no budget`],
    [['--layout', 'contiguous', '--kv-budget', '5000'], { layout: 'contiguous', kv_budget: 5000 }, 'hogwild.kv_budget',
      'kv_budget is 5000, but the contiguous layout never moves steps into the shared history, so there is nothing to forget; use the combined or interleaved layout, or kv_budget 0'],
    [['--kv-policy', 'summarise'], { kv_policy: 'summarise' }, 'hogwild.kv_policy',
      'kv_policy is summarise, but there is no kv_budget: the policy says what happens at the budget; give a kv_budget, or drop kv_policy'],
  ];
  for (const [flags, hogwild, param, sentence] of cases) {
    const what = JSON.stringify(hogwild);
    assert.equal(runRefuses(testModel(), flags, question), sentence, `run ${flags.join(' ')}`);
    assert.equal(await apiRefuses(chat, { messages, hogwild }, param), sentence, what);
  }
  // An empty problem: run's argument, the chat's user messages (a system message is no problem),
  // the completion's prompt.
  const empty = 'no problem given; the problem text is empty: give the problem to solve';
  assert.equal(runRefuses(testModel(), [], ' \n'), empty);
  const system = [{ role: 'system', content: 'Be brief.' }, { role: 'user', content: ' \n' }];
  assert.equal(await apiRefuses(chat, { messages: system, hogwild: {} }, 'messages'), empty);
  assert.equal(await apiRefuses(`${server.url}/v1/completions`, { prompt: ' \n', hogwild: {} }, 'prompt'), empty);
});

test('a problem that leaves no room for the first serial step: the same sentence from run and in the 400 context_length_exceeded', async () => {
  // ~4000 tokens of problem against the test model's 4096: the prompt alone may fit or not, the
  // first step does not; the sentence gives the counts, which add up.
  const long = `Count the words: ${'ab '.repeat(4000)}`;
  const sentence = runRefuses(testModel(), [], long);
  const m = sentence.match(/^This model's maximum context length is 4096 tokens\. However, you requested (\d+) tokens \((\d+) in the problem with the formatting's prompt, (\d+) in the layout's texts and the workers' first step openings, 1 in the completion\)\. Please shorten the problem, or use fewer workers or the interleaved layout\.$/);
  assert.ok(m, sentence);
  const [total, prompt, layout] = m.slice(1).map(Number);
  assert.equal(total, prompt + layout + 1);
  assert.ok(total > 4096 && layout > 0, sentence);
  const r = await post(`${server.url}/v1/chat/completions`,
    { messages: [{ role: 'user', content: long }], hogwild: {} });
  assert.equal(r.status, 400, r.text);
  assert.equal(r.json.error.code, 'context_length_exceeded', r.text);
  assert.equal(r.json.error.param, 'messages', r.text);
  assert.equal(r.json.error.message, sentence);
});

test('a model directory\'s formatting bounds the workers alike on both; the server\'s own limit comes after', async () => {
  mkdirSync(WORK, { recursive: true });
  const dir = modelWithFormat('model-three-names', { base: 'qwen3-math', name: 'three', worker_names: ['Ann', 'Ben', 'Cy'] });
  const sentence = `workers is 4; the formatting 'three' names 3 workers: give 1..3, add names to "worker_names" in a formatting file, ${independent}`;
  assert.equal(runRefuses(dir, ['-w', '4'], question), sentence);
  // A formatting of ten names takes 9 workers on the CLI; the server runs at most 8 a request
  // (RequestLimits), and past the ten names the formatting's sentence comes first.
  const ten = ['Ann', 'Ben', 'Cy', 'Dee', 'Eli', 'Fay', 'Gus', 'Hal', 'Ida', 'Jo'];
  const file = join(WORK, 'ten_names.json');
  writeFileSync(file, JSON.stringify({ base: 'qwen3-math', name: 'ten', worker_names: ten }));
  for (const [args, model] of [[[], dir], [['--format', file], null]]) {
    const s = await startServer(args, { model });
    try {
      const chat = `${s.url}/v1/chat/completions`;
      if (model) {
        assert.equal(await apiRefuses(chat, { messages, hogwild: { workers: 4 } }, 'hogwild.workers'), sentence);
        continue;
      }
      assert.equal(await apiRefuses(chat, { messages, hogwild: { workers: 9 } }, 'hogwild.workers'),
        'workers is 9; this server runs at most 8 workers a request');
      assert.equal(await apiRefuses(chat, { messages, hogwild: { workers: 11 } }, 'hogwild.workers'),
        `workers is 11; the formatting 'ten' names 10 workers: give 1..10, add names to "worker_names" in a formatting file, ${independent}`);
    } finally {
      await s.stop();
    }
  }
});

test('serve --max-context beyond the model\'s context stops with the sentence of run -c', () => {
  const sentence = "max_context is 5000, beyond the model's context of 4096 tokens (max_position_embeddings in config.json): positions past it are untrained; give 0..4096";
  assert.equal(runRefuses(testModel(), ['-c', '5000'], question), sentence);
  assert.equal(cliRefuses('serve', '-m', testModel(), '--port', '0', '--quiet', '--max-context', '5000'), sentence);
});
