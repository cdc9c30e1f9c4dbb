//! The distributed differential fuzzer: random programs on random distributed meshes
//! (`tests/it/dist_fuzz_model/`), run under `mpirun` on 2, 3 and 4 ranks, compared with the
//! plain-Rust model on the global mesh, exactly. Each case draws its configuration as the
//! single-process fuzzer does (every strategy, lazy and eager, fusion, block and workgroup
//! sizes, checking mode).
//!
//! One `mpirun` runs a batch of seeds (`dist_fuzz_worker`); every rank writes a line per case
//! to its own file: `start <seed>`, then `ok <seed>` or `fail <seed> <why>`. A hang is caught
//! by parloop itself: the workers run with `PARLOOP_COMM_TIMEOUT=60`, so a rank that waits
//! for the others longer than that aborts the job naming itself and what it waits in; the
//! driver reports the seed that was running with that message, then goes on from the next
//! seed in a new `mpirun`.
//!
//! `cargo test --features mpi --test it -- mpi::fuzz::`; the long run:
//! `DIST_FUZZ_CASES=700 cargo test --release --features mpi --test it -- mpi::fuzz::long_run --ignored --nocapture`;
//! one seed: `DIST_FUZZ_SEED=<seed> DIST_FUZZ_RANKS=<n> cargo test --features mpi --test it -- mpi::fuzz::one_seed --ignored --nocapture`.

use crate::common::mpirun;
use crate::dist_fuzz_model;
#[allow(dead_code)]
use crate::fuzz_model;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Stdio;

use fuzz_model::Case;
use parloop::dist::Comm;
use parloop::{Config, Context};

/// Seeds that failed before issue 25's fixes (ranks, seed, what the fuzzer saw then). The hangs
/// are the deadlocks of a decision one rank made from its own sizes (an exchange recorded on
/// some ranks only: an exec halo, a host write on a rank without halo) and of a rank that
/// errored and went on to the next program while the others waited.
const REGRESSIONS: &[(usize, u64, &str)] = &[
    (
        2,
        4,
        "RW through a globally injective map refused on rank 1 only (unused rows at 0)",
    ),
    (
        2,
        19,
        "WRITE/RW through an injective map refused on one rank, the other hung",
    ),
    (2, 5, "hung"),
    (2, 10, "hung"),
    (2, 13, "hung"),
    (2, 15, "hung"),
    (3, 10003, "hung"),
    (
        3,
        10006,
        "checking mode saw different loops: a rank had gone on after an error",
    ),
    (
        3,
        10026,
        "an i32 Global 886 where the model has 370 (exec-halo elements counted)",
    ),
    (
        2,
        2_000_051,
        "an f64 Dat on a rank that owns none of its set: its empty host copy was refused as \
         misaligned",
    ),
    (
        2,
        29,
        "set_data forced as data() on a rank with a halo and as a host write on a rank \
         without: two calls to the tagged agreement",
    ),
];

#[test]
#[ignore = "run by the other tests under mpirun"]
fn dist_fuzz_worker() {
    let Some(out) = std::env::var_os("MPI_TEST_OUT").map(PathBuf::from) else {
        return;
    };
    let first: u64 = env("FUZZ_FIRST").unwrap_or(1);
    let count: u64 = env("FUZZ_CASES").unwrap_or(1);
    let comm = Comm::world().unwrap();
    let probe = Context::with_comm(Config::from_env().unwrap(), &comm).unwrap();
    let atomics = probe.gpu().float_atomics();
    drop(probe);
    let path = format!("{}.{}", out.display(), comm.rank());
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .unwrap();
    for seed in first..first + count {
        writeln!(file, "start {seed}").unwrap();
        let case = Case::new(seed, atomics, true);
        let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let ctx = Context::with_comm(config(&case), &comm).map_err(|e| e.to_string())?;
            let mut w = dist_fuzz_model::World::new(ctx, seed)?;
            w.run().map_err(|e| format!("{e} ({})", w.describe))
        }));
        let how = format!(
            "{}, trace bound {}, soa {}",
            case.describe(),
            config(&case).trace_bound,
            config(&case).soa
        );
        let line = match result {
            Ok(Ok(())) => format!("ok {seed}"),
            Ok(Err(e)) => format!("fail {seed} {how}: {e}"),
            Err(_) => format!("fail {seed} {how}: panicked (see stderr)"),
        };
        writeln!(file, "{}", line.replace('\n', " | ")).unwrap();
        if result_panicked(&line) {
            // The other ranks may be inside a collective: end the job.
            std::process::abort();
        }
    }
}

