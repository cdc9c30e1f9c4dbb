//! Algebraic multigrid as CG's preconditioner: the Poisson example's manufactured solution
//! solved with the error falling as h^2, in iteration counts that stay flat as the mesh is
//! refined (Jacobi's double with each refinement); and the matrices AMG refuses.

use crate::common;
use crate::examples::poisson::{Pc, solve_with};

use parloop::linalg::{Amg, AmgOptions, Mat, Preconditioner, SolveOptions, Sparsity, cg};
use parloop::mesh::unit_square;
use parloop::{Error, Kernel, Map, Set};
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
fn amg_refuses_rectangular_and_zero_diagonal_matrices() {
    let ctx = common::ctx();
    let cells = Set::new("cells", 2);
    let nodes = Set::new("nodes", 3);
    let cn = Map::new("cn", &cells, &nodes, 2, &[0, 1, 1, 2]).unwrap();
    let s = Rc::new(Sparsity::new(&ctx, "S", &nodes, &nodes, &[(&cn, &cn)]).unwrap());
    // A block matrix never assembled: its row 0's diagonal block is zero.
    let block = Mat::<f32>::blocked(&ctx, "B", &s, 2).unwrap();
    let e = Amg::new(&ctx, &block, &AmgOptions::default())
        .err()
        .unwrap();
    assert!(
        e.to_string()
            .contains("row 0, component 0 has no nonzero diagonal"),
        "{e}"
    );
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

/// The n x n grid graph: its edges and nodes, and a matrix on them.
struct Grid {
    edges: Set,
    nodes: Set,
    en: Map,
    own: Map,
    a: Mat<f32>,
}

impl Grid {
    fn new(ctx: &parloop::Context, n: usize) -> Grid {
        let nodes = Set::new("nodes", n * n);
        let mut ends = Vec::new();
        for i in 0..n {
            for j in 0..n {
                let v = (i * n + j) as u32;
                if j + 1 < n {
                    ends.extend([v, v + 1]);
                }
                if i + 1 < n {
                    ends.extend([v, v + n as u32]);
                }
            }
        }
        let edges = Set::new("edges", ends.len() / 2);
        let en = Map::new("en", &edges, &nodes, 2, &ends).unwrap();
        let ids: Vec<u32> = (0..(n * n) as u32).collect();
        let own = Map::new("own", &nodes, &nodes, 1, &ids).unwrap();
        let pairs = [(&en, &en), (&own, &own)];
        let s = Rc::new(Sparsity::new(ctx, "G", &nodes, &nodes, &pairs).unwrap());
        let a = Mat::<f32>::new(ctx, "G", &s).unwrap();
        Grid {
            edges,
            nodes,
            en,
            own,
            a,
        }
    }

    /// A = `weight` times the graph Laplacian plus `shift` on the diagonal, assembled (again)
    /// on the device.
    fn assemble(&self, ctx: &parloop::Context, weight: f32, shift: f32) {
        self.a.zero(ctx).unwrap();
        let c = ctx.global("weight and shift", &[weight, shift]).unwrap();
        let edge = Kernel::new(
            "edge",
            "fn edge(c: ptr<function, array<f32, 2>>, m: ptr<function, array<f32, 4>>) {
                (*m)[0] += (*c)[0]; (*m)[1] -= (*c)[0]; (*m)[2] -= (*c)[0]; (*m)[3] += (*c)[0];
            }",
        );
        let args = [c.read(), self.a.inc(&self.en, &self.en).unwrap()];
        ctx.par_loop(&edge, &self.edges, &args).unwrap();
        let node = Kernel::new(
            "node",
            "fn node(c: ptr<function, array<f32, 2>>, m: ptr<function, array<f32, 1>>) {
                (*m)[0] += (*c)[1];
            }",
        );
        let args = [c.read(), self.a.inc(&self.own, &self.own).unwrap()];
        ctx.par_loop(&node, &self.nodes, &args).unwrap();
    }

    fn with(ctx: &parloop::Context, n: usize, weight: f32, shift: f32) -> Grid {
        let g = Grid::new(ctx, n);
        g.assemble(ctx, weight, shift);
        g
    }
}

