//! -div(grad u) = f with P1 finite elements, assembled into a sparse matrix by a par_loop and
//! solved by Jacobi-preconditioned conjugate gradients on the device.
//!
//! `cargo run --release --example poisson` solves the manufactured problem
//! u = sin(pi x) sin(pi y) on the unit square (`--n` squares per side) and reports the L2
//! error; `--mesh FILE.msh` solves it on your own mesh of triangles, with u given on the
//! boundary facets of `--dirichlet GROUP` (default: the whole boundary) and its normal
//! derivative (a Neumann condition) on the rest. `--cube` solves u = sin(pi x) sin(pi y)
//! sin(pi z) on tetrahedra of the unit cube instead (`--n` cubes per side, u given on the whole
//! boundary). `--pc amg` preconditions CG by algebraic multigrid instead of Jacobi, `--pc
//! chebyshev` by a Chebyshev polynomial (both on any number of ranks). `--precision f64` runs
//! in double precision (an adapter with f64). u and its error go to out/poisson/poisson.pvd for
//! ParaView.
//!
//! The same program runs on N ranks: `mpirun -np 3 target/release/examples/poisson` (built
//! with `--features mpi`). `MeshData::new` partitions the mesh and gives each rank its part;
//! the assembly, the Dirichlet condition, CG and the error norm are par_loops and reductions,
//! and the output is written in pieces.

use clap::Parser;
use parloop::apps::poisson::assemble;
use parloop::linalg::{
    Amg, AmgOptions, AmgReport, Chebyshev, ChebyshevOptions, Dirichlet, Preconditioner,
    SolveOptions, SolveReport, cg,
};
use parloop::mesh::pvtu::{PartField, PartSeries};
use parloop::mesh::topology::MeshData;
use parloop::mesh::{CellType, Mesh, gmsh, unit_cube_tets, unit_square};
use parloop::{Context, Dat, Error, IterSpace, Kernel, Real, Result};
use std::f64::consts::PI;
use std::path::PathBuf;

#[derive(Parser)]
#[command(about = "P1 Poisson problem solved by CG on the device (parloop)")]
struct Args {
    /// Print the per-loop-group time table at the end (PARLOOP_PROFILE=table).
    #[arg(long)]
    profile: bool,
    /// Squares per side of the unit square (2 n^2 triangles).
    #[arg(long, default_value_t = 128)]
    n: usize,
    /// Move the unit square's (or cube's) interior vertices by up to this fraction of a
    /// square's side in each coordinate (a mesh that is not uniform; 0.2 keeps every triangle
    /// well shaped, 0.1 every tetrahedron). On the uniform square the load is an eigenvector
    /// of A and CG converges in one iteration: jitter the mesh to compare solvers.
    #[arg(long, default_value_t = 0.0)]
    jitter: f64,
    /// Tetrahedra of the unit cube (6 n^3), u = sin(pi x) sin(pi y) sin(pi z).
    #[arg(long)]
    cube: bool,
    /// A Gmsh mesh (.msh) of triangles instead of the unit square.
    #[arg(long)]
    mesh: Option<PathBuf>,
    /// The physical group of boundary facets where u is given (default: all of the boundary).
    #[arg(long)]
    dirichlet: Option<String>,
    /// f32 or f64.
    #[arg(long, default_value = "f32")]
    precision: String,
    /// CG's preconditioner: jacobi, amg (smoothed aggregation) or chebyshev (any number of
    /// ranks).
    #[arg(long, value_enum, default_value_t = Pc::Jacobi)]
    pc: Pc,
    /// Read CG's residual every this many iterations.
    #[arg(long, default_value_t = 10)]
    check_every: usize,
    /// CG's recurrence: standard (two reductions per iteration), single (one), or pipelined
    /// (one, hidden on N ranks behind y = A x and its halo exchange but at the checks; f64
    /// only; its residual is replaced by the true one where it fell 100-fold).
    #[arg(long, value_enum, default_value_t = Recurrence::Standard)]
    recurrence: Recurrence,
    /// Write the system solved (A.mtx, b.txt) into this directory, for other solvers.
    #[arg(long)]
    export: Option<PathBuf>,
    /// Relative residual at which CG stops.
    #[arg(long, default_value_t = 1e-6)]
    rtol: f64,
    /// Directory for the ParaView files (poisson.pvd).
    #[arg(long, default_value = "out/poisson")]
    output: PathBuf,
}

