//! The primary set's dual graph built in blocks (each rank the adjacency of its block, with
//! global ids), the same graph as `dual_graph` builds from the global maps: two elements are
//! joined when they share a target of a map from the primary set, or are both targets of one
//! row of a map into it; groups of more than `MAX_GROUP` elements join nobody.

use super::rendezvous::Blocks;

impl Blocks<'_> {
    /// The dual graph of this rank's block of `primary`: block-local CSR offsets and global
    /// neighbour ids (sorted, no duplicates, no self loops).
    pub(crate) fn dual_graph(&self, primary: usize) -> (Vec<u32>, Vec<u32>) {
        const MAX_GROUP: usize = 64;
        let p = self.comm.size();
        let n = self.sizes[primary].1;
        let start = self.range(primary).start;
        // Every group, whole (its length, then its members), once to each rank whose block
        // holds one of its members.
        let mut groups: Vec<Vec<u32>> = vec![Vec::new(); p];
        let mut dest: Vec<usize> = Vec::new();
        // A group counts each element once (a row may name a target twice).
        let mut add_group = |g: &[u32], groups: &mut Vec<Vec<u32>>| {
            let mut g = g.to_vec();
            g.sort_unstable();
            g.dedup();
            if g.len() > 1 && g.len() <= MAX_GROUP {
                dest.clear();
                dest.extend(g.iter().map(|&a| super::rendezvous::block_of(n, p, a)));
                dest.dedup(); // members are sorted, so their blocks are too
                for &q in &dest {
                    groups[q].push(g.len() as u32);
                    groups[q].extend_from_slice(&g);
                }
            }
        };
        for m in &self.maps {
            if m.from == primary {
                // Groups by target: (target, element) pairs at the target's block.
                let items = m
                    .rows
                    .iter()
                    .enumerate()
                    .map(|(k, &t)| (t, (start + k / m.arity) as u32));
                let mut got = self.route(m.to, items);
                got.sort_unstable();
                got.dedup();
                let mut g = Vec::new();
                for group in got.chunk_by(|a, b| a.0 == b.0) {
                    g.clear();
                    g.extend(group.iter().map(|x| x.1));
                    add_group(&g, &mut groups);
                }
            }
            if m.to == primary {
                for row in m.rows.chunks(m.arity) {
                    add_group(row, &mut groups);
                }
            }
        }
        let what = "building the dual graph: groups to their members' blocks";
        let got = self.comm.all_to_all(&groups, what);
        drop(groups);
        // Each member of this block gets the rest of each of its groups: counted, placed in
        // CSR, then each row sorted and its repeats removed in place.
        let len = self.range(primary).len();
        let mine = |a: u32| (a as usize).checked_sub(start).filter(|&l| l < len);
        let each_group = |f: &mut dyn FnMut(&[u32])| {
            for m in &got {
                let mut i = 0;
                while i < m.len() {
                    let k = m[i] as usize;
                    f(&m[i + 1..i + 1 + k]);
                    i += 1 + k;
                }
            }
        };
        let mut count = vec![0usize; len + 1];
        each_group(&mut |g| {
            for &a in g {
                if let Some(l) = mine(a) {
                    count[l + 1] += g.len() - 1;
                }
            }
        });
        for v in 0..len {
            count[v + 1] += count[v];
        }
        let mut adj = vec![0u32; count[len]];
        let mut at = count.clone();
        each_group(&mut |g| {
            for &a in g {
                if let Some(l) = mine(a) {
                    for &b in g.iter().filter(|&&b| b != a) {
                        adj[at[l]] = b;
                        at[l] += 1;
                    }
                }
            }
        });
        drop(got);
        let mut xadj = vec![0u32; len + 1];
        let mut w = 0;
        for v in 0..len {
            let row = &mut adj[count[v]..count[v + 1]];
            row.sort_unstable();
            let mut k = 0;
            for r in 0..row.len() {
                if r == 0 || row[r] != row[r - 1] {
                    row[k] = row[r];
                    k += 1;
                }
            }
            adj.copy_within(count[v]..count[v] + k, w);
            w += k;
            xadj[v + 1] = w as u32;
        }
        adj.truncate(w);
        adj.shrink_to_fit();
        (xadj, adj)
    }

    /// Edges of the dual graph (`xadj`, `adjncy` of this rank's block) whose ends have
    /// different owners (`owners`: this rank's block), over all ranks.
    pub(crate) fn edge_cut(
        &self,
        primary: usize,
        xadj: &[u32],
        adjncy: &[u32],
        owners: &[u32],
    ) -> usize {
        let start = self.range(primary).start as u32;
        let theirs = self.fetch(primary, 1, owners, adjncy);
        let mut cut = 0u64;
        for v in 0..xadj.len() - 1 {
            for k in xadj[v] as usize..xadj[v + 1] as usize {
                if adjncy[k] > start + v as u32 && theirs[k] != owners[v] {
                    cut += 1;
                }
            }
        }
        let what = "adding up the edge cut";
        self.comm.all_gather(cut, what).iter().sum::<u64>() as usize
    }
}

impl Blocks<'_> {
    /// Whether map `m` is injective, per column and whole (as `data::injectivity` on the
    /// global map): each target is counted at the rank whose block holds it.
    pub(crate) fn injectivity(&self, m: &super::rendezvous::BlockMap) -> (Vec<bool>, bool) {
        let items = m
            .rows
            .iter()
            .enumerate()
            .map(|(k, &t)| (t, (k % m.arity) as u32));
        let mut got = self.route(m.to, items);
        got.sort_unstable();
        // Per column: a (target, column) pair twice; whole: a target twice.
        let mut cols = vec![true; m.arity];
        for w in got.windows(2) {
            if w[0] == w[1] {
                cols[w[0].1 as usize] = false;
            }
        }
        let all_here = got.windows(2).all(|w| w[0].0 != w[1].0);
        let agree = |ok: bool| {
            self.comm
                .min_max_within(u64::from(ok), "checking whether a map is injective")
                .0
                == 1
        };
        let cols: Vec<bool> = cols.into_iter().map(agree).collect();
        (cols, agree(all_here))
    }
}
