//! Distributed runs under `mpirun` against the same program on one process: the wave on 1, 2,
//! 3 and 4 ranks, Airfoil on 1, 2, 3 and 4 ranks, lazy (overlapped exchanges) and, on 2 and 3
//! ranks, eager (exchanges before each loop); mesh geometry and distributed dot products on 2
//! and 3 ranks against plain Rust. Each case runs this test binary under `mpirun` with one ignored worker test
//! selected; rank 0 writes what it gathered to a file this test reads.
//!
//! `cargo test --features mpi --test it -- mpi::apps::` (needs Open MPI's `mpirun`).

use crate::common;
use crate::common::mpirun;

use mpirun::{mpirun, mpirun_env, mpirun_f64, out_path};

use parloop::apps::airfoil::Airfoil;
use parloop::apps::wave::Wave;
use parloop::dist::{Comm, Partitioner};
use parloop::mesh::airfoil::naca0012;
use parloop::mesh::unit_square;
use parloop::{Config, Context};

const N: usize = 24;
const STEPS: usize = 200;
const DT: f32 = 0.001;

/// One process, no MPI: p after STEPS steps, then the energy.
fn wave_reference() -> Vec<f32> {
    let ctx = common::ctx();
    let mut w = Wave::new(&ctx, N, DT).unwrap();
    for _ in 0..STEPS {
        w.step().unwrap();
    }
    let energy = w.energy().unwrap() as f32;
    let mut out = w.p.data_ro().unwrap().to_vec();
    out.push(energy);
    out
}

#[test]
#[ignore = "run by the other tests under mpirun"]
fn wave_worker() {
    let Some(out) = out_path() else { return };
    let comm = Comm::world().unwrap();
    let ctx = Context::with_comm(Config::from_env().unwrap(), &comm).unwrap();
    let partitioner = match std::env::var("MPI_TEST_PARTITIONER").as_deref() {
        Ok("scattered") => {
            // Cells dealt round-robin: every rank neighbours every other, halos are large.
            let n = unit_square(N).ncells();
            Partitioner::Owners((0..n).map(|c| (c % ctx.ranks()) as u32).collect())
        }
        Ok("kway") => Partitioner::KWay,
        _ => Partitioner::Block,
    };
    let mut w = Wave::distributed(&ctx, unit_square(N), DT, partitioner).unwrap();
    for _ in 0..STEPS {
        w.step().unwrap();
    }
    let energy = w.energy().unwrap() as f32;
    let s = ctx.stats();
    lazy_or_eager(&ctx);
    eprintln!(
        "rank {} of {}: {} halo exchanges ({} skipped as current), {} messages, {} bytes, {} \
         Global reductions",
        ctx.rank(),
        ctx.ranks(),
        s.halo_exchanges,
        s.halo_exchanges_skipped,
        s.halo_messages,
        s.halo_bytes,
        s.global_reductions
    );
    if let Some(mut p) = w.p.gather().unwrap() {
        p.push(energy);
        std::fs::write(out, bytemuck::cast_slice(&p)).unwrap();
    }
}

/// In a worker: the run took the path its configuration asks for (lazy: exchanges overlapped
/// with core work in the force's rounds; eager: exchanges when loops are recorded).
fn lazy_or_eager(ctx: &Context) {
    let s = ctx.stats();
    if ctx.ranks() == 1 {
        assert_eq!(s.halo_exchanges, 0);
    } else if ctx.config().lazy {
        assert!(
            s.halo_overlap_rounds > 0,
            "lazy run without overlapped rounds"
        );
    } else {
        assert_eq!(s.halo_overlap_rounds, 0, "eager run with lazy rounds");
        assert!(s.halo_exchanges > 0);
    }
}

fn assert_close(got: &[f32], want: &[f32], what: &str) {
    assert_eq!(got.len(), want.len(), "{what}: lengths");
    let scale = want.iter().fold(0f32, |m, v| m.max(v.abs())).max(1e-30);
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!(
            (g - w).abs() <= 1e-5 * scale,
            "{what}: value {i}: {g} vs one process {w}"
        );
    }
}

