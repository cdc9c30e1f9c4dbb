//! First-order upwind finite volumes on a Gmsh mesh: a concentration c carried by a uniform
//! velocity u through a channel around a cylinder (`data/channel.msh`, 8,000 triangles), fed
//! by a stripe at the inlet.
//!
//! `cargo run --release --example advection` writes c (cell data) to out/advection/c.pvd for
//! ParaView and reports the mass balance; `--mesh FILE.msh` runs on your own 2-D mesh of
//! triangles or quadrilaterals with a boundary group named by `--inlet` (default `inlet`).
//! The same program runs on N ranks: `mpirun -np 3 target/release/examples/advection` (built
//! with `--features mpi`); each rank steps its part of the mesh and writes its piece of each
//! frame. With `--features hdf5`, `--checkpoint ck.h5` writes c after the last step.
//!
//! The pattern, for a finite-volume code of your own:
//! - `MeshData::new` orients the cells and splits the facets into interior ones (two cells,
//!   `facet_cells`, normal from the first to the second) and boundary ones (`boundary_cell`,
//!   outward normal); `md.group("inlet")` is a Subset of the boundary facets to loop over.
//! - `md.geometry` gives cell areas and facet lengths, normals and centroids as Dats.
//! - An interior facet reads both cells through `c.all(&md.facet_cells)` and increments both
//!   residuals through `r.all(&md.facet_cells).inc()`; a boundary facet uses index 0 of
//!   `md.boundary_cell` (`at(&map, 0)`).
//! - The time step is a Global MIN over the cells; the mass a dot product; the boundary
//!   fluxes a Global INC.

use clap::Parser;
use parloop::mesh::pvtu::{PartField, PartSeries};
use parloop::mesh::topology::MeshData;
use parloop::mesh::{Mesh, gmsh};
use parloop::{ConstValue, Context, Dat, Error, Kernel, Result};
use std::path::PathBuf;

#[derive(Parser)]
#[command(about = "Upwind finite-volume advection on a Gmsh mesh (parloop)")]
struct Args {
    /// Print the per-loop-group time table at the end (PARLOOP_PROFILE=table).
    #[arg(long)]
    profile: bool,
    /// A Gmsh mesh (.msh 4.1 or 2.2) of triangles or quadrilaterals.
    #[arg(long, default_value = concat!(env!("CARGO_MANIFEST_DIR"), "/data/channel.msh"))]
    mesh: PathBuf,
    /// The boundary group where c flows in (a stripe of c = 1 around y = 0.5).
    #[arg(long, default_value = "inlet")]
    inlet: String,
    /// Velocity, x and y.
    #[arg(long, num_args = 2, default_values_t = [1.0f32, 0.0])]
    u: Vec<f32>,
    /// Courant number (at most 1 for this scheme).
    #[arg(long, default_value_t = 0.5)]
    cfl: f32,
    /// Time steps.
    #[arg(long, default_value_t = 600)]
    steps: usize,
    /// Directory for the ParaView frames (c.pvd).
    #[arg(long, default_value = "out/advection")]
    output: PathBuf,
    /// Write a frame every this many steps (0: none).
    #[arg(long, default_value_t = 50)]
    every: usize,
    /// Write a checkpoint (HDF5: the mesh, c and the step, in global numbering) after the
    /// last step.
    #[cfg(feature = "hdf5")]
    #[arg(long)]
    checkpoint: Option<PathBuf>,
}

/// The problem: velocity, Courant number, steps, the inlet group.
pub struct Problem {
    pub u: [f32; 2],
    pub cfl: f32,
    pub steps: usize,
    pub inlet: String,
}

/// What a run gives: c on the cells, the time step, the mass at the start and the end, and
/// the net outflow through the boundary over the run.
pub struct Outcome {
    pub c: Vec<f32>,
    pub dt: f32,
    pub mass: [f64; 2],
    pub outflow: f64,
}

