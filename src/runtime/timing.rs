//! Loop-group times: from the timestamp queries of a submission, or from a group submitted
//! alone (the synchronised wall clock), into `Stats::kernel_times`, the profile's table and
//! timeline, and the tuner.

use super::readback::read_words;
use super::{Buf, Engine, State};
use crate::data::Via;
use crate::error::Result;
use crate::fuse::Group;
use crate::profile::Track;
use std::collections::HashSet;
use web_time::Instant;

/// The group's kernels joined by `+` (its name in Stats, the table and the timeline).
pub(crate) fn label(g: &Group) -> String {
    g.loops
        .iter()
        .map(|l| l.kernel.name())
        .collect::<Vec<_>>()
        .join("+")
}

/// Bytes one execution of `g` moves, by a model that counts each value once: a Dat read
/// directly, `positions` x dim values; through a map, the values of the target set it can
/// reach (at most positions x the indices used); twice when it is also written; plus the map
/// indices read. Ephemeral Dats (registers) and Globals move nothing.
pub(crate) fn group_bytes(g: &Group) -> f64 {
    let mut seen = HashSet::new();
    let mut maps = HashSet::new();
    let mut bytes = 0.0;
    for lp in &g.loops {
        let n = lp.space.len() as f64;
        for a in &lp.args {
            let d = &a.data;
            if g.ephemeral.contains(&d.id) {
                continue;
            }
            let value = (d.dim * d.dtype.bytes()) as f64;
            let both = if a.access.reads() && a.access.writes() {
                2.0
            } else {
                1.0
            };
            let (key, count) = match &a.via {
                Via::Global => continue,
                Via::Direct => ((d.id, 0), n),
                Via::Map(m, j) => {
                    if maps.insert((m.id(), Some(*j))) {
                        bytes += 4.0 * n;
                    }
                    ((d.id, m.id()), (m.to_set().total() as f64).min(n))
                }
                Via::MapAll(m) => {
                    if maps.insert((m.id(), None)) {
                        bytes += 4.0 * n * m.arity() as f64;
                    }
                    let reach = n * m.arity() as f64;
                    ((d.id, m.id()), (m.to_set().total() as f64).min(reach))
                }
            };
            if seen.insert(key) {
                bytes += both * count * value;
            }
        }
    }
    bytes
}

/// Adds one timed execution of `g` (`ns`, from `start`) to the Stats, the table and the
/// timeline.
pub(crate) fn add_time(ctx: &Engine, st: &mut State, g: &Group, start: Instant, ns: f64) {
    let label = label(g);
    ctx.profiler.complete("gpu", Track::Gpu, &label, start, ns);
    let bytes = group_bytes(g);
    ctx.profiler.add_row(&label, ns, bytes);
    let t = st.stats.kernel_times.entry(label).or_default();
    t.calls += 1;
    t.ns += ns as u64;
    t.bytes += bytes as u64;
}

/// Adds each group's GPU time (from its pass's timestamps) to the per-group totals, and gives
/// the tuner its trials' times. `submitted`: when the submission went to the queue (the
/// timeline places the groups from it).
pub(super) async fn record_times(
    ctx: &Engine,
    groups: &[Group],
    (buf, used): (Buf, Vec<bool>),
    trials: &[Option<String>],
    submitted: Instant,
) -> Result<()> {
    let words = read_words(ctx, buf, 16 * groups.len() as u64, "GPU timestamps").await?;
    let tick = |k: usize| u64::from(words[2 * k]) | u64::from(words[2 * k + 1]) << 32;
    let period = ctx.gpu.queue.get_timestamp_period() as f64;
    let first = (0..groups.len())
        .filter(|&g| used[g])
        .map(|g| tick(2 * g))
        .min()
        .unwrap_or(0);
    let mut st = ctx.rt.borrow_mut();
    let mut tuner = ctx.tuner.borrow_mut();
    for (g, group) in groups.iter().enumerate().filter(|&(g, _)| used[g]) {
        let ns = tick(2 * g + 1).saturating_sub(tick(2 * g)) as f64 * period;
        if ctx.profile {
            let offset = tick(2 * g).saturating_sub(first) as f64 * period;
            let start = submitted + std::time::Duration::from_nanos(offset as u64);
            add_time(ctx, &mut st, group, start, ns);
        }
        if let (Some(t), Some(key)) = (tuner.as_mut(), &trials[g]) {
            t.record(key, ns);
        }
    }
    Ok(())
}
