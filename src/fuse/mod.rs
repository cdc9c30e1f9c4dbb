//! Fusion: the loops a force runs become loop groups. Each loop is a node of the partitioner's
//! model (seed 000, docs/background.md): its location is its iteration space and
//! target (host when its kernel has no WGSL); B needs A when their read/write sets conflict;
//! the edge is element-local (usable inside one group, values in registers) only when every Dat
//! they share is accessed directly by both over the same space and no Global is involved;
//! anything else is a barrier. The partitioner (`best`) returns groups in execution order.
//! Groups a single shader cannot hold (two values of one Const, two kernels of one name, more
//! storage buffers than the adapter allows) are split in program order, which keeps them valid.
//!
//! Owns: the mapping between forced loops and loop groups, ephemeral Dats, `explain()`.
//! Must never: touch the device.

mod explain;

pub(crate) use explain::Explain;

use crate::data::Via;
use crate::graph::{self, Graph, NodeSpec, Options};
use crate::trace::LoopRecord;
use std::collections::{BTreeSet, HashMap};
use std::fmt::Write;
use std::rc::Rc;

/// Loops that run together: one shader on the GPU, or one host pass.
pub(crate) struct Group {
    pub loops: Vec<Rc<LoopRecord>>,
    /// Runs on the host (its kernels have no WGSL).
    pub host: bool,
    /// Data ids that live only in registers inside this group (no buffer).
    pub ephemeral: Vec<u64>,
}

impl Group {
    pub fn single(rec: Rc<LoopRecord>) -> Group {
        Group {
            host: is_host(&rec),
            loops: vec![rec],
            ephemeral: Vec::new(),
        }
    }
    /// Where each loop of the group was called.
    pub fn sites(&self) -> Vec<crate::error::LoopSite> {
        self.loops.iter().map(|l| l.site()).collect()
    }
    /// The group's kernels joined by `+`: its name in the profile, the timeline and `tune`'s
    /// report.
    pub fn label(&self) -> String {
        self.loops
            .iter()
            .map(|l| l.kernel.name())
            .collect::<Vec<_>>()
            .join("+")
    }
    /// The par_loops of the group, for messages.
    pub fn names(&self) -> String {
        self.loops
            .iter()
            .map(|l| l.name())
            .collect::<Vec<_>>()
            .join(", ")
    }
}

fn is_host(rec: &LoopRecord) -> bool {
    rec.kernel.wgsl().is_none()
}

/// What fusion needs from the context.
pub(crate) struct FuseEnv {
    pub fusion: bool,
    /// Storage buffers a shader may bind.
    pub max_storage: usize,
    /// Data ids read by loops still pending after this force.
    pub pending_reads: BTreeSet<u64>,
}

/// A cached grouping: loop indices per group and ephemeral data (as first-appearance indices),
/// with what `explain()` said of it and what that depends on beyond the force's shape (the
/// data's names, by first appearance), so a force of the same shape over other data is
/// explained with its own names.
pub(crate) struct Cached {
    groups: Vec<(Vec<usize>, Vec<usize>)>,
    explain: Explain,
    names: Vec<String>,
    /// The loop pairs cut apart (their reasons name data).
    cuts: Vec<(usize, usize)>,
    /// The explanation's first line (the partitioner's figures).
    head: String,
}

/// Groups the loops of a force (in program order), and what `explain()` says of them;
/// `partitioned` counts a grouping computed (not found in `cache`).
pub(crate) fn groups(
    loops: &[Rc<LoopRecord>],
    env: &FuseEnv,
    cache: &mut HashMap<String, Cached>,
    partitioned: &mut u64,
) -> (Vec<Group>, Explain) {
    if loops.is_empty() {
        return (Vec::new(), Explain::default());
    }
    if !env.fusion {
        let groups: Vec<Group> = loops.iter().cloned().map(Group::single).collect();
        let head = format!(
            "{} loops in {} groups (fusion off)",
            loops.len(),
            groups.len()
        );
        let lines: Vec<String> = groups.iter().map(|g| format!(": {}", g.names())).collect();
        return (groups, explain::groups_and_cuts(&head, &lines, &[]));
    }
    let (sig, data_ids, names) = signature(loops, env);
    if !cache.contains_key(&sig) {
        *partitioned += 1;
        let c = partition(loops, env, &data_ids);
        if cache.len() >= 256 {
            cache.clear();
        }
        cache.insert(sig.clone(), c);
    }
    let cached = &cache[&sig];
    let groups = cached
        .groups
        .iter()
        .map(|(idx, eph)| Group {
            host: is_host(&loops[idx[0]]),
            loops: idx.iter().map(|&i| loops[i].clone()).collect(),
            ephemeral: eph.iter().map(|&d| data_ids[d]).collect(),
        })
        .collect();
    let explain = if cached.names.iter().eq(names.iter()) {
        cached.explain.clone()
    } else {
        cached.explain_again(loops, &data_ids)
    };
    (groups, explain)
}

