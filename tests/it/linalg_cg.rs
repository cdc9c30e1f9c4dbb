//! CG against a plain-Rust CG in f64 on the P1 Laplacian of the unit square: the standard
//! recurrences and one reduction per iteration in f32, with and without Jacobi, each with its
//! checks waited for and overlapped; pipelined CG in f64 beside the standard recurrence, below
//! the attainable accuracy, with an operator that changes, and refused in f32.

use crate::common::ctx;
use parloop::linalg::{Mat, SolveOptions, Sparsity, cg};
use parloop::mesh::unit_square;
use parloop::{Context, Dat, Error, Kernel, Map, Real, Set, SolverFailure};
use std::collections::BTreeMap;
use std::rc::Rc;

/// The P1 Laplacian of the unit square (`n` squares a side) with Dirichlet rows and b = 1
/// inside: the matrix by a par_loop in T, b, and plain Rust's CG in f64 on the same matrix (from
/// the mesh) to 1e-12: its x and iterations.
fn laplacian<T: Real>(ctx: &Context, n: usize) -> (Mat<T>, Dat<T>, Set, Vec<f64>, usize) {
    let m = unit_square(n);
    let vertices = Set::new("vertices", m.nvertices());
    let cells = Set::new("cells", m.ncells());
    let cv = Map::new("cv", &cells, &vertices, 3, &m.cells).unwrap();
    let s = Rc::new(Sparsity::new(ctx, "lap", &vertices, &vertices, &[(&cv, &cv)]).unwrap());
    let a = Mat::<T>::new(ctx, "A", &s).unwrap();
    let x2: Vec<T> = m
        .coords
        .iter()
        .flat_map(|c| [T::from_f64(c[0]), T::from_f64(c[1])])
        .collect();
    let x = ctx.dat("x", &vertices, 2, &x2).unwrap();
    let t = T::DTYPE;
    let k = Kernel::new(
        "lap",
        format!(
            "fn lap(x: ptr<function, array<{t}, 6>>, a: ptr<function, array<{t}, 9>>) {{
            let det = ((*x)[2] - (*x)[0]) * ((*x)[5] - (*x)[1]) - ((*x)[4] - (*x)[0]) * ((*x)[3] - (*x)[1]);
            var gx: array<{t}, 3>; var gy: array<{t}, 3>;
            for (var i = 0u; i < 3u; i++) {{
                let j = (i + 1u) % 3u; let k = (i + 2u) % 3u;
                gx[i] = ((*x)[2u * j + 1u] - (*x)[2u * k + 1u]) / det;
                gy[i] = ((*x)[2u * k] - (*x)[2u * j]) / det;
            }}
            for (var i = 0u; i < 9u; i++) {{
                (*a)[i] += abs(det) / 2.0 * (gx[i / 3u] * gx[i % 3u] + gy[i / 3u] * gy[i % 3u]);
            }}
        }}"
        ),
    );
    ctx.par_loop(&k, &cells, &[x.all(&cv).read(), a.inc(&cv, &cv).unwrap()])
        .unwrap();
    let boundary: Vec<u32> = (0..m.nvertices() as u32)
        .filter(|&v| {
            let c = m.coords[v as usize];
            c[0] == 0.0 || c[0] == 1.0 || c[1] == 0.0 || c[1] == 1.0
        })
        .collect();
    a.zero_rows(ctx, &boundary, T::from_f64(1.0)).unwrap();
    // b = 1 inside, 0 on the boundary.
    let bv: Vec<T> = (0..m.nvertices() as u32)
        .map(|v| T::from_f64(if boundary.contains(&v) { 0.0 } else { 1.0 }))
        .collect();
    let b = ctx.dat("b", &vertices, 1, &bv).unwrap();
    // Plain Rust: the same matrix in f64 from the mesh, the same CG, to 1e-12.
    let nv = m.nvertices();
    let mut rows: Vec<BTreeMap<usize, f64>> = vec![BTreeMap::new(); nv];
    for c in m.cells.chunks_exact(3) {
        let (area, g) = crate::common::p1_element([0, 1, 2].map(|i| m.coords[c[i] as usize]));
        for i in 0..3 {
            for j in 0..3 {
                *rows[c[i] as usize].entry(c[j] as usize).or_insert(0.0) +=
                    area * (g[i][0] * g[j][0] + g[i][1] * g[j][1]);
            }
        }
    }
    for &v in &boundary {
        rows[v as usize] = BTreeMap::from([(v as usize, 1.0)]);
    }
    let mul = |x: &[f64]| -> Vec<f64> {
        rows.iter()
            .map(|r| r.iter().map(|(&c, v)| v * x[c]).sum())
            .collect()
    };
    let dot = |a: &[f64], b: &[f64]| -> f64 { a.iter().zip(b).map(|(x, y)| x * y).sum() };
    let b64: Vec<f64> = bv.iter().map(|v| v.to_f64()).collect();
    let (mut xr, mut r, mut p) = (vec![0.0; nv], b64.clone(), b64.clone());
    let mut rr = dot(&r, &r);
    let mut iterations = 0;
    while rr.sqrt() > 1e-12 * dot(&b64, &b64).sqrt() {
        let q = mul(&p);
        let alpha = rr / dot(&p, &q);
        for i in 0..nv {
            xr[i] += alpha * p[i];
            r[i] -= alpha * q[i];
        }
        let next = dot(&r, &r);
        for i in 0..nv {
            p[i] = r[i] + next / rr * p[i];
        }
        rr = next;
        iterations += 1;
    }
    (a, b, vertices, xr, iterations)
}

