//! `parloop bench`'s vector section: a dot product (`Context::dot`) and an axpy
//! (`Context::axpy`) over 10^6 and 10^7 elements in f32 and f64, in GB/s against the copy
//! bandwidth, with the dispatches and uploads each costs. Rows are medians of interleaved
//! repeats with their spread ([`Spread`]), so a difference smaller than the spread is not read
//! as a ranking.

use super::{Res, base, context, sig};
use parloop::{Config, Context, Dat, Real, Set, Strategy, TuneCache};
use std::fmt::Write;
use std::time::Instant;

/// The median of repeated measurements and their range.
#[derive(Clone, Copy, Debug)]
pub struct Spread {
    pub median: f64,
    pub lo: f64,
    pub hi: f64,
}

impl Spread {
    /// Of at least one sample.
    pub fn of(samples: &[f64]) -> Spread {
        let mut s = samples.to_vec();
        s.sort_by(f64::total_cmp);
        let m = s.len() / 2;
        let median = if s.len() % 2 == 1 {
            s[m]
        } else {
            0.5 * (s[m - 1] + s[m])
        };
        Spread {
            median,
            lo: s[0],
            hi: s[s.len() - 1],
        }
    }

    /// `median (lo-hi)`, three significant digits each.
    pub fn show(&self) -> String {
        format!("{} ({}-{})", sig(self.median), sig(self.lo), sig(self.hi))
    }
}

/// Operations per timed batch (one force), and interleaved repeats of every row.
const BATCH: usize = 5;
const REPEATS: usize = 7;

/// The dot product's rows: `Config::reduction_workgroups` (None: the adapter's default;
/// `u32::MAX`: uncapped, a workgroup tree per 256 elements; 0: `tune` picks).
const CAPS: [Option<u32>; 5] = [Some(u32::MAX), Some(4096), Some(256), None, Some(0)];

/// Batches that `tune` gets to settle on its choice before the tune row is timed.
const TUNE_BATCHES: usize = 20;

/// The section, at the element counts `ns`.
pub fn vectors(r: &mut String, ns: &[usize], copy: f64) -> Res<()> {
    let _ = writeln!(
        r,
        "## Vector operations\n\n`ctx.dot(&x, &y)` (reads 2 n values) and `ctx.axpy(a, &x, &y)` \
         (reads 2 n, writes n), {BATCH} per force, unfused (each its own pass over memory), wall time per operation; median of \
         {REPEATS} interleaved repeats (range in brackets); GB/s and the copy's share at the \
         median. GPU ms: the operation's own time on the device, from GPU timestamps (the mean \
         over every execution; `-` without timestamps), and the GB/s it gives: what the \
         kernels reach, where the wall time of one operation is mostly the force's latency on \
         a fast GPU. The dot product under several `reduction_workgroups` (the most \
         workgroups a reducing dispatch runs), and under `tune`, timed once it has chosen \
         (its GPU time from then on). Dispatches and uploads per \
         operation.\n\n\
         | operation | n | ms | GB/s | of copy | GPU ms | GPU GB/s | GPU of copy | dispatches | uploads |\n\
         |---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
    );
    let f64 = context(base()?)?.gpu().f64();
    for &n in ns {
        rows::<f32>(r, n, copy)?;
        if f64 {
            rows::<f64>(r, n, copy)?;
        }
    }
    r.push('\n');
    Ok(())
}

/// One measured case: its label, its context and its operation.
struct Case<'a, T: Real> {
    label: String,
    ctx: &'a Context,
    x: Dat<T>,
    y: Dat<T>,
    dot: bool,
    /// GPU time (ns) and executions of the operation before timing began (`tune`'s trials).
    gpu_before: (u64, u64),
}

impl<T: Real> Case<'_, T> {
    /// The mean GPU time of one operation in ms, from the timestamps of every execution of its
    /// loop group (None without timestamps).
    fn gpu_ms(&self) -> Option<f64> {
        let (ns, calls) = self.gpu_totals();
        let (ns, calls) = (ns - self.gpu_before.0, calls - self.gpu_before.1);
        (calls > 0 && ns > 0).then(|| ns as f64 / calls as f64 / 1e6)
    }
    fn gpu_totals(&self) -> (u64, u64) {
        let key = if self.dot { "pl_dot_" } else { "pl_axpy_" };
        self.ctx
            .stats()
            .kernel_times
            .iter()
            .filter(|(label, _)| label.contains(key))
            .fold((0, 0), |(ns, calls), (_, t)| (ns + t.ns, calls + t.calls))
    }
    /// `BATCH` operations, then a force; the dot products' Globals are kept until it (a
    /// result nobody holds is not computed).
    fn batch(&self) -> parloop::Result<()> {
        let mut keep = Vec::new();
        for _ in 0..BATCH {
            if self.dot {
                keep.push(self.ctx.dot(&self.x, &self.y)?);
            } else {
                self.ctx.axpy(T::from_f64(1e-9), &self.x, &self.y)?;
            }
        }
        self.ctx.flush()
    }
}

