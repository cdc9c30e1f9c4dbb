// The page: drives the wasm App (simulation + rendering) and the controls. With ?test=1 it runs
// a fixed number of steps and prints a checksum of p to the console for the headless test;
// with ?bench=1 it prints steps/s. Results and errors go to the console as
// "PARLOOP_RESULT {json}" / "PARLOOP_ERROR message". ?check=1 runs the kernels in checking mode
// (out-of-range indices into kernel arguments become errors); ?strategy=staged (or
// global-colour, hierarchical, cas, tune) chooses how racing increments are made safe; under
// tune the choices are kept in localStorage, so the next visit starts tuned. ?trace=1 records
// the timeline (a "Download timeline" button; open the file in ui.perfetto.dev).
import init, { App, last_panic } from "./pkg/parloop_web.js";

const $ = (id) => document.getElementById(id);
const params = new URLSearchParams(location.search);
const TUNE_KEY = "parloop-tune-cache";

// Keeps tune's choices for the next visit (nothing under another strategy).
function saveTune(app) {
  const choices = app.tune_cache();
  if (choices) localStorage.setItem(TUNE_KEY, choices);
}

function fail(text) {
  // A panic reaches JavaScript as "unreachable": show what it was.
  let panic = null;
  try { panic = last_panic(); } catch { /* the module is not loaded yet */ }
  if (panic) text = `${panic} (reload the page)`;
  const m = $("message");
  m.hidden = false;
  m.textContent = text;
  console.error("PARLOOP_ERROR " + text);
}

async function open(n, offscreen = false) {
  if (!navigator.gpu) {
    throw new Error("this browser has no WebGPU (navigator.gpu is undefined): use a recent " +
      "Chrome or Edge, Safari 26+, Firefox 141+, or Chromium with --enable-unsafe-webgpu");
  }
  await init();
  try {
    return await App.create($("canvas"), n, offscreen, params.get("check") === "1",
      params.get("strategy") ?? "", localStorage.getItem(TUNE_KEY) ?? "",
      params.get("trace") === "1");
  } catch (e) {
    throw new Error("WebGPU is present but no adapter or device could be opened: " + e);
  }
}

function show(app) {
  $("adapter").textContent = app.adapter();
  $("mesh").textContent = `${app.vertices()} vertices, ${app.triangles()} triangles`;
}

// Headless Chromium with SwiftShader neither shows a WebGPU canvas nor resolves mapAsync (or
// onSubmittedWorkDone) once a canvas has a WebGPU context ("A valid external Instance reference
// no longer exists"; reproduced with plain JavaScript). So the test and the benchmark render
// offscreen with the same pipeline and show the frame, read back, on a 2D canvas.
async function showSnapshot(app) {
  const canvas = $("canvas");
  const rgba = await app.snapshot();
  const image = new ImageData(new Uint8ClampedArray(rgba.buffer), canvas.width, canvas.height);
  canvas.getContext("2d").putImageData(image, 0, 0);
}

// Runs `steps` steps in batches of `perFrame`, yielding to the browser between batches, and
// waits for the GPU at the end (a readback); returns seconds. Under tune the test waits for
// each batch, as frames do on a shown page: the GPU's timestamps of a batch reach the tuner
// once it has run, and a queue of unrun batches would leave it nothing to decide from.
async function runSteps(app, steps, perFrame) {
  const t0 = performance.now();
  for (let done = 0; done < steps; done += perFrame) {
    app.advance(Math.min(perFrame, steps - done));
    if (params.get("strategy") === "tune") await app.checksum();
    await new Promise((r) => setTimeout(r, 0));
  }
  await app.checksum();
  return (performance.now() - t0) / 1000;
}

async function test() {
  const n = Number(params.get("n") ?? 20);
  const steps = Number(params.get("steps") ?? 200);
  const app = await open(n, true);
  show(app);
  const seconds = await runSteps(app, steps, 10);
  const checksum = await app.checksum();
  app.draw();
  await showSnapshot(app);
  saveTune(app);
  const traceEvents = params.get("trace") === "1"
    ? JSON.parse(app.trace_json()).traceEvents.filter((e) => e.ph === "X" && e.cat === "gpu").length
    : 0;
  console.log("PARLOOP_RESULT " + JSON.stringify({
    n, steps, checksum, seconds, adapter: app.adapter(), tuning: app.tuning(), traceEvents,
  }));
}

