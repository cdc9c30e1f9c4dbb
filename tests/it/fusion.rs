//! Fused loop groups: fused and unfused execution give identical results on nasty random traces;
//! host and GPU loops share a force with the fewest regions and copies; temporaries used within
//! one group get no buffer; a snapshot of a fused shader.

use crate::common;

use common::{ctx, ctx_with, random_map, strategies};
use parloop::Strategy;
use parloop::util::Rng;
use parloop::*;
use proptest::prelude::*;

/// A random program over cells, nodes and a subset of cells, joined by maps both ways.
/// Values stay small integers (every write is clamped), so any order of racing increments
/// gives the same bits: fused and unfused results must be identical, whatever the strategy.
fn program(ctx: &Context, seed: u64) -> Vec<Vec<f32>> {
    let mut rng = Rng::new(seed);
    let cells = Set::new("cells", 211);
    let nodes = Set::new("nodes", 131);
    let half: Vec<u32> = (0..211).filter(|_| rng.chance(0.5)).collect();
    let sub = Subset::new("half", &cells, &half).unwrap();
    let c2n = random_map("c2n", &cells, &nodes, 3, seed ^ 1);
    let n2c = random_map("n2c", &nodes, &cells, 1, seed ^ 2);
    let mut dats: Vec<Dat<f32>> = Vec::new();
    for i in 0..4 {
        let set = if i < 2 { &cells } else { &nodes };
        let dim = 1 + i % 2;
        let init: Vec<f32> = (0..set.size() * dim)
            .map(|e| ((e * 7 + i) % 9) as f32 - 4.0)
            .collect();
        dats.push(ctx.dat(&format!("d{i}"), set, dim, &init).unwrap());
    }
    let globals = [
        ctx.global("g0", &[0.0f32]).unwrap(),
        ctx.global("g1", &[1.0f32, -1.0]).unwrap(),
    ];
    let mut out = vec![Vec::new(); 6];
    let read = |i: usize, out: &mut Vec<Vec<f32>>| {
        out[i] = if i < 4 {
            dats[i].data_ro().unwrap().to_vec()
        } else {
            globals[i - 4].value().unwrap()
        };
    };
    let nloops = 2 + rng.below(11);
    let mid_read = rng.below(nloops);
    for l in 0..nloops {
        let space: IterSpace = match rng.below(3) {
            0 => (&cells).into(),
            1 => (&nodes).into(),
            _ => (&sub).into(),
        };
        let over_cells = space.set().name() == "cells";
        let mut args: Vec<Arg> = Vec::new();
        for (i, d) in dats.iter().enumerate() {
            if !rng.chance(0.55) {
                continue;
            }
            let on_cells = i < 2;
            let pick = |rng: &mut Rng, modes: &[Access]| modes[rng.below(modes.len())];
            args.push(if on_cells == over_cells {
                d.arg(pick(&mut rng, &Access::ALL))
            } else if over_cells {
                let modes = [Access::Read, Access::Inc, Access::Min, Access::Max];
                let a = pick(&mut rng, &modes);
                if rng.chance(0.5) {
                    d.all(&c2n).arg(a)
                } else {
                    d.at(&c2n, rng.below(3)).arg(a)
                }
            } else {
                d.at(&n2c, 0)
                    .arg(pick(&mut rng, &[Access::Read, Access::Inc]))
            });
        }
        for g in &globals {
            if rng.chance(0.3) {
                args.push(
                    g.arg([Access::Read, Access::Inc, Access::Min, Access::Max][rng.below(4)]),
                );
            }
        }
        if args.is_empty() {
            continue;
        }
        let widths: Vec<usize> = args
            .iter()
            .map(|a| {
                let d = format!("{a:?}");
                let dim = if d.contains("`d1`") || d.contains("`d3`") || d.contains("`g1`") {
                    2
                } else {
                    1
                };
                if d.contains("through all of") {
                    3 * dim
                } else {
                    dim
                }
            })
            .collect();
        let params: Vec<String> = widths
            .iter()
            .enumerate()
            .map(|(i, w)| format!("a{i}: ptr<function, array<f32, {w}>>"))
            .collect();
        let mut body = String::from("var s = 0.0;\n");
        for (i, (a, w)) in args.iter().zip(&widths).enumerate() {
            let d = format!("{a:?}");
            if d.ends_with("READ") || d.ends_with("RW") {
                body += &format!("for (var k = 0; k < {w}; k++) {{ s += (*a{i})[k]; }}\n");
            }
        }
        body += &format!("s = clamp(s + {}.0, -40.0, 40.0);\n", l % 5);
        for (i, (a, w)) in args.iter().zip(&widths).enumerate() {
            let d = format!("{a:?}");
            let stmt = if d.ends_with("READ") {
                "(*a)[k] = 99.0;" // writing a READ argument must not reach memory
            } else if d.ends_with("WRITE") {
                "(*a)[k] = (*a)[k] + s;" // a WRITE argument starts at zero
            } else if d.ends_with("RW") {
                "(*a)[k] = clamp((*a)[k] - s, -40.0, 40.0);"
            } else if d.ends_with("INC") {
                "(*a)[k] += clamp(s, -3.0, 3.0);"
            } else if d.ends_with("MIN") {
                "(*a)[k] = min((*a)[k], s);"
            } else {
                "(*a)[k] = max((*a)[k], s);"
            };
            body += &format!(
                "for (var k = 0; k < {w}; k++) {{ {} }}\n",
                stmt.replace("(*a)", &format!("(*a{i})"))
            );
        }
        let k = Kernel::new(
            format!("k{l}"),
            format!("fn k{l}({}) {{\n{body}}}\n", params.join(", ")),
        );
        match ctx.par_loop(&k, space, &args) {
            Ok(()) => {}
            // The generator may pass one Dat twice with different modes: that is refused.
            Err(Error::ParLoop { message, .. }) if message.contains("uses the same") => {}
            Err(e) => panic!("{e}"),
        }
        if l == mid_read {
            let r = rng.below(6);
            read(r, &mut out);
        }
    }
    let mut order: Vec<usize> = (0..6).collect();
    for i in (1..6).rev() {
        order.swap(i, rng.below(i + 1));
    }
    for i in order {
        read(i, &mut out);
    }
    out
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(20))]
    #[test]
    fn fused_and_unfused_give_identical_results(
        seed in any::<u64>(),
        which in 0usize..parloop::Variant::ALL.len(),
    ) {
        let probe = ctx();
        let all = strategies(&probe);
        let (strategy, staging) = all[which % all.len()];
        let config = |fusion| Config { fusion, strategy, staging, ..Config::from_env().unwrap() };
        let (fused, plain) = (ctx_with(config(true)), ctx_with(config(false)));
        let a = program(&fused, seed);
        let b = program(&plain, seed);
        prop_assert_eq!(&a, &b, "strategy {:?} {:?}\n{}", strategy, staging, fused.explain());
    }
}

