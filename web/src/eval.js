// eval.js — the business layer (docs/eval.md): perplexity/KLD ("parity.eval.ppl/1") with uncertainties,
// checks, KLD and Δp distributions; multiple choice ("parity.eval.mc/2") and lm-evaluation-harness
// results ("parity.eval.lmeval/2") per task/subject with the paired tests.

P.pm = (o) => (o && typeof o === 'object' ? `${P.fmt(P.num(P.first(o.value, o.mean)))} ± ${P.fmt(P.num(o.unc))}` : P.fmt(P.num(o)));

P.kvTable = function kvTable(pairs, id) {
  return P.el('table', { class: 'plain', id },
    P.el('tbody', null, pairs.filter(([, v]) => v !== undefined).map(([k, v]) => P.el('tr', null, P.el('th', { text: k }), P.el('td', { text: v })))));
};

// A distribution: a histogram when the result carries one ({edges, counts}), else the percentiles the
// JSON always has, drawn as a quantile plot (value at each cumulative fraction).
P.distributionChart = function distributionChart(sec, key, title, dist) {
  if (!dist || typeof dist !== 'object') return false;
  const box = P.el('div', { class: 'chart', style: 'height:300px', id: key });
  const hist = dist.histogram;
  if (hist && Array.isArray(hist.edges) && Array.isArray(hist.counts) && hist.edges.length === hist.counts.length + 1) {
    sec.appendChild(box);
    const chart = P.makeChart(key, box);
    const data = hist.counts.map((c, i) => [(P.num(hist.edges[i]) + P.num(hist.edges[i + 1])) / 2, P.num(c), P.num(hist.edges[i]), P.num(hist.edges[i + 1])]);
    chart.setOption({
      animation: false, title: { text: title + ' (histogram)', textStyle: { fontSize: 13 } },
      tooltip: { formatter: (p) => P.tooltip(title, [['from', p.value[2]], ['to', p.value[3]], ['tokens', p.value[1]]]) },
      grid: { left: 60, right: 20, top: 40, bottom: 40 },
      xAxis: { type: 'value', scale: true, axisLabel: { formatter: (v) => P.fmt(v, 2) } }, yAxis: { type: 'value', name: 'tokens' },
      series: [{ type: 'custom', data, encode: { x: [2, 3], y: 1 },
        renderItem: (params, api) => {
          const a = api.coord([api.value(2), api.value(1)]), b = api.coord([api.value(3), 0]);
          return { type: 'rect', shape: { x: a[0], y: a[1], width: Math.max(1, b[0] - a[0] - 1), height: b[1] - a[1] }, style: { fill: '#2f5fb3' } };
        } }],
    });
    box.dataset.bins = String(data.length);
    return true;
  }
  const pc = dist.percentiles;
  if (!pc || typeof pc !== 'object') return false;
  // "p99_9" -> 0.999, "median" -> 0.5, "min" -> 0, "max" -> 1
  const frac = (k) => (k === 'min' ? 0 : k === 'max' ? 1 : k === 'median' ? 0.5 : Number(k.slice(1).replace('_', '.')) / 100);
  const pts = Object.entries(pc).map(([k, v]) => [frac(k), P.num(v), k]).filter(([f, v]) => P.isNum(f) && P.isNum(v)).sort((a, b) => a[0] - b[0]);
  if (!pts.length) return false;
  sec.appendChild(box);
  const chart = P.makeChart(key, box);
  chart.setOption({
    animation: false, title: { text: title + ' (percentiles)', textStyle: { fontSize: 13 } },
    tooltip: { trigger: 'item', formatter: (p) => P.tooltip(title, [['percentile', p.value[2]], ['value', p.value[1]]]) },
    grid: { left: 70, right: 20, top: 40, bottom: 40 },
    xAxis: { type: 'value', min: 0, max: 1, name: 'fraction of tokens', nameLocation: 'middle', nameGap: 24 },
    yAxis: { type: 'value', scale: true, axisLabel: { formatter: (v) => P.fmt(v, 2) } },
    series: [{ type: 'line', data: pts, symbolSize: 6, color: '#2f5fb3', step: false }],
  });
  box.dataset.points = String(pts.length);
  return true;
};

