// Headless browser test of the demo: serves web/ on 127.0.0.1, opens it in Debian's Chromium
// (SwiftShader's WebGPU, --enable-unsafe-webgpu), and
//   1. runs N steps on a small mesh and compares the checksum of p with the native run's
//      (--expected, relative tolerance 1e-4),
//   2. repeats 1. with each strategy of --strategies (default: every one a browser has), so
//      that Tint (which checks barriers' uniformity) takes every generated shader,
//   3. runs the benchmark page (steps/s for each --bench-n, and per strategy of
//      --bench-strategies) and saves a screenshot, which must not be blank.
// Any PARLOOP_ERROR on the page, a timeout, or a mismatch fails the test (exit code 1).
import { chromium } from "playwright-core";
import { PNG } from "pngjs";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { QUIET_ARGS, serve } from "./serve.mjs";

const args = Object.fromEntries(
  process.argv.slice(2).reduce((acc, a, i, all) => (a.startsWith("--") ? [...acc, [a.slice(2), all[i + 1]]] : acc), []),
);
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const expected = Number(args.expected);
const n = Number(args.n ?? 20);
const steps = Number(args.steps ?? 200);
const benchNs = (args["bench-n"] ?? "").split(",").filter(Boolean).map(Number);
// The committed web/screenshot.png changes only when asked (--screenshot web/screenshot.png).
const screenshot = args.screenshot ?? path.join(os.tmpdir(), "parloop-screenshot.png");
const chromiumPath = args.chromium ?? "/usr/bin/chromium";

const { base, server } = await serve(root);

const browser = await chromium.launch({
  executablePath: chromiumPath,
  headless: true,
  args: ["--enable-unsafe-webgpu", ...QUIET_ARGS],
});

let failed = false;
const fail = (msg) => { console.error("FAIL: " + msg); failed = true; };

// Opens a page (in its own browser context, or in `context`: its pages share localStorage)
// and waits for its PARLOOP_RESULT (or error).
async function run(query, timeoutMs, context = browser) {
  const page = await context.newPage({ viewport: { width: 1200, height: 900 } });
  const result = new Promise((resolve, reject) => {
    page.on("console", (msg) => {
      const text = msg.text();
      if (text.startsWith("PARLOOP_RESULT ")) resolve(JSON.parse(text.slice(15)));
      else if (text.startsWith("PARLOOP_ERROR ")) reject(new Error(text.slice(14)));
      else if (msg.type() === "error" || args.verbose) console.error("page console: " + text);
    });
    page.on("pageerror", (e) => reject(e));
    setTimeout(() => reject(new Error(`no result within ${timeoutMs / 1000} s`)), timeoutMs);
  });
  await page.goto(`${base}/index.html?${query}`);
  return { page, result: await result };
}

// Saves the canvas as a PNG and fails if it is blank (too few distinct colours).
async function checkScreenshot(page) {
  await page.waitForTimeout(300);
  const png = await page.locator("canvas").screenshot();
  fs.writeFileSync(screenshot, png);
  const img = PNG.sync.read(png);
  const colours = new Set();
  for (let i = 0; i < img.data.length; i += 4) {
    colours.add((img.data[i] << 16) | (img.data[i + 1] << 8) | img.data[i + 2]);
  }
  console.log(`screenshot ${screenshot}: ${img.width}x${img.height}, ${colours.size} distinct colours`);
  if (colours.size < 50) fail(`the screenshot looks blank (${colours.size} distinct colours)`);
}

try {
  const { page, result } = await run(`test=1&n=${n}&steps=${steps}`, 180_000);
  const rel = Math.abs(result.checksum - expected) / Math.abs(expected);
  console.log(`browser (${result.adapter}): checksum ${result.checksum} after ${result.steps} steps ` +
    `on ${n}x${n}; native ${expected}; relative difference ${rel.toExponential(2)}`);
  if (!(rel <= 1e-4)) fail(`checksum differs from the native run by ${rel}`);
  await checkScreenshot(page);
  await page.close();

  for (const s of (args.strategies ?? "global-colour,hierarchical,staged,cas").split(",").filter(Boolean)) {
    const { page, result } = await run(`test=1&n=${n}&steps=${steps}&strategy=${s}`, 180_000);
    const r = Math.abs(result.checksum - expected) / Math.abs(expected);
    console.log(`strategy ${s}: checksum ${result.checksum}, relative difference ${r.toExponential(2)}`);
    if (!(r <= 1e-4)) fail(`strategy ${s}: checksum differs from the native run by ${r}`);
    await page.close();
  }
  // tune: its candidates, tried in turn, give the checksum; its choices go to localStorage,
  // and the next page starts from them; ?trace=1 records a GPU span per group execution.
  if (!args.strategies || args.strategies.split(",").includes("tune")) {
    const q = `test=1&n=${n}&steps=${steps}&strategy=tune&trace=1`;
    const context = await browser.newContext({ viewport: { width: 1200, height: 900 } });
    for (const visit of ["first", "second"]) {
      const { page, result } = await run(q, 300_000, context);
      const r = Math.abs(result.checksum - expected) / Math.abs(expected);
      console.log(`tune, ${visit} visit: checksum ${result.checksum}, relative difference ` +
        `${r.toExponential(2)}, ${result.traceEvents} GPU spans; ${result.tuning}`);
      if (!(r <= 1e-4)) fail(`tune: checksum differs from the native run by ${r}`);
      if (!(result.traceEvents >= steps)) fail(`tune: ${result.traceEvents} GPU spans in the timeline`);
      const want = visit === "first" ? "; chose " : "from the cache";
      if (!result.tuning.includes(want)) {
        fail(`tune, ${visit} visit: "${want}" expected in ${JSON.stringify(result.tuning)}`);
      }
      await page.close();
    }
    await context.close();
  }
  for (const s of (args["bench-strategies"] ?? "").split(",").filter(Boolean)) {
    for (const bn of benchNs) {
      const { page, result } = await run(`bench=1&n=${bn}&steps=${args["bench-steps"] ?? 300}&strategy=${s}`, 600_000);
      console.log(`bench: strategy ${s}, n = ${bn}: ${result.stepsPerSecond.toFixed(1)} steps/s`);
      await page.close();
    }
  }

  for (const bn of benchNs) {
    const { page, result } = await run(`bench=1&n=${bn}&steps=${args["bench-steps"] ?? 300}`, 600_000);
    console.log(`bench: n = ${bn}: ${result.stepsPerSecond.toFixed(1)} steps/s ` +
      `(${result.steps} steps, ${result.perFrame} per frame, ${result.adapter})`);
    if (bn === benchNs[0]) await checkScreenshot(page);
    await page.close();
  }
  // Without --enable-unsafe-webgpu this Chromium has navigator.gpu but no adapter: the page
  // must say so, clearly.
  const plain = await chromium.launch({
    executablePath: chromiumPath,
    headless: true,
    args: QUIET_ARGS,
  });
  try {
    const page = await plain.newPage();
    await page.goto(`${base}/index.html`);
    const message = page.locator("#message");
    await message.waitFor({ state: "visible", timeout: 60_000 });
    const text = await message.textContent();
    console.log(`without WebGPU the page says: ${text}`);
    if (!/WebGPU/.test(text) || !/(no WebGPU adapter|has no WebGPU)/.test(text)) {
      fail(`unclear message without WebGPU: ${text}`);
    }
  } finally {
    await plain.close();
  }
} catch (e) {
  fail(e.message ?? String(e));
} finally {
  await browser.close();
  server.close();
}
process.exit(failed ? 1 : 0);
