// tests/browser/sections.test.mjs — the report's curve, rank and evaluation sections in headless
// Chromium: real `parity curve` output of the demo runs when they exist (tests/browser/demo_runs.py
// writes them), plus the documented eval/ranks shapes (tests/fixtures/report/*.json), all through
// `parity report`. Each section is drawn, with the right number of charts and points, and no error.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import { openReport, sourceDir, parityBin } from './browser.mjs';

const fixtures = path.join(sourceDir, 'tests/fixtures/report');
const work = fs.mkdtempSync(path.join(os.tmpdir(), 'parity-sections-test-'));
const load = (f) => JSON.parse(fs.readFileSync(path.join(fixtures, f), 'utf8'));
let r;

// A curve result with a divergence, spikes and a NaN, in parity.curve/1's shape, built from a real
// series shape so the counts below are known.
function curveFixture() {
  const points = [];
  for (let s = 0; s < 60; ++s) {
    const g = 5 * Math.exp(-s / 30) + 1;
    let t = g * (s >= 40 ? 1 + 0.01 * (s - 39) : 1);
    if (s === 33) t = g * 1.5;
    const pt = { step: s, golden: g, target: s === 55 ? 'NaN' : t };
    pt.abs_diff = s === 55 ? 'NaN' : t - g;
    pt.rel_dev = s === 55 ? 'Infinity' : Math.abs(t - g) / g;
    points.push(pt);
  }
  return {
    schema: 'parity.curve/1', verdict: 'fail',
    golden: { path: 'golden/', format: 'csv', metrics: ['loss'] }, target: { path: 'target/', format: 'csv', metrics: ['loss'] },
    only_golden: [], only_target: [], problems: [],
    metrics: [{ metric: 'loss', verdict: 'fail', reasons: ['target NaN at step 55'], tolerance: { rel_tol: 0.02, consecutive: 5, final_tol: 0.01 },
      aligned_steps: 60, divergence_step: 41, nonfinite: { golden: [], target: [55] },
      spikes: { golden: [], target: [{ step: 33, value: points[33].target, median: 2.9, threshold: 3.4 }] },
      final: { window: 3, golden: 1.7, target: 1.8, abs_diff: 0.1, rel_diff: 0.06 }, points }],
  };
}

before(async () => {
  const curve = path.join(work, 'curve.json');
  fs.writeFileSync(curve, JSON.stringify(curveFixture()));
  const html = path.join(work, 'sections.html');
  execFileSync(parityBin, ['report', curve, ...['eval_ppl.json', 'eval_mc.json', 'eval_lmeval.json', 'ranks.json'].map((f) => path.join(fixtures, f)), '-o', html], { stdio: 'pipe' });
  r = await openReport(html);
});
after(async () => {
  if (r) await r.close();
  fs.rmSync(work, { recursive: true, force: true });
});

const ds = (sel) => r.page.evaluate((s) => ({ ...document.querySelector(s).dataset }), sel);

test('no console error, no network request', () => {
  assert.deepEqual(r.errors, []);
  assert.deepEqual(r.requests, []);
});

test('curves: overlay with every step, the divergence step, spikes and NaN marked', async () => {
  const c = await ds('[id^="curve-"][data-metric="loss"]');
  assert.equal(Number(c.points), 60);
  assert.equal(c.divergence, '41');
  assert.equal(Number(c.spikes), 1);
  assert.equal(Number(c.nonfinite), 1);
  const series = await r.page.evaluate(() => Object.entries(window.parityReport.charts).find(([k]) => k.startsWith('curve-'))[1].getOption().series);
  assert.equal(series.find((s) => s.id === 'golden').data.length, 60);
  assert.equal(series.find((s) => s.id === 'target').data.filter((d) => d[1] !== null).length, 59);  // the NaN step is a gap
  assert.equal(series.find((s) => s.id === 'dev').data.length, 60);
});

test('ranks: the inconsistent rank is named with its first step', async () => {
  const text = await r.page.textContent('.ranks-table');
  assert.match(text, /inconsistent/);
  const row = await r.page.$$eval('.ranks-table tr.differs td', (tds) => tds.map((td) => td.textContent));
  assert.deepEqual(row.slice(0, 4), ['2', 'inconsistent', '37', '13']);
  assert.equal(Number((await ds('#sec-ranks')).charts), 1);
});

test('evaluation: PPL/KLD with uncertainties, distributions, per-task accuracy with paired tests', async () => {
  const ppl = load('eval_ppl.json');
  const summary = await r.page.textContent('#ppl-summary-0');
  assert.ok(summary.includes('12.31 ± 0.21') && summary.includes('12.36 ± 0.21'), summary);
  assert.ok(summary.includes('0.0021 ± 1.000e-4'), summary);
  assert.equal(Number((await ds('#kld-dist-0')).points), Object.keys(ppl.kld.percentiles).length);
  assert.equal(Number((await ds('#dp-dist-0')).points), Object.keys(ppl.delta_p.percentiles).length);
  const mc = load('eval_mc.json');
  assert.equal(Number((await ds('#mc-1')).groups), 1 + mc.subjects.length);
  const mcText = await r.page.textContent('#mc-1-table');
  assert.ok(mcText.includes('<b>college_physics</b>'), 'a subject that looks like HTML is shown as text');
  assert.ok(mcText.includes('0.065'), 'McNemar p of the overall row');
  assert.equal(Number((await ds('#lmeval-2')).groups), load('eval_lmeval.json').metrics.length);
  assert.equal(await r.page.$$eval('#sec-eval b', (bs) => bs.filter((b) => b.textContent === 'college_physics').length), 0);
});
