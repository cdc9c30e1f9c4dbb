//! This rank's part of a distributed mesh (OP2's `op_partition`), and the communicator.
//!
//! From global sets and maps and an owner for every element of one primary set, the owner of
//! every element of every other set (through the maps); then for each rank its local sets
//! numbered core | owned | exec halo | non-exec halo, its local maps, and per neighbouring
//! rank the lists of elements to send and to receive when a halo is exchanged.
//!
//! - owned: the elements the rank owns. Core elements are the owned ones whose map targets are
//!   all owned: a loop over them touches no halo data.
//! - exec halo: elements owned elsewhere that reach an element this rank owns through a map.
//!   They are executed redundantly, so an increment through a map into owned data is complete
//!   without reverse communication.
//! - non-exec halo: the other elements that owned or exec-halo elements reach through a map;
//!   they are only read.
//!
//! Within a section elements keep their global order. A halo element is received from its
//! owner, where it is owned, so both sides of an exchange list it in the same order. The
//! user's declarations (`dist::Distribution`, `dist::BlockMesh`) come to this module as plain
//! arrays; `Comm` moves the messages.

mod blockgraph;
mod comm;
#[cfg(all(feature = "mpi", not(target_arch = "wasm32")))]
pub(crate) mod kway;
pub(crate) mod rendezvous;
#[cfg(all(feature = "ptscotch", not(target_arch = "wasm32")))]
pub(crate) mod scotch;
#[cfg(test)]
mod tests;

pub use comm::Comm;
pub(crate) use comm::Reduction;

use crate::data::Sections;
pub(crate) use crate::data::halo::Exchange;

/// A map between two of the distributed sets, by index into the set list.
#[derive(Clone, Copy, Debug)]
pub(crate) struct MapSpec<'a> {
    pub from: usize,
    pub to: usize,
    pub arity: usize,
    /// Global target of each (element, index), row-major.
    pub values: &'a [u32],
}

/// Why a distribution cannot be built.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum DistError {
    /// No chain of maps links a set to the primary set, so its owners cannot be derived.
    Unreachable { set: String },
    /// The primary set's owner list has the wrong length or names a rank past the last.
    BadOwners {
        len: usize,
        expected: usize,
        rank: Option<u32>,
        ranks: usize,
    },
}

impl std::fmt::Display for DistError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DistError::Unreachable { set } => write!(
                f,
                "set `{set}` is linked to the partitioned set by no map, so parloop cannot \
                 decide which rank owns its elements: pass a map from or to it"
            ),
            DistError::BadOwners {
                len,
                expected,
                rank,
                ranks,
            } => match rank {
                Some(r) => write!(f, "the partition names rank {r}, but there are {ranks}"),
                None => write!(
                    f,
                    "the partition has {len} owners for a set of {expected} elements"
                ),
            },
        }
    }
}

/// Owners by contiguous blocks: element e of n goes to rank e * ranks / n (a simple partition
/// for tests, and the fallback when no graph partitioner is wanted).
pub(crate) fn block_owners(n: usize, ranks: usize) -> Vec<u32> {
    let ranks = ranks.max(1);
    (0..n).map(|e| (e * ranks / n.max(1)) as u32).collect()
}

/// The dual graph of the primary set in CSR form (`xadj`, `adjncy`): two elements are joined
/// when they share a target of a map from the primary set (cells sharing a node), or are both
/// targets of one element of a map into it (the two cells of an edge). Groups of more than
/// `MAX_GROUP` elements (a hub node) join nobody, to keep the graph near linear in size.
pub(crate) fn dual_graph(
    sizes: &[(&str, usize)],
    maps: &[MapSpec],
    primary: usize,
) -> (Vec<u32>, Vec<u32>) {
    const MAX_GROUP: usize = 64;
    let n = sizes[primary].1;
    let mut groups: Vec<Vec<u32>> = Vec::new();
    for m in maps {
        if m.from == primary {
            let mut by_target: Vec<Vec<u32>> = vec![Vec::new(); sizes[m.to].1];
            for (k, &t) in m.values.iter().enumerate() {
                by_target[t as usize].push((k / m.arity) as u32);
            }
            groups.extend(by_target);
        }
        if m.to == primary {
            groups.extend(m.values.chunks(m.arity).map(<[u32]>::to_vec));
        }
    }
    // A group counts each element once (a row may name a target twice).
    for g in &mut groups {
        g.sort_unstable();
        g.dedup();
    }
    let mut adj: Vec<Vec<u32>> = vec![Vec::new(); n];
    for g in groups
        .iter()
        .filter(|g| g.len() > 1 && g.len() <= MAX_GROUP)
    {
        for &a in g {
            adj[a as usize].extend(g.iter().filter(|&&b| b != a));
        }
    }
    let mut xadj = Vec::with_capacity(n + 1);
    let mut adjncy = Vec::new();
    xadj.push(0);
    for mut a in adj {
        a.sort_unstable();
        a.dedup();
        adjncy.extend(a);
        xadj.push(adjncy.len() as u32);
    }
    (xadj, adjncy)
}

