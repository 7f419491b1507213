// curves.js — training curves ("parity.curve/1", docs/curves.md): per metric, golden and target overlaid
// with the divergence step, spikes and NaN/Inf steps marked, and a deviation panel (relative deviation
// per step against the metric's tolerance); and the per-rank view ("parity.ranks/1").

P.curveSummaryTable = function curveSummaryTable(metrics) {
  const cols = ['metric', 'verdict', 'aligned steps', 'mean rel dev', 'max rel dev', 'divergence step', 'final golden', 'final target', 'final rel diff', 'why'];
  return P.el('table', { class: 'plain', id: 'curve-summary' },
    P.el('thead', null, P.el('tr', null, cols.map((c) => P.el('th', { text: c })))),
    P.el('tbody', null, metrics.map((m) => P.el('tr', null,
      P.el('td', { text: P.str(m.metric) }),
      P.el('td', null, P.badge(P.str(m.verdict))),
      P.el('td', { text: P.fmt(m.aligned_steps) }),
      P.el('td', { text: P.fmt(P.num(m.mean_rel_dev)) }),
      P.el('td', { text: P.fmt(P.num(m.max_rel_dev)) + (m.max_rel_dev_step !== undefined && m.max_rel_dev_step !== null ? ' @' + m.max_rel_dev_step : '') }),
      P.el('td', { text: m.divergence_step === null || m.divergence_step === undefined ? 'none' : P.fmt(m.divergence_step) }),
      P.el('td', { text: P.fmt(P.num(P.get(m, 'final', 'golden'))) }),
      P.el('td', { text: P.fmt(P.num(P.get(m, 'final', 'target'))) }),
      P.el('td', { text: P.fmt(P.num(P.get(m, 'final', 'rel_diff'))) }),
      P.el('td', { text: Array.isArray(m.reasons) ? m.reasons.join('; ') : P.str(m.reasons) })))));
};