/// The P1 Laplacian of the unit square with Dirichlet rows, in plain Rust (f64) and by a
/// par_loop, and CG on both: the standard recurrences, then one reduction per iteration,
/// without and with Jacobi; each with its checks waited for, then overlapping the iterations
/// after them. Pipelined CG is refused in f32 (its recurrences lose the residual there).
#[test]
fn cg_equals_a_plain_rust_cg() {
    let ctx = ctx();
    let (a, b, vertices, xr, iterations) = laplacian::<f32>(&ctx, 16);
    for (single, jacobi) in [(false, false), (true, false), (true, true)] {
        let case = Recurrence {
            single,
            pipelined: false,
            jacobi,
        };
        cg_case(&ctx, &a, &b, &vertices, &xr, iterations, case, 1e-6, 1e-4);
    }
    let u = ctx.dat_zeros::<f32>("u", &vertices, 1).unwrap();
    let opts = SolveOptions {
        pipelined: true,
        ..SolveOptions::default()
    };
    let e = cg(&ctx, &a, &b, &u, None, &opts).err().expect("refused");
    assert!(e.to_string().contains("pipelined runs in f64 only"), "{e}");
}

/// Pipelined CG in f64 (where the adapter has it), without and with Jacobi, against plain
/// Rust on the Laplacian of the test above, and the standard recurrence's iterations.
#[test]
fn pipelined_cg_in_f64_equals_a_plain_rust_cg() {
    let ctx = ctx();
    if !ctx.gpu().f64() {
        return;
    }
    let (a, b, vertices, xr, iterations) = laplacian::<f64>(&ctx, 32);
    let mut counts = Vec::new();
    for (pipelined, jacobi) in [(false, false), (true, false), (false, true), (true, true)] {
        let case = Recurrence {
            single: false,
            pipelined,
            jacobi,
        };
        counts.push(cg_case(
            &ctx, &a, &b, &vertices, &xr, iterations, case, 1e-10, 1e-8,
        ));
    }
    // In exact arithmetic pipelined CG takes the standard recurrence's iterations.
    for pair in counts.chunks(2) {
        assert!(
            pair[0].abs_diff(pair[1]) <= 1,
            "standard, pipelined: {pair:?}"
        );
    }
    // At rtol 1e-12 on 10^4 unknowns pipelined CG's updated residual drifts from the true
    // one (without replacements it stalls near 3e-12, its true residual near 1e-9); replaced
    // by the true one at the checks where it fell 100-fold, it ends as accurate as the
    // standard recurrence, in its iterations.
    let (a, b, vertices, _, _) = laplacian::<f64>(&ctx, 100);
    let tight = |pipelined| {
        let u = ctx.dat_zeros::<f64>("u", &vertices, 1).unwrap();
        let opts = SolveOptions {
            rtol: 1e-12,
            check_every: 5,
            pipelined,
            ..SolveOptions::default()
        };
        cg(&ctx, &a, &b, &u, None, &opts).unwrap()
    };
    let (standard, piped) = (tight(false), tight(true));
    let what = format!("standard {standard:?}\npipelined {piped:?}");
    assert!(
        standard.replacements == 0 && piped.replacements >= 3,
        "{what}"
    );
    assert!(
        piped.true_residual <= 2.0 * standard.true_residual.max(1e-12),
        "{what}"
    );
    assert!(piped.iterations <= standard.iterations + 5, "{what}");
    // Below the accuracy the system reaches (its true residual stops near 2e-12), a
    // replacement finds the updated residual about its own size away from b - A x, and the
    // recurrence restarts from x: the updated residual goes on falling to rtol, as the
    // standard recurrence's does.
    let below = |pipelined, rtol, allow_unconverged| {
        let u = ctx.dat_zeros::<f64>("u", &vertices, 1).unwrap();
        let opts = SolveOptions {
            rtol,
            pipelined,
            allow_unconverged,
            ..SolveOptions::default()
        };
        cg(&ctx, &a, &b, &u, None, &opts)
    };
    let standard = below(false, 1e-14, false).unwrap();
    let piped = below(true, 1e-14, false).unwrap();
    let what = format!("standard {standard:?}\npipelined {piped:?}");
    assert!(piped.restarts >= 1 && piped.converged, "{what}");
    assert!(
        piped.true_residual <= 2.0 * standard.true_residual,
        "{what}"
    );
    assert!(piped.iterations <= standard.iterations * 3 / 2, "{what}");
    // Far below it, restarts that do not halve the true residual stop the solve, long
    // before the limit, with the floor it found; under allow_unconverged x is kept.
    let e = below(true, 1e-20, false)
        .err()
        .expect("a stop at the floor");
    let Error::Solver {
        failure: SolverFailure::NotConverged,
        iterations,
        residual,
        ..
    } = e
    else {
        panic!("{e}");
    };
    let e = e.to_string();
    assert!(
        e.contains("its true residual is no longer falling, near")
            && e.contains("rtol is below the accuracy this system reaches in f64"),
        "{e}"
    );
    assert!(iterations <= 5 * standard.iterations, "{e}\n{what}");
    assert!(residual < 1e-10, "{e}");
    let kept = below(true, 1e-20, true).unwrap();
    assert!(
        !kept.converged && kept.iterations <= 5 * standard.iterations && kept.true_residual < 1e-10,
        "{kept:?}"
    );
    // A warm start (residual 1e-9) converging at its usual rate, stopped by a low limit:
    // the advice is the limit's, not a stall's.
    let u = ctx.dat_zeros::<f64>("u", &vertices, 1).unwrap();
    let warm = SolveOptions {
        rtol: 1e-9,
        ..SolveOptions::default()
    };
    cg(&ctx, &a, &b, &u, None, &warm).unwrap();
    let opts = SolveOptions {
        rtol: 1e-12,
        max_iterations: 20,
        check_every: 1,
        ..SolveOptions::default()
    };
    let e = cg(&ctx, &a, &b, &u, None, &opts).err().expect("the limit");
    let e = e.to_string();
    assert!(
        e.contains("did not converge in 20 iterations") && e.contains("raise max_iterations"),
        "{e}"
    );
    // At the limit it says so.
    let u = ctx.dat_zeros::<f64>("u", &vertices, 1).unwrap();
    let opts = SolveOptions {
        pipelined: true,
        max_iterations: 5,
        ..SolveOptions::default()
    };
    let e = cg(&ctx, &a, &b, &u, None, &opts).err().expect("the limit");
    assert!(
        e.to_string().contains("did not converge in 5 iterations"),
        "{e}"
    );
}