async function bench() {
  const n = Number(params.get("n") ?? 100);
  const steps = Number(params.get("steps") ?? 500);
  const perFrame = Number(params.get("spf") ?? 10);
  const app = await open(n, true);
  show(app);
  await runSteps(app, 50, perFrame); // warm-up: pipelines and plans
  const seconds = await runSteps(app, steps, perFrame);
  app.pulse(0.3, 0.7, 1.0);
  app.advance(40);
  app.draw();
  await showSnapshot(app);
  console.log("PARLOOP_RESULT " + JSON.stringify({
    n, steps, perFrame, seconds, stepsPerSecond: steps / seconds, adapter: app.adapter(),
  }));
}

async function interactive() {
  let n = Number($("n").value);
  let app = await open(n);
  show(app);
  let running = true;
  let implicit = false; // the steady-heat mode: clicks add sources, solved by AMG-CG
  let solving = false; // a solve is running (the App is busy until it ends)
  let queued = []; // clicks made during a solve (x0, y0, x1, y1, ...): solved together next
  let perFrame = Number($("spf").value);
  let last = performance.now(), lastDone = app.completed_steps();
  if (params.get("trace") === "1") {
    $("trace").hidden = false;
    $("trace").onclick = () => {
      const url = URL.createObjectURL(new Blob([app.trace_json()], { type: "application/json" }));
      const a = document.createElement("a");
      a.href = url;
      a.download = "parloop-trace.json";
      a.click();
      setTimeout(() => URL.revokeObjectURL(url), 10_000);
    };
  }
  $("run").onclick = () => {
    running = !running;
    $("run").textContent = running ? "Pause" : "Start";
  };
  // While a solve runs the App is busy: controls that change it are put back and ignored.
  const busy = (select, value) => {
    if (solving && select) select.value = value;
    return solving;
  };
  // The heat's figures, cleared for a new system (a new mesh or entering the mode).
  const heatReady = () => {
    $("solve").textContent = "click to add a heat source";
    $("solve-time").textContent = "…";
    $("setup").textContent = "at the first AMG solve";
    legend("u", "0", "…");
  };
  const legend = (label, lo, hi) => {
    $("legend-label").textContent = label;
    $("legend-min").textContent = lo;
    $("legend-max").textContent = hi;
  };
  // The page as the mode shows it: its title, controls, figures and colour scale.
  const showMode = () => {
    const title = implicit
      ? "parloop: steady heat, solved implicitly on WebGPU"
      : "parloop: the explicit wave equation, live on WebGPU";
    $("title").textContent = title;
    document.title = title;
    for (const e of document.querySelectorAll(".wave-only")) e.hidden = implicit;
    for (const e of document.querySelectorAll(".heat-only")) e.hidden = !implicit;
    if (implicit) heatReady();
    else {
      const r = Number($("range").value).toFixed(2);
      legend("p", "-" + r, "+" + r);
    }
  };
  $("mode").onchange = () => {
    if (busy($("mode"), implicit ? "heat" : "wave")) return;
    try {
      app.set_implicit($("mode").value === "heat");
      implicit = $("mode").value === "heat";
      showMode();
      $("message").hidden = true;
    } catch (e) {
      $("mode").value = implicit ? "heat" : "wave"; // the mode did not change
      fail(String(e));
    }
  };
  let shownN = $("n").value;
  $("reset").onclick = () => {
    if (busy($("n"), shownN)) return;
    shownN = $("n").value;
    try {
      app.reset(Number($("n").value));
      if (implicit) heatReady();
      show(app);
      $("message").hidden = true; // a reset recovers from an earlier error
      lastDone = app.completed_steps();
    } catch (e) { fail(String(e)); }
  };
  $("n").onchange = $("reset").onclick;
  // A Gmsh mesh of triangles from a file picker or dropped on the canvas.
  const load = async (file) => {
    if (busy()) return;
    try {
      app.load_mesh(new Uint8Array(await file.arrayBuffer()));
      show(app);
      $("mesh").textContent += ` (${file.name})`;
      if (implicit) heatReady();
      $("message").hidden = true;
      lastDone = app.completed_steps();
    } catch (e) { fail(`${file.name}: ${e}`); }
  };
  $("file").onchange = () => { if ($("file").files.length) load($("file").files[0]); };
  $("canvas").ondragover = (ev) => ev.preventDefault();
  $("canvas").ondrop = (ev) => {
    ev.preventDefault();
    if (ev.dataTransfer.files.length) load(ev.dataTransfer.files[0]);
  };
  $("spf").oninput = () => {
    perFrame = Number($("spf").value);
    $("spf-out").textContent = perFrame;
  };
  $("range").oninput = () => {
    const r = Number($("range").value);
    $("range-out").textContent = r.toFixed(2);
    $("legend-max").textContent = "+" + r.toFixed(2);
    $("legend-min").textContent = "-" + r.toFixed(2);
    if (busy()) return; // the solve's end draws; the range applies from the next change
    try {
      app.set_range(r);
      if (!running || implicit) app.draw();
    } catch (e) { fail(String(e)); }
  };
  $("canvas").onclick = (ev) => {
    const rect = ev.target.getBoundingClientRect();
    // The mesh spans 95% of the canvas, centred (see the vertex shader).
    const x = ((ev.clientX - rect.left) / rect.width - 0.025) / 0.95;
    const y = 1 - ((ev.clientY - rect.top) / rect.height - 0.025) / 0.95;
    if (implicit) {
      // One solve at a time: clicks during a solve are queued, and solved together next.
      queued.push(x, y);
      if (solving) {
        const n = queued.length / 2;
        $("solve").textContent = `solving… (${n} click${n > 1 ? "s" : ""} queued: solved together next)`;
      } else solveQueued();
      return;
    }
    try { app.pulse(x, y, 1.0); if (!running) app.frame(0); } catch (e) { fail(String(e)); }
  };
  // Solves for the sources clicked so far, then for those clicked meanwhile.
  const solveQueued = () => {
    const points = Float32Array.from(queued);
    queued = [];
    const amg = $("pc").value === "amg";
    solving = true;
    $("solve").textContent = "solving…";
    app.heat_source(points, amg).then((r) => {
      const { iterations, residual, recomputed, seconds, setup, top } = JSON.parse(r);
      const sources = points.length / 2;
      $("solve").textContent = `${amg ? "AMG" : "Jacobi"}-CG: ${iterations} iterations, ` +
        `residual ${residual.toExponential(1)} (recomputed: ${recomputed.toExponential(1)})` +
        (sources > 1 ? `, ${sources} sources` : "");
      $("solve-time").textContent = `${(seconds * 1000).toFixed(0)} ms` +
        (setup !== null ? ` (the AMG setup's ${(setup * 1000).toFixed(0)} ms included)` : "");
      if (setup !== null) $("setup").textContent = `${(setup * 1000).toFixed(0)} ms`;
      legend("u", "0", top.toPrecision(2));
    }).catch((e) => {
      // The sources of clicks queued meanwhile were never added: say so, and drop them.
      const dropped = queued.length / 2;
      queued = [];
      $("solve").textContent = "the solve failed" +
        (dropped ? ` (${dropped} queued click${dropped > 1 ? "s" : ""} dropped)` : "");
      fail(String(e));
    }).finally(() => {
      solving = false;
      if (queued.length) solveQueued();
    });
  };
  // The preconditioner applies from the next solve (one running keeps its own).
  const tick = () => {
    try {
      if (running && !implicit) {
        $("dpf").textContent = app.frame(perFrame);
        $("dpf-why").textContent = app.dispatch_note();
      }
      const now = performance.now();
      // The App is busy during a solve (its counts would read 0): refresh after it.
      if (now - last > 500 && !solving) {
        // Steps the GPU has completed, not steps submitted.
        const done = app.completed_steps();
        $("sps").textContent = Math.round((done - lastDone) / ((now - last) / 1000));
        $("steps").textContent = app.steps();
        last = now;
        lastDone = done;
        saveTune(app);
      }
      requestAnimationFrame(tick);
    } catch (e) {
      fail(String(e));
    }
  };
  requestAnimationFrame(tick);
}

const mode = params.has("test") ? test : params.has("bench") ? bench : interactive;
mode().catch((e) => fail(e instanceof Error ? e.message : String(e)));