#[test]
fn the_wave_on_1_to_4_ranks_lazy_and_eager_equals_one_process() {
    let want = wave_reference();
    for np in [1, 2, 3, 4] {
        let got = mpirun(np, &worker!("wave_worker"), "block");
        assert_close(&got, &want, &format!("wave on {np} ranks"));
        if np == 2 || np == 3 {
            // Eager mode: exchanges before each loop, as the lazy schedule must match.
            let eager = mpirun_env(np, &worker!("wave_worker"), &[("PARLOOP_LAZY", "0")]);
            assert_close(&eager, &want, &format!("wave on {np} ranks, eager"));
            assert_close(&got, &eager, &format!("wave on {np} ranks, lazy vs eager"));
        }
    }
    let got = mpirun(3, &worker!("wave_worker"), "scattered");
    assert_close(&got, &want, "wave on 3 ranks, cells dealt round-robin");
    let got = mpirun(3, &worker!("wave_worker"), "kway");
    assert_close(&got, &want, "wave on 3 ranks, METIS k-way");
}

const AIRFOIL_ITERATIONS: usize = 100;

/// Airfoil's rms after each iteration, then q at the end.
fn airfoil_run(a: &Airfoil, ctx: &Context) -> (Vec<f32>, Option<Vec<f32>>) {
    let ncells = a.cells.global_size() as f64;
    let mut history = Vec::new();
    for _ in 0..AIRFOIL_ITERATIONS {
        let g = ctx.global("rms", &[0.0f32]).unwrap();
        a.iteration(Some(&g)).unwrap();
        history.push((g.value().unwrap()[0] as f64 / ncells).sqrt() as f32);
    }
    (history, a.q.gather().unwrap())
}

#[test]
#[ignore = "run by the other tests under mpirun"]
fn airfoil_worker() {
    let Some(out) = out_path() else { return };
    let comm = Comm::world().unwrap();
    let ctx = Context::with_comm(Config::from_env().unwrap(), &comm).unwrap();
    let a = Airfoil::distributed(&ctx, &naca0012(60, 90), Partitioner::Block).unwrap();
    let (mut history, q) = airfoil_run(&a, &ctx);
    lazy_or_eager(&ctx);
    let s = ctx.stats();
    let c = a.cells.sections();
    eprintln!(
        "rank {} of {}: cells {} core + {} owned, {} exec halo, {} non-exec halo; {} halo \
         exchanges ({} skipped), {} messages, {} bytes",
        ctx.rank(),
        ctx.ranks(),
        c.core,
        c.owned,
        c.exec_halo,
        c.nonexec_halo,
        s.halo_exchanges,
        s.halo_exchanges_skipped,
        s.halo_messages,
        s.halo_bytes
    );
    if let Some(q) = q {
        history.extend(q);
        std::fs::write(out, bytemuck::cast_slice(&history)).unwrap();
    }
}

#[test]
fn airfoil_on_1_to_4_ranks_lazy_and_eager_equals_one_process() {
    let ctx = common::ctx();
    let a = Airfoil::new(&ctx, &naca0012(60, 90)).unwrap();
    let (history, q) = airfoil_run(&a, &ctx);
    let q = q.unwrap();
    let runs = (1..=4)
        .map(|np| (np, "lazy"))
        .chain([(2, "eager"), (3, "eager")]);
    for (np, mode) in runs {
        let lazy = if mode == "lazy" { "1" } else { "0" };
        let got = mpirun_env(np, &worker!("airfoil_worker"), &[("PARLOOP_LAZY", lazy)]);
        let (h, gq) = got.split_at(AIRFOIL_ITERATIONS);
        for (i, (g, w)) in h.iter().zip(&history).enumerate() {
            assert!(
                (g - w).abs() <= 1e-5 * w.abs(),
                "Airfoil on {np} ranks ({mode}): rms after iteration {}: {g} vs one process {w}",
                i + 1
            );
        }
        assert_close(gq, &q, &format!("Airfoil's q on {np} ranks ({mode})"));
    }
}

const F64_ITERATIONS: usize = 20;

