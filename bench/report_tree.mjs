// The model tree's timings in headless Chromium, measured inside the page (performance.now(), until two
// frames are painted), through the same clicks and typing a reader makes:
//   first paint: from the start of the tree's build to its first painted frame (the section's
//                data-first-paint-ms), and from navigation start (data-first-paint-at);
//   expand:      a click on the caret of a layer (its 35 children appear) and of its attention (180 ops);
//                each until two frames are painted (≈ 33 ms at 60 Hz is the floor), and the click's own
//                work before any frame ("sync");
//   search:      typing a module name (the topmost matches and their ancestors unfold);
//   expand all:  every node of the model open (the flattened tree holds all of them).
// Used by tests/browser/tree.test.mjs (bounds) and bench/report_tree.sh (medians).
//   node bench/report_tree.mjs REPORT.html [--runs N] [--paint-only] [--shot PNG [--jump first|structure|suspect]]
//     --paint-only: the first paint alone (a report whose tree lacks the nodes the interactions use, such
//     as one of an older parity that built the tree from the kept rows only).
//     one fresh browser per run; prints the medians as JSON. --shot: a screenshot of the tree section,
//     unfolded to the first divergence (or the first structure difference, the top suspect), from one
//     more load (--runs 0: only the screenshot).
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const median = (xs) => { const s = [...xs].sort((a, b) => a - b); return s.length ? s[(s.length - 1) >> 1] : NaN; };

// Times, in one opened report, `repeats` expansions of layer `layer` and its attention, and searches.
export async function measureTree(page, { layer = 'model.layers.40', attn = 'self_attn', query = 'down_proj', repeats = 5, paintOnly = false } = {}) {
  return page.evaluate(async ({ layer, attn, query, repeats, paintOnly }) => {
    const P = window.parityReport;
    const frames = () => new Promise((res) => requestAnimationFrame(() => requestAnimationFrame(res)));
    const caret = (p) => {
      const row = document.querySelector(`#tree-body .tr-row[data-path="${p}"] .tr-caret`);
      if (!row) throw new Error('no row on screen for ' + p);
      return row;
    };
    const sync = [];
    const timed = async (fn) => {
      await frames();
      const t0 = performance.now();
      fn();
      sync.push(performance.now() - t0);
      await frames();
      return performance.now() - t0;
    };
    const sec = document.getElementById('sec-tree').dataset;
    const out = { nodes: Number(sec.nodes), buildMs: Number(sec.buildMs), firstPaintMs: Number(sec.firstPaintMs),
      firstPaintAt: Number(sec.firstPaintAt), readyAt: Number(document.body.dataset.readyAt), expandLayer: [], expandAttn: [], search: [] };
    if (paintOnly) return out;
    const input = document.getElementById('tree-search');
    const type = (text) => { input.value = text; input.dispatchEvent(new KeyboardEvent('keydown', { key: 'Enter' })); };
    for (let i = 0; i < repeats; ++i) {
      P.tree.reveal(layer);  // on screen, folded
      if (P.tree.open().includes(`${layer}.${attn}`)) P.tree.toggle(layer);
      out.expandLayer.push(await timed(() => caret(layer).click()));
      P.tree.reveal(`${layer}.${attn}`);  // scrolled to (its layer's own ops come first), folded
      out.expandAttn.push(await timed(() => caret(`${layer}.${attn}`).click()));
      P.tree.toggle(`${layer}.${attn}`);
      P.tree.toggle(layer);
      out.search.push(await timed(() => type(query)));
      out.hits = Number(sec.hits);
      type('');
    }
    out.expandAll = await timed(() => document.getElementById('tree-expand-all').click());
    out.openAll = Number(sec.open);
    out.expandSync = sync.filter((_, k) => k % 3 !== 2 && k < 3 * repeats);  // the two expands of each repeat
    return out;
  }, { layer, attn, query, repeats, paintOnly });
}

export function summarise(runs) {
  const pick = (k) => runs.map((r) => r[k]);
  const flat = (k) => runs.flatMap((r) => r[k]);
  return { runs: runs.length, nodes: runs[0].nodes, firstPaintMs: median(pick('firstPaintMs')), firstPaintAt: median(pick('firstPaintAt')),
    buildMs: median(pick('buildMs')), expandLayerMs: median(flat('expandLayer')), expandAttnMs: median(flat('expandAttn')),
    searchMs: median(flat('search')), expandAllMs: median(pick('expandAll')), expandSyncMs: median(flat('expandSync')),
    openAll: runs[0].openAll, hits: runs[0].hits,
    max: { firstPaintMs: Math.max(...pick('firstPaintMs')), expandLayerMs: Math.max(...flat('expandLayer')), expandAttnMs: Math.max(...flat('expandAttn')) } };
}

async function main() {
  const args = process.argv.slice(2);
  const html = args[0];
  const runs = args.includes('--runs') ? Number(args[args.indexOf('--runs') + 1]) : 5;
  const paintOnly = args.includes('--paint-only');
  const shot = args.includes('--shot') ? args[args.indexOf('--shot') + 1] : '';
  const jump = { first: 'firstDivergence', structure: 'nextStructure', suspect: 'nextSuspect' }[args.includes('--jump') ? args[args.indexOf('--jump') + 1] : 'first'];
  if (!jump) throw new Error('--jump takes first, structure or suspect');
  const here = path.dirname(fileURLToPath(import.meta.url));
  const { openReport } = await import(pathToFileURL(path.join(here, '../tests/browser/browser.mjs')).href);
  const results = [];
  for (let i = 0; i < runs; ++i) {
    const r = await openReport(html);
    try {
      if (r.errors.length) throw new Error('page errors: ' + r.errors.join('; '));
      results.push(await measureTree(r.page, { repeats: 3, paintOnly }));
    } finally {
      await r.close();
    }
  }
  if (results.length) console.log(JSON.stringify(summarise(results), (k, v) => (typeof v === 'number' ? Math.round(v * 10) / 10 : v), 1));
  if (shot) {
    const r = await openReport(html, { width: 1280, height: 900 });
    try {
      if (r.errors.length) throw new Error('page errors: ' + r.errors.join('; '));
      await r.page.evaluate((f) => window.parityReport.tree[f](), jump);
      await r.page.locator('#sec-tree').screenshot({ path: shot });
    } finally {
      await r.close();
    }
  }
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) await main();
