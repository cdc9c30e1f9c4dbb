//! The lazy execution trace (seeds 004 and 001): every par_loop is recorded as a computation
//! with read and write sets at the granularity of Dat sections (and Globals); the trace keeps a
//! DAG of them (read-after-write, write-after-read, write-after-write; implied edges dropped).
//! `evaluate(reads, writes)` walks it newest to oldest with the seed's propagation rule and
//! removes the needed computations, in program order.
//!
//! Owns: dependency bookkeeping. Must never: run anything (the context hands what evaluate
//! returns to the runtime).

use crate::data::{Arg, ConstValue, DataInner, IterSpace, Via, section};
use crate::kernel::Kernel;
use std::collections::BTreeSet;
use std::fmt::Write;
use std::panic::Location;
use std::rc::Rc;

/// Data touched by a computation: (data id, section mask), sorted by id.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AccessSet(Vec<(u64, u8)>);

impl AccessSet {
    pub fn new() -> AccessSet {
        AccessSet::default()
    }
    pub fn of(id: u64, mask: u8) -> AccessSet {
        AccessSet(vec![(id, mask)])
    }
    pub fn add(&mut self, id: u64, mask: u8) {
        match self.0.binary_search_by_key(&id, |&(i, _)| i) {
            Ok(k) => self.0[k].1 |= mask,
            Err(k) => self.0.insert(k, (id, mask)),
        }
    }
    pub fn union(&mut self, other: &AccessSet) {
        for &(id, m) in &other.0 {
            self.add(id, m);
        }
    }
    /// The first (id, mask) both sets touch, if any.
    pub fn meet(&self, other: &AccessSet) -> Option<(u64, u8)> {
        let (mut i, mut j) = (0, 0);
        while i < self.0.len() && j < other.0.len() {
            let (a, b) = (self.0[i], other.0[j]);
            if a.0 == b.0 {
                if a.1 & b.1 != 0 {
                    return Some((a.0, a.1 & b.1));
                }
                i += 1;
                j += 1;
            } else if a.0 < b.0 {
                i += 1;
            } else {
                j += 1;
            }
        }
        None
    }
    /// self \ other, section by section.
    pub fn minus(&self, other: &AccessSet) -> AccessSet {
        let mut out = AccessSet::new();
        for &(id, m) in &self.0 {
            let rest = m & !other.mask(id);
            if rest != 0 {
                out.0.push((id, rest));
            }
        }
        out
    }
    pub fn mask(&self, id: u64) -> u8 {
        self.0
            .binary_search_by_key(&id, |&(i, _)| i)
            .map_or(0, |k| self.0[k].1)
    }
    pub fn ids(&self) -> impl Iterator<Item = u64> + '_ {
        self.0.iter().map(|&(id, _)| id)
    }
}

/// Where a computation was recorded and what it touches: program order, the user's call site,
/// and its read and write sets.
pub struct Footprint {
    /// Program order.
    pub seq: u64,
    pub site: &'static Location<'static>,
    pub reads: AccessSet,
    pub writes: AccessSet,
}

/// One computation of the trace (seed 001): a loop, or an exchange's or a reduction's half.
/// Only loops run on the device; the rest run on the host between device work.
pub(crate) enum Computation {
    /// A par_loop over its space (the whole set, or its core or owned part).
    Loop(Rc<LoopRecord>),
    /// HaloSend(d): `pack` (a loop over the send lists) gathers the owned values of `dat`
    /// that neighbours need into `packed`; once it has run, they are read back and sent.
    HaloSend {
        pack: Rc<LoopRecord>,
        dat: Rc<DataInner>,
        packed: Rc<DataInner>,
    },
    /// HaloRecv(d): writes the values the neighbours sent (for the HaloSend `send`) into
    /// `dat`'s halo.
    HaloRecv {
        at: Footprint,
        dat: Rc<DataInner>,
        send: u64,
    },
    /// A Global's reduction over the ranks begins: this rank's value (`local`) is read back
    /// and a non-blocking allreduce (`access`: sum, min or max) starts.
    ReduceBegin {
        at: Footprint,
        local: Rc<DataInner>,
        access: crate::types::Access,
    },
    /// The reduction ends: the ranks' values are combined into `global` (for `Inc`, `local`
    /// is this rank's increment, added to `global`; for `Min`/`Max` they are one Global).
    ReduceEnd {
        at: Footprint,
        global: Rc<DataInner>,
        local: Rc<DataInner>,
        access: crate::types::Access,
    },
}

