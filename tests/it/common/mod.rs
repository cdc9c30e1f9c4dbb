//! Shared test helpers: a context on whatever software adapter is present (PARLOOP_BACKEND and
//! PARLOOP_ADAPTER choose), and small random inputs.
#![allow(dead_code)]

pub mod decl;
pub mod mpirun;
pub mod vtu;

use parloop::util::Rng;
use parloop::{Config, Context, Map, Set, Staging, Strategy, Variant};

pub fn ctx() -> Context {
    ctx_with(Config::from_env().unwrap())
}

pub fn ctx_with(config: Config) -> Context {
    // `tune` keeps no choices between test runs (the user's cache would make a run depend on
    // the last), unless a test names a file.
    let config = match config.tune_cache {
        parloop::TuneCache::User => Config {
            tune_cache: parloop::TuneCache::Off,
            ..config
        },
        parloop::TuneCache::Off | parloop::TuneCache::File(_) => config,
    };
    Context::with_config(config).unwrap_or_else(|e| panic!("no adapter for the tests: {e}"))
}

/// A random map with values in 0..to.size().
pub fn random_map(name: &str, from: &Set, to: &Set, arity: usize, seed: u64) -> Map {
    let mut rng = Rng::new(seed);
    let values: Vec<u32> = (0..from.size() * arity)
        .map(|_| rng.below(to.size()) as u32)
        .collect();
    Map::new(name, from, to, arity, &values).unwrap()
}

/// Small integers as f32: sums stay exact whatever the order of additions.
pub fn small_ints(n: usize, seed: u64) -> Vec<f32> {
    let mut rng = Rng::new(seed);
    (0..n).map(|_| (rng.below(15) as f32) - 7.0).collect()
}

/// Every strategy the adapter supports (atomics only with f32 atomics), with hierarchical in
/// its three staging modes, and `staged`.
pub fn strategies(probe: &Context) -> Vec<(Strategy, Staging)> {
    Variant::available(probe.gpu().float_atomics())
        .map(|v| (v.strategy, v.staging))
        .collect()
}

/// A P1 triangle's area and the gradients of its three hat functions, in plain Rust (f64),
/// from its vertices' coordinates (a mesh's, z ignored): the element of the tests' reference
/// matrices.
pub fn p1_element(p: [[f64; 3]; 3]) -> (f64, [[f64; 2]; 3]) {
    let det = (p[1][0] - p[0][0]) * (p[2][1] - p[0][1]) - (p[2][0] - p[0][0]) * (p[1][1] - p[0][1]);
    let g = std::array::from_fn(|i| {
        let (j, k) = ((i + 1) % 3, (i + 2) % 3);
        [(p[j][1] - p[k][1]) / det, (p[k][0] - p[j][0]) / det]
    });
    (det.abs() / 2.0, g)
}