P.renderPpl = function renderPpl(sec, r, i) {
  sec.appendChild(P.el('h3', { class: 'minor' }, 'Perplexity and KL divergence ', P.badge(P.str(r.verdict)), ` ${P.fmt(r.tokens)} tokens`));
  P.runsLine(sec, P.get(r, 'golden', 'source'), P.get(r, 'target', 'source'));
  if (P.get(r, 'thresholds', 'kld_source')) {
    sec.appendChild(P.el('p', { class: 'legend-note', text: `KLD limit ${P.fmt(P.num(P.get(r, 'thresholds', 'kld')))} for ${P.str(P.get(r, 'thresholds', 'kld_dtype'))} logits: ${P.str(P.get(r, 'thresholds', 'kld_source'))}` }));
  }
  const kld = r.kld || {}, dp = r.delta_p || {};
  sec.appendChild(P.kvTable([
    ['PPL golden', P.pm(P.get(r, 'ppl', 'golden'))],
    ['PPL target', P.pm(P.get(r, 'ppl', 'target'))],
    ['PPL ratio', P.pm(r.ppl_ratio)],
    ['PPL difference', P.pm(r.ppl_diff)],
    ['ln PPL ratio', P.pm(r.ln_ppl_ratio)],
    ['correlation of ln PPL', r.ln_ppl_correlation === undefined ? undefined : P.fmt(P.num(r.ln_ppl_correlation))],
    ['mean KLD', kld.mean === undefined ? undefined : `${P.fmt(P.num(kld.mean))} ± ${P.fmt(P.num(kld.unc))}` +
      (kld.error_bound_mean !== undefined ? ` (storage error ≤ ${P.fmt(P.num(kld.error_bound_mean))} mean, ${P.fmt(P.num(kld.error_bound_max))} max)` : '')],
    ['mean Δp', dp.mean === undefined ? undefined : `${P.fmt(P.num(dp.mean))} ± ${P.fmt(P.num(dp.unc))}`],
    ['RMS Δp', dp.rms === undefined ? undefined : `${P.fmt(P.num(dp.rms))} ± ${P.fmt(P.num(dp.rms_unc))}`],
    ['same top token', P.pm(r.same_top)],
  ], 'ppl-summary-' + i));
  if (Array.isArray(r.checks) && r.checks.length) {
    sec.appendChild(P.el('table', { class: 'plain' },
      P.el('thead', null, P.el('tr', null, ['check', 'value', 'limit', 'result'].map((h) => P.el('th', { text: h })))),
      P.el('tbody', null, r.checks.map((c) => P.el('tr', null, P.el('td', { text: P.str(c.name) }), P.el('td', { text: P.fmt(P.num(c.value)) }),
        P.el('td', { text: P.fmt(P.num(c.limit)) }), P.el('td', null, P.badge(c.pass ? 'pass' : 'fail')))))));
  }
  const row = P.el('div', { class: 'runs' });
  sec.appendChild(row);
  const left = P.el('div'), right = P.el('div');
  row.appendChild(left); row.appendChild(right);
  P.distributionChart(left, `kld-dist-${i}`, 'KLD per token', r.kld);
  P.distributionChart(right, `dp-dist-${i}`, 'Δp = q(label) − p(label)', r.delta_p);
  for (const k of ['notes', 'problems']) if (Array.isArray(r[k]) && r[k].length) sec.appendChild(P.el('ul', null, r[k].map((n) => P.el('li', { text: typeof n === 'object' ? JSON.stringify(n) : P.str(n) }))));
};

// Per-group accuracy with the paired tests, and a chart of Δacc with its bootstrap interval.
P.accuracyRows = function accuracyRows(sec, key, rows) {
  const cols = ['group', 'n', 'golden', 'target', 'Δ (points)', 'McNemar p', '95 % CI of Δ', 'distinguishable', 'verdict'];
  sec.appendChild(P.el('table', { class: 'plain', id: key + '-table' },
    P.el('thead', null, P.el('tr', null, cols.map((c) => P.el('th', { text: c })))),
    P.el('tbody', null, rows.map((g) => P.el('tr', { class: g.verdict && g.verdict !== 'pass' ? 'differs' : '' },
      P.el('td', { text: g.label }), P.el('td', { text: P.fmt(g.n) }),
      P.el('td', { text: `${P.fmt(100 * g.a, 3)} ± ${P.fmt(100 * g.ase, 2)}` }), P.el('td', { text: `${P.fmt(100 * g.b, 3)} ± ${P.fmt(100 * g.bse, 2)}` }),
      P.el('td', { text: P.fmt(100 * g.diff, 3) }), P.el('td', { text: P.fmt(g.p) }),
      P.el('td', { text: P.isNum(g.lo) ? `[${P.fmt(100 * g.lo, 3)}, ${P.fmt(100 * g.hi, 3)}]` : '—' }),
      P.el('td', { text: g.distinguishable === undefined ? '—' : (g.distinguishable ? 'yes' : 'no') }),
      P.el('td', null, P.badge(P.str(g.verdict))))))));
  const box = P.el('div', { class: 'chart', id: key, style: `height:${Math.max(180, rows.length * 28 + 80)}px` });
  sec.appendChild(box);
  const chart = P.makeChart(key, box);
  const labels = rows.map((g) => g.label);
  chart.setOption({
    animation: false,
    legend: { top: 0, data: ['golden', 'target'] },
    tooltip: { trigger: 'axis', axisPointer: { type: 'shadow' }, formatter: (items) => {
      const g = rows[items[0].dataIndex];
      return P.tooltip(g.label, [['golden', 100 * g.a], ['target', 100 * g.b], ['Δ points', 100 * g.diff], ['McNemar p', g.p], ['n', g.n]]);
    } },
    grid: { left: 10, right: 30, top: 30, bottom: 30, containLabel: true },
    xAxis: { type: 'value', name: 'accuracy %', nameLocation: 'middle', nameGap: 22, min: 0, max: 100 },
    yAxis: { type: 'category', data: labels, inverse: true, axisLabel: { width: 260, overflow: 'truncate' } },
    series: [
      { name: 'golden', type: 'bar', data: rows.map((g) => 100 * g.a), color: '#2f5fb3' },
      { name: 'target', type: 'bar', data: rows.map((g) => 100 * g.b), color: '#e07b00' },
    ],
  });
  box.dataset.groups = String(rows.length);
};

