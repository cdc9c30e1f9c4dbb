//! Sparse matrices and CG (issue 26) against plain Rust: the pattern of a small mesh by hand;
//! assembly (racing increments of element matrices) under every strategy, lazy and eager, on a
//! shuffled mesh with many blocks and colours, entry by entry against a plain-Rust CSR
//! assembly; y = A x, zero_rows and the diagonal; MatrixMarket output read back (CG against
//! plain Rust: linalg_cg.rs); and the errors: a pair the sparsity lacks, a row without a diagonal,
//! wrong vectors, an indefinite matrix or preconditioner, the iteration limit.

use crate::common;

use common::{ctx, ctx_with, strategies};
use parloop::linalg::{Mat, SolveOptions, Sparsity, cg};
use parloop::mesh::unit_square;
use parloop::{Config, Context, Dat, Error, Kernel, Map, Real, Set, SolverFailure};
use std::collections::BTreeMap;
use std::rc::Rc;

/// A mesh's vertices, cells and cell -> vertex map on `ctx`'s declarations.
fn mesh(n: usize, shuffle: u64) -> (Set, Set, Map, Vec<u32>) {
    let m = unit_square(n).shuffled(shuffle).0;
    let (vertices, cells) = (
        Set::new("vertices", m.nvertices()),
        Set::new("cells", m.ncells()),
    );
    let cv = Map::new("cell_vertices", &cells, &vertices, 3, &m.cells).unwrap();
    (vertices, cells, cv, m.cells)
}

/// An element matrix of small integers, different per cell and entry: sums are exact in f32
/// whatever the order of the increments.
const ELEMENT: &str = "
fn element(w: ptr<function, array<f32, 1>>, a: ptr<function, array<f32, 9>>) {
    for (var i = 0u; i < 3u; i++) {
        for (var j = 0u; j < 3u; j++) {
            (*a)[3u * i + j] += (*w)[0] * f32(1u + i + 3u * j);
        }
    }
}
";

fn weights(ncells: usize) -> Vec<f32> {
    (0..ncells).map(|c| (c % 7) as f32 - 3.0).collect()
}

/// The same assembly in plain Rust: (row, column) -> value.
fn reference(cells: &[u32], w: &[f32]) -> BTreeMap<(u32, u32), f64> {
    let mut a = BTreeMap::new();
    for (c, vs) in cells.chunks_exact(3).enumerate() {
        for i in 0..3 {
            for j in 0..3 {
                *a.entry((vs[i], vs[j])).or_insert(0.0) += w[c] as f64 * (1 + i + 3 * j) as f64;
            }
        }
    }
    a
}

/// The Mat's entries as (row, column) -> value.
pub(crate) fn entries(a: &Mat<f32>) -> BTreeMap<(u32, u32), f64> {
    let s = a.sparsity();
    let v = a.values.data_ro().unwrap();
    let mut out = BTreeMap::new();
    for r in 0..s.rows().size() {
        for (k, &c) in s.row(r).iter().enumerate() {
            out.insert((r as u32, c), v[r * s.width() + k] as f64);
        }
    }
    out
}

#[test]
fn the_pattern_of_two_triangles() {
    let (vertices, _, cv, _) = mesh(1, 0);
    let s = Sparsity::new(&ctx(), "s", &vertices, &vertices, &[(&cv, &cv)]).unwrap();
    let m = unit_square(1).shuffled(0).0;
    // Each vertex couples with every vertex of its cells.
    for v in 0..4u32 {
        let mut want: Vec<u32> = m
            .cells
            .chunks(3)
            .filter(|c| c.contains(&v))
            .flatten()
            .copied()
            .collect();
        want.sort();
        want.dedup();
        assert_eq!(s.row(v as usize), want, "row {v}");
    }
    assert_eq!(s.nnz(), 14);
    assert_eq!(s.width(), 4);
}

