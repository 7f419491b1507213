// header.js — the verdict, the two runs' identities, configuration differences, and the diagnosis
// cards (first divergence, top suspects with evidence, each diagnosis with its advice).

// The fingerprint facts worth a glance (docs/dump-format.md); the rest is one click away.
P.fingerprintHighlights = ['device', 'device_name', 'accelerator', 'dtype', 'torch', 'torch_version', 'cuda',
  'python', 'hostname', 'git', 'deterministic', 'tf32', 'matmul_precision', 'amp', 'seed', 'world_size'];

P.renderRun = function renderRun(label, side, extra) {
  const box = P.el('div', { class: 'run' }, P.el('h3', { text: label }));
  const src = side && typeof side === 'object' ? (side.source ?? side.path ?? side.name) : side;
  if (src !== undefined) box.appendChild(P.el('div', { class: 'src', text: P.str(src) }));
  const fp = side && typeof side === 'object' ? side.fingerprint : null;
  if (fp && typeof fp === 'object') {
    const dl = P.el('dl', { class: 'kv' });
    const flat = P.flatten(fp);
    const shown = flat.filter(([k]) => P.fingerprintHighlights.some((h) => k === h || k.endsWith('.' + h)));
    for (const [k, v] of (shown.length ? shown : flat).slice(0, 14)) {
      dl.appendChild(P.el('dt', { text: k }));
      dl.appendChild(P.el('dd', { text: typeof v === 'number' ? P.fmt(v) : P.str(v) }));
    }
    box.appendChild(dl);
    if (flat.length > shown.length) {
      box.appendChild(P.el('details', null, P.el('summary', { text: `full fingerprint (${flat.length} entries)` }), P.renderValue(fp)));
    }
  }
  if (extra) box.appendChild(extra);
  return box;
};

// {a: {b: 1}} -> [["a.b", 1]]
P.flatten = function flatten(obj, prefix, out) {
  out = out || [];
  for (const [k, v] of Object.entries(obj || {})) {
    const key = prefix ? prefix + '.' + k : k;
    if (v && typeof v === 'object' && !Array.isArray(v)) flatten(v, key, out);
    else out.push([key, Array.isArray(v) ? JSON.stringify(v) : v]);
  }
  return out;
};

// Configuration differences: a list of {key|path|name, golden, target, ...} or an object
// {key: {golden, target}}; anything else is shown as it is.
P.renderConfigDiff = function renderConfigDiff(diff) {
  let items = null;
  const list = Array.isArray(diff) ? diff : (diff && Array.isArray(diff.differences) ? diff.differences :
    (diff && Array.isArray(diff.items) ? diff.items : null));
  if (list) {
    items = list.map((d) => (d && typeof d === 'object'
      ? { key: P.first(d.key, d.path, d.name, d.field), golden: d.golden, target: d.target, note: P.first(d.relevance, d.note, d.why, d.impact, d.category) }
      : { key: P.str(d) }));
  } else if (diff && typeof diff === 'object') {
    items = Object.entries(diff).filter(([, v]) => v && typeof v === 'object' && ('golden' in v || 'target' in v))
      .map(([k, v]) => ({ key: k, golden: v.golden, target: v.target, note: P.first(v.relevance, v.note, v.why) }));
    if (!items.length) return P.renderValue(diff);
  } else {
    return null;
  }
  if (!items.length) return P.el('p', { class: 'legend-note', text: 'No configuration differences relevant to precision.' });
  const show = (v) => (v === undefined ? '—' : (typeof v === 'object' ? JSON.stringify(v) : P.str(v)));
  return P.el('table', { class: 'plain', id: 'config-diff' },
    P.el('thead', null, P.el('tr', null, ['setting', 'golden', 'target', 'why it matters'].map((h) => P.el('th', { text: h })))),
    P.el('tbody', null, items.map((it) => P.el('tr', { class: 'differs' },
      P.el('td', { text: show(it.key) }), P.el('td', { text: show(it.golden) }), P.el('td', { text: show(it.target) }),
      P.el('td', { text: it.note === undefined ? '' : show(it.note) })))));
};