// One metric: overlay (top) and relative deviation (bottom).
P.renderCurveMetric = function renderCurveMetric(sec, m, key) {
  const pts = Array.isArray(m.points) ? m.points : [];
  if (!pts.length) return 0;
  const box = P.el('div', { class: 'chart', id: 'curve-' + key, dataset: { metric: P.str(m.metric) } });
  sec.appendChild(box);
  const chart = P.makeChart('curve-' + key, box);
  const g = [], t = [], dev = [];
  for (const p of pts) {
    const s = P.num(p.step);
    const gv = P.num(p.golden), tv = P.num(p.target), rd = P.num(p.rel_dev);
    g.push([s, P.isNum(gv) ? gv : null]);
    t.push([s, P.isNum(tv) ? tv : null]);
    dev.push([s, P.isNum(rd) ? rd : null]);
  }
  const tol = P.num(P.get(m, 'tolerance', 'rel_tol'));
  const spikes = [];
  for (const side of ['golden', 'target']) {
    for (const sp of P.get(m, 'spikes', side) || []) {
      spikes.push({ name: side + ' spike', coord: [P.num(sp.step), P.num(sp.value)], value: side === 'target' ? 'T' : 'G',
        itemStyle: { color: side === 'target' ? '#c62828' : '#2f5fb3' } });
    }
  }
  const lines = [];
  if (m.divergence_step !== null && m.divergence_step !== undefined) {
    lines.push({ xAxis: P.num(m.divergence_step), lineStyle: { color: '#c62828', width: 2 }, label: { formatter: 'divergence', color: '#c62828' } });
  }
  for (const side of ['golden', 'target']) {
    for (const s of P.get(m, 'nonfinite', side) || []) {
      const step = typeof s === 'object' && s !== null ? P.num(s.step) : P.num(s);
      lines.push({ xAxis: step, lineStyle: { color: '#8e24aa', type: 'dotted', width: 2 }, label: { formatter: side + ' NaN/Inf', color: '#8e24aa' } });
    }
  }
  const nonfiniteCount = lines.length - (m.divergence_step !== null && m.divergence_step !== undefined ? 1 : 0);
  const allSteps = pts.map((p) => P.num(p.step)).filter(P.isNum);
  const minStep = Math.min(...allSteps), maxStep = Math.max(...allSteps);
  const positiveDev = dev.some((d) => d[1] > 0);
  chart.setOption({
    animation: false,
    title: { text: P.str(m.metric), left: 10, top: 0, textStyle: { fontSize: 14 } },
    legend: { top: 0, data: ['golden', 'target', 'relative deviation'] },
    tooltip: { trigger: 'axis', confine: true,
      formatter: (items) => {
        const list = Array.isArray(items) ? items : [items];
        const step = list.length ? list[0].value[0] : '';
        const p = pts.find((x) => P.num(x.step) === step);
        return P.tooltip(`${P.str(m.metric)} at step ${step}`, p ? [['golden', P.num(p.golden)], ['target', P.num(p.target)], ['t − g', P.num(p.abs_diff)], ['relative deviation', P.num(p.rel_dev)]] : []);
      } },
    axisPointer: { link: [{ xAxisIndex: 'all' }] },
    grid: [{ left: 70, right: 30, top: 36, height: '50%' }, { left: 70, right: 30, top: '68%', bottom: 56 }],
    xAxis: [
      { type: 'value', gridIndex: 0, min: minStep, max: maxStep, axisLabel: { show: false } },
      { type: 'value', gridIndex: 1, min: minStep, max: maxStep, name: 'step', nameLocation: 'middle', nameGap: 24 },
    ],
    yAxis: [
      { type: 'value', gridIndex: 0, scale: true, axisLabel: { formatter: (v) => P.fmt(v, 3) } },
      // the tolerance line stays in view even when every deviation is far below it
      { type: positiveDev ? 'log' : 'value', gridIndex: 1, name: 'relative deviation', nameTextStyle: { align: 'left' }, axisLabel: { formatter: (v) => P.fmt(v, 2) },
        max: P.isNum(tol) && tol > 0 ? (v) => Math.max(v.max, tol * 1.5) : undefined },
    ],
    dataZoom: [{ type: 'inside', xAxisIndex: [0, 1] }, { type: 'slider', xAxisIndex: [0, 1], bottom: 6, height: 18 }],
    series: [
      { id: 'golden', name: 'golden', type: 'line', data: g, xAxisIndex: 0, yAxisIndex: 0, showSymbol: pts.length < 200, symbolSize: 4, color: '#2f5fb3', lineStyle: { width: 1.5 },
        markLine: { symbol: 'none', silent: true, data: lines }, markPoint: { symbol: 'pin', symbolSize: 30, label: { color: '#fff', fontSize: 10 }, data: spikes } },
      { id: 'target', name: 'target', type: 'line', data: t, xAxisIndex: 0, yAxisIndex: 0, showSymbol: pts.length < 200, symbolSize: 4, color: '#e07b00', lineStyle: { width: 1.5 } },
      { id: 'dev', name: 'relative deviation', type: 'line', data: positiveDev ? dev.map(([s, v]) => [s, v === null ? null : (v > 0 ? v : null)]) : dev, xAxisIndex: 1, yAxisIndex: 1, showSymbol: false, color: '#6b4fbb', areaStyle: { opacity: 0.08 },
        markLine: P.isNum(tol) && tol > 0 ? { symbol: 'none', silent: true, data: [{ yAxis: tol, lineStyle: { color: '#c62828', type: 'dashed' }, label: { formatter: 'tolerance', position: 'insideEndTop', color: '#c62828' } }] } : undefined },
    ],
  });
  box.dataset.points = String(pts.length);
  box.dataset.spikes = String(spikes.length);
  box.dataset.nonfinite = String(nonfiniteCount);
  box.dataset.divergence = m.divergence_step === null || m.divergence_step === undefined ? '' : String(m.divergence_step);
  return pts.length;
};

P.renderCurves = function renderCurves(results) {
  const sec = P.openSection('sec-curves', 'Curves', 'Golden and target per logged metric; the lower panel is the relative deviation |t − g| / |g| per step against the metric\'s tolerance. Divergence step (red line), spikes (pins), NaN/Inf steps (dotted).');
  let charts = 0, metricsCount = 0;
  results.forEach((r, ri) => {
    const metrics = Array.isArray(r.metrics) ? r.metrics : [];
    const head = P.el('div', { class: 'hdr-top' }, P.badge(P.str(r.verdict)),
      P.el('span', { class: 'mono', text: `golden ${P.str(P.get(r, 'golden', 'path'))} (${P.str(P.get(r, 'golden', 'format'))}) · target ${P.str(P.get(r, 'target', 'path'))} (${P.str(P.get(r, 'target', 'format'))})` }));
    sec.appendChild(head);
    if (metrics.length) sec.appendChild(P.curveSummaryTable(metrics));
    for (const k of ['only_golden', 'only_target', 'problems']) {
      if (Array.isArray(r[k]) && r[k].length) sec.appendChild(P.el('p', { class: 'legend-note', text: `${k.replace('_', ' ')}: ${r[k].map((x) => (typeof x === 'object' ? JSON.stringify(x) : P.str(x))).join(', ')}` }));
    }
    metrics.forEach((m, mi) => { metricsCount++; if (P.renderCurveMetric(sec, m, ri + '-' + mi)) charts++; });
  });
  sec.dataset.charts = String(charts);
  sec.dataset.metrics = String(metricsCount);
};

