// The page of `hogwild serve` (docs/SERVER.md "Web page"): sends the problem as a streaming
// /v1/chat/completions request with a `hogwild` object, and draws the stream's events: each
// worker's current step live in its own column, finished steps moving into the shared history,
// notes sent through the steering box, the final answer and the statistics.
import 'katex/dist/katex.css';
import './style.css';
import { renderText } from './render.js';

const COLOURS = ['#e8590c', '#1c7ed6', '#2b8a3e', '#9c36b5', '#c2255c', '#0b7285', '#5f3dc4', '#a61e4d'];
const $ = (id) => document.getElementById(id);

const state = {
  model: '',
  sessionId: null,
  abort: null,
  workers: [],   // {name, step, tokens, text, el, body, meta, dirty}
  history: 0,
  answer: '',
};

function apiHeaders() {
  const h = { 'Content-Type': 'application/json' };
  const key = $('api-key').value || localStorage.getItem('hogwild-api-key') || '';
  if (key) h.Authorization = `Bearer ${key}`;
  return h;
}

function showError(msg) {
  const e = $('error');
  e.textContent = msg;
  e.hidden = !msg;
  if (msg) setTimeout(() => { if (e.textContent === msg) e.hidden = true; }, 8000);
}

function setStatus(text, cls) {
  const s = $('status');
  s.textContent = text;
  s.className = `badge ${cls || ''}`;
}

async function errorMessage(res) {
  try {
    const j = await res.json();
    return j.error?.message || `HTTP ${res.status}`;
  } catch {
    return `HTTP ${res.status}`;
  }
}

async function loadModel() {
  try {
    const res = await fetch('/v1/models', { headers: apiHeaders() });
    if (res.status === 401) {
      $('key-box').hidden = false;
      $('model').textContent = 'API key needed';
      return;
    }
    if (res.status === 503) {
      $('model').textContent = 'model loading…';
      setTimeout(loadModel, 2000);
      return;
    }
    const j = await res.json();
    state.model = j.data[0].id;
    $('model').textContent = `model: ${state.model}`;
  } catch (e) {
    $('model').textContent = 'server unreachable';
    setTimeout(loadModel, 3000);
  }
}

// ---- drawing ------------------------------------------------------------------------------

function buildColumns(names) {
  const grid = $('workers-grid');
  grid.replaceChildren();
  const n = names.length;
  grid.style.setProperty('--cols', String(n <= 4 ? n : Math.ceil(n / 2)));
  grid.classList.toggle('two-rows', n > 4);
  state.workers = names.map((name, w) => {
    const el = document.createElement('div');
    el.className = 'worker';
    el.dataset.worker = String(w);
    el.style.setProperty('--wc', COLOURS[w % COLOURS.length]);
    const head = document.createElement('div');
    head.className = 'head';
    const who = document.createElement('span');
    who.textContent = name;
    const meta = document.createElement('span');
    meta.className = 'muted';
    head.append(who, meta);
    const body = document.createElement('div');
    body.className = 'body md';
    el.append(head, body);
    grid.append(el);
    return { name, step: 0, tokens: 0, text: '', el, body, meta, dirty: true };
  });
}

function addHistory(who, colour, text, cls) {
  const e = document.createElement('div');
  e.className = `entry ${cls || ''}`;
  if (colour) e.style.setProperty('--wc', colour);
  const h = document.createElement('div');
  h.className = 'who';
  h.textContent = who;
  const b = document.createElement('div');
  b.className = 'md';
  b.innerHTML = renderText(text);
  e.append(h, b);
  const pane = $('history');
  const atEnd = pane.scrollTop + pane.clientHeight >= pane.scrollHeight - 20;
  pane.append(e);
  if (atEnd) pane.scrollTop = pane.scrollHeight;
  state.history += 1;
  $('history-count').textContent = `(${state.history} steps)`;
}

let frame = 0;
function scheduleDraw() {
  if (frame) return;
  frame = setTimeout(() => {
    frame = 0;
    for (const w of state.workers) {
      if (!w.dirty) continue;
      w.dirty = false;
      w.meta.textContent = `step ${w.step} · ${w.tokens} tok`;
      w.body.innerHTML = renderText(w.text);
      w.body.scrollTop = w.body.scrollHeight;
    }
  }, 80);
}

function showStats(stats, stopReason) {
  const rows = [
    ['stop reason', stopReason],
    ['serial steps', stats.serial_steps],
    ['prompt tokens', stats.prompt_tokens],
    ['generated tokens', stats.total_tokens],
    ['decode time', `${stats.decode_seconds.toFixed(2)} s`],
    ['tok/s total', stats.tokens_per_second.toFixed(1)],
  ];
  stats.tokens_per_second_per_worker.forEach((t, w) => {
    rows.push([`tok/s ${state.workers[w]?.name ?? w}`, t.toFixed(1)]);
  });
  const table = $('stats');
  table.replaceChildren();
  for (const [k, v] of rows) {
    const tr = table.insertRow();
    tr.insertCell().textContent = k;
    tr.insertCell().textContent = String(v);
  }
}