/// A key that is equal for forces of the same shape (same kernels, spaces and access pattern),
/// whatever the ids of temporaries; and the data ids in first-appearance order.
fn signature<'a>(loops: &'a [Rc<LoopRecord>], env: &FuseEnv) -> (String, Vec<u64>, Vec<&'a str>) {
    let mut ids: Vec<u64> = Vec::new();
    let mut names: Vec<&str> = Vec::new();
    let mut index = |id: u64, name: &'a str| match ids.iter().position(|&x| x == id) {
        Some(i) => i,
        None => {
            ids.push(id);
            names.push(name);
            ids.len() - 1
        }
    };
    // Const values matter only as equal or not (two values of one Const split a group), so a
    // Const that changes every step keeps one key.
    let mut values: Vec<(&str, Vec<&crate::data::ConstValue>)> = Vec::new();
    let mut s = String::new();
    for lp in loops {
        // By content: a kernel made again with the same source is the same kernel here.
        let _ = write!(s, "k{:x}|{:?}|", lp.kernel.0.content, lp.space.key());
        for (name, v) in &lp.consts {
            let slot = match values.iter().position(|(n, _)| n == name) {
                Some(i) => i,
                None => {
                    values.push((name, Vec::new()));
                    values.len() - 1
                }
            };
            let seen = &mut values[slot].1;
            let k = seen.iter().position(|x| *x == v).unwrap_or_else(|| {
                seen.push(v);
                seen.len() - 1
            });
            let _ = write!(s, "{name}={k},");
        }
        s.push('|');
        for a in &lp.args {
            let via = match &a.via {
                Via::Direct => "d".to_string(),
                Via::Global => "g".to_string(),
                Via::Map(m, j) => format!("m{}.{j}", m.id()),
                Via::MapAll(m) => format!("m{}", m.id()),
            };
            let d = index(a.data.id, &a.data.name);
            let _ = write!(
                s,
                "{d}{}{}{via}{:?},",
                if a.data.state.alive() { "a" } else { "x" },
                if env.pending_reads.contains(&a.data.id) {
                    "p"
                } else {
                    ""
                },
                a.access
            );
        }
        s.push(';');
    }
    (s, ids, names)
}

/// Why loop b cannot use loop a's results inside one group, if it cannot (a before b, with a
/// conflict between them).
fn barrier(a: &LoopRecord, b: &LoopRecord) -> Option<String> {
    if a.space.key() != b.space.key() {
        return Some(format!(
            "`{}` iterates {} and `{}` iterates {}",
            a.kernel.name(),
            a.space.name(),
            b.kernel.name(),
            b.space.name()
        ));
    }
    let shared: BTreeSet<u64> =
        a.at.writes
            .ids()
            .filter(|id| b.at.reads.mask(*id) != 0 || b.at.writes.mask(*id) != 0)
            .chain(a.at.reads.ids().filter(|id| b.at.writes.mask(*id) != 0))
            .collect();
    for id in shared {
        for lp in [a, b] {
            for arg in lp.args.iter().filter(|x| x.data.id == id) {
                if !matches!(arg.via, Via::Direct) {
                    return Some(format!(
                        "`{}` accesses `{}` {}",
                        lp.kernel.name(),
                        arg.data.name,
                        arg.describe().split_once(' ').map_or("", |(_, r)| r)
                    ));
                }
            }
        }
    }
    None
}

fn conflicts(a: &LoopRecord, b: &LoopRecord) -> bool {
    b.at.reads.meet(&a.at.writes).is_some()
        || b.at.writes.meet(&a.at.reads).is_some()
        || b.at.writes.meet(&a.at.writes).is_some()
}

