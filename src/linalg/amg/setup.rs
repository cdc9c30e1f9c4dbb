//! Smoothed aggregation's setup, on the host in f64: the strength of connection, aggregates,
//! the tentative and smoothed prolongations, the Galerkin products R A P, each level's
//! spectral radius for the smoothers, and the coarsest level's inverse.

use super::dense::dense_inverse;
use sprs::{CsMat, TriMat};

/// What the setup builds from: PyAMG's `smoothed_aggregation_solver` defaults where they
/// apply on a GPU.
#[derive(Clone, Debug)]
pub(super) struct Params {
    /// Connections with |a_ij| >= theta sqrt(|a_ii a_jj|) (both ways) are strong.
    pub(super) theta: f64,
    /// Stop coarsening at this many unknowns or fewer; that level is solved directly.
    pub(super) max_coarse: usize,
    /// The most levels, the finest included.
    pub(super) max_levels: usize,
    /// The prolongation smoother's weight, over the spectral radius of D^-1 A.
    pub(super) omega: f64,
    /// Symmetric Gauss-Seidel sweeps on A x = 0 that improve the near-nullspace candidates
    /// before each level's aggregation.
    pub(super) improve: usize,
    /// The most unknowns of the coarsest level, inverted densely.
    pub(super) max_dense: usize,
}

impl Default for Params {
    fn default() -> Params {
        Params {
            theta: 0.0,
            max_coarse: 200,
            max_levels: 10,
            omega: 4.0 / 3.0,
            improve: 4,
            max_dense: 256,
        }
    }
}

/// One level above the coarsest: its operator and the transfers to the next.
pub(super) struct Level {
    /// The operator (the user's matrix on the finest level).
    pub(super) a: CsMat<f64>,
    /// Prolongation: this level's unknowns x the next level's.
    pub(super) p: CsMat<f64>,
    /// The inverse of A's diagonal.
    pub(super) dinv: Vec<f64>,
    /// An upper estimate of the spectral radius of D^-1 A.
    pub(super) rho: f64,
}

/// The hierarchy: the levels, the coarsest operator and its inverse.
pub(super) struct Hierarchy {
    pub(super) levels: Vec<Level>,
    /// The coarsest operator.
    pub(super) coarse: CsMat<f64>,
    /// Its inverse (a pseudo-inverse when it is symmetric and singular), dense, row-major.
    pub(super) inverse: Vec<f64>,
    /// The aggregates of each level (each unknown's aggregate, and their count), which a
    /// rebuild from new values of the same pattern may reuse.
    pub(super) aggregates: Vec<(Vec<u32>, usize)>,
}

/// What went wrong, for the caller to word.
#[derive(Debug, PartialEq)]
pub(super) enum SetupError {
    /// The matrix is not square (rows, columns).
    NotSquare(usize, usize),
    /// Row `.0` has a zero (or no) diagonal entry.
    ZeroDiagonal(usize),
    /// An entry is not finite: its row.
    NotFinite(usize),
    /// The coarsest operator (its size) is singular and not symmetric.
    SingularCoarse(usize),
    /// D^-1 A has eigenvalues of both signs (about the smallest and the largest).
    Indefinite(f64, f64),
    /// Coarsening stopped with more unknowns than `max_dense`, after so many levels (the
    /// finest included), because nothing more aggregated (`stalled`) or at `max_levels`.
    CoarseTooLarge {
        unknowns: usize,
        levels: usize,
        stalled: bool,
    },
}

