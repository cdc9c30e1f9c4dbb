//! The review's bugs, each reproduced as its report describes it: buffers of dropped Maps
//! reused by Dats, host kernels' WRITE semantics, workgroup sizes, sizes that overflow, and
//! caches that must stay bounded in a long-running program.

use crate::common;

use common::{ctx, ctx_with};
use parloop::*;

/// An arity-2 Map over 2048 edges, dropped, then a 4096-element f32 Dat written by a par_loop:
/// the Dat may get the Map's buffer from the pool, and must work.
#[test]
fn a_dropped_maps_buffer_serves_a_new_dat() {
    let ctx = ctx();
    let nodes = Set::new("nodes", 4096);
    let edges = Set::new("edges", 2048);
    let vals: Vec<u32> = (0..4096).map(|i| (i * 7 % 4096) as u32).collect();
    let m = Map::new("m", &edges, &nodes, 2, &vals).unwrap();
    let x = ctx.dat("x", &nodes, 1, &vec![1.0f32; 4096]).unwrap();
    let count = ctx.dat_zeros::<f32>("count", &nodes, 1).unwrap();
    let k = Kernel::new(
        "touch",
        "fn touch(x: ptr<function, array<f32, 2>>, c: ptr<function, array<f32, 2>>) {
            (*c)[0] = (*x)[0]; (*c)[1] = (*x)[1];
        }",
    );
    ctx.par_loop(&k, &edges, &[x.all(&m).read(), count.all(&m).inc()])
        .unwrap();
    let want: f32 = 4096.0;
    assert_eq!(count.data_ro().unwrap().iter().sum::<f32>(), want);
    drop(m);
    let y = ctx.dat("y", &nodes, 1, &vec![2.0f32; 4096]).unwrap();
    let w = Kernel::new(
        "twice",
        "fn twice(y: ptr<function, array<f32, 1>>) { (*y)[0] = 2.0 * (*y)[0]; }",
    );
    ctx.par_loop(&w, &nodes, &[y.rw()]).unwrap();
    assert!(y.data_ro().unwrap().iter().all(|&v| v == 4.0));
}

/// A host kernel sees zeros in a WRITE argument, as a GPU kernel does.
#[test]
fn host_kernels_see_zeros_in_write_arguments() {
    let ctx = ctx();
    let s = Set::new("s", 10);
    let a = ctx.dat("a", &s, 1, &[5.0f32; 10]).unwrap();
    let seen = std::rc::Rc::new(std::cell::Cell::new(0.0f32));
    let seen2 = seen.clone();
    let k = Kernel::host("h", move |h: &mut HostArgs| {
        seen2.set(seen2.get() + h.get::<f32>(0)[0]);
        h.get_mut::<f32>(0)[0] = 1.0;
    });
    ctx.par_loop(&k, &s, &[a.write()]).unwrap();
    assert_eq!(&*a.data_ro().unwrap(), &[1.0; 10]);
    assert_eq!(seen.get(), 0.0);
}

/// Global reductions with workgroup sizes that are not powers of two keep every partial sum;
/// sizes the adapter cannot run are refused when the Context is made.
#[test]
fn any_workgroup_size_reduces_exactly_and_bad_ones_are_refused() {
    for wg in [1u32, 7, 48, 96, 100] {
        let ctx = ctx_with(Config {
            workgroup_size: wg,
            ..Config::from_env().unwrap()
        });
        let s = Set::new("s", 1000);
        let x: Vec<f32> = (0..1000).map(|i| (i % 10) as f32).collect();
        let d = ctx.dat("x", &s, 1, &x).unwrap();
        let total = ctx.global("total", &[0.0f32]).unwrap();
        let k = Kernel::new(
            "sum",
            "fn sum(x: ptr<function, array<f32, 1>>, t: ptr<function, array<f32, 1>>) { (*t)[0] = (*x)[0]; }",
        );
        ctx.par_loop(&k, &s, &[d.read(), total.inc()]).unwrap();
        assert_eq!(total.value().unwrap(), vec![4500.0], "workgroup size {wg}");
    }
    for wg in [0u32, 1 << 20] {
        let e = Context::with_config(Config {
            workgroup_size: wg,
            ..Config::from_env().unwrap()
        })
        .err()
        .unwrap()
        .to_string();
        assert!(
            e.contains(&format!("workgroup_size is {wg}")) && e.contains("1 to"),
            "{e}"
        );
    }
}

