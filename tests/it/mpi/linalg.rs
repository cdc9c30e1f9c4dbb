//! Sparse matrices and CG on N ranks under `mpirun` (issue 26): the P1 Poisson problem on a
//! jittered, shuffled unit square and on the Gmsh channel (`data/channel.msh`), assembled by
//! each rank on its part of the mesh (owned rows whole through the exec halo), Dirichlet rows
//! zeroed, solved by Jacobi-CG with y = A x exchanging x's halo; on 2, 3 and 4 ranks (blocks,
//! METIS, cells dealt round-robin), lazy and eager. The same program on one process is the
//! reference: the same iteration count, the residual history and u to a stated tolerance.
//! That one-process run is itself checked against plain Rust (tests/it/linalg.rs); on the
//! square u is also checked against the manufactured solution.
//!
//! `cargo test --features mpi --test it -- mpi::linalg::` (needs Open MPI's `mpirun`).

use crate::common::{self, mpirun};
use mpirun::{mpirun_f64, out_path};
use parloop::apps::poisson::assemble;
use parloop::dist::{Comm, Distribution, Partitioner};
use parloop::linalg::cg;
use parloop::linalg::{Amg, AmgOptions, Chebyshev, ChebyshevOptions, SolveOptions, SolveReport};
use parloop::mesh::{Mesh, unit_square};
use parloop::util::Rng;
use parloop::{Config, Context, Dat, Map, Real, Set};
use std::f64::consts::PI;

const N: usize = 20;

/// Squares per side of the AMG cases' mesh: AMG's counts within 10% need more than a few.
const N_AMG: usize = 48;

/// The preconditioner of a case.
#[derive(Clone, Copy, PartialEq, Debug)]
pub(super) enum Pc {
    Jacobi,
    /// Jacobi, CG with one reduction per iteration (`SolveOptions::single_reduction`).
    JacobiSingle,
    /// Jacobi, pipelined CG (`SolveOptions::pipelined`).
    JacobiPipelined,
    Chebyshev,
    Amg,
}

/// The unit square, interior vertices jittered by up to 20% of a side, vertices and cells
/// shuffled (so every rank's part is scattered in the global numbering).
fn mesh() -> Mesh {
    mesh_of(N)
}

fn mesh_of(n: usize) -> Mesh {
    let mut m = unit_square(n).shuffled(7).0;
    let mut rng = Rng::new(3);
    let h = 1.0 / n as f64;
    for c in &mut m.coords {
        if !on_boundary(*c) {
            c[0] += 0.4 * h * (rng.unit() - 0.5);
            c[1] += 0.4 * h * (rng.unit() - 0.5);
        }
    }
    m
}

/// The case's mesh and its fixed vertices (global numbers): the jittered square (its
/// boundary), or with `MPI_TEST_MESH=channel` the Gmsh channel (`data/channel.msh`: the
/// vertices of its boundary facets, and any vertex in no cell).
fn case(name: &str) -> (Mesh, Vec<bool>) {
    if name != "channel" {
        let m = if name == "amg" {
            mesh_of(N_AMG)
        } else {
            mesh()
        };
        let fixed = m.coords.iter().map(|&c| on_boundary(c)).collect();
        return (m, fixed);
    }
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/data/channel.msh");
    let mut m = parloop::mesh::gmsh::read_file(path).unwrap();
    m.orient().unwrap();
    let t = parloop::mesh::topology::Topology::new(m.cell_type, &m.cells).unwrap();
    let mut fixed = vec![true; m.nvertices()];
    m.cells.iter().for_each(|&v| fixed[v as usize] = false);
    for f in (0..t.nfacets()).filter(|&f| t.is_boundary(f)) {
        t.facet(f).iter().for_each(|&v| fixed[v as usize] = true);
    }
    (m, fixed)
}

fn on_boundary(c: [f64; 3]) -> bool {
    c[0] == 0.0 || c[0] == 1.0 || c[1] == 0.0 || c[1] == 1.0
}

fn exact(c: [f64; 3]) -> f64 {
    (PI * c[0]).sin() * (PI * c[1]).sin()
}

fn options() -> SolveOptions {
    SolveOptions {
        rtol: 1e-7,
        check_every: 1,
        ..SolveOptions::default()
    }
}

