//! `parloop bench`: every measurement the project reports, on whatever adapter parloop picks,
//! as one markdown report: the adapter's copy bandwidth, the strategy tables (a triangle mesh
//! and Airfoil's res_calc), fusion on vs off and lazy vs eager, the wave at three sizes,
//! Airfoil on two meshes and a CG solve (`solver`), with GB/s as a fraction of the copy
//! bandwidth. It needs no Rust
//! toolchain: a release binary and a Vulkan driver are enough.

mod contention;
mod copy;
mod sizes;
mod solver;
mod tune;
mod vectors;

pub use sizes::Sizes;
use vectors::Spread;

/// Interleaved repeats of each strategy table's rows.
const REPEATS: usize = 5;

use parloop::apps::airfoil::{Airfoil, bytes_per_call};
use parloop::apps::wave::Wave;
use parloop::mesh::{airfoil::naca0012, unit_square};
use parloop::{Config, Context, Kernel, Map, Set, Staging, Stats, Strategy, Variant};
use std::fmt::Write;
use std::time::Instant;

pub(crate) type Res<T> = Result<T, String>;

pub(crate) fn context(config: Config) -> Res<Context> {
    Context::with_config(config).map_err(|e| e.to_string())
}

pub(crate) fn base() -> Res<Config> {
    Ok(Config {
        profile: true,
        ..Config::from_env().map_err(|e| e.to_string())?
    })
}

/// The report's sections, in the order they run.
pub const SECTIONS: [&str; 11] = [
    "copy",
    "triangles",
    "res_calc",
    "wave_strategies",
    "layouts",
    "modes",
    "wave",
    "airfoil",
    "vectors",
    "contention",
    "solver",
];

/// Runs the suite (or the `sections` named), printing the report section by section (returns
/// what is left).
pub fn run(sizes: Sizes, only: &[String], sections: &[String]) -> Res<String> {
    let want = |s: &str| sections.is_empty() || sections.iter().any(|x| x == s);
    let known = strategies(true);
    if let Some(bad) = only.iter().find(|o| !known.iter().any(|(k, ..)| k == o)) {
        let names: Vec<&str> = known.iter().map(|(k, ..)| *k).collect();
        return Err(format!(
            "--strategies: no strategy {bad:?}; the rows are {}",
            names.join(", ")
        ));
    }
    let rows = |atomics: bool| -> Vec<(&'static str, &'static str, Strategy, Staging)> {
        strategies(atomics)
            .into_iter()
            .filter(|(k, ..)| only.is_empty() || only.iter().any(|o| o == k))
            .collect()
    };
    let ctx = context(base()?)?;
    let gpu = ctx.gpu();
    let mut r = String::new();
    let date = parloop::util::today();
    let _ = writeln!(r, "# parloop benchmark report\n");
    let _ = writeln!(
        r,
        "adapter: {} ({:?}, {:?}, driver {} {}); f32 atomics: {}; f64: {}; GPU timestamps: {}  \n\
         size: {}; date: {date}; command: `parloop bench --size {} --iterations {} \
         --solver-n {}{}{}`\n",
        gpu.info.name,
        gpu.info.backend,
        gpu.info.device_type,
        gpu.info.driver,
        gpu.info.driver_info,
        yes(gpu.float_atomics()),
        yes(gpu.f64()),
        yes(gpu.timestamps()),
        sizes.name,
        sizes.name,
        sizes.iterations,
        sizes.solver_n,
        if sections.is_empty() {
            String::new()
        } else {
            format!(" --sections {}", sections.join(","))
        },
        if sizes.solver_types.is_empty() {
            String::new()
        } else {
            format!(" --solver-types {}", sizes.solver_types.join(","))
        }
    );
    let rates = copy::measure(&ctx, sizes.copy_bytes);
    let copy = rates.best();
    let _ = writeln!(
        r,
        "## Copy bandwidth\n\nA {} MB buffer copied on the device (bytes read + written per \
         second): {:.1} GB/s by the copy command, {:.1} GB/s by a compute shader moving 16 bytes \
         per invocation; the faster, **{copy:.1} GB/s**, is the reference. Every GB/s below \
         counts each datum once (the bytes models of docs/background.md) and gives its \
         fraction of this figure. A compute shader moving 4 bytes per invocation, as a loop \
         over one f32 per element does, copies {:.1} GB/s.\n",
        sizes.copy_bytes >> 20,
        rates.command,
        rates.shader,
        rates.scalar
    );
    let timing = if gpu.timestamps() {
        "GPU time from timestamps"
    } else {
        "wall time (no timestamps on this adapter)"
    };
    let atomics = gpu.float_atomics();
    drop(ctx);
    // Each section is printed when done: a long run shows its progress, and a run cut short
    // keeps what it measured.
    let emit = |r: &mut String| {
        use std::io::Write;
        print!("{r}");
        let _ = std::io::stdout().flush();
        r.clear();
    };
    emit(&mut r);
    if want("triangles") {
        strategies_triangles(&mut r, &sizes, &rows(atomics), copy, timing)?;
        emit(&mut r);
    }
    if want("res_calc") {
        strategies_res_calc(&mut r, &sizes, &rows(atomics), copy, timing)?;
        emit(&mut r);
    }
    if want("wave_strategies") {
        let n = sizes.mode_n;
        tune::wave_strategies(&mut r, n, steps_for(n)?, &rows(atomics))?;
        emit(&mut r);
    }
    if want("layouts") {
        layouts(&mut r, &sizes, copy)?;
        emit(&mut r);
    }
    if want("modes") {
        modes(&mut r, &sizes)?;
        emit(&mut r);
    }
    if want("wave") {
        wave_sizes(&mut r, &sizes)?;
        emit(&mut r);
    }
    if want("airfoil") {
        airfoil(&mut r, &sizes, copy)?;
        emit(&mut r);
    }
    if want("vectors") {
        vectors::vectors(&mut r, &sizes.vector_ns, copy)?;
        emit(&mut r);
    }
    if want("contention") {
        contention::contention(&mut r, sizes.tri_n, sizes.tet_n, sizes.hub_n)?;
        emit(&mut r);
    }
    if want("solver") {
        solver::solver(&mut r, sizes.solver_n, &sizes.solver_types, copy)?;
    }
    Ok(r)
}