fn partition(loops: &[Rc<LoopRecord>], env: &FuseEnv, data_ids: &[u64]) -> Cached {
    let n = loops.len();
    let mut specs: Vec<NodeSpec> = Vec::with_capacity(n);
    let mut cuts: Vec<(usize, usize, String)> = Vec::new();
    for (j, b) in loops.iter().enumerate() {
        let (set, sub) = b.space.key();
        let mut spec = NodeSpec::new(format!("L{j}"), format!("{set}.{sub}"))
            .target(if is_host(b) { "host" } else { "gpu" });
        for (i, a) in loops[..j].iter().enumerate() {
            if !conflicts(a, b) {
                continue;
            }
            match barrier(a, b) {
                Some(why) => {
                    spec.barrier_needs.push(format!("L{i}"));
                    cuts.push((i, j, why));
                }
                None => spec.needs.push(format!("L{i}")),
            }
        }
        specs.push(spec);
    }
    let g =
        Graph::new(specs).expect("a trace in program order is acyclic and all nodes are cached");
    let p = graph::partition(&g, &Options::default());
    // Groups in execution order, loops in program order; then split what one shader cannot hold.
    let mut groups: Vec<Vec<usize>> = Vec::new();
    for lp in &p.loops {
        let mut idx: Vec<usize> = lp.nodes.clone();
        idx.sort_unstable();
        groups.extend(split_incompatible(loops, idx, env.max_storage));
    }
    let group_of: Vec<usize> = {
        let mut v = vec![0; n];
        for (gi, g) in groups.iter().enumerate() {
            for &l in g {
                v[l] = gi;
            }
        }
        v
    };
    // Ephemeral data: dropped by the user, not read by pending loops, touched by one group
    // only, directly, and first written there.
    let mut eph: Vec<Vec<usize>> = vec![Vec::new(); groups.len()];
    for (di, &id) in data_ids.iter().enumerate() {
        let users: Vec<usize> = (0..n)
            .filter(|&l| loops[l].args.iter().any(|a| a.data.id == id))
            .collect();
        let first = &loops[users[0]];
        let arg0 = first.args.iter().find(|a| a.data.id == id).expect("user");
        let ok = !arg0.data.state.alive()
            && !arg0.data.is_global()
            && !env.pending_reads.contains(&id)
            && users.iter().all(|&l| group_of[l] == group_of[users[0]])
            && users.iter().all(|&l| {
                loops[l]
                    .args
                    .iter()
                    .filter(|a| a.data.id == id)
                    .all(|a| matches!(a.via, Via::Direct))
            })
            && arg0.access == crate::types::Access::Write;
        if ok {
            eph[group_of[users[0]]].push(di);
        }
    }
    let head = format!(
        "{} loops in {} groups (partitioner: {}, lower bound {}{})",
        loops.len(),
        groups.len(),
        p.algorithm,
        p.lower_bound,
        if p.optimal { ", optimal" } else { "" }
    );
    let explain = describe(loops, &groups, &eph, data_ids, &cuts, &group_of, &head);
    let names = data_ids
        .iter()
        .map(|&id| name_of(loops, id).to_string())
        .collect();
    Cached {
        groups: groups.into_iter().zip(eph).collect(),
        explain,
        names,
        cuts: cuts.iter().map(|&(i, j, _)| (i, j)).collect(),
        head,
    }
}

/// The name of data `id` among the loops' arguments.
fn name_of(loops: &[Rc<LoopRecord>], id: u64) -> &str {
    loops
        .iter()
        .flat_map(|l| l.args.iter())
        .find(|a| a.data.id == id)
        .map_or("", |a| a.data.name.as_str())
}

impl Cached {
    /// The explanation of this grouping for `loops` (a force of the cached shape over data of
    /// other names).
    fn explain_again(&self, loops: &[Rc<LoopRecord>], data_ids: &[u64]) -> Explain {
        let groups: Vec<Vec<usize>> = self.groups.iter().map(|(g, _)| g.clone()).collect();
        let eph: Vec<Vec<usize>> = self.groups.iter().map(|(_, e)| e.clone()).collect();
        let mut group_of = vec![0; loops.len()];
        for (gi, g) in groups.iter().enumerate() {
            g.iter().for_each(|&l| group_of[l] = gi);
        }
        let cuts: Vec<(usize, usize, String)> = self
            .cuts
            .iter()
            .map(|&(i, j)| (i, j, barrier(&loops[i], &loops[j]).unwrap_or_default()))
            .collect();
        describe(loops, &groups, &eph, data_ids, &cuts, &group_of, &self.head)
    }
}

/// Splits a group (loop indices in program order) where one shader cannot hold it: a Const or
/// function name with two meanings, or more storage buffers than allowed.
fn split_incompatible(
    loops: &[Rc<LoopRecord>],
    idx: Vec<usize>,
    max_storage: usize,
) -> Vec<Vec<usize>> {
    let mut out: Vec<Vec<usize>> = Vec::new();
    let mut cur = Shader::default();
    let mut members: Vec<usize> = Vec::new();
    for l in idx {
        if !members.is_empty() && !cur.fits(&loops[l], max_storage) {
            out.push(std::mem::take(&mut members));
            cur = Shader::default();
        }
        cur.add(&loops[l]);
        members.push(l);
    }
    if !members.is_empty() {
        out.push(members);
    }
    out
}

