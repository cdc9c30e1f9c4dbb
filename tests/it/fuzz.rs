//! The differential fuzzer: random parloop programs compared with an independent model.
//!
//! Each case builds a random program (kernel templates over random Sets, Maps, Subsets, Dats of
//! every type, Globals, Consts that change between loops, host kernels, temporaries dropped
//! mid-program, Maps and Dats made and dropped between forces) and runs it under one
//! configuration drawn from every strategy (hierarchical in its three staging modes,
//! global-colour, cas, atomics where the adapter has them), lazy and eager, fused and unfused,
//! random block and workgroup sizes, and a small cap on workgroups per grid dimension (so that
//! rounded-up 2-D grids, with idle workgroups, appear on small meshes). The model
//! (`tests/it/fuzz_model/`) is plain Rust that knows nothing of parloop's runtime: it gathers,
//! calls the template and scatters element by element, in order.
//!
//! Values are kept where every operation is exact: f32 values are multiples of 1/4 far below
//! 2^22, so sums in any order give the same bits, and every comparison is exact (integers and
//! f32 alike). A failure prints the seed and the configuration; `FUZZ_SEED=<seed> cargo test
//! --test it -- fuzz::one_seed --ignored --nocapture` replays it.

use crate::common;
use crate::fuzz_model;

use fuzz_model::{Case, run_case};

/// Seeds that found bugs before they were fixed (kept as regression cases), with the bug.
const REGRESSIONS: &[(u64, &str)] = &[
    (
        49,
        "a staged map's unused index was staged and written back (adding zero) outside the \
         block's colouring footprint, racing with another block (one Dat through two maps)",
    ),
    (
        30,
        "hierarchical staging with a grid limit failed in one run of five (the same race)",
    ),
    (
        114,
        "hierarchical staging with a grid limit failed in one run of five (the same race)",
    ),
    (
        2,
        "a host kernel saw a WRITE argument's old value, GPU kernels see zeros",
    ),
    (
        3,
        "a Global reduction with 48 invocations per workgroup dropped partial sums",
    ),
    (
        13,
        "a Global reduction with 96 invocations per workgroup dropped partial sums",
    ),
    (
        49,
        "hierarchical: one Dat incremented through two maps, stage-outs raced",
    ),
    (
        105,
        "a dropped Map's buffer, reused for a Dat, lacked COPY_DST",
    ),
];

/// Cases the default test run makes (a few minutes on a software adapter).
const CI_CASES: u64 = 160;

fn run_many(first: u64, count: u64) {
    let probe = common::ctx();
    let atomics = probe.gpu().float_atomics();
    drop(probe);
    let t0 = std::time::Instant::now();
    let mut failures = Vec::new();
    for seed in first..first + count {
        let case = Case::new(seed, atomics, true);
        let t = std::time::Instant::now();
        if let Err(e) = run_case(&case) {
            eprintln!("FAILED seed {seed} ({}):\n{e}\n", case.describe());
            failures.push(seed);
        }
        if std::env::var_os("FUZZ_TIMES").is_some() {
            eprintln!(
                "seed {seed}: {:.2} s ({})",
                t.elapsed().as_secs_f64(),
                case.describe()
            );
        }
    }
    let secs = t0.elapsed().as_secs_f64();
    eprintln!(
        "fuzz: {count} cases from seed {first} in {secs:.1} s ({:.0} cases/min), {} failed",
        count as f64 / secs * 60.0,
        failures.len()
    );
    assert!(failures.is_empty(), "failing seeds: {failures:?}");
}

/// `FUZZ_CASES` and `FUZZ_FIRST` change the count and the first seed (CI runs fewer on the
/// slower OpenGL adapter).
#[test]
fn random_programs_match_the_model() {
    let count = std::env::var("FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(CI_CASES);
    let first = std::env::var("FUZZ_FIRST")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1);
    run_many(first, count);
}

#[test]
fn regression_seeds_match_the_model() {
    let probe = common::ctx();
    let atomics = probe.gpu().float_atomics();
    drop(probe);
    for &(seed, bug) in REGRESSIONS {
        let case = Case::new(seed, atomics, false);
        if !fuzz_model::allowed(case.strategy, case.staging) {
            eprintln!("regression seed {seed} skipped: FUZZ_STRATEGIES leaves out its strategy");
            continue;
        }
        if let Err(e) = run_case(&case) {
            panic!("regression seed {seed} ({bug}; {}):\n{e}", case.describe());
        }
    }
}

/// The long run: `FUZZ_CASES=5000 cargo test --release --test it -- fuzz::long_run --ignored --nocapture`.
#[test]
#[ignore]
fn long_run() {
    let count = std::env::var("FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(2000);
    run_many(1_000_000, count);
}

/// Replays one seed: `FUZZ_SEED=<seed> cargo test --test it -- fuzz::one_seed --ignored
/// --nocapture`.
#[test]
#[ignore]
fn one_seed() {
    let seed: u64 = std::env::var("FUZZ_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .expect("set FUZZ_SEED to the seed to replay");
    let probe = common::ctx();
    let mut case = Case::new(seed, probe.gpu().float_atomics(), false);
    drop(probe);
    // Overrides, to narrow a failure down: FUZZ_GRID_LIMIT (0: none), FUZZ_WORKGROUP_SIZE.
    if let Ok(v) = std::env::var("FUZZ_GRID_LIMIT") {
        case.grid_limit = v.parse().ok().filter(|&l| l > 0);
    }
    if let Some(v) = std::env::var("FUZZ_WORKGROUP_SIZE")
        .ok()
        .and_then(|v| v.parse().ok())
    {
        case.workgroup_size = v;
    }
    eprintln!("seed {seed}: {}", case.describe());
    if let Err(e) = run_case(&case) {
        panic!("seed {seed}:\n{e}");
    }
}