impl Computation {
    /// Where it was recorded and what it touches.
    pub fn footprint(&self) -> &Footprint {
        match self {
            Computation::Loop(l) | Computation::HaloSend { pack: l, .. } => &l.at,
            Computation::HaloRecv { at, .. }
            | Computation::ReduceBegin { at, .. }
            | Computation::ReduceEnd { at, .. } => at,
        }
    }
    pub fn seq(&self) -> u64 {
        self.footprint().seq
    }
    pub fn reads(&self) -> &AccessSet {
        &self.footprint().reads
    }
    pub fn writes(&self) -> &AccessSet {
        &self.footprint().writes
    }
    /// Whether every rank of a distributed run records it alike (a loop over a distributed
    /// set, an exchange, a reduction), as opposed to a loop over a set of this process alone.
    pub fn collective(&self) -> bool {
        match self {
            Computation::Loop(l) => l.space.set().halo().is_some(),
            Computation::HaloSend { .. }
            | Computation::HaloRecv { .. }
            | Computation::ReduceBegin { .. }
            | Computation::ReduceEnd { .. } => true,
        }
    }
    /// The loop it runs on the device (a par_loop, or a HaloSend's packing loop), if any.
    pub fn device_loop(&self) -> Option<&Rc<LoopRecord>> {
        match self {
            Computation::Loop(l) | Computation::HaloSend { pack: l, .. } => Some(l),
            Computation::HaloRecv { .. }
            | Computation::ReduceBegin { .. }
            | Computation::ReduceEnd { .. } => None,
        }
    }
    /// "par_loop `res_calc` at src/main.rs:42", or the label of what is not a par_loop.
    pub fn name(&self) -> String {
        match self {
            Computation::Loop(l) => l.name(),
            Computation::HaloSend { .. }
            | Computation::HaloRecv { .. }
            | Computation::ReduceBegin { .. }
            | Computation::ReduceEnd { .. } => {
                let at = self.footprint().site;
                format!(
                    "{} (for a par_loop at {}:{})",
                    self.label(),
                    at.file(),
                    at.line()
                )
            }
        }
    }
    /// Seed 001's label: `res_calc[core,owned]`, `res_calc[core]`, `HaloSend(q)`, ...
    pub fn label(&self) -> String {
        match self {
            Computation::Loop(l) => l.label(),
            Computation::HaloSend { dat, .. } => format!("HaloSend({})", dat.name),
            Computation::HaloRecv { dat, .. } => format!("HaloRecv({})", dat.name),
            Computation::ReduceBegin { local, .. } => format!("ReductionBegin({})", local.name),
            Computation::ReduceEnd { global, .. } => format!("ReductionEnd({})", global.name),
        }
    }
}

/// One recorded loop: a par_loop (or its core or owned part), or a HaloSend's packing loop.
pub struct LoopRecord {
    pub at: Footprint,
    pub kernel: Kernel,
    pub space: IterSpace,
    pub args: Vec<Arg>,
    /// The Consts the kernel uses, as they were when the loop was recorded.
    pub consts: Vec<(String, ConstValue)>,
}

