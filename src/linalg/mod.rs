//! Sparse linear algebra on the device (issue 26): a [`Sparsity`] built from pairs of maps, a
//! [`Mat`] assembled by par_loops (PyOP2's `Mat`), and Krylov solvers whose iterations never
//! wait for the host: conjugate gradients ([`cg`]) and BiCGStab ([`bicgstab`]).
//!
//! Native only for now: `cg` reads the residual with blocking host reads (the browser needs
//! them async).
//!
//! Owns: matrices and solvers. Must never: touch the device except through par_loops.

mod bicgstab;
mod cg;
mod mat;
mod solve;
mod sparsity;

pub use bicgstab::bicgstab;
pub use cg::cg;
pub use mat::Mat;
pub use solve::{Operator, SolveOptions, SolveReport};
pub use sparsity::Sparsity;
