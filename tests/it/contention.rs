//! `auto` and colourings of many small colours: a map onto few targets needs a colour, and so a
//! dispatch, per increment a target takes. Under `auto` a colouring of more than 16 colours
//! holding fewer than `Config::min_colour_size` positions on average runs with native atomics
//! instead where the adapter has them; with compare-and-swap where it would need that, if the
//! colours hold under a quarter of it; and `explain()` says so. Sums of small integers are
//! exact in any order, so every run is checked against plain Rust exactly. Each case runs in
//! every type that `auto` colours on the adapter at hand (f32 on CPU adapters and adapters
//! without f32 atomics, f64 wherever the adapter has it).

use crate::common::ctx_with;
use parloop::{Config, Context, DType, Kernel, Map, Real, Set, Strategy};

/// `n` elements adding `1 + e % 3` (element e) to each of their `arity` targets out of
/// `targets` through the map `values`. Checks the sums against plain Rust, and returns the
/// schedule `explain()` names and the dispatches of the loop.
fn scatter<T: Real>(ctx: &Context, targets: usize, arity: usize, values: &[u32]) -> (String, u64) {
    let (t, n) = (T::DTYPE, values.len() / arity);
    let name = format!("add_{t}_{arity}");
    let k = Kernel::new(
        &name,
        format!(
            "fn {name}(w: ptr<function, array<{t}, 1>>, b: ptr<function, array<{t}, {arity}>>) \
             {{ for (var k = 0; k < {arity}; k++) {{ (*b)[k] += (*w)[0]; }} }}"
        ),
    );
    let elements = Set::new("elements", n);
    let to = Set::new("targets", targets);
    let m = Map::new("m", &elements, &to, arity, values).unwrap();
    let w: Vec<T> = (0..n).map(|e| T::from_f64(1.0 + (e % 3) as f64)).collect();
    let wd = ctx.dat("w", &elements, 1, &w).unwrap();
    let b = ctx.dat_zeros::<T>("b", &to, 1).unwrap();
    ctx.par_loop(&k, &elements, &[wd.read(), b.all(&m).inc()])
        .unwrap();
    let mut expect = vec![0.0f64; targets];
    for (i, &v) in values.iter().enumerate() {
        expect[v as usize] += 1.0 + (i / arity % 3) as f64;
    }
    let expect: Vec<T> = expect.into_iter().map(T::from_f64).collect();
    assert_eq!(&*b.data_ro().unwrap(), &expect[..], "{n} elements, {t}");
    (schedule(ctx), ctx.stats().last_dispatches)
}

/// The last force's schedules, as `explain()` lists them.
fn schedule(ctx: &Context) -> String {
    let explain = ctx.explain();
    explain
        .lines()
        .find_map(|l| l.trim().strip_prefix("schedules: "))
        .unwrap_or_else(|| panic!("no schedules line in\n{explain}"))
        .to_string()
}

/// `n` elements into `bins` bins, element e into bin `e % bins`.
fn bins<T: Real>(ctx: &Context, n: usize, bins: usize) -> (String, u64) {
    let values: Vec<u32> = (0..n).map(|e| (e % bins) as u32).collect();
    scatter::<T>(ctx, bins, 1, &values)
}

fn auto(min_colour_size: usize) -> Context {
    ctx_with(Config {
        strategy: Strategy::Auto,
        min_colour_size,
        ..Config::from_env().unwrap()
    })
}

/// `Config::min_colour_size`'s default (4096; `Config::default` reads no variables).
fn default_size() -> usize {
    Config::default().min_colour_size
}

/// The types `auto` colours on this adapter, each with what it runs instead of a colouring of
/// many small colours (None: nothing, the colouring stays).
fn coloured(ctx: &Context) -> Vec<(DType, Option<&'static str>)> {
    coloured_by(ctx)
        .into_iter()
        .map(|(t, i)| (t, i.map(|(name, _)| name)))
        .collect()
}

