// overflow.js — NaN/Inf origin: the op where non-finite values are born, its inputs and outputs, and
// the chain of later events they contaminate; near-overflow values and underflowing gradients.
// Input: "parity.overflow/1" results, and the "overflow" key of a compare result ({target, golden},
// docs/diagnosis.md).

// grad_underflow lists every fp16/bf16 parameter gradient measured; those that underflow say so
// (parity.overflow/1 "underflowing"; older results: zero + subnormal share ≥ 0.5, the default).
P.underflowingGrads = (o) => (Array.isArray(o.grad_underflow) ? o.grad_underflow : []).filter((g) =>
  (g.underflowing !== undefined ? g.underflowing === true : P.num(g.zero_fraction) + P.num(g.subnormal_fraction) >= 0.5));

P.overflowHasFindings = (o) => o && typeof o === 'object' &&
  ((Array.isArray(o.origins) && o.origins.length) || (Array.isArray(o.near_overflow) && o.near_overflow.length) ||
   P.underflowingGrads(o).length > 0 || o.grads_overflow || o.grads_underflow);

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

// An event whose non-finite values are an intended mask, not an overflow: no NaN, no +Inf, only -Inf
// (attention masks: masked_fill(-inf), finfo.min · large), and the other run holds exactly the same
// non-finite counts — a mask is part of the model, identical in both runs; an overflow is not.
P.isMaskEvent = function isMaskEvent(e, side) {
  const other = side === 'golden' ? 'target' : 'golden';
  const m = e.raw.metrics;
  const st = m ? m[side + '_stats'] : P.get(e.raw, 'stats', side);
  const so = m ? m[other + '_stats'] : P.get(e.raw, 'stats', other);
  if (!st || !so) return false;
  const count = (x, k) => P.num(P.first(x[k], 0));
  if (count(st, 'nan_count') > 0 || count(st, 'pinf_count') > 0) return false;
  const ninf = count(st, 'ninf_count'), inf = count(st, 'inf_count');
  if (!(ninf > 0 || inf > 0)) return false;
  if (st.ninf_count === undefined && st.pinf_count === undefined) {
    // statistics without the sign of the infinities: a mask only when the minimum is -Inf and the max finite
    if (!(P.num(st.min) === -Infinity && Number.isFinite(P.num(st.max)))) return false;
  }
  return count(so, 'nan_count') === 0 && count(so, 'pinf_count') === 0 &&
    count(so, 'ninf_count') === ninf && count(so, 'inf_count') === inf;
};

// Largest finite value of the narrow formats the near-overflow check covers (IEEE binary16, OCP FP8).
P.formatMax = { f16: 65504, f8_e4m3: 448, f8_e5m2: 57344 };

// A near-overflow entry that is a mask written on purpose (masked_fill with torch.finfo(dtype).min),
// not a value about to overflow: its tensor's minimum is exactly -max of the format while its maximum
// stays below the warning limit. Needs the comparison's statistics of that tensor; without them the
// entry stays a near-overflow.
P.isMaskNearOverflow = function isMaskNearOverflow(n, cmp, side) {
  if (!n || typeof n !== 'object' || !cmp) return false;
  const e = cmp.byName.get(P.str(n.name));
  if (!e) return false;
  const m = e.raw.metrics;
  const st = m ? m[side + '_stats'] : P.get(e.raw, 'stats', side);
  const max = P.formatMax[P.str(n.dtype)];
  if (!st || !max) return false;
  return P.num(st.min) === -max && P.num(st.max) < P.num(n.limit);
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
  const sec = P.openSection('sec-overflow', 'NaN / Inf origin', 'Where non-finite values are first born, what the op saw, and which later events carry them — intended -Inf masks apart from overflow; values close to the format\'s limit; gradients that underflow.');
  if (cmp) P.runsLine(sec, ...P.compareRuns(cmp));
  for (const { label, result: o, side } of shown) {
    sec.appendChild(P.el('h3', { class: 'minor', text: label + (o.source ? ': ' + P.str(o.source) : '') }));
    if (!cmp && o.source) sec.appendChild(P.el('p', { class: 'runs-line mono', dataset: { run: P.str(o.source) }, text: 'run: ' + P.str(o.source) }));
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
    const sd = side || 'target';
    const all = P.nonfiniteChain(cmp, sd);
    const masks = all.filter(({ e }) => P.isMaskEvent(e, sd));
    const chain = all.filter(({ e }) => !P.isMaskEvent(e, sd));
    if (chain.length) {
      sec.appendChild(P.el('h3', { class: 'minor', text: `Contaminated chain (${chain.length} events with NaN/Inf from overflow or invalid operations in the ${sd}, in execution order)` }));
      const ol = P.el('ol', { class: 'mono', id: 'nan-chain' });
      for (const { e, n } of chain.slice(0, 40)) ol.appendChild(P.el('li', null, P.eventLink(e), ` — ${P.fmt(n)} non-finite`));
      sec.appendChild(ol);
      if (chain.length > 40) sec.appendChild(P.el('p', { class: 'legend-note', text: `… ${chain.length - 40} more (filter the table by verdict "error")` }));
    }
    if (masks.length) {
      sec.appendChild(P.el('h3', { class: 'minor', text: `Intended masks, not overflow (${masks.length} events holding only -Inf, the same count in both runs)` }));
      const ol = P.el('ol', { class: 'mono', id: 'mask-chain' });
      for (const { e, n } of masks.slice(0, 40)) ol.appendChild(P.el('li', null, P.eventLink(e), ` — ${P.fmt(n)} × -Inf`));
      sec.appendChild(ol);
      if (masks.length > 40) sec.appendChild(P.el('p', { class: 'legend-note', text: `… ${masks.length - 40} more` }));
    }
    if (Array.isArray(o.near_overflow) && o.near_overflow.length) {
      const near = o.near_overflow.filter((n) => !P.isMaskNearOverflow(n, cmp, sd));
      const maskNear = o.near_overflow.filter((n) => P.isMaskNearOverflow(n, cmp, sd));
      if (near.length) {
        sec.appendChild(P.el('h3', { class: 'minor', text: `Close to overflow (${near.length})` }));
        sec.appendChild(P.el('div', { id: 'near-overflow' }, P.renderValue(near)));
      }
      if (maskNear.length) {
        sec.appendChild(P.el('h3', { class: 'minor', text: `Large-negative masks at the format's limit, not overflow (${maskNear.length})` }));
        sec.appendChild(P.el('div', { id: 'near-overflow-masks' }, P.renderValue(maskNear)));
      }
    }
    const under = P.underflowingGrads(o);
    if (under.length) {
      sec.appendChild(P.el('h3', { class: 'minor', text: `Gradients underflowing (${under.length} of ${o.grad_underflow.length} fp16/bf16 gradients)` }));
      sec.appendChild(P.el('div', { id: 'grad-underflow' }, P.renderValue(under)));
    }
  }
};
