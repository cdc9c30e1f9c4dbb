//! A distribution built without the global mesh: each rank starts from a block of every set
//! (elements `block_start(r)..block_start(r + 1)`, the rows of the maps from those elements,
//! as a file is read in parallel), and every question about an element is asked of the rank
//! whose block holds it (a rendezvous by global id, one `Comm::all_to_all` per step). Memory
//! per rank is proportional to its block and its part, never to the mesh.
//!
//! The rules are those of `derive_owners` and `local_part` (owners through the maps; core |
//! owned | exec halo | non-exec halo in global order; send lists in the receiver's halo
//! order), so both paths give the same `LocalPart` on the same partition (a test).

use super::{Comm, DistError, Exchange, LocalPart, LocalSet};
use crate::data::Sections;

/// The first element of rank `r`'s block of a set of `n` elements on `ranks` ranks: element
/// e is in block `e * ranks / n` (as `block_owners` gives it).
pub(crate) fn block_start(n: usize, ranks: usize, r: usize) -> usize {
    ((r as u128 * n as u128).div_ceil(ranks as u128)) as usize
}

/// The rank whose block holds element `e` of `n`.
pub(crate) fn block_of(n: usize, ranks: usize, e: u32) -> usize {
    (e as u128 * ranks as u128 / n.max(1) as u128) as usize
}

/// A map whose rows for this rank's block of its source set are known.
pub(crate) struct BlockMap {
    pub from: usize,
    pub to: usize,
    pub arity: usize,
    /// Global targets of this rank's block of `from`, row-major.
    pub rows: Vec<u32>,
}

/// Sets (names and global sizes) and maps, each known in blocks, on `comm`.
pub(crate) struct Blocks<'a> {
    pub comm: &'a Comm,
    pub sizes: Vec<(String, usize)>,
    pub maps: Vec<BlockMap>,
}

