//! The lazy trace: PyOP2's laziness conformance cases (docs/background.md), the seed's wave loop body
//! DAG, dropped temporaries, the trace bound, and lazy = eager on random programs.

use crate::common;

use common::{ctx, ctx_with, random_map};
use parloop::Strategy;
use parloop::util::Rng;
use parloop::*;
use proptest::prelude::*;
use proptest::strategy::Strategy as _;

fn k1(name: &str, body: &str, args: &[&str]) -> Kernel {
    let params: Vec<String> = args
        .iter()
        .map(|a| format!("{a}: ptr<function, array<f32, 1>>"))
        .collect();
    Kernel::new(
        name,
        format!("fn {name}({}) {{ {body} }}", params.join(", ")),
    )
}

/// chain: loop 1 `x RW`; loop 2 `y WRITE, x READ`; loop 3 `a INC, x READ`. Reading `a` runs
/// loops 1 and 3 and leaves loop 2 queued; reading `y` then runs loop 2.
#[test]
fn chain() {
    let ctx = ctx();
    let s = Set::new("s", 10);
    let x = ctx.dat("x", &s, 1, &[1.0f32; 10]).unwrap();
    let y = ctx.dat_zeros::<f32>("y", &s, 1).unwrap();
    let a = ctx.global("a", &[0.0f32]).unwrap();
    ctx.par_loop(&k1("double", "(*x)[0] *= 2.0;", &["x"]), &s, &[x.rw()])
        .unwrap();
    ctx.par_loop(
        &k1("copy", "(*y)[0] = (*x)[0] + 1.0;", &["y", "x"]),
        &s,
        &[y.write(), x.read()],
    )
    .unwrap();
    ctx.par_loop(
        &k1("sum", "(*a)[0] += (*x)[0];", &["a", "x"]),
        &s,
        &[a.inc(), x.read()],
    )
    .unwrap();
    assert_eq!(ctx.pending(), 3);
    assert_eq!(a.value().unwrap(), vec![20.0]);
    assert_eq!(ctx.pending(), 1, "loop 2 stays queued");
    assert_eq!(ctx.stats().loops, 2);
    assert_eq!(ctx.stats().submissions, 1, "one force, one submission");
    assert_eq!(&*y.data_ro().unwrap(), &[3.0f32; 10]);
    assert_eq!(ctx.pending(), 0);
    assert_eq!(ctx.stats().loops, 3);
}

/// reorder: loops over independent data, forced in the opposite order, run only what each
/// read needs.
#[test]
fn reorder() {
    let ctx = ctx();
    let s = Set::new("s", 8);
    let p = ctx.dat_zeros::<f32>("p", &s, 1).unwrap();
    let q = ctx.dat_zeros::<f32>("q", &s, 1).unwrap();
    ctx.par_loop(&k1("setp", "(*p)[0] = 1.0;", &["p"]), &s, &[p.write()])
        .unwrap();
    ctx.par_loop(&k1("setq", "(*q)[0] = 2.0;", &["q"]), &s, &[q.write()])
        .unwrap();
    assert_eq!(&*q.data_ro().unwrap(), &[2.0f32; 8]);
    assert_eq!(ctx.stats().loops, 1, "reading q runs only setq");
    assert_eq!(ctx.pending(), 1);
    assert_eq!(&*p.data_ro().unwrap(), &[1.0f32; 8]);
    assert_eq!(ctx.stats().loops, 2);
}

/// read-only accessor: data_ro of a Dat empties the trace of everything that Dat depends on
/// (and of nothing else).
#[test]
fn read_only_accessor() {
    let ctx = ctx();
    let s = Set::new("s", 8);
    let a = ctx.dat("a", &s, 1, &[1.0f32; 8]).unwrap();
    let b = ctx.dat_zeros::<f32>("b", &s, 1).unwrap();
    let c = ctx.dat_zeros::<f32>("c", &s, 1).unwrap();
    ctx.par_loop(&k1("inc_a", "(*a)[0] += 1.0;", &["a"]), &s, &[a.rw()])
        .unwrap();
    ctx.par_loop(
        &k1("b_from_a", "(*b)[0] = (*a)[0] * 3.0;", &["b", "a"]),
        &s,
        &[b.write(), a.read()],
    )
    .unwrap();
    ctx.par_loop(&k1("c_only", "(*c)[0] = 5.0;", &["c"]), &s, &[c.write()])
        .unwrap();
    assert_eq!(&*b.data_ro().unwrap(), &[6.0f32; 8]);
    assert_eq!(ctx.pending(), 1, "only the unrelated loop remains");
    assert_eq!(ctx.trace_edges(), vec![]);
}

