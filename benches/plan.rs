//! Execution plans and strategies: an indirect-increment loop over a structured triangle mesh
//! (1.41M cells incrementing their three vertices) and Airfoil's res_calc (1.44M edges
//! incrementing their two cells), timed with GPU timestamps per strategy and partition size;
//! and the plan build time.
//!
//! `cargo bench --bench plan`

#[path = "common.rs"]
mod common;

use parloop::apps::airfoil::{Airfoil, bytes_per_call};
use parloop::mesh::{airfoil::naca0012, unit_square};
use parloop::plan::{PlanConfig, PlanInput, RaceArg, StagedMap, build_blocks, colour_elements};
use parloop::{Config, Context, Kernel, Map, Set, Staging, Strategy};
use std::time::Instant;

const CALLS: usize = 10;

/// The configurations compared: (label, strategy, staging, block size).
fn configs(atomics: bool) -> Vec<(String, Strategy, Staging, Option<usize>)> {
    let mut v = vec![];
    if atomics {
        v.push(("atomics".to_string(), Strategy::Atomics, Staging::Inc, None));
    }
    v.push(("cas".into(), Strategy::Cas, Staging::Inc, None));
    v.push((
        "global-colour".into(),
        Strategy::GlobalColour,
        Staging::Inc,
        None,
    ));
    for bs in [128, 256, 512, 1024] {
        v.push((
            format!("hierarchical, INC staged, blocks of {bs}"),
            Strategy::Hierarchical,
            Staging::Inc,
            Some(bs),
        ));
    }
    v.push((
        "hierarchical, all staged, default blocks".into(),
        Strategy::Hierarchical,
        Staging::All,
        None,
    ));
    v.push((
        "hierarchical, nothing staged, default blocks".into(),
        Strategy::Hierarchical,
        Staging::None,
        None,
    ));
    v
}

fn context(strategy: Strategy, staging: Staging, block_size: Option<usize>) -> Context {
    Context::with_config(Config {
        strategy,
        staging,
        block_size,
        profile: true,
        ..Config::from_env().unwrap()
    })
    .expect("an adapter")
}

/// GPU ms per call of the group whose label contains `kernel`.
fn ms_per_call(ctx: &Context, kernel: &str) -> f64 {
    let st = ctx.stats();
    let (calls, ns) = st
        .kernel_times
        .iter()
        .filter(|(l, _)| l.split('+').any(|k| k == kernel))
        .fold((0, 0), |(c, n), (_, t)| (c + t.calls, n + t.ns));
    ns as f64 / calls.max(1) as f64 / 1e6
}

