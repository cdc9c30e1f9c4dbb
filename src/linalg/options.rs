//! What a Krylov solve takes and gives: the operator, the options, the report.

use super::Mat;
use crate::{Context, Dat, Real, Result};

/// An operator y = A x: a [`Mat`], or any closure recording par_loops (a matrix-free action).
pub trait Operator<T: Real> {
    /// Records y = A x.
    fn apply(&self, ctx: &Context, x: &Dat<T>, y: &Dat<T>) -> Result<()>;
}

impl<T: Real> Operator<T> for Mat<T> {
    fn apply(&self, ctx: &Context, x: &Dat<T>, y: &Dat<T>) -> Result<()> {
        self.mult(ctx, x, y)
    }
}

impl<T: Real, F: Fn(&Context, &Dat<T>, &Dat<T>) -> Result<()>> Operator<T> for F {
    fn apply(&self, ctx: &Context, x: &Dat<T>, y: &Dat<T>) -> Result<()> {
        self(ctx, x, y)
    }
}

/// When a solver stops, and how often it looks.
#[derive(Clone, Debug)]
pub struct SolveOptions {
    /// Stop when ||r|| <= rtol ||b||, r the residual the solver updates as it goes (as
    /// PETSc's KSP tests by default; in f32 it can fall below the true residual b - A x,
    /// which the report gives at the end, by about cond(A) times the precision's epsilon). A
    /// true residual at the end above 1000 rtol and above 0.1 (f32) or 1e-6 (f64), more than
    /// rounding explains, is an error (or, under `allow_unconverged`, a report marked not
    /// converged): the operator or the preconditioner is not a fixed linear map. "Near" is
    /// that generous: read the report's `true_residual` where it matters.
    pub rtol: f64,
    /// The most iterations; reaching them is an error, unless `allow_unconverged`.
    pub max_iterations: usize,
    /// Read the residual norm every this many iterations (each read is a readback; the
    /// iterations between run as one lazy batch).
    pub check_every: usize,
    /// Reaching `max_iterations` (or a true residual far above rtol) returns the report (`converged` false, the iterate left
    /// in x) instead of an error: an inexact Newton step's capped solve.
    pub allow_unconverged: bool,
    /// GMRES's restart length: the Krylov basis it keeps (PETSc's default, 30). Each basis
    /// vector is a value per unknown on the device.
    pub restart: usize,
    /// CG only: take an iteration's dot products in one reduction (Chronopoulos and Gear's
    /// recurrences, as PETSc's `KSPCGUseSingleReduction`): the vector updates and the
    /// preconditioner in one pass, y = A x with the dot products in the next, one finalize
    /// (three dispatches per iteration with a Jacobi preconditioner, against five), and on N
    /// ranks one synchronisation of every rank per iteration instead of two. It keeps A p and
    /// each element's copy of the step length beside p and, in exact arithmetic,
    /// takes the same iterations; in floating point its rounding differs from the standard
    /// recurrence's: the same iterations in f64 on the systems tested, within 2 in f32 (and
    /// 4% fewer at 10^5 unknowns with rtol 1e-8, which f32 cannot reach).
    pub single_reduction: bool,
    /// CG only: pipelined CG (Ghysels and Vanroose's recurrences, as PETSc's `KSPPIPECG`),
    /// for many ranks over a network: an iteration's one reduction, like
    /// `single_reduction`'s, is taken before the preconditioner and the operator are applied,
    /// and neither needs it, so on N ranks the reduction over the ranks is in flight while
    /// the operator runs and its halo exchange travels (a preconditioner's own work runs
    /// before, where the exchange needs its result) and the next vector update is the first
    /// computation that waits for it ([`crate::Stats::reductions_hidden`] counts those). A
    /// check's reduction is read by the host at once and hides nothing: keep `check_every`
    /// well above 1 (the default 10 hides 9 in 10). It carries four more vectors (three
    /// without a preconditioner) and updates them in one pass, so where a reduction is cheap
    /// (one process, or ranks of one machine) `single_reduction` is faster.
    ///
    /// The residual it updates drifts from the true one faster than the standard
    /// recurrence's (on a Poisson problem of 10^4 unknowns its true residual stopped near
    /// 1e-9 whatever rtol asked). So at each check where the updated residual has fallen
    /// 100-fold since the check after the last replacement (or the start; Sleijpen and van
    /// der Vorst's reliable updating), r = b - A x and the vectors carried with it (M r,
    /// A M r, A p, M A p, A M A p) are computed afresh: four applications of A (and, with a
    /// preconditioner, two of it), about four iterations' work, once per two orders of
    /// magnitude or so (`SolveReport::replacements` counts them): a few percent with Jacobi,
    /// more with a preconditioner that gains two orders in a few iterations (AMG: one
    /// replacement in 30 iterations). It then reaches the standard recurrence's accuracy in
    /// its iterations, to rtol 1e-12 on that problem. Not on every spectrum: on diagonal
    /// systems with Strakoš's eigenvalue distribution (cond(A) 1e6 to 1e7) the recurrence
    /// stagnates with its updated and true residuals agreeing, where the standard one
    /// converges; its iteration limit's error then names the other recurrences.
    ///
    /// Near the accuracy the system reaches (the true residual's floor, near cond(A) times
    /// epsilon), a replacement finds the updated residual farther from b - A x than a tenth
    /// of its own norm: the recurrence then restarts from x (`SolveReport::restarts` counts
    /// those), and its updated residual goes on falling below the true one to rtol, as the
    /// standard recurrence's does, and reports `converged` within rtol's allowance (rtol
    /// 1e-13 there; 1e-15 with `check_every` 10 but not 1: how far the updated residual
    /// falls between two replacements decides it). Where two restarts in a row find the true
    /// residual not halved, it is no longer falling (a new solve from that x may creep a
    /// little lower): the solve stops there with an error (`NotConverged`) that names that
    /// floor (under `allow_unconverged`, the report), long before the iteration limit. One
    /// such restart at a true residual above what rounding explains (1000 rtol and 1e-6) is
    /// an `Inaccurate` error: the operator or the preconditioner changed under the solve. The
    /// standard recurrence reports `converged` at any rtol, within the allowance.
    /// Its checks do not overlap the iterations after them (`overlap_checks` does not
    /// apply): a replacement is decided at the check it follows.
    /// f64 only: in f32 those recurrences lose the residual altogether, replaced or not. Not
    /// with `single_reduction`.
    pub pipelined: bool,
    /// CG only: read each check's residual while the next `check_every` iterations are
    /// recorded and run, and judge it at the check after (the host records and encodes while
    /// the device computes, instead of each waiting for the other). The iterations after
    /// convergence change nothing, so x and the report's iteration are the same as without;
    /// up to `2 check_every - 1` iterations after it still run, the operator and the
    /// preconditioner applied in each (a closure that counts its calls sees them). Off: each
    /// check waits for its own readback. Not on a distributed set: there each check's
    /// reduction over the ranks is read at once; nor under `pipelined`. None (the default):
    /// on for a hardware GPU, off for an adapter that runs shaders on the CPU
    /// ([`crate::Gpu::software`]), where the host's recording takes cores from the device
    /// and overlapping measured a few percent slower.
    pub overlap_checks: Option<bool>,
}

