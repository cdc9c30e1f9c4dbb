//! An upper estimate of a level's spectral radius for its smoothers: Lanczos steps on the
//! symmetrically scaled operator, on this rank's rows with the halo exchanged per step.

use super::ranks::{self, Part};
use super::setup::SetupError;
use crate::part::Comm;
use sprs::{CsMat, TriMat};

/// An upper estimate of the spectral radius of D^-1 A: Lanczos on |D|^-1/2 sign(D) S
/// |D|^-1/2, S the symmetric part of A's entries that have a transposed partner (A itself
/// when symmetric; a Dirichlet row kept with its column gives the same spectrum as
/// eliminating it), the largest Ritz value, 5% up. PyAMG's approximate spectral radius takes
/// the same from a few Lanczos steps. D^-1 A with negative eigenvalues as well as positive
/// ones (an indefinite A, which the smoothers cannot damp) is an error. `a` holds this
/// rank's owned rows of `part`'s nodes (`b` unknowns each) with local columns; the result is
/// the same on every rank.
pub(super) fn spectral_radius(
    a: &CsMat<f64>,
    dinv: &[f64],
    part: &Part,
    b: usize,
    comm: &Comm,
) -> Result<f64, SetupError> {
    let (n, total) = (a.rows(), a.cols());
    let at: CsMat<f64> = a.transpose_view().to_csr();
    let remote = ranks::transposed_halo_entries(comm, a, part, b);
    let mut t = TriMat::new((n, total));
    for (i, row) in a.outer_iterator().enumerate() {
        let back = at.outer_view(i);
        for (j, &v) in row.iter() {
            let w = match j < n {
                true => back.as_ref().and_then(|r| r.get(j)).copied(),
                false => remote.get(&(i, j)).copied(),
            };
            if let Some(w) = w.filter(|&w| w != 0.0 && v != 0.0) {
                t.add_triplet(i, j, 0.5 * (v + w));
            }
        }
    }
    let a: CsMat<f64> = t.to_csr();
    // A negative definite A (negative diagonal) has D^-1 A positive definite too.
    let mut s: Vec<f64> = dinv.iter().map(|d| d.abs().sqrt()).collect();
    s.resize(total, 0.0);
    part.exchange(comm, &mut s, b);
    let mut v = vec![0.0; total];
    let mut apply = |x: &[f64], out: &mut [f64]| {
        v[..n].copy_from_slice(x);
        part.exchange(comm, &mut v, b);
        for (i, row) in a.outer_iterator().enumerate() {
            let sum = row.iter().map(|(j, &y)| y * s[j] * v[j]).sum::<f64>();
            out[i] = dinv[i].signum() * s[i] * sum;
        }
    };
    let dot = |x: &[f64], y: &[f64]| ranks::sum(comm, x.iter().zip(y).map(|(x, y)| x * y).sum());
    let norm = |x: &[f64]| dot(x, x).sqrt();
    // A fixed start that is not special, by global number: deterministic setups on every
    // run, rank and partition.
    let glob = |i: usize| part.global[i / b] as usize * b + i % b;
    let mut x: Vec<f64> = (0..n)
        .map(|i| 1.0 + ((glob(i) * 7919) % 101) as f64 / 101.0)
        .collect();
    let nx = norm(&x);
    x.iter_mut().for_each(|y| *y /= nx);
    let (mut alpha, mut beta) = (Vec::new(), Vec::new());
    let mut prev = vec![0.0; n];
    let mut w = vec![0.0; n];
    for k in 0..20.min(part.global_size * b) {
        apply(&x, &mut w);
        let a_k = dot(&w, &x);
        let b_prev = if k > 0 { beta[k - 1] } else { 0.0 };
        for i in 0..n {
            w[i] -= a_k * x[i] + b_prev * prev[i];
        }
        alpha.push(a_k);
        let b_k = norm(&w);
        if b_k < 1e-12 * a_k.abs().max(1e-300) {
            break;
        }
        beta.push(b_k);
        prev.copy_from_slice(&x);
        x.iter_mut().zip(&w).for_each(|(y, z)| *y = z / b_k);
    }
    let (lo, hi) = extreme_eigenvalues(&alpha, &beta);
    if lo < -1e-3 * hi.abs() {
        return Err(SetupError::Indefinite(lo, hi));
    }
    Ok(1.05 * hi)
}

/// The smallest and largest eigenvalues of the symmetric tridiagonal matrix with diagonal `a` and
/// off-diagonal `b`, by bisection on Sturm counts.
fn extreme_eigenvalues(a: &[f64], b: &[f64]) -> (f64, f64) {
    let m = a.len();
    let bound = (0..m)
        .map(|i| {
            let l = if i > 0 { b[i - 1].abs() } else { 0.0 };
            let r = if i + 1 < m && i < b.len() {
                b[i].abs()
            } else {
                0.0
            };
            a[i].abs() + l + r
        })
        .fold(0.0f64, f64::max);
    // Eigenvalues below x.
    let below = |x: f64| {
        let mut count = 0;
        let mut q = 1.0;
        for i in 0..m {
            let off = if i > 0 { b[i - 1] * b[i - 1] } else { 0.0 };
            q = a[i] - x - if i > 0 { off / q } else { 0.0 };
            if q == 0.0 {
                q = 1e-300;
            }
            if q < 0.0 {
                count += 1;
            }
        }
        count
    };
    // The smallest x with at least `k` eigenvalues below it.
    let bisect = |k: usize| {
        let (mut lo, mut hi) = (-bound, bound);
        for _ in 0..100 {
            let mid = 0.5 * (lo + hi);
            if below(mid) >= k {
                hi = mid;
            } else {
                lo = mid;
            }
        }
        hi
    };
    (bisect(1), bisect(m))
}
