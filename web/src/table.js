// table.js — every compared event in one virtualised table: only the rows in view exist in the DOM, so
// 100,000 events scroll, sort and filter without delay. Click a header to sort (again to reverse),
// filter by name (substring, or /regex/), verdict and module; click a row to expand all its metrics and
// statistics.

P.ROW_H = 28;
P.DETAIL_H = 300;

P.tableColumns = [
  { key: 'idx', label: '#', width: '64px', num: true, get: (e) => e.idx },
  { key: 'name', label: 'name', width: 'minmax(220px, 3fr)', cls: 'nm', get: (e) => e.name },
  { key: 'module', label: 'module', width: 'minmax(120px, 1.5fr)', get: (e) => e.module },
  { key: 'direction', label: 'dir', width: '44px', get: (e) => (e.direction === 'forward' ? 'fwd' : e.direction === 'backward' ? 'bwd' : e.direction) },
  { key: 'dtype', label: 'dtype', width: '92px', get: (e) => (e.gdtype === e.tdtype ? e.gdtype : e.gdtype + '→' + e.tdtype) },
  { key: 'verdict', label: 'verdict', width: '64px', get: (e) => e.verdict, sortVal: (e) => P.severity(e.verdict) },
  { key: 'noise_units', label: 'noise×', width: '78px', num: true, get: (e) => e.noise_units },
  { key: 'cosine', label: 'cosine', width: '92px', num: true, get: (e) => e.cosine },
  { key: 'rel_l2', label: 'rel L2', width: '78px', num: true, get: (e) => e.rel_l2 },
  { key: 'max_abs', label: 'max abs', width: '78px', num: true, get: (e) => e.max_abs },
  { key: 'reason', label: 'reason', width: 'minmax(160px, 2fr)', get: (e) => e.reason },
];

// Among rows of one verdict: larger noise units first, then larger rel L2; NaN last.
P.worseFirst = function worseFirst(x, y) {
  for (const k of ['noise_units', 'rel_l2']) {
    const a = x[k], b = y[k];
    const an = !P.isNum(a), bn = !P.isNum(b);
    if (an && bn) continue;
    if (an || bn) return an ? 1 : -1;
    if (a !== b) return a > b ? -1 : 1;
  }
  return 0;
};

