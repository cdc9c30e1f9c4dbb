//! Applications built on parloop, shared by the examples, the browser demo, tests and benchmarks.

pub mod airfoil;
#[cfg(not(target_arch = "wasm32"))]
pub mod poisson;
pub mod wave;
