// tests/browser/scan.test.mjs — the sensitivity-scan section (web/src/scan.js) in headless Chromium, from
// a real `python -m parity.sensitivity` result (tests/fixtures/report/scan.json: the outlier-heavy tiny
// Llama of tests/python/test_scan.py, every GEMM lowered to int8) through `parity report`: one bar per
// unit, most sensitive on top, the units the plan keeps in fp32 marked, the plan's figures, no error.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import { openReport, sourceDir, parityBin } from './browser.mjs';

const fixture = path.join(sourceDir, 'tests/fixtures/report/scan.json');
const scan = JSON.parse(fs.readFileSync(fixture, 'utf8'));
const work = fs.mkdtempSync(path.join(os.tmpdir(), 'parity-scan-test-'));
let r;

before(async () => {
  const html = path.join(work, 'scan.html');
  execFileSync(parityBin, ['report', fixture, '-o', html], { stdio: 'pipe' });
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

test('one bar per unit, most sensitive on top, kept-fp32 units in red', async () => {
  assert.equal(await r.page.evaluate(() => document.getElementById('sec-scan').hidden), false);
  const opt = await r.page.evaluate(() => {
    const o = window.parityReport.charts['scan-0'].getOption();
    return { cats: o.yAxis[0].data, bars: o.series[0].data.map((d) => ({ v: d.value[1], c: d.itemStyle.color })) };
  });
  assert.equal(opt.cats.length, scan.units.length);
  assert.equal(opt.cats[opt.cats.length - 1], scan.units[0].unit);  // category axis runs bottom-up
  assert.equal(opt.bars[opt.bars.length - 1].v, scan.units[0].kld.mean);
  const red = opt.bars.filter((b) => b.c === '#c0392b').length;
  assert.equal(red, scan.plan.kept_fp32.length);
  assert.ok(red > 0 && red < scan.units.length);
});

test('the plan table names the kept units and the budget', async () => {
  const text = await r.page.textContent('#scan-plan-0');
  for (const u of scan.plan.kept_fp32) assert.ok(text.includes(u), u);
  assert.match(text, /meets the budget/);
  assert.match(text, /forward passes/);
});