/// Solves a x = b by CG with `pc` (f32), from x = 0.
fn cg_with(
    ctx: &parloop::Context,
    a: &Mat<f32>,
    b: &[f32],
    pc: &dyn Preconditioner<f32>,
) -> parloop::Result<(Vec<f32>, parloop::linalg::SolveReport)> {
    let set = a.sparsity().rows();
    let b = ctx.dat("b", set, 1, b).unwrap();
    let x = ctx.dat_zeros::<f32>("x", set, 1).unwrap();
    let opts = SolveOptions {
        rtol: 1e-5,
        max_iterations: 500,
        check_every: 1,
        ..SolveOptions::default()
    };
    let report = cg(ctx, a, &b, &x, Some(pc), &opts)?;
    Ok((x.data_ro().unwrap().to_vec(), report))
}

fn close(x: &[f32], y: &[f32], tol: f32) -> bool {
    let scale = y.iter().fold(0.0f32, |m, v| m.max(v.abs()));
    x.iter().zip(y).all(|(a, b)| (a - b).abs() <= tol * scale)
}

/// A negative definite matrix (negative diagonal) is preconditioned as its negation is (and an
/// Amg owning its matrix as one borrowing it);
/// a singular (Neumann) one coarsened to a single unknown still converges in f32; the
/// hierarchy of a re-assembled matrix must be updated (an error otherwise); an indefinite
/// or a diagonal matrix is refused with what to use instead.
#[test]
fn amg_on_negative_singular_stale_indefinite_and_diagonal_matrices() {
    let ctx = common::ctx();
    let n = 24;
    let b: Vec<f32> = (0..n * n).map(|i| ((i * 37) % 11) as f32 - 5.0).collect();
    // Negative definite: the solution of -A x = -b is A's.
    let pos = Grid::with(&ctx, n, 1.0, 0.01);
    let neg = Grid::with(&ctx, n, -1.0, -0.01);
    let amg = Amg::new(&ctx, &pos.a, &AmgOptions::default()).unwrap();
    let (x_pos, r_pos) = cg_with(&ctx, &pos.a, &b, &amg).unwrap();
    let diag = neg.a.diagonal(&ctx).unwrap();
    let nb: Vec<f32> = b.iter().map(|v| -v).collect();
    let (x_jacobi, _) = cg_with(&ctx, &neg.a, &nb, &diag).unwrap();
    let amg_neg = Amg::new(&ctx, &neg.a, &AmgOptions::default()).unwrap();
    let (x_neg, r_neg) = cg_with(&ctx, &neg.a, &nb, &amg_neg).unwrap();
    assert!(close(&x_neg, &x_jacobi, 1e-3), "{r_neg:?}");
    assert!(close(&x_pos, &x_jacobi, 1e-3), "{r_pos:?}");
    // An Amg that owns its matrix (a struct keeping the solver's state holds it alone)
    // preconditions as one borrowing the same values does.
    let owned = Amg::new(
        &ctx,
        Grid::with(&ctx, n, 1.0, 0.01).a,
        &AmgOptions::default(),
    )
    .unwrap();
    let (x_owned, r_owned) = cg_with(&ctx, owned.matrix(), &b, &owned).unwrap();
    assert!(close(&x_owned, &x_pos, 1e-5), "{r_owned:?} {r_pos:?}");
    assert_eq!(r_owned.iterations, r_pos.iterations);
    assert!(
        r_neg.iterations <= r_pos.iterations + 1,
        "{r_neg:?} {r_pos:?}"
    );
    // Singular: the grid graph's Laplacian, b of zero sum, coarsened down to one unknown.
    let lap = Grid::with(&ctx, 40, 1.0, 0.0);
    let bs: Vec<f32> = (0..1600).map(|i| ((i * 37) % 11) as f32 - 5.0).collect();
    let mean = bs.iter().sum::<f32>() / bs.len() as f32;
    let bs: Vec<f32> = bs.iter().map(|v| v - mean).collect();
    let one = AmgOptions {
        max_coarse: 1,
        ..AmgOptions::default()
    };
    let amg_lap = Amg::new(&ctx, &lap.a, &one).unwrap();
    let levels = &amg_lap.report().levels;
    assert_eq!(levels.last().unwrap().0, 1, "{levels:?}");
    let (x, report) = cg_with(&ctx, &lap.a, &bs, &amg_lap).unwrap();
    assert!(report.converged && report.iterations <= 20, "{report:?}");
    assert!(x.iter().all(|v| v.is_finite()));
    // Stale: re-assembled 1000 times larger; then updated, the solution is A's / 1000.
    let g = Grid::with(&ctx, n, 1.0, 0.01);
    let mut amg = Amg::new(&ctx, &g.a, &AmgOptions::default()).unwrap();
    g.assemble(&ctx, 1000.0, 10.0);
    let e = cg_with(&ctx, &g.a, &b, &amg).err().unwrap();
    assert!(e.to_string().contains("call Amg::update"), "{e}");
    amg.update(&ctx).unwrap();
    let (x_big, r_big) = cg_with(&ctx, &g.a, &b, &amg).unwrap();
    let scaled: Vec<f32> = x_big.iter().map(|v| 1000.0 * v).collect();
    assert!(close(&scaled, &x_pos, 1e-3), "{r_big:?}");
    // A time step's new matrix, from a mass-dominated one (a short step) to a nearly
    // singular one (a long step): the update keeps the aggregates, recomputes the candidate
    // from the new values, and preconditions as a hierarchy built afresh does.
    g.assemble(&ctx, 1.0, 10.0);
    amg.update(&ctx).unwrap();
    g.assemble(&ctx, 1.0, 1e-4);
    amg.update(&ctx).unwrap();
    let fresh = Amg::new(&ctx, &g.a, &AmgOptions::default()).unwrap();
    assert!(amg.report().reused && !fresh.report().reused);
    assert!(fresh.report().levels.len() > 2, "{:?}", fresh.report());
    assert_eq!(amg.report().levels, fresh.report().levels);
    let (x_kept, r_kept) = cg_with(&ctx, &g.a, &b, &amg).unwrap();
    let (x_fresh, r_fresh) = cg_with(&ctx, &g.a, &b, &fresh).unwrap();
    assert!(close(&x_kept, &x_fresh, 1e-3), "{r_kept:?} {r_fresh:?}");
    assert!(
        r_kept.iterations <= r_fresh.iterations + 1,
        "{r_kept:?} {r_fresh:?}"
    );
    // Indefinite: the Laplacian shifted by -1.5 (eigenvalues of both signs).
    let ind = Grid::with(&ctx, n, 1.0, -1.5);
    let e = Amg::new(&ctx, &ind.a, &AmgOptions::default())
        .err()
        .unwrap();
    assert!(e.to_string().contains("eigenvalues of both signs"), "{e}");
    // Diagonal: nothing to aggregate.
    let d = Grid::with(&ctx, n, 0.0, 1.0);
    let e = Amg::new(&ctx, &d.a, &AmgOptions::default()).err().unwrap();
    assert!(
        e.to_string().contains("does not apply to a diagonal"),
        "{e}"
    );
    let big = AmgOptions {
        max_coarse: 2000,
        ..AmgOptions::default()
    };
    let e = Amg::new(&ctx, &d.a, &big).err().unwrap();
    assert!(
        e.to_string().contains("max_coarse must be at most 256"),
        "{e}"
    );
    // One level of 1681 unknowns: refused before any dense inverse is tried.
    let one = AmgOptions {
        max_levels: 1,
        ..AmgOptions::default()
    };
    let g = Grid::with(&ctx, 41, 1.0, 0.01);
    let e = Amg::new(&ctx, &g.a, &one).err().unwrap().to_string();
    assert!(e.contains("stopped at 1681 unknowns after 1 levels"), "{e}");
    assert!(e.contains("raise max_levels"), "{e}");
}