/// read-write accessor: after data() the host changes values, and later loops see the change;
/// data() also runs pending readers of the Dat first (write-after-read).
#[test]
fn read_write_accessor() {
    let ctx = ctx();
    let s = Set::new("s", 4);
    let mut a = ctx.dat("a", &s, 1, &[1.0f32; 4]).unwrap();
    let b = ctx.dat_zeros::<f32>("b", &s, 1).unwrap();
    ctx.par_loop(
        &k1("b_from_a", "(*b)[0] = (*a)[0];", &["b", "a"]),
        &s,
        &[b.write(), a.read()],
    )
    .unwrap();
    {
        let mut v = a.data().unwrap();
        assert_eq!(
            ctx.pending(),
            0,
            "the pending reader of a ran before the host writes it"
        );
        v[2] = 10.0;
    }
    ctx.par_loop(&k1("twice", "(*a)[0] *= 2.0;", &["a"]), &s, &[a.rw()])
        .unwrap();
    assert_eq!(&*a.data_ro().unwrap(), &[2.0, 2.0, 20.0, 2.0]);
    assert_eq!(&*b.data_ro().unwrap(), &[1.0f32; 4]);
}

/// A host write between loops: pending readers see the old values, later loops the new ones.
#[test]
fn host_write_between_loops() {
    let ctx = ctx();
    let s = Set::new("s", 6);
    let mut a = ctx.dat("a", &s, 1, &[1.0f32; 6]).unwrap();
    let b = ctx.dat_zeros::<f32>("b", &s, 1).unwrap();
    let c = ctx.dat_zeros::<f32>("c", &s, 1).unwrap();
    ctx.par_loop(
        &k1("b_from_a", "(*b)[0] = (*a)[0];", &["b", "a"]),
        &s,
        &[b.write(), a.read()],
    )
    .unwrap();
    a.set_data(&[7.0; 6]).unwrap();
    ctx.par_loop(
        &k1("c_from_a", "(*c)[0] = (*a)[0];", &["c", "a"]),
        &s,
        &[c.write(), a.read()],
    )
    .unwrap();
    assert_eq!(&*b.data_ro().unwrap(), &[1.0f32; 6]);
    assert_eq!(&*c.data_ro().unwrap(), &[7.0f32; 6]);
}

/// A Global incremented by two successive loops, then set from the host and incremented again.
#[test]
fn global_incremented_by_successive_loops() {
    let ctx = ctx();
    let s = Set::new("s", 100);
    let g = ctx.global("g", &[0u32]).unwrap();
    let k = Kernel::new(
        "one",
        "fn one(g: ptr<function, array<u32, 1>>) { (*g)[0] += 1u; }",
    );
    ctx.par_loop(&k, &s, &[g.inc()]).unwrap();
    ctx.par_loop(&k, &s, &[g.inc()]).unwrap();
    assert_eq!(g.value().unwrap(), vec![200]);
    g.set(&[5]).unwrap();
    ctx.par_loop(&k, &s, &[g.inc()]).unwrap();
    assert_eq!(g.value().unwrap(), vec![105]);
}

/// The trace bound runs the oldest loops once the trace grows past it.
#[test]
fn trace_bound_runs_the_oldest_work() {
    let ctx = ctx_with(Config {
        trace_bound: 10,
        ..Config::from_env().unwrap()
    });
    let s = Set::new("s", 4);
    let a = ctx.dat_zeros::<f32>("a", &s, 1).unwrap();
    let k = k1("inc", "(*a)[0] += 1.0;", &["a"]);
    for i in 1..=25 {
        ctx.par_loop(&k, &s, &[a.rw()]).unwrap();
        assert!(
            ctx.pending() <= 10,
            "after {i} loops: {} pending",
            ctx.pending()
        );
    }
    assert!(ctx.stats().loops >= 15);
    assert_eq!(&*a.data_ro().unwrap(), &[25.0f32; 4]);
}