fn assemble(ctx: &Context, n: usize) -> (Mat<f32>, Vec<u32>, Vec<f32>) {
    let (vertices, cells, cv, flat) = mesh(n, 5);
    let s = Rc::new(Sparsity::new(&ctx, "s", &vertices, &vertices, &[(&cv, &cv)]).unwrap());
    let a = Mat::<f32>::new(ctx, "A", &s).unwrap();
    let w = weights(cells.size());
    let wd = ctx.dat("w", &cells, 1, &w).unwrap();
    let k = Kernel::new("element", ELEMENT);
    ctx.par_loop(&k, &cells, &[wd.read(), a.inc(&cv, &cv).unwrap()])
        .unwrap();
    (a, flat, w)
}

#[test]
fn assembly_under_every_strategy_lazy_and_eager_equals_plain_rust() {
    let probe = ctx();
    for (strategy, staging) in strategies(&probe) {
        for lazy in [true, false] {
            let ctx = ctx_with(Config {
                strategy,
                staging,
                lazy,
                block_size: Some(64),
                ..Config::from_env().unwrap()
            });
            let (a, cells, w) = assemble(&ctx, 24);
            let want = reference(&cells, &w);
            assert_eq!(entries(&a), want, "{strategy:?} {staging:?} lazy {lazy}");
        }
    }
}

#[test]
fn product_rows_diagonal_and_matrix_market() {
    let ctx = ctx();
    let (a, cells, w) = assemble(&ctx, 12);
    let want = reference(&cells, &w);
    let s = a.sparsity();
    let n = s.rows().size();
    let xv: Vec<f32> = (0..n).map(|i| (i % 5) as f32 - 2.0).collect();
    let x = ctx.dat("x", s.cols(), 1, &xv).unwrap();
    let y = ctx.dat_zeros::<f32>("y", s.rows(), 1).unwrap();
    a.mult(&ctx, &x, &y).unwrap();
    let mut ref_y = vec![0.0f64; n];
    for (&(r, c), v) in &want {
        ref_y[r as usize] += v * xv[c as usize] as f64;
    }
    let got: Vec<f64> = y.data_ro().unwrap().iter().map(|&v| v as f64).collect();
    assert_eq!(got, ref_y, "y = A x");
    // y = A^T x (the entries differ from their transposes: the test sees a transpose).
    assert!(want.iter().any(|(&(r, c), v)| want.get(&(c, r)) != Some(v)));
    let transpose = |x: &parloop::Dat<f32>| {
        let yt = ctx.dat("yt", s.cols(), 1, &vec![7.0f32; n]).unwrap();
        a.mult_transpose(&ctx, x, &yt).unwrap();
        let got: Vec<f64> = yt.data_ro().unwrap().iter().map(|&v| v as f64).collect();
        got
    };
    let mut ref_t = vec![0.0f64; n];
    for (&(r, c), v) in &want {
        ref_t[c as usize] += v * xv[r as usize] as f64;
    }
    let xr = ctx.dat("x on the rows", s.rows(), 1, &xv).unwrap();
    assert_eq!(transpose(&xr), ref_t, "y = A^T x");
    // MatrixMarket: every entry once, 1-based, read back.
    let path = std::env::temp_dir().join(format!("parloop-mm-{}.mtx", std::process::id()));
    a.write_matrix_market(&path).unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    std::fs::remove_file(&path).ok();
    let mut lines = text.lines().filter(|l| !l.starts_with('%'));
    assert_eq!(lines.next().unwrap(), format!("{n} {n} {}", want.len()));
    let read: BTreeMap<(u32, u32), f64> = lines
        .map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            let (r, c): (u32, u32) = (f[0].parse().unwrap(), f[1].parse().unwrap());
            ((r - 1, c - 1), f[2].parse().unwrap())
        })
        .collect();
    assert_eq!(read, want);
    // Padding slots are never read: filling every slot changes only the entries.
    ctx.fill(&a.values, 1.0).unwrap();
    a.mult(&ctx, &x, &y).unwrap();
    let mut ones_y = vec![0.0f64; n];
    for &(r, c) in want.keys() {
        ones_y[r as usize] += xv[c as usize] as f64;
    }
    let got: Vec<f64> = y.data_ro().unwrap().iter().map(|&v| v as f64).collect();
    assert_eq!(got, ones_y, "y = A x with every slot 1");
    let mut ones_t = vec![0.0f64; n];
    for &(r, c) in want.keys() {
        ones_t[c as usize] += xv[r as usize] as f64;
    }
    assert_eq!(transpose(&xr), ones_t, "y = A^T x with every slot 1");
    assert!(s.fill() < 1.0, "the test needs padding: fill {}", s.fill());
    let (a, cells, w) = assemble(&ctx, 12);
    assert_eq!(reference(&cells, &w), want, "the same mesh again");
    // Rows 0 and 3 zeroed (named twice) with 5 on the diagonal; the diagonal read back.
    a.zero_rows(&ctx, &[3, 0, 3], 5.0).unwrap();
    let d = a.diagonal(&ctx).unwrap();
    let d = d.data_ro().unwrap();
    let got = entries(&a);
    for (&(r, c), &v) in &want {
        let expect = match r {
            0 | 3 => {
                if r == c {
                    5.0
                } else {
                    0.0
                }
            }
            _ => v,
        };
        assert_eq!(got[&(r, c)], expect, "entry ({r}, {c}) after zero_rows");
        if r == c {
            assert_eq!(d[r as usize] as f64, expect, "diagonal {r}");
        }
    }
}

