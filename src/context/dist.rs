//! par_loop on a distributed set (see `crate::dist`): which elements the loop runs, the halo
//! exchanges it needs, and what it leaves stale or combines after.
//!
//! - A loop that increments or writes through a map runs its owned elements and its exec halo
//!   (so increments into owned data are complete); any other loop runs its owned elements.
//! - Before a loop reads a Dat through a map (READ or RW), or reads a Dat directly while it runs
//!   the exec halo, the Dat's halo must hold the owners' values. Halo validity is tracked per
//!   Dat: a write makes it stale, an exchange makes it current, and a current halo is not
//!   exchanged again.
//! - The exchange is two computations in the trace (seed 001),
//!   `HaloSend(d)` (reads d's core and owned sections, writes NET(d)) and `HaloRecv(d)` (reads
//!   NET(d), writes d's halo), and the loop becomes `loop[core]`, which does not wait for
//!   them, and `loop[owned]`, which does. An exchange whose halo is already current is not
//!   recorded (early halo skip), nor one whose Dat has an exchange still in the trace with no
//!   write since (successive exchanges). A Global reduced by the loop gets
//!   `ReductionBegin`/`ReductionEnd`. `context::rounds` schedules all this at the force.
//! - Eager mode records the same computations (one path for both modes), but the loop is not
//!   split, and they run as soon as the par_loop has recorded them all: the exchange, the
//!   loop, the reduction.
//!
//! Every rank records the same loops, so every rank exchanges at the same points.

use super::*;
use crate::data::{Reach, Set, Via};
use crate::trace::{Computation, Footprint};

impl Context {
    /// Checks a loop's sets against its distribution; for a loop over a distributed set (or a
    /// subset of one), returns the space and whether it runs the exec halo (None: not
    /// distributed).
    pub(super) fn distributed_space(
        &self,
        kernel: &Kernel,
        space: &IterSpace,
        args: &[Arg],
        site: &'static Location<'static>,
    ) -> Result<Option<(IterSpace, bool)>> {
        let set = space.set().clone();
        let distributed = set.halo().is_some();
        let site = LoopSite::new(kernel.name(), site);
        for (i, a) in args.iter().enumerate() {
            let on = |s: &crate::data::Set| s.halo().is_some();
            let mismatch = a.data.set.as_ref().is_some_and(|s| on(s) != distributed)
                || a.map().is_some_and(|m| on(m.to_set()) != distributed);
            if mismatch {
                return Err(Error::par_loop(
                    &site,
                    Some(i),
                    format!(
                        "{}: argument {} ({}) is on a set that {} distributed, but the loop's set \
                     `{}` {}: declare every Set, Map and Dat a loop uses in one Distribution",
                        site,
                        i + 1,
                        a.describe(),
                        if distributed { "was not" } else { "was" },
                        set.name(),
                        if distributed { "was" } else { "was not" },
                    ),
                ));
            }
        }
        if !distributed {
            return Ok(None);
        }
        if self.ranks() == 1 && set.halo().is_some_and(|h| h.shared) {
            return Err(Error::par_loop(
                &site,
                None,
                format!(
                    "{}: set `{}` was distributed over several ranks, but this Context runs on one \
                 process: record the loop on the Context the Distribution was made with",
                    site,
                    set.name()
                ),
            ));
        }
        // From the program, not this rank's sizes: every rank makes the same decision (a rank
        // with no exec-halo element runs an empty section).
        let exec = args.iter().any(|a| a.map().is_some() && a.access.writes());
        if let IterSpace::Subset(s) = space
            && exec
            && !s.0.complete
        {
            // Its exec-halo members must be the ones their owners list, else a target's
            // increments from a neighbour's member would be lost; only a subset made from
            // global numbers on every rank is known to list them.
            return Err(Error::par_loop(
                &site,
                None,
                format!(
                    "{}: writes through a map over subset `{}` of distributed set `{}`, made from \
                 local indices: make it with `Distributed::subset` (from global numbers on \
                 every rank) or take it from `MeshData`'s groups, which list the exec-halo \
                 members a loop through a map must run",
                    site,
                    s.name(),
                    set.name()
                ),
            ));
        }
        Ok(Some((space.clone(), exec)))
    }