impl LoopRecord {
    /// Where the par_loop was called (for errors a program can match).
    pub fn site(&self) -> crate::error::LoopSite {
        crate::error::LoopSite::new(self.kernel.name(), self.at.site)
    }
    /// "par_loop `res_calc` at src/main.rs:42".
    pub fn name(&self) -> String {
        format!(
            "par_loop `{}` at {}:{}",
            self.kernel.name(),
            self.at.site.file(),
            self.at.site.line()
        )
    }
    /// Seed 001's label: `res_calc[core,owned]`, `res_calc[core]`, ...
    pub fn label(&self) -> String {
        let name = self.kernel.name().replace('"', "'");
        match &self.space {
            IterSpace::Core(_) => format!("{name}[core]"),
            IterSpace::Owned(..) => format!("{name}[owned]"),
            IterSpace::WithExecHalo(_) => format!("{name}[core,owned,exec]"),
            _ => format!("{name}[core,owned]"),
        }
    }
    /// Read and write sets of a loop's arguments (INC counts as both), by section (seed
    /// 001): a loop over core elements reaches core and owned data through its maps; any
    /// other part of a distributed set may reach every section.
    pub fn access_sets(space: &IterSpace, args: &[Arg]) -> (AccessSet, AccessSet) {
        use section::{ALL, CORE, EXEC_HALO, OWNED};
        let distributed = space.set().halo().is_some();
        let (iterated, reached) = match space {
            IterSpace::Core(_) => (CORE, CORE | OWNED),
            IterSpace::Owned(_, exec) => (OWNED | if *exec { EXEC_HALO } else { 0 }, ALL),
            IterSpace::WithExecHalo(_) => (CORE | OWNED | EXEC_HALO, ALL),
            IterSpace::Subset(s) if s.0.exec_halo => (CORE | OWNED | EXEC_HALO, ALL),
            _ if distributed => (CORE | OWNED, ALL),
            _ => (CORE | OWNED, CORE | OWNED | EXEC_HALO),
        };
        let (mut r, mut w) = (AccessSet::new(), AccessSet::new());
        for a in args {
            let mask = match &a.via {
                Via::Direct => iterated,
                // A map whose owned rows reach owned targets only, in a loop over the owned
                // elements, reaches no halo.
                Via::Map(m, _) | Via::MapAll(m)
                    if m.reach() == crate::data::Reach::Owned
                        && matches!(space, IterSpace::Set(_)) =>
                {
                    iterated
                }
                Via::Map(..) | Via::MapAll(..) => reached,
                Via::Global => section::ALL,
            };
            if a.access.reads() {
                r.add(a.data.id, mask);
            }
            if a.access.writes() {
                w.add(a.data.id, mask);
            }
        }
        (r, w)
    }
}

/// Why a computation was selected by evaluate.
#[derive(Clone, Debug)]
pub struct Reason {
    /// "read-after-write", "write-after-read" or "write-after-write".
    pub kind: &'static str,
    pub data: u64,
    pub mask: u8,
}

/// The pending computations, in program order. Their DAG follows from the read/write sets; it
/// is built when asked for (`edges`, `to_dot`), since evaluating needs only the sets.
#[derive(Default)]
pub struct Trace {
    pending: Vec<Rc<Computation>>,
    next_seq: u64,
}

fn conflict(a_reads: &AccessSet, a_writes: &AccessSet, c: &Computation) -> Option<Reason> {
    let hit = |kind, m: Option<(u64, u8)>| m.map(|(data, mask)| Reason { kind, data, mask });
    hit("read-after-write", a_reads.meet(c.writes()))
        .or_else(|| hit("write-after-read", a_writes.meet(c.reads())))
        .or_else(|| hit("write-after-write", a_writes.meet(c.writes())))
}

/// Whether `later` must run after `earlier` (a read-after-write, write-after-read or
/// write-after-write on some section).
pub fn depends(later: &Computation, earlier: &Computation) -> bool {
    conflict(later.reads(), later.writes(), earlier).is_some()
}

impl Trace {
    pub fn len(&self) -> usize {
        self.pending.len()
    }
    pub fn next_seq(&mut self) -> u64 {
        self.next_seq += 1;
        self.next_seq
    }
    pub fn pending(&self) -> &[Rc<Computation>] {
        &self.pending
    }

    /// Appends a computation.
    pub fn record(&mut self, rec: Rc<Computation>) {
        self.pending.push(rec);
    }