/// The program every rank runs (and one process runs on plain sets): assemble, zero the
/// rows of the `fixed` vertices (u = 0 there), CG preconditioned by `pc`
/// from zero or (`guess`) from `guess_value` of each vertex, given for every local vertex
/// with `halo` in the halo (which parloop must not trust). `global` gives a local vertex's global number.
fn solve<T: Real>(
    ctx: &Context,
    fixed: &[bool],
    cv: &Map,
    x: &Dat<T>,
    f: &Dat<T>,
    global: &dyn Fn(usize) -> usize,
    guess: bool,
    pc: Pc,
) -> (SolveReport, Dat<T>) {
    let (a, mut b) = assemble::<T>(ctx, "A", cv, x, f).unwrap();
    let vertices = cv.to_set();
    let rows: Vec<u32> = (0..vertices.total())
        .filter(|&r| fixed[global(r)])
        .map(|r| r as u32)
        .collect();
    a.zero_rows(ctx, &rows, T::from_f64(1.0)).unwrap();
    {
        let mut bv = b.data().unwrap();
        for (r, v) in bv.iter_mut().enumerate() {
            if fixed[global(r)] {
                *v = T::default();
            }
        }
    }
    let u = if guess {
        let owned = vertices.size();
        let g: Vec<T> = (0..vertices.total())
            .map(|r| match r < owned {
                true if !fixed[global(r)] => T::from_f64(guess_value(global(r))),
                true => T::default(),
                false => T::from_f64(-1e3),
            })
            .collect();
        ctx.dat("u", vertices, 1, &g).unwrap()
    } else {
        ctx.dat_zeros::<T>("u", vertices, 1).unwrap()
    };
    let report = match pc {
        Pc::Chebyshev => {
            let m = Chebyshev::new(ctx, &a, &ChebyshevOptions::default()).unwrap();
            cg(ctx, &a, &b, &u, Some(&m), &options()).unwrap()
        }
        Pc::Amg => {
            let m = Amg::new(ctx, &a, &AmgOptions::default()).unwrap();
            eprintln!("rank {}: AMG levels {:?}", ctx.rank(), m.report().levels);
            cg(ctx, &a, &b, &u, Some(&m), &options()).unwrap()
        }
        Pc::Jacobi | Pc::JacobiSingle | Pc::JacobiPipelined => {
            let diagonal = a.diagonal(ctx).unwrap();
            let opts = SolveOptions {
                single_reduction: matches!(pc, Pc::JacobiSingle),
                pipelined: matches!(pc, Pc::JacobiPipelined),
                // Pipelined: a reduction the host reads at once (a check) hides nothing.
                check_every: if pc == Pc::JacobiPipelined { 10 } else { 1 },
                ..options()
            };
            cg(ctx, &a, &b, &u, Some(&diagonal), &opts).unwrap()
        }
    };
    (report, u)
}

/// A nonzero initial guess of vertex `g`.
fn guess_value(g: usize) -> f64 {
    0.5 + 0.25 * (g as f64 * 0.7).sin()
}

fn values<T: Real>(m: &Mesh) -> (Vec<T>, Vec<T>) {
    let x = m
        .coords
        .iter()
        .flat_map(|c| [T::from_f64(c[0]), T::from_f64(c[1])])
        .collect();
    let f = m
        .coords
        .iter()
        .map(|&c| T::from_f64(2.0 * PI * PI * exact(c)))
        .collect();
    (x, f)
}

/// What a run gives, as f64: iterations, the residual history's length, the residuals, the
/// true residual, then u in global order.
fn flatten(report: &SolveReport, u: &[f64]) -> Vec<f64> {
    let mut out = vec![report.iterations as f64, report.residuals.len() as f64];
    out.extend(report.residuals.iter().map(|r| r.1));
    out.push(report.true_residual);
    out.extend_from_slice(u);
    out
}

pub(super) fn one_process<T: Real>(name: &str, guess: bool, pc: Pc) -> Vec<f64> {
    let ctx = common::ctx();
    let (m, fixed) = case(name);
    let vertices = Set::new("vertices", m.nvertices());
    let cells = Set::new("cells", m.ncells());
    let cv = Map::new("cell_vertices", &cells, &vertices, 3, &m.cells).unwrap();
    let (xv, fv) = values::<T>(&m);
    let x = ctx.dat("x", &vertices, 2, &xv).unwrap();
    let f = ctx.dat("f", &vertices, 1, &fv).unwrap();
    let (report, u) = solve(&ctx, &fixed, &cv, &x, &f, &|r| r, guess, pc);
    let u: Vec<f64> = u.data_ro().unwrap().iter().map(|v| v.to_f64()).collect();
    flatten(&report, &u)
}

