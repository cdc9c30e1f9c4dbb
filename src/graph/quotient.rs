//! Partitions of the required nodes and their quotient graph, shared by the merge-based
//! algorithms (`moose`, `tvm`). Every merge is checked against the current quotient graph, so a
//! partition set built here is always acyclic.

use super::constraints::{Constraints, Schedule};
use std::collections::BTreeSet;

pub(crate) struct Quotient {
    pub part_of: Vec<usize>,
    pub members: Vec<Vec<usize>>,
    pub key: Vec<usize>,
    pub alive: Vec<bool>,
    /// Edges between partitions, each with "hard" = some constraint of weight 1 on it.
    pub succ: Vec<BTreeSet<usize>>,
    pub pred: Vec<BTreeSet<usize>>,
    pub hard: BTreeSet<(usize, usize)>,
}

impl Quotient {
    /// Every required node in a partition of its own.
    pub fn singletons(c: &Constraints) -> Quotient {
        let n = c.len();
        let mut q = Quotient {
            part_of: (0..n).collect(),
            members: (0..n).map(|v| vec![v]).collect(),
            key: c.key.clone(),
            alive: vec![true; n],
            succ: vec![BTreeSet::new(); n],
            pred: vec![BTreeSet::new(); n],
            hard: BTreeSet::new(),
        };
        for v in 0..n {
            for &(u, w) in &c.preds[v] {
                q.succ[u].insert(v);
                q.pred[v].insert(u);
                if w > 0 {
                    q.hard.insert((u, v));
                }
            }
        }
        q
    }

    /// Whether `to` is reachable from `from` by a path of two or more edges.
    fn long_path(&self, from: usize, to: usize) -> bool {
        let mut stack: Vec<usize> = self.succ[from]
            .iter()
            .copied()
            .filter(|&s| s != to)
            .collect();
        let mut seen: BTreeSet<usize> = stack.iter().copied().collect();
        while let Some(x) = stack.pop() {
            for &s in &self.succ[x] {
                if s == to {
                    return true;
                }
                if seen.insert(s) {
                    stack.push(s);
                }
            }
        }
        false
    }

    /// Partitions p and q may become one loop: same key, no weight-1 constraint between them,
    /// and no path between them through a third partition.
    pub fn can_merge(&self, p: usize, q: usize) -> bool {
        p != q
            && self.alive[p]
            && self.alive[q]
            && self.key[p] == self.key[q]
            && !self.hard.contains(&(p, q))
            && !self.hard.contains(&(q, p))
            && !self.long_path(p, q)
            && !self.long_path(q, p)
    }

    /// Merges q into p.
    pub fn merge(&mut self, p: usize, q: usize) {
        let moved = std::mem::take(&mut self.members[q]);
        for &v in &moved {
            self.part_of[v] = p;
        }
        self.members[p].extend(moved);
        self.alive[q] = false;
        for s in std::mem::take(&mut self.succ[q]) {
            self.pred[s].remove(&q);
            if s != p {
                self.pred[s].insert(p);
                self.succ[p].insert(s);
            }
        }
        for r in std::mem::take(&mut self.pred[q]) {
            self.succ[r].remove(&q);
            if r != p {
                self.succ[r].insert(p);
                self.pred[p].insert(r);
            }
        }
        self.succ[p].remove(&p);
        self.pred[p].remove(&p);
        let hard: Vec<(usize, usize)> = self
            .hard
            .iter()
            .copied()
            .filter(|&(a, b)| a == q || b == q)
            .collect();
        for (a, b) in hard {
            self.hard.remove(&(a, b));
            let a = if a == q { p } else { a };
            let b = if b == q { p } else { b };
            self.hard.insert((a, b));
        }
    }

    pub fn live(&self) -> Vec<usize> {
        (0..self.alive.len()).filter(|&p| self.alive[p]).collect()
    }

    /// Orders the partitions topologically (smallest first member first among ready ones) and
    /// returns the schedule; None if the quotient has a cycle.
    pub fn schedule(&self) -> Option<Schedule> {
        let live = self.live();
        let mut indeg = vec![0usize; self.alive.len()];
        for &p in &live {
            indeg[p] = self.pred[p].len();
        }
        let first = |p: usize| self.members[p].iter().copied().min().unwrap_or(usize::MAX);
        let mut ready: BTreeSet<(usize, usize)> = live
            .iter()
            .filter(|&&p| indeg[p] == 0)
            .map(|&p| (first(p), p))
            .collect();
        let mut seq = Vec::new();
        let mut t = vec![0usize; self.part_of.len()];
        while let Some((f, p)) = ready.iter().next().copied() {
            ready.remove(&(f, p));
            for &v in &self.members[p] {
                t[v] = seq.len();
            }
            seq.push(self.key[p]);
            for &s in &self.succ[p] {
                indeg[s] -= 1;
                if indeg[s] == 0 {
                    ready.insert((first(s), s));
                }
            }
        }
        (seq.len() == live.len()).then_some(Schedule { seq, t })
    }
}