/// A diagonal matrix with the given diagonal, on its own set.
fn diagonal_matrix<T: Real>(ctx: &Context, d: &[T]) -> (Mat<T>, Set) {
    let s = Set::new("s", d.len());
    let id: Vec<u32> = (0..d.len() as u32).collect();
    let m = Map::new("id", &s, &s, 1, &id).unwrap();
    let sp = Rc::new(Sparsity::new(&ctx, "diag", &s, &s, &[(&m, &m)]).unwrap());
    let a = Mat::<T>::new(ctx, "D", &sp).unwrap();
    let dd = ctx.dat("d", &s, 1, d).unwrap();
    let t = T::DTYPE;
    let k = Kernel::new(
        format!("put_{t}"),
        format!(
            "fn put_{t}(d: ptr<function, array<{t}, 1>>, a: ptr<function, array<{t}, 1>>) {{ (*a)[0] += (*d)[0]; }}"
        ),
    );
    ctx.par_loop(&k, &s, &[dd.read(), a.inc(&m, &m).unwrap()])
        .unwrap();
    (a, s)
}

/// A preconditioner that is not definite is a breakdown, named, under each recurrence, where
/// (r, M r) = 0 stops the steps (which would otherwise run to the iteration limit): at the
/// start (M = diag(1, -1) and r = [1, 1]), and after a first iteration (M r = 0 from the
/// second application on). In f64, where the adapter has it.
#[test]
fn a_preconditioner_not_definite_is_a_breakdown() {
    let ctx = ctx();
    if !ctx.gpu().f64() {
        return;
    }
    let (a, s) = diagonal_matrix(&ctx, &[2.0f64, 3.0]);
    let b = ctx.dat("b", &s, 1, &[1.0f64, 1.0]).unwrap();
    let m = ctx.dat("m", &s, 1, &[1.0f64, -1.0]).unwrap();
    let recurrences = [(false, false), (true, false), (false, true)];
    for (single_reduction, pipelined) in recurrences {
        let opts = SolveOptions {
            check_every: 1,
            single_reduction,
            pipelined,
            ..SolveOptions::default()
        };
        let x = ctx.dat_zeros::<f64>("x", &s, 1).unwrap();
        let e = cg(&ctx, &a, &b, &x, Some(&m), &opts)
            .err()
            .expect("breakdown");
        assert!(
            matches!(
                e,
                Error::Solver {
                    failure: SolverFailure::BrokeDown,
                    iterations: 0,
                    ..
                }
            ),
            "{opts:?}: {e:?}"
        );
        let e = e.to_string();
        assert!(
            e.contains("cg broke down at its start: (r, M r) is 0")
                && e.contains("so it is not definite"),
            "{e}"
        );
        if pipelined {
            // Its (r, u) is carried by the recurrence, not applied afresh.
            continue;
        }
        // M r = r once, then 0: (r, M r) is 0 after the first iteration.
        let calls = std::cell::Cell::new(0);
        let once = |ctx: &Context, r: &Dat<f64>, z: &Dat<f64>| {
            calls.set(calls.get() + 1);
            match calls.get() {
                1 => ctx.copy(r, z),
                _ => ctx.zero(z),
            }
        };
        let x = ctx.dat_zeros::<f64>("x", &s, 1).unwrap();
        let e = cg(&ctx, &a, &b, &x, Some(&once), &opts)
            .err()
            .expect("breakdown");
        let text = e.to_string();
        assert!(
            matches!(
                e,
                Error::Solver {
                    failure: SolverFailure::BrokeDown,
                    iterations: 1,
                    ..
                }
            ) && text.contains("cg broke down between iterations 0 and 1: (r, M r) is 0"),
            "{opts:?}: {text}"
        );
    }
}