fn worker<T: Real>(ctx: &Context, out: std::path::PathBuf) {
    let (m, fixed) = case(&std::env::var("MPI_TEST_MESH").unwrap_or_default());
    let mut d = Distribution::new(ctx);
    let cells = d.set("cells", m.ncells());
    let vertices = d.set("vertices", m.nvertices());
    let cv = d
        .map("cell_vertices", cells, vertices, 3, &m.cells)
        .unwrap();
    let (xv, fv) = values::<T>(&m);
    let x = d.dat("x", vertices, 2, &xv).unwrap();
    let f = d.dat("f", vertices, 1, &fv).unwrap();
    let partitioner = match std::env::var("MPI_TEST_PARTITIONER").as_deref() {
        Ok("scattered") => {
            Partitioner::Owners((0..m.ncells()).map(|c| (c % ctx.ranks()) as u32).collect())
        }
        Ok("kway") => Partitioner::KWay,
        _ => Partitioner::Block,
    };
    let mut part = d.distribute(cells, partitioner).unwrap();
    let (x, f, cv) = (part.dat(x).unwrap(), part.dat(f).unwrap(), part.map(cv));
    let ids = part.set(vertices).global_ids().unwrap().to_vec();
    if std::env::var("MPI_TEST_PC").as_deref() == Ok("amg-zero-row") {
        return super::amg::zero_row(ctx, &cv, &x, &f, &ids, out);
    }
    let guess = std::env::var_os("MPI_TEST_GUESS").is_some();
    let pc = match std::env::var("MPI_TEST_PC").as_deref() {
        Ok("chebyshev") => Pc::Chebyshev,
        Ok("amg") => Pc::Amg,
        Ok("jacobi-single") => Pc::JacobiSingle,
        Ok("jacobi-pipelined") => Pc::JacobiPipelined,
        _ => Pc::Jacobi,
    };
    let global = |r: usize| ids[r] as usize;
    let (report, u) = solve(ctx, &fixed, &cv, &x, &f, &global, guess, pc);
    // y = A x exchanged x's halo every iteration (more exchanges: the set-up's).
    let s = ctx.stats();
    eprintln!(
        "rank {} of {}: {} iterations, {} halo exchanges, {} global reductions ({} hidden)",
        ctx.rank(),
        ctx.ranks(),
        report.iterations,
        s.halo_exchanges,
        s.global_reductions,
        s.reductions_hidden
    );
    if matches!(pc, Pc::JacobiPipelined) {
        // Each iteration's reduction travels while M w and A m run, but the checks' (every
        // 10 iterations here), which the host reads at once; from 1 to rtol 1e-7, the
        // residual is replaced at least twice.
        assert!(
            s.reductions_hidden as usize >= 9 * (report.iterations / 10)
                && report.replacements >= 2,
            "rank {}: {} of {} reductions hidden in {} iterations",
            ctx.rank(),
            s.reductions_hidden,
            s.global_reductions,
            report.iterations
        );
    }
    if matches!(pc, Pc::JacobiSingle | Pc::JacobiPipelined) {
        // One synchronisation of the ranks per iteration run, to the check that saw
        // convergence (and a few to start and end, and two per residual replacement).
        let every = if pc == Pc::JacobiPipelined { 10 } else { 1 };
        let most = report.iterations.div_ceil(every) * every + 5 + 2 * report.replacements;
        assert!(
            s.global_reductions as usize <= most && report.replacements <= 4,
            "rank {}: {} global reductions for {} iterations",
            ctx.rank(),
            s.global_reductions,
            report.iterations
        );
    }
    assert!(
        s.halo_exchanges as usize >= report.iterations,
        "rank {}: {} halo exchanges for {} iterations",
        ctx.rank(),
        s.halo_exchanges,
        report.iterations
    );
    if let Some(u) = u.gather().unwrap() {
        let u: Vec<f64> = u.iter().map(|v| v.to_f64()).collect();
        std::fs::write(out, bytemuck::cast_slice(&flatten(&report, &u))).unwrap();
    }
}

/// The full name of this module's Poisson worker (for `mpi::amg`).
pub(super) fn poisson_worker_path() -> String {
    worker!("poisson_worker")
}

#[test]
#[ignore = "run by the other tests under mpirun"]
fn poisson_worker() {
    let Some(out) = out_path() else { return };
    let comm = Comm::world().unwrap();
    let ctx = Context::with_comm(Config::from_env().unwrap(), &comm).unwrap();
    if ctx.gpu().f64() {
        worker::<f64>(&ctx, out);
    } else {
        worker::<f32>(&ctx, out);
    }
}