fn rows<T: Real>(r: &mut String, n: usize, copy: f64) -> Res<()> {
    let err = |e: parloop::Error| e.to_string();
    let ctxs = CAPS
        .iter()
        .map(|&cap| {
            // Unfused: each operation is its own pass over memory.
            let tune = cap == Some(0);
            let b = base()?;
            context(Config {
                reduction_workgroups: cap.filter(|_| !tune),
                fusion: false,
                // The fixed rows stay fixed under PARLOOP_STRATEGY=tune.
                strategy: match (tune, b.strategy) {
                    (true, _) => Strategy::Tune,
                    (false, Strategy::Tune) => Strategy::Auto,
                    (false, s) => s,
                },
                tune_cache: if tune {
                    TuneCache::Off
                } else {
                    b.tune_cache.clone()
                },
                ..b
            })
        })
        .collect::<Res<Vec<Context>>>()?;
    let set = Set::new("elements", n);
    let xs: Vec<T> = (0..n).map(|i| T::from_f64(1.0 + (i % 7) as f64)).collect();
    let mut cases = Vec::new();
    for (ctx, cap) in ctxs.iter().zip(CAPS) {
        let case = |label: String, dot| -> Res<Case<T>> {
            Ok(Case {
                label,
                ctx,
                x: ctx.dat("x", &set, 1, &xs).map_err(err)?,
                y: ctx.dat("y", &set, 1, &xs).map_err(err)?,
                dot,
                gpu_before: (0, 0),
            })
        };
        let label = match cap {
            Some(0) => "dot, tune,".to_string(),
            Some(u32::MAX) => "dot, a workgroup per 256 elements,".to_string(),
            Some(c) => format!("dot, {c} workgroups,"),
            None => "dot, the default,".to_string(),
        };
        cases.push(case(label, true)?);
        if cap.is_none() {
            cases.push(case("axpy".into(), false)?);
        }
    }
    // Each case once untimed (pipelines compiled, buffers resident; `tune` until it has
    // chosen), then counted.
    let mut counts = Vec::new();
    for c in cases.iter_mut() {
        c.batch().map_err(err)?;
        if c.dot && c.ctx.config().strategy == Strategy::Tune {
            for _ in 0..TUNE_BATCHES {
                if c.ctx.tuning().iter().all(|t| t.chosen.is_some()) {
                    break;
                }
                c.batch().map_err(err)?;
            }
            if let Some(chosen) = c.ctx.tuning().iter().find_map(|t| t.chosen.clone()) {
                c.label = format!("dot, tune ({}),", chosen.replace("auto, ", ""));
            }
            c.gpu_before = c.gpu_totals();
        }
        let before = c.ctx.stats();
        c.batch().map_err(err)?;
        let after = c.ctx.stats();
        let per = |a: u64, b: u64| (a - b) as f64 / BATCH as f64;
        counts.push((
            per(after.dispatches, before.dispatches),
            per(after.uploads, before.uploads),
        ));
    }
    let mut ms = vec![Vec::new(); cases.len()];
    for _ in 0..REPEATS {
        for (c, case) in cases.iter().enumerate() {
            let t = Instant::now();
            case.batch().map_err(err)?;
            let _ = case
                .ctx
                .gpu()
                .device
                .poll(wgpu::PollType::wait_indefinitely());
            ms[c].push(t.elapsed().as_secs_f64() * 1e3 / BATCH as f64);
        }
    }
    let tb = T::DTYPE.bytes() as f64;
    for (c, case) in cases.iter().enumerate() {
        let s = Spread::of(&ms[c]);
        let values = if case.dot { 2.0 } else { 3.0 };
        let bytes = values * n as f64 * tb;
        let gbs = bytes / (s.median * 1e6);
        let (gpu_ms, gpu_gbs, gpu_share) = match case.gpu_ms() {
            Some(t) => {
                let g = bytes / (t * 1e6);
                (sig(t), sig(g), format!("{}%", sig(100.0 * g / copy)))
            }
            None => ("-".into(), "-".into(), "-".into()),
        };
        let _ = writeln!(
            r,
            "| {} {} | {n} | {} | {} | {}% | {gpu_ms} | {gpu_gbs} | {gpu_share} | {} | {} |",
            case.label,
            T::DTYPE,
            s.show(),
            sig(gbs),
            sig(100.0 * gbs / copy),
            sig(counts[c].0),
            sig(counts[c].1),
        );
    }
    Ok(())
}
