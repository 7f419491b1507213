// timeline.js — the divergence timeline of a comparison of many steps (compare JSON `divergence_timeline`,
// revision 1.10, docs/timeline.md): the first step and tensor whose error grows beyond the rounding accumulated
// over the steps, the cause, each phase's first crossing, and a chart of every module's error / bound per step
// (log scale, the bound at 1) with the first crossing marked.

P.timelineSummary = function timelineSummary(t) {
  const first = t.first;
  const lines = [];
  if (first) {
    lines.push(P.el('p', { class: 'timeline-first' }, P.el('b', { text: `First crossing at step ${P.fmt(first.step)}: ` }),
      P.el('span', { class: 'mono', text: P.str(first.name) }),
      ` [${P.str(first.phase)}${first.rank > 0 ? ', rank ' + first.rank : ''}], ${P.fmt(P.num(first.ratio), 4)} u > bound ${P.fmt(P.num(first.bound), 4)} u`));
    lines.push(P.el('p', { class: 'timeline-cause' }, P.el('b', { text: `cause: ${P.str(t.cause)}` }), ' — ' + P.str(t.cause_text) +
      (Array.isArray(t.config_keys) && t.config_keys.length ? '; configuration: ' + t.config_keys.join(', ') : '')));
    const phases = (Array.isArray(t.phases) ? t.phases : []).map((p) => `${P.str(p.phase)} ${P.fmt(p.step)}`).join(', ');
    lines.push(P.el('p', { class: 'timeline-phases', text: 'first crossing per phase: ' + phases }));
  } else {
    lines.push(P.el('p', { class: 'timeline-first', text: 'No tensor grows beyond the accumulated rounding' +
      (P.isNum(P.num(t.median_growth)) ? ` (median growth exponent ${P.fmt(P.num(t.median_growth), 2)}; √steps is 0.5)` : '') + '.' }));
  }
  return lines;
};

// One line per module: [step, error / bound], non-positive and missing values left out of the log axis.
P.timelineSeries = function timelineSeries(t, steps, firstModule) {
  const modules = Array.isArray(t.modules) ? t.modules : [];
  return modules.map((m) => {
    const values = Array.isArray(m.of_bound) ? m.of_bound : [];
    const data = steps.map((s, i) => { const v = P.num(values[i]); return [s, P.isNum(v) && v > 0 ? v : null]; });
    const name = P.str(m.module) + (m.rank > 0 ? ' (rank ' + m.rank + ')' : '');
    const crossed = m.first_crossing !== null && m.first_crossing !== undefined;
    return { name, type: 'line', data, showSymbol: false, connectNulls: false,
      lineStyle: { width: name === firstModule ? 2.5 : 1 }, emphasis: { focus: 'series' }, crossed };
  });
};

P.renderTimeline = function renderTimeline(cmp) {
  const t = cmp.result.divergence_timeline;
  if (!t || typeof t !== 'object') return;
  const steps = (Array.isArray(t.steps) ? t.steps : []).map(P.num);
  const sec = P.openSection('sec-timeline', 'Divergence timeline', `Every tensor's error at each step against the rounding that accumulates legitimately over the steps: ${P.fmt(P.num(t.per_step_limit))} u · √(steps since step ${P.fmt(steps[0])}) (docs/timeline.md). The chart is each module's worst error / bound per step: above 1 it has parted from the golden.`);
  for (const line of P.timelineSummary(t)) sec.appendChild(line);
  const first = t.first;
  const firstModule = first ? P.str(first.module) + (first.rank > 0 ? ' (rank ' + first.rank + ')' : '') : '';
  const series = P.timelineSeries(t, steps, firstModule);
  sec.dataset.modules = String(series.length);
  sec.dataset.steps = String(steps.length);
  sec.dataset.firstStep = first ? String(first.step) : '';
  sec.dataset.firstTensor = first ? P.str(first.name) : '';
  sec.dataset.cause = t.cause ? P.str(t.cause) : '';
  const plotted = series.filter((s) => s.data.some((d) => d[1] !== null));
  sec.dataset.plotted = String(plotted.length);
  if (!plotted.length) return;
  const box = P.el('div', { class: 'chart', id: 'timeline-chart', style: 'height:420px' });
  sec.appendChild(box);
  const chart = P.makeChart('timeline', box);
  // The bound (1) on every chart; the first crossing as a vertical line and a pin on its module's line.
  const marks = [{ yAxis: 1, lineStyle: { color: '#c62828', type: 'dashed' }, label: { formatter: 'accumulated-noise bound', position: 'insideEndTop', color: '#c62828' } }];
  if (first) marks.push({ xAxis: P.num(first.step), lineStyle: { color: '#c62828', width: 2 }, label: { formatter: `first crossing: step ${first.step}`, color: '#c62828' } });
  const pinned = plotted.find((s) => s.name === firstModule) || plotted[0];
  plotted.forEach((s) => { delete s.crossed; });
  plotted[0].markLine = { symbol: 'none', silent: true, data: marks };
  if (first && pinned) {
    const at = pinned.data.find((d) => d[0] === P.num(first.step));
    if (at && at[1] !== null) pinned.markPoint = { symbol: 'pin', symbolSize: 34, data: [{ name: 'first crossing', coord: at, value: '!', itemStyle: { color: '#c62828' } }] };
  }
  sec.dataset.crossingMarked = first && pinned && pinned.markPoint ? '1' : '0';
  chart.setOption({
    animation: false,
    legend: { type: 'scroll', top: 0, data: plotted.map((s) => s.name) },
    tooltip: { trigger: 'item', confine: true,
      formatter: (p) => P.tooltip(`${p.seriesName} at step ${p.value[0]}`, [['error / bound', p.value[1]]]) },
    grid: { left: 70, right: 30, top: 40, bottom: 60 },
    xAxis: { type: 'value', name: 'step', nameLocation: 'middle', nameGap: 26, min: steps[0], max: steps[steps.length - 1] },
    yAxis: { type: 'log', name: 'error / bound', axisLabel: { formatter: (v) => P.fmt(v, 2) }, max: (v) => Math.max(v.max, 2) },
    dataZoom: [{ type: 'inside' }, { type: 'slider', bottom: 6, height: 18 }],
    series: plotted,
  });
};