/// Airfoil in double precision: the rms after each iteration, then q, on rank 0 as f64.
#[test]
#[ignore = "run by the other tests under mpirun"]
fn airfoil_f64_worker() {
    let Some(out) = out_path() else { return };
    let comm = Comm::world().unwrap();
    let ctx = Context::with_comm(Config::from_env().unwrap(), &comm).unwrap();
    let m = naca0012(30, 45);
    let a = Airfoil::<f64>::build_distributed(&ctx, &m, Partitioner::KWay).unwrap();
    let mut values = Vec::new();
    for _ in 0..F64_ITERATIONS {
        let g = ctx.global("rms", &[0.0f64]).unwrap();
        a.iteration(Some(&g)).unwrap();
        values.push((g.value().unwrap()[0] / m.cells.len() as f64).sqrt());
    }
    if let Some(q) = a.q.gather().unwrap() {
        values.extend(q);
        std::fs::write(out, bytemuck::cast_slice(&values)).unwrap();
    }
}

/// Airfoil in f64 on 2 and 3 ranks (halo exchanges and reductions of f64) against the
/// plain-Rust f64 reference within 1e-12 relative, as one process is.
#[test]
fn airfoil_in_double_precision_on_2_and_3_ranks_matches_the_f64_reference() {
    use parloop::apps::airfoil::{constants_f64, reference};
    let probe = common::ctx();
    if !probe.gpu().f64() {
        return; // tests/it/double_precision.rs asserts the error on such an adapter
    }
    let m = naca0012(30, 45);
    let mut r = reference::State::<f64>::new(&m, constants_f64());
    let history: Vec<f64> = (0..F64_ITERATIONS).map(|_| r.iteration(&m)).collect();
    let scale = r.q.iter().flatten().fold(0.0f64, |s, v| s.max(v.abs()));
    for np in [2, 3] {
        let got = mpirun_f64(np, &worker!("airfoil_f64_worker"), &[]);
        let (h, q) = got.split_at(F64_ITERATIONS);
        for (i, (g, w)) in h.iter().zip(&history).enumerate() {
            assert!(
                (g - w).abs() <= 1e-12 * w,
                "f64 Airfoil on {np} ranks: rms after iteration {}: {g:e} vs {w:e}",
                i + 1
            );
        }
        assert_eq!(q.len(), 4 * m.cells.len());
        for (i, (g, w)) in q.iter().zip(r.q.iter().flatten()).enumerate() {
            assert!(
                (g - w).abs() <= 1e-12 * scale,
                "f64 q[{i}] on {np} ranks: {g} vs {w}"
            );
        }
    }
}