/// Edges of a graph (CSR) whose ends have different owners.
pub(crate) fn edge_cut(xadj: &[u32], adjncy: &[u32], owners: &[u32]) -> usize {
    let mut cut = 0;
    for v in 0..xadj.len() - 1 {
        for &u in &adjncy[xadj[v] as usize..xadj[v + 1] as usize] {
            if u as usize > v && owners[u as usize] != owners[v] {
                cut += 1;
            }
        }
    }
    cut
}

/// The owner of every element of every set, given the owners of the primary set. A set that
/// maps into an already-owned set takes, per element, the owner of its first target (an edge
/// goes with its first cell); a set that an already-owned set maps into takes, per element,
/// the lowest owner among the elements that reach it (a node goes with one of its cells);
/// elements nobody reaches are spread in blocks.
pub(crate) fn derive_owners(
    sizes: &[(&str, usize)],
    maps: &[MapSpec],
    primary: usize,
    primary_owners: Vec<u32>,
    ranks: usize,
) -> Result<Vec<Vec<u32>>, DistError> {
    if primary_owners.len() != sizes[primary].1 {
        return Err(DistError::BadOwners {
            len: primary_owners.len(),
            expected: sizes[primary].1,
            rank: None,
            ranks,
        });
    }
    if let Some(&r) = primary_owners.iter().find(|&&r| r as usize >= ranks) {
        return Err(DistError::BadOwners {
            len: primary_owners.len(),
            expected: sizes[primary].1,
            rank: Some(r),
            ranks,
        });
    }
    let mut owners: Vec<Option<Vec<u32>>> = vec![None; sizes.len()];
    owners[primary] = Some(primary_owners);
    loop {
        let mut progress = false;
        for m in maps {
            match (owners[m.from].is_some(), owners[m.to].is_some()) {
                (false, true) => {
                    let to = owners[m.to].as_ref().expect("checked");
                    let n = sizes[m.from].1;
                    let own = (0..n)
                        .map(|e| {
                            if m.arity == 0 {
                                0
                            } else {
                                to[m.values[e * m.arity] as usize]
                            }
                        })
                        .collect();
                    owners[m.from] = Some(own);
                    progress = true;
                }
                (true, false) => {
                    let from = owners[m.from].as_ref().expect("checked");
                    let n = sizes[m.to].1;
                    let mut own = vec![u32::MAX; n];
                    for (k, &t) in m.values.iter().enumerate() {
                        let r = from[k / m.arity];
                        let o = &mut own[t as usize];
                        *o = (*o).min(r);
                    }
                    let fallback = block_owners(n, ranks);
                    for (o, f) in own.iter_mut().zip(fallback) {
                        if *o == u32::MAX {
                            *o = f;
                        }
                    }
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
        .zip(sizes)
        .map(|(o, (name, _))| {
            o.ok_or_else(|| DistError::Unreachable {
                set: name.to_string(),
            })
        })
        .collect()
}

/// Per set, whether some rank holds a halo element of it. An element is in a rank's exec halo
/// when it reaches an element that rank owns while owned elsewhere (a map row crossing owners);
/// a target is in a rank's non-exec halo when an element that rank owns or runs as exec halo
/// reaches it and the rank does not own it. Computed from the global mesh, so every rank gets
/// the same answer without a message.
pub(crate) fn shared_sets(nsets: usize, maps: &[MapSpec], owners: &[Vec<u32>]) -> Vec<bool> {
    let mut shared = vec![false; nsets];
    // Per set, per element: the ranks that run it as exec halo (few: a sorted small list).
    let mut exec: Vec<Vec<Vec<u32>>> = owners.iter().map(|o| vec![Vec::new(); o.len()]).collect();
    for m in maps {
        for (e, row) in m.values.chunks(m.arity.max(1)).enumerate() {
            let o = owners[m.from][e];
            for &t in row {
                let ot = owners[m.to][t as usize];
                if ot != o {
                    shared[m.from] = true;
                    shared[m.to] = true;
                    if let Err(at) = exec[m.from][e].binary_search(&ot) {
                        exec[m.from][e].insert(at, ot);
                    }
                }
            }
        }
    }
    // Targets of exec-halo elements that the running rank does not own.
    for m in maps {
        for (e, row) in m.values.chunks(m.arity.max(1)).enumerate() {
            let runs = &exec[m.from][e];
            if runs
                .iter()
                .any(|&r| row.iter().any(|&t| owners[m.to][t as usize] != r))
            {
                shared[m.to] = true;
            }
        }
    }
    shared
}

/// One rank's part of one set.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct LocalSet {
    pub sections: Sections,
    /// Global index of each local element, in local order.
    pub global: Vec<u32>,
    /// Owner of each halo element (local index sections.core + sections.owned + h).
    pub halo_owner: Vec<u32>,
}

/// One rank's part of the whole distribution.
#[derive(Clone, Debug)]
pub(crate) struct LocalPart {
    #[cfg_attr(not(test), allow(dead_code))] // the tests check parts against their rank
    pub rank: u32,
    /// Per set, in the order given.
    pub sets: Vec<LocalSet>,
    /// Per map, local targets (rows of non-exec-halo elements whose target is not on this rank
    /// point at local element 0: those rows are never executed).
    pub maps: Vec<Vec<u32>>,
    /// Per set, the neighbours it exchanges with (ascending rank).
    pub exchanges: Vec<Vec<Exchange>>,
}

/// Which elements of each set are rank `rank`'s core, exec halo and non-exec halo.
struct Flags {
    core: Vec<Vec<bool>>,
    exec: Vec<Vec<bool>>,
    nonexec: Vec<Vec<bool>>,
}

fn flags(sizes: &[(&str, usize)], maps: &[MapSpec], owners: &[Vec<u32>], rank: u32) -> Flags {
    let own = |s: usize, e: u32| owners[s][e as usize] == rank;
    // Exec halo: elements owned elsewhere that reach an owned element through a map.
    let mut exec: Vec<Vec<bool>> = sizes.iter().map(|&(_, n)| vec![false; n]).collect();
    for m in maps {
        for e in 0..sizes[m.from].1 {
            if owners[m.from][e] != rank
                && m.values[e * m.arity..(e + 1) * m.arity]
                    .iter()
                    .any(|&t| own(m.to, t))
            {
                exec[m.from][e] = true;
            }
        }
    }
    // Non-exec halo: anything else owned or exec-halo elements reach. Core: owned elements
    // whose targets are all owned.
    let mut nonexec: Vec<Vec<bool>> = sizes.iter().map(|&(_, n)| vec![false; n]).collect();
    let mut core: Vec<Vec<bool>> = (0..sizes.len())
        .map(|s| owners[s].iter().map(|&o| o == rank).collect())
        .collect();
    for m in maps {
        for e in 0..sizes[m.from].1 {
            let mine = owners[m.from][e] == rank;
            if !mine && !exec[m.from][e] {
                continue;
            }
            for &t in &m.values[e * m.arity..(e + 1) * m.arity] {
                if !own(m.to, t) {
                    if mine {
                        core[m.from][e] = false;
                    }
                    if !exec[m.to][t as usize] {
                        nonexec[m.to][t as usize] = true;
                    }
                }
            }
        }
    }
    Flags {
        core,
        exec,
        nonexec,
    }
}

/// Builds rank `rank`'s part from the owners of every set. Every rank holds the global sets
/// and maps while this runs (the send lists need the neighbours' halos): time is
/// O(neighbours x mesh), memory O(mesh), and only the local part is kept.
pub(crate) fn local_part(
    sizes: &[(&str, usize)],
    maps: &[MapSpec],
    owners: &[Vec<u32>],
    rank: u32,
) -> LocalPart {
    let ranks = owners.iter().flatten().map(|&o| o + 1).max().unwrap_or(1);
    let f = flags(sizes, maps, owners, rank);
    let sets: Vec<LocalSet> = (0..sizes.len())
        .map(|s| {
            let n = sizes[s].1;
            let pick = |keep: &dyn Fn(usize) -> bool| -> Vec<u32> {
                (0..n).filter(|&e| keep(e)).map(|e| e as u32).collect()
            };
            let c = pick(&|e| f.core[s][e]);
            let o = pick(&|e| owners[s][e] == rank && !f.core[s][e]);
            let x = pick(&|e| f.exec[s][e]);
            let h = pick(&|e| f.nonexec[s][e]);
            let sections = Sections {
                core: c.len(),
                owned: o.len(),
                exec_halo: x.len(),
                nonexec_halo: h.len(),
            };
            let halo_owner = x.iter().chain(&h).map(|&e| owners[s][e as usize]).collect();
            LocalSet {
                sections,
                global: [c, o, x, h].concat(),
                halo_owner,
            }
        })
        .collect();
    // Global to local, per set (u32::MAX: not on this rank).
    let g2l: Vec<Vec<u32>> = sets
        .iter()
        .zip(sizes)
        .map(|(ls, &(_, n))| {
            let mut v = vec![u32::MAX; n];
            for (l, &g) in ls.global.iter().enumerate() {
                v[g as usize] = l as u32;
            }
            v
        })
        .collect();
    let local_maps = maps
        .iter()
        .map(|m| {
            let mut out = Vec::with_capacity(sets[m.from].global.len() * m.arity);
            for &g in &sets[m.from].global {
                let row = &m.values[g as usize * m.arity..(g as usize + 1) * m.arity];
                out.extend(row.iter().map(|&t| {
                    let l = g2l[m.to][t as usize];
                    if l == u32::MAX { 0 } else { l }
                }));
            }
            out
        })
        .collect();
    // Receives: this rank's halo grouped by owner, in local order.
    let mut exchanges: Vec<std::collections::BTreeMap<u32, Exchange>> =
        vec![Default::default(); sizes.len()];
    for (s, ls) in sets.iter().enumerate() {
        let base = (ls.sections.core + ls.sections.owned) as u32;
        for (h, &q) in ls.halo_owner.iter().enumerate() {
            entry(&mut exchanges[s], q).recv.push(base + h as u32);
        }
    }
    // Sends: for every other rank whose halo can hold an element this rank owns, those
    // elements, in that rank's halo order (exec halo, then non-exec halo, each in global
    // order).
    for q in neighbours(sizes, maps, owners, rank, ranks) {
        let fq = flags(sizes, maps, owners, q);
        for s in 0..sizes.len() {
            let mine = |e: &usize| owners[s][*e] == rank;
            let send: Vec<u32> = (0..sizes[s].1)
                .filter(|e| fq.exec[s][*e] && mine(e))
                .chain((0..sizes[s].1).filter(|e| fq.nonexec[s][*e] && mine(e)))
                .map(|e| g2l[s][e])
                .collect();
            if !send.is_empty() {
                entry(&mut exchanges[s], q).send = send;
            }
        }
    }
    LocalPart {
        rank,
        sets,
        maps: local_maps,
        exchanges: exchanges
            .into_iter()
            .map(|m| m.into_values().collect())
            .collect(),
    }
}

/// The ranks whose halos can hold an element `rank` owns: the owners of every element that
/// reaches one of `rank`'s elements or is reached by one, and of everything such an element
/// reaches (an exec-halo element two map hops away makes its targets' owners neighbours).
/// Only these ranks' halos are computed for the send lists, so the cost is O(neighbours x
/// mesh), not O(ranks x mesh).
fn neighbours(
    sizes: &[(&str, usize)],
    maps: &[MapSpec],
    owners: &[Vec<u32>],
    rank: u32,
    ranks: u32,
) -> Vec<u32> {
    // Elements that are this rank's or reach one of its elements through any map.
    let mut touches: Vec<Vec<bool>> = (0..sizes.len())
        .map(|s| owners[s].iter().map(|&o| o == rank).collect())
        .collect();
    for m in maps {
        for e in 0..sizes[m.from].1 {
            let row = &m.values[e * m.arity..(e + 1) * m.arity];
            if row.iter().any(|&t| owners[m.to][t as usize] == rank) {
                touches[m.from][e] = true;
            }
        }
    }
    // Their owners and the owners of everything they reach, through every map.
    let mut near = vec![false; ranks as usize];
    for m in maps {
        for e in (0..sizes[m.from].1).filter(|&e| touches[m.from][e]) {
            near[owners[m.from][e] as usize] = true;
            for &t in &m.values[e * m.arity..(e + 1) * m.arity] {
                near[owners[m.to][t as usize] as usize] = true;
            }
        }
    }
    (0..ranks)
        .filter(|&q| q != rank && near[q as usize])
        .collect()
}

fn entry(m: &mut std::collections::BTreeMap<u32, Exchange>, q: u32) -> &mut Exchange {
    m.entry(q).or_insert_with(|| Exchange {
        rank: q,
        ..Default::default()
    })
}
