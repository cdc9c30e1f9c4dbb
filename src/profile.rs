//! Where a run's time goes: the timeline (`PARLOOP_PROFILE=trace:PATH`, Chrome trace / Perfetto
//! JSON) and the OP2-style per-loop-group table (`PARLOOP_PROFILE=table`).
//!
//! The timeline has one process per rank and four tracks: `host` (recording, fusion, lowering,
//! plan builds, pipeline compiles, encoding and submissions, waits, readbacks, host kernels),
//! `GPU` (each loop group's execution), `halo` (packs, messages, halo writes, reductions) and
//! counters (device memory held, pending loops). GPU spans are placed from their submission:
//! with timestamp queries their offsets and lengths are the GPU's; without, a group is timed
//! alone from submission to completion.
//!
//! Owns: the events and their JSON. Must never: decide anything (it only records).

use serde::{Deserialize, Serialize};
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::fmt::Write;
use web_time::Instant;

/// Events kept at most; the rest are counted, and the timeline says how many were dropped.
const MAX_EVENTS: usize = 2_000_000;

/// A timeline track (Chrome trace's thread id).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Track {
    Host = 1,
    Gpu = 2,
    Halo = 3,
}

impl Track {
    fn name(self) -> &'static str {
        match self {
            Track::Host => "host",
            Track::Gpu => "GPU",
            Track::Halo => "halo",
        }
    }
}

struct Event {
    name: String,
    cat: &'static str,
    track: Track,
    /// Microseconds since the profiler started.
    ts: f64,
    kind: Kind,
}

enum Kind {
    /// A span of this many microseconds.
    Span(f64),
    /// A counter's new value.
    Counter(f64),
}

/// One loop group's line of the table.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub(crate) struct Row {
    pub calls: u64,
    pub ns: f64,
    pub bytes: f64,
}

/// The recorder of one Context (does nothing unless a timeline or table was asked for).
pub(crate) struct Profiler {
    /// Record the timeline.
    pub trace: bool,
    start: Instant,
    events: RefCell<Vec<Event>>,
    dropped: std::cell::Cell<u64>,
    /// End of the last GPU span (µs): a span placed from its submission starts no earlier,
    /// since the device runs submissions in order.
    gpu_end: std::cell::Cell<f64>,
    /// The table: per loop group (kernels joined by `+`).
    pub rows: RefCell<BTreeMap<String, Row>>,
    /// The program asked for the table (the end of the Context does not print it again).
    pub table_shown: std::cell::Cell<bool>,
}

/// A span on a track, recorded when dropped.
pub(crate) struct Span<'a> {
    p: &'a Profiler,
    name: Option<String>,
    cat: &'static str,
    track: Track,
    start: Instant,
}

impl Drop for Span<'_> {
    fn drop(&mut self) {
        if let Some(name) = self.name.take() {
            let dur = self.start.elapsed().as_secs_f64() * 1e6;
            self.p.push(
                name,
                self.cat,
                self.track,
                self.p.us(self.start),
                Kind::Span(dur),
            );
        }
    }
}

impl Profiler {
    pub fn new(trace: bool) -> Profiler {
        Profiler {
            trace,
            start: Instant::now(),
            events: RefCell::new(Vec::new()),
            dropped: std::cell::Cell::new(0),
            rows: RefCell::new(BTreeMap::new()),
            gpu_end: std::cell::Cell::new(0.0),
            table_shown: std::cell::Cell::new(false),
        }
    }

    fn us(&self, t: Instant) -> f64 {
        t.saturating_duration_since(self.start).as_secs_f64() * 1e6
    }

    fn push(&self, name: String, cat: &'static str, track: Track, ts: f64, kind: Kind) {
        let mut ev = self.events.borrow_mut();
        if ev.len() >= MAX_EVENTS {
            self.dropped.set(self.dropped.get() + 1);
            return;
        }
        ev.push(Event {
            name,
            cat,
            track,
            ts,
            kind,
        });
    }

