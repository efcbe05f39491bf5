// `hogwild serve` against clients that misbehave, as an attacker would: bodies past the limit
// (chunked or with a Content-Length that lies), slow and idle connections, many connections at
// once, a second server on the same port, numbers no double holds, prompts that just fit or just
// do not, notes to ended sessions, wrong methods. Raw sockets where no client would send such a
// request; the openai SDK and fetch for the rest. Every answer is an OpenAI-shaped JSON error.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import net from 'node:net';
import http from 'node:http';
import { requireSetup, requireJs, startServer, post, readSse, testModel, HOGWILD } from './harness.mjs';

requireSetup('openai');
const OpenAI = requireJs('openai').default ?? requireJs('openai');

let server, client, model, host, port;
const problem = [{ role: 'user', content: 'What is the sum of the primes below 10?' }];

before(async () => {
  server = await startServer(['--max-body-bytes', String(1 << 20)]);
  client = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: 'unused', maxRetries: 0 });
  model = (await client.models.list()).data[0].id;
  const u = new URL(server.url);
  host = u.hostname;
  port = Number(u.port);
});
after(async () => {
  const { code } = await server.stop();
  assert.equal(code, 0, 'SIGTERM exits 0');
});

function isOpenAiError(j, status) {
  assert.ok(j && j.error, `an error body: ${JSON.stringify(j)}`);
  for (const k of ['message', 'type', 'param', 'code']) assert.ok(k in j.error, `error.${k}`);
  assert.ok(j.error.message.length > 0);
  assert.equal(j.error.type, status >= 500 ? 'server_error' : 'invalid_request_error');
}

// Parses the first HTTP response in `text` (status, headers, body by Content-Length).
function parseResponse(text) {
  const cut = text.indexOf('\r\n\r\n');
  if (cut < 0) return null;
  const lines = text.slice(0, cut).split('\r\n');
  const status = Number(lines[0].split(' ')[1]);
  const headers = {};
  for (const l of lines.slice(1)) {
    const i = l.indexOf(':');
    headers[l.slice(0, i).trim().toLowerCase()] = l.slice(i + 1).trim();
  }
  const len = Number(headers['content-length'] ?? 0);
  const body = text.slice(cut + 4);
  if (body.length < len) return null;
  return { status, headers, body: body.slice(0, len), json: JSON.parse(body.slice(0, len) || 'null') };
}

// Sends `head` on a raw socket, then (optionally) body pieces from `more()` while no answer came;
// resolves with the answer, when it came (ms) and how many body bytes had been sent by then.
function rawRequest(head, { more = null, timeoutMs = 20000 } = {}) {
  return new Promise((resolve, reject) => {
    const t0 = Date.now();
    const sock = net.connect(port, host);
    let text = '';
    let sent = 0;
    let answered = null;
    const timer = setTimeout(() => { sock.destroy(); reject(new Error(`no answer within ${timeoutMs} ms (sent ${sent} body bytes)`)); }, timeoutMs);
    const finish = (r) => {
      if (answered) return;
      answered = r;
      clearTimeout(timer);
      sock.destroy();
      resolve(r);
    };
    sock.on('data', (d) => {
      text += d.toString('latin1');
      const r = parseResponse(text.replace(/^HTTP\/1\.1 100 Continue\r\n\r\n/, ''));
      if (r) finish({ ...r, ms: Date.now() - t0, sent });
    });
    sock.on('error', () => {});  // the server may reset after answering; the answer is what counts
    sock.on('close', () => { if (!answered) { clearTimeout(timer); reject(new Error(`closed without an answer after ${sent} body bytes: ${JSON.stringify(text.slice(0, 200))}`)); } });
    sock.on('connect', async () => {
      sock.write(head);
      if (!more) return;
      for (;;) {
        if (answered || sock.destroyed) return;
        const piece = more(sent);
        if (!piece) return;
        sent += piece.length;
        if (!sock.write(piece)) await new Promise((r) => { sock.once('drain', r); sock.once('close', r); });
      }
    });
  });
}

const chatHead = (extra) => `POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n${extra}\r\n`;

// /health on a new connection (fetch would reuse one of its keep-alive connections, which a
// busy server may already serve).
async function healthyWithin(ms) {
  const r = await rawRequest('GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n', { timeoutMs: ms });
  assert.equal(r.status, 200);
  assert.equal(r.json.status, 'ok');
  return r.ms;
}