/// CG's preconditioner.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Pc {
    /// A's diagonal.
    Jacobi,
    /// Smoothed-aggregation algebraic multigrid (`linalg::Amg`).
    Amg,
    /// A Chebyshev polynomial in D^-1 A, 3 steps (`linalg::Chebyshev`).
    Chebyshev,
}

/// CG's recurrence (`SolveOptions::single_reduction`, `SolveOptions::pipelined`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Recurrence {
    /// Two reductions per iteration.
    Standard,
    /// Chronopoulos and Gear's: one reduction per iteration.
    Single,
    /// Ghysels and Vanroose's: one reduction per iteration, in flight while the preconditioner
    /// and y = A x run.
    Pipelined,
}

/// `mesh` (the unit square or cube of `n` squares or cubes per side) with its interior
/// vertices moved by up to `jitter / n` in each coordinate, the same on every run and rank.
pub fn jittered(mut mesh: Mesh, n: usize, jitter: f64) -> Mesh {
    let d = if mesh.cell_type == CellType::Tetrahedron {
        3
    } else {
        2
    };
    let h = 1.0 / n as f64;
    let mut state = 0x2545_f491_4f6c_dd1d_u64;
    let mut unit = || {
        // xorshift64: a fixed sequence, no dependency.
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state >> 11) as f64 / (1u64 << 53) as f64 - 0.5
    };
    for c in &mut mesh.coords {
        let interior = c[..d].iter().all(|&x| x > 0.0 && x < 1.0);
        let step: Vec<f64> = (0..d).map(|_| unit()).collect();
        if interior {
            for (x, s) in c.iter_mut().zip(&step) {
                *x += 2.0 * jitter * h * s;
            }
        }
    }
    mesh
}

/// The manufactured solution.
pub fn exact(x: [f64; 3]) -> f64 {
    (PI * x[0]).sin() * (PI * x[1]).sin()
}

/// Its source term, -div(grad u).
pub fn source_term(x: [f64; 3]) -> f64 {
    2.0 * PI * PI * exact(x)
}

/// The manufactured solution on the unit cube.
pub fn exact_3d(x: [f64; 3]) -> f64 {
    (PI * x[0]).sin() * (PI * x[1]).sin() * (PI * x[2]).sin()
}

/// Its gradient.
pub fn gradient(x: [f64; 3]) -> [f64; 2] {
    let (sx, sy) = ((PI * x[0]).sin(), (PI * x[1]).sin());
    let (cx, cy) = ((PI * x[0]).cos(), (PI * x[1]).cos());
    [PI * cx * sy, PI * sx * cy]
}

/// What a solve gives: u and its error on the vertices, the mesh they live on, the CG report,
/// the discrete L2 error, what the solve cost per CG iteration: submissions, readbacks,
/// uploads and dispatches; the system solved, the AMG setup's report, the report of an
/// `Amg::update` after the solve (the aggregates kept, as a time step would) and the solve's
/// time.
pub struct Solution<T: Real> {
    pub md: MeshData,
    pub u: Dat<T>,
    pub error: Dat<T>,
    pub report: SolveReport,
    pub l2_error: f64,
    pub per_iteration: [f64; 6],
    pub a: parloop::linalg::Mat<T>,
    pub b: Dat<T>,
    pub amg: Option<AmgReport>,
    pub amg_update: Option<AmgReport>,
    pub solve_s: f64,
}

