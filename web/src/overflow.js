// overflow.js — NaN/Inf origin: the op where non-finite values are born, its inputs and outputs, and
// the chain of later events they contaminate; near-overflow values and underflowing gradients.
// Input: "parity.overflow/1" results, and the "overflow" key of a compare result ({target, golden},
// docs/diagnosis.md).

P.overflowHasFindings = (o) => o && typeof o === 'object' &&
  ((Array.isArray(o.origins) && o.origins.length) || (Array.isArray(o.near_overflow) && o.near_overflow.length) ||
   (Array.isArray(o.grad_underflow) && o.grad_underflow.length) || o.grads_overflow || o.grads_underflow);

// Events of the comparison whose target holds NaN/Inf, in execution order: the contaminated chain.
P.nonfiniteChain = function nonfiniteChain(cmp, side) {
  if (!cmp) return [];
  const out = [];
  for (const e of cmp.events) {
    const m = e.raw.metrics;
    const st = m ? m[side + '_stats'] : P.get(e.raw, 'stats', side);
    if (!st) continue;
    const n = P.num(st.nan_count) + P.num(P.first(st.pinf_count, 0)) + P.num(P.first(st.ninf_count, 0)) + P.num(P.first(st.inf_count, 0));
    if (n > 0) out.push({ e, n });
  }
  return out;
};

P.rangeTable = function rangeTable(ranges) {
  const cols = ['name', 'role', 'dtype', 'min', 'max', 'absmax', 'nan', 'inf'];
  return P.el('table', { class: 'plain' },
    P.el('thead', null, P.el('tr', null, cols.map((c) => P.el('th', { text: c })))),
    P.el('tbody', null, ranges.map((r) => P.el('tr', { class: P.num(r.nan) > 0 || P.num(r.inf) > 0 ? 'differs' : '' },
      cols.map((c) => P.el('td', { text: ['min', 'max', 'absmax', 'nan', 'inf'].includes(c) ? P.fmt(P.num(r[c])) : P.str(r[c]) }))))));
};

P.renderOverflow = function renderOverflow(items, cmp) {
  // items: [{label, result}] — only those with something to show
  // A standalone `parity overflow` result is always shown (its "nothing found" is the answer); the
  // compare result's own overflow analysis only when it found something.
  const shown = items.filter((it) => it.standalone || P.overflowHasFindings(it.result));
  if (!shown.length) return;
  const sec = P.openSection('sec-overflow', 'NaN / Inf origin', 'Where non-finite values are first born, what the op saw, and which later events carry them; values close to the format\'s limit; gradients that underflow.');
  for (const { label, result: o, side } of shown) {
    sec.appendChild(P.el('h3', { class: 'minor', text: label + (o.source ? ': ' + P.str(o.source) : '') }));
    const facts = [];
    for (const k of ['records', 'measured', 'nonfinite_records']) if (o[k] !== undefined) facts.push(`${k.replace('_', ' ')} ${P.fmt(o[k])}`);
    if (o.loss_scale_advice) facts.push(`loss scale: ${P.str(o.loss_scale_advice)} it`);
    if (facts.length) sec.appendChild(P.el('p', { class: 'legend-note', text: facts.join(' · ') }));
    if (!P.overflowHasFindings(o)) sec.appendChild(P.el('p', { class: 'notice', text: 'No NaN or Inf, no value close to overflow, no underflowing gradient in the measured records.' }));
    const cards = P.el('div', { class: 'cards' });
    for (const org of Array.isArray(o.origins) ? o.origins : []) {
      const ev = cmp ? P.resolveEvent(cmp, { event: org.event, step: org.step, rank: org.rank }) : null;
      const card = P.el('div', { class: 'card first', dataset: { origin: P.str(org.event) } },
        P.el('div', { class: 'kind', text: `NaN/Inf born here · step ${P.fmt(org.step)} · rank ${P.fmt(org.rank)}` + (org.gradient ? ' · a parameter gradient' : '') }),
        P.el('h3', null, P.eventLink(ev, P.str(org.event))),
        P.el('p', { class: 'legend-note', text: [org.op && 'op ' + org.op, org.module && 'module ' + org.module, org.direction, P.isNum(org.order) && org.order >= 0 ? 'order ' + org.order : ''].filter(Boolean).join(' · ') }));
      if (org.explanation) card.appendChild(P.el('p', { text: P.str(org.explanation) }));
      if (P.isNum(org.contaminated)) card.appendChild(P.el('p', null, P.el('b', { text: P.fmt(org.contaminated) }), ' later events of this step carry NaN/Inf'));
      cards.appendChild(card);
      const ranges = [...(org.inputs || []), ...(org.outputs || [])];
      if (ranges.length) card.appendChild(P.rangeTable(ranges));
    }
    sec.appendChild(cards);
    // The contaminated chain, from the comparison's per-event statistics.
    const chain = P.nonfiniteChain(cmp, side || 'target');
    if (chain.length) {
      sec.appendChild(P.el('h3', { class: 'minor', text: `Contaminated chain (${chain.length} events with NaN/Inf in the ${side || 'target'}, in execution order)` }));
      const ol = P.el('ol', { class: 'mono', id: 'nan-chain' });
      for (const { e, n } of chain.slice(0, 40)) ol.appendChild(P.el('li', null, P.eventLink(e), ` — ${P.fmt(n)} non-finite`));
      sec.appendChild(ol);
      if (chain.length > 40) sec.appendChild(P.el('p', { class: 'legend-note', text: `… ${chain.length - 40} more (filter the table by verdict "error")` }));
    }
    if (Array.isArray(o.near_overflow) && o.near_overflow.length) {
      sec.appendChild(P.el('h3', { class: 'minor', text: `Close to overflow (${o.near_overflow.length})` }));
      sec.appendChild(P.renderValue(o.near_overflow));
    }
    if (Array.isArray(o.grad_underflow) && o.grad_underflow.length) {
      sec.appendChild(P.el('h3', { class: 'minor', text: `Gradients underflowing (${o.grad_underflow.length})` }));
      sec.appendChild(P.renderValue(o.grad_underflow));
    }
  }
};
