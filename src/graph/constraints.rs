//! The scheduling problem behind every algorithm: required nodes (cached, reducing, sinks) with
//! constraints `t(v) >= t(u) + w` wherever v reaches u through ephemeral nodes only, `w = 1` when
//! u reduces, the keys differ, or a barrier lies on the path. Also the lower bounds
//! (LB_path, LB_loc) and the ephemeral copies each required node drags into its loop.

use super::model::{Graph, NodeIx};
use std::collections::HashMap;

/// Constraint DAG over the required nodes, indexed 0..n in a topological order.
#[derive(Clone, Debug)]
pub struct Constraints {
    /// Graph node of each required node, in topological order.
    pub node: Vec<NodeIx>,
    /// Key of each required node.
    pub key: Vec<usize>,
    pub nkeys: usize,
    /// preds[v] = (u, w): v must run in a loop >= loop(u) + w.
    pub preds: Vec<Vec<(usize, u8)>>,
    pub succs: Vec<Vec<(usize, u8)>>,
    /// Ephemeral nodes each required node recomputes in its loop (topological order).
    pub ephemeral: Vec<Vec<NodeIx>>,
    /// Heaviest path (weights w) from each required node to any sink.
    pub height: Vec<u32>,
}

impl Constraints {
    pub fn new(g: &Graph) -> Constraints {
        let mut req_of = vec![None; g.len()];
        let mut node = Vec::new();
        for &v in &g.topo {
            if g.is_required(v) {
                req_of[v] = Some(node.len());
                node.push(v);
            }
        }
        // For each ephemeral node: the required nodes it reaches through ephemeral nodes only,
        // with the heaviest w, and its ephemeral closure. Memoized in topological order.
        let mut reach: Vec<Vec<(usize, u8)>> = vec![Vec::new(); g.len()];
        let mut closure: Vec<Vec<NodeIx>> = vec![Vec::new(); g.len()];
        let n = node.len();
        let mut preds: Vec<Vec<(usize, u8)>> = vec![Vec::new(); n];
        let mut ephemeral: Vec<Vec<NodeIx>> = vec![Vec::new(); n];
        for &v in &g.topo {
            let mut acc: HashMap<usize, u8> = HashMap::new();
            let mut eph: Vec<NodeIx> = Vec::new();
            for &(u, barrier) in &g.nodes[v].needs {
                if let Some(ru) = req_of[u] {
                    let w = g.edge_weight(u, v, barrier);
                    let e = acc.entry(ru).or_insert(0);
                    *e = (*e).max(w);
                } else {
                    // Ephemeral dependency: same key as v (checked at build time).
                    for &(ru, w) in &reach[u] {
                        let w = w.max(u8::from(barrier));
                        let e = acc.entry(ru).or_insert(0);
                        *e = (*e).max(w);
                    }
                    eph.extend(closure[u].iter().copied());
                    eph.push(u);
                }
            }
            eph.sort_unstable();
            eph.dedup();
            let mut list: Vec<(usize, u8)> = acc.into_iter().collect();
            list.sort_unstable();
            match req_of[v] {
                Some(rv) => {
                    preds[rv] = list;
                    ephemeral[rv] = eph;
                }
                None => {
                    reach[v] = list;
                    closure[v] = eph;
                }
            }
        }
        // Order each ephemeral list topologically.
        let mut topo_pos = vec![0usize; g.len()];
        for (i, &v) in g.topo.iter().enumerate() {
            topo_pos[v] = i;
        }
        for list in &mut ephemeral {
            list.sort_unstable_by_key(|&v| topo_pos[v]);
        }
        let mut succs: Vec<Vec<(usize, u8)>> = vec![Vec::new(); n];
        for (v, ps) in preds.iter().enumerate() {
            for &(u, w) in ps {
                succs[u].push((v, w));
            }
        }
        let key: Vec<usize> = node.iter().map(|&v| g.nodes[v].key).collect();
        let mut height = vec![0u32; n];
        for v in (0..n).rev() {
            height[v] = succs[v]
                .iter()
                .map(|&(s, w)| height[s] + u32::from(w))
                .max()
                .unwrap_or(0);
        }
        Constraints {
            node,
            key,
            nkeys: g.keys.len(),
            preds,
            succs,
            ephemeral,
            height,
        }
    }

    pub fn len(&self) -> usize {
        self.node.len()
    }
    pub fn is_empty(&self) -> bool {
        self.node.is_empty()
    }

    /// LB_path = 1 + heaviest path.
    pub fn lb_path(&self) -> usize {
        if self.is_empty() {
            return 0;
        }
        1 + self.height.iter().copied().max().unwrap_or(0) as usize
    }