P.renderTable = function renderTable(cmp) {
  const events = cmp.events;
  const sec = P.openSection('sec-table', 'Events', 'Every compared pair, worst first (verdict, then error in rounding-noise units). Sort by clicking a header; filter by name, verdict and module; click a row for all its metrics.');
  P.runsLine(sec, ...P.compareRuns(cmp));
  const cols = P.tableColumns;
  // Opens worst-first: what a reader looks for first is the failing rows, not execution order.
  const st = { order: null, sortKey: 'verdict', sortDir: 'desc', expanded: new Set(), expandedPos: [], posOf: new Int32Array(events.length) };

  // ---- controls
  const nameIn = P.el('input', { type: 'search', id: 'filter-name', placeholder: 'name contains… or /regex/' });
  const modIn = P.el('input', { type: 'search', id: 'filter-module', placeholder: 'module contains…' });
  const verdictSel = P.el('select', { id: 'filter-verdict' },
    [['', 'all verdicts'], ['notpass', 'not pass'], ['pass', 'pass'], ['warn', 'warn'], ['fail', 'fail'], ['error', 'error']]
      .map(([v, t]) => P.el('option', { value: v, text: t })));
  const status = P.el('span', { class: 'vt-status', id: 'table-status' });
  sec.appendChild(P.el('div', { class: 'controls' }, nameIn, verdictSel, modIn, status));

  // ---- table skeleton
  const head = P.el('div', { class: 'vt-head', role: 'row' });
  const body = P.el('div', { class: 'vt-body', id: 'table-body', tabindex: '0' });
  const spacer = P.el('div', { class: 'vt-spacer' });
  body.appendChild(spacer);
  const vt = P.el('div', { class: 'vt', id: 'event-table', style: '--vt-cols:' + cols.map((c) => c.width).join(' ') }, head, body);
  sec.appendChild(vt);
  for (const c of cols) {
    head.appendChild(P.el('div', { role: 'columnheader', dataset: { key: c.key }, title: 'sort by ' + c.label, text: c.label,
      onclick: () => sortBy(c.key, st.sortKey === c.key && st.sortDir === 'asc' ? 'desc' : 'asc') }));
  }

  // ---- filtering and sorting
  const matcher = P.textMatcher;
  const applyFilter = () => {
    const nm = matcher(nameIn.value), mm = matcher(modIn.value), vs = verdictSel.value;
    const out = [];
    for (const e of events) {
      if (vs === 'notpass' ? e.verdict === 'pass' : vs && e.verdict !== vs) continue;
      if (nm && !nm(e.name) && !(e.target_name !== e.name && nm(e.target_name))) continue;
      if (mm && !mm(e.module)) continue;
      out.push(e.idx);
    }
    st.order = out;
    sortOrder();
  };
  const sortOrder = () => {
    const col = cols.find((c) => c.key === st.sortKey);
    const get = col.sortVal || col.get;
    const dir = st.sortDir === 'asc' ? 1 : -1;
    if (col.key !== 'idx' || dir !== 1) {
      const keyed = st.order.map((i) => [get(events[i]), i]);
      keyed.sort((a, b) => {
        const x = a[0], y = b[0];
        if (col.num || col.sortVal) {
          const xn = Number.isNaN(x), yn = Number.isNaN(y);
          if (xn || yn) return xn && yn ? a[1] - b[1] : (xn ? 1 : -1);  // NaN last both ways
          if (x !== y) return (x < y ? -1 : 1) * dir;
        } else if (x !== y) {
          return (x < y ? -1 : 1) * dir;
        }
        if (col.key === 'verdict') {  // equal verdicts: the larger error first, whatever the direction
          const w = P.worseFirst(events[a[1]], events[b[1]]);
          if (w) return w;
        }
        return a[1] - b[1];
      });
      st.order = keyed.map((k) => k[1]);
    } else {
      st.order.sort((a, b) => a - b);
    }
    for (const h of head.children) h.dataset.sort = h.dataset.key === st.sortKey ? st.sortDir : '';
    reindex();
  };
  const reindex = () => {
    st.posOf.fill(-1);
    st.order.forEach((idx, pos) => { st.posOf[idx] = pos; });
    st.expandedPos = [...st.expanded].map((i) => st.posOf[i]).filter((p) => p >= 0).sort((a, b) => a - b);
    spacer.style.height = (st.order.length * P.ROW_H + st.expandedPos.length * P.DETAIL_H) + 'px';
    status.textContent = `${st.order.length.toLocaleString('en-US')} of ${events.length.toLocaleString('en-US')} events`;
    sec.dataset.shown = String(st.order.length);
    draw();
  };
  const sortBy = (key, dir) => { st.sortKey = key; st.sortDir = dir; sortOrder(); };

  // ---- geometry: row k starts at k·ROW_H plus one DETAIL_H per expanded row above it
  const expandedBefore = (k) => {
    let lo = 0, hi = st.expandedPos.length;
    while (lo < hi) { const mid = (lo + hi) >> 1; if (st.expandedPos[mid] < k) lo = mid + 1; else hi = mid; }
    return lo;
  };
  const rowTop = (k) => k * P.ROW_H + expandedBefore(k) * P.DETAIL_H;
  const rowAt = (y) => {
    let lo = 0, hi = Math.max(0, st.order.length - 1);
    while (lo < hi) { const mid = (lo + hi + 1) >> 1; if (rowTop(mid) <= y) lo = mid; else hi = mid - 1; }
    return lo;
  };

  const fmtCell = (c, e) => {
    const v = c.get(e);
    return typeof v === 'number' ? P.fmt(v) : P.str(v);
  };
  let scheduled = false;
  const draw = () => {
    scheduled = false;
    const top = body.scrollTop, height = body.clientHeight || 560;
    const nodes = [];
    if (!st.order.length) {
      nodes.push(P.el('div', { class: 'vt-empty', text: 'No event matches the filters.' }));
    } else {
      const first = Math.max(0, rowAt(top) - 5);
      for (let k = first; k < st.order.length; ++k) {
        const y = rowTop(k);
        if (y > top + height + 5 * P.ROW_H) break;
        const e = events[st.order[k]];
        const open = st.expanded.has(e.idx);
        const row = P.el('div', { class: 'vt-row' + (open ? ' expanded' : ''), role: 'row', style: `top:${y}px`, dataset: { idx: e.idx, verdict: e.verdict } });
        for (const c of cols) {
          const text = fmtCell(c, e);
          const cell = P.el('div', { class: (c.num ? 'num' : '') + (c.cls ? ' ' + c.cls : ''), dataset: { col: c.key }, text, title: text });
          if (c.key === 'verdict') cell.className = P.verdictClass(e.verdict);
          row.appendChild(cell);
        }
        row.addEventListener('click', () => toggle(e.idx));
        nodes.push(row);
        if (open) nodes.push(P.el('div', { class: 'vt-detail', style: `top:${y + P.ROW_H}px;height:${P.DETAIL_H}px`, dataset: { detail: e.idx } }, P.eventDetail(e)));
      }
    }
    P.redrawRows(spacer, nodes, (el) => (el.dataset.idx !== undefined ? 'r' + el.dataset.idx : el.dataset.detail !== undefined ? 'd' + el.dataset.detail : undefined));
  };
  const schedule = () => { if (!scheduled) { scheduled = true; requestAnimationFrame(draw); } };
  const toggle = (idx) => {
    if (st.expanded.has(idx)) st.expanded.delete(idx); else st.expanded.add(idx);
    reindex();
  };
  body.addEventListener('scroll', schedule, { passive: true });
  let timer = null;
  const debounced = () => { clearTimeout(timer); timer = setTimeout(applyFilter, 120); };
  nameIn.addEventListener('input', debounced);
  modIn.addEventListener('input', debounced);
  verdictSel.addEventListener('change', applyFilter);

  // Show one event: clear filters that hide it, scroll to it, expand it.
  P.focusEvent = (idx) => {
    if (!events[idx]) return;
    if (st.posOf[idx] < 0) { nameIn.value = ''; modIn.value = ''; verdictSel.value = ''; applyFilter(); }
    st.expanded.add(idx);
    reindex();
    const pos = st.posOf[idx];
    sec.scrollIntoView({ block: 'start', behavior: 'instant' });  // as the tree's reveal: no smooth scroll under the next click
    body.scrollTop = Math.max(0, rowTop(pos) - P.ROW_H * 2);
    draw();
    const row = spacer.querySelector(`.vt-row[data-idx="${idx}"]`);
    if (row) { row.classList.add('flash'); setTimeout(() => row.classList.remove('flash'), 1500); }
  };
  // For tests and scripts: the current order (event indices) and direct control.
  P.table = {
    order: () => st.order.slice(),
    sortBy,
    filter: ({ name, module, verdict } = {}) => {
      if (name !== undefined) nameIn.value = name;
      if (module !== undefined) modIn.value = module;
      if (verdict !== undefined) verdictSel.value = verdict;
      applyFilter();
    },
    toggle,
  };
  sec.dataset.rows = String(events.length);
  applyFilter();
};

