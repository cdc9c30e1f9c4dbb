//! par_loop on a distributed set (see `crate::dist`): which elements the loop runs, the halo
//! exchanges it needs before it runs, and what it leaves stale or combines after.
//!
//! - A loop that increments or writes through a map runs its owned elements and its exec halo
//!   (so increments into owned data are complete); any other loop runs its owned elements.
//! - Before a loop reads a Dat through a map (READ or RW), or reads a Dat directly while it runs
//!   the exec halo, the Dat's halo must hold the owners' values: if a write made it stale, it
//!   is exchanged now (the Dat is read back, the owned values neighbours need are sent, the
//!   received values are written into the halo and uploaded). Halo validity is tracked per
//!   Dat, so nothing is exchanged twice.
//! - A loop that writes a Dat makes its halo stale. A Global reduced by a loop is combined over
//!   all ranks when the loop is recorded (each rank counts its owned elements only).
//!
//! These exchanges run when the loop is recorded (the trace before it is forced as far as the
//! exchanged Dat needs); every rank records the same loops, so every rank exchanges at the same
//! points. The lazy, overlapped schedule is the next step.

use super::*;
use crate::data::{Set, Via};

impl Context {
    /// The iteration space a loop over a distributed set runs, after the exchanges its reads
    /// need. Loops on sets that are not distributed pass through unchanged.
    pub(super) fn before_distributed(
        &self,
        kernel: &Kernel,
        space: IterSpace,
        args: &[Arg],
        site: &'static Location<'static>,
    ) -> Result<IterSpace> {
        let set = space.set().clone();
        let distributed = set.halo().is_some();
        let name = || {
            format!(
                "par_loop `{}` at {}:{}",
                kernel.name(),
                site.file(),
                site.line()
            )
        };
        for (i, a) in args.iter().enumerate() {
            let on = |s: &crate::data::Set| s.halo().is_some();
            let mismatch = a.data.set.as_ref().is_some_and(|s| on(s) != distributed)
                || a.map().is_some_and(|m| on(m.to_set()) != distributed);
            if mismatch {
                return Err(Error::ParLoop(format!(
                    "{}: argument {} ({}) is on a set that {} distributed, but the loop's set \
                     `{}` {}: declare every Set, Map and Dat a loop uses in one Distribution",
                    name(),
                    i + 1,
                    a.describe(),
                    if distributed { "was not" } else { "was" },
                    set.name(),
                    if distributed { "was" } else { "was not" },
                )));
            }
        }
        if !distributed {
            return Ok(space);
        }
        if self.0.config.check && self.ranks() > 1 {
            // Every rank must record the same loops: compare a fingerprint of this one.
            let mut h = std::collections::hash_map::DefaultHasher::new();
            std::hash::Hash::hash(&(kernel.name(), set.name(), args.len()), &mut h);
            // A count of the user's distributed loops (not the trace's numbering, which
            // internal loops such as halo packing advance differently on each rank).
            let seq = self.0.dist_loops.get() + 1;
            self.0.dist_loops.set(seq);
            let print = std::hash::Hasher::finish(&h) ^ seq.rotate_left(32);
            let (lo, hi) = self.0.comm.min_max(print);
            if lo != hi {
                return Err(Error::ParLoop(format!(
                    "{}: rank {} records this loop while another rank records a different one \
                     (checking mode compares every distributed par_loop across ranks): every \
                     rank must issue the same par_loops in the same order",
                    name(),
                    self.rank()
                )));
            }
        }
        if let IterSpace::Subset(s) = &space {
            return Err(Error::ParLoop(format!(
                "{}: iterates over subset `{}` of distributed set `{}`, which parloop does not \
                 distribute yet: declare the subset as a set with a map to its parent",
                name(),
                s.name(),
                set.name()
            )));
        }
        let exec = set.sections().exec_halo > 0
            && args.iter().any(|a| a.map().is_some() && a.access.writes());
        for a in args {
            if a.data.set.is_none() {
                continue;
            }
            let reads_halo = matches!(a.access, Access::Read | Access::Rw)
                && (a.map().is_some() || (exec && matches!(a.via, Via::Direct)));
            if !reads_halo {
                continue;
            }
            if a.data.halo_valid.get() {
                self.0.rt.borrow_mut().stats.halo_exchanges_skipped += 1;
            } else {
                self.exchange(&a.data)?;
            }
        }
        // A Global incremented by the loop: rank 0 keeps its value, the others start from zero,
        // so the sum over ranks counts the old value once.
        if self.ranks() > 1 && self.rank() != 0 {
            for a in args
                .iter()
                .filter(|a| a.data.set.is_none() && a.access == Access::Inc)
            {
                a.data.write_host(&vec![0u32; a.data.dim])?;
            }
        }
        Ok(if exec {
            IterSpace::WithExecHalo(set)
        } else {
            space
        })
    }

