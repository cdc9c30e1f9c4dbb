//! The force-time schedule of a trace that holds halo exchanges and reductions (seed 001):
//! rounds, each of
//!
//! 1. every loop whose dependencies have run, except those that wait for a HaloRecv or a
//!    reduction's end, splits into the HaloSends' packing loops and the loops computing the
//!    rank's values of the reductions that can begin, with what they need (one submission,
//!    the packed values and the rank's values read back), and the rest, the core work;
//! 2. those reductions begin (a non-blocking allreduce each), then the core work is submitted,
//!    not waited for;
//! 3. while the device runs the core work, the packed values go to the neighbours and theirs
//!    arrive (non-blocking sends and receives, then a wait for all);
//! 4. the HaloRecvs that can run write the received values into the halos.
//!
//! A round that finds no loop to run runs what waits on the host instead: HaloRecvs whose
//! messages came in an earlier force, reduction begins not yet run, and ends (the allreduce is
//! waited for and the result added to the Global), so a reduction is in flight from the round
//! that computes its rank's value until a loop or the host needs it. Fusion applies inside each
//! submission; no fused group straddles an exchange. Every rank runs the same rounds, so the
//! messages and the collectives match.
//!
//! An error on this rank (a device error, a failed readback) does not stop the schedule: the
//! rank runs no more device work but still sends (zeros) and receives every message and joins
//! every reduction, so that no other rank is left waiting; the force then reports the error
//! on every rank (`Context::agree`).

use super::*;
use crate::types::ReduceOp;

/// The loops that run on the device for `computations` (each a par_loop or a packing loop).
fn device_loops(computations: &[Rc<Computation>]) -> Vec<Rc<LoopRecord>> {
    computations
        .iter()
        .filter_map(|c| c.device_loop().cloned())
        .collect()
}

/// How a Global reduced over the ranks combines.
pub(super) fn reduce_op(access: Access) -> ReduceOp {
    access
        .reduction()
        .unwrap_or_else(|| panic!("internal: a reduction over the ranks with {access}"))
}

impl Context {
    pub(super) async fn run_rounds(
        &self,
        loops: &[Rc<Computation>],
        readback: &[Rc<DataInner>],
        still_pending: BTreeSet<u64>,
    ) -> (Explain, Result<()>) {
        let mut text = Explain::default();
        let result = self.rounds(loops, readback, still_pending, &mut text).await;
        (text, result)
    }

