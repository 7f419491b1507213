// overflow.js — NaN/Inf origin: the op where non-finite values are born and the chain they contaminate.
// Input: "parity.overflow/1" results, or the "overflow" key of a compare result (docs/analysis.md).

P.renderOverflow = function renderOverflow(results, cmp) {
  const sec = P.openSection('sec-overflow', 'NaN / Inf origin', 'Where non-finite values first appear, and which later events carry them.');
  for (const r of results) sec.appendChild(P.renderValue(r));
};
