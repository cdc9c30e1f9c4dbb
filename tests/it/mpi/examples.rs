//! The examples' programs (examples/poisson.rs, heat.rs, advection.rs and the wave) run
//! unchanged under `mpirun -np 2` and `-np 3`: the same source, a `Context::new()` that finds
//! the launcher, `MeshData::new` partitioning the mesh. Each gives the one-process run's
//! result: in f64, CG's iteration counts within one and every value to 1e-10 of its scale;
//! in f32, to round-off (sums in another order). The one-process runs are themselves checked
//! against plain-Rust models and SciPy in tests/it/poisson.rs, heat.rs, advection.rs and wave.rs.
//!
//! `cargo test --features mpi --test it -- mpi::examples::` (needs Open MPI's `mpirun`).

use crate::common;
use crate::common::mpirun;

use crate::examples::advection;
use crate::examples::heat;
use crate::examples::poisson;

use parloop::apps::wave::Wave;
use parloop::linalg::SolveOptions;
use parloop::mesh::{Mesh, gmsh, unit_cube_tets, unit_square};
use parloop::{Context, Real};

fn channel() -> Mesh {
    gmsh::read_file(concat!(env!("CARGO_MANIFEST_DIR"), "/data/channel.msh")).unwrap()
}

/// One case's result: counts (compared within `slack`) and values (compared to `tol` of
/// their scale), both on rank 0 (empty elsewhere).
struct Outcome {
    counts: Vec<f64>,
    values: Vec<f64>,
}

/// The cases: name, the counts' slack, the values' tolerance (relative to their largest).
fn cases(f64: bool) -> Vec<(&'static str, f64, f64)> {
    let (slack, tol) = if f64 { (1.0, 1e-10) } else { (3.0, 2e-4) };
    vec![
        ("poisson, channel, Dirichlet on the cylinder", slack, tol),
        ("poisson, unit square, f32", 3.0, 2e-4),
        ("heat, unit square", slack, tol),
        ("advection, channel, f32", 0.0, 1e-5),
        ("wave, tetrahedra, f32", 0.0, 1e-5),
    ]
}

fn poisson<T: Real>(ctx: &Context, mesh: &Mesh, group: Option<&str>, rtol: f64) -> Outcome {
    let opts = SolveOptions {
        rtol,
        ..SolveOptions::default()
    };
    let s = poisson::solve::<T>(ctx, mesh, group, &opts).unwrap();
    let mut values = vec![s.l2_error];
    let u = s.u.gather().unwrap().unwrap_or_default();
    values.extend(u.iter().map(|v| v.to_f64()));
    Outcome {
        counts: vec![s.report.iterations as f64],
        values,
    }
}

fn heat<T: Real>(ctx: &Context) -> Outcome {
    let h = heat::run::<T>(ctx, &unit_square(10), 2e-3, 4, false, 0, &mut |_, _, _| {
        Ok(())
    })
    .unwrap();
    let mut values = [h.heat, h.energy, h.amplitude].concat();
    values.extend(h.u);
    Outcome {
        counts: h.iterations.iter().map(|&i| i as f64).collect(),
        values,
    }
}

/// Runs case `k` on `ctx` (one process or every rank of a distributed run).
fn run_case(ctx: &Context, k: usize, f64: bool) -> Outcome {
    match k {
        // u is given (nonzero) on the cylinder, its normal derivative on the rest.
        0 if f64 => poisson::<f64>(ctx, &channel(), Some("cylinder"), 1e-10),
        0 => poisson::<f32>(ctx, &channel(), Some("cylinder"), 1e-6),
        1 => poisson::<f32>(ctx, &unit_square(12), None, 1e-6),
        2 if f64 => heat::<f64>(ctx),
        2 => heat::<f32>(ctx),
        3 => {
            let p = advection::Problem {
                u: [1.0, 0.2],
                cfl: 0.5,
                steps: 40,
                inlet: "inlet".into(),
            };
            let o = advection::solve(ctx, &channel(), &p, |_, _, _, _| Ok(())).unwrap();
            let mut values = vec![o.dt as f64, o.mass[1], o.outflow];
            values.extend(o.c.iter().map(|&v| v as f64));
            Outcome {
                counts: vec![],
                values,
            }
        }
        _ => {
            let mut w = Wave::on_mesh(ctx, unit_cube_tets(3), 0.002).unwrap();
            for _ in 0..10 {
                w.step().unwrap();
            }
            let mut values = vec![w.energy().unwrap()];
            let p = w.p.gather().unwrap().unwrap_or_default();
            values.extend(p.iter().map(|&v| v as f64));
            Outcome {
                counts: vec![],
                values,
            }
        }
    }
}

#[test]
#[ignore = "run by the other tests under mpirun"]
fn examples_worker() {
    let Some(out) = mpirun::out_path() else {
        return;
    };
    // What a user's program does: Context::new() finds mpirun and runs on MPI's world.
    let ctx = Context::new().unwrap();
    assert!(
        ctx.ranks() > 1,
        "Context::new() under mpirun is one rank of the world"
    );
    let f64 = ctx.gpu().f64();
    let mut words = Vec::new();
    for k in 0..cases(f64).len() {
        let o = run_case(&ctx, k, f64);
        for part in [&o.counts, &o.values] {
            words.push(part.len() as f64);
            words.extend(part);
        }
    }
    if ctx.rank() == 0 {
        std::fs::write(out, bytemuck::cast_slice(&words)).unwrap();
    }
}

#[test]
fn the_examples_give_the_one_process_results_on_2_and_3_ranks() {
    let ctx = common::ctx();
    assert_eq!(ctx.ranks(), 1, "the test itself runs on one process");
    let f64 = ctx.gpu().f64();
    let cases = cases(f64);
    let one: Vec<Outcome> = (0..cases.len()).map(|k| run_case(&ctx, k, f64)).collect();
    for np in [2, 3] {
        let got = mpirun::mpirun_f64(np, &worker!("examples_worker"), &[]);
        let mut at = 0;
        let mut next = || {
            let n = got[at] as usize;
            at += n + 1;
            got[at - n..at].to_vec()
        };
        for ((name, slack, tol), want) in cases.iter().zip(&one) {
            let (counts, values) = (next(), next());
            assert_eq!(counts.len(), want.counts.len(), "{name} on {np} ranks");
            for (g, w) in counts.iter().zip(&want.counts) {
                assert!(
                    (g - w).abs() <= *slack,
                    "{name} on {np} ranks: {counts:?} iterations, one process {:?}",
                    want.counts
                );
            }
            assert_eq!(values.len(), want.values.len(), "{name} on {np} ranks");
            let scale = want.values.iter().fold(0f64, |m, v| m.max(v.abs()));
            for (i, (g, w)) in values.iter().zip(&want.values).enumerate() {
                assert!(
                    (g - w).abs() <= tol * scale,
                    "{name} on {np} ranks: value {i} is {g}, one process {w} (scale {scale})"
                );
            }
        }
        assert_eq!(at, got.len(), "{np} ranks: every case read");
    }
}
