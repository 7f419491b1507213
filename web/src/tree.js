// tree.js — the model as a collapsible tree (issue 31 §1): modules, and the ops recorded inside them,
// built from the event names and module paths of every row — the tree's index (tree_index.js), also when
// the report embeds only the worst rows (docs/dump-format.md "Names"). Each node shows
// the worst verdict and largest noise ratio of its subtree, forward and backward apart; records present in
// one run only (`unmatched`) are nodes of their own, placed where they ran; the first divergence, the
// suspects and the NaN/Inf origin and its contaminated chain are marked. Only the rows in view exist in
// the page (the flattened expanded tree is virtualised), so 50,000 nodes stay fluid.

P.TREE_ROW_H = 24;

// Where a record sits in the tree: its place as the result gives it (P.siteOf: module path, module call,
// op), as path components, then "/op#k" for an op record; an op of a module's second call is another node
// than the same op of its first call.
P.treeSegments = function treeSegments(site) {
  const segs = P.moduleSegments(site.module);
  if (site.op) segs.push('/' + site.op + (site.call > 0 ? ' (call #' + site.call + ')' : ''));
  return segs;
};
// "<root>" and "<global>" are one component each; any other module path splits at its dots.
P.moduleSegments = (m) => (m === '<root>' || m === '<global>' || !m ? [m || '(unnamed)'] : m.split('.'));

// The tree of a comparison: nodes (parent before child), each row's node (rows of the index, every row
// of the comparison: tree_index.js), each unmatched record's node.
P.buildModelTree = function buildModelTree(cmp, ix) {
  const r = cmp.result;
  const unmatched = { golden: P.treeList(P.get(r, 'unmatched', 'golden')), target: P.treeList(P.get(r, 'unmatched', 'target')) };
  // With a "<root>" module (the model itself), every other module of the model is under it.
  const hasRoot = ix.site.some((s) => s.module === '<root>') || [...unmatched.golden, ...unmatched.target].some((x) => P.siteOf(x).module === '<root>');
  const t = { nodes: [], byPath: new Map(), roots: [], rowNode: new Int32Array(ix.n), unmatched, hasRoot, ix };
  const pathOf = (segs) => {
    if (hasRoot && segs[0] !== '<root>' && segs[0] !== '<global>') segs.unshift('<root>');
    return segs;
  };
  // Most records of a module share its place: one lookup of "module|call|op" instead of one per component.
  const cache = new Map();
  const nodeOf = (site) => {
    const k = site.module + '|' + (site.op ? site.call + '|' + site.op : '');
    let id = cache.get(k);
    if (id === undefined) cache.set(k, (id = P.treeAddPath(t, pathOf(P.treeSegments(site)))));
    return id;
  };
  // The node of each event the result names (rows[].event, also on unmatched records): analysis events
  // (suspects, NaN/Inf origins) are placed by it.
  const byEvent = new Map();
  const place = (event, node) => { if (event && !byEvent.has(event)) byEvent.set(event, node); return node; };
  for (let i = 0; i < ix.n; ++i) t.rowNode[i] = place(ix.evName[i], nodeOf(ix.site[i]));
  const placeUnmatched = (u) => place(P.str(u.event), nodeOf(P.siteOf(u)));
  t.unmatchedNode = { golden: unmatched.golden.map(placeUnmatched), target: unmatched.target.map(placeUnmatched) };
  // The node of an analysis event ("layers.1.attn/exp#0/forward"), or undefined.
  t.nodeOfEvent = (name) => byEvent.get(name);
  P.treeOrder(t);
  return t;
};
P.treeList = (v) => (Array.isArray(v) ? v.filter((x) => x && typeof x === 'object') : []);
// Paths are the modules' own ("model.layers.3"), also under the model's "<root>" node.
P.treeJoin = (prefix, seg) => (!prefix ? seg : seg.startsWith('/') ? prefix + seg : prefix === '<root>' ? seg : prefix + '.' + seg);

P.treeAddPath = function treeAddPath(t, segs) {
  let parent = -1, path = '';
  for (let i = 0; i < segs.length; ++i) {
    path = P.treeJoin(path, segs[i]);
    let id = t.byPath.get(path);
    if (id === undefined) {
      id = t.nodes.length;
      const seg = segs[i].startsWith('/') ? segs[i].slice(1) : segs[i];
      // A numbered child ("3" of "layers") is named with its list: "layers.3".
      const label = /^\d+$/.test(seg) && i > 0 && !segs[i - 1].startsWith('/') ? segs[i - 1] + '.' + seg : seg;
      t.nodes.push({ id, path, label, op: segs[i].startsWith('/'), parent, depth: i, children: [], rows: [], key: Infinity });
      t.byPath.set(path, id);
      if (parent >= 0) t.nodes[parent].children.push(id); else t.roots.push(id);
    }
    parent = id;
  }
  return parent;
};