/// Dropping a Dat with pending writes: loops that only write it never run, loops that also
/// write live data do, and its buffer returns to the pool for the next temporary.
#[test]
fn dropping_a_dat_with_pending_writes() {
    let ctx = ctx();
    let s = Set::new("s", 1000);
    let x = ctx.dat("x", &s, 1, &[2.0f32; 1000]).unwrap();
    let y = ctx.dat_zeros::<f32>("y", &s, 1).unwrap();
    // y reads t through a map, so t needs a buffer even when the loops are fused.
    let ident: Vec<u32> = (0..1000).collect();
    let id = Map::new("identity", &s, &s, 1, &ident).unwrap();
    {
        let t = ctx.dat_zeros::<f32>("t", &s, 1).unwrap();
        ctx.par_loop(
            &k1("t_from_x", "(*t)[0] = (*x)[0] + 1.0;", &["t", "x"]),
            &s,
            &[t.write(), x.read()],
        )
        .unwrap();
        ctx.par_loop(
            &k1("y_from_t", "(*y)[0] = (*t)[0] * 2.0;", &["y", "t"]),
            &s,
            &[y.write(), t.at(&id, 0).read()],
        )
        .unwrap();
        ctx.par_loop(&k1("t_again", "(*t)[0] = 0.0;", &["t"]), &s, &[t.write()])
            .unwrap();
    }
    assert_eq!(&*y.data_ro().unwrap(), &[6.0f32; 1000]);
    let st = ctx.stats();
    assert_eq!(
        st.loops, 2,
        "the last write of the dropped t is never observable: skipped"
    );
    // The next temporary of the same size reuses t's buffer.
    let u = ctx.dat_zeros::<f32>("u", &s, 1).unwrap();
    ctx.par_loop(
        &k1("u_from_y", "(*u)[0] = (*y)[0];", &["u", "y"]),
        &s,
        &[u.write(), y.read()],
    )
    .unwrap();
    assert_eq!(&*u.data_ro().unwrap(), &[6.0f32; 1000]);
    let after = ctx.stats();
    assert_eq!(after.pool_reuses, st.pool_reuses + 1, "{after:?}");
    assert_eq!(
        after.bytes_allocated, st.bytes_allocated,
        "no new storage for u"
    );
}

/// Errors of deferred loops name the par_loop, not only the forcing site: here each element
/// increments four 16 KiB targets, more workgroup memory than any plan can stage, which is found
/// only when the loop runs.
#[test]
fn deferred_errors_name_the_loop() {
    let ctx = ctx_with(Config {
        strategy: Strategy::Hierarchical,
        staging: Staging::Inc,
        ..Config::from_env().unwrap()
    });
    let cells = Set::new("cells", 2000);
    let nodes = Set::new("nodes", 2000);
    let m = random_map("m", &cells, &nodes, 4, 1);
    let wide = ctx.dat_zeros::<f32>("wide", &nodes, 4096).unwrap();
    let k = Kernel::new(
        "fat",
        "fn fat(v: ptr<function, array<f32, 16384>>) { (*v)[0] += 1.0; }",
    );
    let line = line!() + 1;
    ctx.par_loop(&k, &cells, &[wide.all(&m).inc()]).unwrap();
    let e = ctx.flush().unwrap_err().to_string();
    assert!(
        e.contains(&format!("par_loop `fat` at {}:{line}", file!())),
        "{e}"
    );
    assert!(e.contains("workgroup memory"), "{e}");
}

/// seed 001's wave loop body, as its final figure shows it (that figure exchanges phi's halo for
/// assemble2, so assemble2 reads phi as well as v). On one process there are no halo
/// computations; contracting them out of the figure leaves exactly these edges.
#[test]
fn wave_loop_body_dag_matches_the_seed() {
    let ctx = ctx();
    let verts = Set::new("vertices", 50);
    let adj = random_map("adj", &verts, &verts, 3, 2);
    let p = ctx.dat_zeros::<f32>("p", &verts, 1).unwrap();
    let phi = ctx.dat_zeros::<f32>("phi", &verts, 1).unwrap();
    let v = ctx.dat_zeros::<f32>("v", &verts, 1).unwrap();
    let t1 = ctx.dat_zeros::<f32>("t1", &verts, 1).unwrap();
    let t2 = ctx.dat_zeros::<f32>("t2", &verts, 1).unwrap();
    let f1 = |n: &str, args: &[&str]| k1(n, "", args);
    let f3 = |n: &str| {
        Kernel::new(
            n,
            format!(
                "fn {n}(v: ptr<function, array<f32, 3>>, phi: ptr<function, array<f32, 3>>, \
                 t: ptr<function, array<f32, 1>>) {{ }}"
            ),
        )
    };
    ctx.par_loop(
        &f1("phi_expr1", &["p", "phi"]),
        &verts,
        &[p.read(), phi.inc()],
    )
    .unwrap();
    ctx.par_loop(&f1("zero_t1", &["t"]), &verts, &[t1.write()])
        .unwrap();
    ctx.par_loop(
        &f3("assemble1"),
        &verts,
        &[v.all(&adj).read(), phi.all(&adj).read(), t1.write()],
    )
    .unwrap();
    ctx.par_loop(&f1("zero_t2", &["t"]), &verts, &[t2.write()])
        .unwrap();
    ctx.par_loop(
        &f3("assemble2"),
        &verts,
        &[v.all(&adj).read(), phi.all(&adj).read(), t2.write()],
    )
    .unwrap();
    ctx.par_loop(
        &f1("p_expr", &["t1", "t2", "p"]),
        &verts,
        &[t1.read(), t2.read(), p.write()],
    )
    .unwrap();
    ctx.par_loop(
        &f1("phi_expr2", &["p", "phi"]),
        &verts,
        &[p.read(), phi.inc()],
    )
    .unwrap();
    let mut edges = ctx.trace_edges();
    edges.sort();
    let mut expect: Vec<(String, String)> = [
        ("phi_expr1", "assemble1"),
        ("zero_t1", "assemble1"),
        ("phi_expr1", "assemble2"),
        ("zero_t2", "assemble2"),
        ("assemble1", "p_expr"),
        ("assemble2", "p_expr"),
        ("p_expr", "phi_expr2"),
    ]
    .iter()
    .map(|(a, b)| (a.to_string(), b.to_string()))
    .collect();
    expect.sort();
    assert_eq!(edges, expect, "{}", ctx.trace_dot());
    let dot = ctx.trace_dot();
    assert!(dot.contains("top ->") && dot.contains("-> bot"), "{dot}");
}