/// All kernels in one WGSL source (each par_loop calls one function of it). `u`, `cfl` and
/// `dt` are Consts.
const KERNELS: &str = "
fn normal_velocity(n: ptr<function, array<f32, 2>>, len: ptr<function, array<f32, 1>>,
                   un: ptr<function, array<f32, 1>>) {
    (*un)[0] = (u[0] * (*n)[0] + u[1] * (*n)[1]) * (*len)[0];
}
fn outflow_interior(un: ptr<function, array<f32, 1>>, out: ptr<function, array<f32, 2>>) {
    (*out)[0] += max((*un)[0], 0.0);
    (*out)[1] += max(-(*un)[0], 0.0);
}
fn outflow_boundary(un: ptr<function, array<f32, 1>>, out: ptr<function, array<f32, 1>>) {
    (*out)[0] += max((*un)[0], 0.0);
}
fn stable_step(area: ptr<function, array<f32, 1>>, out: ptr<function, array<f32, 1>>,
               dt: ptr<function, array<f32, 1>>) {
    if ((*out)[0] > 0.0) { (*dt)[0] = min((*dt)[0], cfl * (*area)[0] / (*out)[0]); }
}
fn inlet_value(x: ptr<function, array<f32, 2>>, c_in: ptr<function, array<f32, 1>>) {
    (*c_in)[0] = select(0.0, 1.0, abs((*x)[1] - 0.5) < 0.2);
}
fn flux_interior(un: ptr<function, array<f32, 1>>, c: ptr<function, array<f32, 2>>,
                 r: ptr<function, array<f32, 2>>) {
    let f = (*un)[0] * select((*c)[1], (*c)[0], (*un)[0] > 0.0);
    (*r)[0] -= f;
    (*r)[1] += f;
}
fn flux_boundary(un: ptr<function, array<f32, 1>>, c_in: ptr<function, array<f32, 1>>,
                 c: ptr<function, array<f32, 1>>, r: ptr<function, array<f32, 1>>,
                 outflow: ptr<function, array<f32, 1>>) {
    let f = (*un)[0] * select((*c_in)[0], (*c)[0], (*un)[0] > 0.0);
    (*r)[0] -= f;
    (*outflow)[0] += f;
}
fn update(area: ptr<function, array<f32, 1>>, r: ptr<function, array<f32, 1>>,
          c: ptr<function, array<f32, 1>>) {
    (*c)[0] += dt * (*r)[0] / (*area)[0];
}
";

/// Runs the problem on `mesh`; `frame(step, time, &md, &c)` is called before the first step
/// and then after each (reading c forces the steps recorded since the last read: read it only
/// when a frame is due). The same on one process and on N ranks; `Outcome::c` is c in the
/// mesh's numbering on rank 0 (empty on the others).
pub fn solve(
    ctx: &Context,
    mesh: &Mesh,
    p: &Problem,
    mut frame: impl FnMut(usize, f64, &MeshData, &Dat<f32>) -> Result<()>,
) -> Result<Outcome> {
    if mesh.dim() != 2 {
        return Err(Error::Usage(format!(
            "the advection example runs on 2-D meshes; this one has {} cells",
            mesh.cell_type.name()
        )));
    }
    if !(p.cfl > 0.0 && p.cfl <= 1.0) {
        return Err(Error::Usage(format!(
            "Courant number {}: the upwind scheme is stable for 0 < cfl <= 1",
            p.cfl
        )));
    }
    let md = MeshData::new(ctx, mesh)?;
    let inlet = md
        .group(&p.inlet)
        .map_err(|e| Error::Usage(format!("{e} (--inlet names the boundary where c flows in)")))?;
    if inlet.set().id() != md.boundary.id() {
        return Err(Error::Usage(format!(
            "--inlet `{}` is a group of {}; give a group of boundary facets",
            p.inlet,
            inlet.set().name()
        )));
    }
    let g = md.geometry(ctx, &md.coords)?;
    let k = |name: &str| Kernel::new(name, KERNELS);
    ctx.constant("u", ConstValue::array(&p.u))?;
    ctx.constant("cfl", p.cfl)?;
    ctx.constant("dt", 0.0f32)?; // set below, once the stable step is known

    // Flux coefficients u . n |f| on every facet, and the stable time step.
    let un = ctx.dat_zeros::<f32>("u.n", &md.facets, 1)?;
    let un_b = ctx.dat_zeros::<f32>("u.n boundary", &md.boundary, 1)?;
    let (n, len) = (&g.facets.normal, &g.facets.measure);
    ctx.par_loop(
        &k("normal_velocity"),
        &md.facets,
        &[n.read(), len.read(), un.write()],
    )?;
    let (n, len) = (&g.boundary.normal, &g.boundary.measure);
    ctx.par_loop(
        &k("normal_velocity"),
        &md.boundary,
        &[n.read(), len.read(), un_b.write()],
    )?;
    let out = ctx.dat_zeros::<f32>("outflow rate", &md.cells, 1)?;
    let fc = &md.facet_cells;
    ctx.par_loop(
        &k("outflow_interior"),
        &md.facets,
        &[un.read(), out.all(fc).inc()],
    )?;
    let bc = &md.boundary_cell;
    ctx.par_loop(
        &k("outflow_boundary"),
        &md.boundary,
        &[un_b.read(), out.at(bc, 0).inc()],
    )?;
    let dt = ctx.global_min::<f32>("dt", 1)?;
    let area = &g.cells.measure;
    ctx.par_loop(
        &k("stable_step"),
        &md.cells,
        &[area.read(), out.read(), dt.min()],
    )?;
    let dt = dt.value()?[0];
    if !dt.is_finite() {
        return Err(Error::Usage(format!(
            "velocity {:?}: nothing flows out of any cell, so there is no stable time step",
            p.u
        )));
    }
    ctx.constant("dt", dt)?;

    // The inflow value on the inlet's facets (0 on every other boundary facet).
    let c_in = ctx.dat_zeros::<f32>("c inflow", &md.boundary, 1)?;
    let x = &g.boundary.centroid;
    ctx.par_loop(&k("inlet_value"), inlet, &[x.read(), c_in.write()])?;

    let c = ctx.dat_zeros::<f32>("c", &md.cells, 1)?;
    let r = ctx.dat_zeros::<f32>("residual", &md.cells, 1)?;
    let outflow = ctx.global("outflow", &[0.0f32])?;
    let mass0 = ctx.dot(&c, area)?.value()?[0] as f64;
    frame(0, 0.0, &md, &c)?;
    for step in 1..=p.steps {
        ctx.zero(&r)?;
        let args = [un.read(), c.all(fc).read(), r.all(fc).inc()];
        ctx.par_loop(&k("flux_interior"), &md.facets, &args)?;
        let args = [
            un_b.read(),
            c_in.read(),
            c.at(bc, 0).read(),
            r.at(bc, 0).inc(),
            outflow.inc(),
        ];
        ctx.par_loop(&k("flux_boundary"), &md.boundary, &args)?;
        ctx.par_loop(&k("update"), &md.cells, &[area.read(), r.read(), c.rw()])?;
        frame(step, step as f64 * dt as f64, &md, &c)?;
    }
    let mass1 = ctx.dot(&c, area)?.value()?[0] as f64;
    Ok(Outcome {
        c: c.gather()?.unwrap_or_default(),
        dt,
        mass: [mass0, mass1],
        outflow: outflow.value()?[0] as f64 * dt as f64,
    })
}

