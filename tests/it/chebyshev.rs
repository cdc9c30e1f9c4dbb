//! The Chebyshev preconditioner: on a ring, whose eigenvectors are known, it applies exactly
//! the Chebyshev residual polynomial (written from cos and cosh, not from the recurrence) to
//! each mode, on the interval of its row-sum bound; CG with it solves the Poisson example in
//! fewer iterations than Jacobi-CG, to the same solution; bad matrices are refused.

use crate::common;
use crate::examples::poisson::{Pc, solve_with};

use parloop::linalg::{Chebyshev, ChebyshevOptions, Mat, Preconditioner, SolveOptions, Sparsity};
use parloop::mesh::unit_square;
use parloop::{Kernel, Map, Set};
use std::f64::consts::PI;
use std::rc::Rc;

/// A = the ring's graph Laplacian (2 on the diagonal, -1 to each neighbour) plus `shift` on
/// the diagonal, n nodes, assembled on the device.
fn ring(ctx: &parloop::Context, n: usize, shift: f32) -> Mat<f32> {
    let nodes = Set::new("nodes", n);
    let ends: Vec<u32> = (0..n)
        .flat_map(|i| [i as u32, ((i + 1) % n) as u32])
        .collect();
    let edges = Set::new("edges", n);
    let en = Map::new("en", &edges, &nodes, 2, &ends).unwrap();
    let ids: Vec<u32> = (0..n as u32).collect();
    let own = Map::new("own", &nodes, &nodes, 1, &ids).unwrap();
    let s =
        Rc::new(Sparsity::new(ctx, "ring", &nodes, &nodes, &[(&en, &en), (&own, &own)]).unwrap());
    let a = Mat::<f32>::new(ctx, "ring", &s).unwrap();
    let c = ctx.global("shift", &[shift]).unwrap();
    let edge = Kernel::new(
        "ring_edge",
        "fn ring_edge(m: ptr<function, array<f32, 4>>) {
            (*m)[0] += 1.0; (*m)[1] -= 1.0; (*m)[2] -= 1.0; (*m)[3] += 1.0;
        }",
    );
    ctx.par_loop(&edge, &edges, &[a.inc(&en, &en).unwrap()])
        .unwrap();
    let node = Kernel::new(
        "ring_node",
        "fn ring_node(c: ptr<function, array<f32, 1>>, m: ptr<function, array<f32, 1>>) {
            (*m)[0] += (*c)[0];
        }",
    );
    ctx.par_loop(&node, &nodes, &[c.read(), a.inc(&own, &own).unwrap()])
        .unwrap();
    a
}

/// T_k(x), from cos for |x| <= 1 and cosh outside.
fn chebyshev_t(k: usize, x: f64) -> f64 {
    let k = k as f64;
    if x.abs() <= 1.0 {
        (k * x.acos()).cos()
    } else {
        x.signum().powf(k) * (k * x.abs().acosh()).cosh()
    }
}