impl Hierarchy {
    /// Builds the hierarchy of `a` (CSR, scalar entries, `block` consecutive unknowns per
    /// node: a block matrix's rows expanded); with `reuse`, the aggregates of an earlier build
    /// of a matrix of the same pattern (no strength, no aggregation: the candidates,
    /// prolongations and products are recomputed from the values). Nodes are aggregated (by
    /// the Frobenius norms of the blocks), with `block` candidates, one constant per
    /// component (PyAMG's default for block matrices); every level keeps `block` unknowns per
    /// node (an aggregate is a node of the next).
    pub(super) fn new(
        a: CsMat<f64>,
        block: usize,
        params: &Params,
        reuse: Option<&[(Vec<u32>, usize)]>,
    ) -> Result<Hierarchy, SetupError> {
        let mut levels = Vec::new();
        let mut kept = Vec::new();
        let mut a = a.to_csr();
        if a.rows() != a.cols() {
            return Err(SetupError::NotSquare(a.rows(), a.cols()));
        }
        let scale = a.data().iter().fold(0.0f64, |m, v| m.max(v.abs()));
        let b = block;
        // The candidates, column-major: candidate c is 1 on component c of every node.
        let mut candidate: Vec<f64> = (0..b)
            .flat_map(|c| (0..a.rows()).map(move |i| if i % b == c { 1.0 } else { 0.0 }))
            .collect();
        let mut stalled = false;
        loop {
            let n = a.rows();
            let dinv = inverse_diagonal(&a)?;
            let (aggregate, count) = match reuse {
                Some(r) => match r.get(levels.len()) {
                    Some(agg) if agg.0.len() * b == n => agg.clone(),
                    _ => break,
                },
                None => {
                    if n <= params.max_coarse || levels.len() + 1 >= params.max_levels {
                        break;
                    }
                    let strong = strength(&nodes(&a, b), params.theta);
                    let (aggregate, count) = aggregates(&strong);
                    if count == 0 || count as f64 > 0.9 * (n / b) as f64 {
                        // Nothing to aggregate (a diagonal matrix) or coarsening stalled.
                        stalled = true;
                        break;
                    }
                    (aggregate, count)
                }
            };
            for (c, x) in candidate.chunks_mut(n).enumerate() {
                improve(&a, x, params.improve, (c, b));
            }
            let (p0, coarse_candidate) = tentative(&aggregate, count, b, &candidate);
            let rho = spectral_radius(&a, &dinv)?;
            let p = smooth(&a, &dinv, &p0, params.omega / rho);
            let r: CsMat<f64> = p.transpose_view().to_csr();
            let ap = &a * &p;
            let next = (&r * &ap).to_csr();
            levels.push(Level { a, p, dinv, rho });
            kept.push((aggregate, count));
            a = next;
            candidate = coarse_candidate;
        }
        if a.rows() > params.max_dense {
            return Err(SetupError::CoarseTooLarge {
                unknowns: a.rows(),
                levels: levels.len() + 1,
                stalled,
            });
        }
        let inverse = dense_inverse(&a, scale)?;
        // The levels' own estimates for the smoothers (the coarsest is solved directly).
        Ok(Hierarchy {
            levels,
            coarse: a,
            inverse,
            aggregates: kept,
        })
    }
}

/// 1 / a_ii per row; a zero or missing diagonal entry, or a value not finite, is an error.
fn inverse_diagonal(a: &CsMat<f64>) -> Result<Vec<f64>, SetupError> {
    let mut d = vec![0.0; a.rows()];
    for (i, row) in a.outer_iterator().enumerate() {
        for (j, &v) in row.iter() {
            if !v.is_finite() {
                return Err(SetupError::NotFinite(i));
            }
            if i == j {
                d[i] += v;
            }
        }
    }
    d.iter()
        .enumerate()
        .map(|(i, &v)| {
            if v == 0.0 {
                Err(SetupError::ZeroDiagonal(i))
            } else {
                Ok(1.0 / v)
            }
        })
        .collect()
}

