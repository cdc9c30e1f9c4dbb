//! BiCGStab on a nonsymmetric system (P1 convection-diffusion with Dirichlet rows, assembled
//! by a par_loop) against Gaussian elimination in plain Rust (f64), with and without Jacobi;
//! a matrix-free operator (a closure) against the assembled matrix; and BiCGStab's breakdown
//! and iteration limit as errors.

use crate::common;

use common::ctx;
use parloop::linalg::{Mat, Preconditioner, SolveOptions, Sparsity, bicgstab};
use parloop::mesh::unit_square;
use parloop::{Context, Dat, Error, Kernel, Map, Set, SolverFailure};
use std::rc::Rc;

/// The velocity of the convection term.
const BETA: [f64; 2] = [6.0, 2.0];

/// P1 on a triangle: grad phi_i . grad phi_j |K| + (|K| / 3) beta . grad phi_j.
const ELEMENT: &str = "
fn element(x: ptr<function, array<f32, 6>>, a: ptr<function, array<f32, 9>>) {
    let det = ((*x)[2] - (*x)[0]) * ((*x)[5] - (*x)[1]) - ((*x)[4] - (*x)[0]) * ((*x)[3] - (*x)[1]);
    var gx: array<f32, 3>;
    var gy: array<f32, 3>;
    for (var i = 0u; i < 3u; i++) {
        let j = (i + 1u) % 3u;
        let k = (i + 2u) % 3u;
        gx[i] = ((*x)[2u * j + 1u] - (*x)[2u * k + 1u]) / det;
        gy[i] = ((*x)[2u * k] - (*x)[2u * j]) / det;
    }
    let area = abs(det) / 2.0;
    for (var i = 0u; i < 3u; i++) {
        for (var j = 0u; j < 3u; j++) {
            (*a)[3u * i + j] += area * (gx[i] * gx[j] + gy[i] * gy[j])
                + area / 3.0 * (6.0 * gx[j] + 2.0 * gy[j]);
        }
    }
}
";

pub(crate) struct Problem {
    pub a: Mat<f32>,
    pub b: Dat<f32>,
    pub vertices: Set,
    pub dense: Vec<Vec<f64>>,
    pub rhs: Vec<f64>,
}

/// The system on the n x n unit square: b = 1 inside, 0 on the boundary (Dirichlet rows).
pub(crate) fn problem(ctx: &Context, n: usize) -> Problem {
    problem_with(ctx, n, BETA)
}

/// The system with the velocity `beta` (0: the Laplacian, symmetric on the interior).
pub(crate) fn problem_with(ctx: &Context, n: usize, beta: [f64; 2]) -> Problem {
    let m = unit_square(n);
    let nv = m.nvertices();
    let vertices = Set::new("vertices", nv);
    let cells = Set::new("cells", m.ncells());
    let cv = Map::new("cv", &cells, &vertices, 3, &m.cells).unwrap();
    let sp = Rc::new(Sparsity::new(&ctx, "A", &vertices, &vertices, &[(&cv, &cv)]).unwrap());
    let a = Mat::<f32>::new(ctx, "A", &sp).unwrap();
    let x = ctx.dat("x", &vertices, 2, &m.coords_f32()).unwrap();
    let convection = format!("{:?} * gx[j] + {:?} * gy[j]", beta[0], beta[1]);
    let k = Kernel::new(
        "element",
        ELEMENT.replace("6.0 * gx[j] + 2.0 * gy[j]", &convection),
    );
    ctx.par_loop(&k, &cells, &[x.all(&cv).read(), a.inc(&cv, &cv).unwrap()])
        .unwrap();
    let boundary: Vec<u32> = (0..nv as u32)
        .filter(|&v| {
            let c = m.coords[v as usize];
            c[0] == 0.0 || c[0] == 1.0 || c[1] == 0.0 || c[1] == 1.0
        })
        .collect();
    a.zero_rows(ctx, &boundary, 1.0).unwrap();
    let rhs: Vec<f64> = (0..nv as u32)
        .map(|v| if boundary.contains(&v) { 0.0 } else { 1.0 })
        .collect();
    let bf: Vec<f32> = rhs.iter().map(|&v| v as f32).collect();
    let b = ctx.dat("b", &vertices, 1, &bf).unwrap();
    // The same matrix in plain Rust, f64.
    let mut dense = vec![vec![0.0; nv]; nv];
    for c in m.cells.chunks_exact(3) {
        let (area, g) = crate::common::p1_element([0, 1, 2].map(|i| m.coords[c[i] as usize]));
        for i in 0..3 {
            for j in 0..3 {
                dense[c[i] as usize][c[j] as usize] += area
                    * (g[i][0] * g[j][0] + g[i][1] * g[j][1])
                    + area / 3.0 * (beta[0] * g[j][0] + beta[1] * g[j][1]);
            }
        }
    }
    for &v in &boundary {
        dense[v as usize] = vec![0.0; nv];
        dense[v as usize][v as usize] = 1.0;
    }
    Problem {
        a,
        b,
        vertices,
        dense,
        rhs,
    }
}