    /// Removes and returns (oldest first) the computations needed to bring `reads` up to date
    /// for reading and `writes` for writing (seed 004's rule).
    pub fn evaluate(
        &mut self,
        reads: &AccessSet,
        writes: &AccessSet,
    ) -> Vec<(Rc<Computation>, Reason)> {
        let (mut r, mut w) = (reads.clone(), writes.clone());
        let mut needed = vec![None; self.pending.len()];
        for (k, c) in self.pending.iter().enumerate().rev() {
            if let Some(reason) = conflict(&r, &w, c) {
                r.union(&c.reads().minus(c.writes()));
                w.union(c.writes());
                needed[k] = Some(reason);
            }
        }
        self.take(needed)
    }

    /// Removes and returns every pending computation.
    pub fn take_all(&mut self) -> Vec<(Rc<Computation>, Reason)> {
        let all = vec![
            Some(Reason {
                kind: "flush",
                data: 0,
                mask: 0
            });
            self.pending.len()
        ];
        self.take(all)
    }

    /// The computations the trace bound counts: all of them, or (`collective`: on N ranks,
    /// where a rank may record loops of its own) those every rank records alike.
    pub fn bound_len(&self, collective: bool) -> usize {
        if collective {
            self.pending.iter().filter(|c| c.collective()).count()
        } else {
            self.pending.len()
        }
    }

    /// Removes the oldest computations up to the `n`-th one counted by [`Trace::bound_len`]
    /// (a prefix of program order is closed under dependencies). Used when the trace exceeds
    /// its bound; on N ranks every rank cuts after the same collective computation.
    pub fn take_prefix(&mut self, n: usize, collective: bool) -> Vec<(Rc<Computation>, Reason)> {
        let mut counted = 0;
        let end = self
            .pending
            .iter()
            .position(|c| {
                counted += usize::from(!collective || c.collective());
                counted >= n
            })
            .map_or(self.pending.len(), |k| k + 1);
        let sel = (0..self.pending.len())
            .map(|k| {
                (k < end).then_some(Reason {
                    kind: "trace bound",
                    data: 0,
                    mask: 0,
                })
            })
            .collect();
        self.take(sel)
    }

    /// Removes and returns the computations of this rank alone (loops over its own sets) that
    /// wait for no collective computation: a set closed under dependencies, which a rank may
    /// run without the others. Used on N ranks when a rank's own loops exceed the bound.
    pub fn take_local(&mut self) -> Vec<(Rc<Computation>, Reason)> {
        let mut waits = vec![false; self.pending.len()];
        for k in 0..self.pending.len() {
            let c = &self.pending[k];
            waits[k] = c.collective() || (0..k).any(|j| waits[j] && depends(c, &self.pending[j]));
        }
        let sel = waits
            .iter()
            .map(|&w| {
                (!w).then_some(Reason {
                    kind: "trace bound",
                    data: 0,
                    mask: 0,
                })
            })
            .collect();
        self.take(sel)
    }

    fn take(&mut self, selected: Vec<Option<Reason>>) -> Vec<(Rc<Computation>, Reason)> {
        let mut out = Vec::new();
        let mut keep = Vec::new();
        for (c, s) in std::mem::take(&mut self.pending).into_iter().zip(selected) {
            match s {
                Some(reason) => out.push((c, reason)),
                None => keep.push(c),
            }
        }
        self.pending = keep;
        out
    }

    /// Removes pending computations whose every write goes to data the user dropped and that no
    /// later pending computation reads (seed 001's lazy free). Returns how many were removed.
    /// `collective` (N ranks): what every rank records alike is kept (see [`live_mask`]).
    pub fn prune_dead(&mut self, collective: bool) -> usize {
        let keep = live_mask(&self.pending, BTreeSet::new(), collective);
        let dead = keep.iter().filter(|&&k| !k).count();
        if dead > 0 {
            let sel = keep
                .iter()
                .map(|&k| {
                    (!k).then_some(Reason {
                        kind: "dead",
                        data: 0,
                        mask: 0,
                    })
                })
                .collect();
            for (c, _) in self.take(sel) {
                log::debug!(
                    "drops {}: it only writes dropped data nobody reads",
                    c.name()
                );
            }
        }
        dead
    }

