//! The core: par_loops of every access mode and type, indirect access, racing increments, Global
//! reductions and 2-D dispatch, each against a plain-Rust reference loop (bad inputs: tests/it/errors.rs).

use crate::common;

use common::{ctx, ctx_with, random_map, small_ints, strategies};
use parloop::util::Rng;
use parloop::*;

fn kernel_dim2(t: &str, body: &str) -> Kernel {
    Kernel::new(
        "k",
        format!(
            "fn k(a: ptr<function, array<{t}, 2>>, o: ptr<function, array<{t}, 2>>) {{\n\
             for (var i = 0; i < 2; i++) {{ {body} }}\n}}\n"
        ),
    )
}

/// Direct loops: every access mode on f32, u32 and i32, dim 2, checked element by element.
#[test]
fn direct_loops_of_every_access_mode_and_type() {
    let ctx = ctx();
    let n = 1000;
    let set = Set::new("s", n);
    let mut rng = Rng::new(1);
    let a: Vec<i64> = (0..n * 2).map(|_| rng.below(100) as i64).collect();
    let o: Vec<i64> = (0..n * 2).map(|_| rng.below(100) as i64).collect();
    for t in ["f32", "u32", "i32"] {
        for access in Access::ALL {
            let body = match access {
                // READ: the kernel may not change o; writing it anyway must not reach memory.
                Access::Read => "(*a)[i] = (*o)[i];",
                Access::Write => "(*o)[i] = (*a)[i] + (*a)[i];",
                Access::Rw => "(*o)[i] = (*o)[i] + (*a)[i];",
                Access::Inc => "(*o)[i] += (*a)[i];",
                Access::Min => "(*o)[i] = min((*o)[i], (*a)[i]);",
                Access::Max => "(*o)[i] = max((*o)[i], (*a)[i]);",
            };
            let k = kernel_dim2(t, body);
            let expect: Vec<i64> = o
                .iter()
                .zip(&a)
                .map(|(&o, &a)| match access {
                    Access::Read => o,
                    Access::Write => a + a,
                    Access::Rw | Access::Inc => o + a,
                    Access::Min => o.min(a),
                    Access::Max => o.max(a),
                })
                .collect();
            macro_rules! run {
                ($ty:ty) => {{
                    let av: Vec<$ty> = a.iter().map(|&x| x as $ty).collect();
                    let ov: Vec<$ty> = o.iter().map(|&x| x as $ty).collect();
                    let ad = ctx.dat("a", &set, 2, &av).unwrap();
                    let od = ctx.dat("o", &set, 2, &ov).unwrap();
                    ctx.par_loop(&k, &set, &[ad.read(), od.arg(access)])
                        .unwrap();
                    let got: Vec<i64> = od.data_ro().unwrap().iter().map(|&x| x as i64).collect();
                    assert_eq!(got, expect, "{t} {access}");
                    let a_after: Vec<i64> =
                        ad.data_ro().unwrap().iter().map(|&x| x as i64).collect();
                    assert_eq!(a_after, a, "{t} {access}: a READ argument changed");
                }};
            }
            match t {
                "f32" => run!(f32),
                "u32" => run!(u32),
                _ => run!(i32),
            }
        }
    }
}

