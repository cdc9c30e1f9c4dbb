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
}