impl Blocks<'_> {
    fn ranks(&self) -> usize {
        self.comm.size()
    }
    /// This rank's block of set `s`.
    pub(crate) fn range(&self, s: usize) -> std::ops::Range<usize> {
        let (n, p, r) = (self.sizes[s].1, self.ranks(), self.comm.rank());
        block_start(n, p, r)..block_start(n, p, r + 1)
    }

    /// `w` words per element of the elements `ids` of set `s`, whose block values here are
    /// `mine`: each id is asked of the rank whose block holds it.
    pub(crate) fn fetch(&self, s: usize, w: usize, mine: &[u32], ids: &[u32]) -> Vec<u32> {
        let (n, p, me) = (self.sizes[s].1, self.ranks(), self.comm.rank());
        // Ids in this rank's own block are looked up here; the others are asked for.
        let mut ask = vec![Vec::new(); p];
        for &g in ids {
            let q = block_of(n, p, g);
            if q != me {
                ask[q].push(g);
            }
        }
        let what = format!("looking up elements of `{}` by global id", self.sizes[s].0);
        let asked = self.comm.all_to_all(&ask, &what);
        let start = self.range(s).start;
        let answers: Vec<Vec<u32>> = asked
            .iter()
            .map(|ids| {
                let mut out = Vec::with_capacity(ids.len() * w);
                for &g in ids {
                    let l = g as usize - start;
                    out.extend_from_slice(&mine[l * w..(l + 1) * w]);
                }
                out
            })
            .collect();
        drop(asked);
        let got = self.comm.all_to_all(&answers, &what);
        drop(answers);
        let mut at = vec![0usize; p];
        let mut out = Vec::with_capacity(ids.len() * w);
        for &g in ids {
            let q = block_of(n, p, g);
            if q == me {
                let l = g as usize - start;
                out.extend_from_slice(&mine[l * w..(l + 1) * w]);
            } else {
                out.extend_from_slice(&got[q][at[q]..at[q] + w]);
                at[q] += w;
            }
        }
        out
    }

    /// Sends each (element of set `s`, payload word) to the rank whose block holds the
    /// element; returns what this rank received as (block-local index, word).
    pub(crate) fn route(
        &self,
        s: usize,
        items: impl Iterator<Item = (u32, u32)>,
    ) -> Vec<(u32, u32)> {
        let (n, p) = (self.sizes[s].1, self.ranks());
        let mut send = vec![Vec::new(); p];
        for (g, v) in items {
            send[block_of(n, p, g)].extend([g, v]);
        }
        let what = format!("sending facts about `{}` to its blocks", self.sizes[s].0);
        let start = self.range(s).start as u32;
        self.comm
            .all_to_all(&send, &what)
            .into_iter()
            .flat_map(|m| {
                m.chunks_exact(2)
                    .map(|c| (c[0] - start, c[1]))
                    .collect::<Vec<_>>()
            })
            .collect()
    }

    /// The owner of every element of this rank's block of every set, given those of the
    /// primary set (rules and order of `derive_owners`).
    pub(crate) fn owners(
        &self,
        primary: usize,
        primary_owners: Vec<u32>,
    ) -> Result<Vec<Vec<u32>>, DistError> {
        let mut owners: Vec<Option<Vec<u32>>> = vec![None; self.sizes.len()];
        owners[primary] = Some(primary_owners);
        loop {
            let mut progress = false;
            for m in &self.maps {
                match (owners[m.from].is_some(), owners[m.to].is_some()) {
                    (false, true) => {
                        let first: Vec<u32> = m.rows.chunks(m.arity).map(|r| r[0]).collect();
                        let to = owners[m.to].as_ref().expect("checked");
                        owners[m.from] = Some(self.fetch(m.to, 1, to, &first));
                        progress = true;
                    }
                    (true, false) => {
                        let from = owners[m.from].as_ref().expect("checked");
                        let got = self.route(
                            m.to,
                            m.rows
                                .iter()
                                .enumerate()
                                .map(|(k, &t)| (t, from[k / m.arity])),
                        );
                        let mut own = vec![u32::MAX; self.range(m.to).len()];
                        for (l, r) in got {
                            own[l as usize] = own[l as usize].min(r);
                        }
                        // Nobody reaches it: block owners, this rank.
                        let me = self.comm.rank() as u32;
                        own.iter_mut()
                            .filter(|o| **o == u32::MAX)
                            .for_each(|o| *o = me);
                        owners[m.to] = Some(own);
                        progress = true;
                    }
                    _ => {}
                }
            }
            if !progress {
                break;
            }
        }
        owners
            .into_iter()
            .zip(&self.sizes)
            .map(|(o, (name, _))| o.ok_or_else(|| DistError::Unreachable { set: name.clone() }))
            .collect()
    }

    /// This rank's part, from the owners of its blocks (see `owners`), and per set whether
    /// some rank holds a halo element of it. In phases: the halo lists of this rank's blocks,
    /// every element handed to the ranks that hold it, the local sets in their sections, the
    /// local maps and the exchange lists.
    pub(crate) fn local_part(&self, owners: &[Vec<u32>]) -> (LocalPart, Vec<bool>) {
        let (exec, nonexec) = self.halo_lists(owners);
        let held = self.hand_out(owners, &exec, &nonexec);
        let (sets, perms, rows) = self.local_sets(&held);
        let (maps, exchanges) = self.local_maps(&sets, &perms, &rows, &held);
        // Whether any rank holds a halo element of each set.
        let shared = sets
            .iter()
            .map(|ls| {
                let halo = ls.sections.exec_halo + ls.sections.nonexec_halo;
                let what = "comparing the ranks' halos";
                self.comm.min_max_within(u64::from(halo == 0), what).0 == 0
            })
            .collect();
        let part = LocalPart {
            rank: self.comm.rank() as u32,
            sets,
            maps,
            exchanges,
        };
        (part, shared)
    }

    /// For the elements of this rank's blocks, per set: (block-local element, rank that runs
    /// it as exec halo) and (block-local element, rank that reads it as non-exec halo).
    #[allow(clippy::type_complexity)]
    fn halo_lists(&self, owners: &[Vec<u32>]) -> (Vec<Vec<(u32, u32)>>, Vec<Vec<(u32, u32)>>) {
        let nsets = self.sizes.len();
        // The owner of every target of every row here.
        let target_owner: Vec<Vec<u32>> = self
            .maps
            .iter()
            .map(|m| self.fetch(m.to, 1, &owners[m.to], &m.rows))
            .collect();
        // Exec halo: (block-local element, rank that runs it) where a row crosses owners.
        let mut exec: Vec<Vec<(u32, u32)>> = vec![Vec::new(); nsets];
        for (m, tow) in self.maps.iter().zip(&target_owner) {
            for (k, &ot) in tow.iter().enumerate() {
                let e = k / m.arity;
                if ot != owners[m.from][e] {
                    exec[m.from].push((e as u32, ot));
                }
            }
        }
        exec.iter_mut().for_each(|v| {
            v.sort_unstable();
            v.dedup();
        });
        let runs = |s: usize, e: u32| {
            let v = &exec[s];
            let a = v.partition_point(|&(x, _)| x < e);
            let b = v.partition_point(|&(x, _)| x <= e);
            v[a..b].iter().map(|&(_, r)| r)
        };
        // Non-exec halo: targets of elements a rank owns or runs, owned by another rank and
        // not in its exec halo.
        let mut nonexec: Vec<Vec<(u32, u32)>> = vec![Vec::new(); nsets];
        for (m, tow) in self.maps.iter().zip(&target_owner) {
            let mut items = Vec::new();
            for (k, (&t, &ot)) in m.rows.iter().zip(tow).enumerate() {
                let e = k / m.arity;
                for r in std::iter::once(owners[m.from][e]).chain(runs(m.from, e as u32)) {
                    if r != ot {
                        items.push((t, r));
                    }
                }
            }
            for (l, r) in self.route(m.to, items.into_iter()) {
                if !runs(m.to, l).any(|x| x == r) {
                    nonexec[m.to].push((l, r));
                }
            }
        }
        nonexec.iter_mut().for_each(|v| {
            v.sort_unstable();
            v.dedup();
        });
        (exec, nonexec)
    }

    /// Every element to every rank that holds it (its owner, the ranks that run it, those
    /// that read it); the owner also learns who holds it.
    fn hand_out(
        &self,
        owners: &[Vec<u32>],
        exec: &[Vec<(u32, u32)>],
        nonexec: &[Vec<(u32, u32)>],
    ) -> Vec<Held> {
        let nsets = self.sizes.len();
        const OWNED: u32 = 0;
        const EXEC: u32 = 1;
        const NONEXEC: u32 = 2;
        let p = self.ranks();
        let mut held: Vec<Held> = Vec::with_capacity(nsets);
        for s in 0..nsets {
            let start = self.range(s).start as u32;
            let mut send = vec![Vec::new(); p];
            let (mut xi, mut ni) = (0, 0);
            for (l, &o) in owners[s].iter().enumerate() {
                let g = start + l as u32;
                let x0 = xi;
                while xi < exec[s].len() && exec[s][xi].0 == l as u32 {
                    send[exec[s][xi].1 as usize].extend([g, EXEC, o]);
                    xi += 1;
                }
                let n0 = ni;
                while ni < nonexec[s].len() && nonexec[s][ni].0 == l as u32 {
                    send[nonexec[s][ni].1 as usize].extend([g, NONEXEC, o]);
                    ni += 1;
                }
                let msg = &mut send[o as usize];
                msg.extend([g, OWNED, (xi - x0) as u32, (ni - n0) as u32]);
                msg.extend(exec[s][x0..xi].iter().map(|&(_, r)| r));
                msg.extend(nonexec[s][n0..ni].iter().map(|&(_, r)| r));
            }
            let what = format!(
                "handing the elements of `{}` to their ranks",
                self.sizes[s].0
            );
            let mut h = Held::default();
            for m in self.comm.all_to_all(&send, &what) {
                let mut i = 0;
                while i < m.len() {
                    let (g, kind) = (m[i], m[i + 1]);
                    match kind {
                        OWNED => {
                            let (nx, nn) = (m[i + 2] as usize, m[i + 3] as usize);
                            let at = i + 4;
                            h.owned.push((
                                g,
                                m[at..at + nx].to_vec(),
                                m[at + nx..at + nx + nn].to_vec(),
                            ));
                            i = at + nx + nn;
                        }
                        EXEC => {
                            h.exec.push((g, m[i + 2]));
                            i += 3;
                        }
                        _ => {
                            h.nonexec.push((g, m[i + 2]));
                            i += 3;
                        }
                    }
                }
            }
            h.owned.sort_unstable_by_key(|x| x.0);
            h.exec.sort_unstable();
            h.nonexec.sort_unstable();
            held.push(h);
        }
        held
    }

    /// The local sets (core, owned, exec halo, non-exec halo), with `perm[k]` the position in
    /// the held order of the element at local index k, and the rows (global targets) of every
    /// element held here in the held order.
    #[allow(clippy::type_complexity)]
    fn local_sets(&self, held: &[Held]) -> (Vec<LocalSet>, Vec<Vec<usize>>, Vec<Vec<u32>>) {
        let nsets = self.sizes.len();
        let me = self.comm.rank() as u32;
        // Rows (global targets) of every element held here, in the order owned, exec,
        // non-exec; the owner of every element held here.
        let rows: Vec<Vec<u32>> = self
            .maps
            .iter()
            .map(|m| self.fetch(m.from, m.arity, &m.rows, &held[m.from].ids()))
            .collect();
        let owner_of: Vec<Vec<(u32, u32)>> = held
            .iter()
            .map(|h| {
                let mut v: Vec<(u32, u32)> = h.owned.iter().map(|x| (x.0, me)).collect();
                v.extend(&h.exec);
                v.extend(&h.nonexec);
                v.sort_unstable();
                v
            })
            .collect();
        let lookup = |s: usize, g: u32| -> Option<u32> {
            let v = &owner_of[s];
            v.binary_search_by_key(&g, |x| x.0).ok().map(|i| v[i].1)
        };
        // Core: owned elements whose targets (through every map) are all owned here.
        let mut core: Vec<Vec<bool>> = held.iter().map(|h| vec![true; h.owned.len()]).collect();
        for (m, r) in self.maps.iter().zip(&rows) {
            for (e, row) in r.chunks(m.arity).take(held[m.from].owned.len()).enumerate() {
                if row.iter().any(|&t| lookup(m.to, t) != Some(me)) {
                    core[m.from][e] = false;
                }
            }
        }
        // Local order: core, owned, exec halo, non-exec halo; `perm[k]` is the position in
        // the held order of the element at local index k.
        let mut sets = Vec::with_capacity(nsets);
        let mut perms = Vec::with_capacity(nsets);
        for (h, c) in held.iter().zip(&core) {
            let no = h.owned.len();
            let mut perm: Vec<usize> = (0..no).filter(|&e| c[e]).collect();
            let ncore = perm.len();
            perm.extend((0..no).filter(|&e| !c[e]));
            perm.extend(no..no + h.exec.len() + h.nonexec.len());
            let ids = h.ids();
            sets.push(LocalSet {
                sections: Sections {
                    core: ncore,
                    owned: no - ncore,
                    exec_halo: h.exec.len(),
                    nonexec_halo: h.nonexec.len(),
                },
                global: perm.iter().map(|&k| ids[k]).collect(),
                halo_owner: h.exec.iter().chain(&h.nonexec).map(|x| x.1).collect(),
            });
            perms.push(perm);
        }
        (sets, perms, rows)
    }

    /// The local maps, and per set the exchange lists.
    #[allow(clippy::type_complexity)]
    fn local_maps(
        &self,
        sets: &[LocalSet],
        perms: &[Vec<usize>],
        rows: &[Vec<u32>],
        held: &[Held],
    ) -> (Vec<Vec<u32>>, Vec<Vec<Exchange>>) {
        // Global to local, per set, sorted by global id.
        let g2l: Vec<Vec<(u32, u32)>> = sets
            .iter()
            .map(|ls| {
                let mut v: Vec<(u32, u32)> = ls
                    .global
                    .iter()
                    .enumerate()
                    .map(|(l, &g)| (g, l as u32))
                    .collect();
                v.sort_unstable();
                v
            })
            .collect();
        let local = |s: usize, g: u32| -> u32 {
            let v = &g2l[s];
            v.binary_search_by_key(&g, |x| x.0).map_or(0, |i| v[i].1)
        };
        let maps = self
            .maps
            .iter()
            .zip(rows)
            .map(|(m, r)| {
                let mut out = Vec::with_capacity(r.len());
                for &k in &perms[m.from] {
                    out.extend(
                        r[k * m.arity..(k + 1) * m.arity]
                            .iter()
                            .map(|&t| local(m.to, t)),
                    );
                }
                out
            })
            .collect();
        // Receives: the halo by owner, in local order. Sends: per neighbour, the owned
        // elements in its exec halo, then in its non-exec halo, each in global order.
        let exchanges = sets
            .iter()
            .zip(held)
            .enumerate()
            .map(|(s, (ls, h))| {
                let mut ex: std::collections::BTreeMap<u32, Exchange> = Default::default();
                let base = (ls.sections.core + ls.sections.owned) as u32;
                for (k, &q) in ls.halo_owner.iter().enumerate() {
                    super::entry(&mut ex, q).recv.push(base + k as u32);
                }
                for pass in 0..2 {
                    for (g, x, n) in &h.owned {
                        for &q in if pass == 0 { x } else { n } {
                            super::entry(&mut ex, q).send.push(local(s, *g));
                        }
                    }
                }
                ex.into_values().collect()
            })
            .collect();
        (maps, exchanges)
    }
}