/// Indirect reads through maps of arity 1 to 4, one index at a time and all indices at once.
#[test]
fn indirect_reads_through_maps_of_arity_1_to_4() {
    let ctx = ctx();
    let cells = Set::new("cells", 777);
    let nodes = Set::new("nodes", 301);
    let xs: Vec<f32> = (0..301 * 2).map(|i| (i % 97) as f32 * 0.5).collect();
    let x = ctx.dat("x", &nodes, 2, &xs).unwrap();
    for arity in 1..=4usize {
        let m = random_map("c2n", &cells, &nodes, arity, arity as u64);
        let out = ctx.dat_zeros::<f32>("out", &cells, 2).unwrap();
        // out = sum over j of x[m[j]] * (j + 1), with one argument per index...
        let params: Vec<String> = (0..arity)
            .map(|j| format!("x{j}: ptr<function, array<f32, 2>>"))
            .collect();
        let body: Vec<String> = (0..arity)
            .map(|j| {
                format!(
                    "(*o)[0] += (*x{j})[0] * {}.0; (*o)[1] += (*x{j})[1] * {}.0;",
                    j + 1,
                    j + 1
                )
            })
            .collect();
        let k = Kernel::new(
            "gather",
            format!(
                "fn gather({}, o: ptr<function, array<f32, 2>>) {{ {} }}",
                params.join(", "),
                body.join(" ")
            ),
        );
        let mut args: Vec<Arg> = (0..arity).map(|j| x.at(&m, j).read()).collect();
        args.push(out.write());
        ctx.par_loop(&k, &cells, &args).unwrap();
        // ...and with all indices in one argument.
        let all = ctx.dat_zeros::<f32>("all", &cells, 2).unwrap();
        let k2 = Kernel::new(
            "gather_all",
            format!(
                "fn gather_all(x: ptr<function, array<f32, {n}>>, o: ptr<function, array<f32, 2>>) {{\n\
                 for (var j = 0; j < {arity}; j++) {{ (*o)[0] += (*x)[2 * j] * f32(j + 1); (*o)[1] += (*x)[2 * j + 1] * f32(j + 1); }} }}",
                n = 2 * arity
            ),
        );
        ctx.par_loop(&k2, &cells, &[x.all(&m).read(), all.write()])
            .unwrap();
        let mut expect = vec![0f32; 777 * 2];
        for e in 0..777 {
            for j in 0..arity {
                let t = m.values()[e * arity + j] as usize;
                for c in 0..2 {
                    expect[e * 2 + c] += xs[t * 2 + c] * (j + 1) as f32;
                }
            }
        }
        assert_eq!(&*out.data_ro().unwrap(), &expect[..], "arity {arity}");
        assert_eq!(
            &*all.data_ro().unwrap(),
            &expect[..],
            "arity {arity}, all indices"
        );
    }
}

const SCATTER: &str = "fn scatter(w: ptr<function, array<f32, 3>>, a: ptr<function, array<f32, 3>>, \
                       b: ptr<function, array<f32, 3>>) {\n    \
                       for (var c = 0; c < 3; c++) { (*a)[c] += (*w)[c]; (*b)[c] += 2.0 * (*w)[c]; }\n}\n";

/// Increments of both ends of each edge, with a high-contention map (thousands of edges on one
/// node) and a random one, under every strategy. Values are small integers, so every order of
/// additions gives the exact sum and results must equal the reference bit for bit.
#[test]
fn indirect_inc_is_exact_under_every_strategy() {
    let probe = ctx();
    let n_edges = 6000;
    let n_nodes = 900;
    let edges = Set::new("edges", n_edges);
    let nodes = Set::new("nodes", n_nodes);
    let mut rng = Rng::new(7);
    let hot: Vec<u32> = (0..n_edges * 2)
        .map(|i| {
            if i % 2 == 0 {
                0
            } else {
                rng.below(n_nodes) as u32
            }
        })
        .collect();
    let maps = [
        (
            "high contention",
            Map::new("hot", &edges, &nodes, 2, &hot).unwrap(),
        ),
        ("random", random_map("rand", &edges, &nodes, 2, 11)),
    ];
    let w = small_ints(n_edges * 3, 3);
    for (what, m) in &maps {
        let mut expect = vec![0f32; n_nodes * 3];
        for e in 0..n_edges {
            for c in 0..3 {
                expect[m.values()[e * 2] as usize * 3 + c] += w[e * 3 + c];
                expect[m.values()[e * 2 + 1] as usize * 3 + c] += 2.0 * w[e * 3 + c];
            }
        }
        for (strategy, staging) in strategies(&probe) {
            let ctx = ctx_with(Config {
                strategy,
                staging,
                ..Config::from_env().unwrap()
            });
            let wd = ctx.dat("w", &edges, 3, &w).unwrap();
            let acc = ctx.dat_zeros::<f32>("acc", &nodes, 3).unwrap();
            let k = Kernel::new("scatter", SCATTER);
            ctx.par_loop(
                &k,
                &edges,
                &[wd.read(), acc.at(m, 0).inc(), acc.at(m, 1).inc()],
            )
            .unwrap();
            assert_eq!(
                &*acc.data_ro().unwrap(),
                &expect[..],
                "{what}, {strategy:?}/{staging:?}"
            );
            // explain() names the schedule the loop ran, and a colouring's colours: one
            // dispatch each.
            let explain = ctx.explain();
            let name = Variant::new(strategy, staging).name();
            let dispatches = ctx.stats().last_dispatches;
            let expected = match strategy {
                Strategy::GlobalColour => format!("schedules: {name} ({dispatches} colours)"),
                Strategy::Hierarchical | Strategy::Staged => {
                    format!("schedules: {name} ({dispatches} block colours)")
                }
                Strategy::Atomics | Strategy::Cas => format!("schedules: {name}\n"),
                Strategy::Auto | Strategy::Tune => "schedules: ".to_string(),
            };
            assert!(explain.contains(&expected), "{expected}: {explain}");
        }
    }
}

