//! The heat equation u_t = div(grad u) by backward Euler, with P1 elements and a lumped mass
//! matrix: every step solves (M + dt K) u' = M u by CG on the device, preconditioned by
//! Jacobi, or (`--amg`, one process) by algebraic multigrid built once (the matrix is
//! assembled once, by a par_loop). The boundary is insulated (zero normal flux), so the heat
//! sum(M u) stays what it was, and the energy u.M u can only fall: backward Euler is stable
//! at any time step.
//!
//! `cargo run --release --example heat` starts from u = cos(pi x) cos(pi y) + 1 on the unit
//! square (`--n` squares per side); that mode decays as exp(-2 pi^2 t) (backward Euler:
//! (1 + 2 pi^2 dt)^-steps). `--mesh FILE.msh` runs on your own mesh of triangles (from
//! u = 1 + cos(pi x) cos(pi y) all the same). Prints the heat, the energy and the mode's
//! amplitude per step; `--every k` writes u for ParaView (out/heat/heat.pvd).
//!
//! The same program runs on N ranks: `mpirun -np 3 target/release/examples/heat` (built with
//! `--features mpi`) prints the same table; with `--features hdf5`, `--checkpoint ck.h5`
//! writes u with the mesh in global numbering (`h5dump`, h5py or `h5::MeshFile` read it).

use clap::Parser;
use parloop::apps::poisson::assemble_scaled;
use parloop::linalg::{Preconditioner, SolveOptions, cg};
use parloop::mesh::pvtu::{PartField, PartSeries};
use parloop::mesh::topology::MeshData;
use parloop::mesh::{CellType, Mesh, gmsh, unit_square};
use parloop::{Context, Dat, Error, Kernel, Real, Result};
use std::f64::consts::PI;
use std::path::PathBuf;

#[derive(Parser)]
#[command(about = "Heat equation by backward Euler, CG on the device each step (parloop)")]
struct Args {
    /// Print the per-loop-group time table at the end (PARLOOP_PROFILE=table).
    #[arg(long)]
    profile: bool,
    /// Squares per side of the unit square (2 n^2 triangles).
    #[arg(long, default_value_t = 64)]
    n: usize,
    /// A Gmsh mesh (.msh) of triangles instead of the unit square.
    #[arg(long)]
    mesh: Option<PathBuf>,
    /// Time step.
    #[arg(long, default_value_t = 2e-3)]
    dt: f64,
    /// Steps.
    #[arg(long, default_value_t = 50)]
    steps: usize,
    /// f32 or f64.
    #[arg(long, default_value = "f32")]
    precision: String,
    /// Precondition CG by smoothed-aggregation algebraic multigrid (`linalg::Amg`, one
    /// process) instead of Jacobi.
    #[arg(long)]
    amg: bool,
    /// Write u every this many steps (0: never).
    #[arg(long, default_value_t = 0)]
    every: usize,
    /// Directory for the ParaView files.
    #[arg(long, default_value = "out/heat")]
    output: PathBuf,
    /// Write a checkpoint (HDF5: the mesh, u and the step, in global numbering) after the
    /// last step.
    #[cfg(feature = "hdf5")]
    #[arg(long)]
    checkpoint: Option<PathBuf>,
}

/// The initial condition: a constant and the slowest cosine mode of the unit square.
pub fn initial(x: [f64; 3]) -> f64 {
    1.0 + (PI * x[0]).cos() * (PI * x[1]).cos()
}

/// Per step (the initial state first): the heat sum(M u), the energy u.M u, the mode's
/// amplitude (its M-projection), and the CG iterations of the step.
pub struct History {
    pub heat: Vec<f64>,
    pub energy: Vec<f64>,
    pub amplitude: Vec<f64>,
    pub iterations: Vec<usize>,
    pub u: Vec<f64>,
}

