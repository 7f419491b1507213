// tests/browser/report.test.mjs — the HTML report in headless Chromium (issue 6 §3).
// A comparison built by the real `parity` binary (tests/browser/demo.mjs: small tensors written by
// torch, golden fp32 vs target bf16, `parity compare --json`, `parity report`), and a synthetic
// comparison with every analysis key (bench/report_synth.mjs, through `parity report`), are opened:
// no console error, no network request, charts drawn with the right number of points and cells, table
// sorting/filtering/expansion, first divergence and diagnosis shown, an XSS name rendered as text.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import { openReport, sourceDir, binaryDir, parityBin } from './browser.mjs';

const work = fs.mkdtempSync(path.join(os.tmpdir(), 'parity-report-test-'));
after(() => fs.rmSync(work, { recursive: true, force: true }));

function synthReport() {
  const json = path.join(work, 'synth.json');
  execFileSync(process.execPath, [path.join(sourceDir, 'bench/report_synth.mjs'), '300', json, '--steps', '3', '--xss', '--nan'], { stdio: 'pipe' });
  const html = path.join(work, 'synth.html');
  execFileSync(parityBin, ['report', json, '-o', html], { stdio: 'pipe' });
  return { json: JSON.parse(fs.readFileSync(json, 'utf8')), html };
}

let synth, r;
before(async () => {
  synth = synthReport();
  r = await openReport(synth.html);
  r.dialogs = [];
  r.page.on('dialog', (d) => { r.dialogs.push(d.message()); d.dismiss(); });
});
after(async () => { if (r) await r.close(); });

// The report forbids eval (its Content-Security-Policy), so waitForFunction's string predicates cannot
// run there: poll from node instead.
async function waitShown(page, n) {
  const deadline = Date.now() + 10000;
  let shown;
  while (Date.now() < deadline) {
    shown = await page.evaluate(() => document.getElementById('sec-table').dataset.shown);
    if (shown === String(n)) return;
    await new Promise((res) => setTimeout(res, 30));
  }
  assert.fail(`table shows ${shown} rows, expected ${n}`);
}
const dataset = (page, id) => page.evaluate((sid) => ({ ...document.getElementById(sid).dataset }), id);
const tableOrder = (page) => page.evaluate(() => window.parityReport.table.order());
const shownRows = (page) => page.$$eval('#event-table .vt-row', (rows) => rows.map((row) => Number(row.dataset.idx)));

test('opens without console errors and without any network request', async () => {
  assert.deepEqual(r.errors, []);
  assert.deepEqual(r.requests, []);
  assert.deepEqual(r.dialogs, []);
});

test('header shows the verdict and the configuration differences', async () => {
  assert.equal(await r.page.textContent('#overall-verdict'), synth.json.summary.verdict);
  const diff = await r.page.textContent('#config-diff');
  assert.match(diff, /allow_tf32/);
});

test('first divergence, suspects and diagnosis are shown', async () => {
  const fd = synth.json.first_divergence;
  const card = await r.page.textContent('#card-first-divergence');
  assert.ok(card.includes(fd.name), card);
  const suspects = await r.page.$$eval('.card.suspect h3', (hs) => hs.map((h) => h.textContent));
  assert.deepEqual(suspects, synth.json.suspects.map((s) => s.event));
  const diag = await r.page.textContent('.card.diag');
  assert.ok(diag.includes(synth.json.diagnosis[0].title) && diag.includes(synth.json.diagnosis[0].advice), diag);
});

test('error profile draws one point per event, the first divergence and the suspects', async () => {
  const ds = await dataset(r.page, 'sec-profile');
  const finite = synth.json.rows.filter((row) => Number.isFinite(Number(row.noise_ratio))).length;
  assert.equal(Number(ds.points), finite);
  assert.equal(Number(ds.cosinePoints), synth.json.rows.length);
  assert.equal(Number(ds.firstDivergence), synth.json.first_divergence.row);
  assert.equal(Number(ds.suspects), synth.json.suspects.length);
  // The chart instance itself holds those points (not only the attribute).
  const n = await r.page.evaluate(() => window.parityReport.charts.profile.getOption().series
    .filter((s) => s.id.startsWith('ev-')).reduce((k, s) => k + s.data.filter((d) => d[1] !== null).length, 0));
  assert.equal(n, finite);
});

test('heatmap has one cell per module and metric, and a layers x steps map', async () => {
  const ds = await dataset(r.page, 'sec-heatmap');
  const modules = new Set(synth.json.rows.map((row) => row.module));
  assert.equal(Number(ds.rows), modules.size);
  assert.equal(Number(ds.cols), 5);  // noise ratio, rel L2, 1-cos, max abs, max rel (KL is NaN throughout)
  assert.equal(Number(ds.cells), modules.size * 5);
  const n = await r.page.evaluate(() => window.parityReport.charts.heatmap.getOption().series[0].data.length);
  assert.equal(n, Number(ds.cells));
  // layers x steps: one cell per (layer, step) pair present
  const layerOf = (m) => { const k = /layers\.\d+/.exec(m); return k ? 'model.' + k[0] : m.split('.')[0]; };
  const pairs = new Set(synth.json.rows.map((row) => layerOf(row.module) + '@' + row.step));
  assert.equal(Number(ds.steps), 3);
  assert.equal(Number(ds.stepCells), pairs.size);
});