/// Increments of arbitrary floats agree with a double-precision reference within rounding.
#[test]
fn indirect_inc_of_arbitrary_floats_matches_within_rounding() {
    let ctx = ctx();
    let cells = Set::new("cells", 5000);
    let nodes = Set::new("nodes", 1200);
    let m = random_map("c2n", &cells, &nodes, 3, 5);
    let mut rng = Rng::new(9);
    let w: Vec<f32> = (0..5000).map(|_| rng.unit() as f32).collect();
    let wd = ctx.dat("w", &cells, 1, &w).unwrap();
    let acc = ctx.dat_zeros::<f32>("acc", &nodes, 1).unwrap();
    let k = Kernel::new(
        "spread",
        "fn spread(w: ptr<function, array<f32, 1>>, v: ptr<function, array<f32, 3>>) { \
         for (var j = 0; j < 3; j++) { (*v)[j] += (*w)[0]; } }",
    );
    ctx.par_loop(&k, &cells, &[wd.read(), acc.all(&m).inc()])
        .unwrap();
    let mut expect = vec![0f64; 1200];
    for e in 0..5000 {
        for j in 0..3 {
            expect[m.values()[e * 3 + j] as usize] += w[e] as f64;
        }
    }
    for (g, e) in acc.data_ro().unwrap().iter().zip(&expect) {
        assert!(
            (*g as f64 - e).abs() <= 1e-5 * e.abs().max(1.0),
            "{g} vs {e}"
        );
    }
}

/// Integer increments through a map (native integer atomics) and integer min/max.
#[test]
fn integer_increments_and_extrema_through_maps() {
    let ctx = ctx();
    let edges = Set::new("edges", 4000);
    let nodes = Set::new("nodes", 333);
    let m = random_map("e2n", &edges, &nodes, 2, 4);
    let count = ctx.dat_zeros::<u32>("count", &nodes, 1).unwrap();
    let lo = ctx.dat("lo", &nodes, 1, &vec![i32::MAX; 333]).unwrap();
    let k = Kernel::new(
        "tally",
        "fn tally(c: ptr<function, array<u32, 2>>, l: ptr<function, array<i32, 2>>) { \
         (*c)[0] += 1u; (*c)[1] += 1u; (*l)[0] = min((*l)[0], -7i); (*l)[1] = min((*l)[1], 5i); }",
    );
    ctx.par_loop(&k, &edges, &[count.all(&m).inc(), lo.all(&m).min()])
        .unwrap();
    let mut expect_c = vec![0u32; 333];
    let mut expect_l = vec![i32::MAX; 333];
    for e in 0..4000 {
        let (a, b) = (m.values()[e * 2] as usize, m.values()[e * 2 + 1] as usize);
        expect_c[a] += 1;
        expect_c[b] += 1;
        expect_l[a] = expect_l[a].min(-7);
        expect_l[b] = expect_l[b].min(5);
    }
    assert_eq!(&*count.data_ro().unwrap(), &expect_c[..]);
    assert_eq!(&*lo.data_ro().unwrap(), &expect_l[..]);
}