// Children in execution order: a node's key is the first place any of its records ran, in the golden
// run's order. A record present only in the target is placed right after the matched row that ran
// before it in the target (rows[].target_order, compare JSON revision 1.7), so a missing op shows where
// it is missing; without target_order its own order is used. Parameters and buffers are recorded when
// the step starts, so they place a node only when it has no other record.
P.treeOrder = function treeOrder(t) {
  const ix = t.ix;
  const late = (role) => (role === 'parameter' || role === 'buffer' ? 1e15 : 0);
  const pos = (step, order, role) => late(role) + (step + 1) * 1e9 + order;
  const byRun = new Map();  // "rank:step" -> [target order, golden order] of the matched rows, sorted
  for (let i = 0; i < ix.n; ++i) {
    const n = t.nodes[t.rowNode[i]];
    n.rows.push(i);
    n.key = Math.min(n.key, pos(ix.step[i], ix.order[i], ix.role[i]));
    const to = ix.torder[i];
    if (to >= 0) {
      const k = ix.rank[i] + ':' + ix.step[i];
      if (!byRun.has(k)) byRun.set(k, []);
      byRun.get(k).push([to, ix.order[i]]);
    }
  }
  for (const list of byRun.values()) list.sort((a, b) => a[0] - b[0]);
  const targetPos = (u) => {
    const list = byRun.get(P.int(u.rank) + ':' + P.int(u.step));
    const o = P.int(u.order);
    if (!list) return o;
    let lo = 0, hi = list.length;  // the matched rows that ran before o in the target
    while (lo < hi) { const mid = (lo + hi) >> 1; if (list[mid][0] < o) lo = mid + 1; else hi = mid; }
    return lo ? list[lo - 1][1] + 0.5 + o * 1e-7 : -1 + o * 1e-7;
  };
  t.unmatched.golden.forEach((u, i) => { const n = t.nodes[t.unmatchedNode.golden[i]]; n.key = Math.min(n.key, pos(P.int(u.step), P.int(u.order), P.str(u.role))); });
  t.unmatched.target.forEach((u, i) => { const n = t.nodes[t.unmatchedNode.target[i]]; n.key = Math.min(n.key, pos(P.int(u.step), targetPos(u), P.str(u.role))); });
  for (let id = t.nodes.length - 1; id > 0; --id) {  // parents come before children: ids descending is post-order
    const n = t.nodes[id];
    if (n.parent >= 0) t.nodes[n.parent].key = Math.min(t.nodes[n.parent].key, n.key);
  }
  const byKey = (a, b) => (t.nodes[a].key - t.nodes[b].key) || (a - b);
  for (const n of t.nodes) n.children.sort(byKey);
  t.roots.sort(byKey);
};

// The analysis marks, once: first divergence, suspects in rank order, NaN/Inf origins and the events that
// carry NaN/Inf (from overflow, not intended -Inf masks), each with the node it falls on.
P.treeMarks = function treeMarks(t, cmp) {
  const r = cmp.result;
  const ix = t.ix;
  const nodeOf = (ref, name) => {
    const ev = P.resolveEvent(cmp, ref);
    const byName = name ? t.nodeOfEvent(name) : undefined;
    return byName !== undefined ? byName : (ev ? t.rowNode[ix.rowOf[ev.idx]] : -1);
  };
  const fdEv = r.first_divergence ? P.resolveEvent(cmp, r.first_divergence) : null;
  const marks = { first: fdEv ? t.rowNode[ix.rowOf[fdEv.idx]] : -1, suspects: [], origins: [], chain: [] };
  P.suspectsInRankOrder(r).forEach((s, i) => {
    const n = s && typeof s === 'object' ? nodeOf(s, P.str(P.first(s.event, s.name))) : nodeOf(s, typeof s === 'string' ? s : '');
    if (n >= 0) marks.suspects.push({ node: n, rank: i + 1, kind: P.str(s && s.kind) });
  });
  for (const side of ['target', 'golden']) {
    const o = P.get(r, 'overflow', side);
    for (const org of P.treeList(o && o.origins)) {
      const n = nodeOf({ event: org.event, step: org.step, rank: org.rank }, P.str(org.event));
      if (n >= 0) marks.origins.push({ node: n, side, rank: P.int(org.rank), step: P.int(org.step) });
    }
    if (!o) continue;
    for (const { e } of P.nonfiniteChain({ events: ix.nonfinite }, side)) {
      if (!P.isMaskEvent(e, side)) marks.chain.push({ node: t.rowNode[e.i], side, rank: ix.rank[e.i], step: ix.step[e.i] });
    }
  }
  return marks;
};