/// Three significant digits, however small (a tiny mesh on a big GPU reads a small fraction).
pub(crate) fn sig(v: f64) -> String {
    if !v.is_finite() || v <= 0.0 {
        return format!("{v}");
    }
    let decimals = (2 - v.log10().floor() as i32).max(0) as usize;
    format!("{v:.decimals$}")
}

fn yes(b: bool) -> &'static str {
    if b { "yes" } else { "no" }
}

/// Device copy bandwidth in GB/s (read + written), from one submission of several copies.
/// A strategy table's rows.
type Rows = [(&'static str, &'static str, Strategy, Staging)];

/// The strategies compared (`auto`, then `parloop::Variant::ALL`): name (for --strategies),
/// label, strategy, staging.
fn strategies(atomics: bool) -> Vec<(&'static str, &'static str, Strategy, Staging)> {
    std::iter::once(Variant::AUTO)
        .chain(Variant::available(atomics))
        .map(|v| (v.name(), v.label(), v.strategy, v.staging))
        .collect()
}

/// Milliseconds per call of the groups that contain `kernel` since `before` (GPU
/// timestamps), else `wall_ms`.
fn ms_per_call(ctx: &Context, before: &Stats, kernel: &str, wall_ms: f64) -> f64 {
    let totals = |st: &Stats| {
        st.kernel_times
            .iter()
            .filter(|(l, _)| l.split('+').any(|k| k == kernel))
            .fold((0, 0), |(c, n), (_, t)| (c + t.calls, n + t.ns))
    };
    let ((c1, n1), (c0, n0)) = (totals(&ctx.stats()), totals(before));
    let (calls, ns) = (c1 - c0, n1 - n0);
    if calls == 0 {
        wall_ms
    } else {
        ns as f64 / calls as f64 / 1e6
    }
}

fn strategy_table_head(r: &mut String, title: &str, what: &str) {
    let _ = writeln!(
        r,
        "## {title}\n\n{what} Median of {REPEATS} interleaved repeats (range in brackets); GB/s \
         and the copy's share at the median.\n\n| strategy | ms/loop | GB/s | of copy |\n\
         |---|---:|---:|---:|"
    );
}

