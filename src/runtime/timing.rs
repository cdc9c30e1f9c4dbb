//! Loop-group times: from the timestamp queries of a submission, or from a group submitted
//! alone (the synchronised wall clock), into `Stats::kernel_times`, the profile's table and
//! timeline, and the tuner.

use super::{Buf, Engine, State};
use crate::data::Via;
use crate::fuse::Group;
use crate::lower::tune::Trial;
use crate::profile::Track;
use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use web_time::Instant;

/// Bytes one execution of `g` moves, by a model that counts each value once per way it is
/// reached: a Dat read or written directly, positions x its values; through a map, the values
/// of the target elements the indices used can reach (at most the target set, at most
/// positions x indices used); each twice when it is both read and written (RW, INC, MIN,
/// MAX) by any argument of the group; plus each map index read (4 bytes a position per index).
/// Ephemeral Dats (registers) and Globals move nothing.
pub(crate) fn group_bytes(g: &Group) -> f64 {
    // (Dat, map or 0) -> (bytes per element, positions, elements reachable, indices, both).
    let mut paths: HashMap<(u64, u64), (f64, f64, f64, HashSet<Option<usize>>, bool)> =
        HashMap::new();
    let mut maps = HashSet::new();
    let mut bytes = 0.0;
    for lp in &g.loops {
        let n = lp.space.len() as f64;
        for a in &lp.args {
            let d = &a.data;
            if g.ephemeral.contains(&d.id) || matches!(a.via, Via::Global) {
                continue;
            }
            let value = (d.dim * d.dtype.bytes()) as f64;
            let both = a.access.writes() && (a.access.reads() || a.access.is_reduction());
            let (map, idx, reach) = match &a.via {
                Via::Global | Via::Direct => (0, None, f64::INFINITY),
                Via::Map(m, j) => (m.id(), Some(*j), m.to_set().total() as f64),
                Via::MapAll(m) => (m.id(), None, m.to_set().total() as f64),
            };
            let per = match &a.via {
                Via::MapAll(m) => m.arity() as f64,
                Via::Global | Via::Direct | Via::Map(..) => 1.0,
            };
            if map != 0 && maps.insert((map, idx)) {
                bytes += 4.0 * n * per;
            }
            let p = paths
                .entry((d.id, map))
                .or_insert((value, n, reach, HashSet::new(), false));
            p.1 = p.1.max(n * per);
            p.3.insert(idx);
            p.4 |= both;
        }
    }
    for (value, n, reach, idx, both) in paths.values() {
        let count = (n * idx.len() as f64).min(*reach);
        bytes += if *both { 2.0 } else { 1.0 } * count * value;
    }
    bytes
}

/// Adds one timed execution (`ns`, from `start`) of the group `label` moving `bytes` to the
/// Stats, the table and the timeline.
pub(crate) fn add_time(
    ctx: &Engine,
    st: &mut State,
    label: &str,
    bytes: f64,
    start: Instant,
    ns: f64,
) {
    ctx.profiler.complete("gpu", Track::Gpu, label, start, ns);
    ctx.profiler.add_row(label, ns, bytes);
    let t = st.stats.kernel_times.entry(label.to_string()).or_default();
    t.calls += 1;
    t.ns += ns as u64;
    t.bytes += bytes as u64;
}

/// The timestamps of one submission, read once the device has written them (never waited for
/// inside a force: in the browser a force cannot wait).
pub(crate) struct PendingTimes {
    buf: Buf,
    /// Groups in the submission (the buffer holds 2 ticks each).
    count: usize,
    /// (index, label, bytes, tuning trial) of each group timed.
    timed: Vec<(usize, String, f64, Option<Trial>)>,
    submitted: Instant,
    /// Some(mapped) once the read completed.
    mapped: Arc<Mutex<Option<bool>>>,
}

/// Starts reading a submission's timestamps (`used`: the groups that ran), for `collect`.
pub(super) fn start(
    ctx: &Engine,
    groups: &[Group],
    (buf, used): (Buf, Vec<bool>),
    trials: &[Option<Trial>],
    submitted: Instant,
) {
    let bytes = 16 * groups.len() as u64;
    let mapped = Arc::new(Mutex::new(None));
    let m = mapped.clone();
    buf.buffer
        .map_async(wgpu::MapMode::Read, 0..bytes, move |r| {
            if let Ok(mut m) = m.lock() {
                *m = Some(r.is_ok());
            }
        });
    let timed = (0..groups.len())
        .filter(|&g| used[g])
        .map(|g| {
            // The label and bytes only for the profile (a tuning trial needs neither).
            let (name, bytes) = match ctx.profile {
                true => (groups[g].label(), group_bytes(&groups[g])),
                false => (String::new(), 0.0),
            };
            (g, name, bytes, trials[g].clone())
        })
        .collect();
    ctx.pending_times.borrow_mut().push(PendingTimes {
        buf,
        count: groups.len(),
        timed,
        submitted,
        mapped,
    });
}

/// Takes in the timestamps that have arrived into the Stats, the profile and the tuner. With
/// `wait` (what a user reads: `stats()`, `tuning()`, the table, the timeline) it waits for
/// all of them natively; a force only takes what is there, so that profiling does not make
/// each submission wait for the previous one. In the browser nothing is waited for: the rest
/// arrives for a later call.
pub(crate) fn collect(ctx: &Engine, wait: bool) {
    if ctx.pending_times.borrow().is_empty() {
        return;
    }
    #[cfg(not(target_arch = "wasm32"))]
    let _ = ctx.gpu.device.poll(if wait {
        wgpu::PollType::wait_indefinitely()
    } else {
        wgpu::PollType::Poll
    });
    #[cfg(target_arch = "wasm32")]
    let _ = wait;
    let pending = std::mem::take(&mut *ctx.pending_times.borrow_mut());
    let period = ctx.gpu.queue.get_timestamp_period() as f64;
    let mut waiting = Vec::new();
    for p in pending {
        let state = p.mapped.lock().ok().and_then(|m| *m);
        match state {
            None => waiting.push(p),
            Some(false) => log::warn!("reading the GPU timestamps failed: those times are lost"),
            Some(true) => {
                let words: Vec<u32> = match p.buf.buffer.get_mapped_range(0..16 * p.count as u64) {
                    Ok(view) => bytemuck::cast_slice(&view).to_vec(),
                    Err(e) => {
                        log::warn!("mapping the GPU timestamps failed: {e}");
                        continue;
                    }
                };
                p.buf.buffer.unmap();
                let tick = |k: usize| u64::from(words[2 * k]) | u64::from(words[2 * k + 1]) << 32;
                let first = p.timed.iter().map(|t| tick(2 * t.0)).min().unwrap_or(0);
                let mut st = ctx.rt.borrow_mut();
                let mut tuner = ctx.tuner.borrow_mut();
                for (g, label, bytes, trial) in &p.timed {
                    let ns = tick(2 * g + 1).saturating_sub(tick(2 * g)) as f64 * period;
                    if ctx.profile {
                        let offset = tick(2 * g).saturating_sub(first) as f64 * period;
                        let at = p.submitted + std::time::Duration::from_nanos(offset as u64);
                        add_time(ctx, &mut st, label, *bytes, at, ns);
                    }
                    if let (Some(t), Some(trial)) = (tuner.as_mut(), trial) {
                        t.record(trial, ns);
                    }
                }
                st.release_staging(p.buf);
            }
        }
    }
    ctx.pending_times.borrow_mut().extend(waiting);
}