    /// A span from now until the guard is dropped (`name` is built only when tracing).
    pub fn span(&self, cat: &'static str, track: Track, name: impl FnOnce() -> String) -> Span<'_> {
        Span {
            p: self,
            name: self.trace.then(name),
            cat,
            track,
            start: Instant::now(),
        }
    }

    /// A span that started at `start` and lasted `ns`.
    pub fn complete(&self, cat: &'static str, track: Track, name: &str, start: Instant, ns: f64) {
        if self.trace {
            let mut ts = self.us(start);
            if track == Track::Gpu {
                ts = ts.max(self.gpu_end.get());
                self.gpu_end.set(ts + ns / 1e3);
            }
            self.push(name.to_string(), cat, track, ts, Kind::Span(ns / 1e3));
        }
    }

    /// A counter's value from now on.
    pub fn counter(&self, name: &str, value: f64) {
        if self.trace {
            let ts = self.us(Instant::now());
            self.push(
                name.to_string(),
                "counter",
                Track::Host,
                ts,
                Kind::Counter(value),
            );
        }
    }

    /// Adds one execution of a loop group to the table.
    pub fn add_row(&self, group: &str, ns: f64, bytes: f64) {
        let mut rows = self.rows.borrow_mut();
        let r = rows.entry(group.to_string()).or_default();
        r.calls += 1;
        r.ns += ns;
        r.bytes += bytes;
    }

    /// Seconds since the profiler started.
    pub fn elapsed_s(&self) -> f64 {
        self.start.elapsed().as_secs_f64()
    }

    /// The timeline as Chrome trace JSON, with `rank` as its process.
    pub fn to_json(&self, rank: usize, ranks: usize) -> String {
        let mut out = Vec::new();
        let label = if ranks > 1 {
            format!("parloop rank {rank} of {ranks}")
        } else {
            "parloop".to_string()
        };
        out.push(
            serde_json::json!({"ph": "M", "name": "process_name", "pid": rank, "tid": 0,
            "args": {"name": label}}),
        );
        out.push(
            serde_json::json!({"ph": "M", "name": "process_sort_index", "pid": rank,
            "tid": 0, "args": {"sort_index": rank}}),
        );
        for t in [Track::Host, Track::Gpu, Track::Halo] {
            out.push(
                serde_json::json!({"ph": "M", "name": "thread_name", "pid": rank,
                "tid": t as u32, "args": {"name": t.name()}}),
            );
        }
        for e in self.events.borrow().iter() {
            out.push(match e.kind {
                Kind::Span(dur) => serde_json::json!({"ph": "X", "name": e.name, "cat": e.cat,
                    "pid": rank, "tid": e.track as u32, "ts": e.ts, "dur": dur}),
                Kind::Counter(v) => serde_json::json!({"ph": "C", "name": e.name, "pid": rank,
                    "tid": 0, "ts": e.ts, "args": {"value": v}}),
            });
        }
        serde_json::json!({
            "traceEvents": out,
            "displayTimeUnit": "ms",
            "otherData": {"dropped_events": self.dropped.get()},
        })
        .to_string()
    }
}

/// The table of `rows` over `wall_s` seconds (one rank's, or every rank's summed), headed by
/// `title`.
pub(crate) fn table(title: &str, rows: &BTreeMap<String, Row>, wall_s: f64) -> String {
    let mut s = String::new();
    let total: f64 = rows.values().map(|r| r.ns).sum();
    let _ = writeln!(
        s,
        "{title}: {wall_s:.3} s, {:.3} s in loop groups ({:.1}%)",
        total / 1e9,
        total / 1e9 / wall_s.max(1e-9) * 100.0
    );
    let _ = writeln!(
        s,
        "  {:>8} {:>12} {:>10} {:>8} {:>7}  loop group",
        "count", "total ms", "mean ms", "GB/s", "share"
    );
    let mut sorted: Vec<(&String, &Row)> = rows.iter().collect();
    sorted.sort_by(|a, b| b.1.ns.total_cmp(&a.1.ns));
    for (name, r) in sorted {
        let _ = writeln!(
            s,
            "  {:>8} {:>12.3} {:>10.4} {:>8.2} {:>6.1}%  {name}",
            r.calls,
            r.ns / 1e6,
            r.ns / 1e6 / r.calls.max(1) as f64,
            if r.ns > 0.0 { r.bytes / r.ns } else { 0.0 },
            r.ns / 1e9 / wall_s.max(1e-9) * 100.0
        );
    }
    s
}