/// The boundary facets where u is given: the group `dirichlet` of them, or all of them.
fn dirichlet_facets(md: &MeshData, dirichlet: Option<&str>) -> Result<IterSpace> {
    let Some(name) = dirichlet else {
        return Ok((&md.boundary).into());
    };
    let on_boundary = |g: &&parloop::Subset| g.name() == name && g.set().id() == md.boundary.id();
    match md.groups.iter().find(on_boundary) {
        Some(g) => Ok(g.into()),
        None => {
            let elsewhere = md.groups.iter().find(|g| g.name() == name);
            Err(Error::Usage(match elsewhere {
                Some(g) => format!(
                    "--dirichlet `{name}` is a group of {}; give a group of boundary facets",
                    g.set().name()
                ),
                None => format!(
                    "no group of boundary facets named `{name}` for the Dirichlet condition; \
                     {}",
                    md.group(name)
                        .err()
                        .map_or(String::new(), |e| e.to_string())
                ),
            }))
        }
    }
}

/// Kernels on the vertices and boundary facets (`T` is the precision).
const KERNELS: &str = "
fn neumann(g: ptr<function, array<T, 1>>, b: ptr<function, array<T, 2>>) {
    (*b)[0] += (*g)[0]; (*b)[1] += (*g)[0];
}
fn lumped_mass(area: ptr<function, array<T, 1>>, m: ptr<function, array<T, 3>>) {
    for (var i = 0u; i < 3u; i++) { (*m)[i] += (*area)[0] / 3.0; }
}
fn lumped_mass_3d(x: ptr<function, array<T, 12>>, m: ptr<function, array<T, 4>>) {
    var e: array<array<T, 3>, 3>;
    for (var k = 0u; k < 3u; k++) {
        for (var d = 0u; d < 3u; d++) { e[k][d] = (*x)[3u * (k + 1u) + d] - (*x)[d]; }
    }
    let det = e[0][0] * (e[1][1] * e[2][2] - e[1][2] * e[2][1])
        - e[0][1] * (e[1][0] * e[2][2] - e[1][2] * e[2][0])
        + e[0][2] * (e[1][0] * e[2][1] - e[1][1] * e[2][0]);
    for (var i = 0u; i < 4u; i++) { (*m)[i] += abs(det) / 24.0; }
}
fn unused(m: ptr<function, array<T, 1>>, fixed: ptr<function, array<T, 1>>) {
    if ((*m)[0] == T(0)) { (*fixed)[0] = T(1); }
}
fn error(u: ptr<function, array<T, 1>>, exact: ptr<function, array<T, 1>>,
         m: ptr<function, array<T, 1>>, e: ptr<function, array<T, 1>>,
         sum: ptr<function, array<T, 1>>) {
    (*e)[0] = (*u)[0] - (*exact)[0];
    (*sum)[0] += (*e)[0] * (*e)[0] * (*m)[0];
}
";

/// Solves the manufactured problem on `mesh` in `T`, u = exact on the Dirichlet facets' vertices.
/// The same on one process and on N ranks (each solves its part of the mesh).
pub fn solve<T: Real>(
    ctx: &Context,
    mesh: &Mesh,
    dirichlet: Option<&str>,
    opts: &SolveOptions,
) -> Result<Solution<T>> {
    solve_with(ctx, mesh, dirichlet, opts, Pc::Jacobi)
}