/// An operator that changes under the solve (A x scaled by 1 + amp ((k mod 7) - 3) at its
/// k-th application): pipelined CG's replacement finds the true residual far from the updated
/// one and says so, early or at the limit, instead of a stall to the limit with the advice
/// to raise it. And the standard recurrence's error from an initial x far from the solution
/// names that cause.
#[test]
fn cg_errors_name_a_changed_operator_and_an_initial_x_far_off() {
    let ctx = ctx();
    if !ctx.gpu().f64() {
        return;
    }
    let (a, b, vertices, xr, _) = laplacian::<f64>(&ctx, 32);
    let solve = |amp: f64, max_iterations| {
        let k = std::cell::Cell::new(0u32);
        let op = |ctx: &Context, x: &Dat<f64>, y: &Dat<f64>| -> parloop::Result<()> {
            a.mult(ctx, x, y)?;
            k.set(k.get() + 1);
            ctx.scale(y, 1.0 + amp * f64::from(k.get() % 7) - 3.0 * amp)
        };
        let u = ctx.dat_zeros::<f64>("u", &vertices, 1).unwrap();
        let opts = SolveOptions {
            rtol: 1e-10,
            max_iterations,
            pipelined: true,
            ..SolveOptions::default()
        };
        cg(&ctx, &op, &b, &u, None, &opts).err().expect("an error")
    };
    // Small changes: a replacement restarts without progress far above rounding's reach.
    let e = solve(1e-6, 10_000);
    assert!(
        matches!(e, Error::Solver { failure: SolverFailure::Inaccurate, iterations, .. } if iterations < 500),
        "{e}"
    );
    assert!(e.to_string().contains("not the same linear map"), "{e}");
    // Large ones: no replacement is reached; the limit's true residual tells.
    let e = solve(1e-3, 300);
    let m = e.to_string();
    assert!(
        m.contains("did not converge in 300 iterations")
            && m.contains("far above it")
            && m.contains("not the same linear map"),
        "{m}"
    );
    // A fixed operator from an initial x far from the solution: rounding, which grows with
    // the first residual, leaves the true residual far above the updated one; the error
    // names that cause too.
    // (The solution times 1 + 1e9 (i mod 7): 0 where the boundary rows hold it at 0.)
    let values: Vec<f64> = xr
        .iter()
        .enumerate()
        .map(|(i, x)| x * (1.0 + 1e9 * (i % 7) as f64))
        .collect();
    let u = ctx.dat("u", &vertices, 1, &values).unwrap();
    let opts = SolveOptions {
        rtol: 1e-14,
        ..SolveOptions::default()
    };
    let e = cg(&ctx, &a, &b, &u, None, &opts).err().expect("an error");
    assert!(
        e.to_string()
            .contains("the initial x is far from the solution"),
        "{e}"
    );
}

