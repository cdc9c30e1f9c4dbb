//! Block matrices (vector unknowns, issue 26) against plain Rust: element blocks of small
//! integers (sums exact in f32 in any order) assembled under every strategy, then y = A x, the
//! diagonal, zero_rows and MatrixMarket output, for blocks of 2 and 3 components; and CG on
//! the vector Laplacian (K with a 2 x 2 identity block per entry) equals two scalar solves,
//! and BiCGStab on it equals CG.

use crate::common;

use common::{ctx, ctx_with, small_ints, strategies};
use parloop::apps::poisson::assemble;
use parloop::linalg::{Mat, SolveOptions, Sparsity, bicgstab, cg};
use parloop::mesh::unit_square;
use parloop::{Config, Context, Kernel, Map, Set};
use std::rc::Rc;

struct Mesh {
    vertices: Set,
    cells: Set,
    cv: Map,
    flat: Vec<u32>,
}

fn mesh(n: usize) -> Mesh {
    let m = unit_square(n).shuffled(9).0;
    let vertices = Set::new("vertices", m.nvertices());
    let cells = Set::new("cells", m.ncells());
    let cv = Map::new("cell_vertices", &cells, &vertices, 3, &m.cells).unwrap();
    Mesh {
        vertices,
        cells,
        cv,
        flat: m.cells,
    }
}

/// Adds each cell's `9 b^2` weights to its element matrix.
fn element(b: usize) -> Kernel {
    let n = 9 * b * b;
    Kernel::new(
        "element",
        format!(
            "fn element(w: ptr<function, array<f32, {n}>>, a: ptr<function, array<f32, {n}>>) {{
    for (var k = 0u; k < {n}u; k++) {{ (*a)[k] += (*w)[k]; }}
}}"
        ),
    )
}

/// y = A x in plain Rust from the element blocks (layout of `Mat::inc`: node pair (i, j),
/// then the block row-major).
fn product(m: &Mesh, w: &[f32], b: usize, x: &[f32]) -> Vec<f64> {
    let mut y = vec![0.0; m.vertices.size() * b];
    for (c, vs) in m.flat.chunks_exact(3).enumerate() {
        for i in 0..3 {
            for j in 0..3 {
                for bi in 0..b {
                    for bj in 0..b {
                        let at = c * 9 * b * b + ((i * 3 + j) * b + bi) * b + bj;
                        y[vs[i] as usize * b + bi] +=
                            w[at] as f64 * x[vs[j] as usize * b + bj] as f64;
                    }
                }
            }
        }
    }
    y
}

fn blocked(ctx: &Context, m: &Mesh, b: usize, w: &[f32]) -> Mat<f32> {
    let s = Rc::new(Sparsity::new(ctx, "s", &m.vertices, &m.vertices, &[(&m.cv, &m.cv)]).unwrap());
    let a = Mat::<f32>::blocked(ctx, "A", &s, b).unwrap();
    let wd = ctx.dat("w", &m.cells, 9 * b * b, w).unwrap();
    let args = [wd.read(), a.inc(&m.cv, &m.cv).unwrap()];
    ctx.par_loop(&element(b), &m.cells, &args).unwrap();
    a
}

#[test]
fn block_products_under_every_strategy_equal_plain_rust() {
    let probe = ctx();
    let m = mesh(10);
    for b in [2, 3] {
        let w = small_ints(m.cells.size() * 9 * b * b, b as u64);
        let x = small_ints(m.vertices.size() * b, 7);
        let want = product(&m, &w, b, &x);
        for (strategy, staging) in strategies(&probe) {
            let ctx = ctx_with(Config {
                strategy,
                staging,
                block_size: Some(32),
                ..Config::from_env().unwrap()
            });
            let a = blocked(&ctx, &m, b, &w);
            let xd = ctx.dat("x", &m.vertices, b, &x).unwrap();
            let y = ctx.dat_zeros::<f32>("y", &m.vertices, b).unwrap();
            a.mult(&ctx, &xd, &y).unwrap();
            let got: Vec<f64> = y.data_ro().unwrap().iter().map(|&v| v as f64).collect();
            assert_eq!(got, want, "block {b}, {strategy:?} {staging:?}");
        }
    }
}