fn strategy_row(r: &mut String, label: &str, ms: Spread, bytes: f64, copy: f64) {
    let gbs = bytes / (ms.median * 1e6);
    let _ = writeln!(
        r,
        "| {label} | {} | {} | {}% |",
        ms.show(),
        sig(gbs),
        sig(100.0 * gbs / copy)
    );
}
fn strategies_triangles(
    r: &mut String,
    s: &Sizes,
    rows: &Rows,
    copy: f64,
    timing: &str,
) -> Res<()> {
    let mesh = unit_square(s.tri_n);
    let (nc, nv) = (mesh.ncells(), mesh.nvertices());
    let bytes = 16.0 * nc as f64 + 8.0 * nv as f64;
    strategy_table_head(
        r,
        "Strategies: a triangle mesh",
        &format!(
            "{nc} cells incrementing their 3 vertices ({nv}), f32; {timing}; 16 B/cell + 8 B/vertex."
        ),
    );
    let spread = Kernel::new(
        "spread",
        "fn spread(w: ptr<function, array<f32, 1>>, v: ptr<function, array<f32, 3>>) { \
         for (var a = 0; a < 3; a++) { (*v)[a] += (*w)[0]; } }",
    );
    let mut runners: Vec<Runner> = Vec::new();
    for &(_, label, strategy, staging) in rows {
        let ctx = context(Config {
            strategy,
            staging,
            ..base()?
        })?;
        let cells = Set::new("cells", nc);
        let verts = Set::new("vertices", nv);
        let err = |e: parloop::Error| e.to_string();
        let c2v = Map::new("c2v", &cells, &verts, 3, &mesh.cell_vertices()).map_err(err)?;
        let w = ctx.dat("w", &cells, 1, &vec![1.0f32; nc]).map_err(err)?;
        let v = ctx.dat_zeros::<f32>("v", &verts, 1).map_err(err)?;
        let tuned = tune::warm(&ctx, || {
            ctx.par_loop(&spread, &cells, &[w.read(), v.all(&c2v).inc()])
                .map_err(err)?;
            ctx.flush().map_err(err)
        })?;
        let label = tune::label(&ctx, label, tuned);
        let spread = spread.clone();
        let calls = 10;
        let sample = move || -> Res<f64> {
            let before = ctx.stats();
            let t = Instant::now();
            for _ in 0..calls {
                ctx.par_loop(&spread, &cells, &[w.read(), v.all(&c2v).inc()])
                    .map_err(err)?;
            }
            ctx.flush().map_err(err)?;
            let _ = v.data_ro().map_err(err)?;
            let wall = t.elapsed().as_secs_f64() * 1e3 / calls as f64;
            Ok(ms_per_call(&ctx, &before, "spread", wall))
        };
        sample()?; // plans and pipelines built
        runners.push((label, Box::new(sample)));
    }
    interleaved(r, runners, bytes, copy)
}

/// A strategy table's row: its label, and a closure that measures one sample (ms per loop).
type Runner = (String, Box<dyn FnMut() -> Res<f64>>);

/// The rows' samples taken in turn, [`REPEATS`] rounds, then each row as the median with its
/// range.
fn interleaved(r: &mut String, mut runners: Vec<Runner>, bytes: f64, copy: f64) -> Res<()> {
    let mut ms = vec![Vec::new(); runners.len()];
    for _ in 0..REPEATS {
        for (k, (_, sample)) in runners.iter_mut().enumerate() {
            ms[k].push(sample()?);
        }
    }
    for ((label, _), ms) in runners.iter().zip(&ms) {
        strategy_row(r, label, Spread::of(ms), bytes, copy);
    }
    r.push('\n');
    Ok(())
}

fn strategies_res_calc(r: &mut String, s: &Sizes, rows: &Rows, copy: f64, timing: &str) -> Res<()> {
    let mut m = naca0012(s.res_mesh.0, s.res_mesh.1);
    m.round6();
    let bytes = bytes_per_call(&m)[2].1;
    strategy_table_head(
        r,
        "Strategies: Airfoil's res_calc",
        &format!(
            "{} edges incrementing their 2 cells ({}), f32 dim 4; {timing}; {:.1} MB per call.",
            m.edges.len(),
            m.cells.len(),
            bytes / 1e6
        ),
    );
    let mut runners: Vec<Runner> = Vec::new();
    for &(_, label, strategy, staging) in rows {
        let ctx = context(Config {
            strategy,
            staging,
            ..base()?
        })?;
        let err = |e: parloop::Error| e.to_string();
        let a = Airfoil::new(&ctx, &m).map_err(err)?;
        a.iteration(None).map_err(err)?;
        let _ = a.q.data_ro().map_err(err)?;
        let tuned = tune::warm(&ctx, || {
            a.iteration(None).map_err(err)?;
            a.q.data_ro().map(|_| ()).map_err(err)
        })?;
        let label = tune::label(&ctx, label, tuned);
        let sample = move || -> Res<f64> {
            let before = ctx.stats();
            let t = Instant::now();
            a.iteration(None).map_err(err)?;
            let _ = a.q.data_ro().map_err(err)?;
            // Two res_calc calls per iteration; their wall share is not known without
            // timestamps.
            let wall = t.elapsed().as_secs_f64() * 1e3 / 2.0;
            Ok(ms_per_call(&ctx, &before, "res_calc", wall))
        };
        runners.push((label, Box::new(sample)));
    }
    interleaved(r, runners, bytes, copy)
}