// Per node, for the records of one rank and step (-1: all): worst verdict (severity, -1 none), largest
// noise ratio and row count of its subtree, forward and backward apart (rows with no direction, plain
// tensor files, count as forward); its own and its subtree's records present in one run only; the marks
// that fall in the subtree. Typed arrays: recomputed in a few milliseconds at 50,000 nodes.
P.treeAggregate = function treeAggregate(t, marks, rank, step) {
  const N = t.nodes.length;
  const a = {
    fSev: new Int8Array(N).fill(-1), bSev: new Int8Array(N).fill(-1), fNoise: new Float64Array(N).fill(NaN),
    bNoise: new Float64Array(N).fill(NaN), fCnt: new Int32Array(N), bCnt: new Int32Array(N),
    ownG: new Int32Array(N), ownT: new Int32Array(N), subG: new Int32Array(N), subT: new Int32Array(N),
    hasG: new Uint8Array(N), hasT: new Uint8Array(N), origin: new Int32Array(N), chain: new Int32Array(N),
    subOrigin: new Int32Array(N), subChain: new Int32Array(N), first: -1, suspect: new Map(),
  };
  const inView = (rk, st) => (rank < 0 || rk === rank) && (step < 0 || st === step);
  const ix = t.ix;
  for (let i = 0; i < ix.n; ++i) {
    if (!inView(ix.rank[i], ix.step[i])) continue;
    const n = t.rowNode[i], sev = ix.sev[i], v = ix.noise[i];
    const back = ix.direction[i] === 'backward';
    const sevA = back ? a.bSev : a.fSev, noiseA = back ? a.bNoise : a.fNoise;
    if (sev > sevA[n]) sevA[n] = sev;
    if (!Number.isNaN(v) && !(v <= noiseA[n])) noiseA[n] = v;  // +Infinity counts: NaN/Inf where the golden is finite
    (back ? a.bCnt : a.fCnt)[n]++;
    a.hasG[n] = a.hasT[n] = 1;
  }
  t.unmatched.golden.forEach((u, i) => { if (inView(P.int(u.rank), P.int(u.step))) { const n = t.unmatchedNode.golden[i]; a.ownG[n]++; a.hasG[n] = 1; } });
  t.unmatched.target.forEach((u, i) => { if (inView(P.int(u.rank), P.int(u.step))) { const n = t.unmatchedNode.target[i]; a.ownT[n]++; a.hasT[n] = 1; } });
  for (const m of marks.origins) if (inView(m.rank, m.step)) a.origin[m.node]++;
  for (const m of marks.chain) if (inView(m.rank, m.step)) a.chain[m.node]++;
  a.subG.set(a.ownG); a.subT.set(a.ownT); a.subOrigin.set(a.origin); a.subChain.set(a.chain);
  for (let id = N - 1; id >= 0; --id) {
    const p = t.nodes[id].parent;
    if (p < 0) continue;
    if (a.fSev[id] > a.fSev[p]) a.fSev[p] = a.fSev[id];
    if (a.bSev[id] > a.bSev[p]) a.bSev[p] = a.bSev[id];
    if (!(a.fNoise[id] <= a.fNoise[p]) && !Number.isNaN(a.fNoise[id])) a.fNoise[p] = a.fNoise[id];
    if (!(a.bNoise[id] <= a.bNoise[p]) && !Number.isNaN(a.bNoise[id])) a.bNoise[p] = a.bNoise[id];
    a.fCnt[p] += a.fCnt[id]; a.bCnt[p] += a.bCnt[id];
    a.subG[p] += a.subG[id]; a.subT[p] += a.subT[id];
    a.subOrigin[p] += a.subOrigin[id]; a.subChain[p] += a.subChain[id];
    a.hasG[p] |= a.hasG[id]; a.hasT[p] |= a.hasT[id];
  }
  a.first = marks.first >= 0 && a.hasG[marks.first] ? marks.first : -1;
  for (const s of marks.suspects) if (!a.suspect.has(s.node)) a.suspect.set(s.node, s.rank);
  return a;
};

// What a node is in the view: in both runs, only in the golden, only in the target, or absent.
P.treePresence = (a, id) => (a.hasG[id] && a.hasT[id] ? 'both' : a.hasG[id] ? 'golden' : a.hasT[id] ? 'target' : '');

// A node's own match for the verdict filter ("" all, "notpass", a verdict, "structure", "nan").
P.treeOwnMatch = function treeOwnMatch(t, a, id, filter, inView) {
  if (filter === 'structure') return a.ownG[id] + a.ownT[id] > 0;
  if (filter === 'nan') return a.origin[id] + a.chain[id] > 0;
  const ix = t.ix, want = P.treeVerdicts.indexOf(filter);
  for (const i of t.nodes[id].rows) {
    if (!inView({ rank: ix.rank[i], step: ix.step[i] })) continue;
    if (filter === 'notpass' ? ix.sev[i] !== 0 : ix.sev[i] === want) return true;
  }
  return false;
};

P.treeVerdicts = ['pass', 'warn', 'fail', 'error'];

// One direction's cell: the worst verdict as its colour, the largest noise ratio as its text.
P.treeCell = function treeCell(sev, noise, cnt, dir) {
  if (sev < 0) return P.el('div', { class: 'tr-cell none', title: `${dir}: no row`, text: '—' });
  const v = P.treeVerdicts[sev];
  return P.el('div', { class: 'tr-cell cell-' + v, dataset: { verdict: v },
    title: `${dir}: worst ${v}, largest noise ratio ${P.fmt(noise)} u, ${cnt} row${cnt === 1 ? '' : 's'}`,
    text: Number.isNaN(noise) ? v : P.treeNum(noise) });
};
// At most five characters: 0.42, 97.8, 613, 2.0e3, Inf.
P.treeNum = (x) => (x === Infinity ? 'Inf' : x >= 999.5 ? x.toExponential(1).replace('+', '') : String(+x.toPrecision(3)));