/// Host-only and GPU kernels in one trace: the fewest regions (GPU, host, GPU), and only the
/// Dats that cross a region boundary are copied.
#[test]
fn host_and_gpu_loops_share_a_force() {
    let ctx = ctx();
    let cells = Set::new("cells", 500);
    let xs: Vec<f32> = (0..500).map(|i| i as f32).collect();
    let x = ctx.dat("x", &cells, 1, &xs).unwrap();
    let a = ctx.dat_zeros::<f32>("a", &cells, 1).unwrap();
    let b = ctx.dat_zeros::<f32>("b", &cells, 1).unwrap();
    let c = ctx.dat_zeros::<f32>("c", &cells, 1).unwrap();
    let d = ctx.dat_zeros::<f32>("d", &cells, 1).unwrap();
    let e = ctx.dat_zeros::<f32>("e", &cells, 1).unwrap();
    let gpu = |name: &str, body: &str| {
        Kernel::new(
            name,
            format!(
                "fn {name}(i: ptr<function, array<f32, 1>>, o: ptr<function, array<f32, 1>>) {{ {body} }}"
            ),
        )
    };
    let host = |name: &str, f: fn(f32) -> f32| {
        Kernel::host(name, move |h: &mut HostArgs| {
            let v = f(h.get::<f32>(0)[0]);
            h.get_mut::<f32>(1)[0] = v;
        })
    };
    ctx.par_loop(
        &gpu("double", "(*o)[0] = (*i)[0] * 2.0;"),
        &cells,
        &[x.read(), a.write()],
    )
    .unwrap();
    ctx.par_loop(
        &host("plus_one", |v| v + 1.0),
        &cells,
        &[a.read(), b.write()],
    )
    .unwrap();
    ctx.par_loop(
        &gpu("triple", "(*o)[0] = (*i)[0] * 3.0;"),
        &cells,
        &[b.read(), c.write()],
    )
    .unwrap();
    ctx.par_loop(
        &gpu("plus_five", "(*o)[0] = (*i)[0] + 5.0;"),
        &cells,
        &[x.read(), d.write()],
    )
    .unwrap();
    ctx.par_loop(
        &host("minus_one", |v| v - 1.0),
        &cells,
        &[x.read(), e.write()],
    )
    .unwrap();
    ctx.flush().unwrap();
    let explain = ctx.explain();
    assert!(explain.starts_with("5 loops in 3 groups"), "{explain}");
    let st = ctx.stats();
    assert_eq!(
        st.submissions, 2,
        "two GPU regions around one host region: {st:?}\n{explain}"
    );
    assert_eq!(st.host_loops, 2);
    assert_eq!(st.readbacks, 1, "only `a` crosses from the GPU to the host");
    assert_eq!(st.uploads, 2, "`x` at first use, then `b` from the host");
    for (i, &v) in xs.iter().enumerate() {
        assert_eq!(c.data_ro().unwrap()[i], (v * 2.0 + 1.0) * 3.0);
        assert_eq!(d.data_ro().unwrap()[i], v + 5.0);
        assert_eq!(e.data_ro().unwrap()[i], v - 1.0);
    }
}

