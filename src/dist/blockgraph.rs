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
        // Every group, whole, at the rank holding each member, as (member, neighbour) pairs.
        let mut pairs: Vec<Vec<u32>> = vec![Vec::new(); p];
        // A group counts each element once (a row may name a target twice).
        let add_group = |g: &[u32], pairs: &mut Vec<Vec<u32>>| {
            let mut g = g.to_vec();
            g.sort_unstable();
            g.dedup();
            if g.len() > 1 && g.len() <= MAX_GROUP {
                for &a in &g {
                    let q = super::rendezvous::block_of(n, p, a);
                    for &b in g.iter().filter(|&&b| b != a) {
                        pairs[q].extend([a, b]);
                    }
                }
            }
        };
        for m in &self.maps {
            if m.from == primary {
                // Groups by target: (target, element) pairs at the target's block.
                let tn = self.sizes[m.to].1;
                let mut send = vec![Vec::new(); p];
                for (k, &t) in m.rows.iter().enumerate() {
                    let e = (start + k / m.arity) as u32;
                    send[super::rendezvous::block_of(tn, p, t)].extend([t, e]);
                }
                let what = "building the dual graph: elements by shared target";
                let mut got: Vec<(u32, u32)> = self
                    .comm
                    .all_to_all(&send, what)
                    .iter()
                    .flat_map(|m| m.chunks_exact(2).map(|c| (c[0], c[1])))
                    .collect();
                got.sort_unstable();
                got.dedup();
                for group in got.chunk_by(|a, b| a.0 == b.0) {
                    let g: Vec<u32> = group.iter().map(|x| x.1).collect();
                    add_group(&g, &mut pairs);
                }
            }
            if m.to == primary {
                for row in m.rows.chunks(m.arity) {
                    add_group(row, &mut pairs);
                }
            }
        }
        let what = "building the dual graph: neighbours to their blocks";
        let mut adj: Vec<(u32, u32)> = self
            .comm
            .all_to_all(&pairs, what)
            .iter()
            .flat_map(|m| m.chunks_exact(2).map(|c| (c[0], c[1])))
            .collect();
        adj.sort_unstable();
        adj.dedup();
        let len = self.range(primary).len();
        let mut xadj = vec![0u32; len + 1];
        for &(a, _) in &adj {
            xadj[a as usize - start + 1] += 1;
        }
        for v in 0..len {
            xadj[v + 1] += xadj[v];
        }
        (xadj, adj.into_iter().map(|x| x.1).collect())
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
        let p = self.comm.size();
        let tn = self.sizes[m.to].1;
        let mut send = vec![Vec::new(); p];
        for (k, &t) in m.rows.iter().enumerate() {
            send[super::rendezvous::block_of(tn, p, t)].extend([t, (k % m.arity) as u32]);
        }
        let what = "checking whether a map is injective";
        let mut got: Vec<(u32, u32)> = self
            .comm
            .all_to_all(&send, what)
            .iter()
            .flat_map(|m| m.chunks_exact(2).map(|c| (c[0], c[1])))
            .collect();
        got.sort_unstable();
        // Per column: a (target, column) pair twice; whole: a target twice.
        let mut cols = vec![true; m.arity];
        for w in got.windows(2) {
            if w[0] == w[1] {
                cols[w[0].1 as usize] = false;
            }
        }
        let all_here = got.windows(2).all(|w| w[0].0 != w[1].0);
        let agree = |ok: bool| self.comm.min_max(u64::from(ok), what).0 == 1;
        let cols: Vec<bool> = cols.into_iter().map(agree).collect();
        (cols, agree(all_here))
    }
}