/// The case's configuration; one case in three with a trace bound of 2-8 pending loops, so
/// that the trace forces itself mid-program (a force every rank must reach at the same loop);
/// one in four with struct-of-arrays Dats; `tune` with a cache file every rank of the job
/// shares (and later cases read).
fn config(case: &Case) -> Config {
    let mut config = case.config();
    if case.seed % 3 == 0 {
        config.trace_bound = 2 + (case.seed / 3 % 7) as usize;
    }
    config.soa |= case.seed % 4 == 1;
    if case.strategy == parloop::Strategy::Tune {
        let file =
            std::env::temp_dir().join(format!("parloop-dist-fuzz-tune-{}.json", case.seed % 3));
        config.tune_cache = parloop::TuneCache::File(file);
    }
    config
}

fn result_panicked(line: &str) -> bool {
    line.ends_with("panicked (see stderr)")
}

fn env<T: std::str::FromStr>(name: &str) -> Option<T> {
    std::env::var(name).ok().and_then(|v| v.parse().ok())
}

/// Runs seeds `first..first + count` on `np` ranks; returns the failures (seed, why).
fn run_seeds(np: usize, first: u64, count: u64) -> Vec<(u64, String)> {
    let mut failures = Vec::new();
    let mut next = first;
    let end = first + count;
    let t0 = std::time::Instant::now();
    while next < end {
        let (results, stderr) = mpirun_batch(np, next, end - next);
        let mut started = None;
        for (seed, outcome) in &results {
            match outcome {
                None => started = Some(*seed),
                Some(Ok(())) => started = None,
                Some(Err(why)) => {
                    started = None;
                    failures.push((*seed, why.clone()));
                }
            }
        }
        let last = results.iter().map(|r| r.0).max();
        match (started, last) {
            (Some(seed), _) => {
                // The job ended inside this case: a hang reported by parloop's timeout, or
                // an abort.
                let why: Vec<&str> = stderr
                    .lines()
                    .filter(|l| l.contains("parloop:") || l.contains("panicked"))
                    .take(4)
                    .collect();
                failures.push((
                    seed,
                    format!("the job ended in this case: {}", why.join(" | ")),
                ));
                next = seed + 1;
            }
            (None, Some(l)) if l + 1 < end => next = l + 1,
            (None, Some(_)) => next = end,
            (None, None) => panic!("mpirun -np {np} ran no case:\n{stderr}"),
        }
    }
    eprintln!(
        "dist fuzz: {count} cases from seed {first} on {np} ranks in {:.0} s, {} failed",
        t0.elapsed().as_secs_f64(),
        failures.len()
    );
    failures
}

type Outcome = Option<Result<(), String>>;

/// One mpirun over a batch; per seed what the ranks wrote (None: started, never finished),
/// and mpirun's stderr.
fn mpirun_batch(np: usize, first: u64, count: u64) -> (Vec<(u64, Outcome)>, String) {
    let (mut cmd, out) = mpirun::command(np, &worker!("dist_fuzz_worker"), &[]);
    let err_path = out.with_extension("stderr");
    cmd.env("FUZZ_FIRST", first.to_string())
        .env("FUZZ_CASES", count.to_string())
        .env("LP_NUM_THREADS", "1")
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&err_path).unwrap());
    if std::env::var_os("PARLOOP_COMM_TIMEOUT").is_none() {
        // Generous: ranks oversubscribed on a loaded machine compile a case's shaders (a
        // dozen more with the linear algebra) one after another; 20 s once timed out there.
        cmd.env("PARLOOP_COMM_TIMEOUT", "60");
    }
    let mut child = cmd.spawn().expect("mpirun (Open MPI) on the PATH");
    // parloop's own timeout ends a hung job; this deadline only guards the harness.
    let secs = env("DIST_FUZZ_DEADLINE").unwrap_or(120 + 60 * count);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(secs);
    loop {
        if child.try_wait().unwrap().is_some() {
            break;
        }
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let stderr = std::fs::read_to_string(&err_path).unwrap_or_default();
    let _ = std::fs::remove_file(&err_path);
    let mut results: Vec<(u64, Outcome)> = Vec::new();
    for rank in 0..np {
        let path = PathBuf::from(format!("{}.{rank}", out.display()));
        merge(&mut results, &path, rank);
        let _ = std::fs::remove_file(&path);
    }
    (results, stderr)
}

