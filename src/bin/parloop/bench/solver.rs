//! `parloop bench`'s solver section: the P1 Laplacian of the unit square with
//! Dirichlet rows, assembled by one par_loop and solved by Jacobi-CG on the device to a
//! relative residual of 1e-8, in f32 and (where the adapter has it) f64: assembly, y = A x
//! (GB/s and its share of the copy bandwidth), CG iterations per second, and what an iteration
//! costs in submissions, readbacks and dispatches.

use super::vectors::Spread;
use super::{Res, base, context, sig};
use parloop::apps::poisson::{assemble, element_kernel};
use parloop::linalg::{SolveOptions, cg};
use parloop::mesh::unit_square;
use parloop::{Context, Map, Real, Set};
use std::fmt::Write;
use std::time::Instant;

/// Solves of each recurrence in the comparison of the two (one above 2 x 10^6 unknowns, where
/// a solve takes thousands of iterations).
fn repeats(unknowns: usize) -> usize {
    if unknowns > 2_000_000 { 1 } else { 3 }
}

/// The section, on the unit square of `n` squares per side ((n + 1)^2 unknowns), in the
/// `types` named (empty: f32 and, where the adapter has it, f64).
pub fn solver(r: &mut String, n: usize, types: &[String], copy: f64) -> Res<()> {
    let _ = writeln!(
        r,
        "## Sparse matrices and CG\n\nThe P1 Laplacian of the unit square, {} unknowns, u = 0 on \
         the boundary, f = 1: re-assembly (one par_loop, racing increments; the pattern made \
         before), y = A x, and \
         Jacobi-CG to a relative residual of 1e-8 (read every 10 iterations). Per iteration: \
         submissions, readbacks and dispatches.\n\n\
         | type | entries | assembly ms | assembly GB/s | y = A x ms | GB/s | of copy | CG \
         iterations | ms/iteration | true residual | submissions | readbacks | dispatches |\n\
         |---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
        (n + 1) * (n + 1)
    );
    let want = |t: &str| types.is_empty() || types.iter().any(|x| x == t);
    let f64 = context(base()?)?.gpu().f64();
    let mut recs = String::new();
    if want("f32") {
        row::<f32>(r, n, copy, &mut recs)?;
    }
    if f64 && want("f64") {
        row::<f64>(r, n, copy, &mut recs)?;
    }
    let _ = writeln!(
        r,
        "\nThe same Jacobi-CG by the standard recurrences (two reductions per iteration), \
         with one reduction per iteration (`SolveOptions::single_reduction`), pipelined (one \
         reduction, `SolveOptions::pipelined`, f64 only), and with each \
         check waited for before the next iterations are recorded (`overlap_checks` off), \
         interleaved, {} solves each: ms per iteration as the median (range in brackets); \
         per iteration the dispatches, submissions, readbacks and uploads (iterations after \
         convergence count in them).\n\n\
         | recurrence | ms/iteration | iterations | true residual | dispatches | \
         submissions | readbacks | uploads |\n|---|---:|---:|---:|---:|---:|---:|---:|\n{recs}",
        repeats((n + 1) * (n + 1))
    );
    Ok(())
}