/// Sizes whose value counts overflow are errors, not panics.
#[test]
fn sizes_that_overflow_are_errors() {
    let ctx = ctx();
    let huge = Set::new("huge", usize::MAX / 2);
    let e = ctx
        .dat_zeros::<f32>("d", &huge, 3)
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("`huge`") && e.contains("overflow"), "{e}");
    let small = Set::new("small", 4);
    let e = Map::new("m", &huge, &small, 3, &[])
        .unwrap_err()
        .to_string();
    assert!(e.contains("arity 3 overflow"), "{e}");
    let sections = Sections {
        core: usize::MAX,
        owned: usize::MAX,
        ..Default::default()
    };
    let big = Set::with_sections("big", sections);
    assert!(ctx.dat_zeros::<f32>("d", &big, 1).is_err());
}

/// A long-running program: 10,000 forces, each with a new Map, a new Dat and a new value of a
/// Const. Pipelines are compiled once (Consts travel as uniforms), plans and bind groups of
/// dropped Maps are released, and device memory stays where it was after the first forces.
#[test]
fn caches_and_device_memory_stay_bounded_over_10000_forces() {
    let ctx = ctx_with(Config {
        strategy: Strategy::GlobalColour, // a plan per Map
        ..Config::from_env().unwrap()
    });
    let nodes = Set::new("nodes", 64);
    let edges = Set::new("edges", 96);
    let k = Kernel::new(
        "spread",
        "fn spread(e: ptr<function, array<f32, 2>>) { (*e)[0] = t; (*e)[1] = 2.0 * t; }",
    );
    let mut steady = None;
    for i in 0..10_000u32 {
        ctx.constant("t", i as f32).unwrap();
        let vals: Vec<u32> = (0..192).map(|j| (j * 7 + i) % 64).collect();
        let m = Map::new("m", &edges, &nodes, 2, &vals).unwrap();
        let d = ctx.dat_zeros::<f32>("d", &nodes, 1).unwrap();
        ctx.par_loop(&k, &edges, &[d.all(&m).inc()]).unwrap();
        let total: f32 = d.data_ro().unwrap().iter().sum();
        assert_eq!(total, 96.0 * 3.0 * i as f32, "force {i}");
        if i == 100 {
            steady = Some(ctx.stats());
        }
    }
    let (s, at100) = (ctx.stats(), steady.unwrap());
    eprintln!(
        "after 10,000 forces: {} pipelines compiled, {} cached, {} plans cached, {} bind groups, \
         {} device bytes (after 100 forces: {})",
        s.pipelines_compiled,
        s.pipelines_cached,
        s.plans_cached,
        s.bind_groups_cached,
        s.device_bytes,
        at100.device_bytes
    );
    assert_eq!(s.pipelines_compiled, 1);
    assert!(s.plans_cached <= 1, "{} plans", s.plans_cached);
    assert!(
        s.bind_groups_cached <= 4,
        "{} bind groups",
        s.bind_groups_cached
    );
    assert_eq!(s.device_bytes, at100.device_bytes);
}

/// One Dat incremented through all of an arity-2 map and through index 2 of an arity-3 map,
/// in hierarchical plans of 16-element blocks: a block stages only the indices it increments
/// through, and its stage-out (every staged target) is what block colouring keeps apart.
/// Before the fix the arity-3 map's unused indices were staged too and written back (plus
/// zero) outside the block's footprint: 10 and 15 of 300 runs lost increments on lavapipe.
#[test]
fn a_dat_incremented_through_two_staged_maps() {
    let (ncells, nnodes) = (1218, 596);
    let cells = Set::new("cells", ncells);
    let nodes = Set::new("nodes", nnodes);
    let a = common::random_map("a", &cells, &nodes, 2, 1);
    let b = common::random_map("b", &cells, &nodes, 3, 2);
    let mut want = vec![0f32; nnodes * 3];
    for e in 0..ncells {
        for t in [a.values()[e * 2], a.values()[e * 2 + 1]] {
            (0..3).for_each(|c| want[t as usize * 3 + c] += 1.0);
        }
        (0..3).for_each(|c| want[b.values()[e * 3 + 2] as usize * 3 + c] += 2.0);
    }
    let k = Kernel::new(
        "k",
        "fn k(x: ptr<function, array<f32, 6>>, y: ptr<function, array<f32, 3>>) {
            for (var i = 0; i < 6; i++) { (*x)[i] = 1.0; }
            for (var i = 0; i < 3; i++) { (*y)[i] = 2.0; }
        }",
    );
    for staging in [Staging::Inc, Staging::All] {
        let mut config = Config::from_env().unwrap();
        config.strategy = Strategy::Hierarchical;
        config.staging = staging;
        config.block_size = Some(16);
        config.lazy = false;
        let ctx = ctx_with(config);
        for run in 0..150 {
            let d = ctx.dat_zeros::<f32>("d", &nodes, 3).unwrap();
            ctx.par_loop(&k, &cells, &[d.all(&a).inc(), d.at(&b, 2).inc()])
                .unwrap();
            let got = d.data_ro().unwrap();
            let wrong = got.iter().zip(&want).filter(|(g, w)| g != w).count();
            assert_eq!(wrong, 0, "{staging:?}, run {run}: {wrong} values differ");
        }
    }
}

