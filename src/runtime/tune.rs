//! Autotuning (`Strategy::Tune`): for each loop group with racing float increments, the first
//! executions try every legal strategy (round-robin, `Config::tune_reps` timed executions
//! each), then the workgroup sizes 64, 128 and 256 for the fastest; the candidate with the
//! lowest median time is kept. Every execution is real work: a candidate is only ever a way to
//! run the group, and each gives the group's results.
//!
//! Times come from GPU timestamps where the adapter has them (the group's own compute pass),
//! otherwise from a synchronised wall clock (the executor submits the group alone, from
//! submission to completion). Choices are kept per adapter (name, driver, backend), per group
//! signature (kernel sources, arguments, layout and checking) and per size class (positions
//! rounded up to a power of two), in memory and in a JSON file (`Config::tune_cache`), so a
//! second run starts tuned.
//!
//! Not tuned: the data layout (`Config::soa` is one layout for every Dat a program holds, not
//! a per-group choice) and groups where nothing races or only integers do (their schedule is
//! fixed).

use super::lower::{Choice, racing_types};
use crate::codegen::strategy::{self, Request, Schedule};
use crate::config::{Strategy, TuneCache, Variant};
use crate::data::{IterSpace, Via};
use crate::fuse::Group;
use crate::types::DType;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::fmt::Write;
use std::path::PathBuf;

/// Workgroup sizes tried for the fastest strategy.
const WORKGROUP_SIZES: [u32; 3] = [64, 128, 256];

/// A candidate whose fastest execution is this many times the fastest of any is not timed
/// again (on llvmpipe a staged hierarchical group can take seconds where atomics take ms).
const PRUNE: f64 = 4.0;

/// A timed execution: the group's key and the candidate it ran.
pub(crate) type Trial = (String, usize);

/// One way to run a group.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Candidate {
    variant: Variant,
    workgroup_size: u32,
}

impl Candidate {
    fn label(&self) -> String {
        format!("{}, workgroup {}", self.variant.name(), self.workgroup_size)
    }
}

/// What `tune` tried for one loop group and what it chose ([`crate::Context::tuning`]).
#[derive(Clone, Debug, PartialEq)]
pub struct TuneReport {
    /// The group's kernels, joined by `+`.
    pub group: String,
    /// Positions (iterations) of the group when it was first tuned.
    pub positions: usize,
    /// Each candidate tried ("global-colour, workgroup 64"), the median of its timed
    /// executions in ms (None until it has all of them) and how many it has (from the cache:
    /// the time the cache recorded, and 0).
    pub tried: Vec<(String, Option<f64>, usize)>,
    /// The candidate kept, once every candidate has its executions.
    pub chosen: Option<String>,
    /// The choice came from the cache file (nothing was tried in this run).
    pub from_cache: bool,
    /// "GPU timestamps" or "wall clock".
    pub timer: &'static str,
}

/// A choice as the cache file keeps it.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
struct Stored {
    adapter: String,
    key: String,
    group: String,
    strategy: String,
    workgroup_size: u32,
    ms: f64,
}

#[derive(Serialize, Deserialize, Default)]
struct CacheFile {
    version: u32,
    choices: Vec<Stored>,
}

/// One group's tuning.
struct Tuning {
    group: String,
    positions: usize,
    candidates: Vec<Candidate>,
    /// Timed executions (ns) of each candidate.
    samples: Vec<Vec<f64>>,
    /// Candidates left out after a first execution far slower than the fastest (`PRUNE`).
    pruned: Vec<bool>,
    /// The workgroup sizes were added (second stage).
    sizes_added: bool,
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
        self.pruned[c] || self.samples[c].len() >= reps
    }
    fn best(&self) -> Option<usize> {
        (0..self.candidates.len())
            .filter(|&c| !self.pruned[c])
            .filter_map(|c| self.median(c).map(|m| (c, m)))
            .min_by(|a, b| a.1.total_cmp(&b.1))
            .map(|(c, _)| c)
    }
}

/// The tuner of one Context (`Some` in the engine when the strategy is `tune`).
pub(crate) struct Tuner {
    adapter: String,
    file: Option<PathBuf>,
    reps: usize,
    workgroup_max: u32,
    gpu_timer: bool,
    groups: HashMap<String, Tuning>,
    stored: Vec<Stored>,
    /// The cache file could not be read or written (said once).
    pub warning: Option<String>,
}