P.renderMc = function renderMc(sec, r, i) {
  sec.appendChild(P.el('h3', { class: 'minor' }, 'Multiple choice ', P.badge(P.str(r.verdict)),
    ` ${P.str(P.get(r, 'golden', 'source'))} vs ${P.str(P.get(r, 'target', 'source'))}` + (r.length_normalised ? ' (length-normalised)' : '')));
  const conv = (g, label) => ({ label, n: P.num(g.questions), a: P.num(g.golden_acc), b: P.num(g.target_acc), ase: P.num(g.golden_stderr), bse: P.num(g.target_stderr),
    diff: P.num(g.diff), p: P.num(P.get(g, 'mcnemar', 'p_value')), lo: P.num(P.get(g, 'bootstrap', 'low')), hi: P.num(P.get(g, 'bootstrap', 'high')),
    distinguishable: g.distinguishable, verdict: g.verdict });
  const rows = [];
  if (r.overall) rows.push(conv(r.overall, 'overall'));
  for (const s of Array.isArray(r.subjects) ? r.subjects : []) rows.push(conv(s, P.str(s.group)));
  if (rows.length) P.accuracyRows(sec, 'mc-' + i, rows);
};

P.renderLmEval = function renderLmEval(sec, r, i) {
  sec.appendChild(P.el('h3', { class: 'minor' }, 'lm-evaluation-harness ', P.badge(P.str(r.verdict)),
    ` ${P.str(P.get(r, 'a', 'source'))} vs ${P.str(P.get(r, 'b', 'source'))}`));
  const rows = (Array.isArray(r.metrics) ? r.metrics : []).map((m) => {
    const paired = m.paired && typeof m.paired === 'object' ? m.paired : null;
    return { label: `${P.str(m.task)} ${P.str(m.metric)}${m.filter && m.filter !== 'none' ? ',' + m.filter : ''}`, n: P.num(P.first(m.n_a, m.n_b)),
      a: P.num(m.a), b: P.num(m.b), ase: P.num(m.a_stderr), bse: P.num(m.b_stderr), diff: P.num(m.diff),
      p: paired ? P.num(P.get(paired, 'mcnemar', 'p_value')) : P.num(m.p_value),
      lo: paired ? P.num(P.get(paired, 'bootstrap', 'low')) : NaN, hi: paired ? P.num(P.get(paired, 'bootstrap', 'high')) : NaN,
      distinguishable: m.distinguishable, verdict: m.verdict };
  });
  if (rows.length) P.accuracyRows(sec, 'lmeval-' + i, rows);
  sec.appendChild(P.el('p', { class: 'legend-note', text: 'p: paired McNemar test when per-sample logs were given, else the unpaired z-test of the two reported standard errors.' }));
};

P.renderEval = function renderEval(items) {
  const sec = P.openSection('sec-eval', 'Evaluation', 'Perplexity, token-level KL divergence and top-token agreement between the runs\' logits; downstream accuracy with paired tests.');
  items.forEach(({ kind, result }, i) => {
    if (kind === 'eval.ppl') P.renderPpl(sec, result, i);
    else if (kind === 'eval.mc') P.renderMc(sec, result, i);
    else if (kind === 'eval.lmeval') P.renderLmEval(sec, result, i);
    else { sec.appendChild(P.el('h3', { class: 'minor', text: P.str(result.schema) })); sec.appendChild(P.renderValue(result)); }
  });
};
