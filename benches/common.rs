//! Shared by the benchmarks: the header every table carries (what, adapter, date, command) and
//! timing helpers. Benchmarks print ratios measured side by side in one run.
#![allow(dead_code)]

use std::time::Instant;

pub fn header(title: &str, adapter: &str, command: &str) {
    println!("\n### {title}\n");
    println!(
        "adapter: {adapter}; date: {}; command: `{command}`\n",
        parloop::util::today()
    );
}

/// Median wall time in seconds of `runs` calls of `f` (after one warm-up call).
pub fn median_time(runs: usize, mut f: impl FnMut()) -> f64 {
    f();
    let mut t: Vec<f64> = (0..runs.max(1))
        .map(|_| {
            let s = Instant::now();
            f();
            s.elapsed().as_secs_f64()
        })
        .collect();
    t.sort_by(f64::total_cmp);
    t[t.len() / 2]
}