/// Global reductions over sizes that are not multiples of the workgroup size, up to 10^6; each
/// starts from a non-identity value, which the reduction must combine with.
#[test]
fn global_reductions_over_many_sizes() {
    let ctx = ctx();
    let k = Kernel::new(
        "reduce",
        "fn reduce(x: ptr<function, array<f32, 1>>, s: ptr<function, array<f32, 1>>, \
         lo: ptr<function, array<f32, 1>>, hi: ptr<function, array<f32, 1>>, n: ptr<function, array<u32, 1>>, \
         ilo: ptr<function, array<i32, 2>>, ihi: ptr<function, array<i32, 1>>) {\n\
         (*s)[0] += (*x)[0]; (*lo)[0] = min((*lo)[0], (*x)[0]); (*hi)[0] = max((*hi)[0], (*x)[0]); \
         (*n)[0] += 1u; (*ilo)[0] = min((*ilo)[0], i32((*x)[0])); (*ilo)[1] = min((*ilo)[1], -i32((*x)[0])); \
         (*ihi)[0] = max((*ihi)[0], i32((*x)[0]) * 3); }",
    );
    for n in [1usize, 63, 64, 65, 1000, 12345, 1_000_000] {
        let set = Set::new("s", n);
        let x = small_ints(n, n as u64);
        let xd = ctx.dat("x", &set, 1, &x).unwrap();
        let sum = ctx.global("sum", &[0.5f32]).unwrap();
        let lo = ctx.global("lo", &[f32::INFINITY]).unwrap();
        let hi = ctx.global("hi", &[-100.0f32]).unwrap();
        let cnt = ctx.global("count", &[3u32]).unwrap();
        let ilo = ctx.global("ilo", &[0i32, 1]).unwrap();
        let ihi = ctx.global("ihi", &[i32::MIN]).unwrap();
        ctx.par_loop(
            &k,
            &set,
            &[
                xd.read(),
                sum.inc(),
                lo.min(),
                hi.max(),
                cnt.inc(),
                ilo.min(),
                ihi.max(),
            ],
        )
        .unwrap();
        let ints: Vec<i32> = x.iter().map(|&v| v as i32).collect();
        assert_eq!(
            sum.value().unwrap(),
            vec![x.iter().sum::<f32>() + 0.5],
            "n = {n}"
        );
        assert_eq!(
            lo.value().unwrap(),
            vec![x.iter().copied().fold(f32::INFINITY, f32::min)],
            "n = {n}"
        );
        assert_eq!(
            hi.value().unwrap(),
            vec![x.iter().copied().fold(-100.0, f32::max)],
            "n = {n}"
        );
        assert_eq!(cnt.value().unwrap(), vec![3 + n as u32], "n = {n}");
        let lo0 = ints.iter().copied().fold(0, i32::min);
        let lo1 = ints.iter().map(|v| -v).fold(1, i32::min);
        assert_eq!(ilo.value().unwrap(), vec![lo0, lo1], "n = {n}");
        assert_eq!(
            ihi.value().unwrap(),
            vec![ints.iter().map(|v| v * 3).max().unwrap()],
            "n = {n}"
        );
    }
}

/// Two successive loops incrementing one Global accumulate (each adds to the current value).
#[test]
fn successive_increments_of_one_global_accumulate() {
    let ctx = ctx();
    let set = Set::new("s", 1000);
    let g = ctx.global("g", &[1.0f32]).unwrap();
    let k = Kernel::new(
        "one",
        "fn one(g: ptr<function, array<f32, 1>>) { (*g)[0] += 1.0; }",
    );
    ctx.par_loop(&k, &set, &[g.inc()]).unwrap();
    ctx.par_loop(&k, &set, &[g.inc()]).unwrap();
    assert_eq!(g.value().unwrap(), vec![2001.0]);
}