    /// The Dats whose halos a loop reads (each once): through a map (READ or RW), or directly
    /// while the loop runs the exec halo.
    fn halo_reads(args: &[Arg], exec: bool) -> Vec<Rc<DataInner>> {
        let mut out: Vec<Rc<DataInner>> = Vec::new();
        for a in args.iter().filter(|a| a.data.set.is_some()) {
            // A map whose owned rows reach owned targets only reads no halo (the loop runs
            // the owned elements: `exec` is false when it only reads).
            let through = a.map().is_some_and(|m| m.reach() != Reach::Owned || exec);
            let reads_halo = matches!(a.access, Access::Read | Access::Rw)
                && (through || (exec && matches!(a.via, Via::Direct)));
            if reads_halo && !out.iter().any(|d| d.id == a.data.id) {
                out.push(a.data.clone());
            }
        }
        out
    }

    /// Records a loop on a distributed set with the exchanges it needs (HaloSend, HaloRecv),
    /// split into its core and owned parts when it waits for one (lazy mode), and its
    /// reductions. Eager mode records the same computations and runs them at once, together
    /// (`Context::run_due`).
    pub(super) fn record_distributed(
        &self,
        kernel: &Kernel,
        (space, exec): (IterSpace, bool),
        args: &[Arg],
        site: &'static Location<'static>,
    ) -> Result<()> {
        let mut wait = false;
        for d in Self::halo_reads(args, exec) {
            let mut st = self.0.engine.rt.borrow_mut();
            if !d.state.halo_current() && !shared(&d) {
                d.state.halo_exchanged();
            }
            if d.state.halo_current() {
                if d.state.pending_recv() != 0 {
                    st.stats.halo_exchanges_merged += 1;
                    wait = true;
                } else {
                    st.stats.halo_exchanges_skipped += 1;
                }
                continue;
            }
            drop(st);
            self.record_exchange(&d, site);
            wait = true;
        }
        // Reductions: an incremented Global is incremented from zero into a partial value of
        // this rank, added to the Global when the reduction ends; a min/max reduces in place.
        let mut args = args.to_vec();
        let mut reductions = Vec::new();
        if self.ranks() > 1 {
            for a in args
                .iter_mut()
                .filter(|a| a.data.set.is_none() && a.access.is_reduction())
            {
                let global = a.data.clone();
                if a.access == Access::Inc {
                    // Never written: zeros, cleared on the device (no upload).
                    let local = self.data_inner(&global.name, None, global.dim, global.dtype);
                    a.data = local;
                }
                reductions.push((global, a.data.clone(), a.access));
            }
        }
        // A Dat one argument reads through a map and another writes cannot be split: the
        // core part would change values the owned part reads.
        let self_reading = args.iter().enumerate().any(|(i, a)| {
            a.map().is_some()
                && matches!(a.access, Access::Read | Access::Rw)
                && args
                    .iter()
                    .enumerate()
                    .any(|(j, b)| j != i && b.data.id == a.data.id && b.access.writes())
        });
        // A map made after the distribution (`Map::new` on a rank's part) may reach halo
        // targets from core elements: a loop through it waits for its exchanges whole.
        let core_clean = args
            .iter()
            .all(|a| a.map().is_none_or(|m| m.reach() != Reach::Any));
        // Split on every rank alike (a rank without core elements runs an empty part): the
        // trace's length decides where the trace bound forces, which every rank must share.
        // Eager mode runs the exchange and the loop at once: nothing to overlap.
        if let IterSpace::Subset(s) = &space {
            // A subset's members run after the exchanges, in one part: the owned ones, and
            // with the exec halo those of it (as a loop over the set runs them).
            self.record(kernel, IterSpace::Subset(s.part(exec)), &args, site);
        } else if wait && !self_reading && core_clean && self.0.config.lazy {
            let set = space.set().clone();
            self.record(kernel, IterSpace::Core(set.clone()), &args, site);
            self.record(kernel, IterSpace::Owned(set, exec), &args, site);
        } else {
            let set = space.set().clone();
            let space = if exec {
                IterSpace::WithExecHalo(set)
            } else {
                IterSpace::Set(set)
            };
            self.record(kernel, space, &args, site);
        }
        for a in args
            .iter()
            .filter(|a| a.data.set.is_some() && a.access.writes())
        {
            a.data.state.halo_written_over();
        }
        for (global, local, access) in reductions {
            let mut net = AccessSet::of(global.id, section::NET);
            let at = |seq, reads, writes| Footprint {
                seq,
                site,
                reads,
                writes,
            };
            let begin = AccessSet::of(local.id, section::ALL);
            let local2 = local.clone();
            self.push(|seq| Computation::ReduceBegin {
                at: at(seq, begin, net.clone()),
                local: local2,
                access,
            });
            let mut writes = AccessSet::of(global.id, section::ALL);
            if access == Access::Inc {
                net.add(local.id, section::ALL);
            }
            net.add(global.id, section::ALL);
            writes.add(global.id, section::NET);
            self.push(|seq| Computation::ReduceEnd {
                at: at(seq, net, writes),
                global,
                local,
                access,
            });
        }
        Ok(())
    }