// The tags after a node's name: analysis marks, and what of its subtree exists in one run only.
P.treeTags = function treeTags(a, id, open) {
  const tags = [];
  const tag = (cls, text, title) => tags.push(P.el('span', { class: 'tr-tag ' + cls, text, title: title || text }));
  if (a.first === id) tag('first', 'first divergence');
  if (a.suspect.has(id)) tag('suspect', 'suspect #' + a.suspect.get(id));
  if (a.origin[id]) tag('nan', 'NaN/Inf born here');
  else if (a.chain[id]) tag('chain', 'carries NaN/Inf');
  if (!open && a.subOrigin[id] > a.origin[id]) tag('nan', 'NaN/Inf origin inside');
  else if (!open && a.subChain[id] > a.chain[id]) tag('chain', `NaN/Inf in ${a.subChain[id] - a.chain[id]} below`);
  const pres = P.treePresence(a, id);
  if (pres === 'golden') tag('only-golden', 'only in golden', 'recorded in the golden run only: missing in the target');
  else if (pres === 'target') tag('only-target', 'only in target', 'recorded in the target run only: missing in the golden');
  else {
    if (a.ownG[id] || a.ownT[id]) tag('partial', `unmatched: ${a.ownG[id]} golden, ${a.ownT[id]} target`, 'records of this node that found no partner in the other run');
    const g = a.subG[id] - a.ownG[id], tt = a.subT[id] - a.ownT[id];
    if (!open && (g || tt)) tag('struct', `Δ ${g ? '−' + g : ''}${g && tt ? ' ' : ''}${tt ? '+' + tt : ''}`, `below: ${g} records only in golden, ${tt} only in target`);
  }
  return tags;
};

// Everything about one node: where it is, its aggregates, its own rows (a click opens one in the events
// table), its records present in one run only.
P.treeDetail = function treeDetail(t, cmp, a, id, inView) {
  const n = t.nodes[id];
  const box = P.el('div', { class: 'tr-detail-in', dataset: { path: n.path } });
  box.appendChild(P.el('div', { class: 'tt-name', text: n.path }));
  const pres = { both: 'in both runs', golden: 'only in the golden run (missing in the target)', target: 'only in the target run (missing in the golden)', '': 'not in this view' }[P.treePresence(a, id)];
  const dirText = (sev, noise, cnt) => (sev < 0 ? 'no row' : `worst ${P.treeVerdicts[sev]}` +
    (Number.isNaN(noise) ? '' : ` · largest noise ratio ${P.fmt(noise)} u`) + ` · ${cnt} row${cnt === 1 ? '' : 's'}`);
  const dl = P.el('dl', { class: 'kv' });
  for (const [k, v] of [['kind', n.op ? 'op' : 'module'], ['presence', pres], ['forward', dirText(a.fSev[id], a.fNoise[id], a.fCnt[id])],
    ['backward', dirText(a.bSev[id], a.bNoise[id], a.bCnt[id])], ['children', n.children.length]]) {
    dl.appendChild(P.el('dt', { text: k })); dl.appendChild(P.el('dd', { text: String(v) }));
  }
  box.appendChild(dl);
  const ix = t.ix;
  const mine = n.rows.filter((i) => inView({ rank: ix.rank[i], step: ix.step[i] })).sort((x, y) => (ix.step[x] - ix.step[y]) || (ix.order[x] - ix.order[y]));
  const own = mine.filter((i) => ix.event[i] >= 0).map((i) => cmp.events[ix.event[i]]);
  box.appendChild(P.el('h3', { class: 'minor', text: `Its own rows (${mine.length})` }));
  if (own.length) box.appendChild(P.treeRowsTable(own.slice(0, 400), n.path));
  if (own.length > 400) box.appendChild(P.el('p', { class: 'legend-note', text: `… ${own.length - 400} more in the events table (filter by this module)` }));
  const beyond = mine.filter((i) => ix.event[i] < 0);
  if (beyond.length) box.appendChild(P.treeBeyondCap(cmp, ix, beyond, own.length));
  for (const side of ['golden', 'target']) {
    const recs = t.unmatched[side].filter((u, i) => t.unmatchedNode[side][i] === id && inView({ rank: P.int(u.rank), step: P.int(u.step) }));
    if (!recs.length) continue;
    box.appendChild(P.el('h3', { class: 'minor', text: `Only in the ${side} run (${recs.length})` }));
    box.appendChild(P.el('ul', { class: 'mono tr-unmatched', dataset: { side } }, recs.slice(0, 200).map((u) =>
      P.el('li', { text: `${P.str(u.name)}  ${P.str(u.dtype)} ${JSON.stringify(u.shape || [])}  order ${P.fmt(P.int(u.order))}` }))));
  }
  return box;
};