/// Symmetric Gauss-Seidel sweeps on A x = 0 from `x`: smooths the candidate towards A's
/// near nullspace (small near Dirichlet boundaries), then scales it to unit maximum. A
/// candidate that vanishes becomes component c's constant again (of `b` per node).
fn improve(a: &CsMat<f64>, x: &mut [f64], sweeps: usize, (c, b): (usize, usize)) {
    let sweep = |x: &mut [f64], i: usize| {
        let (mut s, mut d) = (0.0, 0.0);
        for (j, &v) in a.outer_view(i).unwrap().iter() {
            if j == i {
                d += v;
            } else {
                s += v * x[j];
            }
        }
        x[i] = -s / d;
    };
    for _ in 0..sweeps {
        for i in 0..x.len() {
            sweep(x, i);
        }
        for i in (0..x.len()).rev() {
            sweep(x, i);
        }
    }
    let max = x.iter().fold(0.0f64, |m, v| m.max(v.abs()));
    if max > 0.0 && max.is_finite() {
        x.iter_mut().for_each(|v| *v /= max);
    } else {
        x.iter_mut()
            .enumerate()
            .for_each(|(i, v)| *v = f64::from(u8::from(i % b == c)));
    }
}

/// The strong connections of each row, as lists: j != i with |a_ij| >= theta sqrt(|a_ii
/// a_jj|) and a_ij, a_ji both nonzero (so a Dirichlet row, zeroed but for its diagonal,
/// leaves its node isolated even where its column was kept).
fn strength(a: &CsMat<f64>, theta: f64) -> Vec<Vec<u32>> {
    let diag: Vec<f64> = (0..a.rows())
        .map(|i| a.get(i, i).copied().unwrap_or(0.0).abs())
        .collect();
    let at: CsMat<f64> = a.transpose_view().to_csr();
    let strong = |i: usize, j: usize, v: f64| {
        i != j && v != 0.0 && v.abs() >= theta * (diag[i] * diag[j]).sqrt()
    };
    (0..a.rows())
        .map(|i| {
            let back = at.outer_view(i).unwrap();
            a.outer_view(i)
                .unwrap()
                .iter()
                .filter(|&(j, &v)| strong(i, j, v) && back.get(j).is_some_and(|&w| strong(i, j, w)))
                .map(|(j, _)| j as u32)
                .collect()
        })
        .collect()
}

/// No aggregate (yet).
const FREE: u32 = u32::MAX;
/// A node with no strong connection: in no aggregate (the smoother alone handles it).
pub(super) const ISOLATED: u32 = u32::MAX - 1;

/// Standard aggregation (Vanek, Mandel and Brezina), PyAMG's three passes: a node whose
/// strong neighbours are all free roots an aggregate of them; a free node joins the
/// aggregate of a neighbour placed in the first pass; what is left roots aggregates of its
/// free neighbours. Gives each node's aggregate (or ISOLATED) and the count.
fn aggregates(strong: &[Vec<u32>]) -> (Vec<u32>, usize) {
    let n = strong.len();
    let mut agg = vec![FREE; n];
    let mut count = 0u32;
    for i in 0..n {
        if agg[i] != FREE {
            continue;
        }
        if strong[i].is_empty() {
            agg[i] = ISOLATED;
        } else if strong[i].iter().all(|&j| agg[j as usize] == FREE) {
            agg[i] = count;
            for &j in &strong[i] {
                agg[j as usize] = count;
            }
            count += 1;
        }
    }
    let first = agg.clone();
    for i in 0..n {
        if agg[i] == FREE {
            if let Some(&j) = strong[i].iter().find(|&&j| first[j as usize] < ISOLATED) {
                agg[i] = first[j as usize];
            }
        }
    }
    for i in 0..n {
        if agg[i] == FREE {
            agg[i] = count;
            for &j in &strong[i] {
                if agg[j as usize] == FREE {
                    agg[j as usize] = count;
                }
            }
            count += 1;
        }
    }
    (agg, count as usize)
}