    /// Records HaloSend(d) (a loop packing the values neighbours need) and HaloRecv(d).
    fn record_exchange(&self, d: &Rc<DataInner>, site: &'static Location<'static>) {
        let set = d.set.clone().expect("Dats have a set");
        let halo = set.halo().cloned().expect("a distributed set");
        let (space, map, kernel) = self.packer(d, &set, &halo);
        let packed = self.data_inner(&format!("{} packed", d.name), Some(&space), d.dim, d.dtype);
        let args = pack_args(d, map, &packed);
        let mut writes = AccessSet::of(packed.id, section::ALL);
        writes.add(d.id, section::NET);
        let reads = AccessSet::of(d.id, section::CORE | section::OWNED);
        let send = self.push(|seq| {
            let at = Footprint {
                seq,
                site,
                reads,
                writes,
            };
            Computation::HaloSend {
                pack: self.loop_record(at, &kernel, IterSpace::Set(space), &args),
                dat: d.clone(),
                packed,
            }
        });
        let recv = self.push(|seq| Computation::HaloRecv {
            at: Footprint {
                seq,
                site,
                reads: AccessSet::of(d.id, section::NET),
                writes: AccessSet::of(d.id, section::EXEC_HALO | section::NONEXEC_HALO),
            },
            dat: d.clone(),
            send,
        });
        d.state.halo_exchange_recorded(recv);
    }

    /// The send-list set of `d`'s set, its map and the kernel that packs through it (made
    /// once per set, type and dim).
    fn packer(
        &self,
        d: &Rc<DataInner>,
        set: &Set,
        halo: &crate::data::halo::Halo,
    ) -> super::Packer {
        let key = (set.id(), d.dtype, d.dim);
        let mut cache = self.0.dist().packers.borrow_mut();
        cache
            .entry(key)
            .or_insert_with(|| {
                let list: Vec<u32> = halo
                    .exchanges
                    .iter()
                    .flat_map(|x| x.send.iter().copied())
                    .collect();
                let space = Set::new(format!("{} send lists", set.name()), list.len());
                let map = crate::data::Map::new("send list", &space, set, 1, &list)
                    .expect("send lists hold local elements");
                let t = d.dtype;
                let kernel = Kernel::new(
                    "pl_pack",
                    format!(
                        "fn pl_pack(s: ptr<function, array<{t}, {n}>>, p: ptr<function, \
                         array<{t}, {n}>>) {{ *p = *s; }}",
                        n = d.dim
                    ),
                );
                (space, map, kernel)
            })
            .clone()
    }