/// A preconditioner with one negative entry, which CG handles in practice, is not a
/// breakdown, whichever iterations are checks: (r, M r) may change sign between checks (f64,
/// where the adapter has it).
#[test]
fn a_slightly_indefinite_preconditioner_still_converges() {
    let ctx = ctx();
    if !ctx.gpu().f64() {
        return;
    }
    let n = 2000;
    let c: Vec<f64> = (0..n)
        .map(|i| 1.0 + 9999.0 * i as f64 / (n - 1) as f64)
        .collect();
    let (a, s) = diagonal_matrix(&ctx, &c);
    let b = ctx.dat("b", &s, 1, &vec![1.0f64; n]).unwrap();
    let m: Vec<f64> = (0..n)
        .map(|i| 2.0 * c[i].sqrt() * if i == 7 { -1.0 } else { 1.0 })
        .collect();
    let m = ctx.dat("m", &s, 1, &m).unwrap();
    for (single_reduction, pipelined) in [(false, false), (true, false), (false, true)] {
        for check_every in [1, 3, 10] {
            let opts = SolveOptions {
                rtol: 1e-10,
                check_every,
                single_reduction,
                pipelined,
                ..SolveOptions::default()
            };
            let x = ctx.dat_zeros::<f64>("x", &s, 1).unwrap();
            let report =
                cg(&ctx, &a, &b, &x, Some(&m), &opts).unwrap_or_else(|e| panic!("{opts:?}: {e}"));
            assert!(report.true_residual < 1e-9, "{opts:?}: {report:?}");
        }
    }
}

