// tests/browser/rough_edges.test.mjs — issue 12 §6 in headless Chromium: the events table opens sorted
// worst-first, suspect cards come in rank (score) order whatever order the JSON lists them in, the
// NaN/Inf section tells intended -Inf masks from overflow, and every section names the runs it
// compares. A synthetic comparison with every analysis key (bench/report_synth.mjs, as report.test.mjs
// uses) with its suspects listed in reverse and -Inf masks planted in a few rows (identical in both
// runs, as an attention mask is), plus an eval ppl fixture, all through `parity report`.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import { openReport, sourceDir, parityBin } from './browser.mjs';

const work = fs.mkdtempSync(path.join(os.tmpdir(), 'parity-rough-edges-test-'));
const severity = { pass: 0, warn: 1, fail: 2, error: 3 };
let synth, r, maskRows;

before(async () => {
  const json = path.join(work, 'synth.json');
  execFileSync(process.execPath, [path.join(sourceDir, 'bench/report_synth.mjs'), '300', json, '--steps', '2', '--nan'], { stdio: 'pipe' });
  synth = JSON.parse(fs.readFileSync(json, 'utf8'));
  assert.ok(synth.suspects.length >= 2);
  synth.suspects.reverse();  // lowest score first in the JSON: the cards must still open with the highest
  // three clean rows become attention-mask carriers: 64 × -Inf in both runs, no NaN, no +Inf
  maskRows = synth.rows.map((row, i) => [row, i]).filter(([row]) => row.metrics && row.metrics.target_stats.nan_count === 0 &&
    row.metrics.target_stats.pinf_count === 0 && row.metrics.target_stats.ninf_count === 0).slice(0, 3).map(([, i]) => i);
  for (const i of maskRows) {
    for (const side of ['golden_stats', 'target_stats']) synth.rows[i].metrics[side].ninf_count = 64;
  }
  // fp16 gradients measured by the overflow analysis: one underflows, two do not.
  const grad = (name, zero, underflowing) => ({ name, module: name.split('/')[0], step: 0, rank: 0, dtype: 'f16', numel: 1024,
    zero_fraction: zero, subnormal_fraction: 0.01, underflowing });
  synth.overflow.target.grad_underflow = [grad('l0/backward/grad/weight', 0.9, true), grad('l1/backward/grad/weight', 0.02, false),
    grad('l2/backward/grad/weight', 0.03, false)];
  // an error of 5e9 rounding units (an overflow's): its axis label is as wide as labels get
  synth.rows.find((row) => typeof row.noise_ratio === 'number').noise_ratio = 5e9;
  // record names as long as a real capture's
  synth.overflow.target.origins[0].inputs[0].name = 'model.layers.11.self_attn/softmax#0/forward/input/0';
  fs.writeFileSync(json, JSON.stringify(synth));
  const html = path.join(work, 'rough.html');
  // `parity overflow` of the comparison's target, as the demo passes it too: the same analysis.
  const standalone = path.join(work, 'overflow.json');
  fs.writeFileSync(standalone, JSON.stringify(synth.overflow.target));
  execFileSync(parityBin, ['report', json, standalone, path.join(sourceDir, 'tests/fixtures/report/eval_ppl.json'), '-o', html], { stdio: 'pipe' });
  r = await openReport(html);
});
after(async () => {
  if (r) await r.close();
  fs.rmSync(work, { recursive: true, force: true });
});

test('no console error, no network request', () => {
  assert.deepEqual(r.errors, []);
  assert.deepEqual(r.requests, []);
});

test('the events table opens worst-first', async () => {
  const order = await r.page.evaluate(() => window.parityReport.table.order());
  assert.equal(order.length, synth.rows.length);
  assert.equal(await r.page.getAttribute('#event-table .vt-head [data-key="verdict"]', 'data-sort'), 'desc');
  const noise = (i) => { const v = synth.rows[i].noise_ratio; return typeof v === 'number' ? v : NaN; };
  for (let k = 1; k < order.length; ++k) {
    const a = synth.rows[order[k - 1]], b = synth.rows[order[k]];
    assert.ok(severity[a.verdict] >= severity[b.verdict], `${a.verdict} before ${b.verdict} at ${k}`);
    if (a.verdict === b.verdict && !Number.isNaN(noise(order[k]))) {
      assert.ok(!Number.isNaN(noise(order[k - 1])) && noise(order[k - 1]) >= noise(order[k]), `noise order at ${k}`);
    }
  }
  // the first row on screen is the worst one
  const first = await r.page.$eval('#event-table .vt-row', (row) => Number(row.dataset.idx));
  assert.equal(first, order[0]);
  assert.equal(synth.rows[order[0]].verdict, Object.keys(severity).reduce((w, v) => (synth.rows.some((x) => x.verdict === v) ? v : w), 'pass'));
});

