//! -div(grad u) = f with P1 finite elements, assembled into a sparse matrix by a par_loop and
//! solved by Jacobi-preconditioned conjugate gradients on the device.
//!
//! `cargo run --release --example poisson` solves the manufactured problem
//! u = sin(pi x) sin(pi y) on the unit square (`--n` squares per side) and reports the L2
//! error; `--mesh FILE.msh` solves it on your own mesh of triangles, with u given on the
//! boundary facets of `--dirichlet GROUP` (default: the whole boundary) and its normal
//! derivative (a Neumann condition) on the rest. `--precision f64` runs
//! in double precision (an adapter with f64). u and its error go to out/poisson/ for ParaView.

use clap::Parser;
use parloop::apps::poisson::assemble;
use parloop::linalg::{SolveOptions, SolveReport, cg};
use parloop::mesh::geometry::facet_geometry;
use parloop::mesh::topology::MeshData;
use parloop::mesh::vtk::{Field, write_vtu};
use parloop::mesh::{CellType, Mesh, gmsh, unit_square};
use parloop::{Context, Error, Kernel, Real, Result};
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
    /// A Gmsh mesh (.msh) of triangles instead of the unit square.
    #[arg(long)]
    mesh: Option<PathBuf>,
    /// The physical group of boundary facets where u is given (default: all of the boundary).
    #[arg(long)]
    dirichlet: Option<String>,
    /// f32 or f64.
    #[arg(long, default_value = "f32")]
    precision: String,
    /// Relative residual at which CG stops.
    #[arg(long, default_value_t = 1e-6)]
    rtol: f64,
    /// Directory for the ParaView file (poisson.vtu).
    #[arg(long, default_value = "out/poisson")]
    output: PathBuf,
}

/// The manufactured solution.
pub fn exact(x: [f64; 3]) -> f64 {
    (PI * x[0]).sin() * (PI * x[1]).sin()
}

/// Its source term, -div(grad u).
pub fn source(x: [f64; 3]) -> f64 {
    2.0 * PI * PI * exact(x)
}

/// Its gradient.
pub fn gradient(x: [f64; 3]) -> [f64; 2] {
    let (sx, sy) = ((PI * x[0]).sin(), (PI * x[1]).sin());
    let (cx, cy) = ((PI * x[0]).cos(), (PI * x[1]).cos());
    [PI * cx * sy, PI * sx * cy]
}

/// What a solve gives: u on the vertices, the CG report, the discrete L2 error, and what the
/// solve cost per CG iteration: submissions, readbacks, uploads and dispatches.
pub struct Solution {
    pub u: Vec<f64>,
    pub report: SolveReport,
    pub l2_error: f64,
    pub per_iteration: [f64; 4],
}

/// The boundary facets of group `dirichlet` (all of them if None), as indices of
/// `md.boundary`.
fn dirichlet_facets(md: &MeshData, dirichlet: Option<&str>) -> Result<Vec<u32>> {
    match dirichlet {
        None => Ok((0..md.boundary.size() as u32).collect()),
        Some(name) => {
            let g = md
                .groups
                .iter()
                .find(|g| g.name() == name && g.set().id() == md.boundary.id())
                .ok_or_else(|| {
                    let names: Vec<&str> = md.groups.iter().map(|g| g.name()).collect();
                    Error::Usage(format!(
                        "no group of boundary facets named `{name}` for the Dirichlet \
                         condition; the mesh's groups: {names:?}"
                    ))
                })?;
            Ok(g.indices().to_vec())
        }
    }
}