#[test]
fn errors_name_what_is_wrong() {
    let ctx = ctx();
    let (vertices, cells, cv, _) = mesh(2, 0);
    let other = Map::new("other", &cells, &vertices, 3, cv.values()).unwrap();
    let s = Rc::new(Sparsity::new(&ctx, "s", &vertices, &vertices, &[(&cv, &cv)]).unwrap());
    let a = Mat::<f32>::new(&ctx, "A", &s).unwrap();
    let e = a.inc(&other, &cv).err().expect("refused").to_string();
    assert!(
        e.contains("was not built from the pair (`other`, `cell_vertices`)"),
        "{e}"
    );
    // A rectangular pattern (cells x vertices) has no diagonal.
    let one = Map::new(
        "first",
        &cells,
        &cells,
        1,
        &(0..cells.size() as u32).collect::<Vec<_>>(),
    )
    .unwrap();
    let rect = Rc::new(Sparsity::new(&ctx, "r", &cells, &vertices, &[(&one, &cv)]).unwrap());
    let r = Mat::<f32>::new(&ctx, "R", &rect).unwrap();
    let e = r
        .zero_rows(&ctx, &[2], 1.0)
        .err()
        .expect("refused")
        .to_string();
    assert!(e.contains("row 2 has no diagonal entry"), "{e}");
    let wrong: Dat<f32> = ctx.dat_zeros("w", &cells, 1).unwrap();
    let y = ctx.dat_zeros::<f32>("y", &vertices, 1).unwrap();
    let e = a.mult(&ctx, &wrong, &y).err().expect("refused").to_string();
    assert!(
        e.contains("x must be a Dat of dim 1 (the block) on `vertices`"),
        "{e}"
    );
    let e = Sparsity::new(&ctx, "bad", &cells, &vertices, &[(&cv, &cv)])
        .err()
        .expect("refused")
        .to_string();
    assert!(
        e.contains("pair 0: map `cell_vertices` goes to `vertices`"),
        "{e}"
    );
    // An indefinite matrix: p.Ap = 0 on the first step.
    let (d, s) = diagonal_matrix(&ctx, &[1.0f32, -1.0]);
    let b = ctx.dat("b", &s, 1, &[1.0f32, 1.0]).unwrap();
    let x = ctx.dat_zeros::<f32>("x", &s, 1).unwrap();
    let opts = SolveOptions {
        check_every: 1,
        ..SolveOptions::default()
    };
    let e = cg(&ctx, &d, &b, &x, None, &opts).err().expect("breakdown");
    assert!(
        matches!(
            e,
            Error::Solver {
                solver: "cg",
                failure: SolverFailure::BrokeDown,
                iterations: 1,
                ..
            }
        ),
        "{e:?}"
    );
    let e = e.to_string();
    assert!(
        e.contains("cg broke down between iterations 0 and 1"),
        "{e}"
    );
    // The same breakdown with one reduction per iteration: (w, u) = 0.
    let x = ctx.dat_zeros::<f32>("x", &s, 1).unwrap();
    let single = SolveOptions {
        single_reduction: true,
        ..opts.clone()
    };
    let e = cg(&ctx, &d, &b, &x, None, &single)
        .err()
        .expect("breakdown");
    assert!(
        matches!(
            e,
            Error::Solver {
                failure: SolverFailure::BrokeDown,
                iterations: 1,
                ..
            }
        ),
        "{e:?}"
    );
    // Two recurrences at once.
    let both = SolveOptions {
        single_reduction: true,
        pipelined: true,
        ..opts.clone()
    };
    let e = cg(&ctx, &d, &b, &x, None, &both).err().expect("refused");
    assert!(
        e.to_string()
            .contains("both single_reduction and pipelined"),
        "{e}"
    );
    // The iteration limit.
    let (d, s) = diagonal_matrix(&ctx, &[1.0f32, 2.0, 3.0, 4.0]);
    let b = ctx.dat("b", &s, 1, &[1.0f32; 4]).unwrap();
    let x = ctx.dat_zeros::<f32>("x", &s, 1).unwrap();
    let opts = SolveOptions {
        max_iterations: 2,
        rtol: 1e-9,
        check_every: 1,
        ..SolveOptions::default()
    };
    let e = cg(&ctx, &d, &b, &x, None, &opts).err().expect("limit");
    // What a Newton loop matches: not converged, after how many iterations, how far.
    match &e {
        Error::Solver {
            failure: SolverFailure::NotConverged,
            iterations: 2,
            residual,
            ..
        } => assert!(*residual > 1e-9 && *residual < 1.0, "{e:?}"),
        _ => panic!("{e:?}"),
    }
    let e = e.to_string();
    assert!(e.contains("did not converge in 2 iterations"), "{e}");
    // Jacobi makes a diagonal matrix one step.
    let x = ctx.dat_zeros::<f32>("x2", &s, 1).unwrap();
    let diag = d.diagonal(&ctx).unwrap();
    let rep = cg(
        &ctx,
        &d,
        &b,
        &x,
        Some(&diag),
        &SolveOptions {
            check_every: 1,
            ..SolveOptions::default()
        },
    )
    .unwrap();
    assert_eq!(rep.iterations, 1, "{rep:?}");
    assert_eq!(&*x.data_ro().unwrap(), &[1.0, 0.5, 1.0 / 3.0, 0.25]);
}