// A node's rows that the report does not embed (beyond the events table's cap): one line each from the
// tree's index, and how to get the full rows.
P.treeBeyondCap = function treeBeyondCap(cmp, ix, rows, shownHere) {
  const cap = P.get(cmp.result, 'report_rows');
  const kept = P.fmt(P.num(P.get(cap, 'shown'))), total = P.fmt(P.num(P.get(cap, 'total')));
  const box = P.el('div', { class: 'tr-beyond', dataset: { count: rows.length } });
  box.appendChild(P.el('p', { class: 'notice', text: `${shownHere ? 'The other ' : ''}${rows.length} row${rows.length === 1 ? '' : 's'} of this node ${rows.length === 1 ? 'is' : 'are'} beyond the report's cap (it embeds ${kept} of ${total} rows, the worst): below, what the tree knows of each; the full row (metrics, statistics, reason) is in \`parity compare --json\`'s result, and \`parity report RESULT.json --max-rows 0\` (or a larger --max-rows N) embeds it.` }));
  const dir = (d) => (d ? d + ' ' : '');
  box.appendChild(P.el('ul', { class: 'mono tr-unmatched tr-beyond-rows' }, rows.slice(0, 400).map((i) => {
    const v = P.treeVerdicts[ix.sev[i]] || 'error';
    return P.el('li', { dataset: { verdict: v, row: i } }, P.el('span', { class: P.verdictClass(v), text: v }),
      ` ${ix.name[i]}  ${dir(ix.direction[i])}${Number.isNaN(ix.noise[i]) ? '' : P.fmt(ix.noise[i]) + ' u  '}order ${P.fmt(ix.order[i])}` +
      (ix.step[i] >= 0 ? ` · step ${ix.step[i]}` : '') + (ix.rank[i] >= 0 ? ` · rank ${ix.rank[i]}` : ''));
  })));
  if (rows.length > 400) box.appendChild(P.el('p', { class: 'legend-note', text: `… ${rows.length - 400} more` }));
  return box;
};

// A node's own rows, with the events table's columns (names after the node's path, the reason as the
// row's tooltip); a click opens the row in the table.
P.treeRowsTable = function treeRowsTable(events, path) {
  const cols = ['name', 'direction', 'verdict', 'noise_units', 'cosine', 'rel_l2'].map((k) => P.tableColumns.find((c) => c.key === k));
  const short = (name) => (name.startsWith(path) && name.length > path.length ? '…' + name.slice(path.length) : name);
  const cell = (c, e) => {
    if (c.key === 'name') return short(e.name) + (e.target_name !== e.name ? ` ⇄ ${short(e.target_name)} (${e.match})` : '');
    const v = c.get(e);
    return typeof v === 'number' ? (Number.isNaN(v) ? '—' : P.fmt(v)) : P.str(v);
  };
  return P.el('table', { class: 'plain tr-rows' },
    P.el('thead', null, P.el('tr', null, cols.map((c) => P.el('th', { text: c.label })))),
    P.el('tbody', null, events.map((e) => P.el('tr', { class: 'jump-row', dataset: { idx: e.idx, verdict: e.verdict }, title: e.name + '\n' + e.reason + '\n(click: show in the events table)', onclick: () => P.focusEvent(e.idx) },
      cols.map((c) => P.el('td', { class: c.key === 'verdict' ? P.verdictClass(e.verdict) : (c.key === 'name' ? 'nm' : ''), text: cell(c, e) }))))));
};

// The section: controls, the virtualised tree, the selected node's details.
P.renderTree = function renderTree(cmp) {
  const t0 = performance.now();
  const ix = P.treeIndex(cmp);
  if (!ix.n && !P.treeList(P.get(cmp.result, 'unmatched', 'golden')).length && !P.treeList(P.get(cmp.result, 'unmatched', 'target')).length) return;
  const sec = P.openSection('sec-tree', 'Model tree', 'Modules and the ops recorded in them, in execution order. Each node: worst verdict (colour) and largest noise ratio (text) of everything below it, forward and backward apart. Click a node for its own rows; records present in one run only are drawn where they ran.');
  P.runsLine(sec, ...P.compareRuns(cmp));
  const t = P.buildModelTree(cmp, ix);
  const st = { t, cmp, sec, marks: P.treeMarks(t, cmp), rank: -1, step: -1, filter: '', search: null, expanded: new Uint8Array(t.nodes.length),
    show: new Uint8Array(t.nodes.length), hit: new Uint8Array(t.nodes.length), flat: [], selected: -1, suspectAt: -1, structAt: -1 };
  const shown = P.get(cmp.result, 'report_rows');
  if (shown && typeof shown === 'object') {
    sec.appendChild(P.el('p', { class: 'notice', id: 'tree-trimmed', dataset: { complete: String(ix.embedded) }, text: ix.embedded
      ? `Every one of the ${P.fmt(ix.n)} rows is in the tree; the report embeds the full rows of ${P.fmt(P.num(shown.shown))} (the worst), so a node's other rows are listed from the tree's summary. \`parity report --max-rows 0\` embeds every row.`
      : `Built from the ${P.fmt(P.num(shown.shown))} rows this report keeps of ${P.fmt(P.num(shown.total))}: a module whose rows were all left out is absent. \`parity report --max-rows 0\` keeps every row.` }));
  }
  P.treeControls(st);
  st.body = P.el('div', { class: 'tr-body', id: 'tree-body', tabindex: '0', role: 'tree' });
  st.spacer = P.el('div', { class: 'tr-spacer' });
  st.body.appendChild(st.spacer);
  st.detail = P.el('div', { class: 'tr-detail', id: 'tree-detail' }, P.el('p', { class: 'legend-note', text: 'Click a node to see its own rows.' }));
  const head = P.el('div', { class: 'tr-head' }, P.el('div', { text: 'fwd' }), P.el('div', { text: 'bwd' }), P.el('div', { text: 'module / op' }));
  sec.appendChild(P.el('div', { class: 'tr-wrap' }, P.el('div', { class: 'tr-tree', id: 'model-tree' }, head, st.body), st.detail));
  let scheduled = false;
  st.body.addEventListener('scroll', () => { if (!scheduled) { scheduled = true; requestAnimationFrame(() => { scheduled = false; P.treeDraw(st); }); } }, { passive: true });
  st.body.addEventListener('click', (ev) => {
    const row = ev.target.closest('.tr-row');
    if (!row) return;
    const id = Number(row.dataset.id);
    if (ev.target.closest('.tr-caret')) P.treeToggle(st, id); else P.treeSelect(st, id);
  });
  P.treeInitialOpen(st);
  P.treeRecompute(st);
  P.tree = P.treeApi(st);
  sec.dataset.nodes = String(t.nodes.length);
  sec.dataset.buildMs = String(Math.round(performance.now() - t0));
  // The tree's first painted frame: from the start of its build, and from navigation start.
  requestAnimationFrame(() => requestAnimationFrame(() => {
    sec.dataset.firstPaintMs = String(Math.round(performance.now() - t0));
    sec.dataset.firstPaintAt = String(Math.round(performance.now()));
  }));
};