/// The node matrix of a matrix of `b` x `b` blocks (expanded): entry (I, J) is block (I, J)'s
/// Frobenius norm, with the sign of its trace where it has one (so that a scalar matrix,
/// b = 1, is its own node matrix).
fn nodes(a: &CsMat<f64>, b: usize) -> CsMat<f64> {
    if b == 1 {
        return a.clone();
    }
    let n = a.rows() / b;
    // Per node row: the sums of squares and of diagonal components, by node column.
    let (mut sq, mut trace, mut seen) = (vec![0.0; n], vec![0.0; n], vec![false; n]);
    let mut t = TriMat::new((n, n));
    for node in 0..n {
        let mut cols = Vec::new();
        for i in node * b..(node + 1) * b {
            for (j, &v) in a.outer_view(i).unwrap().iter() {
                let k = j / b;
                if !seen[k] {
                    seen[k] = true;
                    cols.push(k);
                }
                sq[k] += v * v;
                if i % b == j % b {
                    trace[k] += v;
                }
            }
        }
        cols.sort_unstable();
        for k in cols {
            let sign = if trace[k] < 0.0 { -1.0 } else { 1.0 };
            t.add_triplet(node, k, sign * sq[k].sqrt());
            (sq[k], trace[k], seen[k]) = (0.0, 0.0, false);
        }
    }
    t.to_csr()
}

/// The tentative prolongation and the next level's candidates: the rows of aggregate a (its
/// nodes' `b` unknowns each) of the `b` candidates B (column-major, `agg.len() b` rows)
/// factored B_a = Q R by modified Gram-Schmidt; Q fills columns a b .. a b + b of P0 and R
/// becomes the coarse candidates' rows of node a. An aggregate whose candidates are
/// dependent there (they vanish) takes each component's constant instead.
pub(super) fn tentative(
    agg: &[u32],
    count: usize,
    b: usize,
    cand: &[f64],
) -> (CsMat<f64>, Vec<f64>) {
    let rows = agg.len() * b;
    let mut members: Vec<Vec<usize>> = vec![Vec::new(); count];
    for (i, &a) in agg.iter().enumerate() {
        if a < ISOLATED {
            members[a as usize].extend((0..b).map(|c| i * b + c));
        }
    }
    let mut t = TriMat::new((rows, count * b));
    let mut coarse = vec![0.0; count * b * b];
    for (a, m) in members.iter().enumerate() {
        let local = |constant: bool| -> Vec<Vec<f64>> {
            (0..b)
                .map(|c| {
                    m.iter()
                        .map(|&r| match constant {
                            true => f64::from(u8::from(r % b == c)),
                            false => cand[c * rows + r],
                        })
                        .collect()
                })
                .collect()
        };
        let (q, r) = match gram_schmidt(local(false)) {
            Some(qr) => qr,
            None => gram_schmidt(local(true)).expect("constants per component are independent"),
        };
        for (j, col) in q.iter().enumerate() {
            for (k, &row) in m.iter().enumerate() {
                t.add_triplet(row, a * b + j, col[k]);
            }
        }
        // Coarse candidate c at unknown a b + j is R[j][c].
        for j in 0..b {
            for c in 0..b {
                coarse[c * count * b + a * b + j] = r[j][c];
            }
        }
    }
    (t.to_csr(), coarse)
}

/// Q R of the columns `v` (modified Gram-Schmidt): the orthonormal columns and R (row j,
/// column c); None when a column is dependent on the ones before it.
#[allow(clippy::type_complexity)]
fn gram_schmidt(mut v: Vec<Vec<f64>>) -> Option<(Vec<Vec<f64>>, Vec<Vec<f64>>)> {
    let k = v.len();
    let mut r = vec![vec![0.0; k]; k];
    let norm = |x: &[f64]| x.iter().map(|y| y * y).sum::<f64>().sqrt();
    for c in 0..k {
        let before = norm(&v[c]);
        for j in 0..c {
            let dot: f64 = v[j].iter().zip(&v[c]).map(|(x, y)| x * y).sum();
            r[j][c] = dot;
            let (head, tail) = v.split_at_mut(c);
            tail[0]
                .iter_mut()
                .zip(&head[j])
                .for_each(|(y, x)| *y -= dot * x);
        }
        let after = norm(&v[c]);
        if !(after > 1e-10 * before) || after == 0.0 {
            return None;
        }
        r[c][c] = after;
        v[c].iter_mut().for_each(|y| *y /= after);
    }
    Some((v, r))
}

