//! Autotuning (`Strategy::Tune`): for each loop group with racing float increments, the first
//! executions try every legal strategy (round-robin, `Config::tune_reps` timed executions
//! each), then the workgroup sizes 64, 128 and 256 for the fastest; the candidate with the
//! lowest median time is kept. A group that reduces into Globals also tries caps on its
//! workgroups (`Config::reduction_workgroups`: the default, 16 and 4 times fewer, 4 times
//! more; those that give the group a different number of workgroups): first, where nothing
//! races, else with the workgroup sizes. Every execution is real work: a candidate is only
//! ever a way to run the group, and each gives the group's results. The group's first timed
//! execution is a warm-up and not counted.
//!
//! Times come from GPU timestamps where the adapter has them (the group's own compute pass),
//! otherwise from a synchronised wall clock (the executor submits the group alone, from
//! submission to completion). Choices are kept per adapter (name, driver, backend), per group
//! signature (kernel sources, arguments, layout and checking) and per size class (positions
//! rounded up to a power of two), in memory and in a JSON file (`Config::tune_cache`), so a
//! second run starts tuned.
//!
//! Not tuned: the data layout (`Config::soa` is one layout for every Dat a program holds, not
//! a per-group choice) and groups that neither reduce into Globals nor have racing float
//! increments (their schedule is fixed).

mod cache;
mod report;
mod signature;

pub(crate) use report::describe;
pub use report::{Tried, TuneReport};

use super::Choice;
use crate::codegen::strategy::{self, Request, Schedule};
use crate::config::{Strategy, TuneCache, Variant};
use crate::fuse::Group;
use cache::{Cache, Stored};
use signature::{Signature, caps, same_code, signature};
use std::collections::HashMap;
use std::fmt::Write;

/// Workgroup sizes tried for the fastest strategy.
const WORKGROUP_SIZES: [u32; 3] = [64, 128, 256];

/// A candidate whose fastest execution is this many times the lowest median is not timed
/// again (on llvmpipe a staged hierarchical group can take seconds where atomics take ms).
const PRUNE: f64 = 4.0;

/// An execution `choice` gave: the group's instance key and the candidate it ran.
pub(crate) type Trial = (String, usize);

/// One way to run a group.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Candidate {
    variant: Variant,
    workgroup_size: u32,
    /// The cap on the group's workgroups (None: the group does not reduce into Globals).
    reduction_workgroups: Option<u32>,
}

impl Candidate {
    fn label(&self) -> String {
        let mut s = format!("{}, workgroup {}", self.variant.name(), self.workgroup_size);
        if let Some(r) = self.reduction_workgroups {
            let _ = write!(s, ", at most {r} workgroups");
        }
        s
    }
}

/// One group's tuning.
struct Tuning {
    group: String,
    positions: usize,
    /// The key the cache keeps the choice under (the instance key adds the Maps and Sets).
    file_key: String,
    candidates: Vec<Candidate>,
    /// Timed executions (ns) of each candidate.
    samples: Vec<Vec<f64>>,
    /// Left out after a first execution far slower than the fastest (`PRUNE`).
    pruned: Vec<bool>,
    /// Cannot run this group (lowering or encoding refused it).
    rejected: Vec<bool>,
    /// The workgroup sizes were added (second stage).
    sizes_added: bool,
    /// The group's first timed execution came back: it is a warm-up, not a sample (its
    /// buffers are touched for the first time, which on a CPU adapter costs several times a
    /// run).
    warmed: bool,
    /// The caps the second stage adds (a reducing group whose first stage tried strategies).
    caps_later: Vec<u32>,
    /// Next candidate, round-robin.
    next: usize,
    chosen: Option<usize>,
    from_cache: bool,
}