/// Globals reduced with MIN and MAX and INC over ranks, host access to owned elements,
/// set_data, and checking mode finding ranks that record different loops.
#[test]
#[ignore = "run by the other tests under mpirun"]
fn host_and_globals_worker() {
    let Some(out) = out_path() else { return };
    let comm = Comm::world().unwrap();
    let config = Config {
        check: true,
        ..Config::from_env().unwrap()
    };
    let ctx = Context::with_comm(config, &comm).unwrap();
    let n = 100usize;
    let mut d = parloop::dist::Distribution::new(&ctx);
    let cells = d.set("cells", n);
    let nodes = d.set("nodes", n + 1);
    let c2n: Vec<u32> = (0..n as u32).flat_map(|c| [c, c + 1]).collect();
    let c2n = d.map("c2n", cells, nodes, 2, &c2n).unwrap();
    let vals: Vec<f32> = (0..n).map(|c| c as f32).collect();
    let v = d.dat("v", cells, 1, &vals).unwrap();
    let mut l = d.distribute(cells, Partitioner::Block).unwrap();
    let (cells, c2n, mut v) = (l.set(cells), l.map(c2n), l.dat(v).unwrap());
    let node_set = l.set(nodes);
    // Host access sees this rank's owned cells, in the global order's blocks.
    let owned = v.data_ro().unwrap().to_vec();
    assert_eq!(owned.len(), cells.size());
    let mut sorted = owned.clone();
    sorted.sort_by(f32::total_cmp);
    // Partitioner::Block gives cell c to rank c * ranks / n.
    let want: Vec<f32> = (0..n)
        .filter(|c| c * ctx.ranks() / n == ctx.rank())
        .map(|c| c as f32)
        .collect();
    assert_eq!(sorted, want, "rank {}'s owned cells", ctx.rank());
    // MIN, MAX and INC over all ranks.
    let (mn, mx, sum) = (
        ctx.global("min", &[1e9f32]).unwrap(),
        ctx.global("max", &[-1e9f32]).unwrap(),
        ctx.global("sum", &[0.5f32]).unwrap(),
    );
    let k = parloop::Kernel::new(
        "stats",
        "fn stats(v: ptr<function, array<f32, 1>>, a: ptr<function, array<f32, 1>>, \
         b: ptr<function, array<f32, 1>>, s: ptr<function, array<f32, 1>>) { \
         (*a)[0] = (*v)[0]; (*b)[0] = (*v)[0]; (*s)[0] = (*v)[0]; }",
    );
    ctx.par_loop(&k, &cells, &[v.read(), mn.min(), mx.max(), sum.inc()])
        .unwrap();
    assert_eq!(mn.value().unwrap(), [0.0]);
    assert_eq!(mx.value().unwrap(), [(n - 1) as f32]);
    assert_eq!(sum.value().unwrap(), [0.5 + (n * (n - 1) / 2) as f32]);
    // set_data takes the owned values; the gathered Dat shows every rank's.
    let twice: Vec<f32> = owned.iter().map(|x| 2.0 * x).collect();
    v.set_data(&twice).unwrap();
    let g = v.gather().unwrap();
    // Scatter from rank 0 (owned and halo values), checked by a gather; a wrong length on
    // rank 0 is an error on every rank.
    let back: Vec<f32> = (0..n).map(|c| 3.0 * c as f32).collect();
    v.scatter((ctx.rank() == 0).then_some(&back[..])).unwrap();
    assert_eq!(
        v.gather().unwrap().map(|g| g == back),
        (ctx.rank() == 0).then_some(true)
    );
    v.scatter((ctx.rank() == 0).then_some(&twice[..]))
        .unwrap_err();
    // A loop that increments through a map runs the exec halo; its Global reduction still
    // counts each cell once.
    let w = ctx.dat_zeros::<f32>("w", &node_set, 1).unwrap();
    let total = ctx.global("total", &[0.0f32]).unwrap();
    let spread = parloop::Kernel::new(
        "spread",
        "fn spread(v: ptr<function, array<f32, 1>>, w: ptr<function, array<f32, 2>>, \
         t: ptr<function, array<f32, 1>>) { (*w)[0] = (*v)[0]; (*w)[1] = (*v)[0]; \
         (*t)[0] = (*v)[0]; }",
    );
    ctx.par_loop(&spread, &cells, &[v.read(), w.all(&c2n).inc(), total.inc()])
        .unwrap();
    assert_eq!(total.value().unwrap(), [back.iter().sum::<f32>()]);
    if let Some(w) = w.gather().unwrap() {
        let want: Vec<f32> = (0..=n)
            .map(|i| if i > 0 { back[i - 1] } else { 0.0 } + if i < n { back[i] } else { 0.0 })
            .collect();
        assert_eq!(w, want);
    }
    // Ranks that record different loops: an error naming both loops on every rank.
    let other = parloop::Kernel::new(
        "other",
        "fn other(v: ptr<function, array<f32, 1>>) { (*v)[0] = 1.0; }",
    );
    let e = if ctx.rank() == 0 {
        ctx.par_loop(&other, &cells, &[v.write()])
    } else {
        ctx.par_loop(&k, &cells, &[v.read(), mn.min(), mx.max(), sum.inc()])
    }
    .unwrap_err()
    .to_string();
    assert!(
        e.contains("diverged") && e.contains("par_loop `other`") && e.contains("par_loop `stats`"),
        "{e}"
    );
    if let Some(g) = g {
        let want: Vec<f32> = (0..n).map(|c| 2.0 * c as f32).collect();
        // g was gathered before the scatter.
        assert_eq!(g, want);
        std::fs::write(out, bytemuck::cast_slice(&[1.0f32])).unwrap();
    }
}

