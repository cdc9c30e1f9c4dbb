//! Typed list scheduling: build loops one at a time; each loop takes the maximal ready set of
//! one key; the key is chosen by critical-path priority, or (with lookahead) by completing the
//! schedule greedily after each candidate and keeping the shortest (a pilot method).

use super::constraints::{Constraints, Schedule};

/// Scheduling state: which nodes are placed, and how many unplaced predecessors each node has.
#[derive(Clone)]
pub(crate) struct State {
    pub placed: Vec<bool>,
    pub waiting: Vec<u32>,
    pub remaining: usize,
    pub t: Vec<usize>,
    pub seq: Vec<usize>,
    /// Nodes with no unplaced predecessor, per key (may hold placed nodes: filtered lazily).
    avail: Vec<Vec<usize>>,
}

impl State {
    pub fn new(c: &Constraints) -> State {
        let waiting: Vec<u32> = c.preds.iter().map(|p| p.len() as u32).collect();
        let mut avail = vec![Vec::new(); c.nkeys];
        for (v, &w) in waiting.iter().enumerate() {
            if w == 0 {
                avail[c.key[v]].push(v);
            }
        }
        State {
            placed: vec![false; c.len()],
            waiting,
            remaining: c.len(),
            t: vec![usize::MAX; c.len()],
            seq: Vec::new(),
            avail,
        }
    }

    /// The maximal set of unplaced key-l nodes that can run in a new loop: every unplaced
    /// predecessor is in the set through a weight-0 edge. `scratch` must be all zero and is
    /// left all zero.
    pub fn ready_set(&self, c: &Constraints, l: usize, scratch: &mut [u32]) -> Vec<usize> {
        let mut set: Vec<usize> = self.avail[l]
            .iter()
            .copied()
            .filter(|&v| !self.placed[v])
            .collect();
        let mut touched = Vec::new();
        let mut i = 0;
        while i < set.len() {
            let v = set[i];
            i += 1;
            for &(s, w) in &c.succs[v] {
                if w != 0 || c.key[s] != l {
                    continue;
                }
                if scratch[s] == 0 {
                    touched.push(s);
                }
                scratch[s] += 1;
                if scratch[s] == self.waiting[s] {
                    set.push(s);
                }
            }
        }
        for s in touched {
            scratch[s] = 0;
        }
        set
    }

    /// Places `set` in a new loop of key l.
    pub fn place(&mut self, c: &Constraints, l: usize, set: &[usize]) {
        let k = self.seq.len();
        self.seq.push(l);
        for &v in set {
            self.placed[v] = true;
            self.t[v] = k;
        }
        self.remaining -= set.len();
        for &v in set {
            for &(s, _) in &c.succs[v] {
                self.waiting[s] -= 1;
                if self.waiting[s] == 0 && !self.placed[s] {
                    self.avail[c.key[s]].push(s);
                }
            }
        }
        for list in &mut self.avail {
            list.retain(|&v| !self.placed[v]);
        }
    }

    pub fn into_schedule(self) -> Schedule {
        Schedule {
            seq: self.seq,
            t: self.t,
        }
    }
}

/// Candidate loops for the next step, best first by priority: highest critical path in the set,
/// then the larger set, then the smaller key.
fn candidates(c: &Constraints, st: &State, scratch: &mut [u32]) -> Vec<(usize, Vec<usize>)> {
    let mut out: Vec<(usize, Vec<usize>, u32)> = (0..c.nkeys)
        .filter_map(|l| {
            let set = st.ready_set(c, l, scratch);
            if set.is_empty() {
                return None;
            }
            let prio = set.iter().map(|&v| c.height[v]).max().unwrap_or(0);
            Some((l, set, prio))
        })
        .collect();
    out.sort_by(|a, b| {
        b.2.cmp(&a.2)
            .then(b.1.len().cmp(&a.1.len()))
            .then(a.0.cmp(&b.0))
    });
    out.into_iter().map(|(l, s, _)| (l, s)).collect()
}

/// Completes `st` greedily (priority rule only).
fn greedy(c: &Constraints, mut st: State, scratch: &mut [u32]) -> State {
    while st.remaining > 0 {
        let mut cands = candidates(c, &st, scratch);
        let (l, set) = cands.swap_remove(0);
        st.place(c, l, &set);
    }
    st
}

/// Above this many required nodes the lookahead is skipped (its cost grows with loops x keys x
/// graph size).
pub const LOOKAHEAD_MAX_NODES: usize = 4000;

/// Typed list scheduling. With `lookahead`, each step tries every candidate key, completes the
/// schedule greedily, and keeps the key that gives the fewest loops (ties: priority order).
pub fn schedule(c: &Constraints, lookahead: bool) -> Schedule {
    let mut scratch = vec![0u32; c.len()];
    let mut st = State::new(c);
    let lookahead = lookahead && c.len() <= LOOKAHEAD_MAX_NODES;
    while st.remaining > 0 {
        let cands = candidates(c, &st, &mut scratch);
        let choice = if lookahead && cands.len() > 1 {
            let mut best: Option<(usize, usize)> = None;
            for (i, (l, set)) in cands.iter().enumerate() {
                let mut trial = st.clone();
                trial.place(c, *l, set);
                let total = greedy(c, trial, &mut scratch).seq.len();
                if best.is_none_or(|(_, b)| total < b) {
                    best = Some((i, total));
                }
            }
            best.map_or(0, |(i, _)| i)
        } else {
            0
        };
        let (l, set) = &cands[choice];
        st.place(c, *l, set);
    }
    st.into_schedule()
}
