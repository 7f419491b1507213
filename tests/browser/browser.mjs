// tests/browser/browser.mjs — shared by the browser tests and bench/report_bench.sh: opens an HTML report
// in Debian's headless Chromium (driven by playwright-core from web/node_modules; no browser download),
// records console errors, page errors and every network request (all of which are aborted: a report
// must need none).
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

export const sourceDir = process.env.PARITY_SOURCE_DIR || path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
export const binaryDir = process.env.PARITY_BINARY_DIR || path.join(sourceDir, 'build');
export const parityBin = process.env.PARITY_BIN || path.join(binaryDir, 'parity');
export const chromiumPath = process.env.PARITY_CHROMIUM || '/usr/bin/chromium';

// Flags that keep Chromium from talking to anything: no background networking, updates, sync, QUIC.
const FLAGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
  '--disable-background-networking', '--disable-component-update', '--disable-sync',
  '--disable-default-apps', '--disable-extensions', '--metrics-recording-only', '--no-default-browser-check'];

export async function openReport(htmlPath, { width = 1400, height = 1000 } = {}) {
  const { chromium } = await import(pathToFileURL(path.join(sourceDir, 'web/node_modules/playwright-core/index.mjs')).href);
  const userDataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'parity-chromium-'));
  const context = await chromium.launchPersistentContext(userDataDir, {
    executablePath: chromiumPath, headless: true, args: FLAGS, viewport: { width, height },
    serviceWorkers: 'block', offline: true,
  });
  const pageUrl = pathToFileURL(path.resolve(htmlPath)).href;
  const errors = [];
  const requests = [];
  // Every request other than the report file itself is recorded and refused.
  await context.route('**/*', (route) => {
    const url = route.request().url();
    if (url === pageUrl) return route.continue();
    requests.push(url);
    return route.abort();
  });
  const page = context.pages()[0] || await context.newPage();
  page.on('console', (msg) => { if (msg.type() === 'error') errors.push('console: ' + msg.text()); });
  page.on('pageerror', (err) => errors.push('pageerror: ' + err.message));
  page.on('request', (req) => { if (req.url() !== pageUrl && !requests.includes(req.url())) requests.push(req.url()); });
  const t0 = Date.now();
  await page.goto(pageUrl, { waitUntil: 'load', timeout: 60000 });
  // Ready, or fail at once with the page's own errors (a script error would otherwise be a timeout).
  const deadline = Date.now() + 60000;
  while ((await page.evaluate(() => document.body.dataset.ready)) !== '1') {
    if (errors.length || Date.now() > deadline) {
      await context.close();
      throw new Error(`report not ready: ${errors.length ? errors.join('; ') : 'timeout after 60 s'}`);
    }
    await new Promise((res) => setTimeout(res, 25));
  }
  const loadMs = Date.now() - t0;
  const close = async () => {
    await context.close();
    fs.rmSync(userDataDir, { recursive: true, force: true });
  };
  return { context, page, errors, requests, pageUrl, loadMs, close };
}
