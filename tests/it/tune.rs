//! `Strategy::Tune`: every candidate gives the exact result while it is tried, every legal
//! strategy is tried and then the workgroup sizes for the fastest, the kept candidate is the
//! one with the lowest median, the choice goes to the cache file and a second Context starts
//! from it without trying anything; f64 groups try only what the adapter can run; a broken
//! cache file is tuned again. (Groups that reduce into Globals: `tune_caps.rs`.)

use crate::common;

use common::{ctx_with, random_map, small_ints};
use parloop::{Config, Context, Kernel, Set, Strategy, Tried, TuneCache, TuneReport, Variant};
use std::path::PathBuf;

const SCATTER: &str = "fn scatter(w: ptr<function, array<f32, 2>>, a: ptr<function, array<f32, 2>>, \
                       b: ptr<function, array<f32, 2>>) {\n    \
                       for (var c = 0; c < 2; c++) { (*a)[c] += (*w)[c]; (*b)[c] -= (*w)[c]; }\n}\n";

pub(crate) fn cache_file(name: &str) -> PathBuf {
    let p = std::env::temp_dir().join(format!(
        "parloop-tune-test-{}-{name}.json",
        std::process::id()
    ));
    let _ = std::fs::remove_file(&p);
    p
}

pub(crate) fn tuned(file: &PathBuf, reps: usize) -> Context {
    ctx_with(Config {
        strategy: Strategy::Tune,
        tune_cache: TuneCache::File(file.clone()),
        tune_reps: reps,
        workgroup_size: 64,
        ..Config::from_env().unwrap()
    })
}

#[test]
fn without_timestamps_tune_times_each_group_alone_with_the_wall_clock() {
    let ctx = ctx_with(Config {
        strategy: Strategy::Tune,
        tune_cache: TuneCache::Off,
        tune_reps: 1,
        gpu_timestamps: false,
        workgroup_size: 64,
        ..Config::from_env().unwrap()
    });
    let before = ctx.stats().submissions;
    let steps = run_scatter(&ctx, 100, chosen);
    let r = &ctx.tuning()[0];
    assert!(r.chosen.is_some(), "{r:?}");
    assert_eq!(r.timer, "wall clock");
    // Each trial is the group submitted alone, then the readback.
    assert_eq!(ctx.stats().submissions - before, 2 * steps as u64, "{r:?}");
    assert!(
        r.tried.iter().all(|t| t.ms.is_some_and(|ms| ms > 0.0)),
        "{r:?}"
    );
}

/// Runs the scatter (one force a step), checking the exact sum after each step, until `until`
/// holds or `max_steps` have run; returns the steps run.
fn run_scatter(ctx: &Context, max_steps: usize, until: impl Fn(&Context) -> bool) -> usize {
    let (n_edges, n_nodes) = (3000, 500);
    let edges = Set::new("edges", n_edges);
    let nodes = Set::new("nodes", n_nodes);
    let m = random_map("e2n", &edges, &nodes, 2, 5);
    let w = small_ints(n_edges * 2, 9);
    let mut once = vec![0f32; n_nodes * 2];
    for e in 0..n_edges {
        for c in 0..2 {
            once[m.values()[2 * e] as usize * 2 + c] += w[2 * e + c];
            once[m.values()[2 * e + 1] as usize * 2 + c] -= w[2 * e + c];
        }
    }
    let wd = ctx.dat("w", &edges, 2, &w).unwrap();
    let acc = ctx.dat_zeros::<f32>("acc", &nodes, 2).unwrap();
    let k = Kernel::new("scatter", SCATTER);
    for step in 1..=max_steps {
        ctx.par_loop(
            &k,
            &edges,
            &[wd.read(), acc.at(&m, 0).inc(), acc.at(&m, 1).inc()],
        )
        .unwrap();
        let want: Vec<f32> = once.iter().map(|v| v * step as f32).collect();
        assert_eq!(
            &*acc.data_ro().unwrap(),
            &want[..],
            "step {step}: {:?}",
            ctx.tuning()
        );
        if until(ctx) {
            return step;
        }
    }
    max_steps
}

/// The candidate with the lowest median among those not left out: the one `tune` must keep.
pub(crate) fn fastest(r: &TuneReport) -> &Tried {
    r.tried
        .iter()
        .filter(|t| t.left_out.is_none())
        .min_by(|a, b| a.ms.unwrap().total_cmp(&b.ms.unwrap()))
        .unwrap()
}