/// A temporary written and read inside one group, then dropped, never gets a buffer.
#[test]
fn temporaries_inside_one_group_get_no_buffer() {
    let run = |fusion: bool| {
        let ctx = ctx_with(Config {
            fusion,
            ..Config::from_env().unwrap()
        });
        let s = Set::new("s", 4096);
        let x = ctx.dat("x", &s, 1, &vec![1.5f32; 4096]).unwrap();
        let y = ctx.dat_zeros::<f32>("y", &s, 1).unwrap();
        {
            let t = ctx.dat_zeros::<f32>("t", &s, 1).unwrap();
            let k1 = Kernel::new(
                "mk",
                "fn mk(x: ptr<function, array<f32, 1>>, t: ptr<function, array<f32, 1>>) { (*t)[0] = (*x)[0] * 4.0; }",
            );
            let k2 = Kernel::new(
                "use_t",
                "fn use_t(t: ptr<function, array<f32, 1>>, y: ptr<function, array<f32, 1>>) { (*y)[0] = (*t)[0] + 1.0; }",
            );
            ctx.par_loop(&k1, &s, &[x.read(), t.write()]).unwrap();
            ctx.par_loop(&k2, &s, &[t.read(), y.write()]).unwrap();
        }
        assert_eq!(&*y.data_ro().unwrap(), &vec![7.0f32; 4096][..]);
        (ctx.stats(), ctx.explain())
    };
    let (fused, explain) = run(true);
    let (plain, _) = run(false);
    assert!(
        explain.contains("ephemeral") && explain.contains("`t`"),
        "{explain}"
    );
    assert_eq!(fused.dispatches, 1);
    assert_eq!(plain.dispatches, 2);
    assert_eq!(plain.data_bytes - fused.data_bytes, 4096 * 4, "t's buffer");
}