/// [`solve`] with the preconditioner `pc`.
pub fn solve_with<T: Real>(
    ctx: &Context,
    mesh: &Mesh,
    dirichlet: Option<&str>,
    opts: &SolveOptions,
    pc: Pc,
) -> Result<Solution<T>> {
    // On N ranks every rank learns of one rank's wrong mesh (else the others would wait for
    // it in MeshData::new).
    // Triangles, or tetrahedra with u given on the whole boundary.
    let cube = mesh.cell_type == CellType::Tetrahedron;
    let usable = match (mesh.cell_type, dirichlet) {
        (CellType::Triangle, _) | (CellType::Tetrahedron, None) => Ok(()),
        (CellType::Tetrahedron, Some(g)) => Err(Error::Usage(format!(
            "--dirichlet {g}: on tetrahedra the Poisson example gives u on the whole boundary \
             (leave --dirichlet out)"
        ))),
        (other, _) => Err(Error::Usage(format!(
            "the Poisson example runs on triangles or tetrahedra; this mesh has {} cells",
            other.name()
        ))),
    };
    ctx.agree(usable, "checking the Poisson example's mesh")?;
    let md = MeshData::new(ctx, mesh)?;
    let on_dirichlet = dirichlet_facets(&md, dirichlet)?;
    let source = T::DTYPE.to_string();
    let k = |name: &str| {
        Kernel::new(
            name,
            KERNELS
                .replace("T(", &format!("{source}("))
                .replace("<T,", &format!("<{source},")),
        )
    };
    let x = md.coords_as::<T>(ctx)?;
    type Field = fn([f64; 3]) -> f64;
    let (u_exact, f_exact): (Field, Field) = if cube {
        (exact_3d, |x| 3.0 * PI * PI * exact_3d(x))
    } else {
        (exact, source_term)
    };
    let f = md.interpolate::<T>(ctx, "f", f_exact)?;
    let g = md.interpolate::<T>(ctx, "exact", u_exact)?;
    let (a, b) = assemble::<T>(ctx, "A", &md.cell_vertices, &x, &f)?;
    // Neumann data on the boundary facets outside the Dirichlet group: b_i += |f| / 2
    // grad(u) . n at the facet's midpoint, for both its vertices (0 on the Dirichlet facets,
    // whose rows the condition replaces).
    // (On tetrahedra u is given on the whole boundary: no Neumann facets, and no facet
    // geometry, which for a 10^6-vertex cube would not fit a binding.)
    let geometry = (!cube).then(|| md.geometry(ctx, &x)).transpose()?;
    if let Some(geometry) = &geometry {
        let fb = &geometry.boundary;
        let (n, c, m) = (
            fb.normal.data_ro()?,
            fb.centroid.data_ro()?,
            fb.measure.data_ro()?,
        );
        let flux: Vec<T> = (0..m.len())
            .map(|f| {
                let [gx, gy] = gradient([c[2 * f].to_f64(), c[2 * f + 1].to_f64(), 0.0]);
                let g = gx * n[2 * f].to_f64() + gy * n[2 * f + 1].to_f64();
                T::from_f64(g * m[f].to_f64() / 2.0)
            })
            .collect();
        let flux = ctx.dat("neumann", &md.boundary, 1, &flux)?;
        ctx.par_loop(
            &k("neumann"),
            &md.boundary,
            &[flux.read(), b.all(&md.boundary_vertices).inc()],
        )?;
    }
    // The lumped mass (a third of each triangle's area, a quarter of each tetrahedron's
    // volume per vertex), for the L2 error.
    let mass = ctx.dat_zeros::<T>("lumped mass", &md.vertices, 1)?;
    let cv = &md.cell_vertices;
    // (Each tetrahedron's volume from its vertices.)
    match &geometry {
        Some(g) => ctx.par_loop(
            &k("lumped_mass"),
            &md.cells,
            &[g.cells.measure.read(), mass.all(cv).inc()],
        )?,
        None => ctx.par_loop(
            &k("lumped_mass_3d"),
            &md.cells,
            &[x.all(cv).read(), mass.all(cv).inc()],
        )?,
    }
    // u = exact on the Dirichlet facets' vertices, and on any vertex in no cell (Gmsh keeps
    // points such as a circle's centre), whose row is empty.
    let bc = Dirichlet::on_facets(ctx, on_dirichlet, &md.boundary_vertices)?;
    ctx.par_loop(&k("unused"), &md.vertices, &[mass.read(), bc.mask.rw()])?;
    let u = ctx.dat_zeros::<T>("u", &md.vertices, 1)?;
    bc.apply(ctx, &a, &b, &u, &g)?;
    // The assembly and the set-up run here, not in the solve's count.
    let (diagonal, mut amg, chebyshev);
    let (pc, amg_report): (&dyn Preconditioner<T>, _) = match pc {
        Pc::Jacobi => {
            amg = None;
            diagonal = a.diagonal(ctx)?;
            ctx.upload(&diagonal)?;
            (&diagonal, None)
        }
        Pc::Chebyshev => {
            amg = None;
            chebyshev = Chebyshev::new(ctx, &a, &ChebyshevOptions::default())?;
            (&chebyshev, None)
        }
        Pc::Amg => {
            amg = Some(Amg::new(ctx, &a, &AmgOptions::default())?);
            let m = amg.as_ref().expect("just built");
            (m, Some(m.report().clone()))
        }
    };
    let before = ctx.stats();
    let t = std::time::Instant::now();
    let report = cg(ctx, &a, &b, &u, Some(pc), opts)?;
    let solve_s = t.elapsed().as_secs_f64();
    let after = ctx.stats();
    // What a time step's new values would cost: the hierarchy rebuilt, aggregates kept.
    let amg_update = match amg.as_mut() {
        Some(m) => {
            m.update(ctx)?;
            Some(m.report().clone())
        }
        None => None,
    };
    let per = |a: u64, b: u64| (a - b) as f64 / report.iterations.max(1) as f64;
    let per_iteration = [
        per(after.submissions, before.submissions),
        per(after.readbacks, before.readbacks),
        per(after.uploads, before.uploads),
        per(after.dispatches, before.dispatches),
        per(after.global_reductions, before.global_reductions),
        per(after.reductions_hidden, before.reductions_hidden),
    ];
    // The discrete L2 error with the lumped mass, and the error itself for ParaView.
    let error = ctx.dat_zeros::<T>("error", &md.vertices, 1)?;
    let sum = ctx.global("L2 error squared", &[T::default()])?;
    let args = [u.read(), g.read(), mass.read(), error.write(), sum.inc()];
    ctx.par_loop(&k("error"), &md.vertices, &args)?;
    let l2_error = sum.value()?[0].to_f64().sqrt();
    Ok(Solution {
        md,
        u,
        error,
        report,
        l2_error,
        per_iteration,
        a,
        b,
        amg: amg_report,
        amg_update,
        solve_s,
    })
}

