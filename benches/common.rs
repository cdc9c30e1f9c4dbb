//! Shared by the benchmarks: the header every table carries (what, adapter, date, command) and
//! timing helpers. Benchmarks print ratios measured side by side in one run.
#![allow(dead_code)]

use std::time::{Instant, SystemTime, UNIX_EPOCH};

/// Today's date (UTC) as YYYY-MM-DD.
pub fn today() -> String {
    let days = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() / 86_400) as i64;
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!("{y:04}-{m:02}-{d:02}")
}

pub fn header(title: &str, adapter: &str, command: &str) {
    println!("\n### {title}\n");
    println!(
        "adapter: {adapter}; date: {}; command: `{command}`\n",
        today()
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