// Opens breadth first while at most 100 rows show, never unfolding a numbered child ("layers.3") or an
// op: the model's outline down to its list of layers.
P.treeInitialOpen = function treeInitialOpen(st) {
  const { t } = st;
  let open = t.roots.length;
  for (let queue = [...t.roots]; queue.length;) {
    const id = queue.shift(), n = t.nodes[id];
    if (n.op || (n.depth > 0 && /\.\d+$/.test(n.label)) || open + n.children.length > 100) continue;
    st.expanded[id] = 1;
    open += n.children.length;
    queue.push(...n.children);
  }
};

P.treeControls = function treeControls(st) {
  const { cmp, sec } = st;
  const search = P.el('input', { type: 'search', id: 'tree-search', placeholder: 'find a module or op… or /regex/' });
  const filter = P.el('select', { id: 'tree-filter' }, [['', 'all verdicts'], ['notpass', 'not pass'], ['warn', 'warn'], ['fail', 'fail'], ['error', 'error'],
    ['structure', 'in one run only'], ['nan', 'NaN/Inf']].map(([v, x]) => P.el('option', { value: v, text: x })));
  const btn = (id, text, fn) => P.el('button', { type: 'button', id, text, onclick: fn });
  const items = [search, filter];
  const sel = (id, label, values, set) => {
    const s = P.el('select', { id }, [P.el('option', { value: '-1', text: 'all ' + label + 's' }), ...values.map((v) => P.el('option', { value: String(v), text: `${label} ${v}` }))]);
    s.addEventListener('change', () => { set(Number(s.value)); P.treeRecompute(st); });
    items.push(s);
  };
  const ix = st.t.ix, distinct = (col) => [...new Set(col)].filter((v) => v >= 0).sort((x, y) => x - y);
  const ranks = distinct(ix.rank), steps = distinct(ix.step);
  if (ranks.length > 1) sel('tree-rank', 'rank', ranks, (v) => { st.rank = v; });
  if (steps.length > 1) sel('tree-step', 'step', steps, (v) => { st.step = v; });
  items.push(btn('tree-first', 'expand to first divergence', () => P.treeFirstDivergence(st)),
    btn('tree-suspect', 'next suspect', () => P.treeNextSuspect(st)),
    btn('tree-structure', 'next structure difference', () => P.treeNextStructure(st)),
    btn('tree-expand-all', 'expand all', () => { st.expanded.fill(1); P.treeRelayout(st); }),
    btn('tree-collapse', 'collapse all', () => { st.expanded.fill(0); P.treeRelayout(st); }));
  st.status = P.el('span', { class: 'vt-status', id: 'tree-status' });
  items.push(st.status);
  sec.appendChild(P.el('div', { class: 'controls' }, items));
  let timer = null;
  st.searchInput = search; st.filterSelect = filter;
  search.addEventListener('input', () => { clearTimeout(timer); timer = setTimeout(() => P.treeSetSearch(st, search.value), 120); });
  search.addEventListener('keydown', (ev) => { if (ev.key === 'Enter') { clearTimeout(timer); P.treeSetSearch(st, search.value); P.treeNextHit(st); } });
  filter.addEventListener('change', () => { st.filter = filter.value; P.treeRecompute(st); });
};

// The rank and step on show changed (or the page opened): aggregates, then the filters.
P.treeRecompute = function treeRecompute(st) {
  st.inView = (e) => (st.rank < 0 || e.rank === st.rank) && (st.step < 0 || e.step === st.step);
  st.a = P.treeAggregate(st.t, st.marks, st.rank, st.step);
  P.treeApplyFilter(st);
};

