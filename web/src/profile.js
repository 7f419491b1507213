// profile.js — the error profile: relative error (in units of the dtype's rounding noise) and cosine
// along execution order, forward and backward as separate series, module boundaries as bands, the first
// divergence and the suspects marked; zoom (wheel, drag, slider) and hover (name and metrics).

P.profileMetrics = [
  { key: 'noise_units', label: 'relative error / rounding noise', log: true },
  { key: 'rel_l2', label: 'relative L2 error ‖t−g‖/‖g‖', log: true },
  { key: 'max_abs', label: 'max |t−g|', log: true },
  { key: 'max_rel', label: 'max relative error', log: true },
  { key: 'kl', label: 'softmax KL', log: true },
];

// Contiguous runs of events sharing a module prefix of `depth` components.
P.moduleBands = function moduleBands(events, depth) {
  const bands = [];
  for (const e of events) {
    const key = e.modParts.slice(0, depth).join('.');
    const last = bands[bands.length - 1];
    if (last && last.key === key) last.end = e.idx;
    else bands.push({ key, start: e.idx, end: e.idx });
  }
  return bands;
};

// The deepest module prefix whose bands stay readable (at most `maxBands`).
P.chooseBands = function chooseBands(events, maxBands) {
  let best = P.moduleBands(events, 1);
  for (let d = 2; d <= 8; ++d) {
    const b = P.moduleBands(events, d);
    if (b.length > maxBands) break;
    best = b;
  }
  return best.length > 1 && best.length <= maxBands ? best : [];
};

// Both panels' left margin as wide as their widest y-axis label, so that no label is cut ("100,000,000"
// showed as "0,000,000" in a fixed 70 px margin; issue 31 §4) and the two x axes stay aligned.
P.fitAxisLabels = function fitAxisLabels(chart, grids) {
  const ctx = document.createElement('canvas').getContext('2d');
  let widest = 0;
  for (let i = 0; i < grids; ++i) {
    const axis = chart.getModel().getComponent('yAxis', i).axis;
    const font = axis.model.getModel('axisLabel').getFont();
    ctx.font = font;
    for (const l of axis.getViewLabels()) widest = Math.max(widest, ctx.measureText(l.formattedLabel).width);
  }
  const left = Math.ceil(widest) + 16;  // the label's margin to the axis line (8) and some air
  chart.setOption({ grid: Array.from({ length: grids }, () => ({ left })) });
};

