// tests/browser/demo.test.mjs — the demo's report (tests/browser/demo_runs.py builds it the way
// `make demo` does, with the real parity binary) in headless Chromium: no console error, no network
// request, every section its results allow, charts with the right number of points and cells, the
// first divergence and the diagnoses of each comparison, and a screenshot for the record
// (<build>/report-screenshot.png).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import { openReport, sourceDir, binaryDir, parityBin } from './browser.mjs';

const work = fs.mkdtempSync(path.join(os.tmpdir(), 'parity-demo-test-'));
const results = {};
let r;

before(async () => {
  // the project's venv (torch 2.x from PyPI): ctest passes it; a plain node run falls back to <source>/.venv
  const py = process.env.PARITY_VENV_PYTHON || path.join(sourceDir, '.venv/bin/python');
  execFileSync(py, [path.join(sourceDir, 'tests/browser/demo_runs.py'), work, parityBin],
    { stdio: ['ignore', 'pipe', 'inherit'], env: { ...process.env, OMP_NUM_THREADS: '2' } });
  for (const k of ['compare', 'train-compare', 'train-curve']) results[k] = JSON.parse(fs.readFileSync(path.join(work, k + '.json'), 'utf8'));
  r = await openReport(path.join(work, 'report.html'));
});
after(async () => {
  if (r) await r.close();
  fs.rmSync(work, { recursive: true, force: true });
});

const ds = (sel) => r.page.evaluate((s) => ({ ...document.querySelector(s).dataset }), sel);
const num = (v) => (typeof v === 'number' ? v : (typeof v === 'string' ? Number(v) : NaN));

// What the heatmap should hold, from the rule in docs/report.md: a row per module (the capture's module,
// else the name without its extension and last component), a cell per metric with a finite value.
function expectedHeatmap(res) {
  const metrics = [(m) => num(m.rel_l2), (m) => 1 - num(m.cosine), (m) => num(m.max_abs), (m) => num(m.max_rel), (m) => num(m.kl)];
  const modules = new Map();
  for (const row of res.rows) {
    let mod = row.module;
    if (!mod) { const s = row.name.replace(/\.(npy|npz|safetensors|pt|pth|bin|h5)(?=$|:)/, '').replace(/[/:]/g, '.'); const i = s.lastIndexOf('.'); mod = i > 0 ? s.slice(0, i) : s; }
    if (!modules.has(mod)) modules.set(mod, []);
    modules.get(mod).push(row);
  }
  let cells = 0;
  for (const rows of modules.values()) {
    cells += rows.some((row) => Number.isFinite(num(row.noise_ratio)) || (row.metrics && Number.isFinite(num(row.metrics.rel_l2)))) ? 1 : 0;
    for (const f of metrics) cells += rows.some((row) => row.metrics && Number.isFinite(f(row.metrics))) ? 1 : 0;
  }
  return { rows: modules.size, cells };
}

test('the demo report opens with no console error and no network request', () => {
  assert.deepEqual(r.errors, []);
  assert.deepEqual(r.requests, []);
});

test('first comparison (the broken attention layer): verdict, first divergence, profile, heatmap, table', async () => {
  const res = results.compare;
  // The words the CLI's last line says (summary.headline), not the row verdict (issue 31 §4: a verdict
  // "error" showed ERROR where the terminal said FAILED).
  assert.equal(res.summary.exit_code, 1);
  assert.equal(await r.page.textContent('#overall-verdict'), 'FAILED');
  assert.equal(res.summary.headline, 'FAILED');
  assert.ok(res.first_divergence, 'the demo has a broken layer, so a first divergence');
  assert.ok((await r.page.textContent('#card-first-divergence')).includes(res.first_divergence.name));
  const prof = await ds('#sec-profile');
  assert.equal(Number(prof.points), res.rows.filter((row) => Number.isFinite(num(row.noise_ratio))).length);
  assert.equal(Number(prof.firstDivergence), res.first_divergence.row);
  const hm = await ds('#sec-heatmap');
  const want = expectedHeatmap(res);
  assert.equal(Number(hm.rows), want.rows);
  assert.equal(Number(hm.cells), want.cells);
  assert.equal(Number((await ds('#sec-table')).shown), res.rows.length);
  assert.equal(await r.page.$$eval('.card.diag', (c) => c.length), (res.diagnosis || []).length);
});

test('curves of the training runs are drawn', async () => {
  const curve = results['train-curve'];
  assert.equal(Number((await ds('#sec-curves')).charts), curve.metrics.filter((m) => m.points.length).length);
});

test('second comparison (captured training, two steps): diagnoses, layers x steps', async () => {
  const res = results['train-compare'];
  await r.page.selectOption('#compare-select', '1');
  assert.equal(await r.page.textContent('#overall-verdict'), res.summary.headline);
  assert.ok(res.summary.headline.startsWith('PASSED'), res.summary.headline);
  assert.equal(await r.page.$$eval('.card.diag', (c) => c.length), res.diagnosis.length);
  const titles = await r.page.$$eval('.card.diag h3', (hs) => hs.map((h) => h.textContent));
  assert.deepEqual(titles, res.diagnosis.map((d) => d.title));
  const prof = await ds('#sec-profile');
  assert.equal(Number(prof.points), res.rows.filter((row) => Number.isFinite(num(row.noise_ratio))).length);
  const hm = await ds('#sec-heatmap');
  assert.equal(Number(hm.steps), new Set(res.rows.map((row) => row.step)).size);
  assert.ok(Number(hm.stepCells) > 0);
  assert.equal(Number((await ds('#sec-table')).rows), res.rows.length);
  assert.deepEqual(r.errors, []);
  await r.page.selectOption('#compare-select', '0');
});

test('compare --html writes the same result into a self-contained report', () => {
  const html = fs.readFileSync(path.join(work, 'compare.html'), 'utf8');
  const m = /<script type="application\/json" id="parity-data">([^<]*)<\/script>/.exec(html);
  assert.ok(m, 'the data element');
  const env = JSON.parse(m[1]);
  assert.equal(env.schema, 'parity.report-data/1');
  const res = env.inputs[0].result;
  assert.equal(res.schema, 'parity.compare/1');
  assert.deepEqual(res.rows.map((row) => row.name), results.compare.rows.map((row) => row.name));
  assert.deepEqual(res.first_divergence, results.compare.first_divergence);
  assert.ok(!/<script[^>]+src=|<link /.test(html), 'nothing loaded from elsewhere');
});

test('a screenshot of the demo report is saved', async () => {
  const out = path.join(binaryDir, 'report-screenshot.png');
  await r.page.evaluate(() => window.scrollTo(0, 0));
  await r.page.screenshot({ path: out, fullPage: true });
  assert.ok(fs.statSync(out).size > 10000);
  assert.deepEqual(r.errors, []);
  assert.deepEqual(r.requests, []);
});
