// The demo page as a user drives it, in headless Chromium with WebGPU presented on a canvas
// (Vulkan on SwiftShader): load, a canvas that is not blank and changes, Pause (it stops),
// a click (the pulse appears where clicked), Reset while paused (the initial picture, the same
// twice), every mesh size, the sliders, Start again, Gmsh files; the steady-heat mode (its title,
// scale and figures; a click adds a source, AMG-CG solves on the GPU, the heat shows where
// clicked; clicks during a solve queued; Jacobi for comparison); no console error and no error
// message.
// Usage: node web/test/user.mjs [--chromium PATH] [--bench-n 100,200,400] [--heat-n 100,200]
// [--verbose 1]. With --bench-n it also prints the steps/s the page shows (completed steps) for
// each size; with --heat-n the heat mode's iterations and times (AMG-CG, then Jacobi-CG).
import { chromium } from "playwright-core";
import { PNG } from "pngjs";
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { QUIET_ARGS, serve } from "./serve.mjs";

const args = Object.fromEntries(
  process.argv.slice(2).reduce((acc, a, i, all) => (a.startsWith("--") ? [...acc, [a.slice(2), all[i + 1]]] : acc), []),
);
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const chromiumPath = args.chromium ?? "/usr/bin/chromium";
const benchNs = (args["bench-n"] ?? "").split(",").filter(Boolean).map(Number);
const heatNs = (args["heat-n"] ?? "").split(",").filter(Boolean).map(Number);

const { base, server } = await serve(root);

const browser = await chromium.launch({
  executablePath: chromiumPath,
  headless: true,
  args: [
    "--enable-unsafe-webgpu", "--enable-features=Vulkan", "--use-vulkan=swiftshader",
    "--use-angle=swiftshader", "--enable-unsafe-swiftshader", ...QUIET_ARGS,
  ],
});

let failed = false;
const fail = (msg) => { console.error("FAIL: " + msg); failed = true; };
const check = (ok, msg) => { if (!ok) fail(msg); else console.log("ok: " + msg); };

const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
const errors = [];
page.on("console", (msg) => {
  if (msg.type() === "error" || msg.text().startsWith("PARLOOP_ERROR")) errors.push(msg.text());
  if (args.verbose) console.error("page console: " + msg.text());
});
page.on("pageerror", (e) => errors.push(String(e)));

const canvas = page.locator("#canvas");
const shot = async () => PNG.sync.read(await canvas.screenshot());
const colours = (img) => {
  const c = new Set();
  for (let i = 0; i < img.data.length; i += 4) c.add((img.data[i] << 16) | (img.data[i + 1] << 8) | img.data[i + 2]);
  return c.size;
};
// Mean absolute difference of the RGB channels, over the whole image or a square around (x, y).
const diff = (a, b, x, y, r) => {
  let sum = 0, count = 0;
  for (let j = 0; j < a.height; j++) {
    for (let i = 0; i < a.width; i++) {
      if (r !== undefined && (Math.abs(i - x) > r || Math.abs(j - y) > r)) continue;
      const k = 4 * (j * a.width + i);
      sum += Math.abs(a.data[k] - b.data[k]) + Math.abs(a.data[k + 1] - b.data[k + 1]) + Math.abs(a.data[k + 2] - b.data[k + 2]);
      count += 3;
    }
  }
  return sum / count;
};
const noMessage = async (what) => {
  const hidden = await page.locator("#message").isHidden();
  check(hidden && errors.length === 0, `${what}: no error${hidden ? "" : ": " + await page.locator("#message").textContent()}${errors.length ? ": " + errors.join(" | ") : ""}`);
};
const steps = async () => Number(await page.locator("#steps").textContent());