// Which nodes show: with a search, the topmost nodes whose path matches (their ancestors and subtrees
// too); with a verdict filter, the nodes whose own rows match (and their ancestors); both: both hold.
P.treeApplyFilter = function treeApplyFilter(st) {
  const { t, a } = st, N = t.nodes.length;
  const active = Boolean(st.filter || st.search);
  const sub = new Uint8Array(N), under = new Uint8Array(N), pathHit = new Uint8Array(N);
  st.hit.fill(0);
  let hits = 0;
  for (let id = 0; id < N; ++id) {
    const n = t.nodes[id];
    if (!(a.hasG[id] || a.hasT[id])) continue;
    pathHit[id] = st.search ? (st.search(n.path) ? 1 : 0) : 1;
    const topmost = st.search && pathHit[id] && !(n.parent >= 0 && pathHit[n.parent]);
    const own = st.filter ? pathHit[id] && P.treeOwnMatch(t, a, id, st.filter, st.inView) : topmost;
    if (active && own) { st.hit[id] = 1; sub[id] = 1; hits++; }
    if (!st.filter && n.parent >= 0 && (under[n.parent] || st.hit[n.parent])) under[id] = 1;
  }
  for (let id = N - 1; id >= 0; --id) { const p = t.nodes[id].parent; if (p >= 0 && sub[id]) sub[p] = 1; }
  let shown = 0;
  for (let id = 0; id < N; ++id) {
    st.show[id] = (a.hasG[id] || a.hasT[id]) && (!active || sub[id] || under[id]) ? 1 : 0;
    shown += st.show[id];
  }
  st.hits = hits; st.shownCount = shown;
  P.treeRelayout(st);
};

P.treeSetSearch = function treeSetSearch(st, text) {
  st.search = P.textMatcher(text);
  st.hitAt = -1;
  P.treeRecompute(st);
  // Unfold the way to each match (not the matches themselves), unless there are too many to read.
  if (st.search && st.hits <= 5000) {
    for (let id = 0; id < st.t.nodes.length; ++id) {
      if (!st.hit[id]) continue;
      for (let p = st.t.nodes[id].parent; p >= 0 && !st.expanded[p]; p = st.t.nodes[p].parent) st.expanded[p] = 1;
    }
    P.treeRelayout(st);
  }
};

// The flattened tree: shown nodes, children of expanded ones, depth first in execution order.
P.treeRelayout = function treeRelayout(st) {
  const { t } = st;
  const flat = [], stack = [];
  for (let k = t.roots.length - 1; k >= 0; --k) stack.push(t.roots[k]);
  while (stack.length) {
    const id = stack.pop();
    if (!st.show[id]) continue;
    flat.push(id);
    if (st.expanded[id]) { const ch = t.nodes[id].children; for (let k = ch.length - 1; k >= 0; --k) stack.push(ch[k]); }
  }
  st.flat = flat;
  st.spacer.style.height = (flat.length * P.TREE_ROW_H) + 'px';
  const fmtN = (x) => x.toLocaleString('en-US');
  st.status.textContent = `${fmtN(flat.length)} rows open · ${fmtN(st.shownCount)} of ${fmtN(t.nodes.length)} nodes` +
    (st.filter || st.search ? ` · ${fmtN(st.hits)} match${st.hits === 1 ? '' : 'es'}` : '');
  st.sec.dataset.open = String(flat.length);
  st.sec.dataset.hits = String(st.hits);
  P.treeDraw(st);
};

// Only the rows in view (and a few around) exist in the page.
P.treeDraw = function treeDraw(st) {
  const H = P.TREE_ROW_H, top = st.body.scrollTop, h = st.body.clientHeight || 520;
  const first = Math.max(0, Math.floor(top / H) - 8), last = Math.min(st.flat.length, Math.ceil((top + h) / H) + 8);
  const rows = [];
  if (!st.flat.length) rows.push(P.el('div', { class: 'vt-empty', text: 'No node matches.' }));
  for (let k = first; k < last; ++k) rows.push(P.treeRowEl(st, st.flat[k], k));
  P.redrawRows(st.spacer, rows, (el) => el.dataset.id);
};

P.treeRowEl = function treeRowEl(st, id, k) {
  const { t, a } = st, n = t.nodes[id];
  const kids = n.children.some((c) => st.show[c]);
  const open = Boolean(kids && st.expanded[id]);
  const pres = P.treePresence(a, id);
  const cls = 'tr-row' + (id === st.selected ? ' selected' : '') + (st.hit[id] ? ' hit' : '') + (id === st.flash ? ' flash' : '') +
    (pres === 'golden' || pres === 'target' ? ' only-' + pres : '');
  return P.el('div', { class: cls, role: 'treeitem', 'aria-expanded': kids ? String(open) : null, style: `top:${k * P.TREE_ROW_H}px`, dataset: { id, path: n.path } },
    P.treeCell(a.fSev[id], a.fNoise[id], a.fCnt[id], 'forward'),
    P.treeCell(a.bSev[id], a.bNoise[id], a.bCnt[id], 'backward'),
    P.el('div', { class: 'tr-main', style: `padding-left:${4 + n.depth * 16}px` },
      P.el('span', { class: 'tr-caret', text: kids ? (open ? '▾' : '▸') : '' }),
      P.el('span', { class: 'tr-name' + (n.op ? ' op' : ''), text: n.label, title: n.path }),
      P.treeTags(a, id, open)));
};

P.treeToggle = function treeToggle(st, id) {
  st.expanded[id] ^= 1;
  P.treeRelayout(st);
};

P.treeSelect = function treeSelect(st, id) {
  st.selected = id;
  st.detail.replaceChildren(P.treeDetail(st.t, st.cmp, st.a, id, st.inView));
  st.sec.dataset.selected = st.t.nodes[id].path;
  P.treeDraw(st);
};

