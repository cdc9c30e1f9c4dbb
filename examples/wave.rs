//! The explicit wave equation of seed 001 on the unit square, with ParaView output.
//!
//! `cargo run --release --example wave` runs 2,000 steps on the 100 x 100 mesh and writes a few
//! frames to out/wave/; `--t-end 10` runs the seed's full 10,001 steps. `--mesh FILE.msh` runs
//! on a Gmsh mesh: triangles in 2-D, or tetrahedra in 3-D.
//!
//! On N ranks (built with `--features mpi`): `mpirun -np N target/release/examples/wave`. The
//! cells are partitioned with METIS; every rank writes its piece of each frame (wave.pvd lists
//! the frames' .pvtu files; nothing is gathered). Every rank reports its part and its halo
//! exchanges.
//!
//! A mesh no rank holds whole (built with `--features hdf5,ptscotch`): `parloop convert
//! mesh.msh mesh.h5`, then `mpirun -np N wave --h5 mesh.h5 --checkpoint ck.h5`: every rank
//! reads its blocks, PT-Scotch partitions in parallel; `--h5 ck.h5` restarts on any number of
//! ranks.

use clap::{Parser, ValueEnum};
use indicatif::{ProgressBar, ProgressStyle};
use parloop::apps::wave::{Wave, reference};
use parloop::mesh::{
    CellType, Mesh,
    pvtu::{PartField, PartSeries},
    unit_cube_tets, unit_square,
};
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
    /// Directory for the ParaView frames (wave.pvd: p and phi, a piece per rank).
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
    /// Racing-increment strategy: auto, hierarchical, global-colour, atomics, cas, staged.
    /// (default: PARLOOP_STRATEGY, else auto).
    #[arg(long, value_parser = parse_strategy)]
    strategy: Option<parloop::Strategy>,
    /// Run the plain-Rust CPU reference (f64, one core) instead of the GPU.
    #[arg(long)]
    reference: bool,
    /// Run exactly this many steps (overrides --t-end).
    #[arg(long)]
    steps: Option<u64>,
    /// Print `checksum: <sum of |p|>` at the end (what the browser test compares).
    #[arg(long)]
    checksum: bool,
    /// Run on this Gmsh mesh (.msh 4.1 or 2.2) of triangles, or of tetrahedra (the 3-D wave),
    /// instead of the unit square.
    #[arg(long)]
    mesh: Option<PathBuf>,
    /// Run the 3-D wave on the unit cube of 6 c^3 tetrahedra instead of the unit square.
    #[arg(long)]
    cube: Option<usize>,
    /// Run on this parloop mesh file or checkpoint (HDF5; `parloop convert` writes one from a
    /// Gmsh mesh): every rank reads only its blocks, PT-Scotch partitions the cells in parallel
    /// (with the `ptscotch` feature; else blocks), and no rank ever holds the whole mesh.
    #[cfg(feature = "hdf5")]
    #[arg(long)]
    h5: Option<PathBuf>,
    /// Write a checkpoint (HDF5) after the last step, which --h5 restarts from on any
    /// number of ranks.
    #[cfg(feature = "hdf5")]
    #[arg(long)]
    checkpoint: Option<PathBuf>,
    /// Print the per-loop-group time table at the end, every rank's and combined
    /// (PARLOOP_PROFILE=table prints each rank's).
    #[arg(long)]
    profile: bool,
}

/// The wave on the --h5 file: every rank reads its blocks; the run continues from a
/// checkpoint's step.
#[cfg(feature = "hdf5")]
fn from_file(a: &Args, ctx: &Context) -> Result<(Wave, String)> {
    let path = a.h5.as_ref().expect("called with --h5");
    let file = parloop::h5::MeshFile::read(ctx, path)?;
    let step = file.step();
    let cells = file.mesh.find_set("cells").ok_or_else(|| {
        parloop::Error::Usage(format!("{}: no set named `cells`", path.display()))
    })?;
    let partitioner = if cfg!(feature = "ptscotch") {
        parloop::dist::Partitioner::Scotch
    } else {
        parloop::dist::Partitioner::Block
    };
    let mut part = file.mesh.distribute(cells, partitioner)?;
    let mut w = Wave::from_part(ctx, &mut part, a.dt as f32)?;
    w.steps = step.unwrap_or(0);
    let from = match step {
        Some(s) => format!(" (a checkpoint at step {s})"),
        None => String::new(),
    };
    Ok((w, format!("{}{from}", path.display())))
}

#[cfg(not(feature = "hdf5"))]
fn from_file(_: &Args, _: &Context) -> Result<(Wave, String)> {
    unreachable!("--h5 needs the hdf5 feature")
}

/// The mesh the run uses: the --mesh file (triangles or tetrahedra), or the n x n unit square;
/// and its description.
fn mesh(a: &Args) -> Result<(Mesh, String)> {
    match &a.mesh {
        Some(path) => {
            let m = parloop::mesh::gmsh::read_file(path)
                .map_err(|e| parloop::Error::Usage(format!("--mesh: {e}")))?;
            if !matches!(m.cell_type, CellType::Triangle | CellType::Tetrahedron) {
                return Err(parloop::Error::Usage(format!(
                    "--mesh: {} has {}: the wave runs on triangles (2-D) or tetrahedra (3-D)",
                    path.display(),
                    cells_called(m.cell_type)
                )));
            }
            Ok((m, path.display().to_string()))
        }
        None => match a.cube {
            Some(0) => Err(parloop::Error::Usage(
                "--cube 0: give at least 1 (cubes per side)".into(),
            )),
            Some(c) => Ok((unit_cube_tets(c), format!("{c} x {c} x {c} unit cube"))),
            None => Ok((unit_square(a.n), format!("{} x {} unit square", a.n, a.n))),
        },
    }
}

