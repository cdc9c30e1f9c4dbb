//! Sparse matrices and Krylov solvers on the device.
//!
//! A [`Sparsity`] is built from pairs of maps, a [`Mat`] is assembled by par_loops (PyOP2's
//! `Mat`), [`Dirichlet`] applies boundary conditions, and the solvers' iterations never wait for
//! the host: conjugate gradients ([`cg`]) and BiCGStab ([`bicgstab`]), preconditioned by Jacobi
//! (the diagonal), smoothed-aggregation algebraic multigrid (`Amg`, native) or any
//! [`Preconditioner`]. `cg` and `bicgstab` block on their residual checks (native);
//! `cg_async` and `bicgstab_async` await them (the browser's).

#[cfg(not(target_arch = "wasm32"))]
mod amg;
mod bicgstab;
mod cg;
mod dirichlet;
mod mat;
mod precond;
mod solve;
mod sparsity;

#[cfg(not(target_arch = "wasm32"))]
pub use amg::{Amg, AmgOptions, AmgReport};
#[cfg(not(target_arch = "wasm32"))]
pub use bicgstab::bicgstab;
pub use bicgstab::bicgstab_async;
#[cfg(not(target_arch = "wasm32"))]
pub use cg::cg;
pub use cg::cg_async;
pub use dirichlet::{Dirichlet, Lifting};
pub use mat::Mat;
pub use precond::Preconditioner;
pub use solve::{Operator, SolveOptions, SolveReport};
pub use sparsity::Sparsity;
