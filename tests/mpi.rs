//! Distributed runs under `mpirun` against the same program on one process: the wave on 1, 2,
//! 3 and 4 ranks, Airfoil on 1, 2, 3 and 4 ranks. Each case runs this test binary under `mpirun` with one ignored worker test
//! selected; rank 0 writes what it gathered to a file this test reads.
//!
//! `cargo test --features mpi --test mpi` (needs Open MPI's `mpirun`).

mod common;

use parloop::apps::airfoil::Airfoil;
use parloop::apps::wave::Wave;
use parloop::dist::{Comm, Partitioner};
use parloop::mesh::airfoil::naca0012;
use parloop::mesh::unit_square;
use parloop::{Config, Context};
use std::path::PathBuf;
use std::process::Command;

const N: usize = 24;
const STEPS: usize = 200;
const DT: f32 = 0.001;

/// Runs the worker test `worker` on `np` ranks; returns what rank 0 wrote.
fn mpirun(np: usize, worker: &str, partitioner: &str) -> Vec<f32> {
    let out = std::env::temp_dir().join(format!(
        "parloop-mpi-{worker}-{np}-{partitioner}-{}.bin",
        std::process::id()
    ));
    let exe = std::env::current_exe().unwrap();
    let status = Command::new("mpirun")
        .args([
            "--allow-run-as-root",
            "--oversubscribe",
            "-np",
            &np.to_string(),
        ])
        .arg(&exe)
        .args([
            "--exact",
            worker,
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("MPI_TEST_OUT", &out)
        .env("MPI_TEST_PARTITIONER", partitioner)
        .status()
        .expect("mpirun (Open MPI) on the PATH");
    assert!(
        status.success(),
        "mpirun -np {np} {worker} failed: {status}"
    );
    let bytes = std::fs::read(&out).unwrap();
    let _ = std::fs::remove_file(&out);
    bytemuck::cast_slice(&bytes).to_vec()
}

fn out_path() -> Option<PathBuf> {
    std::env::var_os("MPI_TEST_OUT").map(PathBuf::from)
}

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
fn the_wave_on_1_2_and_4_ranks_equals_one_process() {
    let want = wave_reference();
    for np in [1, 2, 4] {
        let got = mpirun(np, "wave_worker", "block");
        assert_close(&got, &want, &format!("wave on {np} ranks"));
    }
    let got = mpirun(3, "wave_worker", "scattered");
    assert_close(&got, &want, "wave on 3 ranks, cells dealt round-robin");
    let got = mpirun(3, "wave_worker", "kway");
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
fn airfoil_on_1_to_4_ranks_equals_one_process() {
    let ctx = common::ctx();
    let a = Airfoil::new(&ctx, &naca0012(60, 90)).unwrap();
    let (history, q) = airfoil_run(&a, &ctx);
    let q = q.unwrap();
    for np in 1..=4 {
        let got = mpirun(np, "airfoil_worker", "block");
        let (h, gq) = got.split_at(AIRFOIL_ITERATIONS);
        for (i, (g, w)) in h.iter().zip(&history).enumerate() {
            assert!(
                (g - w).abs() <= 1e-5 * w.abs(),
                "Airfoil on {np} ranks: rms after iteration {}: {g} vs one process {w}",
                i + 1
            );
        }
        assert_close(gq, &q, &format!("Airfoil's q on {np} ranks"));
    }
}