#[test]
fn poisson_cg_on_2_3_and_4_ranks_equals_one_process() {
    let f64 = common::ctx().gpu().f64();
    let reference = |name: &str, guess: bool, pc: Pc| {
        if f64 {
            one_process::<f64>(name, guess, pc)
        } else {
            one_process::<f32>(name, guess, pc)
        }
    };
    let square = reference("square", false, Pc::Jacobi);
    // The manufactured solution on the square: the discretisation error at h = 1/20 (about
    // 2e-3 here).
    let m = mesh();
    let nr = square[1] as usize;
    let worst = (0..m.nvertices())
        .map(|v| (square[3 + nr + v] - exact(m.coords[v])).abs())
        .fold(0.0, f64::max);
    assert!(
        worst < 1e-2,
        "one process: u is {worst:e} off the exact solution"
    );
    let channel = reference("channel", false, Pc::Jacobi);
    // From a nonzero initial guess given on every local vertex, with something else than
    // the owners' values in the halo (the halo part was trusted once: u off by 0.30).
    let guessed = reference("square", true, Pc::Jacobi);
    // Chebyshev-preconditioned: its row-sum bound and polynomial on N ranks (the
    // polynomial itself is checked against the exact residual polynomial in chebyshev.rs).
    let chebyshev = reference("square", false, Pc::Chebyshev);
    // One reduction per iteration: on one process the iterations of the standard recurrence
    // (within 2: rounding), and on N ranks the one process's.
    let single = reference("square", false, Pc::JacobiSingle);
    assert!(
        (single[0] - square[0]).abs() <= 2.0,
        "single reduction: {} iterations, the standard recurrence {}",
        single[0],
        square[0]
    );
    // Pipelined (f64 only): on one process the standard recurrence's iterations, within 2.
    let pipelined = f64.then(|| reference("square", false, Pc::JacobiPipelined));
    if let Some(pipelined) = &pipelined {
        assert!(
            (pipelined[0] - square[0]).abs() <= 2.0,
            "pipelined: {} iterations, the standard recurrence {}",
            pipelined[0],
            square[0]
        );
    }
    for (np, partitioner, lazy, mesh) in [
        (2, "block", "1", "square"),
        (2, "block", "0", "square"),
        (3, "kway", "1", "square"),
        (3, "kway", "1", "single"),
        (3, "kway", "1", "pipelined"),
        (4, "scattered", "1", "square"),
        (3, "kway", "1", "channel"),
        (2, "block", "1", "guess"),
        (3, "scattered", "1", "guess"),
        (2, "block", "1", "chebyshev"),
        (4, "scattered", "1", "chebyshev"),
    ] {
        let (guess, cheb, one) = (mesh == "guess", mesh == "chebyshev", mesh == "single");
        let pipe = mesh == "pipelined";
        if pipe && !f64 {
            continue;
        }
        let mesh = if mesh == "channel" { mesh } else { "square" };
        let mut env = vec![
            ("MPI_TEST_PARTITIONER", partitioner),
            ("PARLOOP_LAZY", lazy),
            ("MPI_TEST_MESH", mesh),
        ];
        if guess {
            env.push(("MPI_TEST_GUESS", "1"));
        }
        if cheb {
            env.push(("MPI_TEST_PC", "chebyshev"));
        }
        if one {
            env.push(("MPI_TEST_PC", "jacobi-single"));
        }
        if pipe {
            env.push(("MPI_TEST_PC", "jacobi-pipelined"));
        }
        let got = mpirun_f64(np, &worker!("poisson_worker"), &env);
        let want = match (mesh, guess) {
            (_, true) => &guessed,
            _ if cheb => &chebyshev,
            _ if one => &single,
            _ if pipe => pipelined.as_ref().expect("an adapter with f64"),
            ("channel", _) => &channel,
            _ => &square,
        };
        compare(
            &got,
            want,
            f64,
            &format!(
                "{mesh}, {np} ranks, {partitioner}, lazy={lazy}, guess={guess}, \
                 chebyshev={cheb}, single reduction={one}, pipelined={pipe}"
            ),
        );
    }
}