P.renderHeader = function renderHeader(data, cmp) {
  const sec = P.openSection('sec-header', 'Verdict');
  const r = cmp ? cmp.result : null;
  const summary = (r && r.summary) || {};
  // The overall verdict: the compare summary's, else the worst verdict any other result states.
  let verdict = P.str(summary.verdict);
  if (!verdict) {
    for (const inp of data.inputs) {
      const v = P.first(P.get(inp.result, 'summary', 'verdict'), P.get(inp.result, 'verdict'));
      if (typeof v === 'string' && (!verdict || P.severity(v) > P.severity(verdict))) verdict = v;
    }
  }
  // A comparison's headline is the words the CLI's last line says (summary.headline, compare JSON 1.6):
  // its verdict "error" reads FAILED there, and here.
  const headline = P.str(summary.headline);
  const headlineClass = { PASSED: 'pass', 'PASSED WITH WARNINGS': 'warn', FAILED: 'fail', 'NO INPUT': 'error' }[headline];
  const top = P.el('div', { class: 'hdr-top' });
  top.appendChild(P.el('span', { class: 'verdict-big badge ' + P.verdictClass(headlineClass || verdict || 'unknown'),
    id: 'overall-verdict', text: headline || verdict || 'no verdict', title: verdict ? 'verdict: ' + verdict : '' }));
  if (r) {
    const counts = P.el('div', { class: 'counts' });
    for (const k of ['rows', 'pass', 'warn', 'fail', 'error', 'unmatched_golden', 'unmatched_target', 'problems']) {
      if (summary[k] !== undefined) counts.appendChild(P.el('span', null, k.replace('_', ' ') + ' ', P.el('b', { text: P.fmt(summary[k]) })));
    }
    top.appendChild(counts);
  }
  sec.appendChild(top);
  if (r) {
    sec.appendChild(P.el('div', { class: 'runs' }, P.renderRun('golden', r.golden), P.renderRun('target', r.target)));
    if (r.command) sec.appendChild(P.el('p', { class: 'legend-note' }, 'command: ', P.el('code', { text: P.str(r.command) })));
    const shown = r.report_rows;
    if (shown && typeof shown === 'object') {
      sec.appendChild(P.el('p', { class: 'legend-note', id: 'rows-shown' },
        `This report shows ${P.fmt(shown.shown)} of ${P.fmt(shown.total)} rows (${P.str(shown.rule)}); every row is in the --json and --csv output.`));
    }
  } else {
    // No comparison: name the inputs the report was built from.
    const ul = P.el('ul');
    for (const inp of data.inputs) ul.appendChild(P.el('li', null, P.el('code', { text: P.str(inp.result && inp.result.schema) }), ' ', inp.origin ? P.el('span', { class: 'mono', text: inp.origin }) : null));
    sec.appendChild(ul);
  }
  const diff = r ? r.config_diff : undefined;
  if (diff !== undefined && diff !== null) {
    sec.appendChild(P.el('h3', { class: 'minor', text: 'Configuration differences' }));
    const node = P.renderConfigDiff(diff);
    if (node) sec.appendChild(node);
  }
};

// Text of a field that may be a string, a list of strings, or an object.
P.textOf = (v) => (v === undefined || v === null ? '' : (typeof v === 'string' ? v : (Array.isArray(v) && v.every((x) => typeof x !== 'object') ? v.join('; ') : '')));

P.eventLink = function eventLink(ev, label) {
  if (!ev) return P.el('span', { class: 'name', text: label || '' });
  return P.el('span', { class: 'name jump', text: label || ev.name, title: 'show in the table', onclick: () => P.focusEvent(ev.idx) });
};

// Metrics of an event as a small key/value list (used by cards).
P.eventFacts = function eventFacts(ev) {
  const dl = P.el('dl', { class: 'kv' });
  const add = (k, v) => { if (v !== '' && !(typeof v === 'number' && Number.isNaN(v))) { dl.appendChild(P.el('dt', { text: k })); dl.appendChild(P.el('dd', { text: typeof v === 'number' ? P.fmt(v) : P.str(v) })); } };
  add('position', ev.idx);
  add('module', ev.module);
  add('direction', ev.direction);
  add('verdict', ev.verdict);
  add('noise ratio', ev.noise_units);
  add('cosine', ev.cosine);
  add('rel L2', ev.rel_l2);
  add('max abs', ev.max_abs);
  add('reason', ev.reason);
  return dl;
};

