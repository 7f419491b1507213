// The HTML report at 100,000 events: how long until it is interactive, and how long the table's sort,
// filter and scroll and the error profile's zoom take. Driven by bench/report_bench.sh.
//   node bench/report_bench.mjs REPORT.html
// Prints one JSON object of timings in milliseconds. "interactive" = from navigation start until the
// report's script has drawn every section and attached its handlers (body[data-ready]); the page's own
// clock (performance.now) measures it, so browser start-up is excluded.
import { openReport } from '../tests/browser/browser.mjs';

const html = process.argv[2];
const t0 = Date.now();
const r = await openReport(html);
const wallOpen = Date.now() - t0;
const page = r.page;
const timing = await page.evaluate(() => ({ interactive: Number(document.body.dataset.readyAt), script: Number(document.body.dataset.readyMs),
  events: Number(document.getElementById('sec-table').dataset.rows), points: Number(document.getElementById('sec-profile').dataset.points) }));

// Each interaction runs with the page's own functions (the report's Content-Security-Policy forbids
// eval, so no code string is sent) and is timed inside the page until two frames have been painted.
const run = async (action) => page.evaluate(async (which) => {
  const P = window.parityReport;
  const t = performance.now();
  if (which === 'sort') P.table.sortBy('cosine', 'asc');
  else if (which === 'sort-desc') P.table.sortBy('noise_units', 'desc');
  else if (which === 'filter') P.table.filter({ name: 'softmax' });
  else if (which === 'filter-verdict') P.table.filter({ name: '', verdict: 'fail' });
  else if (which === 'unfilter') P.table.filter({ name: '', module: '', verdict: '' });
  else if (which === 'scroll') { const b = document.getElementById('table-body'); b.scrollTop = b.scrollHeight / 2; b.dispatchEvent(new Event('scroll')); }
  else if (which === 'zoom') P.charts.profile.dispatchAction({ type: 'dataZoom', start: 40, end: 45 });
  else if (which === 'unzoom') P.charts.profile.dispatchAction({ type: 'dataZoom', start: 0, end: 100 });
  await new Promise((res) => requestAnimationFrame(() => requestAnimationFrame(res)));
  return performance.now() - t;
}, action);

const out = { events: timing.events, profile_points: timing.points, wall_open_ms: wallOpen, interactive_ms: timing.interactive, script_ms: timing.script };
for (const a of ['sort', 'sort-desc', 'filter', 'filter-verdict', 'unfilter', 'scroll', 'zoom', 'unzoom']) out[a + '_ms'] = Math.round(await run(a));
out.console_errors = r.errors.length;
out.network_requests = r.requests.length;
await r.close();
console.log(JSON.stringify(out));