/// Gaussian elimination with partial pivoting.
pub(crate) fn solve_dense(mut a: Vec<Vec<f64>>, mut b: Vec<f64>) -> Vec<f64> {
    let n = b.len();
    for c in 0..n {
        let p = (c..n)
            .max_by(|&i, &j| a[i][c].abs().total_cmp(&a[j][c].abs()))
            .unwrap();
        a.swap(c, p);
        b.swap(c, p);
        for r in c + 1..n {
            let f = a[r][c] / a[c][c];
            if f != 0.0 {
                for k in c..n {
                    a[r][k] -= f * a[c][k];
                }
                b[r] -= f * b[c];
            }
        }
    }
    let mut x = vec![0.0; n];
    for r in (0..n).rev() {
        let s: f64 = (r + 1..n).map(|k| a[r][k] * x[k]).sum();
        x[r] = (b[r] - s) / a[r][r];
    }
    x
}

pub(crate) fn max_diff(got: &[f32], want: &[f64]) -> f64 {
    let scale = want.iter().fold(0.0f64, |m, v| m.max(v.abs()));
    got.iter()
        .zip(want)
        .map(|(g, w)| (*g as f64 - w).abs())
        .fold(0.0, f64::max)
        / scale
}

#[test]
fn bicgstab_solves_convection_diffusion_as_gaussian_elimination_does() {
    let ctx = ctx();
    let p = problem(&ctx, 12);
    let want = solve_dense(p.dense.clone(), p.rhs.clone());
    // Nonsymmetric among the interior rows (the Dirichlet rows alone would make it so).
    let interior: Vec<usize> = (0..p.rhs.len()).filter(|&v| p.rhs[v] != 0.0).collect();
    let skew = interior
        .iter()
        .flat_map(|&i| interior.iter().map(move |&j| (i, j)))
        .any(|(i, j)| (p.dense[i][j] - p.dense[j][i]).abs() > 0.1);
    assert!(skew, "the test needs a nonsymmetric matrix");
    let opts = SolveOptions {
        rtol: 1e-6,
        ..SolveOptions::default()
    };
    let diag = p.a.diagonal(&ctx).unwrap();
    for jacobi in [None, Some(&diag as &dyn Preconditioner<f32>)] {
        let x = ctx.dat_zeros::<f32>("x", &p.vertices, 1).unwrap();
        let report = bicgstab(&ctx, &p.a, &p.b, &x, jacobi, &opts).unwrap();
        let d = max_diff(&x.data_ro().unwrap(), &want);
        let what = if jacobi.is_some() { "Jacobi" } else { "plain" };
        assert!(
            d < 1e-4,
            "{what}: x differs from Gaussian elimination by {d} ({report:?})"
        );
        assert!(report.true_residual < 1e-5, "{what}: {report:?}");
        assert!(report.iterations >= 5, "{what}: {report:?}");
    }
}