fn main() {
    if let Err(e) = run_main(Args::parse()) {
        eprintln!("advection: {e}");
        std::process::exit(1);
    }
}

fn run_main(a: Args) -> std::result::Result<(), Box<dyn std::error::Error>> {
    let mesh = gmsh::read_file(&a.mesh)?;
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
            "{}: {} {}s, {} vertices, {} rank(s); adapter {}",
            a.mesh.display(),
            mesh.ncells(),
            mesh.cell_type.name(),
            mesh.nvertices(),
            ctx.ranks(),
            ctx.adapter()
        );
    }
    let p = Problem {
        u: [a.u[0], a.u[1]],
        cfl: a.cfl,
        steps: a.steps,
        inlet: a.inlet.clone(),
    };
    // Every rank writes its piece of each frame; rank 0 the .pvtu and c.pvd.
    let mut series = (a.every > 0)
        .then(|| PartSeries::new(&ctx, &a.output, "c"))
        .transpose()?;
    let t = std::time::Instant::now();
    let o = solve(&ctx, &mesh, &p, |step, time, md, c| {
        #[cfg(feature = "hdf5")]
        if let (Some(path), true) = (&a.checkpoint, step == a.steps) {
            let mut ck = parloop::h5::Checkpoint::new(&ctx);
            ck.map(&md.cell_vertices)
                .dat(&md.coords)?
                .dat(c)?
                .step(step as u64);
            ck.write(path)?;
        }
        let Some(s) = series.as_mut().filter(|_| step % a.every == 0) else {
            return Ok(());
        };
        let field = [PartField::cells(c)?];
        s.write(time, &md.cell_vertices, md.cell_type, &md.coords, &field)
    })?;
    let secs = t.elapsed().as_secs_f64();
    if !root {
        return Ok(());
    }
    println!(
        "{} steps of dt {:.6e} in {secs:.2} s; c in [{:.6}, {:.6}]",
        p.steps,
        o.dt,
        o.c.iter().copied().fold(f32::MAX, f32::min),
        o.c.iter().copied().fold(f32::MIN, f32::max)
    );
    let balance = o.mass[1] - (o.mass[0] - o.outflow);
    println!(
        "mass {:.6e} -> {:.6e}, net outflow {:.6e}: conserved to {balance:.2e}",
        o.mass[0], o.mass[1], o.outflow
    );
    if let Some(s) = &series {
        println!("frames: {}", s.pvd_path().display());
    }
    Ok(())
}