    /// For each key, the fewest loops of that key any schedule needs: the longest chain of its
    /// nodes, counting a step whenever the heaviest path between consecutive ones has weight >= 1.
    pub fn loops_per_key(&self) -> Vec<usize> {
        let n = self.len();
        let mut per_key = vec![0usize; self.nkeys];
        // a[x]: best level of a key-l node reaching x by a weight-0 path; b[x]: by a path of
        // weight >= 1. Levels count from 1; 0 means none.
        let mut a = vec![0u32; n];
        let mut b = vec![0u32; n];
        for (l, slot) in per_key.iter_mut().enumerate() {
            if !self.key.contains(&l) {
                continue;
            }
            a.iter_mut().for_each(|x| *x = 0);
            b.iter_mut().for_each(|x| *x = 0);
            let mut best = 0u32;
            for v in 0..n {
                let (mut ain, mut bin) = (0u32, 0u32);
                for &(u, w) in &self.preds[v] {
                    if w == 0 {
                        ain = ain.max(a[u]);
                        bin = bin.max(b[u]);
                    } else {
                        bin = bin.max(a[u].max(b[u]));
                    }
                }
                if self.key[v] == l {
                    let level = ain.max(if bin > 0 { bin + 1 } else { 0 }).max(1);
                    best = best.max(level);
                    ain = ain.max(level);
                }
                a[v] = ain;
                b[v] = bin;
            }
            *slot = best as usize;
        }
        per_key
    }

    /// max(LB_path, LB_loc).
    pub fn lower_bound(&self) -> usize {
        self.lb_path().max(self.loops_per_key().iter().sum())
    }

    /// For each node, per key: how many loops of that key the nodes from v onward need at least
    /// (v included when it has that key). Used by the exact search to bound a partial schedule.
    pub fn residual_key_loops(&self) -> Vec<Vec<u32>> {
        let n = self.len();
        let mut out = vec![vec![0u32; self.nkeys]; n];
        for l in 0..self.nkeys {
            // a[v]: loops of key l needed by the part of the graph that starts at v, where v's own
            // loop may be shared with following weight-0 key-l nodes; b[v]: the same counted
            // strictly after v's loop.
            let mut a = vec![0u32; n];
            let mut b = vec![0u32; n];
            for v in (0..n).rev() {
                let (mut aout, mut bout) = (0u32, 0u32);
                for &(s, w) in &self.succs[v] {
                    if w == 0 {
                        aout = aout.max(a[s]);
                        bout = bout.max(b[s]);
                    } else {
                        bout = bout.max(a[s].max(b[s]));
                    }
                }
                if self.key[v] == l {
                    let level = aout.max(if bout > 0 { bout + 1 } else { 0 }).max(1);
                    aout = aout.max(level);
                }
                a[v] = aout;
                b[v] = bout;
                out[v][l] = aout.max(bout);
            }
        }
        out
    }
}

/// A schedule: the key of each loop and the loop of each required node.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Schedule {
    pub seq: Vec<usize>,
    pub t: Vec<usize>,
}

impl Schedule {
    pub fn loops(&self) -> usize {
        self.seq.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::graph::model::NodeSpec;

    #[test]
    fn ephemeral_paths_carry_weights_and_copies() {
        // r (reducing) <- e (ephemeral) <- s: s must follow r's loop, and s recomputes e.
        let g = Graph::new(vec![
            NodeSpec::new("r", "x").reducing(),
            NodeSpec::new("e", "x").ephemeral().needs(["r"]),
            NodeSpec::new("s", "x").needs(["e"]),
        ])
        .unwrap();
        let c = Constraints::new(&g);
        assert_eq!(c.len(), 2);
        assert_eq!(c.preds[1], vec![(0, 1)]);
        assert_eq!(c.ephemeral[1], vec![1]);
        assert_eq!(c.lower_bound(), 2);
    }

    #[test]
    fn loc_bound_counts_returns_to_a_location() {
        // a(El) -> b(Nd) -> c(El): El needs two loops, Nd one: LB_loc = 3 = LB_path.
        let g = Graph::new(vec![
            NodeSpec::new("a", "El"),
            NodeSpec::new("b", "Nd").needs(["a"]),
            NodeSpec::new("c", "El").needs(["b"]),
        ])
        .unwrap();
        let c = Constraints::new(&g);
        assert_eq!(c.loops_per_key(), vec![2, 1]);
        assert_eq!(c.lower_bound(), 3);
    }
}
