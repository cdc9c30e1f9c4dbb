//! Exact branch and bound over key sequences. For a fixed sequence, placing every node in the
//! earliest loop it fits is optimal (the constraints are monotone), so the search branches only
//! on the key of the next loop, fills it with the maximal ready set, and prunes with the
//! residual path and per-key bounds. States already expanded at the same or a smaller depth are
//! skipped. The search stops after a budget of expanded states and then reports the best
//! schedule found (not proven optimal).

use super::constraints::{Constraints, Schedule};
use super::list::State;
use std::collections::HashMap;

/// How much the exact search may do before giving up on a proof.
#[derive(Clone, Copy, Debug)]
pub struct Budget {
    /// Graphs with more required nodes than this are not searched.
    pub max_nodes: usize,
    /// Expanded search states.
    pub max_states: u64,
}

impl Default for Budget {
    fn default() -> Self {
        Budget {
            max_nodes: 160,
            max_states: 200_000,
        }
    }
}

pub struct ExactResult {
    pub schedule: Schedule,
    /// The search finished within its budget: the schedule is minimal.
    pub proven: bool,
    pub states: u64,
}

struct Search<'a> {
    c: &'a Constraints,
    residual: Vec<Vec<u32>>,
    best: Schedule,
    seen: HashMap<Vec<u64>, usize>,
    states: u64,
    budget: Budget,
    exhausted: bool,
    scratch: Vec<u32>,
}

/// Searches for a schedule with fewer loops than `start` (a valid schedule, e.g. from list
/// scheduling). Returns `start` itself, proven or not, when nothing shorter exists or the budget
/// runs out.
pub fn search(c: &Constraints, start: Schedule, budget: Budget) -> ExactResult {
    if c.len() > budget.max_nodes {
        return ExactResult {
            schedule: start,
            proven: false,
            states: 0,
        };
    }
    let mut s = Search {
        c,
        residual: c.residual_key_loops(),
        best: start,
        seen: HashMap::new(),
        states: 0,
        budget,
        exhausted: false,
        scratch: vec![0; c.len()],
    };
    let lb = c.lower_bound();
    if s.best.loops() > lb {
        let st = State::new(c);
        s.dfs(&st);
    }
    ExactResult {
        schedule: s.best,
        proven: !s.exhausted,
        states: s.states,
    }
}

impl Search<'_> {
    fn bound(&self, st: &State) -> usize {
        let c = self.c;
        let mut path = 0u32;
        let mut per_key = vec![0u32; c.nkeys];
        for v in (0..c.len()).filter(|&v| !st.placed[v]) {
            path = path.max(1 + c.height[v]);
            for (slot, &r) in per_key.iter_mut().zip(&self.residual[v]) {
                *slot = (*slot).max(r);
            }
        }
        st.seq.len() + (path.max(per_key.iter().sum()) as usize)
    }

    fn dfs(&mut self, st: &State) {
        if st.remaining == 0 {
            if st.seq.len() < self.best.loops() {
                self.best = st.clone().into_schedule();
            }
            return;
        }
        if self.exhausted || self.bound(st) >= self.best.loops() {
            return;
        }
        self.states += 1;
        if self.states > self.budget.max_states {
            self.exhausted = true;
            return;
        }
        let key = pack(&st.placed);
        match self.seen.get(&key) {
            Some(&depth) if depth <= st.seq.len() => return,
            _ => {
                self.seen.insert(key, st.seq.len());
            }
        }
        let c = self.c;
        let mut options: Vec<(usize, Vec<usize>, u32)> = (0..c.nkeys)
            .filter_map(|l| {
                let set = st.ready_set(c, l, &mut self.scratch);
                let prio = set.iter().map(|&v| c.height[v]).max()?;
                Some((l, set, prio))
            })
            .collect();
        options.sort_by(|a, b| b.2.cmp(&a.2).then(b.1.len().cmp(&a.1.len())));
        for (l, set, _) in options {
            let mut next = st.clone();
            next.place(c, l, &set);
            self.dfs(&next);
        }
    }
}

fn pack(placed: &[bool]) -> Vec<u64> {
    let mut words = vec![0u64; placed.len().div_ceil(64)];
    for (i, &p) in placed.iter().enumerate() {
        if p {
            words[i / 64] |= 1 << (i % 64);
        }
    }
    words
}
