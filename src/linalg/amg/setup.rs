//! Smoothed aggregation's setup, on the host in f64: the strength of connection, aggregates,
//! the tentative and smoothed prolongations, the Galerkin products R A P, each level's
//! spectral radius for the smoothers, and the coarsest level's inverse.

use super::dense::dense_inverse;
use super::ranks::{self, Part};
use super::spectrum::spectral_radius;
use crate::part::Comm;
use crate::{Error, Result};
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
    /// Restriction P^T: the next level's unknowns x this level's.
    pub(super) r: CsMat<f64>,
    /// The inverse of A's diagonal.
    pub(super) dinv: Vec<f64>,
    /// An upper estimate of the spectral radius of D^-1 A.
    pub(super) rho: f64,
    /// The level's nodes on this rank.
    pub(super) part: Part,
}

/// The hierarchy: the levels, the coarsest operator and its inverse.
pub(super) struct Hierarchy {
    pub(super) levels: Vec<Level>,
    /// The coarsest level's nodes: this rank's owned ones, every other in its halo.
    pub(super) coarse: Part,
    /// This rank's rows of the coarsest operator's inverse (a pseudo-inverse when it is
    /// symmetric and singular), dense, row-major, its columns in `coarse`'s local order.
    pub(super) inverse: Vec<f64>,
    /// Each level's unknowns and stored entries on all ranks, the finest first, the
    /// coarsest included.
    pub(super) sizes: Vec<(usize, usize)>,
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
    /// The restriction's row (global) reaches a node its rank does not hold: on N ranks A's
    /// pattern is not symmetric there.
    Unsymmetric(usize),
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
    /// node: a block matrix's rows expanded): this rank's owned rows of `part`'s nodes, its
    /// columns local (owned, then halo). With `reuse`, the aggregates of an earlier build of a
    /// matrix of the same pattern (no strength, no aggregation: the candidates,
    /// prolongations and products are recomputed from the values). Nodes are aggregated (by
    /// the Frobenius norms of the blocks) within the rank, with `block` candidates, one
    /// constant per component (PyAMG's default for block matrices); every level keeps
    /// `block` unknowns per node (an aggregate is a node of the next). Collective on `comm`:
    /// an error on one rank (worded by `word`) is an error on every rank.
    pub(super) fn new(
        a: CsMat<f64>,
        mut part: Part,
        block: usize,
        params: &Params,
        reuse: Option<&[(Vec<u32>, usize)]>,
        (comm, word): (&Comm, &dyn Fn(SetupError) -> Error),
    ) -> Result<Hierarchy> {
        let mut levels = Vec::new();
        let mut kept = Vec::new();
        let mut a = a.to_csr();
        let b = block;
        let agree = |r, what: &str| agreed(comm, word, r, what);
        let shape = if a.rows() != part.owned * b || a.cols() != part.total() * b {
            Err(SetupError::NotSquare(a.rows(), a.cols()))
        } else {
            Ok(())
        };
        agree(shape, "the matrix's shape")?;
        let scale = ranks::max(comm, a.data().iter().fold(0.0f64, |m, v| m.max(v.abs())));
        // The candidates, column-major: candidate c is 1 on component c of every owned node.
        let mut candidate: Vec<f64> = (0..b)
            .flat_map(|c| (0..a.rows()).map(move |i| if i % b == c { 1.0 } else { 0.0 }))
            .collect();
        let mut stalled = false;
        let mut sizes = Vec::new();
        loop {
            let (n, k) = (a.rows(), levels.len());
            let global = part.global_size * b;
            sizes.push((global, ranks::count(comm, a.nnz())));
            let glob = |i: usize| part.global[i / b] as usize * b + i % b;
            let dinv = inverse_diagonal(&a).map_err(|e| match e {
                SetupError::ZeroDiagonal(i) => SetupError::ZeroDiagonal(glob(i)),
                SetupError::NotFinite(i) => SetupError::NotFinite(glob(i)),
                e => e,
            });
            let dinv = agreed(comm, word, dinv, "the diagonal")?;
            // The rank's own block: aggregates stay within it.
            let own = (comm.size() > 1).then(|| owned_block(&a, n));
            let local = own.as_ref().unwrap_or(&a);
            // On N ranks the first level is always built (the finest is numbered by the
            // distribution, the coarsest gathered in the ranks' order): where the finest is
            // small enough to invert, or nothing aggregates, each node is an aggregate.
            let forced = comm.size() > 1 && k == 0;
            let (aggregate, count) = match reuse {
                Some(r) => {
                    // Agreed, although every rank's saved levels fit the same pattern.
                    let fits = r.get(k).is_some_and(|agg| agg.0.len() * b == n);
                    if ranks::count(comm, usize::from(!fits)) > 0 {
                        break;
                    }
                    r[k].clone()
                }
                None => {
                    let small = global <= params.max_coarse;
                    let singletons = ((0..n / b.max(1)).map(|i| i as u32).collect(), n / b);
                    if forced && (small || params.max_levels == 1) {
                        singletons
                    } else if small || k + 1 >= params.max_levels {
                        break;
                    } else {
                        let strong = strength(&nodes(local, b), params.theta);
                        let (aggregate, count) = aggregates(&strong);
                        let total = ranks::count(comm, count);
                        let stall = total == 0 || total as f64 > 0.9 * part.global_size as f64;
                        if stall && forced && global <= params.max_dense {
                            singletons
                        } else if stall {
                            // Nothing to aggregate (a diagonal matrix) or coarsening stalled.
                            stalled = true;
                            break;
                        } else {
                            (aggregate, count)
                        }
                    }
                }
            };
            // Each candidate, also where this rank has no unknown (its sweeps exchange).
            for c in 0..b {
                let x = &mut candidate[c * n..(c + 1) * n];
                improve(&a, x, params.improve, (c, b), (&part, comm));
            }
            let (p0, coarse_candidate) = tentative(&aggregate, count, b, &candidate);
            let rho = spectral_radius(&a, &dinv, &part, b, comm);
            let rho = agreed(comm, word, rho, "the spectral radius")?;
            let w = params.omega / rho;
            let t = ranks::transfer(comm, (&a, &dinv, w), &p0, &part, count, b)
                .map_err(SetupError::Unsymmetric);
            let t = agreed(comm, word, t, "the transfers")?;
            let (next, next_part) = (t.a, t.part);
            levels.push(Level {
                a,
                p: t.p,
                r: t.r,
                dinv,
                rho,
                part,
            });
            kept.push((aggregate, count));
            (a, part) = (next, next_part);
            candidate = coarse_candidate;
        }
        if part.global_size * b > params.max_dense {
            // The same on every rank (global counts).
            return Err(word(SetupError::CoarseTooLarge {
                unknowns: part.global_size * b,
                levels: levels.len() + 1,
                stalled,
            }));
        }
        let (whole, gathered) = ranks::gather(comm, &a, &part, b);
        if let Some(last) = levels.last_mut() {
            // The last prolongation's halo columns, renumbered as the gathered part holds them.
            last.p = ranks::renumber(&last.p, (&part, &gathered), b);
        }
        let part = gathered;
        // The same whole operator on every rank: the same inverse (or error) everywhere.
        let inverse = dense_inverse(&whole, scale).map_err(word)?;
        // This rank's rows of the inverse, its columns in the coarsest part's local order.
        let (m, total) = (whole.rows(), part.total() * b);
        let glob = |i: usize| part.global[i / b] as usize * b + i % b;
        let rows = (0..part.owned * b)
            .flat_map(|i| (0..total).map(move |j| (i, j)))
            .map(|(i, j)| inverse[glob(i) * m + glob(j)])
            .collect();
        Ok(Hierarchy {
            levels,
            coarse: part,
            inverse: rows,
            sizes,
            aggregates: kept,
        })
    }
}

