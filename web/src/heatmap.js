// heatmap.js — modules (or layers) x metric, the worst value of each metric over a module's events;
// and layers x steps (the worst relative error per layer and step) when several steps were captured.
// Colour is the position of log10(value) between the column's smallest and largest value, so every
// metric uses the whole scale; the tooltip shows the value itself.

P.heatMetrics = [
  { key: 'noise_units', label: 'noise ratio', get: (e) => e.noise_units },
  { key: 'rel_l2', label: 'rel L2', get: (e) => e.rel_l2 },
  { key: 'one_minus_cos', label: '1 − cosine', get: (e) => 1 - e.cosine },
  { key: 'max_abs', label: 'max abs', get: (e) => e.max_abs },
  { key: 'max_rel', label: 'max rel', get: (e) => e.max_rel },
  { key: 'kl', label: 'KL', get: (e) => e.kl },
];

// Group events by module prefix, at the deepest depth that keeps at most maxRows groups; rows keep the
// order of first appearance (execution order).
P.groupByModule = function groupByModule(events, maxRows) {
  let best = null;
  for (let d = 1; d <= 8; ++d) {
    const map = new Map();
    for (const e of events) {
      const key = e.modParts.slice(0, d).join('.') || '(root)';
      let g = map.get(key);
      if (!g) map.set(key, (g = { key, events: [] }));
      g.events.push(e);
    }
    if (best && map.size > maxRows) break;
    best = map;
    if (map.size > maxRows) break;
  }
  return [...best.values()];
};

P.log10 = (v) => Math.log10(Math.max(v, 1e-300));

P.heatColors = ['#e7f4ec', '#b9e0c5', '#f5e6a8', '#f2b661', '#e0713d', '#b3261e'];