    async fn rounds(
        &self,
        loops: &[Rc<Computation>],
        readback: &[Rc<DataInner>],
        still_pending: BTreeSet<u64>,
        text: &mut Explain,
    ) -> Result<()> {
        let n = loops.len();
        let deps: Vec<Vec<usize>> = (0..n)
            .map(|k| {
                (0..k)
                    .filter(|&j| crate::trace::depends(&loops[k], &loops[j]))
                    .collect()
            })
            .collect();
        let mut done = vec![false; n];
        let mut round = 0;
        // The first error on this rank; from then on only communication runs.
        let mut failed: Option<Error> = None;
        let note = |r: Result<()>, failed: &mut Option<Error>| {
            if let Err(e) = r {
                failed.get_or_insert(e);
            }
        };
        while done.iter().any(|d| !d) {
            // Loops that wait for nothing the host does.
            let mut avail = vec![false; n];
            for k in 0..n {
                avail[k] = !done[k]
                    && loops[k].device_loop().is_some()
                    && deps[k].iter().all(|&j| done[j] || avail[j]);
            }
            if !avail.iter().any(|&a| a) {
                let ready: Vec<usize> = (0..n)
                    .filter(|&k| !done[k] && deps[k].iter().all(|&j| done[j]))
                    .collect();
                if ready.is_empty() {
                    return Err(Error::Usage(
                        "internal: the distributed schedule found nothing to run".into(),
                    ));
                }
                for k in ready {
                    let r = self.host_step(&loops[k], text, failed.is_some()).await;
                    note(r, &mut failed);
                    done[k] = true;
                }
                continue;
            }
            round += 1;
            // The reductions whose partials are computed by the end of this round begin as soon
            // as they are: their values are read back with the packed ones, and the reduction
            // over the ranks travels while the rest runs.
            let begins: Vec<usize> = (0..n)
                .filter(|&k| {
                    !done[k]
                        && matches!(*loops[k], Computation::ReduceBegin { .. })
                        && deps[k].iter().all(|&j| done[j] || avail[j])
                })
                .collect();
            // The sends, the begins and everything they need go first.
            let mut first = vec![false; n];
            for &k in &begins {
                deps[k].iter().for_each(|&j| first[j] |= avail[j]);
            }
            for k in (0..n).rev() {
                if avail[k] && (first[k] || matches!(*loops[k], Computation::HaloSend { .. })) {
                    first[k] = true;
                    deps[k].iter().for_each(|&j| first[j] |= avail[j]);
                }
            }
            let part = |sel: &dyn Fn(usize) -> bool| -> Vec<Rc<Computation>> {
                (0..n)
                    .filter(|&k| sel(k))
                    .map(|k| loops[k].clone())
                    .collect()
            };
            let pack = part(&|k| first[k]);
            let core = part(&|k| avail[k] && !first[k]);
            let sends: Vec<(Rc<DataInner>, Rc<DataInner>, u64)> = pack
                .iter()
                .filter_map(|c| match &**c {
                    Computation::HaloSend { dat, packed, .. } => {
                        Some((dat.clone(), packed.clone(), c.seq()))
                    }
                    Computation::Loop(_)
                    | Computation::HaloRecv { .. }
                    | Computation::ReduceBegin { .. }
                    | Computation::ReduceEnd { .. } => None,
                })
                .collect();
            // What later computations (and the rest of the trace) read, for the fuser.
            let later = |after_core: bool| -> BTreeSet<u64> {
                let mut r = still_pending.clone();
                for k in (0..n).filter(|&k| !done[k] && !first[k] && (!avail[k] || !after_core)) {
                    r.extend(loops[k].reads().ids());
                }
                r
            };
            let mut packed: Vec<Rc<DataInner>> = sends.iter().map(|s| s.1.clone()).collect();
            packed.extend(begins.iter().filter_map(|&k| match &*loops[k] {
                Computation::ReduceBegin { local, .. } => Some(local.clone()),
                Computation::Loop(_)
                | Computation::HaloSend { .. }
                | Computation::HaloRecv { .. }
                | Computation::ReduceEnd { .. } => None,
            }));
            let (later_pack, later_core) = (later(false), later(true));
            let (mut e1, mut e2) = (Explain::default(), Explain::default());
            if failed.is_none() {
                let r1;
                (e1, r1) = self
                    .run_groups(&device_loops(&pack), &packed, later_pack, false)
                    .await;
                self.ran(&pack, &r1);
                note(r1, &mut failed);
            }
            // Every rank begins the same reductions in the same order, after an error too.
            let mut begun = Explain::default();
            for &k in &begins {
                let r = self
                    .host_step(&loops[k], &mut begun, failed.is_some())
                    .await;
                note(r, &mut failed);
                done[k] = true;
            }
            if failed.is_none() {
                let r2;
                (e2, r2) = self
                    .run_groups(&device_loops(&core), &[], later_core, false)
                    .await;
                self.ran(&core, &r2);
                note(r2, &mut failed);
            }
            let names =
                |v: &[Rc<Computation>]| v.iter().map(|l| l.label()).collect::<Vec<_>>().join(", ");
            // (The reductions begun are listed as host lines after the first submission's.)
            let travel = match (sends.is_empty(), begins.is_empty() || core.is_empty()) {
                (false, _) => Some("messages"),
                (true, false) => Some("reductions"),
                (true, true) => None,
            };
            text.line(&match travel {
                None => {
                    let all: Vec<Rc<Computation>> = pack.iter().chain(&core).cloned().collect();
                    format!("round {round}: [{}], no exchange", names(&all))
                }
                Some(what) => format!(
                    "round {round}: first [{}]; then, while the {what} travel, [{}]",
                    names(&pack),
                    names(&core)
                ),
            });
            for e in [e1, begun, e2].iter().filter(|e| !e.is_empty()) {
                text.nest(e);
            }
            let core_done =
                (!core.is_empty() && failed.is_none()).then(|| self.0.engine.done_flag());
            (0..n).filter(|&k| avail[k]).for_each(|k| done[k] = true);
            if sends.is_empty() {
                continue;
            }
            let t0 = crate::util::now_ms();
            let r = self.send_and_receive(&sends);
            note(r, &mut failed);
            let took = ((crate::util::now_ms() - t0) * 1e6) as u64;
            if let Some(flag) = core_done.filter(|_| failed.is_none()) {
                let done_first = self.0.engine.poll_done(&flag);
                let mut st = self.0.engine.rt.borrow_mut();
                st.stats.halo_overlap_rounds += 1;
                st.stats.halo_core_first += u64::from(done_first);
                if !done_first {
                    st.stats.halo_hidden_ns += took;
                }
            }
            // The receives that can run now.
            for k in 0..n {
                if !done[k]
                    && matches!(*loops[k], Computation::HaloRecv { .. })
                    && deps[k].iter().all(|&j| done[j])
                {
                    let r = self.host_step(&loops[k], text, failed.is_some()).await;
                    note(r, &mut failed);
                    done[k] = true;
                }
            }
        }
        match failed {
            Some(e) => Err(e),
            None => runtime::exec::run(&self.0.engine, &[], readback, false).await,
        }
    }

