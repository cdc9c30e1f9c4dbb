//! Forcing: what a result needs is taken from the trace (seed 004), dead loops are dropped,
//! and the rest runs: fused groups in one submission per run of device groups, or, when the
//! force holds exchanges or reductions, the rounds of `context::rounds`. On N ranks the outcome
//! of a force with distributed work is agreed over the ranks.

use super::*;

impl Context {
    /// Forces what `reads` (for reading) and `writes` (for writing) need, then reads back
    /// `readback`.
    pub(crate) fn force(
        &self,
        reads: &AccessSet,
        writes: &AccessSet,
        readback: &[Rc<DataInner>],
        why: &str,
    ) -> Result<()> {
        block(self.force_async(reads, writes, readback, why, false))
    }

    /// [`Context::force`] without blocking; `defer`: only starts reading `readback` back where
    /// the force is one submission of loops (a prefetch; elsewhere it is read back at once).
    pub(crate) async fn force_async(
        &self,
        reads: &AccessSet,
        writes: &AccessSet,
        readback: &[Rc<DataInner>],
        why: &str,
        defer: bool,
    ) -> Result<()> {
        let selected = {
            let mut t = self.0.sched.trace.borrow_mut();
            t.prune_dead(self.ranks() > 1);
            t.evaluate(reads, writes)
        };
        self.run(selected, readback, why, defer).await
    }

    pub(super) async fn run(
        &self,
        selected: Vec<(Rc<Computation>, Reason)>,
        readback: &[Rc<DataInner>],
        why: &str,
        defer: bool,
    ) -> Result<()> {
        if !selected.is_empty() {
            for (c, r) in &selected {
                log::debug!(
                    "force ({why}): runs {} because of {} on data #{} ({})",
                    c.name(),
                    r.kind,
                    r.data,
                    describe_mask(r.mask)
                );
            }
            let mut st = self.0.engine.rt.borrow_mut();
            st.stats.forces += 1;
            st.stats.last_dispatches = 0;
            self.0.engine.shaders.borrow_mut().clear();
            self.0.engine.schedules.borrow_mut().clear();
        }
        // Loops whose effect nobody can observe do not run (reads of loops still pending count).
        let still_pending: BTreeSet<u64> = self
            .0
            .sched
            .trace
            .borrow()
            .pending()
            .iter()
            .flat_map(|c| c.reads().ids().collect::<Vec<_>>())
            .collect();
        let all: Vec<Rc<Computation>> = selected.into_iter().map(|(c, _)| c).collect();
        // Work on a distributed set runs on every rank: its outcome is agreed (an error on one
        // rank is an error on all). Every rank selects the same computations.
        let collective = self.ranks() > 1
            && all.iter().any(|c| match &**c {
                Computation::Loop(l) => l.space.set().halo().is_some(),
                Computation::HaloSend { .. }
                | Computation::HaloRecv { .. }
                | Computation::ReduceBegin { .. }
                | Computation::ReduceEnd { .. } => true,
            });
        // The exchanges of this force, undone on every rank if it fails.
        let recvs: Vec<(Rc<DataInner>, u64)> = all
            .iter()
            .filter_map(|c| match &**c {
                Computation::HaloRecv { dat, send, .. } => Some((dat.clone(), *send)),
                Computation::Loop(_)
                | Computation::HaloSend { .. }
                | Computation::ReduceBegin { .. }
                | Computation::ReduceEnd { .. } => None,
            })
            .collect();
        // Every rank must be in this force before any of its exchanges or reductions: ranks
        // in different calls get an error naming both instead of pairing their messages.
        if collective {
            if let Err(e) = self.agree(Ok(()), &format!("running the trace ({why})")) {
                self.forget_exchanges(recvs);
                return Err(e);
            }
        }
        let live = crate::trace::live_mask(&all, still_pending.clone(), self.ranks() > 1);
        let computations: Vec<Rc<Computation>> = all
            .into_iter()
            .zip(live)
            .filter_map(|(c, k)| k.then_some(c))
            .collect();
        // Only par_loops: fused and run in one go; else the rounds of `context::rounds`.
        let loops: Option<Vec<Rc<LoopRecord>>> = computations
            .iter()
            .map(|c| match &**c {
                Computation::Loop(l) => Some(l.clone()),
                Computation::HaloSend { .. }
                | Computation::HaloRecv { .. }
                | Computation::ReduceBegin { .. }
                | Computation::ReduceEnd { .. } => None,
            })
            .collect();
        let before = self.0.engine.rt.borrow().stats.clone();
        let prof = &self.0.engine.profiler;
        let _span = (!computations.is_empty()).then(|| {
            prof.span("force", Track::Host, || {
                format!("force ({why}): {} computations", computations.len())
            })
        });
        // A readback still in flight of data this force writes again would be stale.
        let written: BTreeSet<u64> = computations
            .iter()
            .flat_map(|c| c.writes().ids().collect::<Vec<_>>())
            .collect();
        runtime::readback::cancel_written(&self.0.engine, |id| written.contains(&id));
        let (explain, result) = match loops {
            Some(loops) => {
                self.run_groups(&loops, readback, still_pending, defer)
                    .await
            }
            None => {
                self.run_rounds(&computations, readback, still_pending)
                    .await
            }
        };
        let loops = computations;
        if !loops.is_empty() {
            let st = self.0.engine.rt.borrow();
            let dispatches = st.stats.last_dispatches;
            let mut text = explain;
            text.line(&format!("  dispatches: {dispatches}"));
            // Each schedule once, with its count, in order of first appearance.
            let mut seen: Vec<(&str, usize)> = Vec::new();
            let schedules = self.0.engine.schedules.borrow();
            for s in schedules.iter() {
                match seen.iter_mut().find(|(t, _)| t == s) {
                    Some((_, n)) => *n += 1,
                    None => seen.push((s, 1)),
                }
            }
            if !seen.is_empty() {
                let list: Vec<String> = seen
                    .iter()
                    .map(|(s, n)| {
                        if *n > 1 {
                            format!("{s} x {n}")
                        } else {
                            s.to_string()
                        }
                    })
                    .collect();
                text.line(&format!("  schedules: {}", list.join(", ")));
            }
            if self.ranks() > 1 {
                let (skipped, merged) = self.0.dist().halo_counts.get();
                let now = (
                    st.stats.halo_exchanges_skipped,
                    st.stats.halo_exchanges_merged,
                );
                self.0.dist().halo_counts.set(now);
                text.line(&format!(
                    "  halo exchanges not recorded since the last force: {} because the halo \
                     was current (early halo skip), {} because an exchange of the Dat was still \
                     in the trace with no write since (successive exchanges)",
                    now.0 - skipped,
                    now.1 - merged
                ));
            }
            // Seed 001's lazy malloc/free: the buffers of dropped temporaries go back to the
            // pool at each force, and new temporaries take them from there.
            text.line(&format!(
                "  memory: {} buffers reused from the pool, {} bytes newly allocated, {} bytes \
                 held on the device",
                st.stats.pool_reuses - before.pool_reuses,
                st.stats.bytes_allocated - before.bytes_allocated,
                st.device_bytes()
            ));
            *self.0.sched.explain.borrow_mut() = text;
        }
        if collective {
            let agreed = self.agree(result, &format!("the outcome of running the trace ({why})"));
            if agreed.is_err() {
                self.forget_exchanges(recvs);
            }
            return agreed;
        }
        result
    }

