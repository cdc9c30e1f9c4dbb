//! What a solve reports, for CG and BiCGStab: the exact iteration at which the tolerance was
//! met (checked every iteration against checked every seventh: the same count, the same x to
//! the bit), and a true residual far above the tolerance as an error (or a report marked not
//! converged when the caller takes unconverged iterates).

use crate::common::ctx;
use crate::krylov::{problem, problem_with};
use parloop::linalg::{Preconditioner, SolveOptions, SolveReport, bicgstab, cg};
use parloop::{Context, Dat, Error, SolverFailure};
use std::cell::Cell;

type Solver = fn(
    &Context,
    &dyn parloop::linalg::Operator<f32>,
    &Dat<f32>,
    &Dat<f32>,
    Option<&dyn Preconditioner<f32>>,
    &SolveOptions,
) -> parloop::Result<SolveReport>;

/// BiCGStab on convection-diffusion, CG on the Laplacian, each with and without Jacobi.
#[test]
fn the_exact_iteration_does_not_depend_on_check_every() {
    let ctx = ctx();
    let solvers: [(&str, Solver, [f64; 2]); 2] =
        [("bicgstab", bicgstab, [6.0, 2.0]), ("cg", cg, [0.0, 0.0])];
    for (name, solve, beta) in solvers {
        let p = problem_with(&ctx, 12, beta);
        let diag = p.a.diagonal(&ctx).unwrap();
        for pc in [None, Some(&diag as &dyn Preconditioner<f32>)] {
            let run = |every: usize| {
                let x = ctx.dat_zeros::<f32>("x", &p.vertices, 1).unwrap();
                let opts = SolveOptions {
                    rtol: 1e-4,
                    check_every: every,
                    ..SolveOptions::default()
                };
                let report = solve(&ctx, &p.a, &p.b, &x, pc, &opts).unwrap();
                (report, x.data_ro().unwrap().to_vec())
            };
            let (each, x_each) = run(1);
            let (seventh, x_seventh) = run(7);
            let what = format!("{name} (Jacobi: {})", pc.is_some());
            assert_eq!(each.iterations, seventh.iterations, "{what}: {seventh:?}");
            assert_eq!(x_each, x_seventh, "{what}");
            // Checked every iteration, the residuals are the whole history: above rtol until
            // the last, which is the report's iteration.
            let n = each.residuals.len();
            assert_eq!(n, each.iterations + 1, "{what}: {each:?}");
            assert!(
                each.residuals[..n - 1].iter().all(|r| r.1 > 1e-4)
                    && each.residuals[n - 1].1 <= 1e-4,
                "{what}: {each:?}"
            );
            let last = seventh.residuals.last().unwrap();
            assert_eq!(last.0, seventh.iterations, "{what}: {seventh:?}");
            assert_eq!(last.1, each.residuals[n - 1].1, "{what}");
        }
    }
}

/// An operator that is not one linear map: its first application (the initial residual, from
/// x0 != 0) is 2 A x, the others A x. The updated residual converges to A e = b - 2 A x0, so
/// x = A^-1 b - x0 and the true residual is ||A x0|| / ||b||: far above rtol.
#[test]
fn a_true_residual_far_above_rtol_is_an_error_or_an_unconverged_report() {
    let ctx = ctx();
    let p = problem(&ctx, 8);
    let calls = Cell::new(0);
    let op = |ctx: &Context, x: &Dat<f32>, y: &Dat<f32>| {
        calls.set(calls.get() + 1);
        p.a.mult(ctx, x, y)?;
        if calls.get() == 1 {
            ctx.scale(y, 2.0)?;
        }
        Ok(())
    };
    let nv = p.rhs.len();
    let x0: Vec<f32> = (0..nv).map(|i| (i % 5) as f32 / 5.0).collect();
    for allow in [false, true] {
        calls.set(0);
        let x = ctx.dat("x", &p.vertices, 1, &x0).unwrap();
        let opts = SolveOptions {
            rtol: 1e-5,
            allow_unconverged: allow,
            ..SolveOptions::default()
        };
        match bicgstab(&ctx, &op, &p.b, &x, None, &opts) {
            Err(
                e @ Error::Solver {
                    failure: SolverFailure::Inaccurate,
                    ..
                },
            ) if !allow => {
                let m = e.to_string();
                assert!(
                    m.contains("bicgstab met rtol 1e-5 at iteration")
                        && m.contains("but the true residual")
                        && m.contains("not the same linear map"),
                    "{m}"
                );
            }
            Ok(report) if allow => {
                assert!(!report.converged, "{report:?}");
                assert!(report.true_residual > 1e-2, "{report:?}");
                assert!(report.residuals.last().unwrap().1 <= 1e-5, "{report:?}");
            }
            other => panic!("allow_unconverged {allow}: {other:?}"),
        }
    }
}

/// A solve inside the operator (a Schur complement's inner solve, here an unrelated system
/// with a 1000 times larger right-hand side) leaves the outer solve as it was: each solve's
/// kernels read its own tolerance.
#[test]
fn a_solve_inside_the_operator_leaves_the_outer_solve_alone() {
    let ctx = ctx();
    let p = problem_with(&ctx, 12, [0.0, 0.0]);
    let inner = problem_with(&ctx, 6, [0.0, 0.0]);
    let big = ctx.dat_zeros::<f32>("1000 b", &inner.vertices, 1).unwrap();
    ctx.copy(&inner.b, &big).unwrap();
    ctx.scale(&big, 1000.0).unwrap();
    let solves = Cell::new(0);
    let nested = |ctx: &Context, x: &Dat<f32>, y: &Dat<f32>| {
        p.a.mult(ctx, x, y)?;
        let z = ctx.dat_zeros::<f32>("inner x", &inner.vertices, 1)?;
        cg(ctx, &inner.a, &big, &z, None, &SolveOptions::default())?;
        solves.set(solves.get() + 1);
        Ok(())
    };
    let plain = |ctx: &Context, x: &Dat<f32>, y: &Dat<f32>| p.a.mult(ctx, x, y);
    let opts = SolveOptions {
        rtol: 1e-6,
        max_iterations: 400,
        ..SolveOptions::default()
    };
    let run = |op: &dyn parloop::linalg::Operator<f32>| {
        let x = ctx.dat_zeros::<f32>("x", &p.vertices, 1).unwrap();
        let report = cg(&ctx, op, &p.b, &x, None, &opts).unwrap();
        (report, x.data_ro().unwrap().to_vec())
    };
    let (alone, x_alone) = run(&plain);
    let (with, x_with) = run(&nested);
    assert!(solves.get() > 10, "{}", solves.get());
    assert_eq!(alone.iterations, with.iterations, "{alone:?} {with:?}");
    assert_eq!(x_alone, x_with);
}
