// scan.js — sensitivity scan (parity.scan/1, docs/scan.md): per-unit KLD when that unit alone is lowered,
// as a bar chart with ± one standard error, and the mixed-precision plan that meets the KLD budget.

P.scanMeanSe = (m) => (m && P.isNum(m.mean) ? `${P.fmt(m.mean)} ± ${P.fmt(P.num(m.se))}` : 'n/a');

P.renderScan = function renderScan(results) {
  const sec = P.openSection('sec-scan', 'Sensitivity scan',
    'Each unit lowered alone: KL(golden ‖ lowered) per token, mean over sequences ± standard error. Longer bar = more sensitive; red = kept fp32 by the plan.');
  results.forEach((r, i) => {
    const units = Array.isArray(r.units) ? r.units : [];
    const kept = new Set(P.get(r, 'plan', 'kept_fp32') || []);
    sec.appendChild(P.el('h3', { class: 'minor', text: `lowered to ${P.str(r.lower_to)} · ${P.fmt(r.sequences)} sequences · ${P.fmt(r.tokens)} tokens` }));
    const box = P.el('div', { class: 'chart', dataset: { scanUnits: String(units.length) } });
    box.style.height = Math.max(200, 26 * units.length + 80) + 'px';
    sec.appendChild(box);
    // Most sensitive at the top: echarts' category axis runs bottom-up, so the list is reversed.
    const rows = units.slice().reverse();
    // KLD spans decades: a log axis. Its left end is the decade below the smallest value (a log axis has
    // no zero, and echarts' own bars start at 1), bars are drawn from there; 0 is clamped to that end.
    const means = rows.map((u) => P.get(u, 'kld', 'mean'));
    const positive = means.filter((v) => P.isNum(v) && v > 0);
    const lo = Math.pow(10, Math.floor(Math.log10(positive.length ? Math.min(...positive) : 1e-12)));
    const finiteMax = positive.length ? Math.max(...positive) : 1;
    const val = (v) => (P.isNum(v) ? Math.max(lo, v) : 10 * finiteMax);  // null (NaN/inf logits): past the end
    const chart = P.makeChart('scan-' + i, box);
    chart.setOption({
      animation: false,
      tooltip: { trigger: 'item', formatter: (p) => { const u = rows[p.dataIndex]; return P.tooltip(u.unit, [['rank', u.rank], ['KLD', P.scanMeanSe(u.kld)], ['top-1 agreement', P.scanMeanSe(u.top1)], ['loss delta', P.scanMeanSe(u.loss_delta)], ['plan', kept.has(u.unit) ? 'kept fp32' : 'lowered']]); } },
      grid: { left: 200, right: 40, top: 20, bottom: 40 },
      xAxis: { type: 'log', min: lo, name: 'KLD', nameLocation: 'middle', nameGap: 24, axisLabel: { formatter: (v) => P.fmt(v, 1) } },
      yAxis: { type: 'category', data: rows.map((u) => P.str(u.unit)) },
      series: [
        { type: 'custom', id: 'kld',
          data: rows.map((u, k) => ({ value: [k, val(means[k])], itemStyle: { color: kept.has(u.unit) ? '#c0392b' : '#2f5fb3' } })),
          encode: { x: 1, y: 0 },
          renderItem: (params, api) => {
            const a = api.coord([lo, api.value(0)]), b = api.coord([api.value(1), api.value(0)]);
            const h = api.size([0, 1])[1] * 0.6;
            return { type: 'rect', shape: { x: a[0], y: a[1] - h / 2, width: Math.max(1, b[0] - a[0]), height: h }, style: api.style() };
          } },
        { type: 'custom', id: 'se', data: rows.map((u, k) => [k, val(means[k] - P.num(P.get(u, 'kld', 'se'))), val(means[k] + P.num(P.get(u, 'kld', 'se')))]),
          renderItem: (params, api) => {
            const a = api.coord([api.value(1), api.value(0)]), b = api.coord([api.value(2), api.value(0)]);
            return { type: 'line', shape: { x1: a[0], y1: a[1], x2: b[0], y2: b[1] }, style: { stroke: '#222', lineWidth: 1.5 } };
          }, encode: { x: [1, 2], y: 0 }, tooltip: { show: false } },
      ],
    });
    const plan = r.plan;
    if (plan && typeof plan === 'object') {
      sec.appendChild(P.kvTable([
        ['KLD budget', P.fmt(P.num(r.budget_kld))],
        ['plan', `${P.fmt((plan.lowered || []).length)} of ${P.fmt(units.length)} units in ${P.str(r.lower_to)}, ${P.fmt((plan.kept_fp32 || []).length)} kept fp32 — ${plan.meets_budget ? 'meets the budget' : 'over the budget'}`],
        ['plan KLD', P.scanMeanSe(plan.kld)],
        ['plan top-1 agreement', P.scanMeanSe(plan.top1)],
        ['plan loss delta', P.scanMeanSe(plan.loss_delta)],
        ['keep fp32', (plan.kept_fp32 || []).join(', ') || 'none'],
        ['cost', `${P.fmt(P.get(r, 'cost', 'forward_passes'))} forward passes, ${P.fmt(P.num(P.get(r, 'cost', 'seconds')))} s`],
      ], 'scan-plan-' + i));
    }
  });
};