// ---- the stream -----------------------------------------------------------------------------

function onHogwild(ev) {
  const w = state.workers[ev.worker];
  switch (ev.event) {
    case 'session':
      state.sessionId = ev.session_id;
      buildColumns(ev.workers);
      $('note').disabled = false;
      $('send-note').disabled = false;
      break;
    case 'step_start':
      if (!w) return;
      w.step = ev.step;
      w.text = ev.text;
      w.dirty = true;
      break;
    case 'token':
      if (!w) return;
      w.text += ev.text;
      w.tokens += 1;
      w.dirty = true;
      break;
    case 'step_end':
      if (!w) return;
      addHistory(`${w.name} · step ${ev.step}`, COLOURS[ev.worker % COLOURS.length], ev.text);
      w.text = '';
      w.dirty = true;
      break;
    case 'note':
      addHistory(`Note from ${ev.author} · serial step ${ev.serial_step}`, null, ev.text, 'note');
      $('steer-status').textContent = `note in the shared history at serial step ${ev.serial_step}`;
      break;
    case 'stats':
      showStats(ev.stats, ev.stop_reason);
      break;
  }
  scheduleDraw();
}

function onChunk(j) {
  if (j.error) throw new Error(j.error.message);
  if (j.hogwild) return onHogwild(j.hogwild);
  for (const c of j.choices || []) {
    if (c.delta?.content) {
      state.answer += c.delta.content;
      $('answer').classList.remove('muted');
      $('answer').innerHTML = renderText(`$\\boxed{${state.answer}}$`);
    }
    if (c.finish_reason) setStatus(`done (${c.finish_reason})`, 'done');
  }
}

async function run(ev) {
  ev.preventDefault();
  showError('');
  const problem = $('problem').value.trim();
  if (!problem) return;
  const body = {
    model: state.model,
    messages: [{ role: 'user', content: problem }],
    stream: true,
    stream_options: { include_usage: true },
    temperature: Number($('temperature').value),
    hogwild: {
      workers: Number($('workers').value),
      layout: $('layout').value,
      budget: Number($('budget').value),
    },
  };
  if ($('collab').value !== '') body.hogwild.collab_every = Number($('collab').value);
  if ($('seed').value !== '') body.seed = Number($('seed').value);
  state.answer = '';
  state.history = 0;
  state.sessionId = null;
  $('history').replaceChildren();
  $('history-count').textContent = '';
  $('answer').textContent = '—';
  $('answer').classList.add('muted');
  $('stats').replaceChildren();
  $('steer-status').textContent = '';
  $('run').disabled = true;
  $('stop').disabled = false;
  setStatus('running', 'running');
  state.abort = new AbortController();
  try {
    const res = await fetch('/v1/chat/completions', {
      method: 'POST', headers: apiHeaders(), body: JSON.stringify(body), signal: state.abort.signal,
    });
    if (res.status === 401) $('key-box').hidden = false;
    if (!res.ok) throw new Error(await errorMessage(res));
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
          if (data === '[DONE]') continue;
          onChunk(JSON.parse(data));
        }
      }
    }
    if ($('status').textContent === 'running') setStatus('done', 'done');
  } catch (e) {
    if (e.name === 'AbortError') setStatus('stopped', '');
    else {
      setStatus('error', 'error');
      showError(e.message);
    }
  } finally {
    $('run').disabled = false;
    $('stop').disabled = true;
    $('note').disabled = true;
    $('send-note').disabled = true;
    state.abort = null;
    scheduleDraw();
  }
}

async function steer(ev) {
  ev.preventDefault();
  const text = $('note').value.trim();
  if (!text || !state.sessionId) return;
  $('steer-status').textContent = 'sending…';
  try {
    const res = await fetch(`/v1/hogwild/sessions/${encodeURIComponent(state.sessionId)}/messages`, {
      method: 'POST', headers: apiHeaders(), body: JSON.stringify({ role: 'user', content: text }),
    });
    if (!res.ok) throw new Error(await errorMessage(res));
    $('note').value = '';
    $('steer-status').textContent = 'note queued for the next serial step';
  } catch (e) {
    $('steer-status').textContent = '';
    showError(e.message);
  }
}

$('run-form').addEventListener('submit', run);
$('stop').addEventListener('click', () => state.abort?.abort());
$('steer-form').addEventListener('submit', steer);
$('api-key').addEventListener('change', () => {
  localStorage.setItem('hogwild-api-key', $('api-key').value);
  loadModel();
});
// The renderer, for the browser test (tests/server/browser.test.mjs) and the console.
window.hogwild = { renderText };
buildColumns(['Alice', 'Bob']);
loadModel();