/// Which CG a case runs.
#[derive(Clone, Copy, Debug)]
struct Recurrence {
    single: bool,
    pipelined: bool,
    jacobi: bool,
}

/// CG on `a` x = `b` to `rtol` with the checks waited for, then overlapping, against plain
/// Rust's `xr` (to `tol` of its largest value) and its `iterations` (to 1e-12, so at least
/// ours); the dispatches per iteration of one reduction per iteration; the same x, bit for
/// bit, and report either way. The iterations taken.
#[allow(clippy::too_many_arguments)]
fn cg_case<T: Real>(
    ctx: &Context,
    a: &Mat<T>,
    b: &Dat<T>,
    vertices: &Set,
    xr: &[f64],
    iterations: usize,
    case: Recurrence,
    rtol: f64,
    tol: f64,
) -> usize {
    let diagonal = a.diagonal(ctx).unwrap();
    let mut waited = None;
    for overlap in [false, true] {
        let what = format!("{} {case:?}, overlap {overlap}", T::DTYPE);
        let u = ctx.dat_zeros::<T>("u", vertices, 1).unwrap();
        let opts = SolveOptions {
            rtol,
            max_iterations: 500,
            check_every: 5,
            single_reduction: case.single,
            pipelined: case.pipelined,
            overlap_checks: Some(overlap),
            ..SolveOptions::default()
        };
        let pc = case
            .jacobi
            .then_some(&diagonal as &dyn parloop::linalg::Preconditioner<T>);
        let before = ctx.stats();
        let report = cg(ctx, a, b, &u, pc, &opts).unwrap_or_else(|e| panic!("{what}: {e}"));
        let dispatches = (ctx.stats().dispatches - before.dispatches) as f64;
        let got = u.data_ro().unwrap().to_vec();
        let scale = xr.iter().fold(0.0f64, |m, v| m.max(v.abs()));
        let diff = got
            .iter()
            .zip(xr)
            .map(|(g, w)| (g.to_f64() - w).abs())
            .fold(0.0, f64::max);
        assert!(
            diff < tol * scale,
            "{what}: CG differs from plain Rust by {diff} (scale {scale})"
        );
        let last = report.residuals.last().unwrap();
        assert!(
            last.1 <= rtol && last.0 == report.iterations,
            "{what}: {report:?}"
        );
        // Fewer iterations than plain Rust's CG to 1e-12.
        assert!(
            report.iterations <= iterations,
            "{what}: {} vs {iterations}",
            report.iterations
        );
        assert!(report.iterations >= 10, "{what}: {report:?}");
        // Per iteration: the updates with z = r / diag(A), y = A x with the dot products,
        // one finalize; the start, the residual checks and the true residual on top (and,
        // overlapping, up to 2 check_every - 1 iterations after convergence).
        let run = report.iterations + if overlap { 2 * opts.check_every } else { 0 };
        let per = dispatches / run as f64;
        if case.single && case.jacobi {
            assert!(per <= 3.6, "{what}: {per} dispatches per iteration");
        }
        // The iterations after convergence change nothing: the same x, bit for bit, and
        // the same report.
        match &waited {
            None => waited = Some((report, got)),
            Some((r, x)) => {
                assert_eq!(r, &report, "{what}");
                assert!(x == &got, "{what}: x differs from the waited-for solve's");
            }
        }
    }
    waited.unwrap().0.iterations
}