    /// Counts a submission of `loops` that went through (none when empty) for
    /// [`crate::Stats::reductions_hidden`].
    fn ran(&self, loops: &[Rc<Computation>], result: &Result<()>) {
        if result.is_ok() && loops.iter().any(|c| c.device_loop().is_some()) {
            let runs = &self.0.dist().device_runs;
            runs.set(runs.get() + 1);
        }
    }

    /// Sends each HaloSend's packed values (read back already) and keeps what the neighbours
    /// sent for the matching HaloRecv.
    fn send_and_receive(&self, sends: &[(Rc<DataInner>, Rc<DataInner>, u64)]) -> Result<()> {
        let t0 = crate::util::now_ms();
        let mut failed: Option<Error> = None;
        for (dat, packed, seq) in sends {
            let halo = dat
                .set
                .as_ref()
                .and_then(|s| s.halo())
                .expect("HaloSend on a distributed Dat");
            // What the neighbours expect, whatever happened here (zeros after an error: the
            // force fails on every rank anyway).
            let need: usize = halo.exchanges.iter().map(|x| x.send.len()).sum::<usize>();
            let mut words = packed.host.borrow().clone();
            words.resize(need * dat.wdim(), 0);
            packed.state.dropped();
            let (msgs, recvs) = dist::messages(halo, dat.wdim(), &words);
            let _s = self.0.engine.profiler.span("halo", Track::Halo, || {
                format!("messages of `{}` ({} sent)", dat.name, msgs.len())
            });
            let tag = dist::exchange_tag(self.0.engine.rt.borrow().stats.halo_exchanges);
            let what = || format!("the halo exchange of Dat `{}`", dat.name);
            // A mismatch is noted and the round's other exchanges still run (the others wait
            // for them).
            let got = match self.0.comm.exchange(tag, &what, &msgs, &recvs) {
                Ok(got) => got,
                Err(e) => {
                    failed.get_or_insert(e);
                    recvs.iter().map(|&(_, n)| vec![0; n]).collect()
                }
            };
            let set = dat.set.as_ref().expect("a Dat");
            let (_, halo_words) = dist::halo_words(halo, set, dat.wdim(), got);
            self.0.dist().received.borrow_mut().insert(*seq, halo_words);
            let mut st = self.0.engine.rt.borrow_mut();
            st.stats.halo_exchanges += 1;
            st.stats.halo_messages += msgs.len() as u64;
            st.stats.halo_bytes += 4 * msgs.iter().map(|s| s.1.len() as u64).sum::<u64>();
        }
        let delay = self.0.dist().recv_delay_ms.get();
        if delay > 0 {
            std::thread::sleep(std::time::Duration::from_millis(delay));
        }
        self.0.engine.rt.borrow_mut().stats.halo_ns += ((crate::util::now_ms() - t0) * 1e6) as u64;
        failed.map_or(Ok(()), Err)
    }