fn main() {
    let probe = Context::new().expect("an adapter");
    let atomics = probe.gpu().float_atomics();
    let adapter = probe.adapter();
    drop(probe);

    // The structured triangle mesh.
    let mesh = unit_square(840);
    let (nc, nv) = (mesh.ncells(), mesh.nvertices());
    let bytes = 16.0 * nc as f64 + 8.0 * nv as f64;
    let spread = Kernel::new(
        "spread",
        "fn spread(w: ptr<function, array<f32, 1>>, v: ptr<function, array<f32, 3>>) { \
         for (var a = 0; a < 3; a++) { (*v)[a] += (*w)[0]; } }",
    );
    let mut tri = Vec::new();
    for (label, strategy, staging, bs) in configs(atomics) {
        let ctx = context(strategy, staging, bs);
        let cells = Set::new("cells", nc);
        let verts = Set::new("vertices", nv);
        let c2v = Map::new("c2v", &cells, &verts, 3, &mesh.cell_vertices()).unwrap();
        let w = ctx.dat("w", &cells, 1, &vec![1.0f32; nc]).unwrap();
        let v = ctx.dat_zeros::<f32>("v", &verts, 1).unwrap();
        ctx.par_loop(&spread, &cells, &[w.read(), v.all(&c2v).inc()])
            .unwrap();
        ctx.flush().unwrap(); // warm-up: plan and pipeline
        let before = ctx.stats();
        let t = Instant::now();
        for _ in 0..CALLS {
            ctx.par_loop(&spread, &cells, &[w.read(), v.all(&c2v).inc()])
                .unwrap();
        }
        ctx.flush().unwrap();
        let _ = v.data_ro().unwrap();
        let wall = t.elapsed().as_secs_f64() / CALLS as f64;
        let st = ctx.stats();
        let ms = ms_per_call(&ctx, "spread");
        let dispatches = (st.dispatches - before.dispatches) as f64 / CALLS as f64;
        tri.push((label, ms, wall * 1e3, dispatches));
    }
    common::header(
        &format!(
            "Strategies on a structured triangle mesh: {nc} cells incrementing {nv} vertices (f32, dim 1)"
        ),
        &adapter,
        "cargo bench --bench plan",
    );
    println!(
        "GPU time per loop from timestamps; GB/s from the bytes model 16 B/cell (map, weight) + 8 B/vertex (read and write).\n"
    );
    println!("| strategy | GPU ms/loop | wall ms/loop | dispatches/loop | GB/s |");
    println!("|---|---:|---:|---:|---:|");
    for (label, ms, wall, d) in &tri {
        println!(
            "| {label} | {ms:.2} | {wall:.2} | {d:.0} | {:.2} |",
            bytes / (ms * 1e6)
        );
    }
    let find = |prefix: &str, rows: &[(String, f64, f64, f64)]| {
        rows.iter().find(|r| r.0.starts_with(prefix)).map(|r| r.1)
    };
    if let (Some(h), Some(a)) = (
        find("hierarchical, INC staged, blocks of 256", &tri),
        find("atomics", &tri),
    ) {
        println!(
            "\nratio hierarchical (blocks of 256) / atomics, GPU time: {:.2}",
            h / a
        );
    }

    // Airfoil's res_calc on the standard mesh.
    let mut m = naca0012(400, 600);
    m.round6();
    let res_bytes = bytes_per_call(&m)[2].1;
    let mut res = Vec::new();
    for (label, strategy, staging, bs) in configs(atomics) {
        let ctx = context(strategy, staging, bs);
        let a = Airfoil::new(&ctx, &m).unwrap();
        for _ in 0..2 {
            a.iteration(None).unwrap();
        }
        ctx.flush().unwrap();
        let _ = a.q.data_ro().unwrap();
        res.push((label, ms_per_call(&ctx, "res_calc")));
    }
    common::header(
        &format!(
            "Strategies on Airfoil's res_calc: {} edges incrementing {} cells (f32, dim 4)",
            m.edges.len(),
            m.cells.len()
        ),
        &adapter,
        "cargo bench --bench plan",
    );
    println!(
        "GB/s from the bytes model of docs/background.md ({:.1} MB per call in single precision).\n",
        res_bytes / 1e6
    );
    println!("| strategy | GPU ms/call | GB/s |");
    println!("|---|---:|---:|");
    for (label, ms) in &res {
        println!("| {label} | {ms:.2} | {:.2} |", res_bytes / (ms * 1e6));
    }
    let rows: Vec<(String, f64, f64, f64)> =
        res.iter().map(|(l, m)| (l.clone(), *m, 0.0, 0.0)).collect();
    if let (Some(h), Some(a)) = (
        find("hierarchical, INC staged, blocks of 256", &rows),
        find("atomics", &rows),
    ) {
        println!(
            "\nratio hierarchical (blocks of 256) / atomics, GPU time: {:.2}",
            h / a
        );
    }

    // Plan build time (pure, CPU).
    common::header(
        "Plan build time (CPU, release)",
        "none (CPU only)",
        "cargo bench --bench plan",
    );
    println!(
        "| loop | elements | hierarchical plan | blocks | block colours | global colouring | colours |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|");
    let tri_map = mesh.cell_vertices().to_vec();
    let pecell: Vec<u32> = m.ecells.iter().flatten().copied().collect();
    for (what, n, map, arity, targets, bpt) in [
        ("triangles -> vertices", nc, &tri_map, 3usize, nv, 4usize),
        (
            "Airfoil edges -> cells",
            m.edges.len(),
            &pecell,
            2,
            m.cells.len(),
            16,
        ),
    ] {
        let input = PlanInput {
            positions: n,
            elements: None,
            section_ends: vec![],
            space_sizes: vec![targets],
            races: vec![RaceArg {
                space: 0,
                map,
                arity,
                idx: None,
                staged: Some(0),
            }],
            staged: vec![StagedMap {
                map,
                arity,
                bytes_per_target: bpt,
                slots: None,
            }],
        };
        let t = Instant::now();
        let p = build_blocks(&input, &PlanConfig::default()).unwrap();
        let tb = t.elapsed().as_secs_f64();
        let t = Instant::now();
        let c = colour_elements(&input, false);
        let tc = t.elapsed().as_secs_f64();
        println!(
            "| {what} | {n} | {:.0} ms | {} | {} | {:.0} ms | {} |",
            tb * 1e3,
            p.blocks(),
            p.block_colours(),
            tc * 1e3,
            c.colours()
        );
    }
}