impl Tuner {
    pub fn new(adapter: String, cache: &TuneCache, reps: usize, wg_max: u32, gpu: bool) -> Tuner {
        let file = match cache {
            TuneCache::Off => None,
            TuneCache::File(p) => Some(p.clone()),
            TuneCache::User => user_cache_file(),
        };
        let mut t = Tuner {
            adapter,
            file,
            reps: reps.max(1),
            workgroup_max: wg_max,
            gpu_timer: gpu,
            groups: HashMap::new(),
            stored: Vec::new(),
            warning: None,
        };
        if let Some(f) = t.file.clone() {
            match std::fs::read_to_string(&f) {
                Ok(text) => {
                    if let Err(e) = t.load_json(&text) {
                        t.warn(format!("{}: {e}; tuning again", f.display()));
                    }
                }
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => t.warn(format!("cannot read {}: {e}; tuning again", f.display())),
            }
        }
        t
    }

    fn warn(&mut self, m: String) {
        log::warn!("parloop tune cache: {m}");
        self.warning.get_or_insert(m);
    }

    /// Adds the choices of a cache (the file's JSON, or the page's storage).
    pub fn load_json(&mut self, text: &str) -> Result<(), String> {
        let f: CacheFile =
            serde_json::from_str(text).map_err(|e| format!("not a parloop tune cache ({e})"))?;
        if f.version != 1 {
            return Err(format!(
                "cache version {} (this parloop writes 1)",
                f.version
            ));
        }
        for s in f.choices {
            self.stored
                .retain(|o| !(o.adapter == s.adapter && o.key == s.key));
            self.stored.push(s);
        }
        Ok(())
    }

    /// Every choice known (this adapter's and others' from the file), as the cache's JSON.
    pub fn to_json(&self) -> String {
        let f = CacheFile {
            version: 1,
            choices: self.stored.clone(),
        };
        serde_json::to_string_pretty(&f).expect("plain data")
    }

    /// Whether `g`'s next execution would be timed to compare candidates.
    pub fn trying(&self, g: &Group, base: &Choice) -> bool {
        let Some((key, _)) = signature(g, base) else {
            return false;
        };
        match self.groups.get(&key) {
            Some(t) => t.chosen.is_none(),
            None => !self
                .stored
                .iter()
                .any(|s| s.adapter == self.adapter && s.key == key),
        }
    }

    /// The knobs `g` runs with now, and the trial (its key and candidate) when this execution
    /// is to be timed.
    pub fn choice(&mut self, g: &Group, base: &Choice) -> (Choice, Option<Trial>) {
        let Some((key, racing)) = signature(g, base) else {
            return (*base, None);
        };
        if !self.groups.contains_key(&key) {
            let t = self.start(g, base, &key, &racing);
            self.groups.insert(key.clone(), t);
        }
        let t = self.groups.get_mut(&key).expect("inserted");
        let with = |c: Candidate| Choice {
            strategy: c.variant.strategy,
            staging: c.variant.staging,
            workgroup_size: c.workgroup_size,
            ..*base
        };
        if let Some(c) = t.chosen {
            return (with(t.candidates[c]), None);
        }
        // The candidate with the fewest samples, round-robin among equals.
        let n = t.candidates.len();
        let open = |c: &usize| !t.done(*c, self.reps);
        let least = (0..n)
            .filter(open)
            .map(|c| t.samples[c].len())
            .min()
            .unwrap_or(0);
        let Some(c) = (0..n)
            .map(|k| (t.next + k) % n)
            .filter(open)
            .find(|&c| t.samples[c].len() == least)
        else {
            // Every candidate has run; their times are still on their way (the browser reads
            // timestamps later): the best so far runs, untimed.
            let b = t
                .best()
                .or_else(|| (0..n).find(|&k| !t.pruned[k]))
                .unwrap_or(0);
            return (with(t.candidates[b]), None);
        };
        t.next = (c + 1) % n;
        (with(t.candidates[c]), Some((key, c)))
    }