#[test]
fn chebyshev_applies_the_residual_polynomial_to_each_mode_of_a_ring() {
    let ctx = common::ctx();
    let (n, shift) = (64usize, 0.05);
    let a = ring(&ctx, n, shift as f32);
    for degree in [1, 3, 4] {
        let o = ChebyshevOptions {
            degree,
            ..ChebyshevOptions::default()
        };
        let m = Chebyshev::new(&ctx, &a, &o).unwrap();
        let (lo, hi) = m.interval();
        // D^-1 A's eigenvalues: (2 + shift - 2 cos(2 pi j / n)) / (2 + shift); the largest
        // at j = n / 2, (4 + shift) / (2 + shift), which is also every row's sum of
        // |a_ij / a_ii|: the bound is sharp here.
        let d = 2.0 + shift;
        let lambda = |j: usize| (d - 2.0 * (2.0 * PI * j as f64 / n as f64).cos()) / d;
        let top = lambda(n / 2);
        assert!(
            (hi - top).abs() <= 1e-6 * top,
            "degree {degree}: interval [{lo}, {hi}] for a top eigenvalue {top}"
        );
        // z = M^-1 (A v) = (1 - r(lambda)) v for an eigenvector v, where r is the residual
        // polynomial T_k((theta - lambda) / delta) / T_k(theta / delta).
        let (theta, delta) = (0.5 * (hi + lo), 0.5 * (hi - lo));
        let set = a.sparsity().rows();
        for j in [0, 1, 5, 16, 31, 32] {
            let v: Vec<f64> = (0..n)
                .map(|i| (2.0 * PI * (j * i) as f64 / n as f64).cos())
                .collect();
            let av: Vec<f32> = v.iter().map(|x| (d * lambda(j) * x) as f32).collect();
            let r = ctx.dat("r", set, 1, &av).unwrap();
            let z = ctx.dat_zeros::<f32>("z", set, 1).unwrap();
            m.apply(&ctx, &r, &z).unwrap();
            let got = z.data_ro().unwrap().to_vec();
            let l = lambda(j);
            let factor =
                1.0 - chebyshev_t(degree, (theta - l) / delta) / chebyshev_t(degree, theta / delta);
            for (i, (&g, &x)) in got.iter().zip(&v).enumerate() {
                assert!(
                    (g as f64 - factor * x).abs() <= 2e-5,
                    "degree {degree}, mode {j} (lambda {l}), node {i}: {g} against {}",
                    factor * x
                );
            }
        }
    }
}

#[test]
fn chebyshev_cg_takes_fewer_iterations_than_jacobi_cg_to_the_same_solution() {
    let ctx = common::ctx();
    let opts = SolveOptions {
        rtol: 1e-6,
        check_every: 1,
        ..SolveOptions::default()
    };
    let mesh = unit_square(48);
    let solve = |pc| solve_with::<f32>(&ctx, &mesh, None, &opts, pc).unwrap();
    let (cheb, jacobi) = (solve(Pc::Chebyshev), solve(Pc::Jacobi));
    let (c, j) = (cheb.report.iterations, jacobi.report.iterations);
    assert!(cheb.report.converged && jacobi.report.converged);
    // Each Chebyshev application (degree 3) is 2 products with A.
    assert!(2 * c <= j, "Chebyshev-CG {c} iterations, Jacobi-CG {j}");
    // The same discrete solution: the errors against the manufactured one agree.
    let (ec, ej) = (cheb.l2_error, jacobi.l2_error);
    assert!((ec - ej).abs() <= 0.02 * ej, "L2 errors {ec} and {ej}");
}

#[test]
fn chebyshev_refuses_zero_diagonals_stale_matrices_and_bad_options() {
    let ctx = common::ctx();
    // Zeros on the diagonal: the ring with shift -2.
    let z = ring(&ctx, 8, -2.0);
    let e = Chebyshev::new(&ctx, &z, &ChebyshevOptions::default())
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("Mat `ring`") && e.contains("one sign"), "{e}");
    let a = ring(&ctx, 8, 0.5);
    let bad = ChebyshevOptions {
        lower: 1.5,
        ..ChebyshevOptions::default()
    };
    let e = Chebyshev::new(&ctx, &a, &bad).err().unwrap().to_string();
    assert!(e.contains("lower in (0, 1)"), "{e}");
    // Stale: re-assembled after the estimate.
    let m = Chebyshev::new(&ctx, &a, &ChebyshevOptions::default()).unwrap();
    a.zero(&ctx).unwrap();
    let set = a.sparsity().rows();
    let r = ctx.dat("r", set, 1, &[1.0f32; 8]).unwrap();
    let out = ctx.dat_zeros::<f32>("z", set, 1).unwrap();
    let e = m.apply(&ctx, &r, &out).err().unwrap().to_string();
    assert!(e.contains("changed since"), "{e}");
}
