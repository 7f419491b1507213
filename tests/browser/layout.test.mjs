// tests/browser/layout.test.mjs — a comparison of runs laid out differently (docs/layout.md) in headless
// Chromium: the example's one-device golden against its TP-2 run with one rank's weight shard perturbed,
// merged by `parity compare --layout`; the failing weight's row, expanded, shows each TP shard's error
// with the shard that carries it marked, as the compare JSON's `shards` says.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import { openReport, sourceDir, parityBin } from './browser.mjs';

const work = fs.mkdtempSync(path.join(os.tmpdir(), 'parity-layout-test-'));
const WEIGHT = 'layers.1.mlp.down_proj/forward/parameter/weight';
let res, r;

before(async () => {
  const py = process.env.PARITY_VENV_PYTHON || path.join(sourceDir, '.venv/bin/python');
  const env = { ...process.env, PYTHONPATH: path.join(sourceDir, 'python'), OMP_NUM_THREADS: '1' };
  for (const [name, args] of [['golden', ['--tp', '1']], ['shard', ['--tp', '2', '--fault', 'shard']]])
    execFileSync(py, ['-m', 'parity.examples.tensor_parallel', path.join(work, name), ...args], { stdio: 'ignore', env });
  const json = path.join(work, 'cmp.json'), html = path.join(work, 'report.html');
  try {
    execFileSync(parityBin, ['compare', path.join(work, 'golden'), path.join(work, 'shard'), '--layout', path.join(work, 'shard.layout.json'),
      '--json', json, '--html', html], { stdio: 'ignore' });
  } catch (e) {
    if (e.status !== 1) throw e;  // 1: the fault fails the comparison, as it should
  }
  res = JSON.parse(fs.readFileSync(json, 'utf8'));
  r = await openReport(html);
});
after(async () => {
  if (r) await r.close();
  fs.rmSync(work, { recursive: true, force: true });
});

test("the failing weight's row shows each TP shard's error, the faulty shard marked", async () => {
  const { page } = r;
  const expected = res.shards.find((s) => s.name === WEIGHT);
  assert.ok(expected, 'the compare JSON attributes the weight');
  await page.fill('#filter-name', WEIGHT);
  await page.click(`#event-table .vt-row[data-idx="${expected.row}"]`);
  const rows = await page.$$eval('#event-table .vt-detail table.shards tbody tr',
    (trs) => trs.map((tr) => ({ label: tr.cells[0].textContent, worst: tr.classList.contains('worst'), rel: tr.cells[1].textContent })));
  assert.deepEqual(rows.map((x) => x.label), expected.shards.map((p) => p.label));
  assert.deepEqual(rows.filter((x) => x.worst).map((x) => x.label), ['TP shard 1 of 2']);
  assert.equal(await page.$eval('#event-table .vt-detail table.shards', (t) => t.dataset.side), 'target');
  assert.deepEqual(r.errors, []);
});