// Everything known about one event: files, every metric, both sides' statistics side by side.
// The error of each part of the row's record that its run held apart (P.attachShards), the worst marked.
P.shardTable = function shardTable(e) {
  const worst = e.shards.reduce((w, p, i) => (P.isNum(p.rel_l2) && (w < 0 || p.rel_l2 > e.shards[w].rel_l2) ? i : w), -1);
  return P.el('table', { class: 'plain shards', dataset: { side: e.shardSide } },
    P.el('thead', null, P.el('tr', null, ...['part (' + e.shardSide + ')', 'rel L2', 'cosine', 'max abs'].map((t) => P.el('th', { text: t })))),
    P.el('tbody', null, e.shards.map((p, i) => P.el('tr', { class: i === worst && p.rel_l2 > 0 ? 'worst' : '' },
      P.el('td', { text: p.label }), P.el('td', { text: P.fmt(p.rel_l2) }), P.el('td', { text: P.fmt(p.cosine) }), P.el('td', { text: P.fmt(p.max_abs) })))));
};

P.eventDetail = function eventDetail(e) {
  const r = e.raw;
  const box = P.el('div');
  box.appendChild(P.el('div', { class: 'tt-name', text: e.name + (e.target_name !== e.name ? '  ⇄  ' + e.target_name : '') }));
  if (e.shards && e.shards.length) box.appendChild(P.shardTable(e));
  const facts = [
    ['golden file', P.get(r, 'golden', 'file')], ['target file', P.get(r, 'target', 'file')],
    ['golden', `${P.str(P.get(r, 'golden', 'dtype'))} ${JSON.stringify(P.get(r, 'golden', 'shape') || [])}`],
    ['target', `${P.str(P.get(r, 'target', 'dtype'))} ${JSON.stringify(P.get(r, 'target', 'shape') || [])}`],
    ['match', r.match], ['mode', r.mode], ['op', r.op], ['role', r.role], ['step', r.step], ['rank', r.rank], ['order', r.order],
    ['threshold dtype', r.threshold_dtype], ['noise class', r.noise], ['noise ratio', P.num(r.noise_ratio)],
    ['verdict', r.verdict], ['reason', r.reason], ['checksum equal', r.checksum_equal],
  ].filter(([, v]) => v !== undefined && v !== null && v !== '' && v !== -1);
  const kv = (pairs) => {
    const dl = P.el('dl', { class: 'kv' });
    for (const [k, v] of pairs) { dl.appendChild(P.el('dt', { text: k })); dl.appendChild(P.el('dd', { text: typeof v === 'number' ? P.fmt(v) : (typeof v === 'object' ? JSON.stringify(v) : P.str(v)) })); }
    return dl;
  };
  const cols = P.el('div', { class: 'cols' }, kv(facts));
  const m = r.metrics && typeof r.metrics === 'object' ? r.metrics : null;
  if (m) {
    cols.appendChild(kv(Object.entries(m).filter(([, v]) => v === null || typeof v !== 'object').map(([k, v]) => [k, typeof v === 'string' ? P.num(v) : v])));
  }
  box.appendChild(cols);
  // golden vs target statistics (tensor mode: metrics.golden_stats/target_stats; statistics mode: stats.golden/target)
  const gs = m ? m.golden_stats : P.get(r, 'stats', 'golden');
  const ts = m ? m.target_stats : P.get(r, 'stats', 'target');
  if ((gs && typeof gs === 'object') || (ts && typeof ts === 'object')) {
    const keys = [...new Set([...Object.keys(gs || {}), ...Object.keys(ts || {})])];
    box.appendChild(P.el('table', { class: 'plain' },
      P.el('thead', null, P.el('tr', null, P.el('th', { text: 'statistic' }), P.el('th', { text: 'golden' }), P.el('th', { text: 'target' }))),
      P.el('tbody', null, keys.map((k) => P.el('tr', null, P.el('td', { text: k }),
        P.el('td', { text: P.fmt(P.num(P.get(gs, k))) }), P.el('td', { text: P.fmt(P.num(P.get(ts, k))) }))))));
  }
  if (r.stats && typeof r.stats === 'object') {
    box.appendChild(kv(Object.entries(r.stats).filter(([, v]) => v === null || typeof v !== 'object').map(([k, v]) => [k, typeof v === 'string' ? P.num(v) : v])));
  }
  return box;
};