// Show one node: drop the rank/step choice and filters that hide it, unfold its ancestors, scroll to it,
// select it.
P.treeReveal = function treeReveal(st, id) {
  if (id < 0) return;
  if (!(st.a.hasG[id] || st.a.hasT[id])) {
    st.rank = st.step = -1;
    for (const s of st.sec.querySelectorAll('#tree-rank, #tree-step')) s.value = '-1';
    P.treeRecompute(st);
  }
  if (!st.show[id]) {
    st.search = null; st.filter = ''; st.searchInput.value = ''; st.filterSelect.value = '';
    P.treeApplyFilter(st);
  }
  for (let p = st.t.nodes[id].parent; p >= 0; p = st.t.nodes[p].parent) st.expanded[p] = 1;
  st.flash = id;
  P.treeRelayout(st);
  const k = st.flat.indexOf(id);
  st.body.scrollTop = Math.max(0, k * P.TREE_ROW_H - (st.body.clientHeight || 520) / 2);
  P.treeSelect(st, id);
  // An instant jump, not the page's smooth scroll: the row lands where it is drawn before the next input,
  // so a click that follows (a user's or a test's) hits the row it aimed at, not one scrolling past.
  st.sec.scrollIntoView({ block: 'start', behavior: 'instant' });
  clearTimeout(st.flashTimer);
  st.flashTimer = setTimeout(() => {  // in place: the row may be under the pointer
    for (const el of st.spacer.querySelectorAll('.tr-row.flash')) el.classList.remove('flash');
    st.flash = -1;
  }, 1500);
};

P.treeFirstDivergence = function treeFirstDivergence(st) {
  if (st.marks.first < 0) { st.status.textContent = 'no first divergence: every event stays within the noise model'; return null; }
  P.treeReveal(st, st.marks.first);
  return st.t.nodes[st.marks.first].path;
};

P.treeNextSuspect = function treeNextSuspect(st) {
  const list = st.marks.suspects;
  if (!list.length) { st.status.textContent = 'no suspect in this result'; return null; }
  st.suspectAt = (st.suspectAt + 1) % list.length;
  P.treeReveal(st, list[st.suspectAt].node);
  return st.t.nodes[list[st.suspectAt].node].path;
};

// Nodes in execution order (depth first over every node, whatever is unfolded) that pass `pred`.
P.treeInOrder = function treeInOrder(t, pred) {
  const out = [], stack = [...t.roots].reverse();
  while (stack.length) {
    const id = stack.pop();
    if (pred(id)) out.push(id);
    const ch = t.nodes[id].children;
    for (let k = ch.length - 1; k >= 0; --k) stack.push(ch[k]);
  }
  return out;
};

// The next place where the runs' structure differs: the topmost node recorded in one run only, or a node
// with records that found no partner.
P.treeNextStructure = function treeNextStructure(st) {
  const { t, a } = st;
  const list = P.treeInOrder(t, (id) => {
    const p = t.nodes[id].parent, pres = P.treePresence(a, id);
    if (pres === 'golden' || pres === 'target') return p < 0 || P.treePresence(a, p) === 'both';
    return a.ownG[id] + a.ownT[id] > 0;
  });
  if (!list.length) { st.status.textContent = 'the two runs recorded the same structure'; return null; }
  st.structAt = (st.structAt + 1) % list.length;
  P.treeReveal(st, list[st.structAt]);
  return t.nodes[list[st.structAt]].path;
};

P.treeNextHit = function treeNextHit(st) {
  const list = P.treeInOrder(st.t, (id) => st.hit[id] === 1);
  if (!list.length) return null;
  st.hitAt = ((st.hitAt ?? -1) + 1) % list.length;
  P.treeReveal(st, list[st.hitAt]);
  return st.t.nodes[list[st.hitAt]].path;
};

// For tests and scripts: the tree's state and direct control, by node path.
P.treeApi = function treeApi(st) {
  const idOf = (path) => { const id = st.t.byPath.get(path); if (id === undefined) throw new Error('no tree node ' + path); return id; };
  const info = (path) => {
    const id = idOf(path), a = st.a, v = (s) => (s < 0 ? '' : P.treeVerdicts[s]);
    return { path, label: st.t.nodes[id].label, forward: v(a.fSev[id]), forwardNoise: a.fNoise[id], backward: v(a.bSev[id]), backwardNoise: a.bNoise[id],
      rows: st.t.nodes[id].rows.length, embedded: st.t.nodes[id].rows.filter((i) => st.t.ix.event[i] >= 0).length, presence: P.treePresence(a, id), shown: st.show[id] === 1, children: st.t.nodes[id].children.map((c) => st.t.nodes[c].path) };
  };
  return {
    nodeCount: () => st.t.nodes.length,
    open: () => st.flat.map((id) => st.t.nodes[id].path),
    info,
    toggle: (path) => P.treeToggle(st, idOf(path)),
    select: (path) => P.treeSelect(st, idOf(path)),
    reveal: (path) => P.treeReveal(st, idOf(path)),
    search: (text) => { st.searchInput.value = text; P.treeSetSearch(st, text); },
    filter: (v) => { st.filterSelect.value = v; st.filter = v; P.treeApplyFilter(st); },
    expandAll: () => { st.expanded.fill(1); P.treeRelayout(st); },
    firstDivergence: () => P.treeFirstDivergence(st),
    nextSuspect: () => P.treeNextSuspect(st),
    nextStructure: () => P.treeNextStructure(st),
  };
};