/// A matrix-free operator (a closure recording the product) gives what the matrix gives.
#[test]
fn a_closure_as_the_operator() {
    let ctx = ctx();
    let p = problem(&ctx, 8);
    let op = |ctx: &Context, x: &Dat<f32>, y: &Dat<f32>| p.a.mult(ctx, x, y);
    let (x1, x2) = (
        ctx.dat_zeros::<f32>("x1", &p.vertices, 1).unwrap(),
        ctx.dat_zeros::<f32>("x2", &p.vertices, 1).unwrap(),
    );
    let opts = SolveOptions::default();
    let r1 = bicgstab(&ctx, &op, &p.b, &x1, None, &opts).unwrap();
    let r2 = bicgstab(&ctx, &p.a, &p.b, &x2, None, &opts).unwrap();
    assert_eq!(r1, r2);
    assert_eq!(&*x1.data_ro().unwrap(), &*x2.data_ro().unwrap());
}

/// Dirichlet data in b only and x = 0: r^ = r0 is a left eigenvector of A, r^.r becomes
/// exactly 0 after the first step while r does not, and BiCGStab restarts with r^ = r.
#[test]
fn a_restart_when_r_hat_becomes_orthogonal_to_r() {
    let ctx = ctx();
    let s = Set::new("s", 3);
    let e = Set::new("e", 6);
    let rows = Map::new("rows", &e, &s, 1, &[0, 1, 1, 1, 2, 2]).unwrap();
    let cols = Map::new("cols", &e, &s, 1, &[0, 0, 1, 2, 1, 2]).unwrap();
    let sp = Rc::new(Sparsity::new(&ctx, "A", &s, &s, &[(&rows, &cols)]).unwrap());
    let a = Mat::<f32>::new(&ctx, "A", &sp).unwrap();
    let vals = ctx
        .dat("vals", &e, 1, &[1.0f32, 1.0, 0.01, 1.0, -1.0, 0.01])
        .unwrap();
    let put = Kernel::new(
        "put",
        "fn put(v: ptr<function, array<f32, 1>>, a: ptr<function, array<f32, 1>>) { (*a)[0] += (*v)[0]; }",
    );
    ctx.par_loop(&put, &e, &[vals.read(), a.inc(&rows, &cols).unwrap()])
        .unwrap();
    let b = ctx.dat("b", &s, 1, &[1.0f32, 0.0, 0.0]).unwrap();
    let x = ctx.dat_zeros::<f32>("x", &s, 1).unwrap();
    let report = bicgstab(&ctx, &a, &b, &x, None, &SolveOptions::default()).unwrap();
    assert!(report.restarts >= 1, "{report:?}");
    let dense = vec![
        vec![1.0, 0.0, 0.0],
        vec![1.0, 0.01, 1.0],
        vec![0.0, -1.0, 0.01],
    ];
    let want = solve_dense(dense, vec![1.0, 0.0, 0.0]);
    let d = max_diff(&x.data_ro().unwrap(), &want);
    // The matrix's condition number is about 100: f32 gives x to about 100 x 6e-8.
    assert!(
        d < 1e-4,
        "x differs from Gaussian elimination by {d} ({report:?})"
    );
}

/// The identity: solved exactly in the first step, the iteration the report gives; the nine
/// steps after it until the check are zero steps, not 0/0.
#[test]
fn the_identity_with_the_default_check() {
    let ctx = ctx();
    let s = Set::new("s", 4);
    let id = Map::new("id", &s, &s, 1, &[0, 1, 2, 3]).unwrap();
    let sp = Rc::new(Sparsity::new(&ctx, "I", &s, &s, &[(&id, &id)]).unwrap());
    let a = Mat::<f32>::new(&ctx, "I", &sp).unwrap();
    ctx.fill(&a.values, 1.0).unwrap();
    let b = ctx.dat("b", &s, 1, &[1.0f32, 2.0, 3.0, 4.0]).unwrap();
    let x = ctx.dat_zeros::<f32>("x", &s, 1).unwrap();
    let report = bicgstab(&ctx, &a, &b, &x, None, &SolveOptions::default()).unwrap();
    assert_eq!(report.iterations, 1, "{report:?}");
    assert_eq!(report.true_residual, 0.0, "{report:?}");
    assert_eq!(&*x.data_ro().unwrap(), &[1.0, 2.0, 3.0, 4.0]);
    let e = bicgstab(&ctx, &a, &b, &b, None, &SolveOptions::default())
        .err()
        .expect("aliased")
        .to_string();
    assert!(e.contains("`b` is given twice"), "{e}");
}