/// A run on N ranks against one process: iterations, residuals, true residual, u.
fn compare(got: &[f64], want: &[f64], f64: bool, case: &str) {
    // Summation orders differ (rows in local numbering, dot products per rank), so the
    // residuals agree to round-off, which CG amplifies: 1e-6 relative in f64 (the same
    // iteration count), 5e-2 in f32 (within 10% of the iterations: an adapter without f64).
    let tol = if f64 { 1e-6 } else { 5e-2 };
    let nr = want[1] as usize;
    let slack = if f64 { 0.0 } else { (0.1 * want[0]).ceil() };
    assert!(
        (got[0] - want[0]).abs() <= slack,
        "{case}: {} CG iterations against {} on one process",
        got[0],
        want[0]
    );
    let ng = got[1] as usize;
    assert_eq!(got.len() - ng, want.len() - nr, "{case}: output length");
    for (k, (g, w)) in got[2..2 + ng.min(nr)]
        .iter()
        .zip(&want[2..2 + nr])
        .enumerate()
    {
        assert!(
            (g - w).abs() <= tol * w.abs().max(1e-6),
            "{case}: residual {k} is {g:e} against {w:e} on one process"
        );
    }
    let (tg, tw) = (got[2 + ng], want[2 + nr]);
    assert!(
        (tg - tw).abs() <= tol * tw.abs().max(1e-6) + 1e-12,
        "{case}: true residual {tg:e} against {tw:e} on one process"
    );
    let diff = got[3 + ng..]
        .iter()
        .zip(&want[3 + nr..])
        .map(|(g, w)| (g - w).abs())
        .fold(0.0, f64::max);
    // u is at most about 1: 1e-4 in f64 (100 times the residuals' tolerance), 1e-3 in f32.
    let u_tol = if f64 { 1e-4 } else { 1e-3 };
    assert!(
        diff <= u_tol,
        "{case}: u differs from one process by {diff:e}"
    );
}