/// `steps` backward-Euler steps of length `dt` on `mesh`, in `T`, CG preconditioned by AMG
/// when `amg` (else Jacobi); `write(step, md, u)` is called every `every` steps (0: never) and
/// after the last. The same on one process and on N ranks; `History::u`
/// is the final u in the mesh's numbering on rank 0 (empty on the others).
pub fn run<T: Real>(
    ctx: &Context,
    mesh: &Mesh,
    dt: f64,
    steps: usize,
    amg: bool,
    every: usize,
    write: &mut dyn FnMut(usize, &MeshData, &Dat<T>) -> Result<()>,
) -> Result<History> {
    if mesh.cell_type != CellType::Triangle {
        return Err(Error::Usage(format!(
            "the heat example runs on triangles; this mesh has {} cells",
            mesh.cell_type.name()
        )));
    }
    if !(dt > 0.0 && dt.is_finite()) {
        return Err(Error::Usage(format!(
            "--dt {dt}: give a positive time step"
        )));
    }
    let md = MeshData::new(ctx, mesh)?;
    let x = md.coords_as::<T>(ctx)?;
    let one = ctx.dat_zeros::<T>("one", &md.vertices, 1)?;
    ctx.fill(&one, T::from_f64(1.0))?;
    // A = M + dt K; the load of f = 1 is the lumped mass M's diagonal.
    let (a, m) = assemble_scaled::<T>(ctx, "M + dt K", &md.cell_vertices, &x, &one, [1.0, dt])?;
    let diagonal = a.diagonal(ctx)?;
    let multigrid = amg
        .then(|| parloop::linalg::Amg::new(ctx, &a, &Default::default()))
        .transpose()?;
    let pc: &dyn Preconditioner<T> = match &multigrid {
        Some(m) => m,
        None => &diagonal,
    };
    let mode = md.interpolate::<T>(ctx, "mode", |c| (PI * c[0]).cos() * (PI * c[1]).cos())?;
    let u = md.interpolate::<T>(ctx, "u", initial)?;
    let b = ctx.dat_zeros::<T>("M u", &md.vertices, 1)?;
    let t = T::DTYPE;
    let times = Kernel::new(
        "times",
        format!(
            "fn times(m: ptr<function, array<{t}, 1>>, u: ptr<function, array<{t}, 1>>, \
             b: ptr<function, array<{t}, 1>>) {{ (*b)[0] = (*m)[0] * (*u)[0]; }}"
        ),
    );
    // The mode's M-norm squared, for its amplitude.
    ctx.par_loop(&times, &md.vertices, &[m.read(), mode.read(), b.write()])?;
    let mode_norm = ctx.dot(&b, &mode)?.value()?[0].to_f64();
    let opts = SolveOptions {
        rtol: if t == parloop::DType::F64 {
            1e-10
        } else {
            1e-6
        },
        ..SolveOptions::default()
    };
    let mut h = History {
        heat: Vec::new(),
        energy: Vec::new(),
        amplitude: Vec::new(),
        iterations: Vec::new(),
        u: Vec::new(),
    };
    for step in 0..=steps {
        // b = M u: the right-hand side, and the heat, energy and amplitude of this u.
        ctx.par_loop(&times, &md.vertices, &[m.read(), u.read(), b.write()])?;
        let heat = ctx.dot(&b, &one)?;
        let energy = ctx.dot(&b, &u)?;
        let amplitude = ctx.dot(&b, &mode)?;
        h.heat.push(heat.value()?[0].to_f64());
        h.energy.push(energy.value()?[0].to_f64());
        h.amplitude.push(amplitude.value()?[0].to_f64() / mode_norm);
        if (every > 0 && step % every == 0) || step == steps {
            write(step, &md, &u)?;
        }
        if step == steps {
            break;
        }
        // u is its own initial guess: the previous step's solution.
        let report = cg(ctx, &a, &b, &u, Some(pc), &opts)?;
        h.iterations.push(report.iterations);
    }
    let gathered = u.gather()?.unwrap_or_default();
    h.u = gathered.iter().map(|v| v.to_f64()).collect();
    Ok(h)
}