// The suspects of a compare result in rank order: the highest score first (a suspect without a score
// after those with one), ties as listed. ("rank" in a suspect is the process rank, not its place.)
P.suspectsInRankOrder = function suspectsInRankOrder(result) {
  const suspects = result.suspects;
  const raw = Array.isArray(suspects) ? suspects : (suspects && Array.isArray(suspects.rows) ? suspects.rows : []);
  return raw.map((x, k) => [x, k]).sort(([a, ka], [b, kb]) => {
    const sa = P.num(a && a.score), sb = P.num(b && b.score);
    if (P.isNum(sa) !== P.isNum(sb)) return P.isNum(sa) ? -1 : 1;
    if (P.isNum(sa) && P.isNum(sb) && sa !== sb) return sb - sa;
    return ka - kb;
  }).map(([x]) => x);
};

P.renderDiagnosis = function renderDiagnosis(cmp) {
  const r = cmp.result;
  const fd = r.first_divergence, diag = r.diagnosis;
  const diagList = Array.isArray(diag) ? diag : (diag && Array.isArray(diag.findings) ? diag.findings :
    (diag && Array.isArray(diag.causes) ? diag.causes : (diag ? [diag] : [])));
  const suspectList = P.suspectsInRankOrder(r);
  if ((fd === undefined || fd === null) && !suspectList.length && !diagList.length) return;
  const sec = P.openSection('sec-diagnosis', 'Diagnosis', 'Where the target first departs from the golden run, the events most likely to cause it, and what to do about it.');
  P.runsLine(sec, ...P.compareRuns(cmp));
  const cards = P.el('div', { class: 'cards' });
  sec.appendChild(cards);

  if (fd !== undefined) {
    const ev = P.resolveEvent(cmp, fd);
    const card = P.el('div', { class: 'card first', id: 'card-first-divergence' }, P.el('div', { class: 'kind', text: 'first divergence' }));
    if (fd === null) {
      card.appendChild(P.el('h3', { text: 'none: every event stays within the noise model' }));
    } else {
      card.appendChild(P.el('h3', null, P.eventLink(ev, P.first(fd.name, ev && ev.name, typeof fd === 'string' ? fd : ''))));
      const why = P.textOf(P.first(fd.reason, fd.why, fd.explanation, fd.message));
      if (why) card.appendChild(P.el('p', { text: why }));
      if (ev) card.appendChild(P.eventFacts(ev));
      else if (typeof fd === 'object') card.appendChild(P.renderValue(fd));
    }
    cards.appendChild(card);
  }

  suspectList.slice(0, 8).forEach((s, i) => {
    const ev = P.resolveEvent(cmp, s);
    const card = P.el('div', { class: 'card suspect', dataset: { suspect: i } }, P.el('div', { class: 'kind', text: `suspect #${i + 1}` + (P.isNum(P.num(s && s.score)) ? ` · score ${P.fmt(P.num(s.score))}` : '') }));
    card.appendChild(P.el('h3', null, P.eventLink(ev, P.first(s && s.event, s && s.name, ev && ev.name, typeof s === 'string' ? s : ''))));
    // kind: the error is created by the op itself ("source"), or enters through its inputs or parameters
    const kindText = { source: 'creates the error itself', inputs: 'its inputs already differ', parameters: 'its parameters differ',
                       structure: 'an op present in one run only' };
    const kind = P.str(s && s.kind);
    if (kind) card.appendChild(P.el('p', { text: (kindText[kind] || kind) + (s.weak_evidence ? ' (statistics only: weak evidence)' : '') }));
    if (s && typeof s === 'object') {
      const dl = P.el('dl', { class: 'kv' });
      for (const k of ['module', 'op', 'direction', 'input_ratio', 'param_ratio', 'output_ratio']) {
        const v = k.endsWith('ratio') ? P.num(s[k]) : P.str(s[k]);
        if (v === '' || (typeof v === 'number' && Number.isNaN(v))) continue;
        dl.appendChild(P.el('dt', { text: k.replace('_', ' ') }));
        dl.appendChild(P.el('dd', { text: typeof v === 'number' ? P.fmt(v) + ' u' : v }));
      }
      if (dl.childNodes.length) card.appendChild(dl);
    }
    const evidence = s && typeof s === 'object' ? P.first(s.evidence, s.reasons, s.why) : undefined;
    if (evidence !== undefined) {
      if (Array.isArray(evidence)) card.appendChild(P.el('ul', null, evidence.map((x) => P.el('li', null, typeof x === 'object' ? P.renderValue(x) : P.str(x)))));
      else card.appendChild(typeof evidence === 'object' ? P.renderValue(evidence) : P.el('p', { text: P.str(evidence) }));
    }
    cards.appendChild(card);
  });
  if (suspectList.length > 8) sec.appendChild(P.el('p', { class: 'legend-note', text: `${suspectList.length - 8} more suspects in the JSON result.` }));

  diagList.forEach((d, i) => {
    if (!d || typeof d !== 'object') { cards.appendChild(P.el('div', { class: 'card diag' }, P.el('p', { text: P.str(d) }))); return; }
    const title = P.first(d.title, d.cause, d.summary, d.code, d.rule, `finding ${i + 1}`);
    const card = P.el('div', { class: 'card diag', dataset: { diagnosis: P.str(P.first(d.code, d.rule, i)) } },
      P.el('div', { class: 'kind', text: ['diagnosis', d.code || d.rule, P.isNum(P.num(P.first(d.strength, d.confidence))) ? `strength ${P.fmt(P.num(P.first(d.strength, d.confidence)))}` : P.str(P.first(d.strength, d.confidence, d.severity, ''))].filter(Boolean).join(' · ') }),
      P.el('h3', { text: P.str(title) }));
    const detail = P.textOf(P.first(d.detail, d.explanation, d.message, d.description));
    if (detail && detail !== title) card.appendChild(P.el('p', { text: detail }));
    const evidence = P.first(d.evidence, d.findings);
    if (Array.isArray(evidence) && evidence.length) {
      card.appendChild(P.el('ul', null, evidence.slice(0, 12).map((x) => {
        const ev = typeof x === 'object' ? P.resolveEvent(cmp, x) : null;
        if (typeof x !== 'object') return P.el('li', { text: P.str(x) });
        const text = P.textOf(P.first(x.text, x.message, x.detail, x.fact, x.description));
        return P.el('li', null, ev ? P.eventLink(ev) : null, ev && text ? ': ' : '', text || (ev ? '' : P.renderValue(x)));
      })));
    } else if (evidence !== undefined) {
      card.appendChild(typeof evidence === 'object' ? P.renderValue(evidence) : P.el('p', { text: P.str(evidence) }));
    }
    if (Array.isArray(d.events) && d.events.length) {
      card.appendChild(P.el('p', { class: 'legend-note' }, 'events: ', d.events.slice(0, 6).map((name, k) => {
        const ev = P.resolveEvent(cmp, P.str(name));
        return [k ? ', ' : '', P.eventLink(ev, P.str(name))];
      }), d.events.length > 6 ? ` … ${d.events.length - 6} more` : ''));
    }
    const advice = P.first(d.advice, d.fix, d.suggestion, d.recommendation);
    if (advice !== undefined) {
      card.appendChild(P.el('div', { class: 'advice' }, P.el('b', { text: 'Advice: ' }),
        Array.isArray(advice) ? P.el('ul', null, advice.map((a) => P.el('li', { text: typeof a === 'object' ? JSON.stringify(a) : P.str(a) }))) : P.str(advice)));
    }
    cards.appendChild(card);
  });
};