/// P = (I - w D^-1 A) P0: Jacobi's smoothing of the tentative prolongation.
fn smooth(a: &CsMat<f64>, dinv: &[f64], p0: &CsMat<f64>, w: f64) -> CsMat<f64> {
    let mut ap: CsMat<f64> = (a * p0).to_csr();
    let starts = ap.indptr().to_proper().to_vec();
    let data = ap.data_mut();
    for (i, s) in starts.windows(2).enumerate() {
        data[s[0]..s[1]].iter_mut().for_each(|v| *v *= -w * dinv[i]);
    }
    (&ap + p0).to_csr()
}

/// An upper estimate of the spectral radius of D^-1 A: Lanczos on |D|^-1/2 sign(D) S
/// |D|^-1/2, S the symmetric part of A's entries that have a transposed partner (A itself
/// when symmetric; a Dirichlet row kept with its column gives the same spectrum as
/// eliminating it), the largest Ritz value, 5% up. PyAMG's approximate spectral radius takes
/// the same from a few Lanczos steps. D^-1 A with negative eigenvalues as well as positive
/// ones (an indefinite A, which the smoothers cannot damp) is an error.
fn spectral_radius(a: &CsMat<f64>, dinv: &[f64]) -> Result<f64, SetupError> {
    let n = a.rows();
    let at: CsMat<f64> = a.transpose_view().to_csr();
    let mut t = TriMat::new((n, n));
    for (i, row) in a.outer_iterator().enumerate() {
        let back = at.outer_view(i).unwrap();
        for (j, &v) in row.iter() {
            if let Some(&w) = back.get(j).filter(|&&w| w != 0.0 && v != 0.0) {
                t.add_triplet(i, j, 0.5 * (v + w));
            }
        }
    }
    let a: CsMat<f64> = t.to_csr();
    // A negative definite A (negative diagonal) has D^-1 A positive definite too.
    let s: Vec<f64> = dinv.iter().map(|d| d.abs().sqrt()).collect();
    let apply = |v: &[f64], out: &mut [f64]| {
        for (i, row) in a.outer_iterator().enumerate() {
            let sum = row.iter().map(|(j, &x)| x * s[j] * v[j]).sum::<f64>();
            out[i] = dinv[i].signum() * s[i] * sum;
        }
    };
    // A fixed start that is not special: deterministic setups on every run and rank.
    let mut v: Vec<f64> = (0..n)
        .map(|i| 1.0 + ((i * 7919) % 101) as f64 / 101.0)
        .collect();
    let norm = |v: &[f64]| v.iter().map(|x| x * x).sum::<f64>().sqrt();
    let nv = norm(&v);
    v.iter_mut().for_each(|x| *x /= nv);
    let (mut alpha, mut beta) = (Vec::new(), Vec::new());
    let mut prev = vec![0.0; n];
    let mut w = vec![0.0; n];
    for k in 0..20.min(n) {
        apply(&v, &mut w);
        let a_k: f64 = w.iter().zip(&v).map(|(x, y)| x * y).sum();
        let b_prev = if k > 0 { beta[k - 1] } else { 0.0 };
        for i in 0..n {
            w[i] -= a_k * v[i] + b_prev * prev[i];
        }
        alpha.push(a_k);
        let b_k = norm(&w);
        if b_k < 1e-12 * a_k.abs().max(1e-300) {
            break;
        }
        beta.push(b_k);
        prev.copy_from_slice(&v);
        v.iter_mut().zip(&w).for_each(|(x, y)| *x = y / b_k);
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