/// Adds one rank's lines: a case fails when any rank says so.
fn merge(results: &mut Vec<(u64, Outcome)>, path: &Path, rank: usize) {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    for line in text.lines() {
        let mut it = line.splitn(3, ' ');
        let (kind, seed) = (it.next(), it.next().and_then(|s| s.parse::<u64>().ok()));
        let Some(seed) = seed else { continue };
        let at = match results.iter().position(|r| r.0 == seed) {
            Some(i) => i,
            None => {
                results.push((seed, None));
                results.len() - 1
            }
        };
        let slot = &mut results[at].1;
        match kind {
            Some("ok") if slot.is_none() => *slot = Some(Ok(())),
            Some("fail") => {
                let why = format!("rank {rank}: {}", it.next().unwrap_or(""));
                if !matches!(slot, Some(Err(_))) {
                    *slot = Some(Err(why));
                }
            }
            _ => {}
        }
    }
    // A rank that never finished a case leaves it unfinished, whatever the others said.
    for r in results.iter_mut() {
        let finished = text
            .lines()
            .any(|l| l == format!("ok {}", r.0) || l.starts_with(&format!("fail {} ", r.0)));
        let started = text.lines().any(|l| l == format!("start {}", r.0));
        if started && !finished {
            r.1 = None;
        }
    }
}

fn assert_none(failures: &[(u64, String)], what: &str) {
    for (seed, why) in failures {
        eprintln!("FAILED seed {seed} ({what}): {why}\n");
    }
    let seeds: Vec<u64> = failures.iter().map(|f| f.0).collect();
    assert!(failures.is_empty(), "{what}: failing seeds {seeds:?}");
}

/// CI's count: `DIST_FUZZ_CASES` programs on 2 ranks and as many on 3.
#[test]
fn random_programs_on_2_and_3_ranks_match_the_model() {
    let count = env("DIST_FUZZ_CASES").unwrap_or(30);
    let first = env("DIST_FUZZ_FIRST").unwrap_or(1);
    let mut failures = run_seeds(2, first, count);
    failures.extend(run_seeds(3, first + 10_000, count));
    assert_none(&failures, "2 and 3 ranks");
}

#[test]
fn regression_seeds_match_the_model() {
    for &(np, seed, defect) in REGRESSIONS {
        let failures = run_seeds(np, seed, 1);
        assert_none(&failures, &format!("regression on {np} ranks ({defect})"));
    }
}

/// The long run: `DIST_FUZZ_CASES` programs on each of 2, 3 and 4 ranks.
#[test]
#[ignore]
fn long_run() {
    let count = env("DIST_FUZZ_CASES").unwrap_or(700);
    let mut failures = Vec::new();
    for np in [2, 3, 4] {
        failures.extend(run_seeds(np, 1_000_000 * np as u64, count));
    }
    assert_none(&failures, "long run");
}

#[test]
#[ignore]
fn one_seed() {
    let seed = env("DIST_FUZZ_SEED").expect("set DIST_FUZZ_SEED");
    let np = env("DIST_FUZZ_RANKS").unwrap_or(2);
    assert_none(
        &run_seeds(np, seed, 1),
        &format!("seed {seed} on {np} ranks"),
    );
}
