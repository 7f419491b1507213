// A synthetic "parity.compare/1" result of a mix-level capture (module and op events, capture names as
// docs/dump-format.md spells them) of an 80-layer Llama-like model: 50,008 tree nodes (80 layers × 625
// nodes, the model, its layer list, embedding, final norm and head, and the three ops only the target
// runs), 51,125 rows. For the model tree's
// browser test and benchmark (bench/report_tree.sh).
//   node bench/tree_synth.mjs OUT.json [--layers L] [--ranks R]
// On rank 0, from layer 50 on the error grows, and in layer 50's attention the golden's softmax#0 is
// missing from the target, which computes exp#0, sum#0 and div#0 instead (records in one run only);
// other ranks (--ranks) are the same model without the fault. Deterministic.
import fs from 'node:fs';

const args = process.argv.slice(2);
const out = args[0] || 'tree-synth.json';
const L = args.includes('--layers') ? Number(args[args.indexOf('--layers') + 1]) : 80;
const R = args.includes('--ranks') ? Number(args[args.indexOf('--ranks') + 1]) : 1;
const BAD = Math.floor(L * 0.625);

let seed = 7;
const rand = () => ((seed = (seed * 1103515245 + 12345) >>> 0) / 2 ** 32);
const OPS = ['mul', 'add', 'matmul', 'view', 'transpose', 'pow', 'mean', 'rsqrt', 'silu', 'cat', 'neg', '__getitem__', 'to', 'reshape'];
// Module (relative to the layer) -> number of op nodes recorded in it: 14 modules + 611 ops = 625 nodes a layer.
const LAYER = [['', 31], ['input_layernorm', 40], ['self_attn', 180], ['self_attn.q_proj', 30], ['self_attn.k_proj', 30],
  ['self_attn.v_proj', 30], ['self_attn.rotary_emb', 60], ['self_attn.o_proj', 30], ['post_attention_layernorm', 40],
  ['mlp', 30], ['mlp.gate_proj', 30], ['mlp.up_proj', 30], ['mlp.act_fn', 20], ['mlp.down_proj', 30]];

// Events of one rank in execution order: {module, op (op#k or ''), direction, side: both | golden | target, layer}.
function rankEvents(rank) {
  const events = [];
  const push = (module, op, direction, layer, side = 'both') => events.push({ module, op, direction, layer, side });
  for (const m of ['model.embed_tokens']) push(m, '', 'forward', -1);
  for (let l = 0; l < L; ++l) {
    for (const [rel, nops] of LAYER) {
      const module = `model.layers.${l}` + (rel ? '.' + rel : '');
      const count = {};
      for (let k = 0; k < nops; ++k) {
        let op = OPS[(k * 5 + rel.length) % OPS.length];  // 5 and 14 coprime: every op in turn
        if (rel === 'self_attn' && k === 100) op = 'softmax';
        const opk = `${op}#${(count[op] = (count[op] ?? -1) + 1)}`;
        if (rank === 0 && l === BAD && op === 'softmax') {
          push(module, opk, 'forward', l, 'golden');
          for (const o of ['exp#0', 'sum#0', 'div#0']) push(module, o, 'forward', l, 'target');
        } else {
          push(module, opk, 'forward', l);
        }
      }
      push(module, '', 'forward', l);
    }
  }
  for (const m of ['model.norm', 'lm_head']) push(m, '', 'forward', L);
  const forward = events.filter((e) => e.op === '');
  for (let k = forward.length - 1; k >= 0; --k) push(forward[k].module, '', 'backward', forward[k].layer);
  return events;
}