test('a chunked body is refused with 413 as soon as it passes --max-body-bytes, not read whole', async () => {
  const limit = 1 << 20;
  const chunk = 'x'.repeat(64 << 10);
  const piece = `${chunk.length.toString(16)}\r\n${chunk}\r\n`;
  // Up to 64 MiB unless the server answers first.
  const r = await rawRequest(chatHead('Transfer-Encoding: chunked\r\n'), {
    more: (sent) => (sent < 64 << 20 ? piece : null),
  });
  assert.equal(r.status, 413, r.body);
  isOpenAiError(r.json, 413);
  assert.equal(r.json.error.code, 'request_too_large');
  assert.match(r.json.error.message, /--max-body-bytes/);
  // Answered at the limit: the client had sent a few socket buffers past it, not the rest.
  assert.ok(r.sent < 8 * limit, `answered after ${r.sent} bytes`);
  // A chunked body within the limit is served as a plain one.
  const body = JSON.stringify({ model, messages: problem, max_tokens: 2, seed: 1 });
  const half = body.length >> 1;
  const ok = await rawRequest(chatHead('Transfer-Encoding: chunked\r\n') +
    `${half.toString(16)}\r\n${body.slice(0, half)}\r\n${(body.length - half).toString(16)};ext=1\r\n${body.slice(half)}\r\n0\r\n\r\n`);
  assert.equal(ok.status, 200, ok.body);
  assert.equal(ok.json.usage.completion_tokens, 2);
  await healthyWithin(2000);
});

test('a Content-Length past the limit, negative or not a number is answered at once', async () => {
  for (const [value, status] of [['99999999999', 413], ['99999999999999999999999999', 413], [String((1 << 20) + 1), 413], ['-5', 400], ['12abc', 400], ['', 400]]) {
    const r = await rawRequest(chatHead(`Content-Length: ${value}\r\n`));
    assert.equal(r.status, status, `Content-Length '${value}': ${r.body}`);
    isOpenAiError(r.json, status);
    assert.ok(r.ms < 2000, `Content-Length '${value}': answered after ${r.ms} ms`);
    if (status === 413) assert.equal(r.json.error.code, 'request_too_large');
  }
  // Two different lengths, or a length beside chunked: request smuggling, refused.
  for (const h of ['Content-Length: 5\r\nContent-Length: 6\r\n', 'Content-Length: 5\r\nTransfer-Encoding: chunked\r\n']) {
    const r = await rawRequest(chatHead(h));
    assert.equal(r.status, 400, r.body);
    isOpenAiError(r.json, 400);
  }
  const gz = await rawRequest(chatHead('Transfer-Encoding: gzip, chunked\r\n'));
  assert.equal(gz.status, 501, gz.body);
  // A chunk size line over 1 KiB is refused also when its end arrives in the same read.
  const small = JSON.stringify({ model, messages: problem, max_tokens: 1 });
  const ext = await rawRequest(chatHead('Transfer-Encoding: chunked\r\n') +
    `${small.length.toString(16)};${'a'.repeat(2000)}\r\n${small}\r\n0\r\n\r\n`);
  assert.equal(ext.status, 400, ext.body);
  assert.match(ext.json.error.message, /chunk size line .* too long/);
  // Expect: 100-continue with a body too large: 413 before the body is sent.
  const exp = await rawRequest(chatHead(`Content-Length: ${5 << 20}\r\nExpect: 100-continue\r\n`));
  assert.equal(exp.status, 413);
  await healthyWithin(2000);
});

