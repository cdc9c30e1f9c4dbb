//! Applications built on parloop, shared by the examples, the browser demo, tests and benchmarks.

pub mod airfoil;
pub mod poisson;
pub mod wave;
