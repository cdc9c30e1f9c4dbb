//! parloop's integration tests, one binary (as naga's and rust-analyzer's): a module per thing
//! tested. `cargo test` runs them all; `cargo test --test it -- lazy::` runs one module. The
//! distributed tests (`mpi::`) need the `mpi` feature and Open MPI's `mpirun`:
//! `cargo test --features mpi,ptscotch,hdf5 --test it -- mpi::`.

/// The full test name (`module::test`, as `--exact` wants it) of the worker test `name` in the
/// calling module, which the distributed tests run under `mpirun`.
#[cfg(feature = "mpi")]
macro_rules! worker {
    ($name:literal) => {
        crate::common::mpirun::test_path(module_path!(), $name)
    };
}

mod common;
mod examples;
mod fuzz_model;
mod geometry_model;
mod gmsh_meshes;

mod advection;
mod airfoil;
mod amg;
mod arith;
mod bench_report;
mod chebyshev;
mod check;
mod contention;
mod dirichlet;
mod distribute;
mod double_precision;
mod edge_cases;
mod errors;
mod fusion;
mod fuzz;
mod geometry;
mod geometry_3d;
mod gmres;
mod gmsh;
mod gmsh_fuzz;
mod heat;
mod krylov;
mod layout;
mod lazy;
mod linalg;
mod linalg_block;
mod linalg_cg;
mod par_loop;
mod partition;
mod poisson;
mod prefetch;
mod profile;
mod renumber;
mod solve_report;
mod tidy;
mod tune;
mod tune_caps;
mod vtk;
mod wave;
mod wave3;

#[cfg(feature = "mpi")]
mod dist_fuzz_model;
#[cfg(feature = "mpi")]
mod mpi;