test('a malformed request line or header line is refused with the reason, and the connection closed', async () => {
  for (const [head, status, says] of [
    ['GET /health HTTP/9.9\r\nHost: x\r\n\r\n', 505, /HTTP version 'HTTP\/9\.9' is not supported/],
    ['GET /health\r\nHost: x\r\n\r\n', 400, /request line 'GET \/health' .*no HTTP version/],
    ['GET /he\0alth HTTP/1.1\r\nHost: x\r\n\r\n', 400, /request line 'GET \/he\\x00alth HTTP\/1\.1' .*control/],
    ['GET  /health HTTP/1.1\r\nHost: x\r\n\r\n', 400, /no target/],
    ['G(T /health HTTP/1.1\r\nHost: x\r\n\r\n', 400, /method is not a token/],
    ['GET /health HTTP/1.1\r\nHost x\r\n\r\n', 400, /header line 'Host x' is not 'Name: value'/],
    ['GET /health HTTP/1.1\r\nHost: x\r\n folded\r\n\r\n', 400, /header line ' folded'/],
  ]) {
    // The answer comes at once, and the server closes: rawRequest resolves on the answer, so
    // wait for the close separately.
    const t0 = Date.now();
    const closed = await new Promise((resolve) => {
      const sock = net.connect(port, host, () => sock.write(head));
      let text = '';
      sock.on('data', (d) => { text += d.toString('latin1'); });
      sock.on('error', () => {});
      sock.on('close', () => resolve({ r: parseResponse(text), ms: Date.now() - t0 }));
    });
    assert.ok(closed.r, `an answer to ${JSON.stringify(head)}`);
    assert.equal(closed.r.status, status, `${JSON.stringify(head)}: ${closed.r.body}`);
    isOpenAiError(closed.r.json, 400);  // 505 too is the client's mistake: invalid_request_error
    assert.match(closed.r.json.error.message, says, JSON.stringify(head));
    assert.ok(closed.ms < 4000, `closed after ${closed.ms} ms`);
  }
  await healthyWithin(2000);
});

test('OPTIONS on a known path is 204 with Allow; on an unknown one 404', async () => {
  for (const [path, allow] of [['/v1/chat/completions', 'POST'], ['/v1/hogwild/sessions/abc/messages', 'POST'], ['/health', 'GET, HEAD']]) {
    const res = await fetch(`${server.url}${path}`, { method: 'OPTIONS' });
    assert.equal(res.status, 204, path);
    assert.equal(res.headers.get('allow'), allow, path);
    assert.equal(res.headers.get('access-control-allow-origin'), null, path);
  }
  assert.equal((await fetch(`${server.url}/v1/nothing`, { method: 'OPTIONS' })).status, 404);
});

