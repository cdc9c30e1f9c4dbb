//! The wave demo's speed: steps per second on the 100 x 100 mesh in eager mode, lazy without
//! fusion and lazy with fusion at several steps per force, against the plain-Rust CPU reference
//! on one core. Writes docs/wave-steps-per-second.png.
//!
//! `cargo bench --bench wave`

#[path = "common.rs"]
mod common;

use parloop::apps::wave::{Wave, reference};
use parloop::mesh::unit_square;
use parloop::{Config, Context};
use plotters::prelude::*;
use std::time::Instant;

const N: usize = 100;
const STEPS: usize = 1000;

struct Row {
    mode: String,
    steps_per_s: f64,
    dispatches: f64,
    submissions: f64,
}

fn gpu(mode: &str, lazy: bool, fusion: bool, per_force: usize) -> (String, Row) {
    let ctx = Context::with_config(Config {
        lazy,
        fusion,
        ..Config::from_env().unwrap()
    })
    .expect("an adapter");
    let mut w = Wave::new(&ctx, N, 0.001).unwrap();
    let mut run = |steps: usize| {
        for s in 1..=steps {
            w.step().unwrap();
            if s % per_force == 0 {
                ctx.flush().unwrap();
            }
        }
        ctx.flush().unwrap();
        let _ = w.p.data_ro().unwrap();
    };
    run(per_force.max(20)); // warm-up
    let before = ctx.stats();
    let t = Instant::now();
    run(STEPS);
    let secs = t.elapsed().as_secs_f64();
    let after = ctx.stats();
    (
        ctx.adapter(),
        Row {
            mode: mode.to_string(),
            steps_per_s: STEPS as f64 / secs,
            dispatches: (after.dispatches - before.dispatches) as f64 / STEPS as f64,
            submissions: (after.submissions - before.submissions) as f64 / STEPS as f64,
        },
    )
}

fn main() {
    let mut rows = Vec::new();
    let mut adapter = String::new();
    let cases: [(&str, bool, bool, usize); 7] = [
        ("eager", false, false, 1),
        ("lazy, no fusion, 1 step/force", true, false, 1),
        ("lazy, no fusion, 10 steps/force", true, false, 10),
        ("lazy, no fusion, 100 steps/force", true, false, 100),
        ("lazy, fused, 1 step/force", true, true, 1),
        ("lazy, fused, 10 steps/force", true, true, 10),
        ("lazy, fused, 100 steps/force", true, true, 100),
    ];
    for (mode, lazy, fusion, k) in cases {
        let (a, row) = gpu(mode, lazy, fusion, k);
        adapter = a;
        rows.push(row);
    }
    let mesh = unit_square(N);
    let mut r = reference::State::new(&mesh).expect("triangles");
    let t = Instant::now();
    for _ in 0..STEPS {
        r.step(0.001);
    }
    let cpu = STEPS as f64 / t.elapsed().as_secs_f64();
    common::header(
        &format!(
            "Wave demo, {N} x {N} mesh ({} vertices, {} triangles), {STEPS} steps timed after warm-up",
            mesh.nvertices(),
            mesh.ncells()
        ),
        &adapter,
        "cargo bench --bench wave",
    );
    println!("| mode | steps/s | dispatches/step | submissions/step | vs eager |");
    println!("|---|---:|---:|---:|---:|");
    let eager = rows[0].steps_per_s;
    for r in &rows {
        println!(
            "| {} | {:.0} | {:.2} | {:.3} | {:.2}x |",
            r.mode,
            r.steps_per_s,
            r.dispatches,
            r.submissions,
            r.steps_per_s / eager
        );
    }
    println!(
        "| CPU reference (plain Rust, f64, one core) | {cpu:.0} | - | - | {:.2}x |",
        cpu / eager
    );
    rows.push(Row {
        mode: "CPU reference (f64, 1 core)".into(),
        steps_per_s: cpu,
        dispatches: 0.0,
        submissions: 0.0,
    });
    let out = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/docs/wave-steps-per-second.png"
    );
    match plot(out, &rows, &adapter) {
        Ok(()) => println!("\nplot: docs/wave-steps-per-second.png"),
        Err(e) => println!("\n(no plot: {e})"),
    }
}

fn plot(path: &str, rows: &[Row], adapter: &str) -> Result<(), Box<dyn std::error::Error>> {
    let font = std::fs::read("/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf")?;
    plotters::style::register_font(
        "sans-serif",
        FontStyle::Normal,
        Box::leak(font.into_boxed_slice()),
    )
    .map_err(|_| "cannot register the font")?;
    // GPU modes on a linear axis; the CPU reference, an order of magnitude off, in the caption.
    let (cpu, gpu): (Vec<&Row>, Vec<&Row>) = rows.iter().partition(|r| r.mode.starts_with("CPU"));
    let top = gpu.iter().map(|r| r.steps_per_s).fold(1.0, f64::max) * 1.25;
    let root = BitMapBackend::new(path, (1000, 520)).into_drawing_area();
    root.fill(&WHITE)?;
    let (head, body) = root.split_vertically(70);
    head.draw(&Text::new(
        format!("Wave demo, 100 x 100 mesh: steps per second on {adapter}"),
        (20, 12),
        ("sans-serif", 20),
    ))?;
    if let Some(c) = cpu.first() {
        head.draw(&Text::new(
            format!(
                "(the plain-Rust CPU reference on one core: {:.0} steps/s, off this scale)",
                c.steps_per_s
            ),
            (20, 42),
            ("sans-serif", 15),
        ))?;
    }
    let n = gpu.len();
    let mut chart = ChartBuilder::on(&body)
        .margin(15)
        .x_label_area_size(40)
        .y_label_area_size(250)
        .build_cartesian_2d(0.0..top, (0..n - 1).into_segmented())?;
    chart
        .configure_mesh()
        .disable_y_mesh()
        .y_labels(n)
        .y_label_formatter(&|v| match v {
            SegmentValue::CenterOf(i) => gpu
                .get(n - 1 - *i)
                .map_or(String::new(), |r| r.mode.clone()),
            _ => String::new(),
        })
        .x_desc("steps per second")
        .label_style(("sans-serif", 14))
        .draw()?;
    for (i, r) in gpu.iter().enumerate() {
        let y = n - 1 - i;
        chart.draw_series(std::iter::once(Rectangle::new(
            [
                (0.0, SegmentValue::Exact(y)),
                (r.steps_per_s, SegmentValue::Exact(y + 1)),
            ],
            RGBColor(40, 100, 180).filled(),
        )))?;
        chart.draw_series(std::iter::once(Text::new(
            format!(" {:.0}", r.steps_per_s),
            (r.steps_per_s, SegmentValue::CenterOf(y)),
            ("sans-serif", 14),
        )))?;
    }
    root.present()?;
    Ok(())
}