fn row<T: Real>(r: &mut String, n: usize, copy: f64, recs: &mut String) -> Res<()> {
    let err = |e: parloop::Error| e.to_string();
    let ctx: Context = context(base()?)?;
    let mesh = unit_square(n);
    let vertices = Set::new("vertices", mesh.nvertices());
    let cells = Set::new("cells", mesh.ncells());
    let cv = Map::new("cell_vertices", &cells, &vertices, 3, &mesh.cells).map_err(err)?;
    let xy: Vec<T> = mesh
        .coords
        .iter()
        .flat_map(|c| [T::from_f64(c[0]), T::from_f64(c[1])])
        .collect();
    let x = ctx.dat("x", &vertices, 2, &xy).map_err(err)?;
    let f = ctx
        .dat("f", &vertices, 1, &vec![T::from_f64(1.0); mesh.nvertices()])
        .map_err(err)?;
    let (a, mut b) = assemble::<T>(&ctx, "A", &cv, &x, &f).map_err(err)?;
    ctx.flush().map_err(err)?;
    // A re-assembly (the pattern, the pipeline and the plan made above), timed: the values
    // zeroed, then the element loop again into them (the same matrix) and a scratch load.
    let load = ctx.dat_zeros::<T>("load", &vertices, 1).map_err(err)?;
    let c = ctx
        .global("coefficients", &[T::from_f64(0.0), T::from_f64(1.0)])
        .map_err(err)?;
    let args = [
        c.read(),
        x.all(&cv).read(),
        f.all(&cv).read(),
        a.inc(&cv, &cv).map_err(err)?,
        load.all(&cv).inc(),
    ];
    ctx.zero(&a.values).map_err(err)?;
    ctx.flush().map_err(err)?;
    let t = Instant::now();
    ctx.par_loop(&element_kernel::<T>(), &cells, &args)
        .map_err(err)?;
    ctx.flush().map_err(err)?;
    let assembly = t.elapsed().as_secs_f64() * 1e3;
    let tb = T::DTYPE.bytes() as f64;
    // Per cell: coordinates (6) and f (3) read, the element matrix (9) and load (3) read and
    // written, the cell's 3 vertex and 9 slot indices.
    let assembly_gbs = mesh.ncells() as f64 * (33.0 * tb + 48.0) / (assembly * 1e6);
    let boundary: Vec<u32> = (0..mesh.nvertices() as u32)
        .filter(|&v| {
            let c = mesh.coords[v as usize];
            c[0] == 0.0 || c[0] == 1.0 || c[1] == 0.0 || c[1] == 1.0
        })
        .collect();
    a.zero_rows(&ctx, &boundary, T::from_f64(1.0))
        .map_err(err)?;
    {
        let mut bv = b.data().map_err(err)?;
        boundary.iter().for_each(|&v| bv[v as usize] = T::default());
    }
    let diagonal = a.diagonal(&ctx).map_err(err)?;
    let (y, u) = (
        ctx.dat_zeros::<T>("y", &vertices, 1).map_err(err)?,
        ctx.dat_zeros::<T>("u", &vertices, 1).map_err(err)?,
    );
    a.mult(&ctx, &b, &y).map_err(err)?;
    ctx.flush().map_err(err)?;
    let reps = 10;
    let t = Instant::now();
    for _ in 0..reps {
        a.mult(&ctx, &b, &y).map_err(err)?;
        ctx.flush().map_err(err)?;
    }
    let spmv = t.elapsed().as_secs_f64() * 1e3 / reps as f64;
    let sp = a.sparsity();
    let (rows, w) = (sp.rows().size(), sp.width());
    // Values and slot indices of the padded rows, x through the columns, y and the counts.
    let bytes = (rows * w) as f64 * (tb + 8.0) + rows as f64 * (2.0 * tb + 4.0);
    let gbs = bytes / (spmv * 1e6);
    let opts = SolveOptions {
        rtol: 1e-8,
        max_iterations: 50_000,
        check_every: 10,
        ..SolveOptions::default()
    };
    let before = ctx.stats();
    let t = Instant::now();
    // The columns before the solve's.
    let head = format!(
        "| {} | {} | {} | {} | {} | {} | {}% |",
        T::DTYPE,
        sp.nnz(),
        sig(assembly),
        sig(assembly_gbs),
        sig(spmv),
        sig(gbs),
        sig(100.0 * gbs / copy),
    );
    let rep = match cg(&ctx, &a, &b, &u, Some(&diagonal), &opts) {
        Ok(rep) => rep,
        Err(e) => {
            // A solve that fails (f32 stalling short of 1e-8 on a large mesh) is a row that
            // says so, not the end of the report.
            let e = e.to_string().replace('\n', " ").replace('|', "/");
            let _ = writeln!(r, "{head} failed: {e} | | | | | |");
            return Ok(());
        }
    };
    let solve = t.elapsed().as_secs_f64() * 1e3;
    let after = ctx.stats();
    let its = rep.iterations.max(1) as f64;
    let per = |a: u64, b: u64| sig((a - b) as f64 / its);
    let _ = writeln!(
        r,
        "{head} {} | {} | {:.1e} | {} | {} | {} |",
        rep.iterations,
        sig(solve / its),
        rep.true_residual,
        per(after.submissions, before.submissions),
        per(after.readbacks, before.readbacks),
        per(after.dispatches, before.dispatches),
    );
    recurrences(&ctx, &a, &b, &u, &diagonal, &opts, recs)
}

