//! Dirichlet conditions (`linalg::Dirichlet`) against plain Rust: the lifting, the rows and
//! columns zeroed, and the solve against a dense one.

use crate::common::ctx;
use crate::linalg::entries;
use parloop::linalg::{SolveOptions, cg};
use parloop::mesh::unit_square;

/// A Dirichlet condition on the left side of the unit square, applied as PETSc's
/// MatZeroRowsColumns: the constrained rows and columns zeroed with 1 on the diagonal, b
/// lifted (b - A g on the free rows, g on the constrained), u = g there; CG then gives the
/// plain-Rust dense solve of the free unknowns. A group of cells is refused.
#[test]
fn dirichlet_zeros_rows_and_columns_and_lifts_the_right_hand_side() {
    use parloop::linalg::Dirichlet;
    use parloop::mesh::topology::MeshData;
    let ctx = ctx();
    let square = unit_square(4);
    let md = MeshData::new(&ctx, &square).unwrap();
    let x = &square.coords;
    let f = md.interpolate::<f32>(&ctx, "f", |_| 1.0).unwrap();
    let (a, b) =
        parloop::apps::poisson::assemble::<f32>(&ctx, "A", &md.cell_vertices, &md.coords, &f)
            .unwrap();
    let k = entries(&a);
    let b0: Vec<f64> = b.data_ro().unwrap().iter().map(|&v| v as f64).collect();
    let bv = md.boundary_vertices.values();
    let left: Vec<u32> = (0..md.boundary.size() as u32)
        .filter(|&e| {
            bv[2 * e as usize..][..2]
                .iter()
                .all(|&v| x[v as usize][0] == 0.0)
        })
        .collect();
    assert_eq!(left.len(), 4);
    let left = parloop::Subset::new("left", &md.boundary, &left).unwrap();
    let exact = |p: [f64; 3]| 1.0 + p[0] + 2.0 * p[1];
    let g = md.interpolate::<f32>(&ctx, "g", exact).unwrap();
    let bc = Dirichlet::<f32>::on_facets(&ctx, &left, &md.boundary_vertices).unwrap();
    let u = ctx.dat_zeros::<f32>("u", &md.vertices, 1).unwrap();
    bc.apply(&ctx, &a, &b, &u, &g).unwrap();
    let n = x.len();
    let fixed: Vec<bool> = (0..n).map(|v| x[v][0] == 0.0).collect();
    let gv: Vec<f64> = (0..n).map(|v| exact(x[v]) as f32 as f64).collect();
    for (&(r, c), &v) in &entries(&a) {
        let (r, c) = (r as usize, c as usize);
        let want = match (fixed[r], fixed[c]) {
            (true, _) => f64::from(u8::from(r == c)),
            (false, true) => 0.0,
            (false, false) => k[&(r as u32, c as u32)],
        };
        assert!((v - want).abs() < 1e-6, "A({r}, {c}) = {v}, want {want}");
    }
    let lifted: Vec<f64> = (0..n)
        .map(|r| match fixed[r] {
            true => gv[r],
            false => {
                let known: f64 = (0..n)
                    .filter(|&c| fixed[c])
                    .map(|c| k.get(&(r as u32, c as u32)).unwrap_or(&0.0) * gv[c])
                    .sum();
                b0[r] - known
            }
        })
        .collect();
    let bs = b.data_ro().unwrap().to_vec();
    for r in 0..n {
        assert!(
            (bs[r] as f64 - lifted[r]).abs() < 1e-5,
            "b[{r}] {} vs {}",
            bs[r],
            lifted[r]
        );
    }
    let opts = SolveOptions {
        rtol: 1e-7,
        ..SolveOptions::default()
    };
    cg(&ctx, &a, &b, &u, None, &opts).unwrap();
    // The free unknowns by dense Gaussian elimination in f64.
    let free: Vec<usize> = (0..n).filter(|&v| !fixed[v]).collect();
    let m = free.len();
    let mut dense = vec![0.0; m * (m + 1)];
    for (i, &r) in free.iter().enumerate() {
        for (j, &c) in free.iter().enumerate() {
            dense[i * (m + 1) + j] = *k.get(&(r as u32, c as u32)).unwrap_or(&0.0);
        }
        dense[i * (m + 1) + m] = lifted[r];
    }
    for p in 0..m {
        for i in p + 1..m {
            let f = dense[i * (m + 1) + p] / dense[p * (m + 1) + p];
            for j in p..=m {
                dense[i * (m + 1) + j] -= f * dense[p * (m + 1) + j];
            }
        }
    }
    let mut sol = vec![0.0; m];
    for i in (0..m).rev() {
        let s: f64 = (i + 1..m).map(|j| dense[i * (m + 1) + j] * sol[j]).sum();
        sol[i] = (dense[i * (m + 1) + m] - s) / dense[i * (m + 1) + i];
    }
    let got = u.data_ro().unwrap();
    for (i, &r) in free.iter().enumerate() {
        assert!(
            (got[r] as f64 - sol[i]).abs() < 1e-4,
            "u[{r}] {} vs {}",
            got[r],
            sol[i]
        );
    }
    for v in (0..n).filter(|&v| fixed[v]) {
        assert_eq!(got[v] as f64, gv[v], "u[{v}] keeps g");
    }
    // A time loop keeps A: the lifting kept by apply_keeping gives a later b (other values
    // of g) what a condition on the matrix as assembled gives.
    let (a2, b2) =
        parloop::apps::poisson::assemble::<f32>(&ctx, "A2", &md.cell_vertices, &md.coords, &f)
            .unwrap();
    let u2 = ctx.dat_zeros::<f32>("u2", &md.vertices, 1).unwrap();
    let lifting = bc.apply_keeping(&ctx, &a2, &b2, &u2, &g).unwrap();
    let later = |p: [f64; 3]| 2.0 - p[0] + 0.5 * p[1];
    let g2 = md.interpolate::<f32>(&ctx, "g2", later).unwrap();
    let b0f: Vec<f32> = b0.iter().map(|&v| 0.5 * v as f32).collect();
    let b3 = ctx.dat("b3", &md.vertices, 1, &b0f).unwrap();
    lifting.apply(&ctx, &b3, &g2).unwrap();
    let got = b3.data_ro().unwrap().to_vec();
    for r in 0..n {
        let want = match fixed[r] {
            true => later(x[r]) as f32 as f64,
            false => {
                let known: f64 = (0..n)
                    .filter(|&c| fixed[c])
                    .map(|c| {
                        k.get(&(r as u32, c as u32)).unwrap_or(&0.0) * later(x[c]) as f32 as f64
                    })
                    .sum();
                b0f[r] as f64 - known
            }
        };
        assert!(
            (got[r] as f64 - want).abs() < 1e-5,
            "later b[{r}] {} vs {want}",
            got[r]
        );
    }
    assert_eq!(
        entries(&a2),
        entries(&a),
        "apply_keeping changes A as apply does"
    );
    // A second condition before A is assembled again would lift b by zeroed columns.
    let e = bc
        .apply(&ctx, &a, &b, &u, &g)
        .err()
        .expect("refused")
        .to_string();
    assert!(e.contains("assemble it again"), "{e}");
    let e = bc
        .apply_keeping(&ctx, &a, &b, &u, &g)
        .err()
        .expect("refused")
        .to_string();
    assert!(e.contains("there is no lifting left to keep"), "{e}");
    let e = bc
        .apply(&ctx, &a, &b, &b, &g)
        .err()
        .expect("refused")
        .to_string();
    assert!(e.contains("b (`A load`) is also u"), "{e}");
    let cells = parloop::Subset::new("some cells", &md.cells, &[0, 1]).unwrap();
    let e = Dirichlet::<f32>::on_facets(&ctx, &cells, &md.boundary_vertices)
        .err()
        .expect("refused")
        .to_string();
    assert!(
        e.contains("group `some cells`") && e.contains("is not a boundary"),
        "{e}"
    );
}
