'use strict';
// util.js — DOM building and number formatting shared by every section.
// Every string from the data is placed with textContent (through el()), never parsed as HTML: a tensor
// whose name is an HTML script element shows as those characters.

const P = {};  // the report's namespace: sections register their renderers here

// el('div', {class: 'x', dataset: {n: 3}, onclick: f}, child, 'text', [more]) -> HTMLElement.
P.el = function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  if (attrs) {
    for (const [k, v] of Object.entries(attrs)) {
      if (v === undefined || v === null || v === false) continue;
      if (k === 'class') node.className = v;
      else if (k === 'text') node.textContent = String(v);
      else if (k === 'dataset') Object.assign(node.dataset, v);
      else if (k === 'style') node.style.cssText = v;
      else if (k.startsWith('on') && typeof v === 'function') node.addEventListener(k.slice(2), v);
      else node.setAttribute(k, v === true ? '' : String(v));
    }
  }
  P.append(node, children);
  return node;
};

P.append = function append(node, children) {
  for (const c of children) {
    if (c === undefined || c === null || c === false) continue;
    if (Array.isArray(c)) P.append(node, c);
    else if (c instanceof Node) node.appendChild(c);
    else node.appendChild(document.createTextNode(String(c)));
  }
  return node;
};

// A name filter typed by a reader: a substring (case-insensitive), or /regex/flags; null when empty.
// Redraws a virtual list's rows: a fresh row drawn exactly as the one already there (same key, same
// content and position) keeps the old element, unmoved. A redraw (a scroll, a timer) between a click's
// mousedown and mouseup must not detach or move the element under the pointer, or the browser drops the
// click. Both lists are in display order, so the changed rows are removed and the new ones inserted
// around the kept ones; the DOM order stays the display order (screen readers, tests read it).
P.redrawRows = function redrawRows(parent, fresh, key) {
  const old = new Map();
  for (const el of parent.children) { const k = key(el); if (k !== undefined) old.set(k, el); }
  const rows = fresh.map((el) => { const k = key(el), o = k === undefined ? undefined : old.get(k); return o && o.isEqualNode(el) ? o : el; });
  const keep = new Set(rows.filter((el) => el.parentNode === parent));
  for (const el of [...parent.children]) if (!keep.has(el)) el.remove();
  let cur = parent.firstChild;
  for (const el of rows) {
    if (el === cur) cur = cur.nextSibling;
    else parent.insertBefore(el, cur);
  }
};

P.textMatcher = function textMatcher(text) {
  const t = text.trim();
  if (!t) return null;
  const m = /^\/(.*)\/([a-z]*)$/.exec(t);
  if (m) {
    try { const re = new RegExp(m[1], m[2].includes('i') ? m[2] : m[2] + 'i'); return (s) => re.test(s); } catch (err) { /* not a regex: substring */ }
  }
  const low = t.toLowerCase();
  return (s) => s.toLowerCase().includes(low);
};

P.isNum = (v) => typeof v === 'number' && Number.isFinite(v);

// Compact, readable numbers: 0.99987, 1.23e-5, 12 345, "NaN" for missing/non-finite values.
P.fmt = function fmt(v, digits) {
  if (v === null || v === undefined) return '—';
  if (typeof v === 'boolean') return v ? 'yes' : 'no';
  if (typeof v !== 'number') return String(v);
  if (Number.isNaN(v)) return 'n/a';  // no value: the spelling of every human-readable output (include/parity/number_text.h)
  if (!Number.isFinite(v)) return v > 0 ? '+Inf' : '−Inf';
  if (Number.isInteger(v) && Math.abs(v) < 1e15) return v.toLocaleString('en-US');
  const a = Math.abs(v);
  const d = digits || 4;
  if (a !== 0 && (a < 1e-3 || a >= 1e6)) return v.toExponential(d - 1);
  // cosines near 1 deserve their nines
  if (a > 0.99 && a < 1) return v.toPrecision(Math.max(d + 2, 6));
  return String(+v.toPrecision(d));
};

P.verdictClass = (v) => 'v-' + (['pass', 'warn', 'fail', 'error'].includes(v) ? v : 'error');
P.badge = (v) => P.el('span', { class: 'badge ' + P.verdictClass(v), text: v || 'unknown' });
P.severity = (v) => ({ pass: 0, warn: 1, fail: 2, error: 3 }[v] ?? 3);

