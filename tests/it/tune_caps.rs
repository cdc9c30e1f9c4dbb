//! `Strategy::Tune` on groups that reduce into Globals: caps on their workgroups tried, kept in
//! the cache and reaching the dispatch; groups that pass one Dat twice kept apart in the cache.

use crate::common;
use crate::tune::{cache_file, chosen, fastest, tuned};

use common::{ctx_with, small_ints};
use parloop::{Config, Context, Kernel, Set, Strategy, TuneCache};

/// A dot product (nothing races; it reduces into a Global) tries caps on its workgroups: the
/// default first, then 16 and 4 times fewer and 4 times more (each giving another number of
/// workgroups), then the workgroup sizes for the fastest. Every execution gives the exact
/// sum; the kept cap goes to the cache, and a second Context runs with it. A group too small
/// for the caps to differ is not tuned.
#[test]
fn a_reducing_group_tries_caps_on_its_workgroups_and_the_cache_keeps_the_cap() {
    let file = cache_file("caps");
    let reps = 2;
    let ctx = tuned(&file, reps);
    // 2^18 positions need 1024 workgroups of 64 invocations taking 4 positions a turn.
    let n = 1 << 18;
    let set = Set::new("s", n);
    let a = small_ints(n, 4);
    let b = small_ints(n, 5);
    // Small integers: every order of additions gives the same f32 sum.
    let exact: f32 = a.iter().zip(&b).map(|(x, y)| x * y).sum();
    let k = Kernel::new(
        "dot",
        "fn dot(a: ptr<function, array<f32, 1>>, b: ptr<function, array<f32, 1>>, \
         s: ptr<function, array<f32, 1>>) { (*s)[0] += (*a)[0] * (*b)[0]; }",
    );
    let dot = |ctx: &Context| {
        let (ad, bd) = (
            ctx.dat("a", &set, 1, &a).unwrap(),
            ctx.dat("b", &set, 1, &b).unwrap(),
        );
        let s = ctx.global("s", &[0.0f32]).unwrap();
        ctx.par_loop(&k, &set, &[ad.read(), bd.read(), s.inc()])
            .unwrap();
        s.value().unwrap()[0]
    };
    let mut steps = 0;
    while !chosen(&ctx) && steps < 100 {
        assert_eq!(dot(&ctx), exact, "step {steps}: {:?}", ctx.tuning());
        steps += 1;
    }
    let r = &ctx.tuning()[0];
    eprintln!("{}", ctx.explain());
    assert_eq!(r.group, "dot");
    // The adapter's default comes first: 64 on a CPU adapter, 4096 on a GPU.
    let default: u32 = r.tried[0]
        .candidate
        .strip_prefix("auto, workgroup 64, at most ")
        .and_then(|s| s.strip_suffix(" workgroups"))
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("{r:?}"));
    assert!([64, 4096].contains(&default), "{r:?}");
    let caps: Vec<u32> = [default, default / 16, default / 4, default * 4]
        .into_iter()
        .filter(|&c| c < 1024 || c == default)
        .collect();
    let labels: Vec<&str> = r.tried.iter().map(|t| t.candidate.as_str()).collect();
    for (i, cap) in caps.iter().enumerate() {
        assert_eq!(
            labels[i],
            format!("auto, workgroup 64, at most {cap} workgroups"),
            "{r:?}"
        );
    }
    assert_eq!(
        labels.len(),
        caps.len() + 2,
        "then workgroups 128 and 256: {r:?}"
    );
    let fastest = fastest(r);
    assert_eq!(r.chosen.as_deref(), Some(fastest.candidate.as_str()));
    // "auto, workgroup W, at most C workgroups"
    let knobs: Vec<u32> = fastest
        .candidate
        .split(|c: char| !c.is_ascii_digit())
        .filter_map(|s| s.parse().ok())
        .collect();
    let [size, kept] = knobs[..] else {
        panic!("{fastest:?}")
    };
    // The chosen cap reaches the dispatch: a tuned dot runs as many workgroups as one with
    // that cap and size set by hand, and caps change the count as they should.
    let workgroups = |ctx: &Context| {
        let before = ctx.stats().workgroups;
        assert_eq!(dot(ctx), exact);
        ctx.stats().workgroups - before
    };
    let fixed = |cap: u32| {
        ctx_with(Config {
            reduction_workgroups: Some(cap),
            workgroup_size: size,
            strategy: Strategy::Auto,
            tune_cache: TuneCache::Off,
            ..Config::from_env().unwrap()
        })
    };
    let needed = (n as u64).div_ceil(4 * u64::from(size));
    assert_eq!(workgroups(&ctx), workgroups(&fixed(kept)), "{r:?}");
    assert_eq!(
        workgroups(&fixed(kept)) - workgroups(&fixed(1)),
        needed.min(u64::from(kept)) - 1
    );
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    assert_eq!(json["choices"][0]["reduction_workgroups"], kept, "{json}");
    // A second Context starts from the cache with that cap, and sums exactly.
    let again = tuned(&file, reps);
    assert_eq!(dot(&again), exact);
    let r2 = &again.tuning()[0];
    assert!(r2.from_cache, "{r2:?}");
    assert_eq!(r2.chosen, r.chosen);
    // A thousand positions need 4 workgroups: no cap changes that, nothing is tuned.
    let small = Set::new("small", 1000);
    let fresh = tuned(&cache_file("caps-small"), reps);
    let x = fresh.dat("x", &small, 1, &a[..1000]).unwrap();
    let s = fresh.global("s", &[0.0f32]).unwrap();
    fresh
        .par_loop(&k, &small, &[x.read(), x.read(), s.inc()])
        .unwrap();
    let squares: f32 = a[..1000].iter().map(|v| v * v).sum();
    assert_eq!(s.value().unwrap()[0], squares);
    assert!(fresh.tuning().is_empty(), "{:?}", fresh.tuning());
    let _ = std::fs::remove_file(&file);
}