#[test]
fn host_access_and_globals_on_3_ranks() {
    assert_eq!(
        mpirun(3, &worker!("host_and_globals_worker"), "block"),
        [1.0]
    );
}

/// The channel mesh oriented, with its interior and boundary facets as `MeshData` splits them
/// (interior: vertices and two cells each; boundary: vertices and one cell each).
struct Channel {
    mesh: parloop::mesh::Mesh,
    interior: (Vec<u32>, Vec<u32>),
    boundary: (Vec<u32>, Vec<u32>),
}

fn channel() -> Channel {
    use parloop::mesh::topology::Topology;
    let mut mesh =
        parloop::mesh::gmsh::read_file(concat!(env!("CARGO_MANIFEST_DIR"), "/data/channel.msh"))
            .unwrap();
    mesh.orient().unwrap();
    let t = Topology::new(mesh.cell_type, &mesh.cells).unwrap();
    let (mut interior, mut boundary) = ((vec![], vec![]), (vec![], vec![]));
    for f in 0..t.nfacets() {
        let [a, b] = t.facet_cells[f];
        if t.is_boundary(f) {
            boundary.0.extend_from_slice(t.facet(f));
            boundary.1.push(a);
        } else {
            interior.0.extend_from_slice(t.facet(f));
            interior.1.extend([a, b]);
        }
    }
    Channel {
        mesh,
        interior,
        boundary,
    }
}

/// Geometry on N ranks: the channel distributed by cells, its geometry computed by
/// `cell_geometry` and `facet_geometry` on each rank's part; rank 0 writes the area and the
/// perimeter (distributed dot products with a Dat of ones, made by a distributed `fill`), then
/// the gathered cell areas and interior and boundary normals.
#[test]
#[ignore = "run by the other tests under mpirun"]
fn geometry_worker() {
    use parloop::dist::Distribution;
    use parloop::mesh::CellType;
    use parloop::mesh::geometry::{cell_geometry, facet_geometry};
    let Some(out) = out_path() else { return };
    let comm = Comm::world().unwrap();
    let ctx = Context::with_comm(Config::from_env().unwrap(), &comm).unwrap();
    let ch = channel();
    let m = &ch.mesh;
    let mut d = Distribution::new(&ctx);
    let cells = d.set("cells", m.ncells());
    let vertices = d.set("vertices", m.nvertices());
    let facets = d.set("facets", ch.interior.1.len() / 2);
    let bnd = d.set("boundary facets", ch.boundary.1.len());
    let c2v = d
        .map("cell_vertices", cells, vertices, 3, &m.cells)
        .unwrap();
    let f2c = d
        .map("facet_cells", facets, cells, 2, &ch.interior.1)
        .unwrap();
    let f2v = d
        .map("facet_vertices", facets, vertices, 2, &ch.interior.0)
        .unwrap();
    let b2c = d
        .map("boundary_cell", bnd, cells, 1, &ch.boundary.1)
        .unwrap();
    let b2v = d
        .map("boundary_vertices", bnd, vertices, 2, &ch.boundary.0)
        .unwrap();
    let x = d.dat("coords", vertices, 2, &m.coords_f32()).unwrap();
    let partitioner = match std::env::var("MPI_TEST_PARTITIONER").as_deref() {
        Ok("kway") => Partitioner::KWay,
        _ => Partitioner::Block,
    };
    let mut part = d.distribute(cells, partitioner).unwrap();
    let _ = (part.map(f2c), part.map(b2c));
    let x = part.dat(x).unwrap();
    let t = CellType::Triangle;
    let gc = cell_geometry(&ctx, t, &part.map(c2v), &x).unwrap();
    let gi = facet_geometry(&ctx, t, &part.map(f2v), &x).unwrap();
    let gb = facet_geometry(&ctx, t, &part.map(b2v), &x).unwrap();
    let ones = |set: &parloop::Set| {
        let d = ctx.dat_zeros::<f32>("one", set, 1).unwrap();
        ctx.fill(&d, 1.0).unwrap();
        d
    };
    let area = ctx.dot(&gc.measure, &ones(&part.set(cells))).unwrap();
    let perimeter = ctx.dot(&gb.measure, &ones(&part.set(bnd))).unwrap();
    let mut values = vec![area.value().unwrap()[0], perimeter.value().unwrap()[0]];
    let gathered = [
        gc.measure.gather().unwrap(),
        gi.normal.gather().unwrap(),
        gb.normal.gather().unwrap(),
    ];
    if ctx.rank() == 0 {
        for g in gathered {
            values.extend(g.unwrap());
        }
        std::fs::write(out, bytemuck::cast_slice(&values)).unwrap();
    }
}

