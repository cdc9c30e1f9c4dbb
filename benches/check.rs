//! The cost of checking mode: Airfoil on the standard mesh and the wave on a 400 x 400 mesh,
//! each with checking off and on, side by side in one run (same adapter, same strategy).
//!
//! `cargo bench --bench check` (CHECK_ITERATIONS overrides Airfoil's 50 iterations, CHECK_STEPS
//! the wave's 200 steps).

#[path = "common.rs"]
mod common;

use parloop::apps::airfoil::Airfoil;
use parloop::apps::wave::Wave;
use parloop::mesh::airfoil::naca0012;
use parloop::{Config, Context};
use std::time::Instant;

fn ctx(check: bool) -> Context {
    Context::with_config(Config {
        check,
        ..Config::from_env().unwrap()
    })
    .expect("an adapter")
}

fn env(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn main() {
    let iterations = env("CHECK_ITERATIONS", 50);
    let steps = env("CHECK_STEPS", 200);
    let mut m = naca0012(400, 600);
    m.round6();
    let mut rows = Vec::new();
    let mut adapter = String::new();
    for check in [false, true] {
        let c = ctx(check);
        adapter = c.adapter();
        let a = Airfoil::new(&c, &m).unwrap();
        a.iteration(None).unwrap();
        let _ = a.q.data_ro().unwrap();
        let t = Instant::now();
        for _ in 0..iterations {
            a.iteration(None).unwrap();
        }
        let _ = a.q.data_ro().unwrap();
        let airfoil_ms = t.elapsed().as_secs_f64() * 1e3 / iterations as f64;

        let c = ctx(check);
        let mut w = Wave::new(&c, 400, 0.0005).unwrap();
        for _ in 0..10 {
            w.step().unwrap();
        }
        let _ = w.p.data_ro().unwrap();
        let t = Instant::now();
        for s in 1..=steps {
            w.step().unwrap();
            if s % 10 == 0 {
                c.flush().unwrap();
            }
        }
        let _ = w.p.data_ro().unwrap();
        let wave_ms = t.elapsed().as_secs_f64() * 1e3 / steps as f64;
        rows.push((check, airfoil_ms, wave_ms));
    }
    common::header(
        &format!(
            "Checking mode: Airfoil (standard mesh, {iterations} iterations) and the wave \
             (400 x 400, {steps} steps, 10 per force)"
        ),
        &adapter,
        "cargo bench --bench check",
    );
    println!("| checking | Airfoil ms/iteration | wave ms/step |");
    println!("|---|---:|---:|");
    for (check, a, w) in &rows {
        println!(
            "| {} | {a:.1} | {w:.2} |",
            if *check { "on" } else { "off" }
        );
    }
    let (off, on) = (&rows[0], &rows[1]);
    println!(
        "\nCost of checking: Airfoil x{:.2}, wave x{:.2}.",
        on.1 / off.1,
        on.2 / off.2
    );
}