    /// Writes `words` at word `start` of `d` now, whatever the trace holds: into the device
    /// copy when it is current, and into the host copy when that is current.
    pub(super) fn write_now(&self, d: &Rc<DataInner>, start: usize, words: &[u32]) -> Result<()> {
        d.ensure_host_zeros();
        if d.state.device_valid() {
            runtime::exec::write_device(&self.0.engine, d, start, words);
        }
        if d.state.host_valid() {
            let mut h = d.host.borrow_mut();
            h[start..start + words.len()].copy_from_slice(words);
        }
        Ok(())
    }
}

impl Context {
    /// On N ranks, after a par_loop's checks were agreed: each map made with `Map::new` on a
    /// rank's part that the loop writes through (WRITE, RW or a reduction) must send every
    /// write to a rank that runs it on the target's owner, since the exec halo was defined by
    /// the distribution's maps only. Checked once per map (collective: every rank checks the
    /// same maps at the same loops), and agreed.
    pub(super) fn check_maps_made_here(
        &self,
        args: &[Arg],
        site: &LoopSite,
        what: &str,
    ) -> Result<()> {
        for (i, a) in args.iter().enumerate() {
            let Some(m) = a.map() else { continue };
            if m.reach() != Reach::Any || !a.access.writes() {
                continue;
            }
            // The columns written (one index, or all): the others may be only read.
            let column = match a.via {
                Via::Map(_, j) => Some(j),
                Via::MapAll(_) | Via::Direct | Via::Global => None,
            };
            let key = (m.id(), column);
            let known = self.0.dist().maps_checked.borrow().get(&key).cloned();
            let found = match known {
                Some(found) => found,
                None => {
                    let found = self.writes_reach_owners(m, column);
                    let what = "checking a map made after the distribution";
                    let found = self.agree(found, what);
                    self.0
                        .dist()
                        .maps_checked
                        .borrow_mut()
                        .insert(key, found.clone());
                    found
                }
            };
            if let Err(why) = found {
                return Err(Error::par_loop(
                    site,
                    Some(i),
                    format!("{what}: argument {} ({}): {why}", i + 1, a.describe()),
                ));
            }
        }
        Ok(())
    }

    /// Whether every (row, index, target) of `m` (at `column`, or every index) that a rank
    /// runs, by global numbers, is run alike by the target's owner and by the row's owner
    /// (collective: one all-to-all). The exec halo comes from the distribution's maps: a row
    /// the target's owner does not run loses its write there, and an exec-halo row that
    /// differs from its owner's copy writes what no one-process map can.
    fn writes_reach_owners(&self, m: &crate::data::Map, column: Option<usize>) -> Result<()> {
        let (from, to, arity) = (m.from_set(), m.to_set(), m.arity());
        let (Some(fh), Some(th)) = (from.halo(), to.halo()) else {
            return Ok(());
        };
        let me = self.rank() as u32;
        let owners = |set: &crate::data::Set, h: &crate::data::halo::Halo| {
            let mut owner = vec![me; set.total()];
            for x in &h.exchanges {
                for &l in &x.recv {
                    owner[l as usize] = x.rank;
                }
            }
            owner
        };
        let (row_owner, target_owner) = (owners(from, fh), owners(to, th));
        let rows = from.size() + from.sections().exec_halo;
        let mut here = std::collections::HashSet::new();
        let mut sends = vec![Vec::new(); self.ranks()];
        for (k, &t) in m.values()[..rows * arity].iter().enumerate() {
            let (r, j) = (k / arity, k % arity);
            if column.is_some_and(|c| c != j) {
                continue;
            }
            let triple = [fh.global[r], j as u32, th.global[t as usize]];
            here.insert(triple);
            let (a, b) = (target_owner[t as usize], row_owner[r]);
            if a != me {
                sends[a as usize].extend(triple);
            }
            if b != me && b != a {
                sends[b as usize].extend(triple);
            }
        }
        let got = self
            .0
            .comm
            .all_to_all(&sends, "checking a map made after the distribution");
        for (rank, words) in got.iter().enumerate() {
            if let Some(t) = words.chunks(3).find(|t| !here.contains(*t)) {
                return Err(Error::ParLoop {
                    par_loops: Vec::new(),
                    arg: None,
                    message: format!(
                        "Map `{}` was made on each rank's part after the distribution, and on rank \
                     {rank} element {} of `{}` reaches element {} of `{}` (index {}; elements \
                     in the global numbering: the Distribution's), which \
                     rank {me} owns (the element or its target) but does not run the same \
                     way: a write through the map would be lost or land elsewhere than on one \
                     process. Declare the map in the Distribution (its rows then define the \
                     exec halo), or give every rank's copy of a row the same targets, reaching \
                     only what the distribution's maps reach from it",
                        m.name(),
                        t[0],
                        from.name(),
                        t[2],
                        to.name(),
                        t[1]
                    ),
                });
            }
        }
        Ok(())
    }
}

