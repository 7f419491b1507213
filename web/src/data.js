// data.js — reads the data envelope (schema "parity.report-data/1", docs/report.md) and turns each
// result into what the sections draw. Readers ignore keys they do not know, and every key may be
// missing: a section is drawn only when its data is present.

// JSON floats may be numbers or the strings "NaN", "Infinity", "-Infinity" (docs/compare-json.md).
P.num = function num(v) {
  if (typeof v === 'number') return v;
  if (typeof v === 'string' && v !== '') { const x = Number(v); return x; }
  return NaN;
};
P.str = (v) => (v === undefined || v === null ? '' : String(v));
P.int = (v, dflt) => (typeof v === 'number' && Number.isFinite(v) ? v : (dflt === undefined ? -1 : dflt));

// Unit roundoff u = 2^-p of each dtype (p = significand bits incl. the implicit one), the scale of one

P.schemaKind = function schemaKind(result) {
  const s = P.str(result && result.schema);
  const m = /^parity\.([a-z0-9_.-]+)\/(\d+)$/.exec(s);
  return m ? { kind: m[1], version: +m[2] } : { kind: '', version: 0 };
};

// Where a record sits in the model, as the result says (parity.compare/1 rows[].site, revision 1.8; also on
// unmatched records): {module, call, op}. The report parses no names: a result of an older revision has no
// site, and its records sit at their module (or, for a plain tensor file, at their name) with no op node.
P.siteOf = function siteOf(rec) {
  const s = rec && rec.site;
  if (s && typeof s === 'object') return { module: P.str(s.module), call: P.int(s.call, 0), op: P.str(s.op) };
  return { module: P.str(rec && rec.module) || P.str(rec && rec.name), call: 0, op: '' };
};

// Module path of an event: the capture metadata, or for a plain tensor file the module its place sits in
// (the place "blocks.2.mlp.out" of "blocks.2.mlp.out.npy" -> "blocks.2.mlp").
P.moduleOf = function moduleOf(row) {
  const module = P.str(row.module);
  if (module) return module;
  const s = P.siteOf(row).module;
  const i = s.lastIndexOf('.');
  return i > 0 ? s.slice(0, i) : s;
};

// The layer an event belongs to, for layers x steps: the first "<word>.<number>" of its module path
// (layers.3, h.11, blocks.2), else its top-level module.
P.layerOf = function layerOf(module) {
  const m = /(?:^|[.\/])((?:[A-Za-z_]*?)[._](\d+))(?=$|[.\/])/.exec(module);
  if (m) return module.slice(0, m.index + m[0].length).replace(/^[.\/]/, '');
  return module.split(/[.\/]/)[0] || module;
};

// Relative error in units of rounding noise: the result's noise_ratio, as the noise model measured it
// (docs/judgement.md); NaN where the JSON carries none. The report computes no noise units of its own.
P.noiseUnits = (ratio) => (P.isNum(ratio) || ratio === Infinity ? ratio : NaN);

// One compare row -> the flat event the profile, heatmap and table use.
P.toEvent = function toEvent(row, idx) {
  const m = row.metrics && typeof row.metrics === 'object' ? row.metrics : null;
  const st = row.stats && typeof row.stats === 'object' ? row.stats : null;
  const name = P.str(row.name);
  const g = row.golden || {}, t = row.target || {};
  const tdt = P.str(row.threshold_dtype || t.dtype);
  const ev = {
    idx,
    name,
    target_name: P.str(row.target_name || name),
    module: P.moduleOf(row),
    event: P.str(row.event),
    op: P.str(row.op),
    direction: P.str(row.direction),
    role: P.str(row.role),
    step: P.int(row.step),
    rank: P.int(row.rank),
    order: P.int(row.order, idx),
    gdtype: P.str(g.dtype), tdtype: P.str(t.dtype), threshold_dtype: tdt,
    shape: Array.isArray(g.shape) ? g.shape : [],
    verdict: P.str(row.verdict) || 'error',
    reason: P.str(row.reason),
    mode: P.str(row.mode),
    match: P.str(row.match),
    noise: P.str(row.noise),
    noise_ratio: P.num(row.noise_ratio),
    cosine: m ? P.num(m.cosine) : NaN,
    rel_l2: m ? P.num(m.rel_l2) : (st ? P.num(st.worst_rel) : NaN),
    max_abs: m ? P.num(m.max_abs) : NaN,
    max_rel: m ? P.num(m.max_rel) : (st ? P.num(st.worst_rel) : NaN),
    kl: m ? P.num(m.kl) : NaN,
    sqnr_db: m ? P.num(m.sqnr_db) : NaN,
    ulp_max: m ? P.num(m.ulp_max) : NaN,
    raw: row,
  };
  ev.modParts = ev.module.split(/[.\/]/);  // module path components, split once (grouping reads them often)
  ev.noise_units = P.noiseUnits(ev.noise_ratio);
  return ev;
};

