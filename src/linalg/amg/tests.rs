//! The device's V-cycle against a plain-Rust model of the same cycle on the same hierarchy.

use super::build::upload;
use super::setup::{Hierarchy, Level, Params};
use super::*;
use crate::{Error, Set};
use sprs::{CsMat, TriMat};

fn spmv(a: &CsMat<f64>, x: &[f64]) -> Vec<f64> {
    a.outer_iterator()
        .map(|row| row.iter().map(|(j, &v)| v * x[j]).sum())
        .collect()
}

/// Chebyshev on [lower rho, rho] from x (zero when `zero`), as the device runs it.
fn chebyshev(l: &Level, o: &AmgOptions, b: &[f64], x: &mut [f64], zero: bool) {
    let (hi, lo) = (l.rho, o.lower * l.rho);
    let (theta, delta) = (0.5 * (hi + lo), 0.5 * (hi - lo));
    let sigma = theta / delta;
    let mut rho = 1.0 / sigma;
    let res = |x: &[f64]| -> Vec<f64> {
        let q = spmv(&l.a, x);
        b.iter().zip(&q).map(|(b, q)| b - q).collect()
    };
    let r = if zero { b.to_vec() } else { res(x) };
    let mut d: Vec<f64> = r
        .iter()
        .zip(&l.dinv)
        .map(|(r, di)| di * r / theta)
        .collect();
    for i in 0..x.len() {
        x[i] = if zero { d[i] } else { x[i] + d[i] };
    }
    for _ in 1..o.degree {
        let next = 1.0 / (2.0 * sigma - rho);
        let r = res(x);
        for i in 0..x.len() {
            d[i] = next * rho * d[i] + 2.0 * next / delta * l.dinv[i] * r[i];
            x[i] += d[i];
        }
        rho = next;
    }
}

fn vcycle(h: &Hierarchy, o: &AmgOptions, k: usize, b: &[f64]) -> Vec<f64> {
    let Some(l) = h.levels.get(k) else {
        let n = b.len();
        return (0..n)
            .map(|i| (0..n).map(|j| h.inverse[i * n + j] * b[j]).sum())
            .collect();
    };
    let mut x = vec![0.0; b.len()];
    chebyshev(l, o, b, &mut x, true);
    let q = spmv(&l.a, &x);
    let r: Vec<f64> = b.iter().zip(&q).map(|(b, q)| b - q).collect();
    let restriction: CsMat<f64> = l.p.transpose_view().to_csr();
    assert_eq!(restriction, l.r, "R is P^T on one process");
    let xc = vcycle(h, o, k + 1, &spmv(&restriction, &r));
    for (x, p) in x.iter_mut().zip(spmv(&l.p, &xc)) {
        *x += p;
    }
    chebyshev(l, o, b, &mut x, false);
    x
}

/// The 5-point Laplacian of an n x n grid, its boundary rows zeroed but for a 1 on the
/// diagonal (their columns kept, as `Mat::zero_rows` leaves them).
fn laplacian(n: usize) -> CsMat<f64> {
    let mut t = TriMat::new((n * n, n * n));
    for i in 0..n {
        for j in 0..n {
            let r = i * n + j;
            if i == 0 || j == 0 || i == n - 1 || j == n - 1 {
                t.add_triplet(r, r, 1.0);
                continue;
            }
            t.add_triplet(r, r, 4.0);
            for c in [r - 1, r + 1, r - n, r + n] {
                t.add_triplet(r, c, -1.0);
            }
        }
    }
    t.to_csr()
}

/// `a` with each entry a_ij replaced by the block a_ij C (C = [[2, 1], [1, 2]], symmetric
/// positive definite: two coupled components per node), expanded to scalar entries.
fn coupled(a: &CsMat<f64>) -> CsMat<f64> {
    let c = [[2.0, 1.0], [1.0, 2.0]];
    let mut t = TriMat::new((2 * a.rows(), 2 * a.cols()));
    for (i, row) in a.outer_iterator().enumerate() {
        for (j, &v) in row.iter() {
            for (p, q) in [(0, 0), (0, 1), (1, 0), (1, 1)] {
                t.add_triplet(2 * i + p, 2 * j + q, v * c[p][q]);
            }
        }
    }
    t.to_csr()
}

#[test]
fn the_device_cycle_is_the_model_cycle() {
    let ctx = Context::new().unwrap();
    if !ctx.gpu().f64() {
        return;
    }
    // Scalar, then 2 x 2 blocks.
    for (a, nb) in [(laplacian(24), 1), (coupled(&laplacian(16)), 2)] {
        cycle_against_model(&ctx, &a, nb);
    }
}

