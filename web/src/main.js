// main.js — reads the data and draws each section whose data is present. A section that fails to draw
// shows its error in place (and on the console) and the others still draw.

P.section = function section(id, fn) {
  try {
    fn();
  } catch (err) {
    console.error(`parity report: section ${id} failed:`, err);
    const sec = document.getElementById(id);
    if (sec) {
      sec.hidden = false;
      sec.appendChild(P.el('div', { class: 'section-error', text: `This section could not be drawn: ${err && err.message ? err.message : err}` }));
    }
  }
};

P.main = function main() {
  const t0 = performance.now();
  let data;
  try {
    data = P.loadData();
  } catch (err) {
    console.error('parity report: data unreadable:', err);
    document.getElementById('report').appendChild(P.el('div', { class: 'section-error', text: 'The report data could not be read: ' + err.message }));
    return;
  }
  P.data = data;
  const compares = data.byKind.compare || [];
  P.focusEvent = () => {};
  // One comparison is drawn at a time; with several (a report of saved results), a selector in the
  // header switches between them.
  const drawCompare = (k) => {
    const cmp = compares.length ? P.prepareCompare(compares[k].result) : null;
    P.cmp = cmp;
    for (const [key, chart] of Object.entries(P.charts)) {
      if (['profile', 'heatmap', 'stepsHeatmap', 'timeline'].includes(key)) { chart.dispose(); delete P.charts[key]; }
    }
    for (const id of ['sec-diagnosis', 'sec-timeline', 'sec-table', 'sec-tree', 'sec-profile', 'sec-heatmap', 'sec-problems']) {
      const sec = document.getElementById(id);
      sec.hidden = true; sec.replaceChildren(); for (const k2 of Object.keys(sec.dataset)) delete sec.dataset[k2];
    }
    P.section('sec-header', () => P.renderHeader(data, cmp));
    if (compares.length > 1) {
      const sel = P.el('select', { id: 'compare-select' }, compares.map((c, i) => P.el('option', { value: String(i), text: `${i + 1}. ${c.origin || 'comparison'} (${P.str(P.get(c.result, 'summary', 'verdict'))})` })));
      sel.value = String(k);
      sel.addEventListener('change', () => drawCompare(Number(sel.value)));
      document.getElementById('sec-header').insertBefore(P.el('div', { class: 'controls' }, P.el('label', { for: 'compare-select', text: `comparison (${compares.length}):` }), sel),
        document.getElementById('sec-header').children[1]);
    }
    if (cmp) {
      P.section('sec-diagnosis', () => P.renderDiagnosis(cmp));
      if (cmp.result.divergence_timeline) P.section('sec-timeline', () => P.renderTimeline(cmp));
      P.section('sec-table', () => P.renderTable(cmp));  // before the charts: they link into it
      P.section('sec-tree', () => P.renderTree(cmp));    // after the table: its rows link into it
      P.section('sec-profile', () => P.renderProfile(cmp));
      P.section('sec-heatmap', () => P.renderHeatmap(cmp));
      P.section('sec-problems', () => P.renderProblems(cmp));
    }
    return cmp;
  };
  const cmp = drawCompare(0);

  // NaN/Inf: the compare result's own overflow analysis of each side, then standalone overflow results.
  const overflowItems = [];
  const ov = cmp && cmp.result.overflow;
  if (ov && typeof ov === 'object') {
    for (const side of ['target', 'golden']) if (ov[side]) overflowItems.push({ label: side + ' run', result: ov[side], side });
  }
  // A standalone result of a run the comparison already analysed (`parity overflow` of its target, as the
  // demo writes) is the same analysis: shown once (issue 31 §4).
  const analysed = new Set(overflowItems.map((it) => P.str(it.result.source)).filter(Boolean));
  for (const x of data.byKind.overflow || []) {
    if (x.result && analysed.has(P.str(x.result.source))) continue;
    overflowItems.push({ label: 'overflow', result: x.result, side: 'target', standalone: true });
  }
  if (overflowItems.length) P.section('sec-overflow', () => P.renderOverflow(overflowItems, cmp));
  if (data.byKind.curve) P.section('sec-curves', () => P.renderCurves(data.byKind.curve.map((x) => x.result)));
  if (data.byKind.ranks) P.section('sec-ranks', () => P.renderRanks(data.byKind.ranks.map((x) => x.result)));
  const evals = [];
  for (const [kind, list] of Object.entries(data.byKind)) if (kind === 'eval' || kind.startsWith('eval.')) for (const x of list) evals.push({ kind, result: x.result });
  if (evals.length) P.section('sec-eval', () => P.renderEval(evals));
  if (data.byKind.scan) P.section('sec-scan', () => P.renderScan(data.byKind.scan.map((x) => x.result)));
  P.section('sec-replay', () => P.renderReplay((data.byKind.replay || []).map((x) => x.result), cmp && cmp.result));

  // Results this report has no dedicated section for (a newer command): shown as data.
  const known = new Set(['compare', 'overflow', 'curve', 'ranks', 'eval', 'eval.ppl', 'eval.mc', 'eval.lmeval', 'scan',
                         'replay']);
  const others = data.inputs.filter((inp) => inp && inp.result && !known.has(P.schemaKind(inp.result).kind));
  if (others.length) {
    P.section('sec-other', () => {
      const sec = P.openSection('sec-other', 'Other results');
      for (const inp of others) {
        sec.appendChild(P.el('h3', { class: 'minor', text: P.str(inp.result.schema) + (inp.origin ? ' — ' + inp.origin : '') }));
        sec.appendChild(P.el('details', null, P.el('summary', { text: 'show' }), P.renderValue(inp.result)));
      }
    });
  }

  const footer = document.getElementById('footer');
  footer.appendChild(P.el('span', { text: `${P.str(data.env.generated_by)} · charts: ${P.str(data.env.charting_library)} · ` }));
  footer.appendChild(P.el('span', { text: 'self-contained: this file makes no network request' }));
  if (cmp && cmp.result.summary && cmp.result.summary.verdict) document.title = 'parity report: ' + cmp.result.summary.verdict;

  window.addEventListener('resize', () => { for (const c of Object.values(P.charts)) c.resize(); });
  P.readyMs = performance.now() - t0;
  document.body.dataset.ready = '1';
  document.body.dataset.readyMs = String(Math.round(P.readyMs));
  // Milliseconds from navigation start to interactive (the report's benchmark reads it).
  document.body.dataset.readyAt = String(Math.round(performance.now()));
};

window.parityReport = P;
if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', P.main);
else P.main();
