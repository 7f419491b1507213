// Synthetic "parity.compare/1" results for the report's tests and its 100,000-event benchmark.
//   node bench/report_synth.mjs N OUT.json [--steps S] [--xss]
// The events imitate a transformer's capture: per layer, forward outputs of its modules, then the
// backward pass in reverse; the error grows after a chosen layer (the "first divergence"), so every
// section of the report has something to draw. Deterministic (seeded), so a test can count on it.
import fs from 'node:fs';

const args = process.argv.slice(2);
const n = Number(args[0] || 1000);
const out = args[1] || 'synth.json';
const steps = args.includes('--steps') ? Number(args[args.indexOf('--steps') + 1]) : 1;
const xss = args.includes('--xss');

let seed = 12345;
const rand = () => ((seed = (seed * 1103515245 + 12345) >>> 0) / 2 ** 32);

const parts = ['attn.q_proj', 'attn.k_proj', 'attn.v_proj', 'attn.softmax', 'attn.o_proj', 'norm', 'mlp.up', 'mlp.act', 'mlp.down'];
const perStep = Math.ceil(n / steps);
const layersNeeded = Math.max(2, Math.ceil(perStep / (2 * parts.length)));
const badLayer = Math.floor(layersNeeded * 0.6);
const u = 2 ** -8;  // bf16 unit roundoff

const rows = [];
for (let s = 0; s < steps && rows.length < n; ++s) {
  const events = [];
  for (let l = 0; l < layersNeeded; ++l) for (const p of parts) events.push({ module: `model.layers.${l}.${p}`, l, p, direction: 'forward' });
  for (let l = layersNeeded - 1; l >= 0; --l) for (const p of [...parts].reverse()) events.push({ module: `model.layers.${l}.${p}`, l, p, direction: 'backward' });
  for (let i = 0; i < events.length && rows.length < n && i < perStep; ++i) {
    const ev = events[i];
    const grow = ev.l >= badLayer ? 30 * (1 + ev.l - badLayer) * (ev.p === 'attn.softmax' && ev.l === badLayer ? 8 : 1) * (1 + s * 0.2) : 1;
    const ratio = (0.5 + rand()) * grow;
    const rel = ratio * u;
    const cosine = 1 - rel * rel / 2;
    const verdict = ratio > 200 ? 'fail' : ratio > 20 ? 'warn' : 'pass';
    const name = `${ev.module}.${ev.direction}.output.${s}`;
    rows.push({
      name, target_name: name, match: 'exact', mode: 'tensor',
      event: name.replace(/\.output\.\d+$/, ''), site: { call: 0, module: ev.module, op: '' },  // as parity writes a dotted name's
      golden: { dtype: 'f32', shape: [4, 128], file: `golden/${name}.npy` },
      target: { dtype: 'bf16', shape: [4, 128], file: `target/${name}.npy` },
      module: ev.module, op: ev.p.split('.').pop(), direction: ev.direction, role: 'output', index: 0,
      step: steps > 1 ? s : -1, rank: -1, order: i, shape_differs: false, threshold_dtype: 'bf16',
      metrics: {
        numel: 512, compared: 512, cosine, euclidean: rel * 20, rel_l2: rel, rmse: rel, sqnr_db: -20 * Math.log10(rel),
        max_abs: rel * 40, max_abs_index: Math.floor(rand() * 512), mean_abs: rel * 5, max_rel: rel * 60, max_rel_index: 3,
        thousandth_ratio: 0.9, five_thousandth_ratio: 0.99, frac_abs_gt_1e6: 0.5, frac_abs_gt_1e4: 0.1, frac_abs_gt_1e2: 0,
        ulp_max: 1 + ratio, ulp_mean: 0.3, frac_ulp_gt1: 0.01, nonfinite_agree: true, nonfinite_mismatch: 0, ftz_count: 0,
        kl: 'NaN', kl_computed: false,
        golden_stats: { min: -3.1, max: 3.2, mean: 0.01, l2norm: 22.6, std: 1, absmax: 3.2, nan_count: 0, pinf_count: 0, ninf_count: 0, zero_count: 0, subnormal_count: 0 },
        target_stats: { min: -3.1, max: 3.21, mean: 0.011, l2norm: 22.6, std: 1, absmax: 3.21, nan_count: 0, pinf_count: 0, ninf_count: 0, zero_count: 0, subnormal_count: 0 },
      },
      stats: null, checksum_equal: null, verdict,
      reason: verdict === 'pass' ? `cosine ${cosine.toFixed(6)} ≥ 0.999` : `rel_l2 ${rel.toExponential(2)} > 1e-2`,
      noise: ratio > 20 ? 'structural' : ratio > 3 ? 'elevated' : 'noise', noise_ratio: ratio,
    });
  }
}
if (xss && rows.length > 2) {
  rows[1].name = rows[1].target_name = '<script>alert(1)</script>';
  rows[1].module = '<img src=x onerror=alert(2)>';
  rows[1].reason = '<b>not bold</b> & "quoted"';
}
const count = (v) => rows.filter((r) => r.verdict === v).length;
const first = rows.findIndex((r) => r.noise === 'structural');
const summary = { rows: rows.length, pass: count('pass'), warn: count('warn'), fail: count('fail'), error: count('error'),
  unmatched_golden: 0, unmatched_target: 0, problems: 0 };