fn main() {
    if let Err(e) = run_main(Args::parse()) {
        eprintln!("heat: {e}");
        std::process::exit(1);
    }
}

fn run_main(a: Args) -> std::result::Result<(), Box<dyn std::error::Error>> {
    let mesh = match &a.mesh {
        Some(p) => gmsh::read_file(p)?,
        None => unit_square(a.n),
    };
    // --profile adds the table; PARLOOP_PROFILE=table asks for it as well. Under mpirun the
    // Context is one rank of MPI's world, and MeshData gives each rank its part of the mesh.
    let env = parloop::Config::from_env()?;
    let ctx = Context::with_config(parloop::Config {
        profile_table: a.profile || env.profile_table,
        ..env
    })?;
    let root = ctx.rank() == 0; // every rank computes; rank 0 prints
    if root {
        println!(
            "{} triangles, {} vertices, {}, dt {}, {}, {} rank(s); adapter {}",
            mesh.ncells(),
            mesh.nvertices(),
            a.precision,
            a.dt,
            if a.amg { "AMG-CG" } else { "Jacobi-CG" },
            ctx.ranks(),
            ctx.adapter()
        );
    }
    let t0 = std::time::Instant::now();
    let h = match a.precision.as_str() {
        "f32" => run_with_frames::<f32>(&ctx, &a, &mesh)?,
        "f64" => run_with_frames::<f64>(&ctx, &a, &mesh)?,
        p => return Err(format!("--precision {p}: give f32 or f64").into()),
    };
    let secs = t0.elapsed().as_secs_f64();
    if !root {
        return Ok(());
    }
    println!("step | heat | energy | mode amplitude | backward Euler's | CG iterations");
    for s in 0..=a.steps {
        let be = (1.0 + 2.0 * PI * PI * a.dt).powi(-(s as i32));
        let its = if s == 0 { 0 } else { h.iterations[s - 1] };
        println!(
            "{s} | {:.9} | {:.9} | {:.6} | {be:.6} | {its}",
            h.heat[s], h.energy[s], h.amplitude[s]
        );
    }
    let drift = (h.heat[a.steps] - h.heat[0]).abs() / h.heat[0];
    println!(
        "{} steps in {secs:.2} s ({} CG iterations); heat drift {drift:.2e} (relative)",
        a.steps,
        h.iterations.iter().sum::<usize>()
    );
    if a.every > 0 {
        println!("ParaView: {}", a.output.join("heat.pvd").display());
    }
    Ok(())
}

/// [`run`] writing u every `--every` steps in pieces (heat.pvd lists the frames).
fn run_with_frames<T: Real>(ctx: &Context, a: &Args, mesh: &Mesh) -> Result<History> {
    let mut frames = (a.every > 0)
        .then(|| PartSeries::new(ctx, &a.output, "heat"))
        .transpose()?;
    let mut write = |step: usize, md: &MeshData, u: &Dat<T>| -> Result<()> {
        #[cfg(feature = "hdf5")]
        if let (Some(path), true) = (&a.checkpoint, step == a.steps) {
            let mut c = parloop::h5::Checkpoint::new(ctx);
            c.map(&md.cell_vertices)
                .dat(&md.coords)?
                .dat(u)?
                .step(step as u64);
            c.write(path)?;
        }
        let Some(f) = frames
            .as_mut()
            .filter(|_| a.every > 0 && step % a.every == 0)
        else {
            return Ok(());
        };
        let field = [PartField::vertices(u)?];
        f.write(
            step as f64 * a.dt,
            &md.cell_vertices,
            md.cell_type,
            &md.coords,
            &field,
        )
    };
    run::<T>(ctx, mesh, a.dt, a.steps, a.amg, a.every, &mut write)
}
