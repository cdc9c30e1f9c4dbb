//! Distributed runs under `mpirun` (Open MPI), each against a one-process run that is itself
//! checked against plain Rust, or against plain Rust directly. Each test runs an ignored worker
//! test of this binary on N ranks (`common::mpirun`).

mod amg;
mod apps;
mod blocks;
mod diverged;
mod edge_cases;
mod examples;
mod fuzz;
#[cfg(feature = "hdf5")]
mod h5;
mod halo;
mod linalg;
mod mesh;
mod profile;
mod pvtu;
mod seams;
