//! The setup's view of a level spread over the ranks: this rank's owned nodes and halo nodes
//! (`Part`), and what the host setup exchanges between ranks: halo values, the prolongation's
//! rows for the Galerkin product, the next level's part, and the coarsest operator gathered
//! whole on every rank. On one process every part is all owned and nothing is exchanged.
//!
//! Aggregates stay within a rank, and each level's prolongation is smoothed with the rank's
//! own block of the operator, so a rank's prolongation rows reach only its own aggregates:
//! restriction and prolongation need no exchange. The Galerkin product R A P couples
//! aggregates of neighbouring ranks through A's halo columns; those columns become the next
//! level's halo.

use crate::data::halo::{Exchange, Halo};
use crate::part::Comm;
use sprs::{CsMat, TriMat};

/// One level's nodes on this rank: `owned` nodes, then halo nodes, each with its global number.
#[derive(Clone, Debug)]
pub(super) struct Part {
    /// Owned nodes (local numbers 0..owned).
    pub(super) owned: usize,
    /// Global number of every local node, owned then halo.
    pub(super) global: Vec<u32>,
    /// Nodes on all ranks.
    pub(super) global_size: usize,
    /// Per neighbour, the owned nodes it holds in its halo and the halo nodes it owns.
    pub(super) exchanges: Vec<Exchange>,
}

impl Part {
    /// `n` nodes of one process.
    pub(super) fn single(n: usize) -> Part {
        Part {
            owned: n,
            global: (0..n as u32).collect(),
            global_size: n,
            exchanges: Vec::new(),
        }
    }

    /// A distributed set's part (its owned elements and halo, as the Distribution numbered them).
    pub(super) fn of(owned: usize, halo: &Halo) -> Part {
        Part {
            owned,
            global: halo.global.clone(),
            global_size: halo.global_size,
            exchanges: halo.exchanges.clone(),
        }
    }

    /// Local nodes, halo included.
    pub(super) fn total(&self) -> usize {
        self.global.len()
    }

    /// The halo this part gives a distributed set (`shared`: whether any rank has a halo).
    pub(super) fn halo(&self, shared: bool) -> Halo {
        Halo {
            global: self.global.clone(),
            global_size: self.global_size,
            exchanges: self.exchanges.clone(),
            shared,
        }
    }

    /// Brings the halo entries of `v` (`per` values per local node) up to the owners' values.
    pub(super) fn exchange(&self, comm: &Comm, v: &mut [f64], per: usize) {
        if comm.size() == 1 {
            return;
        }
        let mut sends = vec![Vec::new(); comm.size()];
        for x in &self.exchanges {
            let s = &mut sends[x.rank as usize];
            for &l in &x.send {
                for &y in &v[l as usize * per..(l as usize + 1) * per] {
                    s.extend(words(y));
                }
            }
        }
        let got = comm.all_to_all(&sends, "AMG setup: a level's halo values");
        for x in &self.exchanges {
            let w = &got[x.rank as usize];
            for (k, &l) in x.recv.iter().enumerate() {
                for c in 0..per {
                    let at = 2 * (k * per + c);
                    v[l as usize * per + c] = value(w[at], w[at + 1]);
                }
            }
        }
    }

    /// Each local node's local number, by global number.
    fn locals(&self) -> std::collections::HashMap<u32, usize> {
        self.global
            .iter()
            .enumerate()
            .map(|(l, &g)| (g, l))
            .collect()
    }

    /// The rank that owns each halo node (by local number minus `owned`).
    fn halo_owners(&self) -> Vec<u32> {
        let mut owner = vec![0; self.total() - self.owned];
        for x in &self.exchanges {
            for &l in &x.recv {
                owner[l as usize - self.owned] = x.rank;
            }
        }
        owner
    }
}

fn words(v: f64) -> [u32; 2] {
    let b = v.to_bits();
    [b as u32, (b >> 32) as u32]
}

fn value(lo: u32, hi: u32) -> f64 {
    f64::from_bits(u64::from(lo) | (u64::from(hi) << 32))
}

/// The sum of `v` over the ranks, the same on every rank (added in rank order).
pub(super) fn sum(comm: &Comm, v: f64) -> f64 {
    if comm.size() == 1 {
        return v;
    }
    let all = comm.all_gather(v.to_bits(), "AMG setup: a sum over the ranks");
    all.iter().map(|&b| f64::from_bits(b)).sum()
}

/// The sum of a count over the ranks.
pub(super) fn count(comm: &Comm, n: usize) -> usize {
    comm.all_gather(n as u64, "AMG setup: a count over the ranks")
        .iter()
        .sum::<u64>() as usize
}

