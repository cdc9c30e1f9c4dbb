//! Algebraic multigrid as CG's preconditioner: the Poisson example's manufactured solution
//! solved with the error falling as h^2, in iteration counts that stay flat as the mesh is
//! refined (Jacobi's double with each refinement); and the matrices AMG refuses.

use crate::common;
use crate::examples::poisson::{Pc, solve_with};

use parloop::linalg::{Amg, AmgOptions, Mat, SolveOptions, Sparsity};
use parloop::mesh::unit_square;
use parloop::{Error, Map, Set};
use std::rc::Rc;

#[test]
fn amg_cg_iterations_stay_flat_as_the_mesh_is_refined() {
    let ctx = common::ctx();
    let opts = SolveOptions {
        rtol: 1e-6,
        check_every: 1,
        ..SolveOptions::default()
    };
    let (mut counts, mut errors) = (Vec::new(), Vec::new());
    for n in [16, 32, 64, 128] {
        let solve = |pc| solve_with::<f32>(&ctx, &unit_square(n), None, &opts, pc).unwrap();
        let (amg, jacobi) = (solve(Pc::Amg), solve(Pc::Jacobi));
        // In f32 the recomputed residual b - A x stops near cond(A) eps, above rtol, whatever
        // the preconditioner: Jacobi's is the reference.
        let (ta, tj) = (amg.report.true_residual, jacobi.report.true_residual);
        assert!(
            ta <= 2.0 * tj.max(opts.rtol),
            "n {n}: true residuals {ta} (AMG), {tj} (Jacobi)"
        );
        counts.push((amg.report.iterations, jacobi.report.iterations));
        errors.push(amg.l2_error);
    }
    // The manufactured solution's error falls as h^2: the solves are right.
    for (k, e) in errors.windows(2).enumerate() {
        let rate = (e[0] / e[1]).log2();
        assert!(
            (1.8..2.2).contains(&rate),
            "refinement {k}: rate {rate} ({errors:?})"
        );
    }
    let amg: Vec<usize> = counts.iter().map(|c| c.0).collect();
    let (lo, hi) = (amg.iter().min().unwrap(), amg.iter().max().unwrap());
    // (AMG, Jacobi) iterations at n = 16, 32, 64, 128.
    assert!(*hi <= 15 && *hi <= lo + 4, "{counts:?}");
    // Jacobi-CG's grow with the mesh (about 2x per refinement): the comparison means
    // something.
    assert!(
        counts[3].1 >= 4 * counts[0].1 && counts[3].1 > 5 * hi,
        "{counts:?}"
    );
}

#[test]
fn amg_refuses_block_rectangular_and_zero_diagonal_matrices() {
    let ctx = common::ctx();
    let cells = Set::new("cells", 2);
    let nodes = Set::new("nodes", 3);
    let cn = Map::new("cn", &cells, &nodes, 2, &[0, 1, 1, 2]).unwrap();
    let s = Rc::new(Sparsity::new(&ctx, "S", &nodes, &nodes, &[(&cn, &cn)]).unwrap());
    let block = Mat::<f32>::blocked(&ctx, "B", &s, 2).unwrap();
    let e = Amg::new(&ctx, &block, &AmgOptions::default())
        .err()
        .unwrap();
    assert!(e.to_string().contains("AMG takes scalar matrices"), "{e}");
    // A zero matrix: row 0 has no nonzero diagonal entry.
    let zero = Mat::<f32>::new(&ctx, "Z", &s).unwrap();
    let e = Amg::new(&ctx, &zero, &AmgOptions::default()).err().unwrap();
    assert!(matches!(e, Error::Data(_)), "{e:?}");
    assert!(
        e.to_string()
            .contains("Mat `Z`: row 0 has no nonzero diagonal"),
        "{e}"
    );
    // Rows on the cells, columns on the nodes.
    let own = Map::new("own", &cells, &cells, 1, &[0, 1]).unwrap();
    let s = Rc::new(Sparsity::new(&ctx, "R", &cells, &nodes, &[(&own, &cn)]).unwrap());
    let rect = Mat::<f32>::new(&ctx, "R", &s).unwrap();
    let e = Amg::new(&ctx, &rect, &AmgOptions::default()).err().unwrap();
    assert!(e.to_string().contains("AMG needs a square matrix"), "{e}");
    let bad = AmgOptions {
        degree: 0,
        ..AmgOptions::default()
    };
    let e = Amg::new(&ctx, &zero, &bad).err().unwrap();
    assert!(e.to_string().contains("degree"), "{e}");
}