    /// After recording a loop on a distributed set: written Dats' halos are stale, reduced
    /// Globals are combined over the ranks.
    pub(super) fn after_distributed(&self, space: &IterSpace, args: &[Arg]) -> Result<()> {
        if space.set().halo().is_none() {
            return Ok(());
        }
        for a in args {
            if a.data.set.is_some() && a.access.writes() {
                a.data.halo_valid.set(false);
            }
        }
        for a in args
            .iter()
            .filter(|a| a.data.set.is_none() && a.access.is_reduction())
        {
            let d = &a.data;
            block(d.sync_host(false))?;
            let mut words = d.host.borrow().clone();
            self.0.comm.all_reduce(d.dtype, a.access, &mut words);
            d.write_host(&words)?;
            self.0.rt.borrow_mut().stats.global_reductions += 1;
        }
        Ok(())
    }

    /// Brings `d`'s halo up to date from the owners of its elements: a loop packs on the
    /// device the owned values the neighbours need (the send lists, one after another), only
    /// those are read back and sent; the received values are written into the halo section of
    /// the device copy (and of the host copy where it is current).
    fn exchange(&self, d: &Rc<DataInner>) -> Result<()> {
        let Some(set) = d.set.clone() else {
            return Ok(());
        };
        let Some(halo) = set.halo().cloned() else {
            return Ok(());
        };
        if halo.exchanges.is_empty() {
            // No neighbours (one rank, or a part nobody shares): nothing to bring in.
            d.halo_valid.set(true);
            self.0.rt.borrow_mut().stats.halo_exchanges_skipped += 1;
            return Ok(());
        }
        // The pending loops that use d run first and the device finishes them (the exchange's
        // readback would wait for them anyway), so that the time measured is the exchange's
        // own: packing, readback, messages (including waiting for the neighbours), halo write.
        let all = AccessSet::of(d.id, section::ALL);
        self.force(&all, &all, &[], "halo exchange")?;
        #[cfg(not(target_arch = "wasm32"))]
        let _ = self.0.gpu.device.poll(wgpu::PollType::wait_indefinitely());
        let t0 = crate::util::now_ms();
        let dim = d.dim;
        let packed = self.pack(d, &set, &halo)?;
        let mut sends = Vec::new();
        let mut at = 0;
        for x in halo.exchanges.iter().filter(|x| !x.send.is_empty()) {
            let n = x.send.len() * dim;
            sends.push((x.rank, packed[at..at + n].to_vec()));
            at += n;
        }
        let recvs: Vec<(u32, usize)> = halo
            .exchanges
            .iter()
            .filter(|x| !x.recv.is_empty())
            .map(|x| (x.rank, x.recv.len() * dim))
            .collect();
        let got = self.0.comm.exchange(&sends, &recvs)?;
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
        self.write_range(d, start * dim, &words)?;
        d.halo_valid.set(true);
        let mut st = self.0.rt.borrow_mut();
        st.stats.halo_exchanges += 1;
        st.stats.halo_messages += sends.len() as u64;
        st.stats.halo_bytes += 4 * sends.iter().map(|s| s.1.len() as u64).sum::<u64>();
        st.stats.halo_ns += ((crate::util::now_ms() - t0) * 1e6) as u64;
        Ok(())
    }

    /// The owned values of `d` that the neighbours need, in send-list order, gathered on the
    /// device by a loop over the send entries and read back alone.
    fn pack(
        &self,
        d: &Rc<DataInner>,
        set: &Set,
        halo: &crate::data::halo::Halo,
    ) -> Result<Vec<u32>> {
        let key = (set.id(), d.dtype, d.dim);
        let (space, map, kernel) = {
            let mut cache = self.0.packers.borrow_mut();
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
        };
        let out = self.data_inner("packed halo", Some(&space), d.dim, d.dtype);
        let args = [
            crate::data::Arg {
                data: d.clone(),
                via: Via::Map(map, 0),
                access: Access::Read,
            },
            crate::data::Arg {
                data: out.clone(),
                via: Via::Direct,
                access: Access::Write,
            },
        ];
        self.record(&kernel, IterSpace::Set(space), &args, Location::caller())?;
        block(out.sync_host(false))?;
        let words = out.host.borrow().clone();
        out.alive.set(false);
        Ok(words)
    }

    /// Writes `words` at word `start` of `d` once pending loops that use `d` have run: into the
    /// device copy when it is current, and into the host copy when that is current.
    fn write_range(&self, d: &Rc<DataInner>, start: usize, words: &[u32]) -> Result<()> {
        let all = AccessSet::of(d.id, section::ALL);
        self.force(&AccessSet::new(), &all, &[], "halo exchange")?;
        if !d.host_valid.get() && !d.device_valid.get() {
            d.ensure_host_zeros();
        }
        if d.device_valid.get() {
            let st = self.0.rt.borrow();
            if let Some((_, buf)) = st.data.get(&d.id) {
                self.0.gpu.queue.write_buffer(
                    &buf.buffer,
                    4 * start as u64,
                    bytemuck::cast_slice(words),
                );
            } else {
                d.device_valid.set(false);
            }
        }
        if d.host_valid.get() {
            let mut h = d.host.borrow_mut();
            h[start..start + words.len()].copy_from_slice(words);
        }
        Ok(())
    }
}