pub(crate) fn chosen(ctx: &Context) -> bool {
    ctx.tuning().iter().all(|r| r.chosen.is_some()) && !ctx.tuning().is_empty()
}

#[test]
fn tune_tries_every_strategy_keeps_the_fastest_and_a_second_run_starts_from_the_cache() {
    let file = cache_file("scatter");
    let reps = 2;
    let ctx = tuned(&file, reps);
    let steps = run_scatter(&ctx, 100, chosen);
    assert!(
        chosen(&ctx),
        "not tuned after 100 steps: {:?}",
        ctx.tuning()
    );
    let report = ctx.tuning();
    assert_eq!(report.len(), 1, "{report:?}");
    let r = &report[0];
    assert_eq!(r.group, "scatter");
    assert!(!r.from_cache);
    // Every legal strategy (all of them for f32: atomics only with float atomics).
    let strategies: Vec<&str> = Variant::available(ctx.gpu().float_atomics())
        .filter(|v| v.strategy != Strategy::Tune)
        .map(|v| v.name())
        .collect();
    for s in &strategies {
        let label = format!("{s}, workgroup 64");
        assert!(
            r.tried.iter().any(|t| t.candidate == label),
            "{label} not tried: {r:?}"
        );
    }
    // Then the workgroup sizes for the fastest strategy.
    let best_strategy = r.tried[..strategies.len()]
        .iter()
        .min_by(|a, b| a.ms.unwrap().total_cmp(&b.ms.unwrap()))
        .map(|t| t.candidate.split(',').next().unwrap().to_string())
        .unwrap();
    for wg in [128, 256] {
        let label = format!("{best_strategy}, workgroup {wg}");
        assert!(
            r.tried.iter().any(|t| t.candidate == label),
            "{label} not tried: {r:?}"
        );
    }
    assert_eq!(r.tried.len(), strategies.len() + 2, "{r:?}");
    // Each has a positive median of its timed executions (all `reps` of them, or fewer for a
    // candidate left out after running 4 times slower than the best median); the kept one has the
    // lowest.
    for t in &r.tried {
        let ok = t.timed >= 1 && t.timed <= reps && t.ms.is_some_and(|m| m > 0.0);
        assert!(ok, "{t:?}: {r:?}");
        // Fewer executions only for a candidate left out.
        assert!(t.timed == reps || t.left_out.is_some(), "{t:?}");
    }
    let trials: usize = r.tried.iter().map(|t| t.timed).sum();
    assert_eq!(
        steps,
        trials + 1,
        "one trial per step after a warm-up: {r:?}"
    );
    let fastest = fastest(r);
    assert_eq!(r.chosen.as_deref(), Some(fastest.candidate.as_str()));
    let explain = ctx.explain();
    eprintln!("{explain}");
    assert!(
        explain.contains("tune `scatter`")
            && explain.contains(&format!("chose {}", fastest.candidate)),
        "{explain}"
    );
    // The cache file holds the choice; a second Context starts from it and compiles one
    // pipeline for the group instead of one per candidate.
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    let choices = json["choices"].as_array().unwrap();
    assert_eq!(choices.len(), 1, "{json}");
    assert_eq!(
        format!(
            "{}, workgroup {}",
            choices[0]["strategy"].as_str().unwrap(),
            choices[0]["workgroup_size"]
        ),
        fastest.candidate
    );
    let compiled_first = ctx.stats().pipelines_compiled;
    assert!(compiled_first as usize >= r.tried.len(), "{compiled_first}");
    let again = tuned(&file, reps);
    run_scatter(&again, 3, |_| false);
    let r2 = again.tuning();
    assert_eq!(r2.len(), 1);
    assert!(r2[0].from_cache, "{r2:?}");
    assert_eq!(r2[0].chosen, r.chosen);
    assert_eq!(again.stats().pipelines_compiled, 1);
    assert!(
        again.explain().contains("from the cache"),
        "{}",
        again.explain()
    );
    let _ = std::fs::remove_file(&file);
}