/// A row of the comparison.
#[derive(Clone, Copy)]
struct Variant {
    label: &'static str,
    single_reduction: bool,
    pipelined: bool,
    /// `overlap_checks`, set either way whatever the adapter's default.
    overlap: bool,
}

/// The rows of the comparison (pipelined in f64 only).
const VARIANTS: [Variant; 4] = [
    Variant {
        label: "standard",
        single_reduction: false,
        pipelined: false,
        overlap: true,
    },
    Variant {
        label: "single reduction",
        single_reduction: true,
        pipelined: false,
        overlap: true,
    },
    Variant {
        label: "pipelined",
        single_reduction: false,
        pipelined: true,
        overlap: true,
    },
    Variant {
        label: "standard, each check waited for",
        single_reduction: false,
        pipelined: false,
        overlap: false,
    },
];

/// The row's system solved again by each of [`VARIANTS`], interleaved, [`repeats`] times each
/// (the rows of the second table, added to `recs`).
fn recurrences<T: Real>(
    ctx: &Context,
    a: &parloop::linalg::Mat<T>,
    b: &parloop::Dat<T>,
    u: &parloop::Dat<T>,
    diagonal: &parloop::Dat<T>,
    opts: &SolveOptions,
    recs: &mut String,
) -> Res<()> {
    let err = |e: parloop::Error| e.to_string();
    let variants: Vec<Variant> = VARIANTS
        .into_iter()
        .filter(|v| !v.pipelined || T::DTYPE == parloop::DType::F64)
        .collect();
    let mut ms = vec![Vec::new(); variants.len()];
    let mut rows = vec![String::new(); variants.len()];
    let options = |v: Variant| SolveOptions {
        single_reduction: v.single_reduction,
        pipelined: v.pipelined,
        overlap_checks: Some(v.overlap),
        ..opts.clone()
    };
    // Each recurrence once untimed: its pipelines compiled before the samples.
    for &v in &variants {
        let opts = SolveOptions {
            max_iterations: 1,
            allow_unconverged: true,
            ..options(v)
        };
        ctx.zero(u).map_err(err)?;
        cg(ctx, a, b, u, Some(diagonal), &opts).map_err(err)?;
    }
    for _ in 0..repeats(b.set().size()) {
        for (k, &v) in variants.iter().enumerate() {
            ctx.zero(u).map_err(err)?;
            ctx.flush().map_err(err)?;
            let before = ctx.stats();
            let t = Instant::now();
            let rep = match cg(ctx, a, b, u, Some(diagonal), &options(v)) {
                Ok(rep) => rep,
                Err(e) => {
                    let e = e.to_string().replace('\n', " ").replace('|', "/");
                    rows[k] = format!("failed: {e} | | | | | |");
                    continue;
                }
            };
            let its = rep.iterations.max(1) as f64;
            ms[k].push(t.elapsed().as_secs_f64() * 1e3 / its);
            let after = ctx.stats();
            let per = |a: u64, b: u64| sig((a - b) as f64 / its);
            rows[k] = format!(
                "{} | {:.1e} | {} | {} | {} | {} |",
                rep.iterations,
                rep.true_residual,
                per(after.dispatches, before.dispatches),
                per(after.submissions, before.submissions),
                per(after.readbacks, before.readbacks),
                per(after.uploads, before.uploads),
            );
        }
    }
    for (k, v) in variants.iter().enumerate() {
        let _ = writeln!(
            recs,
            "| {} {} | {} | {}",
            T::DTYPE,
            v.label,
            if ms[k].is_empty() {
                "-".to_string()
            } else {
                Spread::of(&ms[k]).show()
            },
            rows[k]
        );
    }
    Ok(())
}
