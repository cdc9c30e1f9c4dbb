//! Fused vs unfused: the explicit wave time step (four direct vertex loops and one indirect
//! cell loop incrementing vertices) recorded 10 steps per force, with and without fusion, on two
//! mesh sizes: dispatches per step, device bytes allocated for data, time per step.
//!
//! `cargo bench --bench fusion`

#[path = "common.rs"]
mod common;

use parloop::apps::wave::Wave;
use parloop::{Config, Context};
use std::cell::RefCell;

const STEPS: usize = 200;
const PER_FORCE: usize = 10;

/// What one configuration measured.
struct Measured {
    ms_per_step: f64,
    dispatches_per_step: f64,
    data_bytes: u64,
    explain: String,
}

/// Runs `step` PER_FORCE times per force: a warm-up, then STEPS timed steps ended by `finish`
/// (a readback, so that the GPU's work is inside the time).
fn measure(ctx: &Context, mut step: impl FnMut(), finish: impl Fn()) -> Measured {
    let mut steps = |k: usize| {
        for s in 0..k {
            step();
            if s % PER_FORCE == PER_FORCE - 1 {
                ctx.flush().unwrap();
            }
        }
        ctx.flush().unwrap();
    };
    steps(2 * PER_FORCE); // warm-up: pipelines and plans
    let before = ctx.stats();
    let t = std::time::Instant::now();
    steps(STEPS);
    finish();
    let secs = t.elapsed().as_secs_f64();
    let after = ctx.stats();
    Measured {
        ms_per_step: secs * 1e3 / STEPS as f64,
        dispatches_per_step: (after.dispatches - before.dispatches) as f64 / STEPS as f64,
        data_bytes: after.data_bytes,
        explain: ctx.explain(),
    }
}

/// The table cells comparing a fused run with an unfused one.
fn compare(f: &Measured, u: &Measured) -> String {
    format!(
        "{:.2} | {:.2} | {:.3} | {:.3} | {:.2}x | {} / {}",
        f.dispatches_per_step,
        u.dispatches_per_step,
        f.ms_per_step,
        u.ms_per_step,
        u.ms_per_step / f.ms_per_step,
        f.data_bytes,
        u.data_bytes
    )
}

fn context(fusion: bool, strategy: parloop::Strategy) -> Context {
    Context::with_config(Config {
        fusion,
        strategy,
        ..Config::from_env().unwrap()
    })
    .expect("an adapter")
}

/// The wave step as the demo records it.
fn run(n: usize, fusion: bool, strategy: parloop::Strategy) -> Measured {
    let ctx = context(fusion, strategy);
    let w = RefCell::new(Wave::new(&ctx, n, 0.001).unwrap());
    measure(
        &ctx,
        || w.borrow_mut().step().unwrap(),
        || {
            let _ = w.borrow().p.data_ro().unwrap();
        },
    )
}

/// The same step with per-step temporaries, as explicit schemes often write it: each half
/// update of phi goes through a temporary Dat made and dropped within the step.
const TEMP_KERNELS: &str = "
fn half_dt_p(p: ptr<function, array<f32, 1>>, tmp: ptr<function, array<f32, 1>>) { (*tmp)[0] = 0.5 * dt * (*p)[0]; }
fn minus(tmp: ptr<function, array<f32, 1>>, phi: ptr<function, array<f32, 1>>) { (*phi)[0] -= (*tmp)[0]; }
";

fn run_temporaries(n: usize, fusion: bool) -> Measured {
    use parloop::Kernel;
    let ctx = context(fusion, parloop::Strategy::Auto);
    let w = Wave::new(&ctx, n, 0.001).unwrap();
    let kernel = |name: &str, src: &str| Kernel::new(name, src);
    let (half, minus) = (
        kernel("half_dt_p", TEMP_KERNELS),
        kernel("minus", TEMP_KERNELS),
    );
    let zero = kernel("zero", parloop::apps::wave::KERNELS);
    let stiffness = kernel("stiffness", parloop::apps::wave::KERNELS);
    let p_update = kernel("p_update", parloop::apps::wave::KERNELS);
    let (v, c) = (&w.vertices, &w.cells);
    let phi_half = || {
        let tmp = ctx.dat_zeros::<f32>("tmp", v, 1).unwrap();
        ctx.par_loop(&half, v, &[w.p.read(), tmp.write()]).unwrap();
        ctx.par_loop(&minus, v, &[tmp.read(), w.phi.rw()]).unwrap();
    };
    let step = || {
        phi_half();
        ctx.par_loop(&zero, v, &[w.t1.write()]).unwrap();
        let args = [
            w.coords.all(&w.c2v).read(),
            w.phi.all(&w.c2v).read(),
            w.t1.all(&w.c2v).inc(),
        ];
        ctx.par_loop(&stiffness, c, &args).unwrap();
        ctx.par_loop(&p_update, v, &[w.t1.read(), w.mass.read(), w.p.rw()])
            .unwrap();
        phi_half();
    };
    measure(&ctx, step, || {
        let _ = w.p.data_ro().unwrap();
    })
}

fn main() {
    let adapter = context(true, parloop::Strategy::Auto).adapter();
    let mut rows = Vec::new();
    for n in [100usize, 400] {
        for strategy in [parloop::Strategy::Auto, parloop::Strategy::Hierarchical] {
            rows.push((n, strategy, run(n, true, strategy), run(n, false, strategy)));
        }
    }
    common::header(
        &format!("Fusion: the wave step, {PER_FORCE} steps per force, {STEPS} steps timed"),
        &adapter,
        "cargo bench --bench fusion",
    );
    println!(
        "| mesh | strategy | fused: dispatches/step | unfused | fused: ms/step | unfused | speed-up | data bytes (fused / unfused) |"
    );
    println!("|---|---|---:|---:|---:|---:|---:|---:|");
    for (n, strategy, f, u) in &rows {
        println!(
            "| {n}x{n} ({} triangles) | {} | {} |",
            2 * n * n,
            strategy.name(),
            compare(f, u)
        );
    }
    if let Some((_, _, f, _)) = rows.last() {
        println!(
            "\nGrouping of the last force (fused, 400x400, hierarchical): {}",
            f.explain.lines().next().unwrap_or("")
        );
    }
    println!(
        "\nThe step with per-step temporaries (phi's half updates through a temporary Dat made and dropped each step), auto strategy:\n"
    );
    println!(
        "| mesh | fused: dispatches/step | unfused | fused: ms/step | unfused | speed-up | data bytes (fused / unfused) |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|");
    let mut note = String::new();
    for n in [100usize, 400] {
        let (f, u) = (run_temporaries(n, true), run_temporaries(n, false));
        println!("| {n}x{n} | {} |", compare(&f, &u));
        note = f
            .explain
            .lines()
            .find(|l| l.contains("ephemeral"))
            .unwrap_or("")
            .trim()
            .to_string();
    }
    println!("\nexplain() of the fused runs: {note}");
}