P.renderHeatmap = function renderHeatmap(cmp) {
  const events = cmp.events;
  const metrics = P.heatMetrics.filter((m) => events.some((e) => P.isNum(m.get(e))));
  if (!events.length || !metrics.length) return;
  const sec = P.openSection('sec-heatmap', 'Heatmap',
    'Worst value of each metric over each module\'s events; colour runs from the column\'s best (green) to its worst (red) on a log scale.');
  P.runsLine(sec, ...P.compareRuns(cmp));
  const groups = P.groupByModule(events, 80);
  const cells = [];
  const colRange = metrics.map(() => ({ lo: Infinity, hi: -Infinity }));
  const worst = new Map();
  groups.forEach((g, r) => {
    metrics.forEach((m, c) => {
      let best = -Infinity, arg = null;
      for (const e of g.events) {
        const v = m.get(e);
        if (P.isNum(v) && v > best) { best = v; arg = e; }
      }
      if (!arg) return;
      const lv = P.log10(best);
      colRange[c].lo = Math.min(colRange[c].lo, lv);
      colRange[c].hi = Math.max(colRange[c].hi, lv);
      cells.push([c, r, best]);
      worst.set(c + ':' + r, arg);
    });
  });
  const data = cells.map(([c, r, v]) => {
    const { lo, hi } = colRange[c];
    const pos = hi > lo ? (P.log10(v) - lo) / (hi - lo) : 0;
    return { value: [c, r, pos], raw: v };
  });
  const box = P.el('div', { class: 'chart', id: 'heatmap-chart', style: `height:${Math.max(220, groups.length * 22 + 110)}px` });
  sec.appendChild(P.el('div', { class: 'hm-scroll' }, box));
  const chart = P.makeChart('heatmap', box);
  chart.setOption({
    animation: false,
    tooltip: {
      confine: true,
      formatter: (p) => {
        const [c, r] = p.value;
        const e = worst.get(c + ':' + r);
        return P.tooltip(groups[r].key, [['metric', metrics[c].label], ['worst', p.data.raw], ['events', groups[r].events.length], ['worst event', e ? e.name : '—']]);
      },
    },
    grid: { left: 10, right: 20, top: 40, bottom: 10, containLabel: true },
    xAxis: { type: 'category', position: 'top', data: metrics.map((m) => m.label), splitArea: { show: true } },
    yAxis: { type: 'category', inverse: true, data: groups.map((g) => g.key), axisLabel: { width: 300, overflow: 'truncate' } },
    visualMap: { show: false, min: 0, max: 1, dimension: 2, inRange: { color: P.heatColors } },
    series: [{ id: 'modules-metrics', type: 'heatmap', data, label: { show: groups.length <= 40, formatter: (p) => P.fmt(p.data.raw, 2), fontSize: 10 }, emphasis: { itemStyle: { borderColor: '#333', borderWidth: 1 } } }],
  });
  chart.on('click', (p) => { const e = worst.get(p.value[0] + ':' + p.value[1]); if (e) P.focusEvent(e.idx); });
  sec.dataset.cells = String(data.length);
  sec.dataset.rows = String(groups.length);
  sec.dataset.cols = String(metrics.length);

  // layers x steps
  const steps = cmp.steps.filter((s) => s >= 0);
  if (steps.length > 1) {
    const metric = events.some((e) => P.isNum(e.noise_units)) ? P.heatMetrics[0] : P.heatMetrics[1];
    const layers = [];
    const layerIdx = new Map();
    const cellMap = new Map();
    for (const e of events) {
      const v = metric.get(e);
      if (!P.isNum(v) || e.step < 0) continue;
      const layer = P.layerOf(e.module) || '(root)';
      if (!layerIdx.has(layer)) { layerIdx.set(layer, layers.length); layers.push(layer); }
      const key = layerIdx.get(layer) + ':' + e.step;
      const prev = cellMap.get(key);
      if (!prev || v > prev.v) cellMap.set(key, { v, e });
    }
    if (layers.length <= 400 && cellMap.size) {
      sec.appendChild(P.el('h3', { class: 'minor', text: `Layers × steps: worst ${metric.label} per layer and step` }));
      const stepPos = new Map(steps.map((s, i) => [s, i]));
      let lo = Infinity, hi = -Infinity;
      for (const { v } of cellMap.values()) { const l = P.log10(v); lo = Math.min(lo, l); hi = Math.max(hi, l); }
      const d2 = [];
      for (const [key, { v }] of cellMap) {
        const [r, s] = key.split(':').map(Number);
        d2.push({ value: [stepPos.get(s), r, P.log10(v)], raw: v, key });
      }
      const box2 = P.el('div', { class: 'chart', id: 'steps-heatmap-chart', style: `height:${Math.max(220, layers.length * 20 + 120)}px` });
      sec.appendChild(P.el('div', { class: 'hm-scroll' }, box2));
      const ch2 = P.makeChart('stepsHeatmap', box2);
      ch2.setOption({
        animation: false,
        tooltip: { confine: true, formatter: (p) => { const c = cellMap.get(p.data.key); return P.tooltip(layers[p.value[1]], [['step', steps[p.value[0]]], [metric.label, p.data.raw], ['worst event', c ? c.e.name : '—']]); } },
        grid: { left: 10, right: 90, top: 20, bottom: 50, containLabel: true },
        xAxis: { type: 'category', name: 'step', nameLocation: 'middle', nameGap: 28, data: steps.map(String) },
        yAxis: { type: 'category', inverse: true, data: layers, axisLabel: { width: 260, overflow: 'truncate' } },
        visualMap: { min: lo, max: hi > lo ? hi : lo + 1, dimension: 2, calculable: false, orient: 'vertical', right: 10, top: 'middle', itemHeight: 160,
          text: ['worse', 'better'], formatter: (v) => P.fmt(10 ** v, 2), inRange: { color: P.heatColors } },
        series: [{ id: 'layers-steps', type: 'heatmap', data: d2, emphasis: { itemStyle: { borderColor: '#333', borderWidth: 1 } } }],
      });
      ch2.on('click', (p) => { const c = cellMap.get(p.data.key); if (c) P.focusEvent(c.e.idx); });
      sec.dataset.stepCells = String(d2.length);
      sec.dataset.layers = String(layers.length);
      sec.dataset.steps = String(steps.length);
    }
  }
};