    /// The DAG of the pending computations: for each, its direct dependencies (indices into
    /// `pending`), without the edges implied by a path through a newer dependency.
    fn dag(&self) -> Vec<Vec<usize>> {
        let n = self.pending.len();
        let mut ancestors: Vec<Vec<bool>> = Vec::with_capacity(n);
        let mut deps = Vec::with_capacity(n);
        for (k, c) in self.pending.iter().enumerate() {
            let mut covered = vec![false; n];
            let mut direct = Vec::new();
            for j in (0..k).rev() {
                if !covered[j] && conflict(c.reads(), c.writes(), &self.pending[j]).is_some() {
                    direct.push(j);
                    covered[j] = true;
                    for (a, &anc) in ancestors[j].iter().enumerate() {
                        covered[a] |= anc;
                    }
                }
            }
            direct.reverse();
            ancestors.push(covered);
            deps.push(direct);
        }
        deps
    }

    /// The direct dependencies of pending computations as (from seq, to seq) pairs.
    pub fn edges(&self) -> Vec<(u64, u64)> {
        self.dag()
            .iter()
            .enumerate()
            .flat_map(|(k, d)| d.iter().map(move |&j| (j, k)))
            .map(|(j, k)| (self.pending[j].seq(), self.pending[k].seq()))
            .collect()
    }

    /// The pending DAG in Graphviz dot, between `top` and `bot` as in seed 001's figures.
    pub fn to_dot(&self) -> String {
        let mut s =
            String::from("digraph trace {\n  top [label=\"top\"];\n  bot [label=\"bot\"];\n");
        let mut has_succ: BTreeSet<u64> = BTreeSet::new();
        let dag = self.dag();
        for c in &self.pending {
            let _ = writeln!(s, "  c{} [label=\"{}\"];", c.seq(), c.label());
        }
        for (c, d) in self.pending.iter().zip(&dag) {
            if d.is_empty() {
                let _ = writeln!(s, "  top -> c{};", c.seq());
            }
            for &j in d {
                let p = self.pending[j].seq();
                has_succ.insert(p);
                let _ = writeln!(s, "  c{p} -> c{};", c.seq());
            }
        }
        for c in &self.pending {
            if !has_succ.contains(&c.seq()) {
                let _ = writeln!(s, "  c{} -> bot;", c.seq());
            }
        }
        s.push_str("}\n");
        s
    }
}

/// Which computations have an observable effect: a loop's write to data the user still holds,
/// or to data a later computation (in `computations`, or among the ids in `read_later`) reads;
/// every exchange and reduction; with `collective` (N ranks), every computation all ranks
/// record alike: a rank may drop a Dat the others keep, and liveness decided per rank would
/// leave the ranks' traces, and so their forces, different. Newest to oldest.
pub fn live_mask(
    computations: &[Rc<Computation>],
    mut read_later: BTreeSet<u64>,
    collective: bool,
) -> Vec<bool> {
    let mut keep = vec![false; computations.len()];
    for (k, c) in computations.iter().enumerate().rev() {
        let live = match &**c {
            Computation::Loop(_) if collective && c.collective() => true,
            Computation::Loop(lp) => lp.args.iter().any(|a| {
                a.access.writes() && (a.data.state.alive() || read_later.contains(&a.data.id))
            }),
            // Exchanges and reductions are collective: every rank runs them.
            Computation::HaloSend { .. }
            | Computation::HaloRecv { .. }
            | Computation::ReduceBegin { .. }
            | Computation::ReduceEnd { .. } => true,
        };
        if live {
            keep[k] = true;
            read_later.extend(c.reads().ids());
        }
    }
    keep
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn access_sets_meet_by_section() {
        let mut a = AccessSet::new();
        a.add(3, section::CORE);
        a.add(7, section::OWNED);
        let b = AccessSet::of(3, section::OWNED);
        assert_eq!(a.meet(&b), None);
        let c = AccessSet::of(7, section::ALL);
        assert_eq!(a.meet(&c), Some((7, section::OWNED)));
        let d = a.minus(&AccessSet::of(7, section::OWNED));
        assert_eq!(d, AccessSet::of(3, section::CORE));
    }
}
