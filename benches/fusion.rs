//! Fused vs unfused: the explicit wave time step (four direct vertex loops and one indirect
//! cell loop incrementing vertices) recorded 10 steps per force, with and without fusion, on two
//! mesh sizes: dispatches per step, device bytes allocated for data, time per step.
//!
//! `cargo bench --bench fusion`

#[path = "common.rs"]
mod common;

use parloop::apps::wave::Wave;
use parloop::{Config, Context};

const STEPS: usize = 200;
const PER_FORCE: usize = 10;

fn run(n: usize, fusion: bool, strategy: parloop::Strategy) -> (String, f64, f64, u64, String) {
    let ctx = Context::with_config(Config {
        fusion,
        strategy,
        ..Config::from_env()
    })
    .expect("an adapter");
    let mut w = Wave::new(&ctx, n, 0.001).unwrap();
    let mut steps = |k: usize| {
        for s in 0..k {
            w.step().unwrap();
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
    let _ = w.p.data_ro().unwrap();
    let secs = t.elapsed().as_secs_f64();
    let after = ctx.stats();
    (
        ctx.adapter(),
        secs / STEPS as f64,
        (after.dispatches - before.dispatches) as f64 / STEPS as f64,
        after.data_bytes,
        ctx.explain().lines().next().unwrap_or("").to_string(),
    )
}

/// The same step with per-step temporaries, as explicit schemes often write it: each half
/// update of phi goes through a temporary Dat made and dropped within the step.
const TEMP_KERNELS: &str = "
fn half_dt_p(p: ptr<function, array<f32, 1>>, tmp: ptr<function, array<f32, 1>>) { (*tmp)[0] = 0.5 * dt * (*p)[0]; }
fn minus(tmp: ptr<function, array<f32, 1>>, phi: ptr<function, array<f32, 1>>) { (*phi)[0] -= (*tmp)[0]; }
";

fn run_temporaries(n: usize, fusion: bool) -> (f64, f64, u64, String) {
    use parloop::Kernel;
    let ctx = Context::with_config(Config {
        fusion,
        ..Config::from_env()
    })
    .expect("an adapter");
    let w = Wave::new(&ctx, n, 0.001).unwrap();
    let half = Kernel::new("half_dt_p", TEMP_KERNELS);
    let minus = Kernel::new("minus", TEMP_KERNELS);
    let zero = Kernel::new("zero", parloop::apps::wave::KERNELS);
    let stiffness = Kernel::new("stiffness", parloop::apps::wave::KERNELS);
    let p_update = Kernel::new("p_update", parloop::apps::wave::KERNELS);
    let (v, c) = (&w.vertices, &w.cells);
    let step = || {
        let phi_half = || {
            let tmp = ctx.dat_zeros::<f32>("tmp", v, 1).unwrap();
            ctx.par_loop(&half, v, &[w.p.read(), tmp.write()]).unwrap();
            ctx.par_loop(&minus, v, &[tmp.read(), w.phi.rw()]).unwrap();
        };
        phi_half();
        ctx.par_loop(&zero, v, &[w.t1.write()]).unwrap();
        ctx.par_loop(
            &stiffness,
            c,
            &[
                w.coords.all(&w.c2v).read(),
                w.phi.all(&w.c2v).read(),
                w.t1.all(&w.c2v).inc(),
            ],
        )
        .unwrap();
        ctx.par_loop(&p_update, v, &[w.t1.read(), w.mass.read(), w.p.rw()])
            .unwrap();
        phi_half();
    };
    let steps = |k: usize| {
        for s in 0..k {
            step();
            if s % PER_FORCE == PER_FORCE - 1 {
                ctx.flush().unwrap();
            }
        }
        ctx.flush().unwrap();
    };
    steps(2 * PER_FORCE);
    let before = ctx.stats();
    let t = std::time::Instant::now();
    steps(STEPS);
    let _ = w.p.data_ro().unwrap();
    let secs = t.elapsed().as_secs_f64();
    let after = ctx.stats();
    let explain = ctx.explain();
    let eph = explain
        .lines()
        .find(|l| l.contains("ephemeral"))
        .unwrap_or("")
        .trim()
        .to_string();
    (
        secs / STEPS as f64,
        (after.dispatches - before.dispatches) as f64 / STEPS as f64,
        after.data_bytes,
        eph,
    )
}

fn main() {
    let mut adapter = String::new();
    let mut rows = Vec::new();
    for n in [100usize, 400] {
        for strategy in [parloop::Strategy::Auto, parloop::Strategy::Hierarchical] {
            let fused = run(n, true, strategy);
            let plain = run(n, false, strategy);
            adapter = fused.0.clone();
            rows.push((n, strategy, fused, plain));
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
            "| {n}x{n} ({} triangles) | {} | {:.2} | {:.2} | {:.3} | {:.3} | {:.2}x | {} / {} |",
            2 * n * n,
            strategy.name(),
            f.2,
            u.2,
            f.1 * 1e3,
            u.1 * 1e3,
            u.1 / f.1,
            f.3,
            u.3
        );
    }
    println!(
        "\nGrouping of the last force (fused, 400x400, hierarchical): {}",
        rows.last().map_or("", |r| r.2.4.as_str())
    );
    println!(
        "\nThe step with per-step temporaries (phi's half updates through a temporary Dat made and dropped each step), auto strategy:\n"
    );
    println!(
        "| mesh | fused: dispatches/step | unfused | fused: ms/step | unfused | speed-up | data bytes (fused / unfused) |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|");
    let mut note = String::new();
    for n in [100usize, 400] {
        let f = run_temporaries(n, true);
        let u = run_temporaries(n, false);
        println!(
            "| {n}x{n} | {:.2} | {:.2} | {:.3} | {:.3} | {:.2}x | {} / {} |",
            f.1,
            u.1,
            f.0 * 1e3,
            u.0 * 1e3,
            u.0 / f.0,
            f.2,
            u.2
        );
        note = f.3;
    }
    println!("\nexplain() of the fused runs: {note}");
}
