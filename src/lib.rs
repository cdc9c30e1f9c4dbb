//! parloop runs data-parallel loops over unstructured meshes on any GPU through WebGPU (wgpu).
//!
//! Declare sets, data on sets ([`Dat`]) and maps between sets, write kernels in WGSL, and call
//! [`Context::par_loop`]. Nothing runs until the program looks at a result; then the loops that
//! result needs are grouped, compiled to WGSL compute shaders, and submitted at once.
//!
//! Public modules beside the crate root: [`dist`] distributes a mesh over MPI ranks (feature
//! `mpi`): each rank runs the same program on its part; [`graph`] is the loop-graph partitioner
//! and [`plan`] the mini-partitioning and colouring of a loop, both useful on their own (the
//! `parloop` CLI runs them); [`mesh`] makes and reads meshes; [`apps`] holds the demos'
//! solvers (wave, Airfoil). The other stages (trace, fusion, code generation, runtime) are
//! internal; ARCHITECTURE.md maps them.

// Numeric code (kernels in Rust, plans, splines) indexes several arrays with one index, as the
// formulas do; iterator rewrites would hide that.
#![allow(clippy::needless_range_loop)]
#![warn(missing_docs)]

pub mod apps;
mod codegen;
mod config;
mod context;
mod data;
pub mod dist;
mod error;
mod fuse;
pub mod graph;
#[cfg(all(feature = "hdf5", not(target_arch = "wasm32")))]
pub mod h5;
mod kernel;
pub mod linalg;
mod lower;
pub mod mesh;
mod part;
pub mod plan;
mod profile;
mod runtime;
mod trace;
mod types;
#[doc(hidden)]
pub mod util;

pub use config::{AdapterChoice, Config, Staging, Strategy, TuneCache, Variant};
pub use context::Context;
pub use data::{Arg, ConstValue, Dat, Global, Indirect, IterSpace, Map, Sections, Set, Subset};
pub use error::{Error, LoopSite, Result, SolverFailure};
pub use kernel::{HostArgs, Kernel};
pub use runtime::device::report as adapter_report;
pub use runtime::{Gpu, KernelTime, Stats, Tried, TuneReport};
pub use types::{Access, DType, Real, Scalar};

/// The README's example, compiled and run as a doctest.
#[doc = include_str!("../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctest;
