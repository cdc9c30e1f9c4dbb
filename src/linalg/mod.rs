//! Sparse matrices and Krylov solvers on the device.
//!
//! A [`Sparsity`] is built from pairs of maps, a [`Mat`] is assembled by par_loops (PyOP2's
//! `Mat`), [`Dirichlet`] applies boundary conditions, and the solvers' iterations never wait for
//! the host: conjugate gradients ([`cg`]) and BiCGStab ([`bicgstab`]). `cg` and `bicgstab` block
//! on their residual checks (native); `cg_async` and `bicgstab_async` await them (the
//! browser's).

mod bicgstab;
mod cg;
mod dirichlet;
mod mat;
mod solve;
mod sparsity;

#[cfg(not(target_arch = "wasm32"))]
pub use bicgstab::bicgstab;
pub use bicgstab::bicgstab_async;
#[cfg(not(target_arch = "wasm32"))]
pub use cg::cg;
pub use cg::cg_async;
pub use dirichlet::{Dirichlet, Lifting};
pub use mat::Mat;
pub use solve::{Operator, SolveOptions, SolveReport};
pub use sparsity::Sparsity;