/// `x . x` and `x . y` are one kernel over one set, but not one group to the cache: reading one
/// Dat twice halves the memory a position reads, so each keeps its own choice. The same holds
/// across the loops of a fused group (sums of x and x, against sums of x and y).
#[test]
fn a_kernel_reading_one_dat_twice_is_another_group_in_the_cache() {
    let file = cache_file("alias");
    let ctx = tuned(&file, 1);
    let n = 1 << 18;
    let set = Set::new("s", n);
    let a = small_ints(n, 6);
    let b = small_ints(n, 7);
    let (x, y) = (
        ctx.dat("x", &set, 1, &a).unwrap(),
        ctx.dat("y", &set, 1, &b).unwrap(),
    );
    let xy: f32 = a.iter().zip(&b).map(|(p, q)| p * q).sum();
    let xx: f32 = a.iter().map(|p| p * p).sum();
    let k = Kernel::new(
        "dot",
        "fn dot(a: ptr<function, array<f32, 1>>, b: ptr<function, array<f32, 1>>, \
         s: ptr<function, array<f32, 1>>) { (*s)[0] += (*a)[0] * (*b)[0]; }",
    );
    let sum = Kernel::new(
        "sum",
        "fn sum(a: ptr<function, array<f32, 1>>, s: ptr<function, array<f32, 1>>) { \
         (*s)[0] += (*a)[0]; }",
    );
    let (sx, sy): (f32, f32) = (a.iter().sum(), b.iter().sum());
    let global = |name: &str| ctx.global(name, &[0.0f32]).unwrap();
    for step in 0..60 {
        let (s1, s2) = (global("s1"), global("s2"));
        ctx.par_loop(&k, &set, &[x.read(), y.read(), s1.inc()])
            .unwrap();
        assert_eq!(s1.value().unwrap()[0], xy, "step {step}");
        ctx.par_loop(&k, &set, &[x.read(), x.read(), s2.inc()])
            .unwrap();
        assert_eq!(s2.value().unwrap()[0], xx, "step {step}");
        // Two loops fused into one group: their second reads x again, or y.
        for (second, expect) in [(&x, sx), (&y, sy)] {
            let (s3, s4) = (global("s3"), global("s4"));
            ctx.par_loop(&sum, &set, &[x.read(), s3.inc()]).unwrap();
            ctx.par_loop(&sum, &set, &[second.read(), s4.inc()])
                .unwrap();
            // Both loops in one force, fused.
            ctx.flush().unwrap();
            assert_eq!(s4.value().unwrap()[0], expect, "step {step}");
            assert_eq!(s3.value().unwrap()[0], sx, "step {step}");
        }
        if ctx.tuning().len() == 4 && chosen(&ctx) {
            break;
        }
    }
    assert!(
        chosen(&ctx) && ctx.tuning().len() == 4,
        "{:?}",
        ctx.tuning()
    );
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    let keys: Vec<&str> = json["choices"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["key"].as_str().unwrap())
        .collect();
    let mut distinct = keys.clone();
    distinct.sort_unstable();
    distinct.dedup();
    assert_eq!((keys.len(), distinct.len()), (4, 4), "{json}");
    let _ = std::fs::remove_file(&file);
}