/// A local outcome made collective: an error on one rank is an error on every rank.
fn agreed<T>(
    comm: &Comm,
    word: &dyn Fn(SetupError) -> Error,
    r: Result<T, SetupError>,
    what: &str,
) -> Result<T> {
    let (value, status) = match r {
        Ok(v) => (Some(v), Ok(())),
        Err(e) => (None, Err(word(e))),
    };
    comm.agree(status, &format!("AMG setup: {what}"))?;
    Ok(value.expect("agreed"))
}

/// The rank's own block of `a` (the owned columns, the first `n`): aggregates stay within it.
fn owned_block(a: &CsMat<f64>, n: usize) -> CsMat<f64> {
    let mut t = TriMat::new((a.rows(), n));
    for (i, row) in a.outer_iterator().enumerate() {
        for (j, &v) in row.iter().filter(|&(j, _)| j < n) {
            t.add_triplet(i, j, v);
        }
    }
    t.to_csr()
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
/// candidate that vanishes becomes component c's constant again (of `b` per node). On N
/// ranks `a` holds the owned rows with local columns and each sweep starts from the owners'
/// values in the halo (hybrid Gauss-Seidel: a rank's interface is not a boundary); the
/// maximum is over every rank.
fn improve(
    a: &CsMat<f64>,
    x: &mut [f64],
    sweeps: usize,
    (c, b): (usize, usize),
    (part, comm): (&Part, &Comm),
) {
    let n = x.len();
    let mut v = x.to_vec();
    v.resize(a.cols(), 0.0);
    let sweep = |v: &mut [f64], i: usize| {
        let (mut s, mut d) = (0.0, 0.0);
        for (j, &y) in a.outer_view(i).unwrap().iter() {
            if j == i {
                d += y;
            } else {
                s += y * v[j];
            }
        }
        v[i] = -s / d;
    };
    for _ in 0..sweeps {
        part.exchange(comm, &mut v, b);
        for i in 0..n {
            sweep(&mut v, i);
        }
        for i in (0..n).rev() {
            sweep(&mut v, i);
        }
    }
    x.copy_from_slice(&v[..n]);
    let max = ranks::max(comm, x.iter().fold(0.0f64, |m, v| m.max(v.abs())));
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
pub(super) fn smooth(a: &CsMat<f64>, dinv: &[f64], p0: &CsMat<f64>, w: f64) -> CsMat<f64> {
    let mut ap: CsMat<f64> = (a * p0).to_csr();
    let starts = ap.indptr().to_proper().to_vec();
    let data = ap.data_mut();
    for (i, s) in starts.windows(2).enumerate() {
        data[s[0]..s[1]].iter_mut().for_each(|v| *v *= -w * dinv[i]);
    }
    (&ap + p0).to_csr()
}