fn main() {
    if let Err(e) = run_main(Args::parse()) {
        eprintln!("poisson: {e}");
        std::process::exit(1);
    }
}

fn run_main(a: Args) -> std::result::Result<(), Box<dyn std::error::Error>> {
    if a.recurrence == Recurrence::Pipelined && a.precision != "f64" {
        return Err(
            "--recurrence pipelined runs in f64 only: add --precision f64, or use \
                    --recurrence single"
                .into(),
        );
    }
    let mesh = match &a.mesh {
        Some(_) if a.cube => return Err("--cube and --mesh: give one of them".into()),
        Some(p) => gmsh::read_file(p)?,
        None if a.cube => jittered(unit_cube_tets(a.n), a.n, a.jitter),
        None => jittered(unit_square(a.n), a.n, a.jitter),
    };
    // --profile adds the table; PARLOOP_PROFILE=table asks for it as well. Under mpirun the
    // Context is one rank of MPI's world, and MeshData gives each rank its part of the mesh.
    let env = parloop::Config::from_env()?;
    let ctx = Context::with_config(parloop::Config {
        profile_table: a.profile || env.profile_table,
        ..env
    })?;
    if ctx.rank() == 0 {
        println!(
            "{} {} cells, {} vertices, {}, {} rank(s); adapter {}",
            mesh.ncells(),
            mesh.cell_type.name(),
            mesh.nvertices(),
            a.precision,
            ctx.ranks(),
            ctx.adapter()
        );
    }
    match a.precision.as_str() {
        "f32" => run::<f32>(&ctx, &a, &mesh),
        "f64" => run::<f64>(&ctx, &a, &mesh),
        p => Err(format!("--precision {p}: give f32 or f64").into()),
    }
}