#[test]
fn groups_without_float_races_are_not_tuned_and_a_broken_cache_is_tuned_again() {
    let file = cache_file("broken");
    std::fs::write(&file, "{ not json").unwrap();
    let ctx = tuned(&file, 1);
    // A direct loop: nothing races, nothing to tune.
    let s = Set::new("s", 100);
    let d = ctx.dat_zeros::<f32>("d", &s, 1).unwrap();
    let k = Kernel::new(
        "one",
        "fn one(d: ptr<function, array<f32, 1>>) { (*d)[0] = 1.0; }",
    );
    ctx.par_loop(&k, &s, &[d.write()]).unwrap();
    assert_eq!(&*d.data_ro().unwrap(), &vec![1.0f32; 100][..]);
    assert!(ctx.tuning().is_empty(), "{:?}", ctx.tuning());
    // The broken file is ignored and replaced once a choice is made.
    run_scatter(&ctx, 100, chosen);
    assert!(!ctx.tuning()[0].from_cache);
    let text = std::fs::read_to_string(&file).unwrap();
    assert!(text.contains("\"choices\""), "{text}");
    let e = ctx.load_tune_cache("[1, 2]").unwrap_err().to_string();
    assert!(
        e.contains("load_tune_cache") && e.contains("not a parloop tune cache"),
        "{e}"
    );
    // The page's path: the JSON restored into a Context without a file.
    let mem = ctx_with(Config {
        strategy: Strategy::Tune,
        tune_cache: TuneCache::Off,
        ..Config::from_env().unwrap()
    });
    mem.load_tune_cache(&ctx.tune_cache_json()).unwrap();
    run_scatter(&mem, 1, |_| true);
    assert!(mem.tuning()[0].from_cache, "{:?}", mem.tuning());
    let _ = std::fs::remove_file(&file);
}

#[test]
fn f64_increments_try_only_what_the_adapter_can_run() {
    let probe = common::ctx();
    if !probe.gpu().f64() {
        eprintln!("skipped: the adapter has no f64");
        return;
    }
    let file = cache_file("f64");
    let ctx = tuned(&file, 1);
    let (n_edges, n_nodes) = (3000, 400);
    let edges = Set::new("edges", n_edges);
    let nodes = Set::new("nodes", n_nodes);
    let m = random_map("e2n", &edges, &nodes, 2, 3);
    let w: Vec<f64> = (0..n_edges).map(|i| (i % 7) as f64 * 0.25).collect();
    let mut once = vec![0f64; n_nodes];
    for e in 0..n_edges {
        once[m.values()[2 * e] as usize] += w[e];
        once[m.values()[2 * e + 1] as usize] += w[e];
    }
    let wd = ctx.dat("w", &edges, 1, &w).unwrap();
    let acc = ctx.dat_zeros::<f64>("acc", &nodes, 1).unwrap();
    let k = Kernel::new(
        "scatter64",
        "fn scatter64(w: ptr<function, array<f64, 1>>, a: ptr<function, array<f64, 1>>, \
         b: ptr<function, array<f64, 1>>) { (*a)[0] += (*w)[0]; (*b)[0] += (*w)[0]; }",
    );
    for step in 1..=40 {
        ctx.par_loop(
            &k,
            &edges,
            &[wd.read(), acc.at(&m, 0).inc(), acc.at(&m, 1).inc()],
        )
        .unwrap();
        let got = acc.data_ro().unwrap();
        for (g, o) in got.iter().zip(&once) {
            assert_eq!(*g, o * step as f64, "step {step}");
        }
        if chosen(&ctx) {
            break;
        }
    }
    let r = &ctx.tuning()[0];
    assert!(r.chosen.is_some(), "{r:?}");
    // The compare-and-swap strategies only where the adapter has 64-bit atomics.
    let cas = ctx.gpu().int64_atomics();
    for t in &r.tried {
        let c = &t.candidate;
        assert!(
            c.starts_with("hierarchical")
                || c.starts_with("global-colour")
                || (cas
                    && ["cas", "atomics", "staged"]
                        .iter()
                        .any(|s| c.starts_with(s))),
            "{c} cannot take f64 increments: {r:?}"
        );
    }
    // hierarchical in its three stagings and global-colour (and cas and staged: `atomics`
    // generates the same compare-and-swap loop as `cas` for f64, so it is not tried again),
    // then two workgroup sizes.
    assert_eq!(r.tried.len(), if cas { 8 } else { 6 }, "{r:?}");
    let _ = std::fs::remove_file(&file);
}