#[test]
fn block_diagonal_zero_rows_and_matrix_market() {
    let ctx = ctx();
    let m = mesh(4);
    let b = 2;
    let w = small_ints(m.cells.size() * 9 * b * b, 3);
    let a = blocked(&ctx, &m, b, &w);
    // Plain Rust: the dense matrix of the element blocks.
    let nb = m.vertices.size() * b;
    let mut dense = vec![0.0f64; nb * nb];
    for (c, vs) in m.flat.chunks_exact(3).enumerate() {
        for (i, j, bi, bj) in (0..81).map(|k| (k / 27, (k / 9) % 3, (k / 3) % 3, k % 3)) {
            if bi < b && bj < b {
                let at = c * 9 * b * b + ((i * 3 + j) * b + bi) * b + bj;
                dense[(vs[i] as usize * b + bi) * nb + vs[j] as usize * b + bj] += w[at] as f64;
            }
        }
    }
    let diag = a.diagonal(&ctx).unwrap();
    let got: Vec<f64> = diag.data_ro().unwrap().iter().map(|&v| v as f64).collect();
    let want: Vec<f64> = (0..nb).map(|i| dense[i * nb + i]).collect();
    assert_eq!(got, want, "the diagonal");
    // Rows 0 and 3 (every component) zeroed, 5 on their diagonal.
    a.zero_rows(&ctx, &[3, 0, 3], 5.0).unwrap();
    for r in [0, 3] {
        for bi in 0..b {
            let i = r * b + bi;
            dense[i * nb..(i + 1) * nb].fill(0.0);
            dense[i * nb + i] = 5.0;
        }
    }
    let path = std::env::temp_dir().join(format!("parloop-block-{}.mtx", std::process::id()));
    a.write_matrix_market(&path).unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    let _ = std::fs::remove_file(&path);
    let mut lines = text.lines().filter(|l| !l.starts_with('%'));
    let size: Vec<usize> = lines
        .next()
        .unwrap()
        .split_whitespace()
        .map(|v| v.parse().unwrap())
        .collect();
    assert_eq!(size[..2], [nb, nb]);
    assert_eq!(size[2], a.sparsity().nnz() * b * b);
    let mut read = vec![0.0f64; nb * nb];
    for l in lines {
        let v: Vec<&str> = l.split_whitespace().collect();
        let (i, j): (usize, usize) = (v[0].parse().unwrap(), v[1].parse().unwrap());
        read[(i - 1) * nb + j - 1] = v[2].parse().unwrap();
    }
    assert_eq!(read, dense, "the MatrixMarket file");
}

