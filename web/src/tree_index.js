// tree_index.js — what the model tree knows of every row (docs/report.md "Model tree"): one record per
// row of the comparison, in columns. A report that keeps only the worst rows of a large comparison
// embeds "report_tree" (parity.report-tree/2, written by src/report/tree_index.cpp) beside them, so the
// tree places and colours every row whatever the cap; a report holding every row needs no index, and
// the same columns are read from its rows.
//   name, module, role, direction, evName (the row's event): strings; site: where the row sits in the
//   model ({module, call, op}: P.siteOf, from the result's rows[].site); sev: verdict severity (P.severity); noise: relative error in
//   rounding-noise units (P.noiseUnits); order, torder (target order, -1 none), rank, step: numbers;
//   event: the row's index in cmp.events, -1 when the report does not embed it; rowOf: cmp.events index
//   -> index row; nonfinite: [{i, raw}] rows with NaN/Inf statistics (raw as a row, for P.nonfiniteChain);
//   embedded: whether the index came with the report (its rows were trimmed).

P.treeIndex = function treeIndex(cmp) {
  const x = P.get(cmp.result, 'report_tree');
  const ix = x && typeof x === 'object' ? P.treeIndexDecode(x, cmp) : null;
  return ix || P.treeIndexOfEvents(cmp);
};

P.treeIndexOfEvents = function treeIndexOfEvents(cmp) {
  const ev = cmp.events, n = ev.length;
  const ix = P.treeIndexAlloc(n, false);
  ix.rowOf = new Int32Array(n);
  for (let i = 0; i < n; ++i) {
    const e = ev[i];
    ix.name[i] = e.name; ix.module[i] = P.str(e.raw.module); ix.role[i] = e.role; ix.direction[i] = e.direction;
    ix.evName[i] = e.event; ix.site[i] = P.siteOf(e.raw);
    ix.sev[i] = P.severity(e.verdict); ix.noise[i] = e.noise_units; ix.order[i] = e.order;
    ix.torder[i] = P.int(e.raw.target_order); ix.rank[i] = e.rank; ix.step[i] = e.step;
    ix.event[i] = i; ix.rowOf[i] = i;
  }
  ix.nonfinite = ev.map((e) => ({ i: e.idx, raw: e.raw }));
  return ix;
};

P.treeIndexAlloc = (n, embedded) => ({
  n, embedded, name: new Array(n), module: new Array(n), role: new Array(n), direction: new Array(n),
  evName: new Array(n), site: new Array(n), sev: new Int8Array(n),
  noise: new Float64Array(n), order: new Float64Array(n), torder: new Float64Array(n), rank: new Float64Array(n),
  step: new Float64Array(n), event: new Int32Array(n).fill(-1), rowOf: null, nonfinite: [],
});

// One integer column of the embedded index: an array of n values, or {runs: [v, k, ...]} (k copies of v
// in turn); `delta`: each value is the previous row's plus the one written. null when it is not n long.
P.treeColumn = function treeColumn(c, n, delta) {
  let out;
  if (Array.isArray(c)) out = Float64Array.from(c, (v) => P.int(v));
  else if (c && Array.isArray(c.runs)) {
    out = new Float64Array(n);
    let at = 0;
    for (let k = 0; k + 1 < c.runs.length; k += 2) {
      const v = P.int(c.runs[k]), cnt = P.int(c.runs[k + 1], 0);
      if (cnt < 0 || at + cnt > n) return null;
      out.fill(v, at, at + cnt);
      at += cnt;
    }
    if (at !== n) return null;
  } else return null;
  if (out.length !== n) return null;
  if (delta) for (let i = 1; i < n; ++i) out[i] += out[i - 1];
  return out;
};

// The embedded index, or null when it is not one this page reads (then the tree is built from the rows).
P.treeIndexDecode = function treeIndexDecode(x, cmp) {
  const n = x.rows;
  const ints = ['head', 'tail', 'module', 'event', 'site_module', 'site_call', 'site_op', 'role', 'direction', 'verdict', 'order',
    'target_order', 'rank', 'step'];
  const c = {};
  const ok = x.schema === 'parity.report-tree/2' && Number.isInteger(n) && n >= 0 && Array.isArray(x.strings) && Array.isArray(x.kept) &&
    x.kept.length === cmp.events.length && Array.isArray(x.noise_ratio) && x.noise_ratio.length === n &&
    ints.every((k) => (c[k] = P.treeColumn(x[k], n, k === 'order' || k === 'target_order')) !== null);
  if (!ok) {
    console.warn('report_tree: not a parity.report-tree/2 index of this result; the tree shows the embedded rows only');
    return null;
  }
  const s = (k) => (k >= 0 ? P.str(x.strings[k]) : '');
  const ix = P.treeIndexAlloc(n, true);
  for (let i = 0; i < n; ++i) {
    ix.name[i] = c.tail[i] >= 0 ? s(c.head[i]) + '/' + s(c.tail[i]) : s(c.head[i]);
    ix.module[i] = s(c.module[i]); ix.role[i] = s(c.role[i]); ix.direction[i] = s(c.direction[i]);
    ix.evName[i] = s(c.event[i]); ix.site[i] = { module: s(c.site_module[i]), call: c.site_call[i], op: s(c.site_op[i]) };
    ix.sev[i] = c.verdict[i] >= 0 && c.verdict[i] <= 3 ? c.verdict[i] : 3;
    ix.noise[i] = P.noiseUnits(P.num(x.noise_ratio[i]));
    ix.order[i] = c.order[i]; ix.torder[i] = c.target_order[i]; ix.rank[i] = c.rank[i]; ix.step[i] = c.step[i];
  }
  ix.rowOf = new Int32Array(cmp.events.length);
  x.kept.forEach((r, k) => { if (Number.isInteger(r) && r >= 0 && r < n) { ix.event[r] = k; ix.rowOf[k] = r; } });
  const nf = P.get(x, 'nonfinite') || {};
  const keys = ['nan_count', 'pinf_count', 'ninf_count', 'inf_count', 'min', 'max'];
  const stats = (a) => { const o = {}; if (Array.isArray(a)) keys.forEach((k, j) => { if (a[j] !== null && a[j] !== undefined) o[k] = a[j]; }); return o; };
  if (Array.isArray(nf.row)) {
    nf.row.forEach((i, k) => {
      if (!(Number.isInteger(i) && i >= 0 && i < n)) return;
      ix.nonfinite.push({ i, raw: { metrics: { golden_stats: stats(P.get(nf, 'golden', k)), target_stats: stats(P.get(nf, 'target', k)) } } });
    });
  }
  return ix;
};
