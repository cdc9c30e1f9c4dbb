//! The explicit wave equation of seed 001 on the unit square, with ParaView output.
//!
//! `cargo run --release --example wave` runs 2,000 steps on the 100 x 100 mesh and writes a few
//! frames to out/wave/; `--t-end 10` runs the seed's full 10,001 steps.

use clap::{Parser, ValueEnum};
use indicatif::{ProgressBar, ProgressStyle};
use parloop::apps::wave::{Wave, reference};
use parloop::mesh::{unit_square, vtk::Series};
use parloop::{Config, Context, Result};
use std::path::PathBuf;
use std::time::Instant;

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Mode {
    Lazy,
    Eager,
}

#[derive(Parser)]
#[command(about = "Explicit wave equation (seed 001) on parloop")]
struct Args {
    /// Squares per side of the unit-square mesh (2 n^2 triangles).
    #[arg(long, default_value_t = 100)]
    n: usize,
    #[arg(long, default_value_t = 0.001)]
    dt: f64,
    /// Simulated time; the loop runs while t <= t_end, as the seed's does.
    #[arg(long, default_value_t = 2.0)]
    t_end: f64,
    /// Directory for the ParaView frames (p.pvd, phi.pvd).
    #[arg(long, default_value = "out/wave")]
    output: PathBuf,
    /// Write a frame every this many steps (0: none).
    #[arg(long, default_value_t = 500)]
    every: u64,
    /// Lazy or eager (default: PARLOOP_LAZY, else lazy).
    #[arg(long, value_enum)]
    mode: Option<Mode>,
    /// One shader per par_loop instead of fused loop groups.
    #[arg(long)]
    no_fusion: bool,
    /// Steps recorded before each force (one submission each).
    #[arg(long, default_value_t = 10)]
    steps_per_force: u64,
    /// Racing-increment strategy: auto, hierarchical, global-colour, atomics, cas.
    /// (default: PARLOOP_STRATEGY, else auto).
    #[arg(long)]
    strategy: Option<String>,
    /// Run the plain-Rust CPU reference (f64, one core) instead of the GPU.
    #[arg(long)]
    reference: bool,
    /// Run exactly this many steps (overrides --t-end).
    #[arg(long)]
    steps: Option<u64>,
    /// Print `checksum: <sum of |p|>` at the end (what the browser test compares).
    #[arg(long)]
    checksum: bool,
}

fn main() {
    if let Err(e) = run(Args::parse()) {
        eprintln!("wave: {e}");
        std::process::exit(1);
    }
}

fn run(a: Args) -> Result<()> {
    let steps = a
        .steps
        .unwrap_or((a.t_end / a.dt + 1e-9).floor() as u64 + 1);
    if a.reference {
        return run_reference(&a, steps);
    }
    // Defaults from the PARLOOP_* variables; flags override them.
    let env = Config::from_env()?.with_flags(
        a.strategy.as_deref(),
        a.mode.map(|m| m == Mode::Lazy),
        a.no_fusion,
    )?;
    let (lazy, fusion) = (env.lazy, env.fusion);
    let ctx = Context::with_config(env)?;
    let mut w = Wave::new(&ctx, a.n, a.dt as f32)?;
    let e0 = w.energy()?;
    let mut series = (a.every > 0)
        .then(|| -> std::io::Result<_> {
            Ok((Series::new(&a.output, "p")?, Series::new(&a.output, "phi")?))
        })
        .transpose()
        .map_err(|e| {
            parloop::Error::Usage(format!("cannot write to {}: {e}", a.output.display()))
        })?;
    let mut frame = |w: &Wave, step: u64| -> Result<()> {
        if let Some((p_out, phi_out)) = series.as_mut() {
            let t = step as f64 * a.dt;
            let p = w.p.data_ro()?.to_vec();
            let phi = w.phi.data_ro()?.to_vec();
            let io = |e: std::io::Error| parloop::Error::Usage(format!("writing frames: {e}"));
            p_out.write(t, &w.mesh, &[("p", &p)]).map_err(io)?;
            phi_out.write(t, &w.mesh, &[("phi", &phi)]).map_err(io)?;
        }
        Ok(())
    };
    frame(&w, 0)?;
    let bar = ProgressBar::new(steps).with_style(
        ProgressStyle::with_template("{bar:40} {pos}/{len} steps  {per_sec}  eta {eta}")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    let before = ctx.stats();
    let start = Instant::now();
    for s in 1..=steps {
        w.step()?;
        if s % a.steps_per_force.max(1) == 0 || s == steps {
            ctx.flush()?;
            bar.set_position(s);
        }
        if a.every > 0 && s % a.every == 0 {
            frame(&w, s)?;
        }
    }
    ctx.flush()?;
    let _ = w.p.data_ro()?;
    let wall = start.elapsed().as_secs_f64();
    bar.finish_and_clear();
    let after = ctx.stats();
    let e1 = w.energy()?;
    let per_step = |x: u64| x as f64 / steps as f64;
    println!("adapter:        {}", ctx.adapter());
    println!(
        "mesh:           {} x {} unit square, {} vertices, {} triangles",
        a.n,
        a.n,
        w.mesh.nvertices(),
        w.mesh.ncells()
    );
    println!(
        "run:            {steps} steps of dt = {}, mode {}, fusion {}, {} steps per force",
        a.dt,
        if lazy { "lazy" } else { "eager" },
        if fusion { "on" } else { "off" },
        a.steps_per_force
    );
    println!(
        "wall time:      {wall:.2} s ({:.1} steps/s)",
        steps as f64 / wall
    );
    println!(
        "per step:       {:.2} dispatches, {:.3} submissions",
        per_step(after.dispatches - before.dispatches),
        per_step(after.submissions - before.submissions)
    );
    println!(
        "energy:         {e0:.6e} -> {e1:.6e} (relative change {:+.3e})",
        (e1 - e0) / e0
    );
    if a.checksum {
        let sum: f64 = w.p.data_ro()?.iter().map(|v| v.abs() as f64).sum();
        println!("checksum: {sum}");
    }
    if a.every > 0 {
        println!(
            "frames:         {}/p.pvd and phi.pvd (open in ParaView)",
            a.output.display()
        );
    }
    Ok(())
}

fn run_reference(a: &Args, steps: u64) -> Result<()> {
    let mesh = unit_square(a.n);
    let mut s = reference::State::new(&mesh);
    let e0 = s.energy();
    let start = Instant::now();
    for _ in 0..steps {
        s.step(a.dt);
    }
    let wall = start.elapsed().as_secs_f64();
    let e1 = s.energy();
    println!("adapter:        CPU reference (plain Rust, f64, one core)");
    println!(
        "mesh:           {} x {} unit square, {} vertices, {} triangles",
        a.n,
        a.n,
        mesh.nvertices(),
        mesh.ncells()
    );
    println!(
        "wall time:      {wall:.2} s ({:.1} steps/s)",
        steps as f64 / wall
    );
    println!(
        "energy:         {e0:.6e} -> {e1:.6e} (relative change {:+.3e})",
        (e1 - e0) / e0
    );
    Ok(())
}
