// curves.js — training curves: golden and target overlaid per metric, the divergence step, spikes and
// NaNs marked, a deviation panel; and the per-rank view. Inputs: "parity.curve/1", "parity.ranks/1".

P.renderCurves = function renderCurves(results) {
  const sec = P.openSection('sec-curves', 'Curves');
  for (const r of results) sec.appendChild(P.renderValue(r));
};

P.renderRanks = function renderRanks(results) {
  const sec = P.openSection('sec-ranks', 'Ranks');
  for (const r of results) sec.appendChild(P.renderValue(r));
};