test('suspect cards are in rank order', async () => {
  const cards = await r.page.$$eval('.card.suspect', (cs) => cs.map((c) => ({ name: c.querySelector('h3').textContent, kind: c.querySelector('.kind').textContent })));
  const expected = [...synth.suspects].sort((a, b) => b.score - a.score);
  assert.deepEqual(cards.map((c) => c.name), expected.map((s) => s.event));
  assert.match(cards[0].kind, /^suspect #1 · score 6\.2/);
});

test('only underflowing gradients are listed as underflowing', async () => {
  // Issue 31 §4: the heading said "Gradients underflowing (39)" over every fp16/bf16 gradient measured.
  assert.match(await r.page.textContent('#sec-overflow'), /Gradients underflowing \(1 of 3 fp16\/bf16 gradients\)/);
  const listed = await r.page.textContent('#grad-underflow');
  assert.ok(listed.includes('l0/backward/grad/weight') && !listed.includes('l1/backward/grad/weight'), listed);
});

test('the error profile draws its y-axis labels whole', async () => {
  // Issue 31 §4: a fixed 70 px margin cut "100,000,000" to "0,000,000". Each panel's plot must start to
  // the right of its widest label (measured in the label's own font), and both panels at one x.
  const fit = await r.page.evaluate(() => {
    const chart = window.parityReport.charts.profile;
    const ctx = document.createElement('canvas').getContext('2d');
    return [0, 1].map((i) => {
      const axis = chart.getModel().getComponent('yAxis', i).axis;
      ctx.font = axis.model.getModel('axisLabel').getFont();
      const widest = Math.max(...axis.getViewLabels().map((l) => ctx.measureText(l.formattedLabel).width));
      const rect = chart.getModel().getComponent('grid', i).coordinateSystem.getRect();
      return { widest, x: rect.x };
    });
  });
  for (const f of fit) assert.ok(f.x >= f.widest + 8, JSON.stringify(fit));
  assert.equal(fit[0].x, fit[1].x);
});

test('a NaN/Inf origin is shown once, its record names readable', async () => {
  // Issue 31 §4: the comparison's analysis of its target and `parity overflow` of the same run drew every
  // origin twice, and the names in the origin's table broke letter by letter in a narrow card.
  const cards = await r.page.$$eval('#sec-overflow .card.first', (cs) => cs.map((c) => c.dataset.origin));
  assert.deepEqual(cards, synth.overflow.target.origins.map((o) => o.event));
  const nameCell = await r.page.$eval('#sec-overflow .card.first table td', (td) => {
    const b = td.getBoundingClientRect();
    return { width: b.width, lines: Math.round(b.height / parseFloat(getComputedStyle(td).lineHeight || '16')) };
  });
  assert.ok(nameCell.width >= 150 && nameCell.lines <= 3, JSON.stringify(nameCell));
});

test('the NaN/Inf section tells intended -Inf masks from overflow', async () => {
  const masks = await r.page.$$eval('#mask-chain li', (lis) => lis.map((li) => li.textContent));
  assert.equal(masks.length, maskRows.length);
  for (const [k, i] of maskRows.entries()) assert.ok(masks[k].startsWith(synth.rows[i].name) && masks[k].endsWith('64 × -Inf'), masks[k]);
  const chain = await r.page.$$eval('#nan-chain li', (lis) => lis.map((li) => li.textContent));
  const overflowRows = synth.rows.filter((row) => row.metrics && row.metrics.target_stats.nan_count > 0);
  assert.equal(chain.length, Math.min(40, overflowRows.length));
  for (const i of maskRows) assert.ok(!chain.some((t) => t.startsWith(synth.rows[i].name + ' ')), 'a mask is not in the overflow chain');
  assert.match(await r.page.textContent('#sec-overflow'), /Intended masks, not overflow \(3 events/);
});

test('every section names the runs it compares', async () => {
  const golden = synth.golden.source, target = synth.target.source;
  const sections = await r.page.$$eval('section[data-present="1"]', (ss) => ss.map((s) => s.id));
  for (const id of ['sec-diagnosis', 'sec-table', 'sec-profile', 'sec-heatmap', 'sec-overflow', 'sec-eval']) assert.ok(sections.includes(id), id);
  for (const id of sections) {
    if (id === 'sec-eval') continue;
    const text = await r.page.textContent('#' + id);
    assert.ok(text.includes(golden) && text.includes(target), `${id} names ${golden} and ${target}`);
  }
  const ppl = JSON.parse(fs.readFileSync(path.join(sourceDir, 'tests/fixtures/report/eval_ppl.json'), 'utf8'));
  const evalText = await r.page.textContent('#sec-eval');
  assert.ok(evalText.includes(ppl.golden.source) && evalText.includes(ppl.target.source), 'eval names its runs');
});