/// Solves the manufactured problem on `mesh` in `T`, u = exact on the Dirichlet vertices.
pub fn solve<T: Real>(
    ctx: &Context,
    mesh: &Mesh,
    dirichlet: Option<&str>,
    opts: &SolveOptions,
) -> Result<Solution> {
    if mesh.cell_type != CellType::Triangle {
        return Err(Error::Usage(format!(
            "the Poisson example runs on triangles; this mesh has {} cells",
            mesh.cell_type.name()
        )));
    }
    let md = MeshData::new(ctx, mesh)?;
    let cv = &md.cell_vertices;
    let values = |f: &dyn Fn([f64; 3]) -> f64| -> Vec<T> {
        mesh.coords.iter().map(|&x| T::from_f64(f(x))).collect()
    };
    let x = md.coords_as::<T>(ctx)?;
    let f = ctx.dat("f", &md.vertices, 1, &values(&source))?;
    let (a, mut b) = assemble::<T>(ctx, "A", cv, &x, &f)?;
    // Neumann data on the other boundary facets: b_i += |f| / 2 grad(u) . n at the facet's
    // midpoint, for both its vertices.
    let on_dirichlet = dirichlet_facets(&md, dirichlet)?;
    let mut flux = vec![T::default(); md.boundary.size()];
    if on_dirichlet.len() < md.boundary.size() {
        let g = facet_geometry(ctx, mesh.cell_type, &md.boundary_vertices, &x)?;
        let (n, c, m) = (
            g.normal.data_ro()?,
            g.centroid.data_ro()?,
            g.measure.data_ro()?,
        );
        for (f, v) in flux.iter_mut().enumerate() {
            let at = [c[2 * f].to_f64(), c[2 * f + 1].to_f64(), 0.0];
            let [gx, gy] = gradient(at);
            let gn = gx * n[2 * f].to_f64() + gy * n[2 * f + 1].to_f64();
            *v = T::from_f64(gn * m[f].to_f64() / 2.0);
        }
        for &f in &on_dirichlet {
            flux[f as usize] = T::default();
        }
        let flux = ctx.dat("neumann", &md.boundary, 1, &flux)?;
        let t = T::DTYPE;
        let k = Kernel::new(
            "neumann",
            format!(
                "fn neumann(g: ptr<function, array<{t}, 1>>, b: ptr<function, array<{t}, 2>>) {{
                    (*b)[0] += (*g)[0]; (*b)[1] += (*g)[0];
                }}"
            ),
        );
        let args = [flux.read(), b.all(&md.boundary_vertices).inc()];
        ctx.par_loop(&k, &md.boundary, &args)?;
    }
    // Dirichlet rows: 1 on the diagonal, u's value in b and in the initial guess, so CG works
    // on the other unknowns (their residual alone is nonzero) and the system stays symmetric
    // there. A vertex in no cell (Gmsh keeps points such as a circle's centre) is fixed at 0.
    let bv = md.boundary_vertices.values();
    let mut fixed: Vec<u32> = on_dirichlet
        .iter()
        .flat_map(|&f| bv[2 * f as usize..2 * f as usize + 2].iter().copied())
        .collect();
    let mut in_cell = vec![false; mesh.nvertices()];
    mesh.cells.iter().for_each(|&v| in_cell[v as usize] = true);
    let orphans: Vec<u32> = (0..mesh.nvertices() as u32)
        .filter(|&v| !in_cell[v as usize])
        .collect();
    fixed.extend(&orphans);
    fixed.sort_unstable();
    fixed.dedup();
    a.zero_rows(ctx, &fixed, T::from_f64(1.0))?;
    let mut g = values(&exact);
    orphans.iter().for_each(|&v| g[v as usize] = T::default());
    let mut u0 = vec![T::default(); mesh.nvertices()];
    {
        let mut bv = b.data()?;
        for &v in &fixed {
            bv[v as usize] = g[v as usize];
            u0[v as usize] = g[v as usize];
        }
    }
    let u = ctx.dat("u", &md.vertices, 1, &u0)?;
    let diagonal = a.diagonal(ctx)?;
    ctx.upload(&diagonal)?; // the assembly and the set-up run here, not in the solve's count
    let before = ctx.stats();
    let report = cg(ctx, &a, &b, &u, Some(&diagonal), opts)?;
    let after = ctx.stats();
    let per = |a: u64, b: u64| (a - b) as f64 / report.iterations.max(1) as f64;
    let per_iteration = [
        per(after.submissions, before.submissions),
        per(after.readbacks, before.readbacks),
        per(after.uploads, before.uploads),
        per(after.dispatches, before.dispatches),
    ];
    let u: Vec<f64> = u.data_ro()?.iter().map(|v| v.to_f64()).collect();
    // The discrete L2 error with the lumped mass (a third of each cell's area per vertex).
    let mut mass = vec![0.0; mesh.nvertices()];
    for c in 0..mesh.ncells() {
        let a = mesh.signed_measure(c).unwrap_or(0.0).abs() / 3.0;
        mesh.cell(c).iter().for_each(|&v| mass[v as usize] += a);
    }
    let l2_error = (0..mesh.nvertices())
        .map(|v| (u[v] - exact(mesh.coords[v])).powi(2) * mass[v])
        .sum::<f64>()
        .sqrt();
    Ok(Solution {
        u,
        report,
        l2_error,
        per_iteration,
    })
}

fn main() {
    if let Err(e) = run_main(Args::parse()) {
        eprintln!("poisson: {e}");
        std::process::exit(1);
    }
}

fn run_main(a: Args) -> std::result::Result<(), Box<dyn std::error::Error>> {
    let mesh = match &a.mesh {
        Some(p) => gmsh::read_file(p)?,
        None => unit_square(a.n),
    };
    // --profile adds the table; PARLOOP_PROFILE=table asks for it as well.
    let env = parloop::Config::from_env()?;
    let ctx = Context::with_config(parloop::Config {
        profile_table: a.profile || env.profile_table,
        ..env
    })?;
    println!(
        "{} triangles, {} vertices, {}; adapter {}",
        mesh.ncells(),
        mesh.nvertices(),
        a.precision,
        ctx.adapter()
    );
    let opts = SolveOptions {
        rtol: a.rtol,
        ..SolveOptions::default()
    };
    let t = std::time::Instant::now();
    let dirichlet = a.dirichlet.as_deref();
    let s = match a.precision.as_str() {
        "f32" => solve::<f32>(&ctx, &mesh, dirichlet, &opts)?,
        "f64" => solve::<f64>(&ctx, &mesh, dirichlet, &opts)?,
        p => return Err(format!("--precision {p}: give f32 or f64").into()),
    };
    let secs = t.elapsed().as_secs_f64();
    let last = s.report.residuals.last().map_or(0.0, |r| r.1);
    println!(
        "CG: {} iterations to a relative residual of {last:.2e} in {secs:.2} s (assembly \
         included); L2 error {:.3e}",
        s.report.iterations, s.l2_error
    );
    let [sub, rb, up, disp] = s.per_iteration;
    println!(
        "per CG iteration: {sub:.2} submissions, {rb:.2} readbacks, {up:.2} uploads, {disp:.1} \
         dispatches (the residual is read every {} iterations)",
        opts.check_every
    );
    let err: Vec<f64> = (0..mesh.nvertices())
        .map(|v| s.u[v] - exact(mesh.coords[v]))
        .collect();
    std::fs::create_dir_all(&a.output)?;
    let path = a.output.join("poisson.vtu");
    write_vtu(
        &path,
        &mesh,
        &[Field::vertices("u", &s.u), Field::vertices("error", &err)],
    )?;
    println!("ParaView: {}", path.display());
    Ok(())
}
