//! Lazy vs eager: 1000 small loops (4096 elements each) recorded and forced once, against the
//! same loops run eagerly (one submission each). Fusion is off in both, to measure laziness
//! alone; a fused line is shown for reference.
//!
//! `cargo bench --bench lazy`

#[path = "common.rs"]
mod common;

use parloop::{Config, Context, Dat, Kernel, Set};

const LOOPS: usize = 1000;
const N: usize = 4096;

fn program(ctx: &Context, dats: &[Dat<f32>], set: &Set, k: &Kernel) {
    for i in 0..LOOPS {
        let (a, b) = (&dats[i % 4], &dats[(i + 1) % 4]);
        ctx.par_loop(k, set, &[a.rw(), b.read()]).unwrap();
    }
    ctx.flush().unwrap();
}

fn main() {
    let set = Set::new("s", N);
    let k = Kernel::new(
        "axpy",
        "fn axpy(a: ptr<function, array<f32, 1>>, b: ptr<function, array<f32, 1>>) { (*a)[0] = 0.5 * (*a)[0] + 0.25 * (*b)[0]; }",
    );
    let configs = [
        (
            "eager (one submission per loop)",
            Config {
                lazy: false,
                fusion: false,
                ..Config::from_env().unwrap()
            },
        ),
        (
            "lazy, trace bound 100 (default)",
            Config {
                lazy: true,
                fusion: false,
                ..Config::from_env().unwrap()
            },
        ),
        (
            "lazy, forced once",
            Config {
                lazy: true,
                fusion: false,
                trace_bound: 10 * LOOPS,
                ..Config::from_env().unwrap()
            },
        ),
        (
            "lazy and fused, forced once",
            Config {
                lazy: true,
                fusion: true,
                trace_bound: 10 * LOOPS,
                ..Config::from_env().unwrap()
            },
        ),
    ];
    let mut rows = Vec::new();
    let mut adapter = String::new();
    for (name, config) in configs {
        let ctx = Context::with_config(config).expect("an adapter");
        adapter = ctx.adapter();
        let dats: Vec<Dat<f32>> = (0..4)
            .map(|i| {
                ctx.dat(&format!("d{i}"), &set, 1, &vec![i as f32; N])
                    .unwrap()
            })
            .collect();
        let before = ctx.stats();
        let secs = common::median_time(5, || program(&ctx, &dats, &set, &k));
        let after = ctx.stats();
        let runs = 6.0; // warm-up + 5
        rows.push((
            name,
            secs,
            (after.submissions - before.submissions) as f64 / runs,
            (after.dispatches - before.dispatches) as f64 / runs,
        ));
    }
    common::header(
        &format!("Lazy vs eager: {LOOPS} direct loops of {N} elements, forced once"),
        &adapter,
        "cargo bench --bench lazy",
    );
    println!("| mode | wall time | per loop | submissions | dispatches | speed-up vs eager |");
    println!("|---|---:|---:|---:|---:|---:|");
    let eager = rows[0].1;
    for (name, secs, subs, disp) in rows {
        println!(
            "| {name} | {:.1} ms | {:.1} µs | {subs:.0} | {disp:.0} | {:.2}x |",
            secs * 1e3,
            secs * 1e6 / LOOPS as f64,
            eager / secs
        );
    }
}
