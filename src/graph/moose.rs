//! The MOOSE prototype's algorithm (seed 000), made safe.
//!
//! Basic split: join nodes along every edge whose endpoints share a location and whose
//! dependency does not reduce, except where the join would close a cycle between partitions
//! (the seed's split can produce cyclic partitions; here every join is checked).
//! Full merge: candidate pairs of sibling partitions of one key, sorted by how many other
//! candidates each one cancels (computed on the meta graph before merging, as in the seed),
//! then taken greedily; unlike the prototype, each merge is re-checked against the current
//! merged graph, and passes repeat until no two partitions can merge (fully merged).

use super::constraints::{Constraints, Schedule};
use super::quotient::Quotient;

/// Above this many candidate pairs the cancel counts (quadratic in the candidates) are skipped
/// and candidates are taken in order.
pub const MAX_SORTED_CANDIDATES: usize = 2000;

pub fn schedule(c: &Constraints) -> Schedule {
    let mut q = Quotient::singletons(c);
    // Basic split, safe: merge along weight-0 edges.
    for v in 0..c.len() {
        for &(u, w) in &c.preds[v] {
            let (pu, pv) = (q.part_of[u], q.part_of[v]);
            if w == 0 && pu != pv && q.can_merge(pu, pv) {
                q.merge(pu, pv);
            }
        }
    }
    // Full merge.
    let live = q.live();
    let mut cands: Vec<(usize, usize)> = Vec::new();
    for (i, &p) in live.iter().enumerate() {
        for &r in &live[i + 1..] {
            if q.can_merge(p, r) {
                cands.push((p, r));
            }
        }
    }
    if cands.len() <= MAX_SORTED_CANDIDATES {
        let cancels = cancel_counts(&q, &cands);
        let mut order: Vec<usize> = (0..cands.len()).collect();
        order.sort_by_key(|&i| (cancels[i], i));
        cands = order.into_iter().map(|i| cands[i]).collect();
    }
    for (p, r) in cands {
        let (p, r) = (find(&q, p), find(&q, r));
        if q.can_merge(p, r) {
            q.merge(p, r);
        }
    }
    // Repeat until fully merged.
    loop {
        let live = q.live();
        let mut merged = false;
        'outer: for (i, &p) in live.iter().enumerate() {
            for &r in &live[i + 1..] {
                if q.can_merge(p, r) {
                    q.merge(p, r);
                    merged = true;
                    break 'outer;
                }
            }
        }
        if !merged {
            break;
        }
    }
    q.schedule()
        .expect("every merge is checked against the quotient graph, which stays acyclic")
}

/// The partition that partition id p (possibly merged away since) now belongs to. Partition
/// ids start as node ids and a partition keeps its id while it lives, so node p's partition is it.
fn find(q: &Quotient, p: usize) -> usize {
    q.part_of[p]
}

/// For each candidate merge, how many other candidates it makes invalid on the meta graph
/// before any merge (seed step 4).
fn cancel_counts(q: &Quotient, cands: &[(usize, usize)]) -> Vec<usize> {
    let n = q.alive.len();
    let words = n.div_ceil(64);
    let live = q.live();
    // Descendant and ancestor bitsets of every live partition.
    let order = q.schedule().map(|s| {
        let mut by_loop: Vec<usize> = live.clone();
        by_loop.sort_by_key(|&p| s.t[q.members[p][0]]);
        by_loop
    });
    let Some(order) = order else {
        return vec![0; cands.len()];
    };
    let mut desc = vec![vec![0u64; words]; n];
    let mut anc = vec![vec![0u64; words]; n];
    for &p in order.iter().rev() {
        for &s in &q.succ[p] {
            let below = desc[s].clone();
            or_into(&mut desc[p], &below);
            desc[p][s / 64] |= 1 << (s % 64);
        }
    }
    for &p in &order {
        for &r in &q.pred[p] {
            let above = anc[r].clone();
            or_into(&mut anc[p], &above);
            anc[p][r / 64] |= 1 << (r % 64);
        }
    }
    let bit = |set: &[u64], x: usize| set[x / 64] >> (x % 64) & 1 == 1;
    cands
        .iter()
        .map(|&(a, b)| {
            let up: Vec<u64> = anc[a].iter().zip(&anc[b]).map(|(x, y)| x | y).collect();
            let down: Vec<u64> = desc[a].iter().zip(&desc[b]).map(|(x, y)| x | y).collect();
            cands
                .iter()
                .filter(|&&(x, y)| (x, y) != (a, b))
                .filter(|&&(x, y)| {
                    let shared = [x, y].iter().filter(|&&z| z == a || z == b).count();
                    match shared {
                        0 => (bit(&up, x) && bit(&down, y)) || (bit(&up, y) && bit(&down, x)),
                        _ => {
                            let other = if x == a || x == b { y } else { x };
                            bit(&up, other) || bit(&down, other)
                        }
                    }
                })
                .count()
        })
        .collect()
}

fn or_into(dst: &mut [u64], src: &[u64]) {
    for (a, b) in dst.iter_mut().zip(src) {
        *a |= *b;
    }
}