/// A kernel made again at every step (as solvers and many programs do) is the same kernel to
/// fusion: the steps after the first reuse the first step's grouping. A kernel of the same
/// name with another source is another kernel: it gets its own grouping and its own result.
#[test]
fn kernels_made_again_reuse_the_grouping() {
    let ctx = ctx();
    let n = 1000;
    let s = Set::new("s", n);
    let x = ctx.dat("x", &s, 1, &vec![1.0f32; n]).unwrap();
    let y = ctx.dat_zeros::<f32>("y", &s, 1).unwrap();
    let body = |f: &str| {
        format!(
            "fn step(x: ptr<function, array<f32, 1>>, y: ptr<function, array<f32, 1>>) {{ (*y)[0] = (*y)[0] + {f} * (*x)[0]; }}"
        )
    };
    let twice = |src: &str| {
        // A fresh Kernel for each par_loop: two loops in one group, every step.
        for _ in 0..2 {
            let k = Kernel::new("step", src.to_string());
            ctx.par_loop(&k, &s, &[x.read(), y.rw()]).unwrap();
        }
        y.data_ro().unwrap()[n - 1]
    };
    let before = ctx.stats();
    let mut model = 0.0f32;
    for _ in 0..5 {
        model += 2.0;
        assert_eq!(twice(&body("1.0")), model);
    }
    let after = ctx.stats();
    assert_eq!(
        after.groupings - before.groupings,
        1,
        "one grouping for 5 equal steps"
    );
    assert_eq!(
        after.dispatches - before.dispatches,
        5,
        "the two loops of a step fused"
    );
    // Same name, other source: a new grouping, and its own arithmetic.
    model += 6.0;
    assert_eq!(twice(&body("3.0")), model);
    assert_eq!(ctx.stats().groupings - after.groupings, 1);
}

/// A force of the shape of an earlier one (its grouping cached) over other data: `explain()`
/// names this force's data, not the earlier force's.
#[test]
fn explain_names_this_forces_data() {
    let ctx = ctx();
    let s = Set::new("s", 8);
    let a = ctx.dat("a", &s, 1, &[1.0f32; 8]).unwrap();
    let b = ctx.dat_zeros::<f32>("b", &s, 1).unwrap();
    let before = ctx.stats();
    for name in ["first_tmp", "second_tmp"] {
        let t = ctx.dat_zeros::<f32>(name, &s, 1).unwrap();
        ctx.copy(&a, &t).unwrap();
        ctx.copy(&t, &b).unwrap();
        drop(t);
        assert_eq!(&*b.data_ro().unwrap(), &[1.0f32; 8][..]);
        let explain = ctx.explain();
        assert!(explain.contains(&format!("`{name}`")), "{explain}");
    }
    assert_eq!(
        ctx.stats().groupings - before.groupings,
        1,
        "the second force hit the cache"
    );
}

/// Cuts are explained: which Dat, which access.
#[test]
fn explain_names_the_cuts() {
    let ctx = ctx();
    let cells = Set::new("cells", 100);
    let nodes = Set::new("nodes", 60);
    let m = random_map("c2n", &cells, &nodes, 2, 3);
    let w = ctx.dat("w", &cells, 1, &[1.0f32; 100]).unwrap();
    let acc = ctx.dat_zeros::<f32>("acc", &nodes, 1).unwrap();
    let out = ctx.dat_zeros::<f32>("out", &nodes, 1).unwrap();
    let k1 = Kernel::new(
        "spread",
        "fn spread(w: ptr<function, array<f32, 1>>, a: ptr<function, array<f32, 2>>) { (*a)[0] += (*w)[0]; (*a)[1] += (*w)[0]; }",
    );
    let k2 = Kernel::new(
        "scale",
        "fn scale(a: ptr<function, array<f32, 1>>, o: ptr<function, array<f32, 1>>) { (*o)[0] = (*a)[0] * 2.0; }",
    );
    ctx.par_loop(&k1, &cells, &[w.read(), acc.all(&m).inc()])
        .unwrap();
    ctx.par_loop(&k2, &nodes, &[acc.read(), out.write()])
        .unwrap();
    let total: f32 = out.data_ro().unwrap().iter().sum();
    assert_eq!(total, 400.0);
    let e = ctx.explain();
    assert!(
        e.contains("2 loops in 2 groups") && e.contains("cut between group 1 and group 2"),
        "{e}"
    );
    assert!(
        e.contains("`spread` iterates cells and `scale` iterates nodes"),
        "{e}"
    );
    assert!(e.contains("dispatches:"), "{e}");
}