// ---- lazy = eager on random programs ------------------------------------------------------------

/// A random program over two sets joined by a map; i32 data so every order of racing
/// increments gives the same bits.
fn program(ctx: &Context, seed: u64, reads: &[usize]) -> Vec<Vec<i32>> {
    let mut rng = Rng::new(seed);
    let cells = Set::new("cells", 97);
    let nodes = Set::new("nodes", 61);
    let c2n = random_map("c2n", &cells, &nodes, 2, seed);
    let mut dats: Vec<Dat<i32>> = Vec::new();
    for i in 0..4 {
        let set = if i < 2 { &cells } else { &nodes };
        let init: Vec<i32> = (0..set.size()).map(|e| (e as i32 * 7 + i) % 13).collect();
        dats.push(ctx.dat(&format!("d{i}"), set, 1, &init).unwrap());
    }
    let g = ctx.global("g", &[0i32]).unwrap();
    let nloops = 2 + rng.below(7);
    for l in 0..nloops {
        let over_cells = rng.chance(0.6);
        let set = if over_cells { &cells } else { &nodes };
        let mut args: Vec<Arg> = Vec::new();
        let mut used = Vec::new();
        for (i, d) in dats.iter().enumerate() {
            if !rng.chance(0.6) {
                continue;
            }
            let on_cells = i < 2;
            let arg = if on_cells == over_cells {
                d.arg(
                    [
                        Access::Read,
                        Access::Write,
                        Access::Rw,
                        Access::Inc,
                        Access::Max,
                    ][rng.below(5)],
                )
            } else if over_cells {
                d.at(&c2n, rng.below(2))
                    .arg([Access::Read, Access::Inc][rng.below(2)])
            } else {
                continue;
            };
            used.push(arg.clone());
            args.push(arg);
        }
        if rng.chance(0.3) {
            args.push(g.inc());
        }
        if args.is_empty() {
            continue;
        }
        let _ = used;
        let params: Vec<String> = (0..args.len())
            .map(|i| format!("a{i}: ptr<function, array<i32, 1>>"))
            .collect();
        let sum: Vec<String> = (0..args.len()).map(|i| format!("(*a{i})[0]")).collect();
        let body: Vec<String> = (0..args.len())
            .map(|i| format!("(*a{i})[0] = (*a{i})[0] + s * {} + {};", i + 1, l))
            .collect();
        let k = Kernel::new(
            format!("k{l}"),
            format!(
                "fn k{l}({}) {{ let s = ({}) % 1000; {} }}",
                params.join(", "),
                sum.join(" + "),
                body.join(" ")
            ),
        );
        ctx.par_loop(&k, set, &args).unwrap();
    }
    let mut out = vec![Vec::new(); 5];
    for &r in reads {
        out[r] = if r < 4 {
            dats[r].data_ro().unwrap().to_vec()
        } else {
            g.value().unwrap()
        };
    }
    out
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(16))]
    #[test]
    fn lazy_and_eager_give_identical_results(seed in any::<u64>(), order in Just(vec![0usize, 1, 2, 3, 4]).prop_shuffle()) {
        let order: Vec<usize> = order;
        let lazy = ctx_with(Config { lazy: true, ..Config::from_env().unwrap() });
        let eager = ctx_with(Config { lazy: false, ..Config::from_env().unwrap() });
        let a = program(&lazy, seed, &order);
        let b = program(&eager, seed, &order);
        prop_assert_eq!(a, b);
        prop_assert_eq!(eager.pending(), 0);
    }
}