/// `hierarchical` applies every increment at workgroup sizes that are multiples of 8 but not
/// powers of two (rounds of a block run across barriers), and refuses the others, naming the
/// par_loop: llvmpipe lost every increment at sizes such as 100.
#[test]
fn hierarchical_takes_multiples_of_8_and_refuses_other_workgroup_sizes() {
    let n = 2000;
    let run = |wg: u32, block: Option<usize>| {
        let ctx = ctx_with(Config {
            strategy: Strategy::Hierarchical,
            workgroup_size: wg,
            block_size: block,
            ..Config::from_env().unwrap()
        });
        let edges = Set::new("edges", n);
        let nodes = Set::new("nodes", n + 1);
        let m: Vec<u32> = (0..n as u32).flat_map(|e| [e, e + 1]).collect();
        let en = Map::new("en", &edges, &nodes, 2, &m).unwrap();
        let u = ctx.dat_zeros::<f32>("u", &nodes, 1).unwrap();
        let k = Kernel::new(
            "both_ends",
            "fn both_ends(a: ptr<function, array<f32, 2>>) { (*a)[0] += 1.0; (*a)[1] += 1.0; }",
        );
        // A workgroup size the strategy cannot take is refused when the loop is recorded.
        ctx.par_loop(&k, &edges, &[u.all(&en).inc()])?;
        u.data_ro().map(|v| v.to_vec())
    };
    for (wg, block) in [(24, None), (40, Some(400)), (8, Some(64))] {
        let v = run(wg, block).unwrap();
        for (i, &x) in v.iter().enumerate() {
            let want = if i == 0 || i == n { 1.0 } else { 2.0 };
            assert_eq!(
                x, want,
                "node {i}, workgroup size {wg}, block size {block:?}"
            );
        }
    }
    let e = run(100, None).unwrap_err();
    let Error::ParLoop { par_loops, .. } = &e else {
        panic!("{e:?}")
    };
    assert_eq!(par_loops[0].kernel, "both_ends");
    assert!(e.to_string().contains("multiple of 8"), "{e}");
    // A host kernel has no schedule: the same loop on the host runs under that size.
    let ctx = ctx_with(Config {
        strategy: Strategy::Hierarchical,
        workgroup_size: 100,
        ..Config::from_env().unwrap()
    });
    let edges = Set::new("edges", 3);
    let nodes = Set::new("nodes", 4);
    let en = Map::new("en", &edges, &nodes, 2, &[0, 1, 1, 2, 2, 3]).unwrap();
    let u = ctx.dat_zeros::<f32>("u", &nodes, 1).unwrap();
    let k = Kernel::host("both_ends_host", |h: &mut HostArgs| {
        for v in h.get_mut::<f32>(0) {
            *v += 1.0;
        }
    });
    ctx.par_loop(&k, &edges, &[u.all(&en).inc()]).unwrap();
    assert_eq!(&*u.data_ro().unwrap(), &[1.0, 2.0, 2.0, 1.0]);
}

/// A force that fails while it encodes (a loop's Consts over the limit) still clears the
/// never-written Global it had bound: a zero Global read by the next loop holds 0, not what
/// its pooled buffer held before (a dot product's 4).
#[test]
fn a_failed_force_still_clears_the_zero_global_it_bound() {
    let ctx = common::ctx();
    let s = Set::new("s", 4);
    let d = ctx.dat("d", &s, 1, &[1f32; 4]).unwrap();
    assert_eq!(ctx.dot(&d, &d).unwrap().value().unwrap(), [4.0]);
    ctx.constant("big", &vec![0f32; 5000][..]).unwrap();
    let eps = ctx.global("eps", &[0f32]).unwrap();
    let sig = "(e: ptr<function, array<f32, 1>>, d: ptr<function, array<f32, 1>>)";
    let big = Kernel::new(
        "with_big",
        format!("fn with_big{sig} {{ (*d)[0] = (*e)[0] + big[0]; }}"),
    );
    ctx.par_loop(&big, &s, &[eps.read(), d.write()]).unwrap();
    let e = d.data_ro().map(|v| v.to_vec()).unwrap_err().to_string();
    assert!(e.contains("Consts hold"), "{e}");
    let copy = Kernel::new(
        "copy_eps",
        format!("fn copy_eps{sig} {{ (*d)[0] = (*e)[0]; }}"),
    );
    ctx.par_loop(&copy, &s, &[eps.read(), d.write()]).unwrap();
    assert_eq!(d.data_ro().unwrap().to_vec(), [0.0; 4]);
}