const u = 2 ** -8;
const rows = [], unmatched = { golden: [], target: [] };
for (let rank = 0; rank < R; ++rank) {
  let gOrder = 0, tOrder = 0;
  for (const e of rankEvents(rank)) {
    const name = e.op ? `${e.module}/${e.op}/${e.direction}/output/0` : `${e.module}/${e.direction}/output/0`;
    const rec = { name, module: e.module, op: e.op ? e.op.split('#')[0] : 'Module', direction: e.direction, role: 'output', index: 0, step: 0,
      dtype: 'bf16', shape: [4, 64], file: 'synthetic', rank, event: name.replace(/\/output\/0$/, ''), site: { call: 0, module: e.module, op: e.op } };
    if (e.side !== 'both') { unmatched[e.side].push({ ...rec, order: e.side === 'golden' ? gOrder++ : tOrder++ }); continue; }
    const grow = rank === 0 && e.layer >= BAD ? 40 * (1 + e.layer - BAD) : 1;
    const ratio = (0.3 + rand()) * grow * (e.direction === 'backward' ? 1.5 : 1);
    const verdict = ratio > 200 ? 'fail' : ratio > 20 ? 'warn' : 'pass';
    rows.push({ name, target_name: name, target_order: tOrder++, match: 'exact', match_confidence: 1, mode: 'tensor',
      golden: { dtype: 'f32', shape: [4, 64], file: 'golden' }, target: { dtype: 'bf16', shape: [4, 64], file: 'target' },
      module: e.module, op: rec.op, direction: e.direction, role: 'output', index: 0, step: 0, rank, order: gOrder++, event: rec.event, site: rec.site,
      threshold_dtype: 'bf16', metrics: { cosine: 1 - (ratio * u) ** 2 / 2, rel_l2: ratio * u, max_abs: ratio * u * 30 },
      stats: null, checksum_equal: null, verdict, reason: verdict === 'pass' ? 'within rounding' : `beyond rounding (${ratio.toFixed(0)} u)`,
      noise: ratio > 20 ? 'structural' : 'noise', noise_ratio: ratio });
  }
}
const count = (v) => rows.filter((r) => r.verdict === v).length;
const first = rows.findIndex((r) => r.noise === 'structural');
const event = (r) => r.name.replace(/\/output\/0$/, '');
const summary = { rows: rows.length, pass: count('pass'), warn: count('warn'), fail: count('fail'), error: 0,
  unmatched_golden: unmatched.golden.length, unmatched_target: unmatched.target.length, problems: 0, verdict: 'fail', exit_code: 1 };
const fd = rows[first];
const result = {
  schema: 'parity.compare/1', revision: '1.8', parity_version: 'synthetic', command: `node bench/tree_synth.mjs ${out}`,
  golden: { source: `golden/ (synthetic ${L}-layer model)`, fingerprint: null }, target: { source: `target/ (synthetic ${L}-layer model)`, fingerprint: null },
  summary, rows, unmatched, problems: [], notes: ['synthetic data for the model tree benchmark'],
  first_divergence: { row: first, name: fd.name, event: event(fd), module: fd.module, op: fd.op, direction: fd.direction, role: 'output',
    step: 0, rank: 0, verdict: fd.verdict, reason: fd.reason, noise: fd.noise, noise_ratio: fd.noise_ratio },
  suspects: [
    { kind: 'structure', event: `model.layers.${BAD}.self_attn/exp#0/forward`, module: `model.layers.${BAD}.self_attn`, op: 'exp', direction: 'forward', step: 0, rank: 0, score: 9, why: 'op only in the target run' },
    { kind: 'source', event: event(fd), module: fd.module, op: fd.op, direction: 'forward', step: 0, rank: 0, score: 5, why: 'creates the error' },
  ],
};
fs.writeFileSync(out, JSON.stringify(result));
const nodes = new Set();
for (const r of [...rows, ...unmatched.golden, ...unmatched.target]) {
  const [call, seg] = r.name.split('/');
  const parts = call.split('.');
  for (let i = 1; i <= parts.length; ++i) nodes.add(parts.slice(0, i).join('.'));
  if (seg !== 'forward' && seg !== 'backward') nodes.add(call + '/' + seg);
}
console.log(`${out}: ${L} layers, ${R} rank${R > 1 ? 's' : ''}, ${nodes.size} tree nodes, ${rows.length} rows, ${unmatched.golden.length} only in golden, ${unmatched.target.length} only in target`);