/// The largest of `v` over the ranks.
pub(super) fn max(comm: &Comm, v: f64) -> f64 {
    if comm.size() == 1 {
        return v;
    }
    let all = comm.all_gather(v.to_bits(), "AMG setup: a maximum over the ranks");
    all.iter().map(|&b| f64::from_bits(b)).fold(v, f64::max)
}

/// For each entry (i, j) of `a` (owned scalar rows, local scalar columns, `b` per node) whose
/// column is a halo node's: the value of the transposed entry (j, i) on j's owner, if stored
/// there. Keyed by (row, local column).
pub(super) fn transposed_halo_entries(
    comm: &Comm,
    a: &CsMat<f64>,
    part: &Part,
    b: usize,
) -> std::collections::HashMap<(usize, usize), f64> {
    let mut out = std::collections::HashMap::new();
    if comm.size() == 1 {
        return out;
    }
    let owners = part.halo_owners();
    let glob = |l: usize| part.global[l / b] as usize * b + l % b;
    // Every owned row's halo entries, sent to the column's owner as (its row, our row, value):
    // there they are the transposed partners of that owner's entries.
    let mut sends = vec![Vec::new(); comm.size()];
    for (i, row) in a.outer_iterator().enumerate() {
        for (j, &v) in row.iter().filter(|&(j, _)| j >= part.owned * b) {
            let s = &mut sends[owners[j / b - part.owned] as usize];
            s.extend([glob(j) as u32, glob(i) as u32]);
            s.extend(words(v));
        }
    }
    let got = comm.all_to_all(&sends, "AMG setup: the transposed halo entries");
    let local = part.locals();
    let loc = |g: usize| local.get(&((g / b) as u32)).map(|&l| l * b + g % b);
    for w in got.iter().flat_map(|w| w.chunks_exact(4)) {
        let (Some(row), Some(col)) = (loc(w[0] as usize), loc(w[1] as usize)) else {
            continue;
        };
        out.insert((row, col), value(w[2], w[3]));
    }
    out
}

/// Every rank's `count` by rank, as the start of each rank's global numbers.
fn offsets(comm: &Comm, count: usize) -> Vec<usize> {
    let counts = comm.all_gather(count as u64, "AMG setup: the ranks' aggregate counts");
    let mut at = vec![0usize];
    for c in counts {
        at.push(at[at.len() - 1] + c as usize);
    }
    at
}

/// The next level's part: this rank owns its `count` aggregates (numbered after the lower
/// ranks'), and holds in its halo the other ranks' aggregates named in `needed` (global).
fn next_part(comm: &Comm, count: usize, at: &[usize], mut needed: Vec<u32>) -> Part {
    let rank = comm.rank();
    needed.sort_unstable();
    needed.dedup();
    let owner = |g: u32| at.partition_point(|&o| o <= g as usize) - 1;
    let mut sends = vec![Vec::new(); comm.size()];
    for &g in &needed {
        sends[owner(g)].push(g);
    }
    let got = comm.all_to_all(&sends, "AMG setup: the next level's halo");
    let mut exchanges = Vec::new();
    let mut next = count as u32;
    for (q, (asked, wanted)) in got.iter().zip(&sends).enumerate() {
        let recv: Vec<u32> = (next..next + wanted.len() as u32).collect();
        next += wanted.len() as u32;
        if asked.is_empty() && recv.is_empty() {
            continue;
        }
        exchanges.push(Exchange {
            rank: q as u32,
            send: asked.iter().map(|&g| g - at[rank] as u32).collect(),
            recv,
        });
    }
    let global = (at[rank] as u32..(at[rank] + count) as u32)
        .chain(needed)
        .collect();
    Part {
        owned: count,
        global,
        global_size: at[comm.size()],
        exchanges,
    }
}

/// One level's transfers on this rank, and the next level.
pub(super) struct Transfer {
    /// Prolongation: owned rows, the next level's local columns.
    pub(super) p: CsMat<f64>,
    /// Restriction R = P^T: the next level's owned rows, this level's local columns.
    pub(super) r: CsMat<f64>,
    /// The next level's operator R A P: its owned rows, its local columns.
    pub(super) a: CsMat<f64>,
    /// The next level's part.
    pub(super) part: Part,
}

