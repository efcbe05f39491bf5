// The web page in Debian's Chromium driven by playwright-core: load it, run 2 and 4 workers on the
// tiny model, see the columns fill and finished steps move into the shared history, steer once,
// see the answer and the statistics. Screenshots (laptop screen, 1366x768) are kept in
// $HOGWILD_WORK/screenshots as the test's artifacts; 8 workers get a screenshot too.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { requireSetup, requireJs, startServer, WORK } from './harness.mjs';

requireSetup('playwright-core');
const CHROMIUM = process.env.CHROMIUM || '/usr/bin/chromium';
if (!existsSync(CHROMIUM)) {
  console.log(`skip: ${CHROMIUM} missing (apt-get install chromium; scripts/setup.sh does)`);
  process.exit(77);
}
const { chromium } = requireJs('playwright-core');
const SHOTS = join(WORK, 'screenshots');

let server, browser;
before(async () => {
  mkdirSync(SHOTS, { recursive: true });
  server = await startServer();
  browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
});
after(async () => {
  await browser?.close();
  await server?.stop();
});

async function openPage() {
  const page = await browser.newPage({ viewport: { width: 1366, height: 768 } });
  const errors = [];
  page.on('pageerror', (e) => errors.push(String(e)));
  page.on('console', (m) => { if (m.type() === 'error') errors.push(m.text()); });
  await page.goto(server.url + '/');
  await page.waitForFunction(() => document.getElementById('model').textContent.startsWith('model:'));
  return { page, errors };
}

for (const workers of [2, 4]) {
  test(`${workers} workers: columns fill, steps reach the history, a note steers, answer and stats`, async () => {
    const { page, errors } = await openPage();
    await page.selectOption('#workers', String(workers));
    await page.fill('#budget', '1500');
    await page.fill('#seed', '7');
    await page.fill('#temperature', '1');
    // Steer once while it runs, the moment the session's first event enables Send. The tiny
    // model's whole run takes about a second; on a loaded machine the browser round trips of a
    // driver-side fill + click outlasted it (the button was disabled again by then), so the page
    // itself types the note and presses Send when the button turns on.
    await page.evaluate(() => {
      const note = document.getElementById('note');
      const send = document.getElementById('send-note');
      new MutationObserver((_, observer) => {
        if (send.disabled) return;
        observer.disconnect();
        note.value = 'Remember to check the smallest case.';
        send.click();
      }).observe(send, { attributes: true, attributeFilter: ['disabled'] });
    });
    // A column shows its worker's unfinished step and empties when the step ends, so a column may
    // hold only a short step header once the run is over; the page records the longest text each
    // column showed while it ran (a loaded machine may poll only after the end).
    await page.evaluate(() => {
      window.longestColumn = [];
      new MutationObserver(() => {
        document.querySelectorAll('#workers-grid .worker .body').forEach((c, i) => {
          window.longestColumn[i] = Math.max(window.longestColumn[i] ?? 0, c.textContent.length);
        });
      }).observe(document.getElementById('workers-grid'), { childList: true, subtree: true, characterData: true });
    });
    await page.click('#run');
    // Every worker's column gets text.
    await page.waitForFunction((n) => {
      const seen = window.longestColumn;
      return document.querySelectorAll('#workers-grid .worker .body').length === n &&
        seen.length === n && seen.every((len) => len > 20);
    }, workers);
    const names = await page.$$eval('#workers-grid .worker .head span:first-child', (s) => s.map((x) => x.textContent));
    assert.deepEqual(names, ['Alice', 'Bob', 'Carol', 'Dave'].slice(0, workers));
    // The note enters the history at the next serial step.
    await page.waitForSelector('#history .entry.note', { timeout: 120000 });
    const note = await page.textContent('#history .entry.note');
    assert.match(note, /Note from User · serial step \d+/);
    assert.match(note, /Remember to check the smallest case\./);
    // Finished steps in the shared history, from workers.
    await page.waitForFunction(() => document.querySelectorAll('#history .entry:not(.note)').length >= 2);
    await page.screenshot({ path: join(SHOTS, `workers-${workers}-running.png`) });
    // The end: status, answer box and statistics.
    await page.waitForFunction(() => document.getElementById('status').textContent.startsWith('done'), null, { timeout: 120000 });
    const stats = await page.$$eval('#stats tr', (rows) => Object.fromEntries(rows.map((r) => [r.cells[0].textContent, r.cells[1].textContent])));
    // The history grows with every finished step: the 4096-token context ends the run first.
    assert.ok(Number(stats['serial steps']) > 0 && Number(stats['serial steps']) <= 1500);
    assert.match(stats['stop reason'], /^(budget|max_context)$/);
    for (const n of names) assert.ok(Number(stats[`tok/s ${n}`]) > 0, `tok/s of ${n}`);
    assert.ok(Number(stats['tok/s total']) > 0);
    const history = await page.$$eval('#history .entry .who', (e) => e.map((x) => x.textContent));
    assert.ok(history.some((h) => h.startsWith('Alice · step')));
    await page.screenshot({ path: join(SHOTS, `workers-${workers}-done.png`) });
    assert.deepEqual(errors, []);
    await page.close();
  });
}

test('8 workers fit a laptop screen: two rows of four columns, all visible', async () => {
  const { page, errors } = await openPage();
  await page.selectOption('#workers', '8');
  await page.fill('#budget', '150');
  await page.click('#run');
  await page.waitForFunction(() => document.getElementById('status').textContent.startsWith('done'), null, { timeout: 120000 });
  const boxes = await page.$$eval('#workers-grid .worker', (cols) => cols.map((c) => {
    const r = c.getBoundingClientRect();
    return { x: r.x, y: r.y, w: r.width, h: r.height };
  }));
  assert.equal(boxes.length, 8);
  assert.equal(new Set(boxes.map((b) => Math.round(b.y))).size, 2, 'two rows');
  for (const b of boxes) {
    assert.ok(b.x >= 0 && b.x + b.w <= 1366 && b.y + b.h <= 768, JSON.stringify(b));
    assert.ok(b.w >= 200 && b.h >= 100, JSON.stringify(b));
  }
  await page.screenshot({ path: join(SHOTS, 'workers-8-done.png') });
  assert.deepEqual(errors, []);
  await page.close();
});

test('math and Markdown render; HTML in the model text stays text', async () => {
  const { page } = await openPage();
  const out = await page.evaluate(() => {
    const div = document.createElement('div');
    div.innerHTML = window.hogwild.renderText(
      'So $\\frac{1}{2} + x_1$ and $$\\sum_{k=1}^{n} k$$ is **bold** <img src=x onerror="window.bad=1"> <script>window.bad=2</script> [a](javascript:alert(1))');
    document.body.append(div);
    return {
      katex: div.querySelectorAll('.katex').length,
      display: div.querySelectorAll('.katex-display').length,
      strong: div.querySelector('strong')?.textContent,
      img: div.querySelectorAll('img').length,
      script: div.querySelectorAll('script').length,
      jsLinks: [...div.querySelectorAll('a')].filter((a) => a.href.startsWith('javascript')).length,
      text: div.textContent,
      bad: window.bad ?? null,
    };
  });
  assert.equal(out.katex, 2);
  assert.equal(out.display, 1);
  assert.equal(out.strong, 'bold');
  assert.equal(out.img, 0);
  assert.equal(out.script, 0);
  assert.equal(out.jsLinks, 0);
  assert.match(out.text, /<img src=x/);
  assert.equal(out.bad, null);
  await page.close();
});
