//! Airfoil on the standard mesh (720,000 cells), 1000 iterations with each strategy: total time,
//! per-group GPU time and GB/s (bytes model of docs/background.md), and the ratio to the plain-Rust
//! sequential implementation of the same kernels (release build, same machine).
//!
//! `cargo bench --bench airfoil` (AIRFOIL_ITERATIONS overrides the 1000 iterations).

#[path = "common.rs"]
mod common;

use parloop::apps::airfoil::{Airfoil, bytes_per_call, constants_f32, constants_f64, reference};
use parloop::mesh::airfoil::naca0012;
use parloop::{Config, Context, Variant};
use std::time::Instant;

fn main() {
    let iterations: u32 = std::env::var("AIRFOIL_ITERATIONS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1000);
    let mut m = naca0012(400, 600);
    m.round6();
    let nc = m.cells.len() as f64;
    let model = bytes_per_call(&m);
    let probe = Context::new().expect("an adapter");
    // The fixed strategies: `tune` would time its own trials here (`parloop bench` warms it
    // up and sets it beside them).
    let strategies: Vec<Variant> = Variant::available(probe.gpu().float_atomics())
        .filter(|v| v.strategy != parloop::Strategy::Tune)
        .collect();
    let adapter = probe.adapter();
    drop(probe);

    // CPU references first (the GPU runs do not disturb them).
    let t = Instant::now();
    let mut s32 = reference::State::<f32>::new(&m, constants_f32());
    let mut rms32 = 0.0;
    for _ in 0..iterations {
        rms32 = s32.iteration(&m);
    }
    let cpu32 = t.elapsed().as_secs_f64();
    let t = Instant::now();
    let mut s64 = reference::State::<f64>::new(&m, constants_f64());
    let mut rms64 = 0.0;
    for _ in 0..iterations {
        rms64 = s64.iteration(&m);
    }
    let cpu64 = t.elapsed().as_secs_f64();

    let mut rows = Vec::new();
    for variant in strategies {
        let ctx = Context::with_config(Config {
            strategy: variant.strategy,
            staging: variant.staging,
            profile: true,
            ..Config::from_env().unwrap()
        })
        .expect("an adapter");
        let a = Airfoil::new(&ctx, &m).unwrap();
        ctx.flush().unwrap();
        let t = Instant::now();
        let mut rms = 0.0;
        for it in 1..=iterations {
            if it == iterations {
                let g = ctx.global("rms", &[0.0f32]).unwrap();
                a.iteration(Some(&g)).unwrap();
                rms = (g.value().unwrap()[0] as f64 / nc).sqrt();
            } else {
                a.iteration(None).unwrap();
            }
        }
        let _ = a.q.data_ro().unwrap();
        let secs = t.elapsed().as_secs_f64();
        rows.push((variant, secs, rms, ctx.stats()));
    }
    common::header(
        &format!(
            "Airfoil, standard mesh (720,000 cells, 1,438,600 edges), {iterations} iterations"
        ),
        &adapter,
        "cargo bench --bench airfoil",
    );
    println!(
        "| implementation | total time | ms/iteration | final rms | GPU time / CPU f32 time |"
    );
    println!("|---|---:|---:|---:|---:|");
    println!(
        "| plain Rust, sequential, f64 | {cpu64:.1} s | {:.1} | {rms64:.5e} | |",
        cpu64 * 1e3 / iterations as f64
    );
    println!(
        "| plain Rust, sequential, f32 | {cpu32:.1} s | {:.1} | {rms32:.5e} | 1.00 |",
        cpu32 * 1e3 / iterations as f64
    );
    for (variant, secs, rms, _) in &rows {
        println!(
            "| parloop, {} (fused, lazy) | {secs:.1} s | {:.1} | {rms:.5e} | {:.2} |",
            variant.label(),
            secs * 1e3 / iterations as f64,
            secs / cpu32
        );
    }
    for (variant, _, _, st) in &rows {
        println!(
            "\nGPU time per group, strategy {} (timestamps):\n",
            variant.label()
        );
        println!("| group | calls | ms/call | GB/s (model) |");
        println!("|---|---:|---:|---:|");
        for (label, t) in &st.kernel_times {
            let bytes: f64 = label
                .split('+')
                .map(|k| {
                    let k = if k == "update_rms" { "update" } else { k };
                    model.iter().find(|(n, _)| *n == k).map_or(0.0, |(_, b)| *b)
                })
                .sum();
            let per = t.ns as f64 / t.calls as f64;
            println!(
                "| {label} | {} | {:.2} | {:.2} |",
                t.calls,
                per / 1e6,
                bytes / per
            );
        }
    }
}
