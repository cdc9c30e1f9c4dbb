//! Restarted GMRES against Gaussian elimination in plain Rust (f64) on the nonsymmetric
//! convection-diffusion system, with and without Jacobi and with short and long restarts; on a
//! permutation BiCGStab breaks down on; its exact iteration independent of `check_every`; a
//! singular matrix as a breakdown and a bad restart as a usage error; the limit below the
//! accuracy f32 reaches.

use crate::common::ctx;
use crate::krylov::{max_diff, problem, solve_dense};
use parloop::linalg::{Mat, Preconditioner, SolveOptions, Sparsity, bicgstab, gmres};
use parloop::{Error, Kernel, Map, Set, SolverFailure};
use std::rc::Rc;

#[test]
fn gmres_solves_convection_diffusion_as_gaussian_elimination_does() {
    let ctx = ctx();
    let p = problem(&ctx, 12);
    let want = solve_dense(p.dense.clone(), p.rhs.clone());
    let diag = p.a.diagonal(&ctx).unwrap();
    let mut counts = Vec::new();
    for restart in [8, 30] {
        for jacobi in [None, Some(&diag as &dyn Preconditioner<f32>)] {
            let opts = SolveOptions {
                rtol: 1e-6,
                restart,
                ..SolveOptions::default()
            };
            let x = ctx.dat_zeros::<f32>("x", &p.vertices, 1).unwrap();
            let report = gmres(&ctx, &p.a, &p.b, &x, jacobi, &opts).unwrap();
            let what = format!("restart {restart}, Jacobi {}", jacobi.is_some());
            let d = max_diff(&x.data_ro().unwrap(), &want);
            assert!(d < 1e-4, "{what}: x differs by {d} ({report:?})");
            assert!(
                report.converged && report.true_residual < 1e-5,
                "{what}: {report:?}"
            );
            counts.push((restart, jacobi.is_some(), report.iterations));
        }
    }
    // GMRES(30) never takes more steps than GMRES(8): it minimises over a larger space.
    for pc in [false, true] {
        let of = |r| counts.iter().find(|c| c.0 == r && c.1 == pc).unwrap().2;
        assert!(of(30) <= of(8), "{counts:?}");
        // More than one cycle of 8 (the restart ran).
        assert!(of(8) > 8, "{counts:?}");
    }
}

/// [[0, 1], [1, 0]] x = (1, 0): r^.v = 0 at BiCGStab's first step; GMRES solves it in two.
#[test]
fn gmres_solves_what_bicgstab_breaks_down_on_and_reports_singular_matrices() {
    let ctx = ctx();
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
    let opts = SolveOptions {
        check_every: 1,
        ..SolveOptions::default()
    };
    let x = ctx.dat_zeros::<f32>("x", &s, 1).unwrap();
    let e = bicgstab(&ctx, &a, &b, &x, None, &opts)
        .err()
        .expect("breakdown");
    assert!(
        matches!(
            e,
            Error::Solver {
                failure: SolverFailure::BrokeDown,
                ..
            }
        ),
        "{e:?}"
    );
    let x = ctx.dat_zeros::<f32>("x2", &s, 1).unwrap();
    let report = gmres(&ctx, &a, &b, &x, None, &opts).unwrap();
    assert_eq!(report.iterations, 2, "{report:?}");
    assert_eq!(&*x.data_ro().unwrap(), &[0.0, 1.0]);
    // The singular [[1, 1], [1, 1]] with b = (1, 0) (not in its range): every slot of the
    // pattern (the diagonal's too) set to 1.
    let singular = Mat::<f32>::new(&ctx, "S", &sp).unwrap();
    ctx.fill(&singular.values, 1.0).unwrap();
    let x = ctx.dat_zeros::<f32>("x3", &s, 1).unwrap();
    let e = gmres(&ctx, &singular, &b, &x, None, &opts)
        .err()
        .expect("singular");
    assert!(
        matches!(
            e,
            Error::Solver {
                failure: SolverFailure::BrokeDown,
                ..
            }
        ),
        "{e:?}"
    );
    assert!(
        e.to_string()
            .contains("gmres broke down between iterations"),
        "{e}"
    );
    let bad = SolveOptions {
        restart: 0,
        ..SolveOptions::default()
    };
    let e = gmres(&ctx, &a, &b, &x, None, &bad)
        .err()
        .expect("restart 0");
    assert!(e.to_string().contains("restart must be in 1..=256"), "{e}");
}

/// Checked every step or every seventh, GMRES stops at the same step with the same x.
#[test]
fn the_gmres_iteration_does_not_depend_on_check_every() {
    let ctx = ctx();
    let p = problem(&ctx, 10);
    let diag = p.a.diagonal(&ctx).unwrap();
    for pc in [None, Some(&diag as &dyn Preconditioner<f32>)] {
        let run = |every: usize| {
            let x = ctx.dat_zeros::<f32>("x", &p.vertices, 1).unwrap();
            let opts = SolveOptions {
                rtol: 1e-5,
                check_every: every,
                restart: 12,
                ..SolveOptions::default()
            };
            let report = gmres(&ctx, &p.a, &p.b, &x, pc, &opts).unwrap();
            (report, x.data_ro().unwrap().to_vec())
        };
        let (each, x_each) = run(1);
        let (seventh, x_seventh) = run(7);
        assert_eq!(each.iterations, seventh.iterations, "{seventh:?}");
        assert_eq!(x_each, x_seventh);
        let n = each.residuals.len();
        assert_eq!(n, each.iterations + 1, "{each:?}");
        assert!(
            each.residuals[..n - 1].iter().all(|r| r.1 > 1e-5) && each.residuals[n - 1].1 <= 1e-5,
            "{each:?}"
        );
        // The residual GMRES minimises never grows within a cycle (of 12 steps).
        let cycle = |it: usize| it.saturating_sub(1) / 12;
        let within = each
            .residuals
            .windows(2)
            .filter(|w| cycle(w[0].0) == cycle(w[1].0));
        assert!(within.clone().all(|w| w[1].1 <= w[0].1), "{each:?}");
        assert!(within.count() >= 8, "{each:?}");
    }
}

/// GMRES(8) in f32 asked for rtol 1e-9 on convection-diffusion: its residual stops falling
/// near 1e-8 (the true residual near 1e-6), and the iteration limit's error says that rtol
/// may be below the accuracy the system reaches, not only to raise the limit.
#[test]
fn a_limit_below_the_attainable_accuracy_says_so() {
    let ctx = ctx();
    let p = problem(&ctx, 12);
    let opts = SolveOptions {
        rtol: 1e-9,
        max_iterations: 2000,
        restart: 8,
        ..SolveOptions::default()
    };
    let x = ctx.dat_zeros::<f32>("x", &p.vertices, 1).unwrap();
    let e = gmres(&ctx, &p.a, &p.b, &x, None, &opts).unwrap_err();
    assert!(matches!(
        e,
        Error::Solver {
            failure: SolverFailure::NotConverged,
            iterations: 2000,
            ..
        }
    ));
    let e = e.to_string();
    assert!(
        e.contains("rtol may be below the accuracy this system reaches in f32"),
        "{e}"
    );
}
