// eval.js — evaluation: PPL/KLD summary with uncertainties, KLD and Δp histograms, per-task accuracy
// with paired test results. Input: "parity.eval/1" results (docs/eval.md).

P.renderEval = function renderEval(results) {
  const sec = P.openSection('sec-eval', 'Evaluation');
  for (const r of results) sec.appendChild(P.renderValue(r));
};