    /// After a force failed on every rank: every rank forgets its exchanges alike (a later
    /// loop exchanges again).
    fn forget_exchanges(&self, recvs: Vec<(Rc<DataInner>, u64)>) {
        for (dat, send) in recvs {
            dat.state.halo_written_over();
            self.0.dist().received.borrow_mut().remove(&send);
        }
    }

    /// Fuses `loops` into groups and runs them (submitted in one region per run of device
    /// groups), then reads back `readback` (`defer`: only starts to). Returns the grouping's
    /// explanation.
    pub(super) async fn run_groups(
        &self,
        loops: &[Rc<LoopRecord>],
        readback: &[Rc<DataInner>],
        pending_reads: BTreeSet<u64>,
        defer: bool,
    ) -> (Explain, Result<()>) {
        let env = fuse::FuseEnv {
            fusion: self.0.config.fusion,
            // Checking mode binds its record buffer in every group.
            max_storage: self
                .0
                .engine
                .gpu
                .limits
                .max_storage_buffers_per_shader_stage as usize
                - usize::from(self.0.config.check),
            pending_reads,
        };
        let (groups, explain): (Vec<Group>, Explain) = {
            let _s = self.0.engine.profiler.span("fusion", Track::Host, || {
                format!("fusion of {} loops", loops.len())
            });
            let mut partitioned = 0;
            let g = fuse::groups(
                loops,
                &env,
                &mut self.0.sched.fuse_cache.borrow_mut(),
                &mut partitioned,
            );
            self.0.engine.rt.borrow_mut().stats.groupings += partitioned;
            g
        };
        (
            explain,
            runtime::exec::run(&self.0.engine, &groups, readback, defer).await,
        )
    }
}