/// A = L (x) C + shift I on the n x n grid graph: 2 x 2 blocks, C = [[1, c], [c, 1]] (c = 0:
/// two copies of the scalar problem), assembled on the device through `Mat::inc`.
fn block_grid(ctx: &parloop::Context, n: usize, c: f32, shift: f32) -> Mat<f32> {
    let g = Grid::new(ctx, n);
    let pairs = [(&g.en, &g.en), (&g.own, &g.own)];
    let s = Rc::new(Sparsity::new(ctx, "B", &g.nodes, &g.nodes, &pairs).unwrap());
    let a = Mat::<f32>::blocked(ctx, "B", &s, 2).unwrap();
    let coupling = ctx.global("coupling and shift", &[c, shift]).unwrap();
    // Pair (i, j), component (p, q) at ((i * 2 + j) * 2 + p) * 2 + q.
    let edge = Kernel::new(
        "block_edge",
        "fn block_edge(c: ptr<function, array<f32, 2>>, m: ptr<function, array<f32, 16>>) {
            for (var i = 0u; i < 2u; i++) { for (var j = 0u; j < 2u; j++) {
                let sign = select(-1.0, 1.0, i == j);
                for (var p = 0u; p < 2u; p++) { for (var q = 0u; q < 2u; q++) {
                    (*m)[((i * 2u + j) * 2u + p) * 2u + q] += sign * select((*c)[0], 1.0, p == q);
                } }
            } }
        }",
    );
    let args = [coupling.read(), a.inc(&g.en, &g.en).unwrap()];
    ctx.par_loop(&edge, &g.edges, &args).unwrap();
    let node = Kernel::new(
        "block_node",
        "fn block_node(c: ptr<function, array<f32, 2>>, m: ptr<function, array<f32, 4>>) {
            (*m)[0] += (*c)[1]; (*m)[3] += (*c)[1];
        }",
    );
    let args = [coupling.read(), a.inc(&g.own, &g.own).unwrap()];
    ctx.par_loop(&node, &g.nodes, &args).unwrap();
    a
}