/// The smoothed prolongation P = (I - w D^-1 A) P0 from the tentative `p0` (owned rows,
/// this rank's `count` aggregates), its restriction and the Galerkin product R A P. `a` holds
/// the owned rows with local columns; `b` unknowns per node. On N ranks P's rows reach the
/// aggregates of neighbouring ranks (the tentative rows of halo nodes come from their
/// owners), each rank's partial products for other ranks' aggregates go to their owners, and
/// the columns that reach other ranks become the next level's halo. `Err(row)`: a global row
/// of R that reaches a node this rank does not hold (A's pattern is not symmetric there).
pub(super) fn transfer(
    comm: &Comm,
    (a, dinv, w): (&CsMat<f64>, &[f64], f64),
    p0: &CsMat<f64>,
    part: &Part,
    count: usize,
    b: usize,
) -> Result<Transfer, usize> {
    if comm.size() == 1 {
        let p = super::setup::smooth(a, dinv, p0, w);
        let r: CsMat<f64> = p.transpose_view().to_csr();
        let ap = a * &p;
        let next = (&r * &ap).to_csr();
        let part = Part::single(count);
        return Ok(Transfer {
            p,
            r,
            a: next,
            part,
        });
    }
    let at = offsets(comm, count);
    let (first, total) = (at[comm.rank()] * b, at[comm.size()] * b);
    let mine = first..first + count * b;
    let p0 = extend(comm, &shift(p0, first, total), part, b);
    // P's owned rows, global columns: P0 - w D^-1 A P0.
    let mut ap: CsMat<f64> = (a * &p0).to_csr();
    let starts = ap.indptr().to_proper().to_vec();
    let data = ap.data_mut();
    for (i, s) in starts.windows(2).enumerate() {
        data[s[0]..s[1]].iter_mut().for_each(|v| *v *= -w * dinv[i]);
    }
    let p: CsMat<f64> = (&ap + &rows(&p0, a.rows())).to_csr();
    let pe = extend(comm, &p, part, b);
    // This rank's part of R A P and of R, by the owner of each of their rows.
    let rap: CsMat<f64> = (&p.transpose_view().to_csr() * &(a * &pe)).to_csr();
    let pt: CsMat<f64> = p.transpose_view().to_csr();
    let glob = |l: usize| part.global[l / b] as usize * b + l % b;
    let owner = |c: usize| at.partition_point(|&o| o * b <= c) - 1;
    let (mut to_rap, mut to_r) = (vec![Vec::new(); comm.size()], vec![Vec::new(); comm.size()]);
    let (mut rap_t, mut r_t) = (TriMat::new((count * b, total)), Vec::new());
    for (row, cols) in rap
        .outer_iterator()
        .enumerate()
        .filter(|(_, c)| c.nnz() > 0)
    {
        for (c, &v) in cols.iter() {
            if mine.contains(&row) {
                rap_t.add_triplet(row - first, c, v);
            } else {
                to_rap[owner(row)].extend([row as u32, c as u32]);
                to_rap[owner(row)].extend(words(v));
            }
        }
    }
    for (row, cols) in pt.outer_iterator().enumerate().filter(|(_, c)| c.nnz() > 0) {
        for (i, &v) in cols.iter() {
            if mine.contains(&row) {
                r_t.push((row - first, glob(i), v));
            } else {
                to_r[owner(row)].extend([row as u32, glob(i) as u32]);
                to_r[owner(row)].extend(words(v));
            }
        }
    }
    let got = comm.all_to_all(&to_rap, "AMG setup: the Galerkin products of other ranks");
    for w in got.iter().flat_map(|w| w.chunks_exact(4)) {
        rap_t.add_triplet(w[0] as usize - first, w[1] as usize, value(w[2], w[3]));
    }
    let got = comm.all_to_all(&to_r, "AMG setup: the restriction's entries of other ranks");
    for w in got.iter().flat_map(|w| w.chunks_exact(4)) {
        r_t.push((w[0] as usize - first, w[1] as usize, value(w[2], w[3])));
    }
    // R's columns: this level's nodes as this rank numbers them.
    let local = part.locals();
    let mut r = TriMat::new((count * b, part.total() * b));
    // An entry whose column this rank does not hold fails after the collectives below (every
    // rank makes them).
    let mut missing = None;
    for (row, g, v) in r_t {
        match local.get(&((g / b) as u32)) {
            Some(&l) => r.add_triplet(row, l * b + g % b, v),
            None => missing = missing.or(Some(first + row)),
        }
    }
    let rap: CsMat<f64> = rap_t.to_csr();
    let needed: Vec<u32> = rap
        .indices()
        .iter()
        .chain(p.indices())
        .filter(|c| !mine.contains(c))
        .map(|&c| (c / b) as u32)
        .collect();
    let next = next_part(comm, count, &at, needed);
    if let Some(row) = missing {
        return Err(row);
    }
    let local = |c: usize| -> usize {
        if mine.contains(&c) {
            c - first
        } else {
            let node = next.global[next.owned..]
                .binary_search(&((c / b) as u32))
                .expect("every halo column is in the next level's halo");
            (next.owned + node) * b + c % b
        }
    };
    let relabel = |m: &CsMat<f64>| {
        let mut t = TriMat::new((m.rows(), next.total() * b));
        for (i, row) in m.outer_iterator().enumerate() {
            for (c, &v) in row.iter() {
                t.add_triplet(i, local(c), v);
            }
        }
        t.to_csr()
    };
    Ok(Transfer {
        p: relabel(&p),
        r: r.to_csr(),
        a: relabel(&rap),
        part: next,
    })
}