// Unreadable files, records present on one side only, notes.
P.renderProblems = function renderProblems(cmp) {
  const r = cmp.result;
  const problems = Array.isArray(r.problems) ? r.problems : [];
  const ug = Array.isArray(P.get(r, 'unmatched', 'golden')) ? r.unmatched.golden : [];
  const ut = Array.isArray(P.get(r, 'unmatched', 'target')) ? r.unmatched.target : [];
  const notes = Array.isArray(r.notes) ? r.notes : [];
  if (!problems.length && !ug.length && !ut.length && !notes.length) return;
  const sec = P.openSection('sec-problems', 'Unmatched, unreadable, notes');
  P.runsLine(sec, ...P.compareRuns(cmp));
  const brief = (list) => list.map((x) => ({ name: P.str(x.name), dtype: P.str(x.dtype), shape: JSON.stringify(x.shape || []), file: P.str(x.file) }));
  if (problems.length) { sec.appendChild(P.el('h3', { class: 'minor', text: `Unreadable (${problems.length})` })); sec.appendChild(P.renderValue(problems)); }
  if (ug.length) { sec.appendChild(P.el('h3', { class: 'minor', text: `Only in golden (${ug.length})` })); sec.appendChild(P.renderValue(brief(ug))); }
  if (ut.length) { sec.appendChild(P.el('h3', { class: 'minor', text: `Only in target (${ut.length})` })); sec.appendChild(P.renderValue(brief(ut))); }
  if (notes.length) { sec.appendChild(P.el('h3', { class: 'minor', text: 'Notes' })); sec.appendChild(P.el('ul', null, notes.map((n) => P.el('li', { text: P.str(n) })))); }
};