summary.verdict = summary.error ? 'error' : summary.fail ? 'fail' : summary.warn ? 'warn' : 'pass';
summary.exit_code = summary.verdict === 'pass' ? 0 : 1;
const result = {
  schema: 'parity.compare/1', parity_version: 'synthetic', command: `node bench/report_synth.mjs ${n} ${out}`,
  elapsed_seconds: 0,
  golden: { source: 'golden/ (synthetic)', fingerprint: null }, target: { source: 'target/ (synthetic)', fingerprint: null },
  thresholds: {}, summary, rows, unmatched: { golden: [], target: [] }, problems: [], notes: ['synthetic data for the report benchmark'],
};
// The analysis keys in the shapes src/diagnosis/findings_json.cpp writes (docs/compare-json.md).
if (first >= 0) {
  const r = rows[first];
  result.first_divergence = { row: first, name: r.name, event: r.name.replace(/\.output\.\d+$/, ''), module: r.module, op: r.op,
    direction: r.direction, role: r.role, step: r.step, rank: r.rank, verdict: r.verdict, reason: r.reason, noise: r.noise, noise_ratio: r.noise_ratio };
  const softmax = rows.findIndex((x) => x.module === `model.layers.${badLayer}.attn.softmax` && x.direction === 'forward');
  const src = rows[softmax >= 0 ? softmax : first];
  result.suspects = [
    { kind: 'source', event: src.name.replace(/\.output\.\d+$/, ''), module: src.module, op: src.op, direction: src.direction, step: src.step, rank: -1,
      score: 6.2, input_ratio: 40, param_ratio: 'NaN', output_ratio: src.noise_ratio, weak_evidence: false, why: `output ${src.noise_ratio.toFixed(0)} u from inputs 40 u (×8)` },
    { kind: 'source', event: r.name.replace(/\.output\.\d+$/, ''), module: r.module, op: r.op, direction: r.direction, step: r.step, rank: -1,
      score: 4.5, input_ratio: 1.2, param_ratio: 'NaN', output_ratio: r.noise_ratio, weak_evidence: false, why: `output ${r.noise_ratio.toFixed(0)} u from inputs 1.2 u (×${(r.noise_ratio / 1.2).toFixed(0)})` },
  ];
  result.diagnosis = [
    { code: 'LOW_PRECISION_SENSITIVE_OP', title: 'softmax computed in bf16 loses precision', strength: 0.8,
      evidence: [`${src.name}: noise ratio ${src.noise_ratio.toFixed(1)}`, 'inputs within 40 u'], advice: 'compute softmax in fp32 (upcast its input)',
      events: [src.name.replace(/\.output\.\d+$/, '')] },
  ];
  result.config_diff = [
    { key: 'torch.backends.cuda.matmul.allow_tf32', golden: 'false', target: 'true', category: 'precision', numeric: true },
    { key: 'hostname', golden: '"gpu-a"', target: '"npu-b"', category: 'other', numeric: false },
  ];
}
if (args.includes('--nan') && rows.length > 10) {
  // NaN born at 3/4 of the rows; every later row's target carries it.
  const born = Math.floor(rows.length * 0.75);
  for (let i = born; i < rows.length; ++i) {
    rows[i].metrics.target_stats.nan_count = 10 + i - born;
    rows[i].verdict = 'error';
    rows[i].reason = 'non-finite positions differ';
  }
  const o = rows[born];
  result.overflow = { target: { schema: 'parity.overflow/1', source: 'target/ (synthetic)', records: rows.length, measured: rows.length, nonfinite_records: rows.length - born,
    origins: [{ event: o.name.replace(/\.output\.\d+$/, ''), module: o.module, op: o.op, direction: o.direction, step: o.step, rank: -1, order: o.order,
      inputs: [{ name: 'x', role: 'input', dtype: 'bf16', min: -9, max: 11.3, absmax: 11.3, numel: 512, nan: 0, inf: 0 }],
      outputs: [{ name: 'y', role: 'output', dtype: 'bf16', min: 0, max: 'Infinity', absmax: 'Infinity', numel: 512, nan: 10, inf: 2 }],
      contaminated: rows.length - born - 1, gradient: false, explanation: 'exp input max 11.3 > ln(65504) = 11.09: overflows in f16' }],
    near_overflow: [], grad_underflow: [], grads_overflow: false, grads_underflow: false, loss_scale_advice: null, problems: [] } };
  summary.error = rows.filter((r) => r.verdict === 'error').length;
  summary.pass = count('pass'); summary.warn = count('warn'); summary.fail = count('fail');
  summary.verdict = 'error';
}
fs.writeFileSync(out, JSON.stringify(result));
console.log(`${out}: ${rows.length} events, verdict ${summary.verdict}, first divergence at ${first}`);