    /// Runs one computation that happens on the host. After an error on this rank
    /// (`failed`), only its communication runs (the reductions still join the other ranks).
    async fn host_step(&self, c: &Computation, text: &mut Explain, failed: bool) -> Result<()> {
        text.line(&format!("host: {}", c.label()));
        let _s = self
            .0
            .engine
            .profiler
            .span("halo", Track::Halo, || c.label());
        match c {
            Computation::Loop(_) | Computation::HaloSend { .. } => {
                return Err(Error::Usage(format!(
                    "internal: {} runs on the device, not on the host",
                    c.label()
                )));
            }
            Computation::HaloRecv { .. } if failed => {}
            Computation::HaloRecv { dat, send, .. } => {
                let words = self
                    .0
                    .dist()
                    .received
                    .borrow_mut()
                    .remove(send)
                    .ok_or_else(|| {
                        Error::Usage(format!("internal: no values received for {}", c.label()))
                    })?;
                let start = dat.set.as_ref().map_or(0, |s| s.size() * dat.wdim());
                self.write_now(dat, start, &words)?;
                dat.state.halo_received(c.seq());
            }
            Computation::ReduceBegin { local, access, .. } => {
                // This rank's value is read back and the non-blocking allreduce starts; its
                // end waits for it only when a loop or the host needs the Global.
                let read = if failed {
                    Ok(())
                } else {
                    runtime::exec::run(&self.0.engine, &[], std::slice::from_ref(local), false)
                        .await
                };
                // After an error on this rank, its share is the identity (the force fails on
                // every rank, but the Global stays the same everywhere).
                let words = if failed || read.is_err() {
                    reduce_op(*access)
                        .identity_words(local.dtype)
                        .repeat(local.dim)
                } else {
                    local.ensure_host_zeros();
                    local.host.borrow().clone()
                };
                let what = format!("the reduction of Global `{}` over the ranks", local.name);
                let r =
                    self.0
                        .comm
                        .start_all_reduce(local.dtype, reduce_op(*access), &words, &what);
                let runs = self.0.dist().device_runs.get();
                self.0
                    .dist()
                    .reductions
                    .borrow_mut()
                    .insert(local.id, (r, runs));
                read?;
            }
            Computation::ReduceEnd {
                global,
                local,
                access,
                ..
            } => {
                let r = self.0.dist().reductions.borrow_mut().remove(&local.id);
                let (r, runs) = r.ok_or_else(|| {
                    Error::Usage(format!("internal: {} before its begin", c.label()))
                })?;
                let mut words = r.finish();
                if self.0.dist().device_runs.get() > runs {
                    self.0.engine.rt.borrow_mut().stats.reductions_hidden += 1;
                }
                if *access == Access::Inc {
                    // The rank's partial (MIN/MAX reduce the user's Global in place: it stays).
                    local.state.dropped();
                    runtime::exec::run(&self.0.engine, &[], std::slice::from_ref(global), false)
                        .await?;
                    global.ensure_host_zeros();
                    ReduceOp::Sum.combine_words(global.dtype, &mut words, &global.host.borrow());
                }
                *global.host.borrow_mut() = words;
                global.state.written_on_host();
                self.0.engine.rt.borrow_mut().stats.global_reductions += 1;
            }
        }
        Ok(())
    }
}