#[test]
fn cg_on_the_vector_laplacian_equals_two_scalar_solves() {
    let ctx = ctx();
    let m = unit_square(12);
    let vertices = Set::new("vertices", m.nvertices());
    let cells = Set::new("cells", m.ncells());
    let cv = Map::new("cv", &cells, &vertices, 3, &m.cells).unwrap();
    let xy: Vec<f32> = m.coords_f32();
    let x = ctx.dat("x", &vertices, 2, &xy).unwrap();
    let boundary: Vec<u32> = (0..m.nvertices() as u32)
        .filter(|&v| {
            let c = m.coords[v as usize];
            c[0] == 0.0 || c[0] == 1.0 || c[1] == 0.0 || c[1] == 1.0
        })
        .collect();
    let opts = SolveOptions {
        rtol: 1e-6,
        ..SolveOptions::default()
    };
    // Two scalar problems: f = 1 and f = x - y.
    let sources: [Vec<f32>; 2] = [
        vec![1.0; m.nvertices()],
        m.coords.iter().map(|c| (c[0] - c[1]) as f32).collect(),
    ];
    // Each scalar problem's solution and right-hand side.
    let mut solved: Vec<(Vec<f32>, Vec<f32>)> = Vec::new();
    for f in &sources {
        let f = ctx.dat("f", &vertices, 1, f).unwrap();
        let (a, mut b) = assemble::<f32>(&ctx, "K", &cv, &x, &f).unwrap();
        a.zero_rows(&ctx, &boundary, 1.0).unwrap();
        {
            let mut bv = b.data().unwrap();
            boundary.iter().for_each(|&v| bv[v as usize] = 0.0);
        }
        let u = ctx.dat_zeros::<f32>("u", &vertices, 1).unwrap();
        let d = a.diagonal(&ctx).unwrap();
        cg(&ctx, &a, &b, &u, Some(&d), &opts).unwrap();
        let u = u.data_ro().unwrap().to_vec();
        solved.push((u, b.data_ro().unwrap().to_vec()));
    }
    // K with an identity block: a 2 x 2 block of K's entry on the diagonal.
    let s = Rc::new(Sparsity::new(&ctx, "v", &vertices, &vertices, &[(&cv, &cv)]).unwrap());
    let a = Mat::<f32>::blocked(&ctx, "vector K", &s, 2).unwrap();
    let spread = Kernel::new(
        "spread",
        "fn spread(x: ptr<function, array<f32, 6>>, a: ptr<function, array<f32, 36>>) {
    let det = ((*x)[2] - (*x)[0]) * ((*x)[5] - (*x)[1]) - ((*x)[4] - (*x)[0]) * ((*x)[3] - (*x)[1]);
    var gx: array<f32, 3>;
    var gy: array<f32, 3>;
    for (var i = 0u; i < 3u; i++) {
        let j = (i + 1u) % 3u;
        let k = (i + 2u) % 3u;
        gx[i] = ((*x)[2u * j + 1u] - (*x)[2u * k + 1u]) / det;
        gy[i] = ((*x)[2u * k] - (*x)[2u * j]) / det;
    }
    for (var i = 0u; i < 3u; i++) {
        for (var j = 0u; j < 3u; j++) {
            let v = abs(det) / 2.0 * (gx[i] * gx[j] + gy[i] * gy[j]);
            (*a)[(3u * i + j) * 4u] += v;
            (*a)[(3u * i + j) * 4u + 3u] += v;
        }
    }
}",
    );
    ctx.par_loop(
        &spread,
        &cells,
        &[x.all(&cv).read(), a.inc(&cv, &cv).unwrap()],
    )
    .unwrap();
    a.zero_rows(&ctx, &boundary, 1.0).unwrap();
    let (b1, b2) = (&solved[0].1, &solved[1].1);
    let bv: Vec<f32> = (0..m.nvertices()).flat_map(|v| [b1[v], b2[v]]).collect();
    let b = ctx.dat("b", &vertices, 2, &bv).unwrap();
    let u = ctx.dat_zeros::<f32>("u", &vertices, 2).unwrap();
    let d = a.diagonal(&ctx).unwrap();
    let rep = cg(&ctx, &a, &b, &u, Some(&d), &opts).unwrap();
    assert!(rep.iterations > 1, "{rep:?}");
    // BiCGStab on the same block system, vectors of dim 2.
    let w = ctx.dat_zeros::<f32>("w", &vertices, 2).unwrap();
    let rep = bicgstab(&ctx, &a, &b, &w, Some(&d), &opts).unwrap();
    assert!(rep.iterations > 1, "{rep:?}");
    let w = w.data_ro().unwrap();
    let u = u.data_ro().unwrap();
    let worst = u
        .iter()
        .zip(w.iter())
        .fold(0.0f32, |m, (a, b)| m.max((a - b).abs()));
    let top = u.iter().fold(0.0f32, |m, v| m.max(v.abs()));
    assert!(
        worst <= 1e-4 * top,
        "BiCGStab differs from CG by {worst} (max |u| {top})"
    );
    // A block beyond 4 is refused.
    let e = Mat::<f32>::blocked(&ctx, "big", &s, 5)
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("block 5"), "{e}");
    let (u1, u2) = (&solved[0].0, &solved[1].0);
    let scale = u1.iter().chain(u2).fold(0.0f32, |m, v| m.max(v.abs()));
    for v in 0..m.nvertices() {
        for (c, want) in [(0, u1[v]), (1, u2[v])] {
            let got = u[2 * v + c];
            assert!(
                (got - want).abs() <= 1e-4 * scale,
                "vertex {v}, component {c}: {got} against the scalar solve's {want}"
            );
        }
    }
}