impl Tuning {
    fn median(&self, c: usize) -> Option<f64> {
        let mut s = self.samples[c].clone();
        if s.is_empty() {
            return None;
        }
        s.sort_by(f64::total_cmp);
        Some(s[s.len() / 2])
    }
    fn done(&self, c: usize, reps: usize) -> bool {
        self.pruned[c] || self.rejected[c] || self.samples[c].len() >= reps
    }
    fn best(&self) -> Option<usize> {
        (0..self.candidates.len())
            .filter(|&c| !self.pruned[c] && !self.rejected[c])
            .filter_map(|c| self.median(c).map(|m| (c, m)))
            .min_by(|a, b| a.1.total_cmp(&b.1))
            .map(|(c, _)| c)
    }
    /// Prunes against the fastest execution of the candidates that can run.
    fn prune(&mut self) {
        let runs = |c: usize| !self.rejected[c];
        let first = |c: usize| {
            self.samples[c]
                .iter()
                .copied()
                .fold(f64::INFINITY, f64::min)
        };
        // Against the lowest median, so that one lucky execution prunes nothing.
        let fastest = (0..self.candidates.len())
            .filter(|&c| runs(c))
            .filter_map(|c| self.median(c))
            .fold(f64::INFINITY, f64::min);
        for c in 0..self.candidates.len() {
            self.pruned[c] = runs(c) && first(c).is_finite() && first(c) > PRUNE * fastest;
        }
    }
}

/// The tuner of one Context (`Some` in the engine when the strategy is `tune`).
pub(crate) struct Tuner {
    adapter: String,
    reps: usize,
    workgroup_max: u32,
    gpu_timer: bool,
    /// By instance key: a group over given Maps and Sets.
    groups: HashMap<String, Tuning>,
    cache: Cache,
}

impl Tuner {
    pub fn new(adapter: String, cache: &TuneCache, reps: usize, wg_max: u32, gpu: bool) -> Tuner {
        let file = match cache {
            TuneCache::Off => None,
            TuneCache::File(p) => Some(p.clone()),
            TuneCache::User => cache::user_cache_file(),
        };
        let (cache, warning) = Cache::open(file);
        if let Some(w) = warning {
            log::warn!("parloop tune cache: {w}");
        }
        Tuner {
            adapter,
            reps: reps.max(1),
            workgroup_max: wg_max,
            gpu_timer: gpu,
            groups: HashMap::new(),
            cache,
        }
    }

    /// Adds the choices of a cache's JSON (the file's, or the page's storage).
    pub fn load_json(&mut self, text: &str) -> Result<(), crate::error::Error> {
        self.cache.load(text)
    }

    /// Every choice known (this adapter's and others' from the file), as the cache's JSON.
    pub fn to_json(&self) -> String {
        self.cache.to_json()
    }

    /// Whether `g`'s next execution would be timed to compare candidates.
    pub fn trying(&self, g: &Group, base: &Choice) -> bool {
        let Some(sig) = signature(g, base) else {
            return false;
        };
        match self.groups.get(&sig.instance) {
            Some(t) => t.chosen.is_none(),
            None => self.cache.find(&self.adapter, &sig.file).is_none(),
        }
    }

    /// The knobs `g` runs with now, and what ran: the trial to time, or (untimed) the
    /// candidate chosen, so that a choice that cannot run can be dropped.
    pub fn choice(&mut self, g: &Group, base: &Choice) -> (Choice, Option<(Trial, bool)>) {
        let Some(sig) = signature(g, base) else {
            return (*base, None);
        };
        if !self.groups.contains_key(&sig.instance) {
            let t = self.start(g, base, &sig);
            self.groups.insert(sig.instance.clone(), t);
        }
        let reps = self.reps;
        let t = self.groups.get_mut(&sig.instance).expect("inserted");
        let with = |c: Candidate| Choice {
            strategy: c.variant.strategy,
            staging: c.variant.staging,
            workgroup_size: c.workgroup_size,
            reduction_workgroups: c.reduction_workgroups.unwrap_or(base.reduction_workgroups),
            ..*base
        };
        if let Some(c) = t.chosen {
            return (with(t.candidates[c]), Some(((sig.instance, c), false)));
        }
        // The candidate with the fewest samples, round-robin among equals.
        let n = t.candidates.len();
        let open = |c: &usize| !t.done(*c, reps);
        let least = (0..n).filter(open).map(|c| t.samples[c].len()).min();
        let pick = least.and_then(|least| {
            (0..n)
                .map(|k| (t.next + k) % n)
                .filter(open)
                .find(|&c| t.samples[c].len() == least)
        });
        let Some(c) = pick else {
            // Every candidate has run; their times are still on their way (the browser reads
            // timestamps later): the best so far runs, untimed.
            let b = t
                .best()
                .or_else(|| (0..n).find(|&k| !t.rejected[k]))
                .unwrap_or(0);
            return (with(t.candidates[b]), Some(((sig.instance, b), false)));
        };
        t.next = (c + 1) % n;
        (with(t.candidates[c]), Some(((sig.instance, c), true)))
    }