/// `m`'s columns moved up by `first`, among `total`.
fn shift(m: &CsMat<f64>, first: usize, total: usize) -> CsMat<f64> {
    let mut t = TriMat::new((m.rows(), total));
    for (i, row) in m.outer_iterator().enumerate() {
        for (c, &v) in row.iter() {
            t.add_triplet(i, first + c, v);
        }
    }
    t.to_csr()
}

/// The first `n` rows of `m`.
fn rows(m: &CsMat<f64>, n: usize) -> CsMat<f64> {
    let mut t = TriMat::new((n, m.cols()));
    for (i, row) in m.outer_iterator().enumerate().take(n) {
        for (c, &v) in row.iter() {
            t.add_triplet(i, c, v);
        }
    }
    t.to_csr()
}

/// `m` (owned rows of `part`'s nodes, `b` per node, global columns) with the rows of the
/// halo nodes appended, from their owners.
fn extend(comm: &Comm, m: &CsMat<f64>, part: &Part, b: usize) -> CsMat<f64> {
    let mut sends = vec![Vec::new(); comm.size()];
    for x in &part.exchanges {
        let s = &mut sends[x.rank as usize];
        for &l in &x.send {
            for i in l as usize * b..(l as usize + 1) * b {
                let row = m.outer_view(i).expect("an owned row");
                s.push(row.nnz() as u32);
                for (c, &v) in row.iter() {
                    s.push(c as u32);
                    s.extend(words(v));
                }
            }
        }
    }
    let got = comm.all_to_all(&sends, "AMG setup: the prolongation's halo rows");
    let mut t = TriMat::new((part.total() * b, m.cols()));
    for (i, row) in m.outer_iterator().enumerate() {
        for (c, &v) in row.iter() {
            t.add_triplet(i, c, v);
        }
    }
    for x in &part.exchanges {
        let w = &got[x.rank as usize];
        let mut k = 0;
        for &l in &x.recv {
            for i in l as usize * b..(l as usize + 1) * b {
                let n = w[k] as usize;
                for e in 0..n {
                    let at = k + 1 + 3 * e;
                    t.add_triplet(i, w[at] as usize, value(w[at + 1], w[at + 2]));
                }
                k += 1 + 3 * n;
            }
        }
    }
    t.to_csr()
}

/// The coarsest operator whole (global rows and columns) on every rank, from each rank's
/// owned rows; and the part that holds every other rank's nodes in its halo (for the dense
/// inverse's product).
pub(super) fn gather(comm: &Comm, a: &CsMat<f64>, part: &Part, b: usize) -> (CsMat<f64>, Part) {
    if comm.size() == 1 {
        // Local numbering throughout (a distribution's numbering on one process included).
        return (a.clone(), Part::single(part.owned));
    }
    let glob = |l: usize| part.global[l / b] as usize * b + l % b;
    let mut mine = Vec::new();
    for (i, row) in a.outer_iterator().enumerate() {
        for (j, &v) in row.iter() {
            mine.extend([glob(i) as u32, glob(j) as u32]);
            mine.extend(words(v));
        }
    }
    let got = comm.all_to_all(
        &vec![mine; comm.size()],
        "AMG setup: gathering the coarsest level",
    );
    let n = part.global_size * b;
    let mut t = TriMat::new((n, n));
    for w in got.iter().flat_map(|w| w.chunks_exact(4)) {
        t.add_triplet(w[0] as usize, w[1] as usize, value(w[2], w[3]));
    }
    let at = offsets(comm, part.owned);
    let me = at[comm.rank()]..at[comm.rank() + 1];
    let others = (0..part.global_size as u32)
        .filter(|g| !me.contains(&(*g as usize)))
        .collect();
    (t.to_csr(), next_part(comm, part.owned, &at, others))
}

/// `m`'s columns (local to `from`, `b` per node) renumbered local to `to`, a part of the same
/// nodes that holds every node `from` does.
pub(super) fn renumber(m: &CsMat<f64>, (from, to): (&Part, &Part), b: usize) -> CsMat<f64> {
    if from.global == to.global {
        return m.clone();
    }
    let local = to.locals();
    let mut t = TriMat::new((m.rows(), to.total() * b));
    for (i, row) in m.outer_iterator().enumerate() {
        for (c, &v) in row.iter() {
            let l = local[&from.global[c / b]];
            t.add_triplet(i, l * b + c % b, v);
        }
    }
    t.to_csr()
}