// Ranks: per metric, which rank disagrees with the median of the others, from which step, how much.
P.renderRanks = function renderRanks(results) {
  const sec = P.openSection('sec-ranks', 'Ranks', 'Per metric, every rank against the median of all ranks at each step; a rank that disagrees is named with the first step it does.');
  let charts = 0;
  results.forEach((r, ri) => {
    sec.appendChild(P.el('div', { class: 'hdr-top' }, P.badge(P.str(r.verdict)), r.code ? P.el('b', { text: P.str(r.code) }) : null,
      P.el('span', { class: 'mono', text: `${P.str(P.get(r, 'run', 'path'))} · ranks ${JSON.stringify(P.get(r, 'run', 'ranks') || [])}` })));
    (Array.isArray(r.metrics) ? r.metrics : []).forEach((m, mi) => {
      const ranks = Array.isArray(m.ranks) ? m.ranks : [];
      const bad = new Map((Array.isArray(m.inconsistent) ? m.inconsistent : []).map((x) => [P.num(x.rank), x]));
      const missing = m.missing_steps && typeof m.missing_steps === 'object' ? m.missing_steps : {};
      sec.appendChild(P.el('h3', { class: 'minor' }, `${P.str(m.metric)} `, P.badge(P.str(m.verdict)),
        ` ${P.fmt(m.steps_compared)} steps, tolerance ${P.fmt(P.num(m.rel_tol))}`));
      sec.appendChild(P.el('table', { class: 'plain ranks-table', dataset: { metric: P.str(m.metric) } },
        P.el('thead', null, P.el('tr', null, ['rank', 'status', 'from step', 'disagreeing steps', 'max rel dev', 'missing steps'].map((h) => P.el('th', { text: h })))),
        P.el('tbody', null, ranks.map((rk) => {
          const b = bad.get(P.num(rk));
          const miss = missing[String(rk)];
          return P.el('tr', { class: b ? 'differs' : '' }, P.el('td', { text: P.str(rk) }),
            P.el('td', { class: b ? 'v-fail' : 'v-pass', text: b ? 'inconsistent' : 'agrees' }),
            P.el('td', { text: b ? P.fmt(b.from_step) : '' }), P.el('td', { text: b ? P.fmt(b.steps) : '' }),
            P.el('td', { text: b ? P.fmt(P.num(b.max_rel_dev)) + (b.max_rel_dev_step !== undefined ? ' @' + b.max_rel_dev_step : '') : '' }),
            P.el('td', { text: Array.isArray(miss) && miss.length ? miss.join(', ') : '' }));
        }))));
      // Timeline: for each disagreeing rank, the span of steps from the first disagreement.
      if (bad.size) {
        const box = P.el('div', { class: 'chart', style: `height:${Math.max(140, ranks.length * 26 + 70)}px`, id: `ranks-${ri}-${mi}` });
        sec.appendChild(box);
        const chart = P.makeChart(`ranks-${ri}-${mi}`, box);
        const data = ranks.map((rk, i) => { const b = bad.get(P.num(rk)); return b ? [P.num(b.from_step), i, P.num(b.from_step) + P.num(b.steps) - 1, P.num(b.max_rel_dev)] : null; }).filter(Boolean);
        chart.setOption({
          animation: false,
          grid: { left: 70, right: 30, top: 20, bottom: 40 },
          tooltip: { formatter: (p) => P.tooltip(`rank ${ranks[p.value[1]]}`, [['from step', p.value[0]], ['to step', p.value[2]], ['max rel dev', p.value[3]]]) },
          xAxis: { type: 'value', name: 'step', nameLocation: 'middle', nameGap: 24, min: 0, max: Math.max(P.num(m.steps_compared) - 1, ...data.map((d) => d[2])) },
          yAxis: { type: 'category', data: ranks.map((rk) => 'rank ' + rk), inverse: true },
          series: [{ type: 'custom', data, encode: { x: [0, 2], y: 1 },
            renderItem: (params, api) => {
              const start = api.coord([api.value(0), api.value(1)]), end = api.coord([api.value(2), api.value(1)]);
              const h = api.size([0, 1])[1] * 0.6;
              return { type: 'rect', shape: { x: start[0], y: start[1] - h / 2, width: Math.max(3, end[0] - start[0]), height: h }, style: { fill: '#c62828' } };
            } }],
        });
        charts++;
      }
    });
  });
  sec.dataset.charts = String(charts);
};