/// A set larger than 65535 workgroups of 64 runs on a 2-D grid; every element is computed.
#[test]
fn five_million_elements_use_a_2d_dispatch() {
    let ctx = ctx();
    let n: usize = 5_000_000;
    let per_dim = ctx.gpu().limits.max_compute_workgroups_per_dimension as usize;
    let wg = ctx.config().workgroup_size as usize;
    assert!(
        n.div_ceil(wg) > per_dim,
        "the test must exceed one grid dimension"
    );
    let set = Set::new("big", n);
    let x = ctx.dat_zeros::<u32>("x", &set, 1).unwrap();
    let count = ctx.global("count", &[0u32]).unwrap();
    let k = Kernel::new(
        "index",
        "fn index(x: ptr<function, array<u32, 1>>, c: ptr<function, array<u32, 1>>) { (*x)[0] = 3u; (*c)[0] += 1u; }",
    );
    ctx.par_loop(&k, &set, &[x.write(), count.inc()]).unwrap();
    let v = x.data_ro().unwrap();
    assert!(
        v.iter().all(|&a| a == 3),
        "first unset element: {:?}",
        v.iter().position(|&a| a != 3)
    );
    assert_eq!(count.value().unwrap(), vec![n as u32]);
}

/// Subsets: direct arguments are indexed by the set element.
#[test]
fn loops_over_subsets_touch_only_their_elements() {
    let ctx = ctx();
    let nodes = Set::new("nodes", 100);
    let boundary = Subset::new("boundary", &nodes, &[0, 5, 99, 42]).unwrap();
    let mut u = ctx.dat("u", &nodes, 1, &vec![1.0f32; 100]).unwrap();
    let k = Kernel::new(
        "fix",
        "fn fix(u: ptr<function, array<f32, 1>>) { (*u)[0] = -2.0; }",
    );
    ctx.par_loop(&k, &boundary, &[u.write()]).unwrap();
    let v = u.data().unwrap().to_vec();
    for (i, &x) in v.iter().enumerate() {
        assert_eq!(
            x,
            if [0, 5, 99, 42].contains(&i) {
                -2.0
            } else {
                1.0
            },
            "element {i}"
        );
    }
}

// ---- bad input ----------------------------------------------------------------------------------
/// A set of more than 2^16 elements with arbitrary (non-integer) increments: each colouring
/// strategy gives the same bits when run twice; every strategy agrees with a double-precision
/// reference to 1e-5 relative (max norm), atomics included (their order of additions varies).
#[test]
fn strategies_agree_on_a_large_set_and_colouring_is_reproducible() {
    let probe = ctx();
    let n = 70_000; // > 2^16
    let cells = Set::new("cells", n);
    let nodes = Set::new("nodes", 20_000);
    let m = random_map("c2n", &cells, &nodes, 3, 21);
    let mut rng = Rng::new(5);
    let w: Vec<f32> = (0..n).map(|_| rng.unit() as f32 - 0.25).collect();
    let mut expect = vec![0f64; 20_000];
    for e in 0..n {
        for j in 0..3 {
            expect[m.values()[e * 3 + j] as usize] += w[e] as f64 * (j + 1) as f64;
        }
    }
    let scale = expect.iter().fold(0.0f64, |a, v| a.max(v.abs()));
    let k = Kernel::new(
        "spread",
        "fn spread(w: ptr<function, array<f32, 1>>, v: ptr<function, array<f32, 3>>) { \
         for (var j = 0; j < 3; j++) { (*v)[j] += (*w)[0] * f32(j + 1); } }",
    );
    let run = |strategy: Strategy, staging: Staging| -> Vec<f32> {
        let ctx = ctx_with(Config {
            strategy,
            staging,
            ..Config::from_env().unwrap()
        });
        let wd = ctx.dat("w", &cells, 1, &w).unwrap();
        let acc = ctx.dat_zeros::<f32>("acc", &nodes, 1).unwrap();
        ctx.par_loop(&k, &cells, &[wd.read(), acc.all(&m).inc()])
            .unwrap();
        acc.data_ro().unwrap().to_vec()
    };
    for (strategy, staging) in strategies(&probe) {
        let first = run(strategy, staging);
        let worst = first
            .iter()
            .zip(&expect)
            .fold(0.0f64, |a, (g, e)| a.max((*g as f64 - e).abs()));
        assert!(
            worst / scale < 1e-5,
            "{strategy:?}/{staging:?}: {:e}",
            worst / scale
        );
        if strategy != Strategy::Atomics && strategy != Strategy::Cas {
            let second = run(strategy, staging);
            let same = first
                .iter()
                .zip(&second)
                .all(|(a, b)| a.to_bits() == b.to_bits());
            assert!(same, "{strategy:?}/{staging:?} is not bit-reproducible");
        }
    }
}
