//! Airfoil, OP2's standard benchmark, on parloop: 1000 iterations on the 720,000-cell NACA0012
//! mesh, printing ` iteration  rms` every 100 iterations as OP2 does, then the timings.
//!
//! `cargo run --release --example airfoil -- --size 400,600` (the default), or `--mesh new_grid.dat`
//! for OP2's own file; `--precision f64` runs OP2's default double precision (on an adapter with
//! f64); `--reference f32|f64` runs the plain-Rust sequential version instead.
//!
//! On N ranks (built with `--features mpi`): `mpirun -np N target/release/examples/airfoil`; the
//! cells are partitioned with METIS (`--partition block` for blocks), rank 0 prints the
//! history and timings, and every rank reports its part and its halo exchanges.

use clap::{Parser, ValueEnum};
use parloop::apps::airfoil::{self, Airfoil, constants_f32, constants_f64, reference};
use parloop::mesh::MeshError;
use parloop::mesh::airfoil::{AirfoilMesh, naca0012};
use parloop::{Config, Context, Result};
use std::path::PathBuf;
use std::time::Instant;

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Mode {
    Lazy,
    Eager,
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Precision {
    F32,
    F64,
}

#[derive(Parser)]
#[command(about = "Airfoil (OP2's benchmark) on parloop")]
struct Args {
    /// OP2's ASCII mesh file (new_grid.dat).
    #[arg(long, conflicts_with = "size")]
    mesh: Option<PathBuf>,
    /// Generate the NACA0012 C-grid with parameters I,J (coordinates rounded to 6 decimals,
    /// as OP2's file has them).
    #[arg(long, default_value = "400,600", value_parser = parse_size)]
    size: (usize, usize),
    #[arg(long, default_value_t = 1000)]
    iterations: u32,
    /// Racing-increment strategy: auto, hierarchical, global-colour, atomics, cas, staged.
    /// (default: PARLOOP_STRATEGY, else auto).
    #[arg(long, value_parser = parse_strategy)]
    strategy: Option<parloop::Strategy>,
    /// Lazy or eager (default: PARLOOP_LAZY, else lazy).
    #[arg(long, value_enum)]
    mode: Option<Mode>,
    #[arg(long)]
    no_fusion: bool,
    /// Do not time groups with GPU timestamps (one compute pass per force instead of per group).
    #[arg(long)]
    no_profile: bool,
    /// Print parloop's per-loop-group time table at the end, every rank's and combined
    /// (beside the table of Airfoil's kernels this example prints).
    #[arg(long, conflicts_with = "no_profile")]
    profile: bool,
    /// Write the mesh as new_grid.dat to this file.
    #[arg(long)]
    write_mesh: Option<PathBuf>,
    /// Run the plain-Rust sequential implementation instead of the GPU.
    #[arg(long, value_enum)]
    reference: Option<Precision>,
    /// Floating-point precision on the GPU (f64 is OP2's default; it needs an adapter with
    /// SHADER_F64).
    #[arg(long, value_enum, default_value = "f32")]
    precision: Precision,
    /// How cells are given to ranks on a distributed run: kway (METIS) or block.
    #[arg(long, default_value = "kway")]
    partition: String,
}

fn parse_size(s: &str) -> std::result::Result<(usize, usize), String> {
    let (a, b) = s.split_once(',').ok_or("expected I,J (e.g. 400,600)")?;
    let p = |v: &str| v.trim().parse::<usize>().map_err(|e| format!("{v:?}: {e}"));
    let (i, j) = (p(a)?, p(b)?);
    if i == 0 || j < 2 {
        return Err("I must be at least 1 and J at least 2".into());
    }
    Ok((i, j))
}

/// C's `%10.5e`: a two-digit signed exponent.
fn c_exp(v: f64) -> String {
    let s = format!("{v:.5e}");
    match s.split_once('e') {
        Some((m, e)) => {
            let e: i32 = e.parse().unwrap_or(0);
            format!("{m}e{}{:02}", if e < 0 { '-' } else { '+' }, e.abs())
        }
        None => s,
    }
}

fn main() {
    if let Err(e) = run(Args::parse()) {
        eprintln!("airfoil: {e}");
        std::process::exit(1);
    }
}

fn load(a: &Args) -> Result<AirfoilMesh> {
    let m = match &a.mesh {
        Some(path) => {
            let text = std::fs::read_to_string(path).map_err(|e| {
                MeshError::new(format!("cannot read {}: {e}", path.display())).in_file(path)
            })?;
            AirfoilMesh::from_grid_dat(&text)
                .map_err(|e| MeshError::new(format!("{}: {e}", path.display())).in_file(path))?
        }
        None => {
            let mut m = naca0012(a.size.0, a.size.1);
            m.round6();
            m
        }
    };
    m.check()?;
    if let Some(out) = &a.write_mesh {
        std::fs::write(out, m.to_grid_dat()).map_err(|e| parloop::Error::File {
            path: out.clone(),
            message: format!("cannot write {}: {e}", out.display()),
        })?;
    }
    Ok(m)
}

fn run(a: Args) -> Result<()> {
    let comm = parloop::dist::Comm::from_launcher()?;
    let root = comm.rank() == 0;
    // Rank 0 speaks for all.
    macro_rules! say { ($($t:tt)*) => { if root { println!($($t)*); } } }
    let t0 = Instant::now();
    let m = load(&a)?;
    let (nn, nc, ne, nb) = m.counts();
    say!(
        "mesh: {nn} nodes, {nc} cells, {ne} edges, {nb} boundary edges ({:.2} s)",
        t0.elapsed().as_secs_f64()
    );
    if let Some(p) = a.reference {
        return run_reference(&a, &m, p);
    }
    // Defaults from the PARLOOP_* variables; flags override them.
    let mut env = Config::from_env()?;
    env.strategy = a.strategy.unwrap_or(env.strategy);
    env.lazy = a.mode.map_or(env.lazy, |m| m == Mode::Lazy);
    env.fusion &= !a.no_fusion;
    let (lazy, fusion, strategy) = (env.lazy, env.fusion, env.strategy);
    let ctx = Context::with_comm(
        Config {
            profile: !a.no_profile,
            profile_table: env.profile_table || a.profile,
            ..env
        },
        &comm,
    )?;
    let run = Run {
        lazy,
        fusion,
        strategy,
    };
    match a.precision {
        Precision::F32 => run_gpu::<f32>(&a, &m, &ctx, &comm, run),
        Precision::F64 => run_gpu::<f64>(&a, &m, &ctx, &comm, run),
    }
}

/// What the run was asked for (reported at the end).
struct Run {
    lazy: bool,
    fusion: bool,
    strategy: parloop::Strategy,
}

fn run_gpu<R: airfoil::Precision>(
    a: &Args,
    m: &AirfoilMesh,
    ctx: &Context,
    comm: &parloop::dist::Comm,
    Run {
        lazy,
        fusion,
        strategy,
    }: Run,
) -> Result<()> {
    let root = comm.rank() == 0;
    macro_rules! say { ($($t:tt)*) => { if root { println!($($t)*); } } }
    let nc = m.cells.len();
    let solver = if comm.size() > 1 {
        let partitioner = match a.partition.as_str() {
            "kway" => parloop::dist::Partitioner::KWay,
            "block" => parloop::dist::Partitioner::Block,
            p => {
                return Err(parloop::Error::Usage(format!(
                    "--partition {p}: use kway or block"
                )));
            }
        };
        Airfoil::<R>::build_distributed(ctx, m, partitioner)?
    } else {
        Airfoil::<R>::build(ctx, m)?
    };
    if let Some((cut, ms)) = solver.partition {
        say!(
            "distributed over {} ranks ({}): {cut} cell adjacencies cut, {ms:.0} ms",
            comm.size(),
            a.partition
        );
    }
    ctx.flush()?;
    let before = ctx.stats();
    let start = Instant::now();
    let mut first_bytes = 0;
    let mut first = 0.0;
    for it in 1..=a.iterations {
        if it % 100 == 0 {
            let rms = ctx.global("rms", &[R::of(0.0)])?;
            solver.iteration(Some(&rms))?;
            let v = (rms.value()?[0].to_f64() / nc as f64).sqrt();
            say!(" {it}  {} ", c_exp(v));
        } else {
            solver.iteration(None)?;
        }
        if it == 1 {
            // The first iteration compiles the shaders: timed apart. Device memory after it,
            // to compare with the end (temporaries reuse pooled buffers).
            ctx.flush()?;
            first = start.elapsed().as_secs_f64();
            first_bytes = ctx.stats().device_bytes;
        }
    }
    ctx.flush()?;
    // Before the final readback (its staging buffer would count too).
    let last_bytes = ctx.stats().device_bytes;
    let _ = solver.q.data_ro()?;
    let wall = start.elapsed().as_secs_f64();
    let st = ctx.stats();
    if comm.size() > 1 {
        let c = solver.cells.sections();
        let e = solver.edges.sections();
        eprintln!(
            "rank {} of {}: cells {} owned + {} exec halo + {} non-exec halo, edges {} owned + \
             {} exec halo; device memory {:.1} MB after the first iteration, {:.1} MB after the \
             last; per iteration: {}",
            comm.rank(),
            comm.size(),
            c.core + c.owned,
            c.exec_halo,
            c.nonexec_halo,
            e.core + e.owned,
            e.exec_halo,
            first_bytes as f64 / 1e6,
            last_bytes as f64 / 1e6,
            st.halo_report(&before, a.iterations as f64, wall)
        );
    }
    let table = if a.profile {
        Some(ctx.profile_table()?)
    } else {
        None
    };
    if !root {
        return Ok(());
    }
    if let Some(t) = table {
        println!();
        print!("{t}");
    }
    println!("\nadapter: {}", ctx.adapter());
    println!(
        "{}, strategy {}, {} mode, fusion {}: {} iterations in {wall:.2} s ({:.2} ms per \
         iteration; the first {:.1} ms, the others {:.3} ms each), {:.1} dispatches and {:.3} \
         submissions per iteration",
        R::DTYPE,
        strategy.name(),
        if lazy { "lazy" } else { "eager" },
        if fusion { "on" } else { "off" },
        a.iterations,
        wall * 1e3 / a.iterations as f64,
        first * 1e3,
        (wall - first) * 1e3 / (a.iterations.max(2) - 1) as f64,
        st.dispatches as f64 / a.iterations as f64,
        st.submissions as f64 / a.iterations as f64
    );
    if st.kernel_times.is_empty() {
        println!(
            "(no per-kernel GPU times: the adapter has no timestamp queries, or --no-profile)"
        );
        return Ok(());
    }
    let model = airfoil::bytes_per_call_in(m, R::DTYPE.bytes());
    let bytes = |label: &str| -> f64 {
        label
            .split('+')
            .map(|k| {
                let k = if k == "update_rms" { "update" } else { k };
                model.iter().find(|(n, _)| *n == k).map_or(0.0, |(_, b)| *b)
            })
            .sum()
    };
    println!(
        "\n{:<34} {:>7} {:>11} {:>11} {:>9}",
        "group (GPU timestamps)", "calls", "total ms", "ms/call", "GB/s"
    );
    let mut total_ns = 0u64;
    for (label, t) in &st.kernel_times {
        total_ns += t.ns;
        let per = t.ns as f64 / t.calls as f64;
        println!(
            "{label:<34} {:>7} {:>11.1} {:>11.3} {:>9.2}",
            t.calls,
            t.ns as f64 / 1e6,
            per / 1e6,
            bytes(label) / per
        );
    }
    println!(
        "{:<34} {:>7} {:>11.1}",
        "all groups",
        "",
        total_ns as f64 / 1e6
    );
    Ok(())
}

fn run_reference(a: &Args, m: &AirfoilMesh, p: Precision) -> Result<()> {
    let start = Instant::now();
    macro_rules! go {
        ($state:expr) => {{
            let mut s = $state;
            for it in 1..=a.iterations {
                let rms = s.iteration(m);
                if it % 100 == 0 {
                    println!(" {it}  {} ", c_exp(rms));
                }
            }
        }};
    }
    match p {
        Precision::F32 => go!(reference::State::<f32>::new(m, constants_f32())),
        Precision::F64 => go!(reference::State::<f64>::new(m, constants_f64())),
    }
    let wall = start.elapsed().as_secs_f64();
    println!(
        "\nplain Rust, sequential, {}: {} iterations in {wall:.2} s ({:.2} ms per iteration)",
        if p == Precision::F32 { "f32" } else { "f64" },
        a.iterations,
        wall * 1e3 / a.iterations as f64
    );
    Ok(())
}

/// `--strategy`'s values: the names `PARLOOP_STRATEGY` takes.
fn parse_strategy(s: &str) -> std::result::Result<parloop::Strategy, String> {
    parloop::Strategy::parse(s).ok_or_else(|| format!("use {}", parloop::Strategy::names()))
}