/// The channel's geometry on 2 and 3 ranks (blocks and METIS) against plain Rust in f64: the
/// total area and perimeter (distributed dot products), every cell's area, every facet's unit
/// normal (as `(dy, -dx) / length` of its oriented vertices).
#[test]
fn geometry_on_2_and_3_ranks_matches_plain_rust() {
    let ch = channel();
    let m = &ch.mesh;
    let x = |v: u32| m.coords[v as usize];
    let areas: Vec<f64> = (0..m.ncells())
        .map(|c| {
            let [a, b, d] = [0, 1, 2].map(|k| x(m.cell(c)[k]));
            ((b[0] - a[0]) * (d[1] - a[1]) - (b[1] - a[1]) * (d[0] - a[0])) / 2.0
        })
        .collect();
    let normals = |vs: &[u32]| -> Vec<f64> {
        vs.chunks(2)
            .flat_map(|e| {
                let (a, b) = (x(e[0]), x(e[1]));
                let (dx, dy) = (b[0] - a[0], b[1] - a[1]);
                let l = (dx * dx + dy * dy).sqrt();
                [dy / l, -dx / l]
            })
            .collect()
    };
    let perimeter: f64 = ch
        .boundary
        .0
        .chunks(2)
        .map(|e| {
            let (a, b) = (x(e[0]), x(e[1]));
            ((b[0] - a[0]).powi(2) + (b[1] - a[1]).powi(2)).sqrt()
        })
        .sum();
    let area: f64 = areas.iter().sum();
    // The reference's orientation, checked on its own: every area positive, and the boundary
    // normals outward (the boundary integral of x . n is twice the area).
    assert!(
        areas.iter().all(|&a| a > 0.0),
        "a clockwise cell in the reference"
    );
    let x_dot_n: f64 = ch
        .boundary
        .0
        .chunks(2)
        .map(|e| {
            let (a, b) = (x(e[0]), x(e[1]));
            // (dy, -dx) has the edge's length: x . n |e| at the midpoint.
            ((a[0] + b[0]) * (b[1] - a[1]) - (a[1] + b[1]) * (b[0] - a[0])) / 2.0
        })
        .sum();
    assert!(
        (x_dot_n - 2.0 * area).abs() < 1e-9,
        "reference normals not outward: {x_dot_n} vs {area}"
    );
    let mut want = vec![area, perimeter];
    want.extend(&areas);
    want.extend(normals(&ch.interior.0));
    want.extend(normals(&ch.boundary.0));
    for (np, partitioner) in [(2, "block"), (3, "kway")] {
        let got = mpirun(np, &worker!("geometry_worker"), partitioner);
        let what = format!("{np} ranks, {partitioner}");
        assert_eq!(got.len(), want.len(), "{what}: values");
        for (i, (g, w)) in got.iter().zip(&want).enumerate() {
            // f32 coordinates (up to 2) move by 1.2e-7, a cell's area by that times its
            // perimeter (under 0.2): areas within 1e-7; normals within 1e-5 (edges over 0.005);
            // the sums within 1e-6 relative.
            let tol = match i {
                0 | 1 => 1e-6 * w.abs(),
                i if i < 2 + areas.len() => 1e-7,
                _ => 1e-5,
            };
            assert!(
                (*g as f64 - w).abs() <= tol,
                "{what}: value {i}: {g} vs {w}"
            );
        }
    }
}
