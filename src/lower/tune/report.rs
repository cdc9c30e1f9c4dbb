//! What `tune` tells a user: per group, the candidates tried with their times and the one
//! kept (`Context::tuning`, and `explain()`'s lines).

use std::fmt::Write;

/// One candidate of a group's tuning.
#[derive(Clone, Debug, PartialEq)]
pub struct Tried {
    /// "global-colour, workgroup 64".
    pub candidate: String,
    /// Median of its timed executions, in ms, once it has them all (or was left out); from
    /// the cache, the time the cache recorded.
    pub ms: Option<f64>,
    /// Executions timed in this run.
    pub timed: usize,
    /// Why it stopped being tried before its executions were all timed: "4x slower than the
    /// best" (its fastest execution over 4 times the lowest median) or "cannot run this group".
    pub left_out: Option<&'static str>,
}

/// What `tune` tried for one loop group and what it chose ([`crate::Context::tuning`]).
#[derive(Clone, Debug, PartialEq)]
pub struct TuneReport {
    /// The group's kernels, joined by `+`.
    pub group: String,
    /// Positions (iterations) of the group.
    pub positions: usize,
    /// Each candidate, in the order they were tried.
    pub tried: Vec<Tried>,
    /// The candidate kept, once every candidate has its executions.
    pub chosen: Option<String>,
    /// The choice came from the cache (nothing was tried in this run).
    pub from_cache: bool,
    /// "GPU timestamps" or "wall clock".
    pub timer: &'static str,
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
            .map(|t| match (t.ms, t.left_out) {
                (_, Some(why @ "cannot run this group")) => format!("{} ({why})", t.candidate),
                (Some(ms), Some(why)) => format!("{} {ms:.3} ms ({why})", t.candidate),
                (Some(ms), None) => format!("{} {ms:.3} ms", t.candidate),
                (None, _) => format!("{} ({} timed)", t.candidate, t.timed),
            })
            .collect();
        let _ = writeln!(
            s,
            "tried {}; {}",
            tried.join(", "),
            match &r.chosen {
                Some(c) => format!("chose {c}"),
                None => "not chosen yet (the group has not run enough)".to_string(),
            }
        );
    }
    s
}