#[test]
fn breakdown_and_limit_are_errors_and_a_capped_solve_reports() {
    let ctx = ctx();
    // The permutation [[0, 1], [1, 0]] with b = (1, 0): r^.v = 0 at the first step.
    let s = Set::new("s", 2);
    let swap = Map::new("swap", &s, &s, 1, &[1, 0]).unwrap();
    let id = Map::new("id", &s, &s, 1, &[0, 1]).unwrap();
    let sp = Rc::new(Sparsity::new(&ctx, "P", &s, &s, &[(&id, &swap)]).unwrap());
    let a = Mat::<f32>::new(&ctx, "P", &sp).unwrap();
    let k = Kernel::new(
        "one",
        "fn one(a: ptr<function, array<f32, 1>>) { (*a)[0] += 1.0; }",
    );
    ctx.par_loop(&k, &s, &[a.inc(&id, &swap).unwrap()]).unwrap();
    let b = ctx.dat("b", &s, 1, &[1.0f32, 0.0]).unwrap();
    let x = ctx.dat_zeros::<f32>("x", &s, 1).unwrap();
    let opts = SolveOptions {
        check_every: 1,
        ..SolveOptions::default()
    };
    let e = bicgstab(&ctx, &a, &b, &x, None, &opts)
        .err()
        .expect("breakdown")
        .to_string();
    assert!(
        e.contains("bicgstab broke down between iterations 0 and 1"),
        "{e}"
    );
    let p = problem(&ctx, 8);
    let x = ctx.dat_zeros::<f32>("x", &p.vertices, 1).unwrap();
    let opts = SolveOptions {
        max_iterations: 3,
        ..SolveOptions::default()
    };
    let e = bicgstab(&ctx, &p.a, &p.b, &x, None, &opts)
        .err()
        .expect("limit");
    assert!(
        matches!(
            e,
            Error::Solver {
                solver: "bicgstab",
                failure: SolverFailure::NotConverged,
                iterations: 3,
                ..
            }
        ),
        "{e:?}"
    );
    let e = e.to_string();
    assert!(
        e.contains("bicgstab did not converge in 3 iterations"),
        "{e}"
    );
    // Capped (an inexact Newton step's solve): the report, marked not converged, and the
    // iterate in x, its true residual below the start's and above rtol.
    let capped = SolveOptions {
        allow_unconverged: true,
        check_every: 1,
        ..opts
    };
    let x = ctx.dat_zeros::<f32>("x capped", &p.vertices, 1).unwrap();
    let report = bicgstab(&ctx, &p.a, &p.b, &x, None, &capped).unwrap();
    assert!(!report.converged, "{report:?}");
    assert_eq!(report.iterations, 3, "{report:?}");
    assert_eq!(report.residuals.len(), 4, "{report:?}");
    let last = report.residuals[3].1;
    assert!(
        last > capped.rtol && last < report.residuals[0].1,
        "{report:?}"
    );
    // The true residual is that of x: b - A x recomputed here.
    let xv = x.data_ro().unwrap().to_vec();
    let mut ax = vec![0.0f64; xv.len()];
    for (i, row) in p.dense.iter().enumerate() {
        ax[i] = row.iter().zip(&xv).map(|(a, x)| a * f64::from(*x)).sum();
    }
    let norm = |v: &mut dyn Iterator<Item = f64>| v.map(|x| x * x).sum::<f64>().sqrt();
    let want =
        norm(&mut p.rhs.iter().zip(&ax).map(|(b, ax)| b - ax)) / norm(&mut p.rhs.iter().copied());
    assert!(
        (report.true_residual - want).abs() <= 1e-3 * want,
        "{} against {want}",
        report.true_residual
    );
}