/// The elements of one set a rank holds, each list in global order: owned (with the ranks
/// that run it as exec halo, then those that read it as non-exec halo), exec halo and
/// non-exec halo (with their owner).
#[derive(Default)]
struct Held {
    owned: Vec<(u32, Vec<u32>, Vec<u32>)>,
    exec: Vec<(u32, u32)>,
    nonexec: Vec<(u32, u32)>,
}

impl Held {
    /// Global ids in the held order: owned, exec, non-exec.
    fn ids(&self) -> Vec<u32> {
        let owned = self.owned.iter().map(|x| x.0);
        let halo = self.exec.iter().chain(&self.nonexec).map(|x| x.0);
        owned.chain(halo).collect()
    }
}

/// The values of the elements a rank owns (global ids `ids`, `w` words each in `words`),
/// gathered into the blocks of their set of `n`: this rank's block, in order. Every element
/// must be owned by exactly one rank (a distributed set's owned sections).
#[cfg_attr(not(feature = "hdf5"), allow(dead_code))]
pub(crate) fn to_blocks(
    comm: &Comm,
    n: usize,
    w: usize,
    ids: &[u32],
    words: &[u32],
    what: &str,
) -> Vec<u32> {
    let p = comm.size();
    let mut send = vec![Vec::new(); p];
    for (k, &g) in ids.iter().enumerate() {
        let msg = &mut send[block_of(n, p, g)];
        msg.push(g);
        msg.extend_from_slice(&words[k * w..(k + 1) * w]);
    }
    let r = comm.rank();
    let start = block_start(n, p, r);
    let mut out = vec![0u32; (block_start(n, p, r + 1) - start) * w];
    for m in comm.all_to_all(&send, what) {
        for c in m.chunks_exact(w + 1) {
            let l = c[0] as usize - start;
            out[l * w..(l + 1) * w].copy_from_slice(&c[1..]);
        }
    }
    out
}