/// Solves, reports (rank 0 prints what every rank computed) and writes u and its error.
fn run<T: Real>(
    ctx: &Context,
    a: &Args,
    mesh: &Mesh,
) -> std::result::Result<(), Box<dyn std::error::Error>> {
    let opts = SolveOptions {
        rtol: a.rtol,
        check_every: a.check_every,
        single_reduction: a.recurrence == Recurrence::Single,
        pipelined: a.recurrence == Recurrence::Pipelined,
        ..SolveOptions::default()
    };
    let t = std::time::Instant::now();
    let s = solve_with::<T>(ctx, mesh, a.dirichlet.as_deref(), &opts, a.pc)?;
    let secs = t.elapsed().as_secs_f64();
    // Every rank writes its piece; rank 0 the .pvtu and the .pvd ParaView opens.
    let mut frames = PartSeries::new(ctx, &a.output, "poisson")?;
    let fields = [PartField::vertices(&s.u)?, PartField::vertices(&s.error)?];
    frames.write(
        0.0,
        &s.md.cell_vertices,
        mesh.cell_type,
        &s.md.coords,
        &fields,
    )?;
    if ctx.rank() != 0 {
        return Ok(());
    }
    let last = s.report.residuals.last().map_or(0.0, |r| r.1);
    let replaced = match (s.report.replacements, s.report.restarts) {
        (0, _) => String::new(),
        (1, 0) => ", 1 residual replacement".to_string(),
        (n, 0) => format!(", {n} residual replacements"),
        (1, _) => ", 1 residual replacement, with a restart".to_string(),
        (n, k) => format!(", {n} residual replacements, {k} with a restart"),
    };
    println!(
        "CG: {} iterations to a relative residual of {last:.2e} (true residual {:.2e}{replaced}) \
         in {secs:.2} s (assembly included); L2 error {:.6e}",
        s.report.iterations, s.report.true_residual, s.l2_error
    );
    let [sub, rb, up, disp, red, hidden] = s.per_iteration;
    println!(
        "per CG iteration: {sub:.2} submissions, {rb:.2} readbacks, {up:.2} uploads, {disp:.1} \
         dispatches (the residual is read every {} iteration(s)); {:.3} ms",
        opts.check_every,
        1e3 * s.solve_s / s.report.iterations.max(1) as f64
    );
    if ctx.ranks() > 1 {
        println!(
            "per CG iteration on {} ranks: {red:.2} reductions over the ranks, {hidden:.2} of \
             them in flight while other work ran",
            ctx.ranks()
        );
    }
    if let Some(r) = &s.amg {
        println!(
            "AMG: {} levels {:?} (unknowns, nonzeros), operator complexity {:.3}; setup {:.2} s \
             (read back {:.2}, host {:.2}, upload {:.2}); CG solve {:.2} s",
            r.levels.len(),
            r.levels,
            r.operator_complexity,
            r.read_s + r.setup_s + r.upload_s,
            r.read_s,
            r.setup_s,
            r.upload_s,
            s.solve_s
        );
    } else {
        println!("CG solve {:.2} s", s.solve_s);
    }
    if let Some(r) = &s.amg_update {
        println!(
            "Amg::update (aggregates kept): {:.2} s (read back {:.2}, host {:.2}, upload {:.2})",
            r.read_s + r.setup_s + r.upload_s,
            r.read_s,
            r.setup_s,
            r.upload_s
        );
    }
    if let Some(dir) = &a.export {
        std::fs::create_dir_all(dir)?;
        s.a.write_matrix_market(dir.join("A.mtx"))?;
        let b: Vec<String> = s.b.data_ro()?.iter().map(|v| format!("{v:?}")).collect();
        std::fs::write(dir.join("b.txt"), b.join("\n"))?;
        println!("the system: {}", dir.join("A.mtx").display());
    }
    println!("ParaView: {}", frames.pvd_path().display());
    Ok(())
}
