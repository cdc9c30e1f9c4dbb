//! Sparse matrices and Krylov solvers on the device.
//!
//! A [`Sparsity`] is built from pairs of maps, a [`Mat`] is assembled by par_loops (PyOP2's
//! `Mat`), [`Dirichlet`] applies boundary conditions, and the solvers' iterations never wait for
//! the host: conjugate gradients ([`cg`]), BiCGStab ([`bicgstab`]) and restarted GMRES
//! ([`gmres`]), preconditioned by Jacobi (the diagonal), a Chebyshev polynomial
//! ([`Chebyshev`]), smoothed-aggregation algebraic multigrid ([`Amg`]) or any
//! [`Preconditioner`]. The solvers block on their residual checks (native); `cg_async`,
//! `bicgstab_async` and `gmres_async` await them (the browser's).

mod amg;
mod bicgstab;
mod cg;
mod cg_pipelined;
mod cg_single;
mod chebyshev;
mod dirichlet;
mod gmres;
mod mat;
mod options;
mod precond;
mod solve;
mod sparsity;

pub use amg::{Amg, AmgMatrix, AmgOptions, AmgReport};
#[cfg(not(target_arch = "wasm32"))]
pub use bicgstab::bicgstab;
pub use bicgstab::bicgstab_async;
#[cfg(not(target_arch = "wasm32"))]
pub use cg::cg;
pub use cg::cg_async;
pub use chebyshev::{Chebyshev, ChebyshevOptions};
pub use dirichlet::{Dirichlet, Lifting};
#[cfg(not(target_arch = "wasm32"))]
pub use gmres::gmres;
pub use gmres::gmres_async;
pub use mat::Mat;
pub use options::{Operator, SolveOptions, SolveReport};
pub use precond::Preconditioner;
pub use sparsity::Sparsity;