// The envelope: {schema, generated_by, charting_library, inputs: [{origin, result}]}.
P.loadData = function loadData() {
  const node = document.getElementById('parity-data');
  const env = JSON.parse(node.textContent);
  const inputs = Array.isArray(env.inputs) ? env.inputs : [];
  const byKind = {};
  for (const inp of inputs) {
    const r = inp && inp.result;
    if (!r || typeof r !== 'object') continue;
    const { kind } = P.schemaKind(r);
    (byKind[kind] = byKind[kind] || []).push({ origin: P.str(inp.origin), result: r });
  }
  return { env, inputs, byKind };
};

// A compare result prepared for drawing: events in execution order plus lookups.
P.prepareCompare = function prepareCompare(result) {
  const rows = Array.isArray(result.rows) ? result.rows : [];
  const events = rows.map((r, i) => P.toEvent(r && typeof r === 'object' ? r : {}, i));
  const byName = new Map();
  for (const e of events) if (!byName.has(e.name)) byName.set(e.name, e);
  const steps = [...new Set(events.map((e) => e.step))].sort((a, b) => a - b);
  const ranks = [...new Set(events.map((e) => e.rank))].sort((a, b) => a - b);
  const hasNoiseRatio = events.some((e) => P.isNum(e.noise_ratio));
  const cmp = { result, events, byName, steps, ranks, hasNoiseRatio };
  P.attachShards(cmp);
  return cmp;
};

// The parts of failing rows that a run held apart (result.shards, compare JSON revision 1.9: TP shards
// of a record merged by --layout, docs/layout.md), each on its row's event as `shards` and `shardSide`.
P.attachShards = function attachShards(cmp) {
  for (const s of P.treeList(cmp.result.shards)) {
    const e = P.resolveEvent(cmp, { row: P.int(s.row), name: P.str(s.name) });
    if (!e) continue;
    e.shards = P.treeList(s.shards).map((p) => ({ label: P.str(p.label), rel_l2: P.num(p.rel_l2), cosine: P.num(p.cosine), max_abs: P.num(p.max_abs) }));
    e.shardSide = P.str(s.side);
  }
};

// Resolve a reference from the analysis keys (first_divergence, a suspect, a diagnosis' evidence) to an
// event: an object with a row index ("row", "row_index") or a "name"; a bare number or string.
P.resolveEvent = function resolveEvent(cmp, ref) {
  if (!cmp || ref === undefined || ref === null) return null;
  if (typeof ref === 'number') return cmp.events[ref] || null;
  if (typeof ref === 'string') return cmp.byName.get(ref) || null;
  if (typeof ref === 'object') {
    for (const k of ['row', 'row_index', 'row_idx']) {
      if (typeof ref[k] === 'number' && cmp.events[ref[k]]) {
        const e = cmp.events[ref[k]];
        if (!ref.name || ref.name === e.name) return e;
      }
    }
    if (typeof ref.name === 'string' && cmp.byName.has(ref.name)) return cmp.byName.get(ref.name);
    // An analysis event (suspects, diagnoses): its name is the rows' name without the role suffix
    // ("layers.3.attn.forward" for "layers.3.attn.forward.output.0"); its output row stands for it.
    const evName = typeof ref.event === 'string' ? ref.event : (typeof ref.name === 'string' ? ref.name : null);
    if (evName) return P.eventByName(cmp, evName, P.int(ref.step), P.int(ref.rank));
    if (ref.row && typeof ref.row === 'object') return resolveEvent(cmp, ref.row);
  }
  return null;
};

// The row that stands for an analysis event: exact name, else the worst output row of that event (the
// rows' `event`, as the result names it; then any of its rows), in the given step/rank (-1 = any).
P.eventByName = function eventByName(cmp, evName, step, rank) {
  if (cmp.byName.has(evName)) return cmp.byName.get(evName);
  let best = null, bestScore = -Infinity;
  for (const e of cmp.events) {
    if (step >= 0 && e.step !== step) continue;
    if (rank >= 0 && e.rank !== rank) continue;
    if (e.event !== evName) continue;
    const score = (e.role === 'output' ? 1e6 : 0) + (P.isNum(e.noise_units) ? Math.min(e.noise_units, 1e5) : 0);
    if (score > bestScore) { best = e; bestScore = score; }
  }
  return best;
};