impl Default for SolveOptions {
    fn default() -> SolveOptions {
        SolveOptions {
            rtol: 1e-6,
            max_iterations: 10_000,
            check_every: 10,
            allow_unconverged: false,
            restart: 30,
            single_reduction: false,
            pipelined: false,
            overlap_checks: None,
        }
    }
}

/// What a solve did.
#[derive(Clone, Debug, PartialEq)]
pub struct SolveReport {
    /// Whether the updated residual fell below rtol with the true residual near it, within
    /// the allowance `SolveOptions::rtol` gives (false only under
    /// `SolveOptions::allow_unconverged`: the limit was reached, the true residual is far
    /// above rtol, or pipelined CG stopped at its true residual's floor or at an operator
    /// that changed).
    pub converged: bool,
    /// The iteration whose updated residual first fell below rtol, exactly (x is that
    /// iterate: the iterations after it, until the check that saw it, change nothing, though
    /// they still run: up to `check_every - 1` of them, or `2 check_every - 1` with
    /// `SolveOptions::overlap_checks`, count in [`crate::Context::stats`]), or
    /// `max_iterations`, or the iteration where pipelined CG stopped (under
    /// `SolveOptions::allow_unconverged`).
    pub iterations: usize,
    /// (iteration, ||r|| / ||b||) at each check of the updated residual, the first at
    /// iteration 0, the last at `iterations`.
    pub residuals: Vec<(usize, f64)>,
    /// ||b - A x|| / ||b|| at the end, computed afresh.
    pub true_residual: f64,
    /// Times the recurrence restarted: BiCGStab, when r^ became orthogonal to r; pipelined CG,
    /// at a residual replacement that found the updated residual more than a tenth of its
    /// norm from b - A x.
    pub restarts: usize,
    /// Times the updated residual was replaced by the true one, b - A x (pipelined CG, at
    /// the checks where the residual fell 100-fold since the check after the last one).
    pub replacements: usize,
}
