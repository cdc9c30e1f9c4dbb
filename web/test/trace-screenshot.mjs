// Opens a parloop timeline (Chrome trace JSON, from PARLOOP_PROFILE=trace:PATH) in speedscope
// (https://www.speedscope.app, an established viewer of Chrome traces; Perfetto's UI is not
// reachable from these machines and Chromium 156 has dropped chrome://tracing) in headless
// Chromium, and saves a screenshot of its time-ordered view of one track: the pictures in
// README.md. Usage:
//   (cd /tmp/ss && npm install speedscope@1.25.0)
//   node web/test/trace-screenshot.mjs TRACE.json OUT.png --speedscope /tmp/ss/node_modules/speedscope \
//     [--track host|GPU|halo|host,halo] [--rank R] [--tail FRACTION] [--width 1400 --height 700]
// --tail 0.2 keeps the last fifth of the run (a steady iteration rather than the start-up).
import { chromium } from "playwright-core";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { QUIET_ARGS, serve } from "./serve.mjs";

const args = process.argv.slice(2);
const flag = (name, dflt) => {
  const at = args.indexOf(`--${name}`);
  return at >= 0 ? args[at + 1] : dflt;
};
const [trace, out] = args.filter((a, i) => !a.startsWith("--") && !(i > 0 && args[i - 1].startsWith("--")));
const viewer = flag("speedscope");
if (!trace || !out || !viewer) {
  console.error("usage: trace-screenshot.mjs TRACE.json OUT.png --speedscope DIR [--track host] [--rank 0]");
  process.exit(2);
}
// speedscope shows one thread at a time: keep the asked tracks (and rank), as one thread (the
// halo track's spans run inside the host's forces, so they nest there).
const track = flag("track", "host");
const rank = Number(flag("rank", "0"));
const json = JSON.parse(fs.readFileSync(trace, "utf8"));
const tids = track.split(",").map((t) =>
  json.traceEvents.find((e) => e.ph === "M" && e.name === "thread_name" && e.args.name === t)?.tid);
let events = json.traceEvents
  .filter((e) => e.pid === rank && e.ph === "X" && tids.includes(e.tid))
  .map((e) => ({ ...e, tid: tids[0] }));
const tail = Number(flag("tail", "1"));
if (tail < 1 && events.length) {
  const end = Math.max(...events.map((e) => e.ts + e.dur));
  const start = Math.min(...events.map((e) => e.ts));
  const from = end - tail * (end - start);
  events = events.filter((e) => e.ts >= from);
}
if (!events.length) {
  console.error(`no spans on track ${track} of rank ${rank} in ${trace}`);
  process.exit(1);
}
const dir = fs.mkdtempSync(path.join(os.tmpdir(), "parloop-trace-"));
fs.cpSync(path.join(viewer, "dist", "release"), dir, { recursive: true });
fs.writeFileSync(path.join(dir, "trace.json"), JSON.stringify({ traceEvents: events }));
const { base, server } = await serve(dir);
const browser = await chromium.launch({ executablePath: flag("chromium", "/usr/bin/chromium"), headless: true, args: QUIET_ARGS });
try {
  const page = await browser.newPage({
    viewport: { width: Number(flag("width", "1400")), height: Number(flag("height", "700")) },
  });
  const title = encodeURIComponent(`${path.basename(trace)}: rank ${rank}, ${track}`);
  await page.goto(`${base}/index.html#profileURL=${base}/trace.json&title=${title}`);
  await page.waitForTimeout(4000);
  await page.screenshot({ path: out });
  console.log(`wrote ${out} (${events.length} spans)`);
} finally {
  await browser.close();
  server.close();
  fs.rmSync(dir, { recursive: true, force: true });
}