    fn start(&self, g: &Group, base: &Choice, sig: &Signature) -> Tuning {
        let mut schedules: Vec<Schedule> = Vec::new();
        let mut candidates = Vec::new();
        let positions = g.loops[0].space.len();
        let cap = sig.reduces.then_some(base.reduction_workgroups);
        let mut caps_later = Vec::new();
        if sig.reduces {
            let all = caps(base.reduction_workgroups, positions, base.workgroup_size);
            if sig.races_floats() {
                caps_later = all[1..].to_vec();
            } else {
                // Nothing races: the schedule is fixed, the cap is what is tried.
                candidates.extend(all.into_iter().map(|r| Candidate {
                    variant: Variant::AUTO,
                    workgroup_size: base.workgroup_size,
                    reduction_workgroups: Some(r),
                }));
            }
        }
        let strategies = Variant::available(base.float_atomics)
            .filter(|v| v.strategy != Strategy::Tune && sig.races_floats());
        for v in strategies {
            let req = Request {
                strategy: v.strategy,
                staging: v.staging,
                float_atomics: base.float_atomics,
                int64_atomics: base.int64_atomics,
                cpu_adapter: base.cpu_adapter,
                workgroup_size: base.workgroup_size,
            };
            if let Ok(s) = strategy::choose(&req, &sig.racing) {
                if !schedules.iter().any(|o| same_code(o, &s, &sig.racing)) {
                    schedules.push(s);
                    candidates.push(Candidate {
                        variant: v,
                        workgroup_size: base.workgroup_size,
                        reduction_workgroups: cap,
                    });
                }
            }
        }
        let n = candidates.len();
        let mut t = Tuning {
            group: g.label(),
            positions,
            file_key: sig.file.clone(),
            samples: vec![Vec::new(); n],
            pruned: vec![false; n],
            rejected: vec![false; n],
            candidates,
            sizes_added: false,
            caps_later,
            warmed: false,
            next: 0,
            chosen: None,
            from_cache: false,
        };
        if let Some(s) = self.cache.find(&self.adapter, &sig.file) {
            let v = t
                .candidates
                .iter()
                .find(|c| c.variant.name() == s.strategy)
                .map(|c| c.variant);
            // A size the adapter cannot run, or one the strategy cannot take (an edited or
            // corrupt file), is measured again.
            let size_ok = (1..=self.workgroup_max).contains(&s.workgroup_size)
                && v.is_some_and(|v| {
                    let req = Request {
                        strategy: v.strategy,
                        staging: v.staging,
                        float_atomics: base.float_atomics,
                        int64_atomics: base.int64_atomics,
                        cpu_adapter: base.cpu_adapter,
                        workgroup_size: s.workgroup_size,
                    };
                    strategy::choose(&req, &sig.racing).is_ok()
                });
            if let Some(variant) = v.filter(|_| size_ok && s.ms.is_finite()) {
                t.candidates = vec![Candidate {
                    variant,
                    workgroup_size: s.workgroup_size,
                    // An entry without a cap (an older file) runs with the default.
                    reduction_workgroups: cap.map(|c| s.reduction_workgroups.unwrap_or(c).max(1)),
                }];
                t.samples = vec![vec![s.ms * 1e6]];
                (t.pruned, t.rejected) = (vec![false], vec![false]);
                t.chosen = Some(0);
                t.from_cache = true;
            }
        }
        t
    }

    /// The time of a trial `choice` gave (times may come back after later executions: in
    /// the browser the timestamps are read when the page next runs).
    pub fn record(&mut self, (key, c): &Trial, ns: f64) {
        let Some(t) = self.groups.get_mut(key) else {
            return;
        };
        if t.chosen.is_some() || *c >= t.candidates.len() || !ns.is_finite() || t.rejected[*c] {
            return;
        }
        if !t.warmed {
            t.warmed = true;
            return;
        }
        t.samples[*c].push(ns);
        t.prune();
        self.settle(key, true);
    }