/// A group over an empty subset is not tuned (it runs nothing to time), and does not keep a
/// wall-clock run splitting its regions; a group no candidate can run (Consts over the limit)
/// is an error, every time.
#[test]
fn empty_groups_are_not_tuned_and_a_group_nothing_can_run_is_an_error() {
    let ctx = ctx_with(Config {
        strategy: Strategy::Tune,
        tune_cache: TuneCache::Off,
        tune_reps: 1,
        gpu_timestamps: false,
        lazy: false,
        ..Config::from_env().unwrap()
    });
    let (e, n) = (Set::new("e", 3000), Set::new("n", 500));
    let m = random_map("m", &e, &n, 2, 5);
    let none = parloop::Subset::new("none", &e, &[]).unwrap();
    let a = ctx.dat_zeros::<f32>("a", &n, 1).unwrap();
    let bump = Kernel::new(
        "bump",
        "fn bump(x: ptr<function, array<f32, 1>>) { (*x)[0] += 1.0; }",
    );
    for _ in 0..40 {
        ctx.par_loop(&bump, &none, &[a.at(&m, 0).inc()]).unwrap();
        ctx.par_loop(&bump, &e, &[a.at(&m, 0).inc()]).unwrap();
    }
    let r = ctx.tuning();
    assert_eq!(r.len(), 1, "only the group with positions: {r:?}");
    assert!(r[0].chosen.is_some(), "{r:?}");
    let sum: f32 = a.data_ro().unwrap().iter().sum();
    assert_eq!(sum, 40.0 * 3000.0);
    // Consts over what one group carries: no candidate can run it; an error, every time.
    ctx.constant("tab", vec![1f32; 5000].as_slice()).unwrap();
    let k = Kernel::new(
        "k",
        "fn k(x: ptr<function, array<f32, 1>>) { (*x)[0] += tab[0]; }",
    );
    for _ in 0..2 {
        let e = ctx
            .par_loop(&k, &e, &[a.at(&m, 0).inc()])
            .unwrap_err()
            .to_string();
        assert!(e.contains("Consts"), "{e}");
    }
}

/// Cache entries this adapter cannot use (a workgroup size of 0 or over the adapter's
/// limit, a strategy it does not know, a time that is not a number) are ignored: the group
/// is tuned afresh, with exact results meanwhile.
#[test]
fn unusable_cache_entries_are_ignored() {
    let file = cache_file("unusable");
    let ctx = tuned(&file, 1);
    run_scatter(&ctx, 100, chosen);
    drop(ctx);
    let good: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    let bad: [(&str, serde_json::Value); 4] = [
        ("workgroup_size", 0.into()),
        ("workgroup_size", 1_000_000.into()),
        ("strategy", "fastest".into()),
        ("ms", serde_json::Value::Null),
    ];
    for (field, value) in bad {
        let mut json = good.clone();
        json["choices"][0][field] = value.clone();
        std::fs::write(&file, json.to_string()).unwrap();
        let ctx = tuned(&file, 1);
        run_scatter(&ctx, 100, chosen);
        let r = &ctx.tuning()[0];
        assert!(
            !r.from_cache && r.chosen.is_some(),
            "{field} = {value}: {r:?}"
        );
    }
    let _ = std::fs::remove_file(&file);
}

/// An error no candidate avoids (Consts grown over what a group carries) after the group has
/// chosen leaves the cache file as it was: the rejections that follow do not walk the saved
/// choice down to the slowest candidate.
#[test]
fn an_error_every_candidate_shares_leaves_the_cached_choice_alone() {
    let file = cache_file("cascade");
    let ctx = tuned(&file, 1);
    ctx.constant("tab", [1f32].as_slice()).unwrap();
    let (e, n) = (Set::new("e", 3000), Set::new("n", 500));
    let m = random_map("m", &e, &n, 2, 5);
    let a = ctx.dat_zeros::<f32>("a", &n, 1).unwrap();
    let k = Kernel::new(
        "k",
        "fn k(x: ptr<function, array<f32, 1>>) { (*x)[0] += tab[0]; }",
    );
    for _ in 0..100 {
        ctx.par_loop(&k, &e, &[a.at(&m, 0).inc()]).unwrap();
        let _ = a.data_ro().unwrap();
        if chosen(&ctx) {
            break;
        }
    }
    assert!(chosen(&ctx), "{:?}", ctx.tuning());
    let before = std::fs::read_to_string(&file).unwrap();
    ctx.constant("tab", vec![1f32; 5000].as_slice()).unwrap();
    ctx.par_loop(&k, &e, &[a.at(&m, 0).inc()]).unwrap();
    let err = a.data_ro().map(|_| ()).unwrap_err().to_string();
    assert!(err.contains("Consts"), "{err}");
    drop(ctx);
    assert_eq!(std::fs::read_to_string(&file).unwrap(), before);
    let _ = std::fs::remove_file(&file);
}