test('the table sorts by a column both ways, NaN last', async () => {
  const { page } = r;
  await page.click('#event-table .vt-head [data-key="cosine"]');
  let order = await tableOrder(page);
  const cos = (i) => synth.json.rows[i].metrics.cosine;
  for (let k = 1; k < order.length; ++k) assert.ok(cos(order[k - 1]) <= cos(order[k]));
  assert.equal((await shownRows(page))[0], order[0]);
  await page.click('#event-table .vt-head [data-key="cosine"]');
  order = await tableOrder(page);
  for (let k = 1; k < order.length; ++k) assert.ok(cos(order[k - 1]) >= cos(order[k]));
  assert.equal(await page.getAttribute('#event-table .vt-head [data-key="cosine"]', 'data-sort'), 'desc');
  await page.click('#event-table .vt-head [data-key="idx"]');
  assert.deepEqual((await tableOrder(page)).slice(0, 3), [0, 1, 2]);
});

test('the table filters by name, verdict and module', async () => {
  const { page } = r;
  const rows = synth.json.rows;
  await page.fill('#filter-name', 'softmax');
  await waitShown(page, rows.filter((row) => row.name.includes('softmax')).length);
  await page.fill('#filter-name', '');
  await page.selectOption('#filter-verdict', 'fail');
  const fails = rows.filter((row) => row.verdict === 'fail').length;
  assert.equal(Number((await dataset(page, 'sec-table')).shown), fails);
  for (const idx of await shownRows(page)) assert.equal(rows[idx].verdict, 'fail');
  await page.selectOption('#filter-verdict', '');
  await page.fill('#filter-module', 'layers.2.mlp');
  await waitShown(page, rows.filter((row) => row.module.includes('layers.2.mlp')).length);
  await page.fill('#filter-module', '/^model\\.layers\\.[01]\\.norm$/');
  await waitShown(page, rows.filter((row) => /^model\.layers\.[01]\.norm$/.test(row.module)).length);
  await page.fill('#filter-module', '');
  await waitShown(page, rows.length);
});

test('a row expands to all its metrics and statistics', async () => {
  const { page } = r;
  await page.click('#event-table .vt-row[data-idx="0"]');
  const detail = await page.textContent('#event-table .vt-detail[data-detail="0"]');
  for (const k of ['sqnr_db', 'ulp_max', 'thousandth_ratio', 'absmax', 'golden file']) assert.ok(detail.includes(k), k);
  await page.click('#event-table .vt-row[data-idx="0"]');
  assert.equal(await page.$('#event-table .vt-detail[data-detail="0"]'), null);
});

test('a name that is HTML renders as text and runs nothing', async () => {
  const { page } = r;
  const xssName = synth.json.rows[1].name;
  assert.equal(xssName, '<script>alert(1)</script>');
  const cell = await page.textContent('#event-table .vt-row[data-idx="1"] [data-col="name"]');
  assert.equal(cell, xssName);
  assert.equal(await page.textContent('#event-table .vt-row[data-idx="1"] [data-col="reason"]'), synth.json.rows[1].reason);
  // Nothing the data names became an element.
  assert.equal(await page.$$eval('img', (imgs) => imgs.length), 0);
  assert.equal(await page.$$eval('b', (bs) => bs.filter((b) => b.textContent === 'not bold').length), 0);
  assert.deepEqual(r.dialogs, []);
});

test('NaN/Inf origin and its contaminated chain are shown', async () => {
  const { page } = r;
  const origin = synth.json.overflow.target.origins[0];
  assert.ok((await page.textContent('#sec-overflow')).includes(origin.event));
  const chain = await page.$$eval('#nan-chain li', (lis) => lis.length);
  const contaminated = synth.json.rows.filter((row) => row.metrics.target_stats.nan_count > 0).length;
  assert.equal(chain, Math.min(40, contaminated));
});

test('clicking a suspect opens its event in the table', async () => {
  const { page } = r;
  await page.click('.card.suspect .jump');
  const idx = await page.$eval('#event-table .vt-detail', (d) => Number(d.dataset.detail));
  assert.ok(synth.json.rows[idx].name.startsWith(synth.json.suspects[0].event));
});

test('a screenshot is saved for the record', async () => {
  const { page } = r;
  await page.evaluate(() => window.scrollTo(0, 0));
  const out = path.join(binaryDir, 'report-screenshot-synthetic.png');
  await page.screenshot({ path: out, fullPage: true });
  assert.ok(fs.statSync(out).size > 10000);
  assert.deepEqual(r.errors, []);
  assert.deepEqual(r.requests, []);
});

test('a large comparison embeds its worst 5,000 rows and says so in the header', async () => {
  const json = path.join(work, 'big.json');
  execFileSync(process.execPath, [path.join(sourceDir, 'bench/report_synth.mjs'), '6000', json, '--steps', '2'], { stdio: 'pipe' });
  const html = path.join(work, 'big.html');
  execFileSync(parityBin, ['report', json, '-o', html], { stdio: 'pipe' });
  const big = await openReport(html);
  try {
    assert.deepEqual(big.errors, []);
    const rows = JSON.parse(fs.readFileSync(json, 'utf8')).rows.length;
    assert.match(await big.page.textContent('#rows-shown'), new RegExp(`shows 5,?000 of ${rows.toLocaleString('en-US')}|shows 5,?000 of ${rows}`));
    assert.equal(await big.page.evaluate(() => document.getElementById('sec-table').dataset.shown), '5000');
  } finally {
    await big.close();
  }
});
