//! Sparse linear algebra on the device (issue 26): a [`Sparsity`] built from pairs of maps, a
//! [`Mat`] assembled by par_loops (PyOP2's `Mat`), and conjugate gradients ([`cg`]) whose
//! iterations never wait for the host.
//!
//! Native only for now: `cg` reads the residual with blocking host reads (the browser needs
//! them async).
//!
//! Owns: matrices and solvers. Must never: touch the device except through par_loops.

mod cg;
mod mat;
mod sparsity;

pub use cg::{CgOptions, Operator, SolveReport, cg};
pub use mat::Mat;
pub use sparsity::Sparsity;