/// On N ranks, matrices on sets of one process stay local: each rank solves its own system
/// (b differs per rank, so a ||b|| summed over the ranks would stop rank 0 at once), and rank
/// 0 alone builds and solves another, by CG and by AMG-CG (a collective call would hang). A
/// pair whose row map was made by `Map::new` on a rank's part is refused on every rank. Rank 0 writes its x, the
/// iterations of its own system, and 1.0 when the refusal came on this rank.
#[test]
#[ignore = "run by the other tests under mpirun"]
fn local_and_refused_worker() {
    use parloop::linalg::{Mat, Sparsity};
    use std::rc::Rc;
    let Some(out) = out_path() else { return };
    let comm = Comm::world().unwrap();
    let ctx = Context::with_comm(Config::from_env().unwrap(), &comm).unwrap();
    let system = |b: &[f32], amg: bool| {
        let s = Set::new("s", b.len());
        let id: Vec<u32> = (0..b.len() as u32).collect();
        let m = Map::new("id", &s, &s, 1, &id).unwrap();
        let sp = Rc::new(Sparsity::new(&ctx, "D", &s, &s, &[(&m, &m)]).unwrap());
        let mut a = Mat::<f32>::new(&ctx, "D", &sp).unwrap();
        // One entry per row (width 1): the values are the diagonal.
        let d: Vec<f32> = (0..b.len()).map(|i| 2.0 + i as f32).collect();
        a.values.set_data(&d).unwrap();
        let b = ctx.dat("b", &s, 1, b).unwrap();
        let x = ctx.dat_zeros::<f32>("x", &s, 1).unwrap();
        // AMG of a rank's own matrix is the rank's alone (a single level: its inverse).
        let rep = match amg {
            true => {
                let m = Amg::new(&ctx, &a, &AmgOptions::default()).unwrap();
                cg(&ctx, &a, &b, &x, Some(&m), &SolveOptions::default()).unwrap()
            }
            false => cg(&ctx, &a, &b, &x, None, &SolveOptions::default()).unwrap(),
        };
        let x: Vec<f32> = x.data_ro().unwrap().to_vec();
        (rep, x)
    };
    let scale = if ctx.rank() == 0 { 1e-4 } else { 1e3 };
    let (rep, x) = system(&[scale, 2.0 * scale], false);
    // D = diag(2, 3): x = b / d.
    assert!(
        (x[0] - scale / 2.0).abs() <= 1e-5 * scale
            && (x[1] - 2.0 * scale / 3.0).abs() <= 1e-5 * scale,
        "rank {}: x = {x:?} for b = {scale} * [1, 2]",
        ctx.rank()
    );
    if ctx.rank() == 0 {
        let (_, y) = system(&[3.0, 3.0, 4.0], false);
        assert_eq!(y, [1.5, 1.0, 1.0], "rank 0's own second system");
        let (_, y) = system(&[3.0, 3.0, 4.0], true);
        let e = y
            .iter()
            .zip([1.5, 1.0, 1.0])
            .map(|(a, b)| (a - b).abs())
            .fold(0.0, f32::max);
        assert!(e < 1e-6, "rank 0's own system by AMG-CG: {y:?}");
    }
    // The refusal: a chain of 8 cells and 9 nodes; the row map made after the distribution.
    let mut d = Distribution::new(&ctx);
    let cells = d.set("cells", 8);
    let nodes = d.set("nodes", 9);
    let c2n: Vec<u32> = (0..8).flat_map(|c| [c, c + 1]).collect();
    let cn = d.map("cell_nodes", cells, nodes, 2, &c2n).unwrap();
    let part = d.distribute(cells, Partitioner::Block).unwrap();
    let (cells, nodes, cn) = (part.set(cells), part.set(nodes), part.map(cn));
    let own: Vec<u32> = cn.values().iter().step_by(2).copied().collect();
    let m = Map::new("first node", &cells, &nodes, 1, &own).unwrap();
    let refused = match Sparsity::new(&ctx, "bad", &nodes, &nodes, &[(&m, &m)]) {
        Err(e) => e.to_string().contains("Map::new"),
        Ok(_) => false,
    };
    assert!(
        refused,
        "rank {}: the Map::new row map was not refused",
        ctx.rank()
    );
    let good = Sparsity::new(&ctx, "good", &nodes, &nodes, &[(&cn, &cn)]).unwrap();
    assert!(
        good.width() == 3,
        "a chain's rows have 3 entries, got {}",
        good.width()
    );
    // AMG on the distributed chain (9 unknowns, fewer than max_coarse: one level of single
    // nodes, then the gathered coarsest level): -u'' = 1 with u = 0 at both ends, whose
    // solution is u_i = i (8 - i) / 2.
    let ids = nodes.global_ids().unwrap().to_vec();
    let good = Rc::new(good);
    let mut a = Mat::<f32>::new(&ctx, "chain", &good).unwrap();
    let mut values = Vec::new();
    for r in 0..nodes.size() {
        let end = ids[r] == 0 || ids[r] == 8;
        // Each row padded to the width with zeros.
        for k in 0..good.width() {
            values.push(match (good.row(r).get(k).map(|&c| c as usize == r), end) {
                (None, _) | (Some(false), true) => 0.0,
                (Some(true), true) => 1.0,
                (Some(true), false) => 2.0,
                (Some(false), false) => -1.0,
            });
        }
    }
    a.values.set_data(&values).unwrap();
    let rhs: Vec<f32> = (0..nodes.size())
        .map(|r| f32::from(u8::from(ids[r] % 8 != 0)))
        .collect();
    let b = ctx.dat("b", &nodes, 1, &rhs).unwrap();
    let u = ctx.dat_zeros::<f32>("u", &nodes, 1).unwrap();
    let m = Amg::new(&ctx, &a, &AmgOptions::default()).unwrap();
    assert_eq!(m.report().levels.len(), 2, "{:?}", m.report());
    cg(&ctx, &a, &b, &u, Some(&m), &SolveOptions::default()).unwrap();
    for (r, v) in u.data_ro().unwrap().iter().enumerate() {
        let i = ids[r] as f32;
        let want = i * (8.0 - i) / 2.0;
        assert!(
            (v - want).abs() <= 1e-4 * 8.0,
            "rank {}: u at node {i} is {v}, want {want}",
            ctx.rank()
        );
    }
    if ctx.rank() == 0 {
        let v = [
            x[0] as f64,
            x[1] as f64,
            rep.iterations as f64,
            f64::from(u8::from(refused)),
        ];
        std::fs::write(out, bytemuck::cast_slice(&v)).unwrap();
    }
}

#[test]
fn local_matrices_stay_local_and_a_map_new_row_map_is_refused_on_2_ranks() {
    let got = mpirun_f64(2, &worker!("local_and_refused_worker"), &[]);
    assert_eq!(got.len(), 4, "{got:?}");
    assert!(
        (got[0] - 0.5e-4).abs() < 1e-9 && (got[1] - 2e-4 / 3.0).abs() < 1e-9,
        "{got:?}"
    );
    assert!(got[2] >= 1.0, "rank 0 stopped after {} iterations", got[2]);
    assert_eq!(got[3], 1.0);
}