/// Block AMG (2 x 2 blocks, nodes aggregated, a constant candidate per component): on two
/// uncoupled copies of the scalar problem it takes the scalar AMG's iterations, to the
/// scalar solution for each component; on coupled blocks its counts stay flat as the grid is
/// refined, where block Jacobi's grow, to the same solution.
#[test]
fn block_amg_solves_coupled_systems_in_counts_that_stay_flat() {
    let ctx = common::ctx();
    let solve = |a: &Mat<f32>, b: &[f32], pc: &dyn Preconditioner<f32>| {
        let set = a.sparsity().rows();
        let rhs = ctx.dat("b", set, a.block(), b).unwrap();
        let x = ctx.dat_zeros::<f32>("x", set, a.block()).unwrap();
        let opts = SolveOptions {
            rtol: 1e-5,
            max_iterations: 2000,
            check_every: 10,
            ..SolveOptions::default()
        };
        let report = cg(&ctx, a, &rhs, &x, Some(pc), &opts).unwrap();
        (x.data_ro().unwrap().to_vec(), report)
    };
    let rhs = |len: usize| -> Vec<f32> { (0..len).map(|i| ((i * 37) % 11) as f32 - 5.0).collect() };
    // Uncoupled: each component is the scalar problem with every other entry of b.
    let n = 32;
    let two = block_grid(&ctx, n, 0.0, 0.01);
    let b2 = rhs(2 * n * n);
    let amg2 = Amg::new(&ctx, &two, &AmgOptions::default()).unwrap();
    let (x2, r2) = solve(&two, &b2, &amg2);
    let one = Grid::with(&ctx, n, 1.0, 0.01);
    let amg1 = Amg::new(&ctx, &one.a, &AmgOptions::default()).unwrap();
    for c in 0..2 {
        let bc: Vec<f32> = b2.iter().skip(c).step_by(2).copied().collect();
        let (x1, r1) = solve(&one.a, &bc, &amg1);
        let xc: Vec<f32> = x2.iter().skip(c).step_by(2).copied().collect();
        assert!(close(&xc, &x1, 1e-3), "component {c}: {r2:?} {r1:?}");
        assert!(r2.iterations <= r1.iterations + 2, "{r2:?} {r1:?}");
    }
    // Coupled, nearly singular (shift 1e-4): flat counts, Jacobi's growing, the same
    // solutions.
    let mut counts = Vec::new();
    for n in [12, 24, 48] {
        let a = block_grid(&ctx, n, 0.5, 1e-4);
        let b = rhs(2 * n * n);
        let amg = Amg::new(&ctx, &a, &AmgOptions::default()).unwrap();
        assert!(amg.report().levels.len() > 2, "{:?}", amg.report());
        let (xa, ra) = solve(&a, &b, &amg);
        let d = a.diagonal(&ctx).unwrap();
        let (xj, rj) = solve(&a, &b, &d);
        assert!(close(&xa, &xj, 2e-3), "n {n}: {ra:?} {rj:?}");
        counts.push((ra.iterations, rj.iterations));
    }
    eprintln!("block AMG-CG and block-Jacobi-CG iterations at n = 12, 24, 48: {counts:?}");
    // Dirichlet rows on blocks (the boundary nodes' rows zeroed, 1 on their diagonal): the
    // hierarchy isolates them; then a change of those rows and `update` (the aggregates kept
    // per node) precondition as before, to Jacobi's solution.
    let n = 24;
    let a = block_grid(&ctx, n, 0.5, 1e-4);
    let boundary: Vec<u32> = (0..(n * n) as u32)
        .filter(|v| {
            let (i, j) = (v / n as u32, v % n as u32);
            i == 0 || j == 0 || i == n as u32 - 1 || j == n as u32 - 1
        })
        .collect();
    a.zero_rows(&ctx, &boundary, 1.0).unwrap();
    let b = rhs(2 * n * n);
    let mut amg = Amg::new(&ctx, &a, &AmgOptions::default()).unwrap();
    let (x0, r0) = solve(&a, &b, &amg);
    a.zero_rows(&ctx, &boundary, 2.0).unwrap();
    amg.update(&ctx).unwrap();
    let (x1, r1) = solve(&a, &b, &amg);
    let d = a.diagonal(&ctx).unwrap();
    let (xj, rj) = solve(&a, &b, &d);
    assert!(
        amg.report().reused && r0.iterations <= 20 && r1.iterations <= 20,
        "{r0:?} {r1:?}"
    );
    assert!(close(&x1, &xj, 2e-3), "{r1:?} {rj:?}");
    // The boundary rows say 2 x = b after the change, 1 x = b before.
    for &v in &boundary {
        for c in 0..2 {
            let k = 2 * v as usize + c;
            let (before, after) = (x0[k], x1[k]);
            assert!(
                (before - b[k]).abs() <= 1e-3 * b[k].abs().max(1.0)
                    && (after - 0.5 * b[k]).abs() <= 1e-3 * b[k].abs().max(1.0),
                "node {v}, component {c}: {before} then {after} for b = {}",
                b[k]
            );
        }
    }
    let amg: Vec<usize> = counts.iter().map(|c| c.0).collect();
    let (lo, hi) = (amg.iter().min().unwrap(), amg.iter().max().unwrap());
    assert!(
        *hi <= 20 && *hi <= lo + 4,
        "(AMG, Jacobi) at n = 12, 24, 48: {counts:?}"
    );
    assert!(
        counts[2].1 >= 3 * counts[0].1 && counts[2].1 > 4 * hi,
        "{counts:?}"
    );
}