/// What the cells are called in the report.
fn cells_called(t: CellType) -> &'static str {
    match t {
        CellType::Triangle => "triangles",
        CellType::Quadrilateral => "quadrilaterals",
        CellType::Tetrahedron => "tetrahedra",
        CellType::Hexahedron => "hexahedra",
    }
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
    #[cfg(feature = "hdf5")]
    if a.h5.is_some() {
        return run_on(&a, steps, None, String::new());
    }
    let (mesh, described) = mesh(&a)?;
    run_on(&a, steps, Some(mesh), described)
}

/// The run on `mesh` (the unit square or --mesh), or on the --h5 file when `mesh` is None.
fn run_on(a: &Args, steps: u64, mesh: Option<Mesh>, described: String) -> Result<()> {
    if let (true, Some(mesh)) = (a.reference, &mesh) {
        let s = reference::State::new(mesh)?;
        return reference_run(a, s, steps, mesh, &described);
    }
    // Defaults from the PARLOOP_* variables; flags override them.
    let mut env = Config::from_env()?;
    env.strategy = a.strategy.unwrap_or(env.strategy);
    env.lazy = a.mode.map_or(env.lazy, |m| m == Mode::Lazy);
    env.fusion &= !a.no_fusion;
    let env = Config {
        profile_table: env.profile_table || a.profile,
        ..env
    };
    let (lazy, fusion) = (env.lazy, env.fusion);
    let ctx = Context::with_config(env)?;
    let root = ctx.rank() == 0;
    let (mut w, described) = match mesh {
        Some(mesh) => (Wave::on_mesh(&ctx, mesh, a.dt as f32)?, described),
        None => from_file(a, &ctx)?,
    };
    let e0 = w.energy()?;
    // Every rank writes its piece of each frame (nothing is gathered); rank 0 the .pvtu and
    // the series, wave.pvd.
    // A restart continues the series in the output directory from the checkpoint's time.
    let mut series = (a.every > 0)
        .then(|| match w.steps {
            0 => PartSeries::new(&ctx, &a.output, "wave"),
            s => PartSeries::resume(&ctx, &a.output, "wave", s as f64 * a.dt),
        })
        .transpose()?;
    let cell_type = w.mesh.cell_type;
    let mut frame = |w: &Wave, step: u64| -> Result<()> {
        let Some(series) = series.as_mut() else {
            return Ok(());
        };
        let t = step as f64 * a.dt;
        let fields = [PartField::vertices(&w.p)?, PartField::vertices(&w.phi)?];
        series.write(t, &w.c2v, cell_type, &w.coords, &fields)
    };
    frame(&w, w.steps)?;
    let bar = ProgressBar::new(if root { steps } else { 0 }).with_style(
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
        if a.every > 0 && w.steps % a.every == 0 {
            frame(&w, w.steps)?;
        }
    }
    ctx.flush()?;
    let _ = w.p.data_ro()?;
    let wall = start.elapsed().as_secs_f64();
    bar.finish_and_clear();
    let after = ctx.stats();
    let e1 = w.energy()?;
    let per_step = |x: u64| x as f64 / steps as f64;
    if ctx.ranks() > 1 {
        let v = w.vertices.sections();
        eprintln!(
            "rank {} of {}: vertices {} owned + {} halo, cells {} owned + {} exec halo; per \
             step: {}",
            ctx.rank(),
            ctx.ranks(),
            v.core + v.owned,
            v.exec_halo + v.nonexec_halo,
            w.cells.size(),
            w.cells.sections().exec_halo,
            after.halo_report(&before, steps as f64, wall)
        );
    }
    #[cfg(feature = "hdf5")]
    if let Some(path) = &a.checkpoint {
        w.checkpoint()?.write(path)?;
    }
    // Gathered only when asked for (a mesh no rank holds whole is never gathered).
    let checksum = if a.checksum { w.p.gather()? } else { None };
    let table = if a.profile {
        Some(ctx.profile_table()?)
    } else {
        None
    };
    if !root {
        return Ok(());
    }
    if let Some(t) = table {
        print!("{t}");
    }
    println!("adapter:        {}", ctx.adapter());
    println!(
        "mesh:           {described}, {} vertices, {} {}",
        w.vertices.global_size(),
        w.cells.global_size(),
        cells_called(w.mesh.cell_type)
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
    if let (true, Some(p)) = (a.checksum, checksum) {
        let sum: f64 = p.iter().map(|v| v.abs() as f64).sum();
        println!("checksum: {sum}");
    }
    if a.every > 0 {
        println!(
            "frames:         {}/wave.pvd (p and phi; open in ParaView)",
            a.output.display()
        );
    }
    Ok(())
}

fn reference_run(
    a: &Args,
    mut s: reference::State,
    steps: u64,
    mesh: &Mesh,
    described: &str,
) -> Result<()> {
    let e0 = s.energy();
    let start = Instant::now();
    for _ in 0..steps {
        s.step(a.dt);
    }
    let wall = start.elapsed().as_secs_f64();
    let e1 = s.energy();
    println!("adapter:        CPU reference (plain Rust, f64, one core)");
    println!(
        "mesh:           {described}, {} vertices, {} {}",
        mesh.nvertices(),
        mesh.ncells(),
        cells_called(mesh.cell_type)
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

/// `--strategy`'s values: the names `PARLOOP_STRATEGY` takes.
fn parse_strategy(s: &str) -> std::result::Result<parloop::Strategy, String> {
    parloop::Strategy::parse(s).ok_or_else(|| format!("use {}", parloop::Strategy::names()))
}
