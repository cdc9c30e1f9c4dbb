// Opens a parloop timeline (Chrome trace JSON, from PARLOOP_PROFILE=trace:PATH) in headless
// Chromium's own trace viewer (chrome://tracing) and saves a screenshot of it: the picture in
// README.md. Usage (from web/test, where playwright-core is installed):
//   node ../../scripts/trace-screenshot.mjs TRACE.json OUT.png [WIDTH HEIGHT] [--chromium PATH]
import { chromium } from "playwright-core";
import path from "node:path";

const [trace, out, width = "1400", height = "700"] = process.argv.slice(2).filter((a) => !a.startsWith("--"));
const at = process.argv.indexOf("--chromium");
const executablePath = at > 0 ? process.argv[at + 1] : "/usr/bin/chromium";
if (!trace || !out) {
  console.error("usage: trace-screenshot.mjs TRACE.json OUT.png [WIDTH HEIGHT]");
  process.exit(2);
}
const browser = await chromium.launch({ executablePath, headless: true });
try {
  const page = await browser.newPage({ viewport: { width: Number(width), height: Number(height) } });
  await page.goto("chrome://tracing");
  await page.waitForTimeout(1500);
  const chooser = page.waitForEvent("filechooser", { timeout: 15_000 });
  // The Load button lives in the viewer's shadow DOM; Playwright's text selectors pierce it.
  await page.locator("button", { hasText: "Load" }).first().click();
  await (await chooser).setFiles(path.resolve(trace));
  await page.waitForTimeout(4000);
  await page.screenshot({ path: out });
  console.log(`wrote ${out}`);
} finally {
  await browser.close();
}
