//! `tune` beside the fixed strategies: the warm-up that lets it settle before it is timed,
//! what it chose (for the tables' rows), and the wave under every strategy.

use super::{Res, base, sig};
use parloop::{Config, Context, Staging, Strategy};
use std::fmt::Write;

/// Under `tune`, runs `step` until a step runs no trial and meets no new group (every group
/// that recurs has chosen; a group seen once, such as the first step's fusion, keeps only its
/// warm-up); at most 2000 steps. Returns the steps it took (0 under any other strategy).
pub fn warm(ctx: &Context, mut step: impl FnMut() -> Res<()>) -> Res<usize> {
    if ctx.config().strategy != Strategy::Tune {
        return Ok(0);
    }
    let trials = |ctx: &Context| -> usize {
        ctx.tuning()
            .iter()
            .flat_map(|r| r.tried.iter().map(|t| t.timed))
            .sum()
    };
    for k in 1..=2000 {
        let (before, groups) = (trials(ctx), ctx.tuning().len());
        step()?;
        let chose = ctx.tuning().iter().any(|r| r.chosen.is_some());
        // A group met for the first time ran its warm-up, which is not counted as a trial.
        if chose && trials(ctx) == before && ctx.tuning().len() == groups {
            return Ok(k - 1);
        }
    }
    Err(format!(
        "tune had not chosen after 2000 steps: {:?}",
        ctx.tuning()
    ))
}

/// A table row's label: `tune`'s says what it chose, from the cache or after how many steps.
pub fn label(ctx: &Context, label: &str, steps: usize) -> String {
    if ctx.config().strategy != Strategy::Tune {
        return label.to_string();
    }
    let chosen: Vec<String> = ctx
        .tuning()
        .iter()
        .filter(|r| r.chosen.is_some())
        .map(|r| {
            let how = if r.from_cache {
                "from the cache".to_string()
            } else {
                format!("{} candidates", r.tried.len())
            };
            format!(
                "{}: {} ({how})",
                r.group,
                r.chosen.as_deref().unwrap_or("none")
            )
        })
        .collect();
    format!("{label}: {}; tuned in {steps} steps", chosen.join("; "))
}

/// The wave at `n` under every strategy of `rows` (steps/s, a force every 10 steps).
pub fn wave_strategies(
    r: &mut String,
    n: usize,
    steps: usize,
    rows: &[(&'static str, &'static str, Strategy, Staging)],
) -> Res<()> {
    let _ = writeln!(
        r,
        "## Strategies: the wave\n\nThe wave on the {n} x {n} unit square ({} triangles), \
         {steps} steps, a force every 10 steps, after 10 warm-up steps (and, for `tune`, the \
         steps until it chose); the default run is `auto`.\n\n| strategy | steps/s |\n|---|---:|",
        2 * n * n
    );
    for &(_, row, strategy, staging) in rows {
        let config = Config {
            strategy,
            staging,
            ..base()?
        };
        let (rate, _, _, label) = super::wave_rate(config, n, steps, row)?;
        let _ = writeln!(r, "| {label} | {} |", sig(rate));
    }
    r.push('\n');
    Ok(())
}