    fn start(&self, g: &Group, base: &Choice, key: &str, racing: &[DType]) -> Tuning {
        let mut schedules: Vec<Schedule> = Vec::new();
        let mut candidates = Vec::new();
        for v in Variant::available(base.float_atomics).filter(|v| v.strategy != Strategy::Tune) {
            let req = Request {
                strategy: v.strategy,
                staging: v.staging,
                float_atomics: base.float_atomics,
                cpu_adapter: base.cpu_adapter,
            };
            if let Ok(s) = strategy::choose(&req, racing) {
                if !schedules.contains(&s) {
                    schedules.push(s);
                    candidates.push(Candidate {
                        variant: v,
                        workgroup_size: base.workgroup_size,
                    });
                }
            }
        }
        let mut t = Tuning {
            group: names(g),
            positions: g.loops[0].space.len(),
            samples: vec![Vec::new(); candidates.len()],
            pruned: vec![false; candidates.len()],
            candidates,
            sizes_added: false,
            next: 0,
            chosen: None,
            from_cache: false,
        };
        let cached = self
            .stored
            .iter()
            .find(|s| s.adapter == self.adapter && s.key == key);
        if let Some(s) = cached {
            let v = t
                .candidates
                .iter()
                .find(|c| c.variant.name() == s.strategy)
                .map(|c| c.variant);
            let size_ok = (1..=self.workgroup_max).contains(&s.workgroup_size);
            if let Some(variant) = v.filter(|_| size_ok && s.ms.is_finite()) {
                let c = Candidate {
                    variant,
                    workgroup_size: s.workgroup_size,
                };
                t.candidates = vec![c];
                t.samples = vec![vec![s.ms * 1e6]];
                t.pruned = vec![false];
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
        if t.chosen.is_some() || *c >= t.candidates.len() || !ns.is_finite() {
            return;
        }
        t.samples[*c].push(ns);
        let fastest = t
            .samples
            .iter()
            .flatten()
            .copied()
            .fold(f64::INFINITY, f64::min);
        for k in 0..t.candidates.len() {
            let first = t.samples[k].iter().copied().fold(f64::INFINITY, f64::min);
            if first.is_finite() && first > PRUNE * fastest {
                t.pruned[k] = true;
            }
        }
        self.settle(key);
    }

    /// Once every candidate is done: the workgroup sizes for the best, or the choice.
    fn settle(&mut self, key: &str) {
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
            let more: Vec<Candidate> = WORKGROUP_SIZES
                .into_iter()
                .filter(|&w| w != b.workgroup_size && w <= self.workgroup_max)
                .map(|workgroup_size| Candidate {
                    workgroup_size,
                    ..b
                })
                .collect();
            if !more.is_empty() {
                t.samples.extend(more.iter().map(|_| Vec::new()));
                t.pruned.extend(more.iter().map(|_| false));
                t.candidates.extend(more);
                return;
            }
        }
        t.chosen = Some(best);
        let s = Stored {
            adapter: self.adapter.clone(),
            key: key.to_string(),
            group: t.group.clone(),
            strategy: t.candidates[best].variant.name().to_string(),
            workgroup_size: t.candidates[best].workgroup_size,
            ms: t.median(best).unwrap_or(0.0) / 1e6,
        };
        self.stored
            .retain(|o| !(o.adapter == s.adapter && o.key == s.key));
        self.stored.push(s);
        self.save();
    }

    /// The candidate of `trial` cannot run its group (`why`): it is left out. False when no
    /// candidate that can is left.
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
        t.pruned[*c] = true;
        t.samples[*c].clear();
        if (0..t.candidates.len()).all(|k| t.pruned[k]) {
            return false;
        }
        self.settle(key);
        true
    }

    /// Writes the cache file: the file's choices as they are now, with this run's on top.
    fn save(&mut self) {
        let Some(f) = self.file.clone() else { return };
        let mut merged = Tuner {
            groups: HashMap::new(),
            stored: Vec::new(),
            warning: None,
            file: None,
            adapter: String::new(),
            ..*self
        };
        if let Ok(text) = std::fs::read_to_string(&f) {
            let _ = merged.load_json(&text);
        }
        let mine = self.stored.clone();
        for s in mine {
            merged
                .stored
                .retain(|o| !(o.adapter == s.adapter && o.key == s.key));
            merged.stored.push(s);
        }
        self.stored = merged.stored;
        let tmp = f.with_extension(format!("tmp{}", std::process::id()));
        let written = f
            .parent()
            .map_or(Ok(()), std::fs::create_dir_all)
            .and_then(|_| std::fs::write(&tmp, self.to_json()))
            .and_then(|_| std::fs::rename(&tmp, &f));
        if let Err(e) = written {
            let _ = std::fs::remove_file(&tmp);
            self.warn(format!("cannot write {}: {e}", f.display()));
        }
    }