/// What a shader under construction holds, to tell whether one more loop fits.
#[derive(Default)]
struct Shader<'a> {
    consts: HashMap<&'a str, &'a crate::data::ConstValue>,
    /// Each function name must come from one WGSL source.
    functions: HashMap<&'a str, Option<&'a str>>,
    buffers: BTreeSet<u64>,
    /// A plan or subset buffer.
    extra: bool,
    /// A scratch buffer for Global reductions.
    scratch: bool,
}

/// The function names a loop's kernel brings (its own name and those its source defines).
fn functions(lp: &LoopRecord) -> Vec<&str> {
    let mut names = vec![lp.kernel.name()];
    names.extend(
        lp.kernel
            .wgsl()
            .map(crate::kernel::functions_defined)
            .unwrap_or_default(),
    );
    names
}

/// Storage buffers a loop binds: Dats and Globals, and Maps (tagged apart).
fn buffer_ids(lp: &LoopRecord) -> impl Iterator<Item = u64> + '_ {
    lp.args
        .iter()
        .flat_map(|a| std::iter::once(a.data.id).chain(a.map().map(|m| m.id() | 1 << 63)))
}

fn needs_extra(lp: &LoopRecord) -> bool {
    lp.args.iter().any(|a| a.races()) || lp.space.subset().is_some()
}

fn needs_scratch(lp: &LoopRecord) -> bool {
    lp.args
        .iter()
        .any(|a| matches!(a.via, Via::Global) && a.access.is_reduction())
}

impl<'a> Shader<'a> {
    /// Whether the shader can also hold `lp`.
    fn fits(&self, lp: &LoopRecord, max_storage: usize) -> bool {
        let src = lp.kernel.wgsl();
        let consts_ok = lp
            .consts
            .iter()
            .all(|(n, v)| self.consts.get(n.as_str()).is_none_or(|old| *old == v));
        let functions_ok = functions(lp)
            .into_iter()
            .all(|f| self.functions.get(f).is_none_or(|old| *old == src));
        let new: BTreeSet<u64> = buffer_ids(lp)
            .filter(|id| !self.buffers.contains(id))
            .collect();
        let total = self.buffers.len()
            + new.len()
            + usize::from(self.extra || needs_extra(lp))
            + usize::from(self.scratch || needs_scratch(lp));
        consts_ok && functions_ok && total <= max_storage
    }

    fn add(&mut self, lp: &'a LoopRecord) {
        for (n, v) in &lp.consts {
            self.consts.insert(n, v);
        }
        let src = lp.kernel.wgsl();
        for f in functions(lp) {
            self.functions.insert(f, src);
        }
        self.buffers.extend(buffer_ids(lp));
        self.extra |= needs_extra(lp);
        self.scratch |= needs_scratch(lp);
    }
}

/// What the grouping says: the force, each group (its space and loops, the Dats it keeps in
/// registers), and the cuts between groups with their reasons.
fn describe(
    loops: &[Rc<LoopRecord>],
    groups: &[Vec<usize>],
    eph: &[Vec<usize>],
    data_ids: &[u64],
    cuts: &[(usize, usize, String)],
    group_of: &[usize],
    head: &str,
) -> Explain {
    let lines: Vec<String> = groups
        .iter()
        .zip(eph)
        .map(|(g, eph)| {
            let first = &loops[g[0]];
            let mut line = format!(
                " over {}{}: {}",
                first.space.name(),
                if is_host(first) { " (host)" } else { "" },
                g.iter()
                    .map(|&l| format!("`{}`", loops[l].kernel.name()))
                    .collect::<Vec<_>>()
                    .join(", ")
            );
            if !eph.is_empty() {
                let names: Vec<String> = eph
                    .iter()
                    .map(|&d| format!("`{}`", name_of(loops, data_ids[d])))
                    .collect();
                let _ = write!(
                    line,
                    "; ephemeral (registers only, no buffer): {}",
                    names.join(", ")
                );
            }
            line
        })
        .collect();
    // One cut per pair of groups, with the first reason found between them.
    let mut seen = BTreeSet::new();
    let between: Vec<(usize, usize, String)> = cuts
        .iter()
        .filter(|(a, b, _)| {
            group_of[*a] != group_of[*b] && seen.insert((group_of[*a], group_of[*b]))
        })
        .map(|(a, b, why)| (group_of[*a], group_of[*b], why.clone()))
        .collect();
    explain::groups_and_cuts(head, &lines, &between)
}
