//! The Poisson example (examples/poisson.rs) on a manufactured solution,
//! u = sin(pi x) sin(pi y): the L2 error falls as h^2 over three refinements (f32) and four
//! (f64, where the adapter has it) on jittered meshes, where CG must work; on the Gmsh channel,
//! with u given on the whole boundary or on the inlet only (its normal derivative on the rest),
//! the error is that of a mesh of its size; a vertex in no cell is left out; a mesh of other
//! cells, a group on tetrahedra or an unknown group is refused. On jittered tetrahedra,
//! u = sin(pi x) sin(pi y) sin(pi z): h^2 again, and AMG-CG's count nearly flat.

use crate::common;

use crate::examples::poisson;

use parloop::Real;
use parloop::linalg::SolveOptions;
use parloop::mesh::{gmsh, unit_cube_tets, unit_square};
use poisson::solve;

fn rates<T: Real>(ns: &[usize], rtol: f64) -> Vec<f64> {
    let ctx = common::ctx();
    let opts = SolveOptions {
        rtol,
        ..SolveOptions::default()
    };
    let errors: Vec<f64> = ns
        .iter()
        .map(|&n| {
            solve::<T>(&ctx, &unit_square(n), None, &opts)
                .unwrap()
                .l2_error
        })
        .collect();
    errors.windows(2).map(|e| (e[0] / e[1]).log2()).collect()
}

#[test]
fn second_order_convergence_of_the_manufactured_solution() {
    let r = rates::<f32>(&[8, 16, 32], 1e-6);
    assert!(r.iter().all(|&r| r > 1.7 && r < 2.3), "f32 rates {r:?}");
    if common::ctx().gpu().f64() {
        let r = rates::<f64>(&[8, 16, 32, 64], 1e-10);
        assert!(r.iter().all(|&r| r > 1.8 && r < 2.2), "f64 rates {r:?}");
    }
}

#[test]
fn the_channel_with_dirichlet_groups_and_refusals() {
    let ctx = common::ctx();
    let mesh = gmsh::read_file(concat!(env!("CARGO_MANIFEST_DIR"), "/data/channel.msh")).unwrap();
    let opts = SolveOptions::default();
    let s = solve::<f32>(&ctx, &mesh, None, &opts).unwrap();
    // h is 0.03 (0.01 at the cylinder): the error is that of the unit square at n = 32 or so.
    assert!(s.l2_error < 2e-3, "L2 error {}", s.l2_error);
    // u on the inlet only, its normal derivative on the rest of the boundary: the constant
    // mode is held by one short side, so the error's constant is larger; it still falls as
    // h^2 (measured in f64: 5.05e-2, 1.31e-2, 3.30e-3 at h = 0.06, 0.03, 0.015).
    let neumann = solve::<f32>(&ctx, &mesh, Some("inlet"), &opts).unwrap();
    assert!(neumann.l2_error < 1.5e-2, "L2 error {}", neumann.l2_error);
    // A vertex in no cell (Gmsh keeps such points) is left out.
    let mut extra = mesh.clone();
    extra.coords.push([5.0, 5.0, 0.0]);
    let s2 = solve::<f32>(&ctx, &extra, None, &opts).unwrap();
    assert!(
        (s2.l2_error - s.l2_error).abs() < 1e-6,
        "{} vs {}",
        s2.l2_error,
        s.l2_error
    );
    let e = solve::<f32>(&ctx, &mesh, Some("exit"), &opts)
        .err()
        .expect("refused")
        .to_string();
    assert!(
        e.contains("no group of boundary facets named `exit`"),
        "{e}"
    );
    let e = solve::<f32>(&ctx, &unit_cube_tets(2), Some("inlet"), &opts)
        .err()
        .expect("refused")
        .to_string();
    assert!(
        e.contains("on tetrahedra the Poisson example gives u on the whole boundary"),
        "{e}"
    );
    let mut quads = unit_square(2);
    quads.cell_type = parloop::mesh::CellType::Quadrilateral;
    quads.cells.truncate(4 * 2);
    let e = solve::<f32>(&ctx, &quads, None, &opts)
        .err()
        .expect("refused")
        .to_string();
    assert!(
        e.contains("runs on triangles or tetrahedra; this mesh has quadrilateral cells"),
        "{e}"
    );
}

/// On tetrahedra of the unit cube (jittered), u = sin(pi x) sin(pi y) sin(pi z): the L2 error
/// falls as h^2, and AMG-CG takes the Jacobi-CG solution's error in a few iterations, their
/// count nearly flat while Jacobi-CG's doubles with n.
#[test]
fn tetrahedra_converge_at_second_order_and_amg_keeps_its_count() {
    let ctx = common::ctx();
    let opts = SolveOptions {
        rtol: 1e-6,
        check_every: 1,
        ..SolveOptions::default()
    };
    let mut rows = Vec::new();
    for n in [4, 8, 16] {
        let mesh = poisson::jittered(unit_cube_tets(n), n, 0.1);
        let solve = |pc| poisson::solve_with::<f32>(&ctx, &mesh, None, &opts, pc).unwrap();
        let (jacobi, amg) = (solve(poisson::Pc::Jacobi), solve(poisson::Pc::Amg));
        let same = (jacobi.l2_error - amg.l2_error).abs() / jacobi.l2_error;
        assert!(
            same < 1e-3,
            "n = {n}: {} against {}",
            amg.l2_error,
            jacobi.l2_error
        );
        rows.push((
            n,
            jacobi.l2_error,
            jacobi.report.iterations,
            amg.report.iterations,
        ));
    }
    let rate = |a: f64, b: f64| (a / b).log2();
    for w in rows.windows(2) {
        let r = rate(w[0].1, w[1].1);
        assert!(r > 1.6 && r < 2.4, "rate {r}: {rows:?}");
    }
    // Jacobi-CG grows about 2x per refinement; AMG-CG by at most a few iterations.
    assert!(rows[2].2 >= 3 * rows[0].2, "{rows:?}");
    assert!(rows[2].3 <= rows[0].3 + 6 && rows[2].3 <= 15, "{rows:?}");
}