/// [`coloured`], with whether what runs instead is compare-and-swap (f64 under `atomics`
/// too), whose colours must be 4 times smaller.
fn coloured_by(ctx: &Context) -> Vec<(DType, Option<(&'static str, bool)>)> {
    let gpu = ctx.gpu();
    let cpu = gpu.info.device_type == wgpu::DeviceType::Cpu;
    let mut types = Vec::new();
    match (gpu.float_atomics(), cpu) {
        (true, true) => types.push((DType::F32, Some(("atomics", false)))),
        (false, _) => types.push((DType::F32, Some(("cas", true)))),
        // Native atomics from the start: `auto` never colours f32 here.
        (true, false) => {}
    }
    if gpu.f64() {
        types.push((DType::F64, gpu.int64_atomics().then_some(("atomics", true))));
    }
    types
}

/// `f` in f32 or f64.
fn typed(
    t: DType,
    f32: impl FnOnce() -> (String, u64),
    f64: impl FnOnce() -> (String, u64),
) -> (String, u64) {
    match t {
        DType::F32 => f32(),
        DType::F64 => f64(),
        DType::U32 | DType::I32 => unreachable!("only floats are coloured"),
    }
}

#[test]
fn auto_runs_a_map_onto_few_targets_with_atomics_and_says_why() {
    let ctx = auto(default_size());
    let kept = auto(0);
    for (t, instead) in coloured(&ctx) {
        // A target takes 1000 increments: at least 1000 colours of at most 20 positions,
        // counted without colouring. One dispatch instead of 1000.
        let (schedule, dispatches) = typed(
            t,
            || bins::<f32>(&ctx, 20_000, 20),
            || bins::<f64>(&ctx, 20_000, 20),
        );
        match instead {
            Some(name) => {
                assert_eq!(
                    schedule,
                    format!(
                        "{name} (auto: a colouring needs at least 1000 colours of at most 20 positions)"
                    ),
                    "{t}"
                );
                assert_eq!(dispatches, 1, "{t}");
            }
            None => assert_eq!(schedule, "global-colour (1000 colours)", "{t}"),
        }
        // min_colour_size 0 keeps every colouring: one dispatch per colour.
        let (schedule, dispatches) = typed(
            t,
            || bins::<f32>(&kept, 20_000, 20),
            || bins::<f64>(&kept, 20_000, 20),
        );
        assert_eq!(schedule, "global-colour (1000 colours)", "{t}");
        assert_eq!(dispatches, 1000, "{t}");
    }
}

#[test]
fn a_colouring_with_more_colours_than_any_target_takes_increments_is_counted() {
    // The 136 edges of the complete graph on 17 vertices, each incrementing its two ends:
    // every vertex takes 16 increments, but the edges need at least 17 colours (an odd
    // complete graph has no perfect matching). The bound leaves it to the colouring.
    let n = 17u32;
    let edges: Vec<u32> = (0..n)
        .flat_map(|a| (a + 1..n).flat_map(move |b| [a, b]))
        .collect();
    let ctx = auto(default_size());
    for (t, instead) in coloured(&ctx) {
        let (schedule, dispatches) = typed(
            t,
            || scatter::<f32>(&ctx, n as usize, 2, &edges),
            || scatter::<f64>(&ctx, n as usize, 2, &edges),
        );
        match instead {
            Some(name) => {
                let prefix = format!("{name} (auto: a colouring needs ");
                assert!(schedule.starts_with(&prefix), "{t}: {schedule}");
                assert!(!schedule.contains("at least"), "{t}: {schedule}");
                assert_eq!(dispatches, 1, "{t}");
            }
            None => assert!(schedule.starts_with("global-colour ("), "{t}: {schedule}"),
        }
    }
}

#[test]
fn auto_keeps_few_colours_and_colours_of_min_colour_size() {
    let ctx = auto(default_size());
    let four_hundred = auto(400);
    for (t, instead) in coloured_by(&ctx) {
        let Some((name, cas)) = instead else { continue };
        // 16 colours of 2 positions: few dispatches, kept; 17 are not.
        let (schedule, _) = typed(t, || bins::<f32>(&ctx, 32, 2), || bins::<f64>(&ctx, 32, 2));
        assert_eq!(schedule, "global-colour (16 colours)", "{t}");
        let (schedule, dispatches) =
            typed(t, || bins::<f32>(&ctx, 34, 2), || bins::<f64>(&ctx, 34, 2));
        assert_eq!(
            schedule,
            format!("{name} (auto: a colouring needs at least 17 colours of at most 2 positions)"),
            "{t}"
        );
        assert_eq!(dispatches, 1, "{t}");
        // With min_colour_size 400: 17 colours of exactly the limit are kept, of one fewer are
        // not. The limit is 400 for native atomics, 100 for compare-and-swap.
        let limit = if cas { 100 } else { 400 };
        let on = |n: usize, b: usize| {
            typed(
                t,
                || bins::<f32>(&four_hundred, n, b),
                || bins::<f64>(&four_hundred, n, b),
            )
            .0
        };
        assert_eq!(on(17 * limit, limit), "global-colour (17 colours)", "{t}");
        let less = limit - 1;
        assert_eq!(
            on(17 * less, less),
            format!(
                "{name} (auto: a colouring needs at least 17 colours of at most {less} positions)"
            ),
            "{t}"
        );
        // Between the two limits: native atomics take it, compare-and-swap does not.
        let between = on(17 * 200, 200);
        if cas {
            assert_eq!(between, "global-colour (17 colours)", "{t}");
        } else {
            assert!(between.starts_with("atomics (auto: "), "{t}: {between}");
        }
    }
}

#[test]
fn a_fixed_strategy_is_never_replaced() {
    let ctx = ctx_with(Config {
        strategy: Strategy::GlobalColour,
        ..Config::from_env().unwrap()
    });
    let (schedule, dispatches) = bins::<f32>(&ctx, 20_000, 20);
    assert_eq!(schedule, "global-colour (1000 colours)");
    assert_eq!(dispatches, 1000);
}

#[test]
fn a_switched_group_keeps_its_reduction_its_minimum_and_its_fused_loops() {
    // 4000 elements into 4 bins, f32: each loop adds its weight to its bin and takes the
    // least weight per bin; the first also sums every weight into a Global. The two loops
    // fuse into one group.
    let ctx = auto(default_size());
    let Some((_, Some(name))) = coloured(&ctx).into_iter().find(|(t, _)| *t == DType::F32) else {
        return; // `auto` never colours f32 on this adapter
    };
    let n = 4000;
    let elements = Set::new("elements", n);
    let bins = Set::new("bins", 4);
    let values: Vec<u32> = (0..n).map(|e| (e % 4) as u32).collect();
    let m = Map::new("bin", &elements, &bins, 1, &values).unwrap();
    let w: Vec<f32> = (0..n).map(|e| ((e * 7) % 11) as f32 - 5.0).collect();
    let wd = ctx.dat("w", &elements, 1, &w).unwrap();
    let sum = ctx.dat_zeros::<f32>("sum", &bins, 1).unwrap();
    let least = ctx.global_min::<f32>("least", 1).unwrap();
    let low = ctx.dat("low", &bins, 1, &[f32::MAX; 4]).unwrap();
    let total = ctx.global("total", &[0.0f32]).unwrap();
    let add = Kernel::new(
        "add_and_total",
        "fn add_and_total(w: ptr<function, array<f32, 1>>, b: ptr<function, array<f32, 1>>, \
         t: ptr<function, array<f32, 1>>) { (*b)[0] += (*w)[0]; (*t)[0] += (*w)[0]; }",
    );
    let lowest = Kernel::new(
        "lowest",
        "fn lowest(w: ptr<function, array<f32, 1>>, b: ptr<function, array<f32, 1>>, \
         g: ptr<function, array<f32, 1>>) { (*b)[0] = min((*b)[0], (*w)[0]); \
         (*g)[0] = min((*g)[0], (*w)[0]); }",
    );
    ctx.par_loop(
        &add,
        &elements,
        &[wd.read(), sum.at(&m, 0).inc(), total.inc()],
    )
    .unwrap();
    ctx.par_loop(
        &lowest,
        &elements,
        &[wd.read(), low.at(&m, 0).min(), least.min()],
    )
    .unwrap();
    // Both loops in one group, one dispatch and the reduction's finalize.
    ctx.flush().unwrap();
    let explain = ctx.explain();
    let schedule = schedule(&ctx);
    assert!(
        schedule.starts_with(&format!(
            "{name} (auto: a colouring needs at least 1000 colours"
        )),
        "{explain}"
    );
    assert!(explain.starts_with("2 loops in 1 groups"), "{explain}");
    assert_eq!(ctx.stats().last_dispatches, 2, "{explain}");
    let mut want_sum = [0.0f32; 4];
    let mut want_low = [f32::MAX; 4];
    for e in 0..n {
        want_sum[e % 4] += w[e];
        want_low[e % 4] = want_low[e % 4].min(w[e]);
    }
    assert_eq!(&*sum.data_ro().unwrap(), &want_sum[..]);
    assert_eq!(&*low.data_ro().unwrap(), &want_low[..]);
    assert_eq!(total.value().unwrap()[0], w.iter().sum::<f32>());
    assert_eq!(least.value().unwrap()[0], -5.0);
}

#[test]
fn the_size_is_judged_once_per_map_and_each_group_by_its_own_types() {
    // One map, loops in every type `auto` colours here, each in its own force, twice: the
    // size is judged once (from the most increments a bin takes: no colouring built), and
    // each group runs what its own types allow.
    let ctx = auto(default_size());
    let (n, nbins) = (20_000, 20);
    let elements = Set::new("elements", n);
    let bins = Set::new("bins", nbins);
    let values: Vec<u32> = (0..n).map(|e| (e % nbins) as u32).collect();
    let m = Map::new("bin", &elements, &bins, 1, &values).unwrap();
    let types = coloured(&ctx);
    for round in 0..2 {
        for (t, instead) in &types {
            let (schedule, dispatches) = typed(
                *t,
                || run::<f32>(&ctx, &elements, &bins, &m),
                || run::<f64>(&ctx, &elements, &bins, &m),
            );
            let why = "(auto: a colouring needs at least 1000 colours of at most 20 positions)";
            match instead {
                Some(name) => {
                    assert_eq!(schedule, format!("{name} {why}"), "{t}, round {round}");
                    assert_eq!(dispatches, 1, "{t}");
                }
                None => assert_eq!(schedule, "global-colour (1000 colours)", "{t}"),
            }
        }
    }
    // A colouring is built only for a type that keeps it.
    let kept = types.iter().filter(|(_, i)| i.is_none()).count() as u64;
    assert_eq!(ctx.stats().plans_built, kept.min(1));

    // Counted by colouring (the complete graph on 17 vertices): built, then dropped.
    let ctx = auto(default_size());
    let n = 17u32;
    let edges: Vec<u32> = (0..n)
        .flat_map(|a| (a + 1..n).flat_map(move |b| [a, b]))
        .collect();
    if let Some((DType::F32, Some(_))) = coloured(&ctx).first() {
        scatter::<f32>(&ctx, n as usize, 2, &edges);
        let s = ctx.stats();
        assert_eq!((s.plans_built, s.plans_cached), (1, 0));
    }
}

/// `b += w` through `m` over `elements`, with w = 1 + e % 3: the bins checked against plain
/// Rust; the schedule and the dispatches.
fn run<T: Real>(ctx: &Context, elements: &Set, bins: &Set, m: &Map) -> (String, u64) {
    let t = T::DTYPE;
    let name = format!("into_{t}");
    let k = Kernel::new(
        &name,
        format!(
            "fn {name}(w: ptr<function, array<{t}, 1>>, b: ptr<function, array<{t}, 1>>) {{ \
             (*b)[0] += (*w)[0]; }}"
        ),
    );
    let n = elements.size();
    let w: Vec<T> = (0..n).map(|e| T::from_f64(1.0 + (e % 3) as f64)).collect();
    let wd = ctx.dat("w", elements, 1, &w).unwrap();
    let b = ctx.dat_zeros::<T>("b", bins, 1).unwrap();
    ctx.par_loop(&k, elements, &[wd.read(), b.at(m, 0).inc()])
        .unwrap();
    let mut expect = vec![0.0f64; bins.size()];
    for (e, &v) in m.values().iter().enumerate() {
        expect[v as usize] += 1.0 + (e % 3) as f64;
    }
    let expect: Vec<T> = expect.into_iter().map(T::from_f64).collect();
    assert_eq!(&*b.data_ro().unwrap(), &expect[..], "{t}");
    (schedule(ctx), ctx.stats().last_dispatches)
}

#[test]
fn one_map_in_two_types_in_one_force_each_judged_by_what_it_runs() {
    // At min_colour_size 400, 17 colours of 200 positions are small for native atomics and
    // not for compare-and-swap. Unfused, in one force: the f64 group (compare-and-swap) keeps
    // the colouring and binds it; the f32 group (native) switches and leaves it in place. The
    // same in checking mode, whose records are not a compare-and-swap of the loop's.
    for check in [false, true] {
        let ctx = ctx_with(Config {
            strategy: Strategy::Auto,
            min_colour_size: 400,
            fusion: false,
            check,
            ..Config::from_env().unwrap()
        });
        let types = coloured_by(&ctx);
        let native = types.contains(&(DType::F32, Some(("atomics", false))));
        if !native || !types.contains(&(DType::F64, Some(("atomics", true)))) {
            return; // the adapter lacks native f32 atomics or f64 compare-and-swap
        }
        let (n, nbins) = (3400, 200);
        let elements = Set::new("elements", n);
        let bins = Set::new("bins", nbins);
        let values: Vec<u32> = (0..n).map(|e| (e % nbins) as u32).collect();
        let m = Map::new("bin", &elements, &bins, 1, &values).unwrap();
        let add = |t: &str| {
            Kernel::new(
                format!("add_{t}"),
                format!("fn add_{t}(b: ptr<function, array<{t}, 1>>) {{ (*b)[0] += {t}(1); }}"),
            )
        };
        let b64 = ctx.dat_zeros::<f64>("b64", &bins, 1).unwrap();
        let b32 = ctx.dat_zeros::<f32>("b32", &bins, 1).unwrap();
        ctx.par_loop(&add("f64"), &elements, &[b64.at(&m, 0).inc()])
            .unwrap();
        ctx.par_loop(&add("f32"), &elements, &[b32.at(&m, 0).inc()])
            .unwrap();
        ctx.flush().unwrap();
        let explain = ctx.explain();
        assert!(
            explain.contains(
                "schedules: global-colour (17 colours), atomics (auto: a colouring needs at \
                 least 17 colours of at most 200 positions)"
            ),
            "check {check}: {explain}"
        );
        assert_eq!(&*b64.data_ro().unwrap(), &[17.0f64; 200][..]);
        assert_eq!(&*b32.data_ro().unwrap(), &[17.0f32; 200][..]);
        let s = ctx.stats();
        assert_eq!((s.plans_built, s.plans_cached), (1, 1), "check {check}");
    }
}

#[test]
fn a_colouring_counted_by_a_later_group_that_switches_is_not_kept() {
    // The 153 edges of the complete graph on 18 vertices, each incrementing its two ends: a
    // vertex takes 17 increments, and greedy colouring needs more colours than that. At
    // min_colour_size 24, in one force: the f32 group (native) switches on the bound alone;
    // the f64 group (compare-and-swap, limit 6) must count the colouring, then switches too.
    // Nothing binds the colouring, so none is kept.
    let ctx = ctx_with(Config {
        strategy: Strategy::Auto,
        min_colour_size: 24,
        balance_colours: false,
        fusion: false,
        ..Config::from_env().unwrap()
    });
    let types = coloured_by(&ctx);
    let native = types.contains(&(DType::F32, Some(("atomics", false))));
    if !native || !types.contains(&(DType::F64, Some(("atomics", true)))) {
        return; // the adapter lacks native f32 atomics or f64 compare-and-swap
    }
    let n = 18u32;
    let edges: Vec<u32> = (0..n)
        .flat_map(|a| (a + 1..n).flat_map(move |b| [a, b]))
        .collect();
    let e = Set::new("edges", edges.len() / 2);
    let v = Set::new("vertices", n as usize);
    let m = Map::new("ends", &e, &v, 2, &edges).unwrap();
    let add = |t: &str| {
        Kernel::new(
            format!("ends_{t}"),
            format!(
                "fn ends_{t}(b: ptr<function, array<{t}, 2>>) {{ (*b)[0] += {t}(1); \
                 (*b)[1] += {t}(1); }}"
            ),
        )
    };
    let b32 = ctx.dat_zeros::<f32>("b32", &v, 1).unwrap();
    let b64 = ctx.dat_zeros::<f64>("b64", &v, 1).unwrap();
    ctx.par_loop(&add("f32"), &e, &[b32.all(&m).inc()]).unwrap();
    ctx.par_loop(&add("f64"), &e, &[b64.all(&m).inc()]).unwrap();
    ctx.flush().unwrap();
    let explain = ctx.explain();
    assert!(
        explain.contains(
            "schedules: atomics (auto: a colouring needs at least 17 colours of at most 9 \
             positions), atomics (auto: a colouring needs 31 colours of 4 positions)"
        ),
        "{explain}"
    );
    assert_eq!(&*b32.data_ro().unwrap(), &[17.0f32; 18][..]);
    assert_eq!(&*b64.data_ro().unwrap(), &[17.0f64; 18][..]);
    let s = ctx.stats();
    assert_eq!((s.plans_built, s.plans_cached), (1, 0));
}