/// Steps/s of the wave at `n` with `config`, dispatches and submissions per step, and the
/// row's label (`label`; under `tune`, with what it chose: it is timed after it chose).
pub(crate) fn wave_rate(
    config: Config,
    n: usize,
    steps: usize,
    label: &str,
) -> Res<(f64, f64, f64, String)> {
    let err = |e: parloop::Error| e.to_string();
    let ctx = context(config)?;
    let mut w = Wave::new(&ctx, n, 0.0005).map_err(err)?;
    for _ in 0..10 {
        w.step().map_err(err)?;
    }
    let tuned = tune::warm(&ctx, || {
        w.step().map_err(err)?;
        ctx.flush().map_err(err)
    })?;
    let _ = w.p.data_ro().map_err(err)?;
    let before = ctx.stats();
    let t = Instant::now();
    for k in 1..=steps {
        w.step().map_err(err)?;
        if k % 10 == 0 {
            ctx.flush().map_err(err)?;
        }
    }
    let _ = w.p.data_ro().map_err(err)?;
    let wall = t.elapsed().as_secs_f64();
    let st = ctx.stats();
    let per = |x: u64| x as f64 / steps as f64;
    Ok((
        steps as f64 / wall,
        per(st.dispatches - before.dispatches),
        per(st.submissions - before.submissions),
        tune::label(&ctx, label, tuned),
    ))
}

/// Steps that take about a second at `n` (from a short run), at least 20.
fn steps_for(n: usize) -> Res<usize> {
    let (rate, ..) = wave_rate(base()?, n, 10, "")?;
    Ok((rate as usize).clamp(20, 2000) / 10 * 10)
}

fn modes(r: &mut String, s: &Sizes) -> Res<()> {
    let n = s.mode_n;
    let steps = steps_for(n)?;
    let _ = writeln!(
        r,
        "## Fusion and lazy evaluation\n\nThe wave on the {n} x {n} unit square ({} \
         triangles), {steps} steps, a force every 10 steps; side by side in one run.\n\n\
         | mode | steps/s | dispatches/step | submissions/step |\n|---|---:|---:|---:|",
        2 * n * n
    );
    let b = base()?;
    let rows = [
        ("lazy, fused", b.clone()),
        (
            "lazy, unfused",
            Config {
                fusion: false,
                ..b.clone()
            },
        ),
        (
            "eager",
            Config {
                lazy: false,
                fusion: false,
                ..b
            },
        ),
    ];
    let mut rates = Vec::new();
    for (label, config) in rows {
        let (rate, d, sub, _) = wave_rate(config, n, steps, label)?;
        let _ = writeln!(r, "| {label} | {} | {} | {} |", sig(rate), sig(d), sig(sub));
        rates.push(rate);
    }
    let _ = writeln!(
        r,
        "\nfused / unfused: {:.2}x; lazy / eager: {:.2}x (steps/s)\n",
        rates[0] / rates[1],
        rates[0] / rates[2]
    );
    Ok(())
}

fn wave_sizes(r: &mut String, s: &Sizes) -> Res<()> {
    let _ = writeln!(
        r,
        "## The wave\n\nSteps/s of the wave (lazy, fused, auto strategy, a force every 10 \
         steps) on the n x n unit square.\n\n| n | vertices | triangles | steps | steps/s |\n\
         |---:|---:|---:|---:|---:|"
    );
    for n in s.wave_ns {
        let steps = steps_for(n)?;
        let (rate, ..) = wave_rate(base()?, n, steps, "")?;
        let _ = writeln!(
            r,
            "| {n} | {} | {} | {steps} | {} |",
            (n + 1) * (n + 1),
            2 * n * n,
            sig(rate)
        );
    }
    r.push('\n');
    Ok(())
}