// A section: heading, optional sub-line, then content; shown (unhidden) and listed in the nav.
// "golden: X · target: Y" under a section's title: every section names the runs it compares.
P.runsLine = function runsLine(sec, golden, target, words) {
  const [a, b] = words || ['golden', 'target'];
  const p = P.el('p', { class: 'runs-line mono', dataset: { golden: P.str(golden), target: P.str(target) },
    text: `${a}: ${P.str(golden) || '(unnamed)'} · ${b}: ${P.str(target) || '(unnamed)'}` });
  sec.appendChild(p);
  return p;
};
// The runs of a compare result.
P.compareRuns = (cmp) => [P.str(P.get(cmp.result, 'golden', 'source')), P.str(P.get(cmp.result, 'target', 'source'))];

P.openSection = function openSection(id, title, sub) {
  const sec = document.getElementById(id);
  sec.replaceChildren();
  sec.hidden = false;
  sec.dataset.present = '1';
  sec.appendChild(P.el('h2', { text: title }));
  if (sub) sec.appendChild(P.el('p', { class: 'sub', text: sub }));
  const nav = document.getElementById('nav');
  if (!nav.querySelector('a[href="#' + id + '"]')) {
    nav.appendChild(P.el('a', { href: '#' + id, text: title }));
  }
  return sec;
};

// Generic rendering of any JSON value as text: objects as key/value lists, arrays of objects as tables.
// Used for data whose exact shape this report does not know (a newer schema, a new key) so nothing is lost.
P.renderValue = function renderValue(v, depth) {
  depth = depth || 0;
  if (v === null || v === undefined) return P.el('span', { class: 'mono', text: '—' });
  if (typeof v !== 'object') return P.el('span', { class: 'mono', text: typeof v === 'number' ? P.fmt(v) : String(v) });
  if (Array.isArray(v)) {
    if (v.length === 0) return P.el('span', { class: 'mono', text: '[]' });
    if (v.every((x) => x && typeof x === 'object' && !Array.isArray(x)) && depth < 3) {
      const keys = [];
      for (const row of v.slice(0, 200)) for (const k of Object.keys(row)) if (!keys.includes(k)) keys.push(k);
      const table = P.el('table', { class: 'plain' },
        P.el('thead', null, P.el('tr', null, keys.map((k) => P.el('th', { text: k })))),
        P.el('tbody', null, v.slice(0, 200).map((row) =>
          P.el('tr', null, keys.map((k) => P.el('td', null, P.renderValue(row[k], depth + 1)))))));
      if (v.length > 200) return P.el('div', null, table, P.el('p', { class: 'legend-note', text: `… and ${v.length - 200} more` }));
      return table;
    }
    if (v.every((x) => x === null || typeof x !== 'object')) {
      const shown = v.slice(0, 64).map((x) => (typeof x === 'number' ? P.fmt(x) : String(x))).join(', ');
      return P.el('span', { class: 'mono', text: '[' + shown + (v.length > 64 ? `, … ${v.length} items` : '') + ']' });
    }
    return P.el('div', null, v.slice(0, 50).map((x) => P.renderValue(x, depth + 1)));
  }
  const dl = P.el('dl', { class: 'kv' });
  for (const [k, x] of Object.entries(v)) {
    dl.appendChild(P.el('dt', { text: k }));
    dl.appendChild(P.el('dd', null, depth < 4 ? P.renderValue(x, depth + 1) : JSON.stringify(x)));
  }
  return dl;
};

// ECharts tooltip content as DOM (the formatter may return an element): a title and name/value rows.
P.tooltip = function tooltip(title, rows) {
  return P.el('div', { class: 'tt' },
    P.el('div', { class: 'tt-name', text: title }),
    P.el('table', null, rows.filter((r) => r).map(([k, v]) => P.el('tr', null, P.el('td', { text: k }), P.el('td', { text: typeof v === 'number' ? P.fmt(v) : String(v ?? '—') })))));
};

// Charts register here so the page can resize them and tests can inspect them.
P.charts = {};
P.makeChart = function makeChart(key, container) {
  const chart = echarts.init(container, null, { renderer: 'canvas' });
  P.charts[key] = chart;
  return chart;
};

P.get = function get(obj, ...path) {
  let cur = obj;
  for (const p of path) {
    if (cur === null || cur === undefined || typeof cur !== 'object') return undefined;
    cur = cur[p];
  }
  return cur;
};
P.first = (...vals) => vals.find((v) => v !== undefined && v !== null);