try {
  await page.goto(`${base}/index.html`);
  await page.waitForFunction(() => Number(document.getElementById("steps").textContent) > 50, null, { timeout: 120_000 });
  await noMessage("load");
  // At 1280 px the controls and statistics stay beside the canvas once the statistics fill in.
  const cbox = await canvas.boundingBox();
  const abox = await page.locator("aside").boundingBox();
  check(abox.x >= cbox.x + cbox.width && abox.y < cbox.y + cbox.height / 2,
    `the controls sit beside the canvas (canvas at x ${cbox.x.toFixed(0)}..${(cbox.x + cbox.width).toFixed(0)}, controls at x ${abox.x.toFixed(0)}, y ${abox.y.toFixed(0)})`);
  const a = await shot();
  await page.waitForTimeout(800);
  const b = await shot();
  check(colours(a) >= 50, `the canvas is not blank (${colours(a)} colours)`);
  check(diff(a, b) > 0.5, `the picture changes while running (mean difference ${diff(a, b).toFixed(2)})`);

  // Pause: nothing moves.
  await page.click("#run");
  check((await page.locator("#run").textContent()) === "Start", "Pause turns the button into Start");
  await page.waitForTimeout(800); // the step count shown refreshes every 500 ms
  const s0 = await steps();
  const c = await shot();
  await page.waitForTimeout(600);
  const d = await shot();
  check(await steps() === s0 && diff(c, d) === 0, "paused: no steps, the picture stays");

  // Reset while paused shows the initial state, the same each time.
  await page.click("#reset");
  await page.waitForTimeout(800);
  const r1 = await shot();
  check(await steps() === 0, "Reset: back to step 0");
  check(diff(d, r1) > 0.5 && colours(r1) >= 50, "Reset redraws while paused, and the picture is the initial one");
  await page.click("#reset");
  await page.waitForTimeout(300);
  const r2 = await shot();
  check(diff(r1, r2) === 0, "Reset twice: the same initial picture");

  // A click drops a pulse where it lands (paused: the click redraws).
  const box = await canvas.boundingBox();
  const [px, py] = [Math.round(box.width * 0.2), Math.round(box.height * 0.75)];
  await canvas.click({ position: { x: px, y: py } });
  await page.waitForTimeout(300);
  const e = await shot();
  const sx = e.width / box.width;
  const near = diff(r2, e, px * sx, py * sx, 15 * sx);
  const far = diff(r2, e, e.width * 0.8, e.height * 0.2, 15 * sx);
  check(near > 5 && near > 4 * far, `the pulse appears where clicked (change near the click ${near.toFixed(1)}, far from it ${far.toFixed(1)})`);
  await noMessage("pause, reset, click");

  // Start again.
  // The step count shown refreshes every 500 ms, and a loaded machine may take longer to draw
  // the first frame: wait for the count to move (up to 30 s) instead of a fixed time.
  await page.click("#run");
  const restarted = await page
    .waitForFunction(() => Number(document.getElementById("steps").textContent) > 0, null, { timeout: 30_000 })
    .then(() => true, () => false);
  check(restarted && await steps() > 0, "Start runs again");

  // The sliders.
  await page.locator("#spf").fill("30");
  check((await page.locator("#spf-out").textContent()) === "30", "the steps-per-frame slider shows its value");
  await page.locator("#range").fill("0.5");
  check((await page.locator("#range-out").textContent()) === "0.50" && (await page.locator("#legend-max").textContent()) === "+0.50",
    "the colour-range slider shows its value and the legend follows");

  // Every mesh size.
  for (const n of await page.locator("#n option").allTextContents()) {
    await page.selectOption("#n", n);
    await page.waitForFunction((v) => document.getElementById("mesh").textContent.startsWith(`${v} vertices`),
      (Number(n) + 1) ** 2, { timeout: 60_000 });
    await page.waitForFunction(() => Number(document.getElementById("steps").textContent) > 20, null, { timeout: 120_000 });
    const img = await shot();
    check(colours(img) >= 50, `mesh ${n} x ${n}: runs and draws (${colours(img)} colours)`);
    await noMessage(`mesh ${n} x ${n}`);
  }
  // Back to 50 x 50 (what Reset makes from here on): the rest of the session runs quicker.
  await page.selectOption("#n", "50");
  await page.waitForFunction(() => document.getElementById("mesh").textContent.startsWith("2601 vertices"), null, { timeout: 60_000 });
  // A Gmsh mesh from the file picker: the committed disk (81 vertices); then a tetrahedral
  // mesh, refused with its reason, and the page goes on.
  await page.locator("#file").setInputFiles(path.join(root, "..", "tests", "data", "disk.msh"));
  await page.waitForFunction(() => document.getElementById("mesh").textContent.startsWith("81 vertices"), null, { timeout: 60_000 });
  await page.waitForTimeout(1000);
  check(colours(await shot()) >= 50, "a Gmsh disk from the file picker runs and draws");
  await noMessage("the Gmsh disk");
  await page.locator("#file").setInputFiles(path.join(root, "..", "tests", "data", "cube.msh"));
  await page.locator("#message").waitFor({ state: "visible", timeout: 30_000 });
  const refused = await page.locator("#message").textContent();
  check(/cube\.msh: .*tetrahedron cells/.test(refused), `a tetrahedral mesh is refused with its reason (${refused})`);
  errors.length = 0; // that error was the point
  await page.click("#reset");
  await page.waitForTimeout(500);
  check(await page.locator("#message").isHidden(), "Reset after the refused file clears the message");
  // A Gmsh mesh dropped on the canvas (after Reset: the unit square again): the committed
  // disk, as a drag and drop delivers it.
  const disk = fs.readFileSync(path.join(root, "..", "tests", "data", "disk.msh"), "latin1");
  const drop = await page.evaluateHandle((text) => {
    const d = new DataTransfer();
    d.items.add(new File([text], "disk.msh"));
    return d;
  }, disk);
  await page.dispatchEvent("#canvas", "drop", { dataTransfer: drop });
  await page.waitForFunction(() => document.getElementById("mesh").textContent === "81 vertices, 128 triangles (disk.msh)", null, { timeout: 60_000 });
  await page.waitForTimeout(1000);
  check(colours(await shot()) >= 50, "a Gmsh disk dropped on the canvas runs and draws");
  await noMessage("the dropped disk");
  // Malformed files dropped on the canvas: each is refused with its reason (the readers never
  // panic, which in wasm would kill the page), and the page goes on running.
  const malformed = {
    "huge.msh": "$MeshFormat\n4.1 0 18446744073709551615\n$EndMeshFormat\n",
    "datasize.msh": "$MeshFormat\n4.1 1 3\n$EndMeshFormat\n",
    "count.msh": "$MeshFormat\n2.2 0 8\n$EndMeshFormat\n$Nodes\n18446744073709551614\n$EndNodes\n",
    "cut.msh": disk.slice(0, Math.floor(disk.length / 2)),
  };
  for (const [name, text] of Object.entries(malformed)) {
    const bad = await page.evaluateHandle(([t, n]) => {
      const d = new DataTransfer();
      d.items.add(new File([t], n));
      return d;
    }, [text, name]);
    await page.dispatchEvent("#canvas", "drop", { dataTransfer: bad });
    await page.locator("#message").waitFor({ state: "visible", timeout: 30_000 });
    const why = await page.locator("#message").textContent();
    check(why.includes(name) && !/panic/.test(why), `a malformed ${name} is refused with its reason (${why})`);
    errors.length = 0; // that error was the point
    // The step count shown refreshes every 500 ms: wait for it to restart from the Reset
    // before taking the count the page must pass (a wait, not a check: a count that stays
    // high only makes the check below stricter).
    const pre = await steps();
    await page.click("#reset");
    await page.waitForFunction((p) => Number(document.getElementById("steps").textContent) < p, pre, { timeout: 30_000 })
      .catch(() => {});
    const hidden = await page.locator("#message").isHidden();
    const before = await steps();
    const runs = await page.waitForFunction((b) => Number(document.getElementById("steps").textContent) > b, before, { timeout: 60_000 })
      .then(() => true, () => false);
    check(hidden && runs, `after ${name} the page runs again (message hidden: ${hidden}, steps from ${before}: ${await steps()})`);
  }
  // The implicit mode on a 50 x 50 mesh: steady heat, sources by clicks, solved by AMG-CG on
  // the GPU (cg_async: the browser stays responsive while it awaits the residual checks).
  await page.waitForFunction(() => document.getElementById("mesh").textContent.startsWith("2601 vertices"), null, { timeout: 60_000 });
  await page.selectOption("#mode", "heat");
  await page.waitForFunction(() => document.getElementById("solve").textContent.startsWith("click"), null, { timeout: 60_000 });
  const text = (id) => page.locator("#" + id).textContent();
  const heatTitle = await page.title();
  const shown = async (id) => page.locator("#" + id).isVisible();
  check(/steady heat/.test(heatTitle) && /steady heat/.test(await text("title")) && await text("legend-label") === "u"
    && !(await shown("sps")) && !(await shown("dpf")) && !(await shown("spf")) && await shown("solve-time") && await shown("pc"),
    `the heat mode has its own title, scale and figures ("${heatTitle}", legend ${await text("legend-label")}; the wave's steps/s and dispatches hidden)`);
  await page.waitForTimeout(500);
  const cold = await shot();
  const hbox = await canvas.boundingBox();
  const solvedText = () => /^(AMG|Jacobi)-CG: /.test(document.getElementById("solve").textContent);
  // Clicks at (x, y) and waits for the solve's report.
  const solved = async (x, y) => {
    await page.evaluate(() => { document.getElementById("solve").textContent = "waiting"; });
    await canvas.click({ position: { x, y } });
    await page.waitForFunction(solvedText, null, { timeout: 120_000 });
    return text("solve");
  };
  const report = (t) => /^(AMG|Jacobi)-CG: (\d+) iterations, residual ([0-9.e+-]+) \(recomputed: ([0-9.e+-]+)\)/.exec(t);
  const [hx, hy] = [Math.round(hbox.width * 0.3), Math.round(hbox.height * 0.4)];
  const first = await solved(hx, hy);
  // CG stops at a relative residual of 1e-5; recomputed in f32 (2601 unknowns) from the u
  // it drew, ||b - A u|| / ||b|| stays within 1e-4. AMG-CG takes a few iterations (Jacobi-CG
  // about 100 here).
  const a1 = report(first);
  const setup = await text("setup");
  const top = Number(await text("legend-max"));
  check(a1 && a1[1] === "AMG" && Number(a1[2]) >= 2 && Number(a1[2]) <= 20 && Number(a1[4]) <= 1e-4
    && /^\d+ ms$/.test(setup) && /ms \(the AMG setup/.test(await text("solve-time")) && top > 0,
    `a click is solved by AMG-CG on the GPU (${first}; setup ${setup}; ${await text("solve-time")}; u up to ${top})`);
  await page.waitForTimeout(300);
  const warm = await shot();
  const hs = warm.width / hbox.width;
  const hotNear = diff(cold, warm, hx * hs, hy * hs, 12 * hs);
  const hotFar = diff(cold, warm, warm.width * 0.88, warm.height * 0.88, 12 * hs);
  // The scale runs from 0 to the largest u: the source is drawn at the top of the colour map.
  check(hotNear > 40 && hotNear > 3 * hotFar,
    `the heat is where clicked, on a scale from 0 to its peak (change near the source ${hotNear.toFixed(1)}, in the far corner ${hotFar.toFixed(1)})`);
  await noMessage("the steady-heat mode");
  // Three clicks at once: the first solves, the other two are queued, visibly, and solved
  // together after it.
  const [gx, gy] = [Math.round(hbox.width * 0.75), Math.round(hbox.height * 0.7)];
  const queuedText = await page.evaluate(([x, y]) => {
    const c = document.getElementById("canvas");
    const r = c.getBoundingClientRect();
    for (const dx of [0, 30, -30]) {
      c.dispatchEvent(new MouseEvent("click", { clientX: r.left + x + dx, clientY: r.top + y, bubbles: true }));
    }
    return document.getElementById("solve").textContent;
  }, [gx, gy]);
  await page.waitForFunction(() => / 2 sources$/.test(document.getElementById("solve").textContent), null, { timeout: 120_000 });
  const together = await text("solve");
  await page.waitForTimeout(300);
  const warmer = await shot();
  const near2 = diff(warm, warmer, gx * hs, gy * hs, 12 * hs);
  const a2 = report(together);
  check(/2 clicks queued/.test(queuedText) && a2 && Number(a2[4]) <= 1e-4 && near2 > 5,
    `clicks during a solve are queued and solved together (${queuedText}; then ${together}; change there ${near2.toFixed(1)})`);
  await noMessage("queued sources");
  // Jacobi for comparison: the same system, more iterations.
  await page.selectOption("#pc", "jacobi");
  const jacobi = report(await solved(Math.round(hbox.width * 0.5), Math.round(hbox.height * 0.2)));
  check(jacobi && jacobi[1] === "Jacobi" && Number(jacobi[2]) > 2 * Number(a1[2]) && Number(jacobi[4]) <= 1e-4,
    `Jacobi-CG solves too, in more iterations than AMG-CG (${jacobi && jacobi[0]} against ${a1[2]})`);
  await page.selectOption("#pc", "amg");
  await noMessage("Jacobi");
  // Back to the wave: it runs again.
  await page.selectOption("#mode", "wave");
  const back = await steps();
  const waveRuns = await page.waitForFunction((b) => Number(document.getElementById("steps").textContent) > b, back, { timeout: 60_000 })
    .then(() => true, () => false);
  check(waveRuns && /wave equation/.test(await page.title()) && await text("legend-label") === "p" && await shown("sps"),
    "back in the wave mode, the wave runs under its own title and scale");
  await noMessage("back to the wave");

  const dpf = await page.locator("#dpf").textContent();
  check(/per step/.test(await page.locator("#dpf-why").textContent()), `the dispatches are explained (${dpf}: ${await page.locator("#dpf-why").textContent()})`);

  // Steps/s as the page shows it (completed steps), per mesh size.
  for (const n of benchNs) {
    await page.selectOption("#n", String(n));
    await page.waitForFunction((v) => document.getElementById("mesh").textContent.startsWith(`${v} vertices`), (n + 1) ** 2);
    await page.locator("#spf").fill("10");
    await page.waitForTimeout(4000); // warm-up: pipelines, plans
    const samples = [];
    for (let k = 0; k < 6; k++) {
      await page.waitForTimeout(1000);
      samples.push(Number(await page.locator("#sps").textContent()));
    }
    samples.sort((x, y) => x - y);
    console.log(`bench (presented canvas): n = ${n}: ${samples[3]} steps/s (median of ${samples.join(", ")})`);
  }
  // The heat mode's figures per mesh size: one source at the centre, solved by AMG-CG (the
  // first solve builds the hierarchy and compiles the cycle's shaders; a second source
  // shows a warm solve), then the same first system by Jacobi-CG.
  for (const n of heatNs) {
    const fresh = async (pc) => {
      await page.selectOption("#mode", "wave");
      await page.selectOption("#n", String(n));
      await page.waitForFunction((v) => document.getElementById("mesh").textContent.startsWith(`${v} vertices`), (n + 1) ** 2);
      await page.selectOption("#mode", "heat");
      await page.selectOption("#pc", pc);
      await page.waitForFunction(() => document.getElementById("solve").textContent.startsWith("click"), null, { timeout: 60_000 });
    };
    const box = await canvas.boundingBox();
    const [cx, cy] = [Math.round(box.width * 0.5), Math.round(box.height * 0.5)];
    const figures = async () => `${await text("solve")}; ${await text("solve-time")}`;
    await fresh("amg");
    await solved(cx, cy);
    const cold = await figures();
    await solved(Math.round(box.width * 0.3), cy);
    const warmSolve = await figures();
    await fresh("jacobi");
    await solved(cx, cy);
    console.log(`heat (presented canvas): n = ${n}: first click ${cold}; second click ${warmSolve}; Jacobi, first click ${await figures()}`);
  }
  await noMessage("the whole session");
} catch (e) {
  fail(e.message ?? String(e));
} finally {
  await browser.close();
  server.close();
}
process.exit(failed ? 1 : 0);