test('a second hogwild serve on a port where one listens stops with "port in use" and exit 1', async () => {
  const proc = spawn(HOGWILD, ['serve', '-m', testModel(), '--host', host, '--port', String(port), '--quiet'], { stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  proc.stderr.on('data', (d) => { stderr += d; });
  const code = await new Promise((resolve) => {
    const t = setTimeout(() => { proc.kill('SIGKILL'); resolve('still running after 15 s'); }, 15000);
    proc.on('exit', (c) => { clearTimeout(t); resolve(c); });
  });
  assert.equal(code, 1, stderr);
  assert.match(stderr, /port in use/);
  assert.match(stderr, new RegExp(`${host}:${port}`));
  await healthyWithin(2000);
});

test('200 idle half-request connections do not hold /health or the API', async () => {
  // More than the HTTP threads (--max-queue + --max-sessions + 16 = 160): half heads, and whole
  // heads with half a body.
  const socks = [];
  const open = (data) => new Promise((resolve) => {
    const s = net.connect(port, host, () => { s.write(data); resolve(); });
    s.on('error', () => {});
    socks.push(s);
  });
  // One after the other, so that each is accepted (a burst would wait in the listen backlog).
  for (let i = 0; i < 100; i++) await open('POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Le');
  for (let i = 0; i < 100; i++) await open(chatHead('Content-Length: 1000\r\n') + '{"model": "');
  await new Promise((r) => setTimeout(r, 300));
  try {
    for (let i = 0; i < 5; i++) assert.ok(await healthyWithin(2000) < 2000);
    const body = JSON.stringify({ model, messages: problem, max_tokens: 2, seed: 3 });
    const c = await rawRequest(chatHead(`Content-Length: ${body.length}\r\nConnection: close\r\n`) + body, { timeoutMs: 10000 });
    assert.equal(c.status, 200, c.body);
    assert.equal(c.json.usage.completion_tokens, 2);
  } finally {
    for (const s of socks) s.destroy();
  }
});

test('at --max-connections the longest idle connections make room; with none idle, 503', async () => {
  const s = await startServer(['--max-connections', '50']);
  const u = new URL(s.url);
  const socks = [];
  const open = (data) => new Promise((resolve) => {
    const sock = net.connect(Number(u.port), u.hostname, () => { if (data) sock.write(data); resolve(); });
    sock.closedByServer = false;
    sock.on('close', () => { sock.closedByServer = true; });
    sock.on('error', () => {});
    socks.push(sock);
  });
  const health = () => new Promise((resolve, reject) => {
    const sock = net.connect(Number(u.port), u.hostname, () => sock.write('GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n'));
    let text = '';
    const t = setTimeout(() => { sock.destroy(); reject(new Error('no answer within 2 s')); }, 2000);
    sock.on('data', (d) => { text += d; });
    sock.on('close', () => { clearTimeout(t); resolve(parseResponse(text)); });
    sock.on('error', () => {});
  });
  try {
    for (let i = 0; i < 60; i++) await open(i % 2 ? 'GET /health HTTP/1.1\r\nHo' : '');
    await new Promise((r) => setTimeout(r, 200));
    const ok = await health();
    assert.equal(ok.status, 200);
    assert.ok(socks.filter((x) => x.closedByServer).length >= 10, 'the oldest idle ones were closed');
    for (const x of socks) x.destroy();
    socks.length = 0;
    // Every connection busy sending a body: nothing to evict.
    for (let i = 0; i < 50; i++) await open(chatHead('Content-Length: 100\r\n') + '{');
    await new Promise((r) => setTimeout(r, 200));
    const busy = await health();
    assert.equal(busy.status, 503);
    isOpenAiError(busy.json, 503);
    assert.equal(busy.json.error.code, 'too_many_connections');
    assert.equal(busy.headers['retry-after'], '1');
  } finally {
    for (const x of socks) x.destroy();
    await s.stop();
  }
});

test('a request head that does not arrive in time is answered 408 and closed', async () => {
  const r = await rawRequest('POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n', { timeoutMs: 15000 });
  assert.equal(r.status, 408);
  isOpenAiError(r.json, 408);
  assert.equal(r.json.error.code, 'request_timeout');
  assert.ok(r.ms >= 9000 && r.ms < 13000, `after ${r.ms} ms`);
});

test('100 simultaneous streams below the admission limit are all accepted and answered', async () => {
  // The listening socket's backlog (ss shows it as Send-Q): room for a burst of connections.
  const ss = spawnSync('ss', ['-Hltn', `sport = :${port}`], { encoding: 'utf8' });
  if (ss.status === 0) {
    const backlog = Number(ss.stdout.trim().split(/\s+/)[2]);
    assert.ok(backlog >= 128, `listen backlog ${backlog}: ${ss.stdout}`);
  } else {
    console.log('ss (iproute2) is not installed: the listen backlog is not checked');
  }
  const body = JSON.stringify({ model, messages: problem, max_tokens: 4, seed: 5, stream: true });
  const one = () => new Promise((resolve, reject) => {
    const req = http.request({ host, port, method: 'POST', path: '/v1/chat/completions', agent: false,
      headers: { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(body) } }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (d) => { text += d; });
      res.on('end', () => resolve({ status: res.statusCode, text }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(body);
  });
  const results = await Promise.all(Array.from({ length: 100 }, one));
  for (const r of results) {
    assert.equal(r.status, 200, r.text);
    assert.ok(r.text.trimEnd().endsWith('data: [DONE]'), r.text.slice(-200));
  }
  await healthyWithin(2000);
});

test('numbers no double holds, integers past 64 bits, values 0 in 32-bit floats: 400 naming the field', async () => {
  const chat = `${server.url}/v1/chat/completions`;
  const msgs = JSON.stringify(problem);
  const cases = [
    [`{"model": "${model}", "messages": ${msgs}, "temperature": 1e999}`, 'temperature', /too large for a double/],
    [`{"model": "${model}", "messages": ${msgs}, "max_tokens": 1e999}`, 'max_tokens', /too large for a double/],
    [`{"model": "${model}", "messages": ${msgs}, "top_p": -1e999}`, 'top_p', /too large for a double/],
    [`{"model": "${model}", "messages": ${msgs}, "hogwild": {"budget": 1e999}}`, 'hogwild.budget', /too large for a double/],
    [`{"model": "${model}", "messages": ${msgs}, "seed": 1180591620717411303424}`, 'seed', /'seed' is too large/],
    [`{"model": "${model}", "messages": ${msgs}, "seed": 9223372036854775808}`, 'seed', /'seed' is too large \(9223372036854775808\); it must fit in a signed 64-bit integer/],
    [`{"model": "${model}", "messages": ${msgs}, "top_p": 1e-300}`, 'top_p', /must be in \(0, 1\]/],
  ];
  for (const [body, param, says] of cases) {
    const r = await post(chat, body);
    assert.equal(r.status, 400, `${body}: ${r.text}`);
    isOpenAiError(r.json, 400);
    assert.equal(r.json.error.param, param, body);
    assert.match(r.json.error.message, says, body);
  }
  // The SDK sees the same (it serializes 2**70 as 1.1805916207174113e+21).
  await assert.rejects(client.chat.completions.create({ model, messages: problem, seed: 2 ** 70 }),
    (e) => e.status === 400 && e.param === 'seed' && /too large/.test(e.message));
  await assert.rejects(client.chat.completions.create({ model, messages: problem, top_p: 1e-300 }),
    (e) => e.status === 400 && e.param === 'top_p');
  await healthyWithin(2000);
});

test('a body nested 300000 deep is a 400, and the server lives on', async () => {
  const d = 300000;
  for (const body of [
    `{"model": "${model}", "messages": ${JSON.stringify(problem)}, "max_tokens": 1, "chat_template_kwargs": {"x": ${'['.repeat(d)}${']'.repeat(d)}}}`,
    `{"model": "${model}", "messages": ${JSON.stringify(problem)}, "max_tokens": 1, "metadata": ${'{"a":'.repeat(d / 5)}1${'}'.repeat(d / 5)}}`,
  ]) {
    const r = await post(`${server.url}/v1/chat/completions`, body);
    assert.equal(r.status, 400, r.text.slice(0, 300));
    isOpenAiError(r.json, 400);
    assert.match(r.json.error.message, /deeper than 64 levels/);
    await healthyWithin(2000);
  }
});

test('max_tokens 1, or a prompt that leaves room for one token, ends with finish_reason "length"', async () => {
  const c = await client.chat.completions.create({ model, messages: problem, max_tokens: 1, seed: 1 });
  assert.equal(c.usage.completion_tokens, 1);
  assert.equal(c.choices[0].finish_reason, 'length');
  assert.equal(c.hogwild?.stop_reason ?? 'max_tokens', 'max_tokens');
  const p = await client.completions.create({ model, prompt: 'Once upon a time', max_tokens: 1, seed: 1 });
  assert.equal(p.choices[0].finish_reason, 'length');
  const stream = await client.completions.create({ model, prompt: 'Once upon a time', max_tokens: 1, seed: 1, stream: true });
  const finals = [];
  for await (const ch of stream) if (ch.choices[0]?.finish_reason) finals.push(ch.choices[0].finish_reason);
  assert.deepEqual(finals, ['length']);
  // A run that draws the end-of-turn token as its last allowed one stopped: "stop"; one token
  // fewer is its length.
  let natural = null;
  for (let seed = 1; seed < 50 && !natural; seed++) {
    const r = await client.chat.completions.create({ model, messages: problem, max_tokens: 200, seed, temperature: 1 });
    if (r.choices[0].finish_reason === 'stop') natural = { seed, n: r.usage.completion_tokens };
  }
  assert.ok(natural, 'a seed whose run ends on the end-of-turn token');
  const atEos = await client.chat.completions.create({ model, messages: problem, max_tokens: natural.n, seed: natural.seed, temperature: 1 });
  assert.equal(atEos.usage.completion_tokens, natural.n);
  assert.equal(atEos.choices[0].finish_reason, 'stop');
  if (natural.n > 1) {
    const cut = await client.chat.completions.create({ model, messages: problem, max_tokens: natural.n - 1, seed: natural.seed, temperature: 1 });
    assert.equal(cut.choices[0].finish_reason, 'length');
  }
  // Room for exactly one token: the context (4096) minus the prompt.
  const probe = await client.completions.create({ model, prompt: 'x'.repeat(4000), max_tokens: 1 });
  const prompt = 'x'.repeat(4000 + (4095 - probe.usage.prompt_tokens));
  const full = await client.completions.create({ model, prompt, seed: 2 });
  assert.equal(full.usage.prompt_tokens, 4095);
  assert.equal(full.usage.completion_tokens, 1);
  assert.equal(full.choices[0].finish_reason, 'length');
});

test('a hogwild prompt that leaves no room for the first step is a 400 with the counts, never a 500', async () => {
  // The tokenizer of the test model is byte-level: the problem's bytes move the prompt one token
  // at a time across the limit (a context of 2048 tokens: the collaboration prompt is ~1200).
  const s = await startServer(['--max-context', '2048']);
  try {
    const url = `${s.url}/v1/chat/completions`;
    const ask = (layout, workers, n) => post(url, {
      model, seed: 1, max_tokens: 1,
      messages: [{ role: 'user', content: 'x'.repeat(n) }], hogwild: { workers, layout, budget: 2 },
    });
    for (const [layout, workers] of [['combined', 4], ['interleaved', 2]]) {
      // The longest problem that is not refused, by bisection; then every length just around it.
      let lo = 1, hi = 2048;
      assert.notEqual((await ask(layout, workers, lo)).status, 400);
      while (hi - lo > 1) {
        const mid = (lo + hi) >> 1;
        if ((await ask(layout, workers, mid)).status === 400) hi = mid; else lo = mid;
      }
      let ran = 0, refused = 0;
      for (let n = Math.max(1, lo - 16); n <= lo + 2; n++) {
        const r = await ask(layout, workers, n);
        const what = `${layout} x${workers}, ${n} bytes: ${r.text.slice(0, 300)}`;
        assert.ok(r.status === 200 || r.status === 400, what);
        if (r.status === 200) {
          ran += 1;
          assert.ok(r.json.usage.completion_tokens >= workers, what);
        } else {
          refused += 1;
          isOpenAiError(r.json, 400);
          assert.equal(r.json.error.code, 'context_length_exceeded', what);
          assert.equal(r.json.error.param, 'messages');
          assert.match(r.json.error.message, /maximum context length is 2048 tokens\. However, you requested \d+ tokens \(\d+ in the problem with the formatting's prompt, \d+ in the layout's texts and the workers' first step openings, 1 in the completion\)/, what);
        }
      }
      assert.ok(ran > 0 && refused > 0, `${layout}: ${ran} ran, ${refused} refused`);
    }
  } finally {
    await s.stop();
  }
});

test('a note to a session that has ended is 409 session_ended; an unknown id 404', async () => {
  const done = await post(`${server.url}/v1/chat/completions`, { model, messages: problem, seed: 4, max_tokens: 3, hogwild: { workers: 2, budget: 3 } });
  assert.equal(done.status, 200, done.text);
  const late = await post(`${server.url}/v1/hogwild/sessions/${done.json.id}/messages`, { content: 'too late' });
  assert.equal(late.status, 409, late.text);
  isOpenAiError(late.json, 409);
  assert.equal(late.json.error.code, 'session_ended');
  assert.equal(late.json.error.param, 'id');
  const plain = await client.chat.completions.create({ model, messages: problem, max_tokens: 2 });
  const p = await post(`${server.url}/v1/hogwild/sessions/${plain.id}/messages`, { content: 'x' });
  assert.equal(p.status, 409);
  assert.equal(p.json.error.code, 'not_hogwild');
  const unknown = await post(`${server.url}/v1/hogwild/sessions/chatcmpl-nosuchid/messages`, { content: 'x' });
  assert.equal(unknown.status, 404);
  assert.equal(unknown.json.error.code, 'session_not_found');
});

test('a known path with another method is 405 with Allow and a JSON error', async () => {
  for (const [method, path, allow] of [
    ['GET', '/v1/chat/completions', 'POST'], ['DELETE', '/v1/completions', 'POST'],
    ['GET', '/v1/hogwild/sessions/abc/messages', 'POST'], ['POST', '/health', 'GET, HEAD'],
    ['PUT', '/v1/models', 'GET, HEAD'],
  ]) {
    const res = await fetch(`${server.url}${path}`, { method, ...(method === 'GET' ? {} : { body: '{}' }) });
    assert.equal(res.status, 405, `${method} ${path}`);
    assert.equal(res.headers.get('allow'), allow, `${method} ${path}`);
    const j = await res.json();
    isOpenAiError(j, 405);
    assert.equal(j.error.code, 'method_not_allowed');
  }
  assert.equal((await fetch(`${server.url}/v1/nothing`)).status, 404);
});