    /// Once every candidate is done: the workgroup sizes for the best, or the choice (kept in
    /// the cache when `keep`: not while candidates are being rejected, where an error no
    /// candidate avoids would walk the choice down to the slowest).
    fn settle(&mut self, key: &str, keep: bool) {
        let reps = self.reps;
        let Some(t) = self.groups.get_mut(key) else {
            return;
        };
        if t.chosen.is_some() || (0..t.candidates.len()).any(|k| !t.done(k, reps)) {
            return;
        }
        let Some(best) = t.best() else { return };
        if !t.sizes_added {
            t.sizes_added = true;
            let b = t.candidates[best];
            let mut more: Vec<Candidate> = WORKGROUP_SIZES
                .into_iter()
                .filter(|&w| w != b.workgroup_size && w <= self.workgroup_max)
                .map(|workgroup_size| Candidate {
                    workgroup_size,
                    ..b
                })
                .collect();
            // A block plan runs one workgroup per block: no cap reaches its dispatches.
            let capped = !matches!(
                b.variant.strategy,
                Strategy::Hierarchical | Strategy::Staged
            );
            more.extend(t.caps_later.iter().filter(|_| capped).map(|&r| Candidate {
                reduction_workgroups: Some(r),
                ..b
            }));
            if !more.is_empty() {
                let k = more.len();
                t.samples.extend(std::iter::repeat_n(Vec::new(), k));
                t.pruned.extend(std::iter::repeat_n(false, k));
                t.rejected.extend(std::iter::repeat_n(false, k));
                t.candidates.extend(more);
                return;
            }
        }
        t.chosen = Some(best);
        if !keep {
            return;
        }
        let s = Stored {
            adapter: self.adapter.clone(),
            key: t.file_key.clone(),
            group: t.group.clone(),
            strategy: t.candidates[best].variant.name().to_string(),
            workgroup_size: t.candidates[best].workgroup_size,
            reduction_workgroups: t.candidates[best].reduction_workgroups,
            ms: t.median(best).unwrap_or(0.0) / 1e6,
        };
        if let Err(e) = self.cache.choose(s) {
            log::warn!("parloop tune cache: {e}");
        }
    }

    /// The candidate that ran `trial` cannot run its group (`why`): it is left out, and a
    /// choice of it (made here, or read from the cache) is dropped. True when the group
    /// should be lowered again (another candidate is left); false when none can run it,
    /// which forgets the group's tuning (a later execution starts afresh) and leaves the
    /// error to the caller.
    pub fn reject(&mut self, (key, c): &Trial, why: &str) -> bool {
        let Some(t) = self.groups.get_mut(key) else {
            return false;
        };
        if *c >= t.candidates.len() {
            return false;
        }
        log::info!(
            "tune: {} cannot run {}: {why}",
            t.candidates[*c].label(),
            t.group
        );
        t.rejected[*c] = true;
        t.samples[*c].clear();
        if t.chosen == Some(*c) {
            t.chosen = None;
            // A choice read from the cache that cannot run is dropped from it; one made in
            // this run stays there (the error may not depend on the candidate).
            if t.from_cache {
                self.cache.drop_choice(&self.adapter, &t.file_key);
            }
        }
        t.prune();
        let cached = t.from_cache;
        if (0..t.candidates.len()).all(|k| t.rejected[k]) {
            // A bad choice from the cache: tune afresh. Otherwise nothing can run the group.
            self.groups.remove(key);
            return cached;
        }
        self.settle(key, false);
        true
    }

    /// What was tried and chosen, per group.
    pub fn report(&self) -> Vec<TuneReport> {
        let mut r: Vec<TuneReport> = self
            .groups
            .values()
            .map(|t| TuneReport {
                group: t.group.clone(),
                positions: t.positions,
                tried: (0..t.candidates.len())
                    .map(|c| Tried {
                        candidate: t.candidates[c].label(),
                        ms: t
                            .median(c)
                            .filter(|_| t.done(c, self.reps) || t.from_cache)
                            .map(|ns| ns / 1e6),
                        // A choice from the cache was not timed in this run.
                        timed: if t.from_cache { 0 } else { t.samples[c].len() },
                        left_out: if t.rejected[c] {
                            Some("cannot run this group")
                        } else if t.pruned[c] {
                            Some("4x slower than the best")
                        } else {
                            None
                        },
                    })
                    .collect(),
                chosen: t.chosen.map(|c| t.candidates[c].label()),
                from_cache: t.from_cache,
                timer: if self.gpu_timer {
                    "GPU timestamps"
                } else {
                    "wall clock"
                },
            })
            .collect();
        r.sort_by(|a, b| (&a.group, a.positions).cmp(&(&b.group, b.positions)));
        r
    }
}