/// Airfoil with Dats element by element (the default) and struct-of-arrays (`Config::soa`).
fn layouts(r: &mut String, s: &Sizes, copy: f64) -> Res<()> {
    let mut m = naca0012(s.res_mesh.0, s.res_mesh.1);
    m.round6();
    let model = bytes_per_call(&m);
    let _ = writeln!(
        r,
        "## Data layout\n\nAirfoil on the {} x {} mesh ({} cells), 5 iterations after one, auto \
         strategy: q, qold, res (dim 4) and x (dim 2) element by element or struct-of-arrays.\n\n\
         | layout | ms/iteration | res_calc ms | GB/s | of copy | adt_calc+update ms |\n\
         |---|---:|---:|---:|---:|---:|",
        s.res_mesh.0,
        s.res_mesh.1,
        m.cells.len()
    );
    for (label, soa) in [("array of structs", false), ("struct of arrays", true)] {
        let err = |e: parloop::Error| e.to_string();
        let ctx = context(Config { soa, ..base()? })?;
        let a = Airfoil::new(&ctx, &m).map_err(err)?;
        a.iteration(None).map_err(err)?;
        let _ = a.q.data_ro().map_err(err)?;
        let before = ctx.stats();
        let t = Instant::now();
        for _ in 0..5 {
            a.iteration(None).map_err(err)?;
        }
        let _ = a.q.data_ro().map_err(err)?;
        let wall = t.elapsed().as_secs_f64() * 1e3 / 5.0;
        let res = ms_per_call(&ctx, &before, "res_calc", f64::NAN);
        let upd = ms_per_call(&ctx, &before, "update", f64::NAN);
        let gbs = model[2].1 / (res * 1e6);
        let _ = writeln!(
            r,
            "| {label} | {} | {} | {} | {}% | {} |",
            sig(wall),
            sig(res),
            sig(gbs),
            sig(100.0 * gbs / copy),
            sig(upd)
        );
    }
    r.push('\n');
    Ok(())
}

fn airfoil(r: &mut String, s: &Sizes, copy: f64) -> Res<()> {
    let its = s.iterations;
    let _ = writeln!(
        r,
        "## Airfoil\n\nOP2's Airfoil in single precision, {its} iterations (lazy, fused, auto \
         strategy), after one warm-up iteration; rms as OP2 prints it.\n\n\
         | mesh | cells | total s | ms/iteration | rms at the end | res_calc GB/s | of copy | \
         update GB/s | of copy |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|"
    );
    for (i, j) in s.airfoil_meshes {
        let err = |e: parloop::Error| e.to_string();
        let mut m = naca0012(i, j);
        m.round6();
        let ctx = context(base()?)?;
        let a = Airfoil::new(&ctx, &m).map_err(err)?;
        a.iteration(None).map_err(err)?;
        let _ = a.q.data_ro().map_err(err)?;
        let before = ctx.stats();
        let rms = ctx.global("rms", &[0.0f32]).map_err(err)?;
        let t = Instant::now();
        for it in 1..=its {
            a.iteration((it == its).then_some(&rms)).map_err(err)?;
        }
        let last = rms.value().map_err(err)?[0];
        let wall = t.elapsed().as_secs_f64();
        let model = bytes_per_call(&m);
        let gbs = |kernel: &str, bytes: f64| {
            let ms = ms_per_call(&ctx, &before, kernel, f64::NAN);
            bytes / (ms * 1e6)
        };
        let res = gbs("res_calc", model[2].1);
        // update fuses with others; its rate here is its own bytes over its group's time (a
        // lower bound).
        let upd = gbs("update", model[4].1);
        let _ = writeln!(
            r,
            "| {i} x {j} | {} | {} | {} | {:.5e} | {} | {}% | {} | {}% |",
            m.cells.len(),
            sig(wall),
            sig(wall * 1e3 / its as f64),
            (last as f64 / m.cells.len() as f64).sqrt(),
            sig(res),
            sig(100.0 * res / copy),
            sig(upd),
            sig(100.0 * upd / copy)
        );
    }
    r.push('\n');
    Ok(())
}