/// Whether any rank holds a halo of `d`'s set (the same answer on every rank).
fn shared(d: &DataInner) -> bool {
    d.set
        .as_ref()
        .and_then(|s| s.halo())
        .is_some_and(|h| h.shared)
}

/// The message tag of the `n`-th halo exchange (every rank counts the same exchanges).
pub(super) fn exchange_tag(n: u64) -> u16 {
    (n % 30_000) as u16
}

impl Context {
    /// Makes a local outcome collective: on N ranks, an error on any rank becomes an error on
    /// every rank (the others get [`Error::Rank`], naming the rank where it arose and carrying
    /// its message), so that no rank goes on alone. Collective: every rank calls it at the same
    /// point with the same `what`, which names the call in errors (ranks at different calls
    /// get an error naming both). On one process, `result` as it is.
    ///
    /// For what a rank does on its own before a collective step, such as a [`crate::Map`]
    /// made with `Map::new` on its part of a distributed set:
    /// `let m = ctx.agree(Map::new("c2v", &cells, &nodes, 3, &local), "making c2v")?;`
    pub fn agree<T>(&self, result: Result<T>, what: &str) -> Result<T> {
        self.0.comm.agree(result, what)
    }
}

/// The pack loop's arguments: `d` read through the send-list map, `out` written.
fn pack_args(d: &Rc<DataInner>, map: crate::data::Map, out: &Rc<DataInner>) -> [Arg; 2] {
    [
        Arg {
            data: d.clone(),
            via: Via::Map(map, 0),
            access: Access::Read,
        },
        Arg {
            data: out.clone(),
            via: Via::Direct,
            access: Access::Write,
        },
    ]
}

/// Per neighbour: the words sent to it, and the number of words it sends here.
pub(super) type Messages = (Vec<(u32, Vec<u32>)>, Vec<(u32, usize)>);

/// The messages of one exchange of a Dat of `dim` words per element: per neighbour, the
/// `packed` values (send-list order) it needs, and the number of words it sends here.
pub(super) fn messages(halo: &crate::data::halo::Halo, dim: usize, packed: &[u32]) -> Messages {
    let mut sends = Vec::new();
    let mut at = 0;
    for x in halo.exchanges.iter().filter(|x| !x.send.is_empty()) {
        let n = x.send.len() * dim;
        sends.push((x.rank, packed[at..at + n].to_vec()));
        at += n;
    }
    let recvs = halo
        .exchanges
        .iter()
        .filter(|x| !x.recv.is_empty())
        .map(|x| (x.rank, x.recv.len() * dim))
        .collect();
    (sends, recvs)
}

/// The halo section's words (and the word it starts at) from the received messages.
pub(super) fn halo_words(
    halo: &crate::data::halo::Halo,
    set: &Set,
    dim: usize,
    got: Vec<Vec<u32>>,
) -> (usize, Vec<u32>) {
    let start = set.size();
    let mut words = vec![0u32; (set.total() - start) * dim];
    for (x, vals) in halo
        .exchanges
        .iter()
        .filter(|x| !x.recv.is_empty())
        .zip(got)
    {
        for (k, &l) in x.recv.iter().enumerate() {
            let h = l as usize - start;
            words[h * dim..(h + 1) * dim].copy_from_slice(&vals[k * dim..(k + 1) * dim]);
        }
    }
    (start * dim, words)
}