/// A fused shader, reviewed as a diff: a direct loop feeding an indirect increment over cells.
#[test]
fn fused_shader_snapshot() {
    let ctx = ctx_with(Config {
        strategy: Strategy::Hierarchical,
        staging: Staging::Inc,
        ..Config::from_env().unwrap()
    });
    let cells = Set::new("cells", 64);
    let nodes = Set::new("nodes", 40);
    let m = random_map("c2n", &cells, &nodes, 3, 8);
    let area = ctx.dat("area", &cells, 1, &[3.0f32; 64]).unwrap();
    let mass = ctx.dat_zeros::<f32>("mass", &nodes, 1).unwrap();
    let third = Kernel::new(
        "third",
        "fn third(a: ptr<function, array<f32, 1>>) { (*a)[0] = (*a)[0] / 3.0; }",
    );
    let lump = Kernel::new(
        "lump",
        "fn lump(a: ptr<function, array<f32, 1>>, m: ptr<function, array<f32, 3>>) {\n    \
         for (var i = 0; i < 3; i++) { (*m)[i] += (*a)[0]; }\n}",
    );
    ctx.par_loop(&third, &cells, &[area.rw()]).unwrap();
    ctx.par_loop(&lump, &cells, &[area.read(), mass.all(&m).inc()])
        .unwrap();
    assert_eq!(mass.data_ro().unwrap().iter().sum::<f32>(), 64.0 * 3.0);
    let shaders = ctx.shaders();
    assert_eq!(shaders.len(), 1, "one fused group");
    // Call-site lines change when this file is edited: not part of what is reviewed.
    let mut text = String::new();
    let mut rest = shaders[0].as_str();
    while let Some(at) = rest.find(concat!(file!(), ":")) {
        let (head, tail) = rest.split_at(at + concat!(file!(), ":").len());
        text += head;
        text += "LINE";
        rest = tail.trim_start_matches(|c: char| c.is_ascii_digit());
    }
    text += rest;
    insta::assert_snapshot!(text);
}

/// Each mini-partition strategy generates what it claims: `staged` combines increments with
/// workgroup atomics and no thread-colour phases; `hierarchical` applies them colour by colour
/// after computing every element of the round (OP2's plan), with no atomics.
#[test]
fn staged_and_hierarchical_shaders_are_what_they_claim() {
    let cells = Set::new("cells", 500);
    let nodes = Set::new("nodes", 200);
    let m = random_map("c2n", &cells, &nodes, 3, 5);
    let k = Kernel::new(
        "spread",
        "fn spread(v: ptr<function, array<f32, 3>>) { for (var a = 0; a < 3; a++) { (*v)[a] += 1.0; } }",
    );
    for strategy in [Strategy::Staged, Strategy::Hierarchical] {
        let ctx = ctx_with(Config {
            strategy,
            ..Config::from_env().unwrap()
        });
        let v = ctx.dat_zeros::<f32>("v", &nodes, 1).unwrap();
        ctx.par_loop(&k, &cells, &[v.all(&m).inc()]).unwrap();
        let sum: f32 = v.data_ro().unwrap().iter().sum();
        assert_eq!(sum, 1500.0, "{strategy:?}");
        let wgsl = ctx.shaders().join("\n");
        let atomic_staging = wgsl.contains("var<workgroup> pl_s0_d")
            && wgsl.contains(": array<atomic<u32>,")
            && wgsl.contains("atomicCompareExchangeWeak(&pl_s0_d");
        let phases = wgsl.contains("if (pl_col == pl_c)");
        match strategy {
            Strategy::Staged => assert!(atomic_staging && !phases, "{wgsl}"),
            _ => assert!(
                !atomic_staging && phases && !wgsl.contains("atomic<"),
                "{wgsl}"
            ),
        }
    }
}