    /// What was tried and chosen, per group, in the order first seen.
    pub fn report(&self) -> Vec<TuneReport> {
        let mut r: Vec<TuneReport> = self
            .groups
            .values()
            .map(|t| TuneReport {
                group: t.group.clone(),
                positions: t.positions,
                tried: (0..t.candidates.len())
                    .map(|c| {
                        // A choice from the cache was not timed in this run.
                        let n = if t.from_cache { 0 } else { t.samples[c].len() };
                        let done = t.done(c, self.reps) || t.from_cache;
                        let ms = t.median(c).filter(|_| done).map(|ns| ns / 1e6);
                        (t.candidates[c].label(), ms, n)
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

/// `explain()`'s lines for the tuning so far.
pub(crate) fn describe(reports: &[TuneReport]) -> String {
    let mut s = String::new();
    for r in reports {
        let _ = write!(
            s,
            "tune `{}` ({} positions, {}): ",
            r.group, r.positions, r.timer
        );
        if r.from_cache {
            let _ = writeln!(
                s,
                "{} from the cache",
                r.chosen.as_deref().unwrap_or("nothing")
            );
            continue;
        }
        let tried: Vec<String> = r
            .tried
            .iter()
            .map(|(c, ms, n)| match ms {
                Some(ms) => format!("{c} {ms:.3} ms"),
                None => format!("{c} ({n} timed)"),
            })
            .collect();
        let _ = writeln!(
            s,
            "tried {}; {}",
            tried.join(", "),
            match &r.chosen {
                Some(c) => format!("chose {c}"),
                None => "still trying".to_string(),
            }
        );
    }
    s
}

fn names(g: &Group) -> String {
    g.loops
        .iter()
        .map(|l| l.kernel.name())
        .collect::<Vec<_>>()
        .join("+")
}

/// A group's key (its kernels' sources, arguments, layout, checking and size class) and its
/// racing types, or None when nothing would be tuned (no float races).
fn signature(g: &Group, base: &Choice) -> Option<(String, Vec<DType>)> {
    let racing = racing_types(g);
    if !racing.iter().any(|t| matches!(t, DType::F32 | DType::F64)) {
        return None;
    }
    let mut s = format!(
        "soa {} check {} block {:?} balance {}\n",
        base.soa, base.check, base.block_size, base.balance
    );
    for lp in &g.loops {
        let _ = writeln!(
            s,
            "{}\n{}",
            lp.kernel.name(),
            lp.kernel.wgsl().unwrap_or("")
        );
        let space = match &lp.space {
            IterSpace::Set(_) => "set",
            IterSpace::Subset(_) => "subset",
            IterSpace::WithExecHalo(_) => "exec halo",
            IterSpace::Core(_) => "core",
            IterSpace::Owned(_, _) => "owned",
        };
        let _ = writeln!(s, "{space}");
        for a in &lp.args {
            let via = match &a.via {
                Via::Direct => "direct".to_string(),
                Via::Map(m, j) => format!("map {} [{j}]", m.arity()),
                Via::MapAll(m) => format!("map {} all", m.arity()),
                Via::Global => "global".to_string(),
            };
            let _ = writeln!(s, "{:?} {:?} {} {via}", a.access, a.data.dtype, a.data.dim);
        }
    }
    let class = g.loops[0]
        .space
        .len()
        .max(1)
        .next_power_of_two()
        .trailing_zeros();
    Some((format!("{:016x}-{class}", fnv1a(s.as_bytes())), racing))
}

/// FNV-1a, 64 bits: a hash that stays the same across builds (the cache file keeps it).
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// `parloop/tune.json` in the user's cache directory (none in the browser).
fn user_cache_file() -> Option<PathBuf> {
    #[cfg(not(target_arch = "wasm32"))]
    return dirs::cache_dir().map(|d| d.join("parloop").join("tune.json"));
    #[cfg(target_arch = "wasm32")]
    None
}