fn cycle_against_model(ctx: &Context, a: &CsMat<f64>, nb: usize) {
    let set = Set::new("grid", a.rows() / nb);
    let mat = upload::<f64>(ctx, "A", (&set, &set), a, nb).unwrap();
    for levels in [2, 3] {
        let o = AmgOptions {
            max_coarse: 20,
            max_levels: levels,
            degree: 3,
            ..AmgOptions::default()
        };
        let amg = Amg::new(ctx, &mat, &o).unwrap();
        assert_eq!(amg.report().levels.len(), levels, "{:?}", amg.report());
        let params = Params {
            max_coarse: 20,
            max_levels: levels,
            ..Params::default()
        };
        let part = super::ranks::Part::single(a.rows() / nb);
        let one = crate::part::Comm::single();
        let word = |e| Error::Data(format!("{e:?}"));
        let h = Hierarchy::new(a.clone(), part, nb, &params, None, (&one, &word)).unwrap();
        let b: Vec<f64> = (0..a.rows())
            .map(|i| ((i * 37) % 11) as f64 - 5.0)
            .collect();
        let want = vcycle(&h, &o, 0, &b);
        let r = ctx.dat("r", &set, nb, &b).unwrap();
        let z = ctx.dat_zeros::<f64>("z", &set, nb).unwrap();
        amg.apply(ctx, &r, &z).unwrap();
        let got = z.data_ro().unwrap();
        let scale = want.iter().fold(0.0f64, |m, v| m.max(v.abs()));
        for (i, (g, w)) in got.iter().zip(&want).enumerate() {
            assert!(
                (g - w).abs() <= 1e-12 * scale,
                "block {nb}, {levels} levels, row {i}: {g} vs {w}"
            );
        }
    }
}

/// The tentative prolongation of 2 x 2 blocks: orthonormal columns (P0^T P0 = I), and the
/// coarse candidates reproduce the fine ones (P0 Bc = B), for the constant candidates and for
/// candidates that are not.
#[test]
fn the_block_tentative_prolongation_is_orthonormal_and_keeps_the_candidates() {
    use super::setup::tentative;
    let nodes = 40;
    // Aggregates of 4 consecutive nodes, node 13 isolated.
    let agg: Vec<u32> = (0..nodes as u32)
        .map(|i| if i == 13 { setup::ISOLATED } else { i / 4 })
        .collect();
    let count = nodes / 4;
    let rows = nodes * 2;
    let constant: Vec<f64> = (0..2)
        .flat_map(|c| (0..rows).map(move |i| f64::from(u8::from(i % 2 == c))))
        .collect();
    let varied: Vec<f64> = (0..2 * rows)
        .map(|k| 1.0 + ((k * 7919) % 13) as f64 / 13.0)
        .collect();
    for cand in [constant, varied] {
        let (p0, coarse) = tentative(&agg, count, 2, &cand);
        let (p0, coarse_rows) = (p0.to_dense(), count * 2);
        for j in 0..coarse_rows {
            for k in 0..coarse_rows {
                let dot: f64 = (0..rows).map(|i| p0[[i, j]] * p0[[i, k]]).sum();
                let want = f64::from(u8::from(j == k));
                assert!((dot - want).abs() < 1e-12, "P0^T P0 [{j}, {k}] = {dot}");
            }
        }
        for c in 0..2 {
            for i in 0..rows {
                let got: f64 = (0..coarse_rows)
                    .map(|j| p0[[i, j]] * coarse[c * coarse_rows + j])
                    .sum();
                let want = if agg[i / 2] == setup::ISOLATED {
                    0.0
                } else {
                    cand[c * rows + i]
                };
                assert!(
                    (got - want).abs() < 1e-12,
                    "candidate {c}, row {i}: {got} against {want}"
                );
            }
        }
    }
}

/// A matrix no larger than `max_coarse` has one level, the coarsest: the cycle is its dense
/// inverse, so z = A^-1 r exactly (on the matrix's own set).
#[test]
fn a_single_level_hierarchy_solves_exactly() {
    let ctx = Context::new().unwrap();
    if !ctx.gpu().f64() {
        return;
    }
    let a = laplacian(5);
    let set = Set::new("small", a.rows());
    let mat = upload::<f64>(&ctx, "A", (&set, &set), &a, 1).unwrap();
    let amg = Amg::new(&ctx, &mat, &AmgOptions::default()).unwrap();
    assert_eq!(amg.report().levels.len(), 1, "{:?}", amg.report());
    let r: Vec<f64> = (0..a.rows()).map(|i| (i % 7) as f64 - 3.0).collect();
    let rd = ctx.dat("r", &set, 1, &r).unwrap();
    let z = ctx.dat_zeros::<f64>("z", &set, 1).unwrap();
    amg.apply(&ctx, &rd, &z).unwrap();
    let z = z.data_ro().unwrap().to_vec();
    for (i, (az, want)) in spmv(&a, &z).iter().zip(&r).enumerate() {
        assert!(
            (az - want).abs() < 1e-10,
            "row {i}: (A z) = {az} against r = {want}"
        );
    }
}
