//! parloop runs data-parallel loops over unstructured meshes on any GPU through WebGPU (wgpu).
//!
//! Declare sets, data on sets ([`Dat`]) and maps between sets, write kernels in WGSL, and call
//! [`Context::par_loop`]. Nothing runs until the program looks at a result; then the loops that
//! result needs are grouped, compiled to WGSL compute shaders, and submitted at once.
//!
//! The stages, one module each (see ARCHITECTURE.md): [`trace`] (lazy recording) ->
//! [`graph`] (loop-graph partitioning) -> [`plan`] (mini-partitions and colouring) ->
//! [`codegen`] (WGSL) -> [`runtime`] (wgpu). [`dist`] distributes a mesh over MPI ranks (feature
//! `mpi`): each rank runs the same program on its part.

// Numeric code (kernels in Rust, plans, splines) indexes several arrays with one index, as the
// formulas do; iterator rewrites would hide that.
#![allow(clippy::needless_range_loop)]

pub mod apps;
pub mod codegen;
mod config;
mod context;
pub mod data;
pub mod dist;
pub mod error;
pub(crate) mod fuse;
pub mod graph;
pub mod kernel;
pub mod mesh;
pub mod plan;
pub mod runtime;
pub mod trace;
pub mod types;
pub mod util;

pub use codegen::Staging;
pub use config::Config;
pub use context::Context;
pub use data::{Arg, ConstValue, Dat, Global, IterSpace, Map, Sections, Set, Subset};
pub use error::{Error, Result};
pub use kernel::{HostArgs, Kernel};
pub use runtime::Stats;
pub use runtime::lower::Strategy;
pub use types::{Access, DType, Scalar};

/// The README's example, compiled and run as a doctest.
#[doc = include_str!("../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctest;
