//! Runs a worker test of the calling test binary under `mpirun` (Open MPI).
#![allow(dead_code)]

use std::path::PathBuf;
use std::process::Command;

/// The name libtest gives the test `name` of the module `module` (a `module_path!()`, whose
/// first segment is this binary's crate): what `--exact` matches. The `worker!` macro calls it.
pub fn test_path(module: &str, name: &str) -> String {
    let within = module.split_once("::").map_or("", |(_, rest)| rest);
    if within.is_empty() {
        name.to_string()
    } else {
        format!("{within}::{name}")
    }
}

/// Runs the worker test `worker` (its full name: `worker!("name")`) on `np` ranks; returns
/// what rank 0 wrote.
pub fn mpirun(np: usize, worker: &str, partitioner: &str) -> Vec<f32> {
    mpirun_env(np, worker, &[("MPI_TEST_PARTITIONER", partitioner)])
}

/// Runs the worker test `worker` on `np` ranks with extra environment variables; returns
/// what rank 0 wrote.
pub fn mpirun_env(np: usize, worker: &str, env: &[(&str, &str)]) -> Vec<f32> {
    run(np, worker, env)
}

/// [`mpirun_env`] for a worker that writes f64 values.
pub fn mpirun_f64(np: usize, worker: &str, env: &[(&str, &str)]) -> Vec<f64> {
    run(np, worker, env)
}

/// `mpirun` running the worker test `worker` of this test binary on `np` ranks; rank 0 writes
/// its result to a file of its own (tests of one binary run in parallel), returned beside.
pub fn command(np: usize, worker: &str, env: &[(&str, &str)]) -> (Command, PathBuf) {
    static RUNS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let run = RUNS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let out = std::env::temp_dir().join(format!(
        "parloop-mpi-{worker}-{np}-{}-{run}.bin",
        std::process::id()
    ));
    let mut cmd = Command::new("mpirun");
    cmd.args([
        "--allow-run-as-root",
        "--oversubscribe",
        "-np",
        &np.to_string(),
    ])
    .arg(std::env::current_exe().unwrap())
    .args([
        "--exact",
        worker,
        "--ignored",
        "--nocapture",
        "--test-threads=1",
    ])
    .env("MPI_TEST_OUT", &out)
    .envs(env.iter().copied());
    (cmd, out)
}

fn run<T: bytemuck::Pod>(np: usize, worker: &str, env: &[(&str, &str)]) -> Vec<T> {
    let (mut cmd, out) = command(np, worker, env);
    let mut child = cmd.spawn().expect("mpirun (Open MPI) on the PATH");
    // A rank that panics aborts (see `out_path`), which ends the job; a hang is still
    // possible in principle, so the run has a deadline.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(300);
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            panic!("mpirun -np {np} {worker} ran past 300 s: killed");
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    assert!(
        status.success(),
        "mpirun -np {np} {worker} failed: {status}"
    );
    let bytes = std::fs::read(&out).unwrap();
    let _ = std::fs::remove_file(&out);
    bytemuck::pod_collect_to_vec(&bytes)
}

/// Runs the worker test `worker` on `np` ranks and returns whether the job succeeded, with
/// its standard error (for jobs that must fail).
pub fn mpirun_status(np: usize, worker: &str, env: &[(&str, &str)]) -> (bool, String) {
    let (mut cmd, out) = command(np, worker, env);
    let output = cmd.output().expect("mpirun (Open MPI) on the PATH");
    let _ = std::fs::remove_file(&out);
    (
        output.status.success(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

/// In a worker (under mpirun): where rank 0 writes its result. A panic on one rank aborts
/// the process, so that mpirun ends the job instead of leaving the other ranks waiting in a
/// collective.
pub fn out_path() -> Option<PathBuf> {
    let out = std::env::var_os("MPI_TEST_OUT").map(PathBuf::from)?;
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        default(info);
        std::process::abort();
    }));
    Some(out)
}

/// In a worker: rank 0 reports success (the value 1.0) to the test that launched the job.
pub fn report_done(rank: usize, out: &std::path::Path) {
    if rank == 0 {
        std::fs::write(out, bytemuck::cast_slice(&[1.0f32])).unwrap();
    }
}
