//! Region formation with a restriction map (seed 003, TVM's MergeCompilerRegions), with the
//! target as part of the key. Nodes are visited in topological order; a node joins the region of
//! a parent with its key when every edge from that region is usable in one loop (weight 0) and no
//! other parent region is restricted from it; otherwise it opens a new region. The new region
//! inherits its parents' restrictions plus the parent regions it left, so that a data path which
//! leaves a region never re-enters it. After joining, other parent regions of the node's key are
//! merged in when neither is restricted from the other. Like TVM, siblings are never merged,
//! so the answer can use more loops than necessary.

use super::constraints::{Constraints, Schedule};
use super::quotient::Quotient;
use std::collections::BTreeSet;

/// None only if the regions came out cyclic, which the restriction map is there to prevent.
pub fn schedule(c: &Constraints) -> Option<Schedule> {
    let n = c.len();
    let mut region = vec![usize::MAX; n];
    let mut members: Vec<Vec<usize>> = Vec::new();
    let mut restrict: Vec<BTreeSet<usize>> = Vec::new();
    let mut rkey: Vec<usize> = Vec::new();
    let mut alias: Vec<usize> = Vec::new(); // merged region -> surviving region
    let mut down: Vec<BTreeSet<usize>> = Vec::new(); // region graph edges
    let resolve = |alias: &[usize], mut r: usize| {
        while alias[r] != r {
            r = alias[r];
        }
        r
    };
    for v in 0..n {
        let parents: Vec<(usize, u8)> = c.preds[v]
            .iter()
            .map(|&(u, w)| (resolve(&alias, region[u]), w))
            .collect();
        let parent_regions: BTreeSet<usize> = parents.iter().map(|&(r, _)| r).collect();
        let joinable = |r: usize, restrict: &[BTreeSet<usize>]| {
            rkey[r] == c.key[v]
                && parents.iter().all(|&(pr, w)| pr != r || w == 0)
                && parent_regions
                    .iter()
                    .all(|&q| q == r || !restrict[q].contains(&r))
        };
        let candidates: Vec<usize> = parent_regions
            .iter()
            .copied()
            .filter(|&r| joinable(r, &restrict))
            .collect();
        let home = match candidates.first() {
            Some(&r) => r,
            None => {
                members.push(Vec::new());
                restrict.push(BTreeSet::new());
                rkey.push(c.key[v]);
                alias.push(alias.len());
                down.push(BTreeSet::new());
                members.len() - 1
            }
        };
        region[v] = home;
        members[home].push(v);
        // Merge the other joinable parent regions when neither is restricted from the other.
        for &other in candidates.iter().skip(1) {
            let other = resolve(&alias, other);
            if other == home || restrict[home].contains(&other) || restrict[other].contains(&home) {
                continue;
            }
            let moved = std::mem::take(&mut members[other]);
            members[home].extend(moved);
            let inherited = std::mem::take(&mut restrict[other]);
            restrict[home].extend(inherited);
            let edges = std::mem::take(&mut down[other]);
            down[home].extend(edges);
            alias[other] = home;
            for set in restrict.iter_mut().chain(down.iter_mut()) {
                if set.remove(&other) {
                    set.insert(home);
                }
            }
            restrict[home].remove(&home);
            down[home].remove(&home);
        }
        // The region just assigned may not rejoin the parent regions it left, nor theirs; and
        // neither may any region downstream of it (regions grow after others inherited from
        // them, so the inheritance is pushed down the region graph).
        let mut added: BTreeSet<usize> = BTreeSet::new();
        for &q in &parent_regions {
            let q = resolve(&alias, q);
            if q != home {
                added.insert(q);
                added.extend(restrict[q].iter().copied());
                down[q].insert(home);
            }
        }
        added.remove(&home);
        let mut stack = vec![home];
        let mut seen = BTreeSet::from([home]);
        while let Some(r) = stack.pop() {
            restrict[r].extend(added.iter().copied());
            if r != home {
                restrict[r].insert(home);
            }
            restrict[r].remove(&r);
            for &d in &down[r] {
                if seen.insert(d) {
                    stack.push(d);
                }
            }
        }
    }
    // Build the quotient over the final regions and order it.
    let mut q = Quotient::singletons(c);
    for (r, m) in members.iter().enumerate() {
        if alias[r] != r || m.is_empty() {
            continue;
        }
        for &v in &m[1..] {
            let (a, b) = (q.part_of[m[0]], q.part_of[v]);
            if a != b {
                q.merge(a, b);
            }
        }
    }
    q.schedule()
}
