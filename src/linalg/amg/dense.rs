//! The coarsest level's inverse, dense, on the host in f64: Gauss-Jordan, or a symmetric
//! singular operator's pseudo-inverse.

use super::setup::SetupError;
use sprs::CsMat;

/// The coarsest operator's inverse, dense and row-major: Gauss-Jordan with partial
/// pivoting; a singular symmetric operator (a pure Neumann problem's) gets its
/// pseudo-inverse from Jacobi's eigenvalue method. Pivots and eigenvalues count as zero
/// relative to `reference` too (the finest operator's largest entry): a singular problem's
/// coarsest level can be all roundoff, which inverted would swamp the cycle.
pub(super) fn dense_inverse(a: &CsMat<f64>, reference: f64) -> Result<Vec<f64>, SetupError> {
    let n = a.rows();
    let mut m = vec![0.0; n * n];
    for (i, row) in a.outer_iterator().enumerate() {
        for (j, &v) in row.iter() {
            m[i * n + j] += v;
        }
    }
    let scale = m.iter().fold(reference, |s, v| s.max(v.abs()));
    if let Some(inv) = gauss_jordan(&m, n, 1e-12 * scale) {
        return Ok(inv);
    }
    let symmetric =
        (0..n).all(|i| (0..i).all(|j| (m[i * n + j] - m[j * n + i]).abs() <= 1e-12 * scale));
    if !symmetric {
        return Err(SetupError::SingularCoarse(n));
    }
    Ok(pseudo_inverse(m, n, scale))
}

/// The inverse of the n x n matrix `m`, or None when a pivot falls below `tiny`.
fn gauss_jordan(m: &[f64], n: usize, tiny: f64) -> Option<Vec<f64>> {
    let mut a = m.to_vec();
    let mut inv = vec![0.0; n * n];
    for i in 0..n {
        inv[i * n + i] = 1.0;
    }
    for c in 0..n {
        let p = (c..n).max_by(|&x, &y| a[x * n + c].abs().total_cmp(&a[y * n + c].abs()))?;
        if a[p * n + c].abs() <= tiny {
            return None;
        }
        for k in 0..n {
            a.swap(c * n + k, p * n + k);
            inv.swap(c * n + k, p * n + k);
        }
        let d = 1.0 / a[c * n + c];
        for k in 0..n {
            a[c * n + k] *= d;
            inv[c * n + k] *= d;
        }
        for r in 0..n {
            let f = a[r * n + c];
            if r != c && f != 0.0 {
                for k in 0..n {
                    a[r * n + k] -= f * a[c * n + k];
                    inv[r * n + k] -= f * inv[c * n + k];
                }
            }
        }
    }
    Some(inv)
}

/// The pseudo-inverse of the symmetric n x n matrix `m`: its eigenvectors by cyclic Jacobi
/// rotations, the eigenvalues below 1e-10 of the largest dropped.
fn pseudo_inverse(mut m: Vec<f64>, n: usize, scale: f64) -> Vec<f64> {
    let mut v = vec![0.0; n * n];
    for i in 0..n {
        v[i * n + i] = 1.0;
    }
    for _ in 0..100 {
        let off: f64 = (0..n)
            .flat_map(|i| (0..n).filter(move |&j| j != i).map(move |j| (i, j)))
            .map(|(i, j)| m[i * n + j] * m[i * n + j])
            .sum();
        if off.sqrt() <= 1e-15 * scale * n as f64 {
            break;
        }
        for p in 0..n {
            for q in p + 1..n {
                let apq = m[p * n + q];
                if apq == 0.0 {
                    continue;
                }
                let theta = (m[q * n + q] - m[p * n + p]) / (2.0 * apq);
                let t = theta.signum() / (theta.abs() + (theta * theta + 1.0).sqrt());
                let t = if theta == 0.0 { 1.0 } else { t };
                let c = 1.0 / (t * t + 1.0).sqrt();
                let s = t * c;
                for k in 0..n {
                    let (mkp, mkq) = (m[k * n + p], m[k * n + q]);
                    m[k * n + p] = c * mkp - s * mkq;
                    m[k * n + q] = s * mkp + c * mkq;
                }
                for k in 0..n {
                    let (mpk, mqk) = (m[p * n + k], m[q * n + k]);
                    m[p * n + k] = c * mpk - s * mqk;
                    m[q * n + k] = s * mpk + c * mqk;
                }
                for k in 0..n {
                    let (vkp, vkq) = (v[k * n + p], v[k * n + q]);
                    v[k * n + p] = c * vkp - s * vkq;
                    v[k * n + q] = s * vkp + c * vkq;
                }
            }
        }
    }
    let top = (0..n).fold(scale, |t, i| t.max(m[i * n + i].abs()));
    let mut inv = vec![0.0; n * n];
    for k in 0..n {
        let l = m[k * n + k];
        if l.abs() > 1e-10 * top {
            for i in 0..n {
                let f = v[i * n + k] / l;
                for j in 0..n {
                    inv[i * n + j] += f * v[j * n + k];
                }
            }
        }
    }
    inv
}
