//! `auto` and colourings of many small colours: a map onto few targets needs a colour, and so a
//! dispatch, per increment a target takes. Under `auto` a colouring of more than 16 colours
//! holding fewer than `Config::min_colour_size` positions on average runs with atomics
//! instead (native where the adapter has them, else compare-and-swap), and `explain()` says
//! so. Sums of small integers are exact in any order, so every run is checked against plain
//! Rust exactly.

use crate::common::ctx_with;
use parloop::{Config, Context, Kernel, Map, Real, Set, Strategy};

/// `n` elements, element e adding `1 + e % 3` to bin `e % bins`: each bin takes about
/// `n / bins` increments, so a colouring needs that many colours of `bins` positions.
/// Returns the bins, the schedule `explain()` names and the dispatches of the loop.
fn scatter<T: Real>(ctx: &Context, n: usize, bins: usize) -> (Vec<T>, String, u64) {
    let t = T::DTYPE;
    let name = format!("bin_{t}");
    let k = Kernel::new(
        &name,
        format!(
            "fn {name}(w: ptr<function, array<{t}, 1>>, b: ptr<function, array<{t}, 1>>) {{ \
             (*b)[0] += (*w)[0]; }}"
        ),
    );
    let elements = Set::new("elements", n);
    let targets = Set::new("bins", bins);
    let values: Vec<u32> = (0..n).map(|e| (e % bins) as u32).collect();
    let m = Map::new("bin", &elements, &targets, 1, &values).unwrap();
    let w: Vec<T> = (0..n).map(|e| T::from_f64(1.0 + (e % 3) as f64)).collect();
    let wd = ctx.dat("w", &elements, 1, &w).unwrap();
    let b = ctx.dat_zeros::<T>("b", &targets, 1).unwrap();
    ctx.par_loop(&k, &elements, &[wd.read(), b.at(&m, 0).inc()])
        .unwrap();
    let got = b.data_ro().unwrap().to_vec();
    let mut expect = vec![0.0f64; bins];
    for e in 0..n {
        expect[e % bins] += 1.0 + (e % 3) as f64;
    }
    let expect: Vec<T> = expect.into_iter().map(T::from_f64).collect();
    assert_eq!(got, expect, "{n} elements into {bins} bins, {t}");
    let explain = ctx.explain();
    let schedule = explain
        .lines()
        .find_map(|l| l.trim().strip_prefix("schedules: "))
        .unwrap_or_else(|| panic!("no schedules line in\n{explain}"))
        .to_string();
    (got, schedule, ctx.stats().last_dispatches)
}

fn auto(min_colour_size: Option<usize>) -> Context {
    let base = Config::from_env().unwrap();
    ctx_with(Config {
        strategy: Strategy::Auto,
        min_colour_size: min_colour_size.unwrap_or(base.min_colour_size),
        ..base
    })
}

/// What `auto` runs instead of a colouring of many small colours on this adapter, for `t`
/// (None: nothing, the colouring stays).
fn instead(ctx: &Context, f64: bool) -> Option<&'static str> {
    let gpu = ctx.gpu();
    match (f64, gpu.float_atomics(), gpu.int64_atomics()) {
        (false, true, _) => Some("atomics"),
        (false, false, _) => Some("cas"),
        (true, _, true) => Some("atomics"),
        (true, _, false) => None,
    }
}

#[test]
fn auto_runs_a_map_onto_few_targets_with_atomics_and_says_why() {
    let ctx = auto(None);
    // 1000 colours of 20 positions: one dispatch instead of 1000.
    let (_, schedule, dispatches) = scatter::<f32>(&ctx, 20_000, 20);
    let name = instead(&ctx, false).expect("f32 always has compare-and-swap");
    assert_eq!(
        schedule,
        format!("{name} (auto: a colouring needs 1000 colours of 20 positions)"),
    );
    assert_eq!(dispatches, 1);
    if ctx.gpu().f64() {
        let (_, schedule, dispatches) = scatter::<f64>(&ctx, 20_000, 20);
        match instead(&ctx, true) {
            Some(name) => {
                assert!(
                    schedule.starts_with(&format!("{name} (auto: ")),
                    "{schedule}"
                );
                assert_eq!(dispatches, 1);
            }
            None => assert_eq!(schedule, "global-colour (1000 colours)"),
        }
    }
    // min_colour_size 0 keeps every colouring: one dispatch per colour.
    let (_, schedule, dispatches) = scatter::<f32>(&auto(Some(0)), 20_000, 20);
    assert_eq!(schedule, "global-colour (1000 colours)");
    assert_eq!(dispatches, 1000);
}

#[test]
fn auto_keeps_few_colours_and_colours_of_min_colour_size() {
    let ctx = auto(None);
    // 16 colours of 2 positions: few dispatches, kept; 17 are not.
    let (_, schedule, _) = scatter::<f32>(&ctx, 32, 2);
    assert_eq!(schedule, "global-colour (16 colours)");
    let (_, schedule, dispatches) = scatter::<f32>(&ctx, 34, 2);
    let name = instead(&ctx, false).expect("f32 always has compare-and-swap");
    assert!(schedule.starts_with(&format!("{name} (auto: a colouring needs 17 colours")));
    assert_eq!(dispatches, 1);
    // 17 colours of exactly min_colour_size positions are kept, of one fewer are not.
    let ctx = auto(Some(100));
    let (_, schedule, _) = scatter::<f32>(&ctx, 1700, 100);
    assert_eq!(schedule, "global-colour (17 colours)");
    let (_, schedule, _) = scatter::<f32>(&ctx, 1683, 99);
    assert_eq!(
        schedule,
        format!("{name} (auto: a colouring needs 17 colours of 99 positions)")
    );
}

#[test]
fn a_fixed_strategy_is_never_replaced() {
    let ctx = ctx_with(Config {
        strategy: Strategy::GlobalColour,
        ..Config::from_env().unwrap()
    });
    let (_, schedule, dispatches) = scatter::<f32>(&ctx, 20_000, 20);
    assert_eq!(schedule, "global-colour (1000 colours)");
    assert_eq!(dispatches, 1000);
}