P.renderProfile = function renderProfile(cmp) {
  const events = cmp.events;
  if (!events.length) return;
  const sec = P.openSection('sec-profile', 'Error profile',
    'Each point is one compared event, in execution order (forward, then backward). Wheel or drag to zoom, hover for the metrics, click to open the event in the table.');
  P.runsLine(sec, ...P.compareRuns(cmp));
  const metrics = P.profileMetrics.filter((m) => events.some((e) => P.isNum(e[m.key])));
  if (!metrics.length) {
    sec.appendChild(P.el('p', { class: 'notice', text: 'No event has an error metric (statistics or checksum comparisons only); see the table.' }));
    return;
  }
  const select = P.el('select', { id: 'profile-metric' }, metrics.map((m) => P.el('option', { value: m.key, text: m.label })));
  const note = P.el('span', { class: 'legend-note' });
  sec.appendChild(P.el('div', { class: 'controls' }, P.el('label', { for: 'profile-metric', text: 'upper panel:' }), select, note));
  const box = P.el('div', { class: 'chart tall', id: 'profile-chart' });
  sec.appendChild(box);
  const chart = P.makeChart('profile', box);

  const fdEv = P.resolveEvent(cmp, cmp.result.first_divergence);
  const suspects = (Array.isArray(cmp.result.suspects) ? cmp.result.suspects : []).slice(0, 8)
    .map((s) => P.resolveEvent(cmp, s)).filter(Boolean);
  const bands = P.chooseBands(events, 40);

  const draw = (metricKey) => {
    const metric = P.profileMetrics.find((m) => m.key === metricKey);
    // A log axis cannot show 0 (identical tensors): such points sit on a floor below the smallest
    // positive value, and the tooltip shows the true value.
    const floorOf = (vals) => {
      let mn = Infinity;
      for (const v of vals) if (v > 0 && v < mn) mn = v;
      return mn === Infinity ? 1e-12 : mn / 10;
    };
    const yFloor = floorOf(events.map((e) => e[metricKey]));
    const cFloor = floorOf(events.map((e) => 1 - e.cosine));
    const groups = { forward: [], backward: [], other: [] };
    const cosGroups = { forward: [], backward: [], other: [] };
    // A gap in a series (the other direction ran in between, or another step began) breaks its line:
    // an empty value ([x, null]) between two events that are not neighbours in execution order.
    const last = { forward: -2, backward: -2, other: -2 };
    const push = (arr, g, e, v) => {
      if (arr.length && e.idx - last[g] > 1) arr.push([e.idx - 0.5, null]);
      arr.push([e.idx, v]);
    };
    for (const e of events) {
      const g = e.direction === 'forward' || e.direction === 'backward' ? e.direction : 'other';
      const y = e[metricKey];
      if (P.isNum(y)) push(groups[g], g, e, y > 0 ? y : yFloor);
      const c = 1 - e.cosine;
      if (P.isNum(c)) push(cosGroups[g], g, e, c > 0 ? c : cFloor);
      last[g] = e.idx;
    }
    note.textContent = cmp.hasNoiseRatio ? '' : 'no noise ratio in the result (an older or non-analysed result): no view in rounding-noise units';
    const big = events.length > 3000;
    const colors = { forward: '#2f5fb3', backward: '#e07b00', other: '#4a5568' };
    const series = [];
    const markData = [];
    if (fdEv) markData.push({ xAxis: fdEv.idx, name: 'first divergence', lineStyle: { color: '#c62828', type: 'solid', width: 2 }, label: { formatter: 'first divergence', color: '#c62828' } });
    const mkSeries = (id, name, data, gridIdx, color, extra) => Object.assign({
      id, name, type: 'line', xAxisIndex: gridIdx, yAxisIndex: gridIdx, data, color,
      showSymbol: !big, symbolSize: 4, sampling: big ? 'lttb' : undefined, lineStyle: { width: 1 },
      connectNulls: false, progressive: 20000, animation: false, emphasis: { focus: 'none' },
    }, extra || {});
    let first = true;
    for (const g of ['forward', 'backward', 'other']) {
      if (!groups[g].length && !cosGroups[g].length) continue;
      const extra = {};
      if (first) {
        first = false;
        extra.markLine = { symbol: 'none', silent: true, animation: false, data: markData.concat(metricKey === 'noise_units' && cmp.hasNoiseRatio ? [{ yAxis: 1, name: 'expected noise', lineStyle: { color: '#2e8b57', type: 'dashed' }, label: { formatter: 'expected rounding noise', position: 'insideEndTop', color: '#2e8b57' } }] : []) };
        if (bands.length) {
          extra.markArea = { silent: false, animation: false, itemStyle: { color: 'rgba(120,130,150,0.07)' }, label: { show: false },
            emphasis: { label: { show: true, position: 'insideTop', color: '#333' } },
            data: bands.filter((b, i) => i % 2 === 0).map((b) => [{ xAxis: b.start - 0.5, name: b.key || '(root)' }, { xAxis: b.end + 0.5 }]) };
        }
        if (suspects.length) {
          extra.markPoint = { animation: false, symbol: 'pin', symbolSize: 34, itemStyle: { color: '#c98a00' }, label: { color: '#fff', fontSize: 10 },
            data: suspects.map((s, i) => ({ name: s.name, coord: [s.idx, P.isNum(s[metricKey]) && s[metricKey] > 0 ? s[metricKey] : yFloor], value: 'S' + (i + 1) })) };
        }
      }
      series.push(mkSeries('ev-' + g, g, groups[g], 0, colors[g], extra));
      series.push(mkSeries('cos-' + g, g, cosGroups[g], 1, colors[g]));
    }
    chart.setOption({
      animation: false,
      legend: { top: 0, data: series.filter((s) => s.id.startsWith('ev-')).map((s) => s.name) },
      grid: [{ left: 70, right: 30, top: 36, height: '52%' }, { left: 70, right: 30, top: '68%', bottom: 64 }],
      tooltip: {
        trigger: 'item', confine: true, enterable: false,
        formatter: (p) => {
          if (p.componentType === 'markArea') return P.tooltip('module ' + (p.name || ''), []);
          if (p.componentType === 'markPoint') return P.tooltip('suspect: ' + p.name, []);
          const e = Array.isArray(p.value) && p.value[1] !== null ? events[p.value[0]] : null;
          if (!e) return '';
          return P.tooltip(e.name, [['#', e.idx], ['module', e.module], ['direction', e.direction || '—'], ['verdict', e.verdict],
            ['noise ratio', e.noise_units], ['rel L2', e.rel_l2], ['cosine', e.cosine], ['max abs', e.max_abs], ['dtype', e.gdtype + ' → ' + e.tdtype]]);
        },
      },
      axisPointer: { link: [{ xAxisIndex: 'all' }] },
      xAxis: [
        { type: 'value', gridIndex: 0, min: -0.5, max: events.length - 0.5, axisLabel: { show: false }, splitLine: { show: false } },
        { type: 'value', gridIndex: 1, min: -0.5, max: events.length - 0.5, name: 'execution order', nameLocation: 'middle', nameGap: 26, splitLine: { show: false } },
      ],
      yAxis: [
        { type: metric.log ? 'log' : 'value', gridIndex: 0, name: metric.label, nameTextStyle: { align: 'left' }, axisLabel: { formatter: (v) => P.fmt(v, 2) } },
        { type: 'log', gridIndex: 1, name: '1 − cosine', nameTextStyle: { align: 'left' }, axisLabel: { formatter: (v) => P.fmt(v, 2) } },
      ],
      dataZoom: [
        { type: 'inside', xAxisIndex: [0, 1], filterMode: 'none' },
        { type: 'slider', xAxisIndex: [0, 1], filterMode: 'none', bottom: 8, height: 20 },
      ],
      series,
    }, { notMerge: true });
    P.fitAxisLabels(chart, 2);
    const real = (prefix) => series.filter((s) => s.id.startsWith(prefix)).reduce((n, s) => n + s.data.filter((d) => d[1] !== null).length, 0);
    sec.dataset.points = String(real('ev-'));
    sec.dataset.cosinePoints = String(real('cos-'));
    sec.dataset.metric = metricKey;
    sec.dataset.bands = String(bands.length);
    sec.dataset.firstDivergence = fdEv ? String(fdEv.idx) : '';
    sec.dataset.suspects = String(suspects.length);
  };
  chart.on('click', (p) => {
    if (p.componentType === 'series' && Array.isArray(p.value)) P.focusEvent(p.value[0]);
  });
  select.addEventListener('change', () => draw(select.value));
  draw(metrics[0].key);
};
