// tests/browser/timeline.test.mjs — the report's divergence timeline (web/src/timeline.js, docs/timeline.md) in
// headless Chromium, on a real comparison of many steps: the long-run example's eps scenario against its baseline
// (bench/longrun, 8 steps, captured here by `python -m bench.longrun.run`), through `parity report`. The section
// names the first crossing (step 1, an optimizer update, cause optimizer), draws one line per module with the
// bound and the first crossing marked; a result without `divergence_timeline` has no such section.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import { openReport, sourceDir, parityBin, binaryDir } from './browser.mjs';

const work = fs.mkdtempSync(path.join(os.tmpdir(), 'parity-timeline-test-'));
const STEPS = 8;
let result;

before(() => {
  const py = process.env.PARITY_VENV_PYTHON || path.join(sourceDir, '.venv/bin/python');
  const env = { ...process.env, PARITY_BIN: parityBin,
    PYTHONPATH: process.env.PYTHONPATH || `${path.join(sourceDir, 'python')}:${path.join(binaryDir, 'python')}` };
  execFileSync(py, ['-m', 'bench.longrun.run', '--steps', String(STEPS), '--only', 'eps', '--out', work],
    { cwd: sourceDir, env, stdio: 'pipe' });
  result = JSON.parse(fs.readFileSync(path.join(work, `eps-${STEPS}.json`), 'utf8'));
});

after(() => fs.rmSync(work, { recursive: true, force: true }));

test('the eps scenario: first crossing, cause and a line per module with the crossing marked', async () => {
  const t = result.divergence_timeline;
  assert.ok(t && t.first, 'the compare JSON has a timeline with a crossing');
  const html = path.join(work, 'eps.html');
  execFileSync(parityBin, ['report', path.join(work, `eps-${STEPS}.json`), '-o', html], { stdio: 'pipe' });
  const r = await openReport(html);
  try {
    const info = await r.page.evaluate(() => {
      const sec = document.getElementById('sec-timeline');
      const chart = P.charts.timeline;
      const opt = chart ? chart.getOption() : null;
      const marks = opt ? opt.series.flatMap((s) => (s.markLine && s.markLine.data) || []) : [];
      const pins = opt ? opt.series.flatMap((s) => (s.markPoint && s.markPoint.data) || []) : [];
      return { hidden: sec.hidden, data: { ...sec.dataset }, text: sec.textContent, series: opt ? opt.series.length : 0,
        marks: marks.map((m) => ({ x: m.xAxis, y: m.yAxis })), pins: pins.map((p) => p.coord) };
    });
    assert.equal(info.hidden, false);
    assert.equal(info.data.firstStep, '1');
    assert.match(info.data.firstTensor, /\/optimizer\/update\//);
    assert.equal(info.data.cause, 'optimizer');
    assert.equal(info.data.steps, String(STEPS));
    assert.equal(Number(info.data.modules), t.modules.length);
    assert.ok(info.series > 10 && info.series === Number(info.data.plotted), `one line per module with error: ${info.series}`);
    assert.ok(info.marks.some((m) => m.y === 1), 'the bound is drawn at 1');
    assert.ok(info.marks.some((m) => m.x === 1), 'the first crossing step is marked');
    assert.equal(info.data.crossingMarked, '1');
    assert.equal(info.pins.length, 1);
    assert.equal(info.pins[0][0], 1);
    assert.ok(info.pins[0][1] > 1, 'the pinned value is beyond the bound');
    assert.match(info.text, /cause: optimizer/);
    assert.match(info.text, /optimizer\.0\.param_groups\.0\.eps/);
    assert.deepEqual(r.errors, []);
  } finally {
    await r.close();
  }
});

test('a result without a timeline draws no timeline section', async () => {
  const plain = { ...result };
  delete plain.divergence_timeline;
  const json = path.join(work, 'plain.json');
  fs.writeFileSync(json, JSON.stringify(plain));
  const html = path.join(work, 'plain.html');
  execFileSync(parityBin, ['report', json, '-o', html], { stdio: 'pipe' });
  const r = await openReport(html);
  try {
    const info = await r.page.evaluate(() => ({ hidden: document.getElementById('sec-timeline').hidden, chart: !!P.charts.timeline }));
    assert.deepEqual(info, { hidden: true, chart: false });
    assert.deepEqual(r.errors, []);
  } finally {
    await r.close();
  }
});
