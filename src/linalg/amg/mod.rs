//! Smoothed-aggregation algebraic multigrid (Vanek, Mandel and Brezina; PyAMG's
//! `smoothed_aggregation_solver`) as a preconditioner: its setup runs on the host in f64
//! (strength, aggregates, smoothed prolongation, Galerkin products), its V-cycle on the device
//! as par_loops and sparse products (Chebyshev smoothing, restriction, prolongation, the
//! coarsest level's inverse), with no host round trip inside a cycle.

mod build;
mod dense;
mod ranks;
mod restrict;
mod setup;
mod spectrum;
#[cfg(test)]
mod tests;

use super::Mat;
use super::chebyshev::{Smoother, kernel};
use super::precond::{Preconditioner, check_apply};
use crate::{Context, Dat, Real, Result};
use build::build;
use restrict::Restriction;

/// How the hierarchy is built and the cycle smooths.
#[derive(Clone, Debug)]
pub struct AmgOptions {
    /// Strength of connection: a_ij is strong when |a_ij| >= theta sqrt(|a_ii a_jj|) (and
    /// a_ji too). 0 (PyAMG's default) takes every nonzero.
    pub theta: f64,
    /// Levels stop coarsening at this many unknowns; the coarsest is solved directly (a dense
    /// inverse: at most 256).
    pub max_coarse: usize,
    /// The most levels, the finest included (on N ranks at least 2: the coarsest level is
    /// gathered from every rank's part).
    pub max_levels: usize,
    /// Chebyshev smoothing steps before and after each coarse correction (each a product
    /// with A).
    pub degree: usize,
    /// The low end of the eigenvalues the smoother damps, as a fraction of the spectral
    /// radius of D^-1 A (the high end): the rest is left to the coarse levels.
    pub lower: f64,
}

impl Default for AmgOptions {
    fn default() -> AmgOptions {
        AmgOptions {
            theta: 0.0,
            max_coarse: 32,
            max_levels: 10,
            degree: 2,
            lower: 0.1,
        }
    }
}

/// The most unknowns of the coarsest level, inverted densely (its product is a row of that
/// width per unknown).
const MAX_COARSE: usize = 256;

/// What the setup built and where its time went.
#[derive(Clone, Debug, PartialEq)]
pub struct AmgReport {
    /// Unknowns and stored nonzeros of each level's operator, the finest first (scalar
    /// unknowns and entries: a block matrix's times its block and its block squared; on N
    /// ranks, summed over the ranks).
    pub levels: Vec<(usize, usize)>,
    /// All levels' nonzeros over the finest's.
    pub operator_complexity: f64,
    /// Seconds reading the matrix back from the device.
    pub read_s: f64,
    /// Seconds of the host setup (aggregation, products, the coarsest inverse).
    pub setup_s: f64,
    /// Seconds creating the levels' matrices and vectors on the device.
    pub upload_s: f64,
    /// Whether the aggregates of the first build were reused ([`Amg::update`]).
    pub reused: bool,
}

/// A level above the coarsest, on the device.
struct Level<T: Real> {
    /// The operator (None on the finest level: the user's matrix).
    a: Option<Mat<T>>,
    /// Prolongation from the next level, and restriction to it.
    p: Mat<T>,
    r: Restriction<T>,
    /// Chebyshev smoothing on [lower rho, rho] for D^-1 A.
    smoother: Smoother<T>,
    /// Right-hand side and iterate (None on the finest: the solver's vectors), scratch.
    b: Option<Dat<T>>,
    x: Option<Dat<T>>,
    q: Dat<T>,
    res: Dat<T>,
}

/// The coarsest level: its inverse and vectors.
struct Coarse<T: Real> {
    inverse: Mat<T>,
    b: Dat<T>,
    x: Dat<T>,
}

/// Smoothed-aggregation AMG for a [`Mat`] of scalar or block entries (symmetric positive
/// definite for CG; the cycle is symmetric, so it preconditions CG; definite, positive or
/// negative, in any case). A block matrix's nodes are aggregated by the norms of its blocks,
/// with one constant candidate per component (PyAMG's default for block matrices): right for
/// vector problems whose components are coupled weakly or like a Laplacian's, and weaker for
/// elasticity, whose rotations those candidates miss.
///
/// On N ranks (a matrix on sets of a distribution) `Amg::new` is collective: aggregates stay
/// within a rank, the prolongation and the coarse operators couple the ranks, and the
/// coarsest level is gathered on every rank. Iterations stay close to one process's on
/// compact parts (METIS, PT-Scotch); a partition that scatters a rank's unknowns leaves
/// little to aggregate within a rank, and its setup fails saying so.
///
/// It serves as a [`Preconditioner`]: `Amg::new` reads the matrix back once and builds the hierarchy;
/// `Amg::update` rebuilds it after the values change (a time step's or a Newton step's new
/// matrix), keeping the aggregates of the first build. `Amg::new(ctx, &a, ..)` borrows the
/// matrix; `Amg::new(ctx, a, ..)` takes it, for a struct that keeps the solver's state
/// ([`Amg::matrix`] lends it). Applying it after the matrix changed through its methods
/// (`inc`, `zero`, `zero_rows`, a `Dirichlet` condition) without `update` is an error; values
/// written into `Mat::values` directly are not seen.
pub struct Amg<'a, T: Real> {
    a: AmgMatrix<'a, T>,
    /// The matrix's generation the hierarchy was built from.
    generation: u64,
    options: AmgOptions,
    levels: Vec<Level<T>>,
    coarse: Coarse<T>,
    report: AmgReport,
    /// Each level's aggregates, for `update`.
    aggregates: Vec<(Vec<u32>, usize)>,
}

/// The matrix an [`Amg`] preconditions: borrowed (`&a`) or owned (`a`).
pub enum AmgMatrix<'a, T: Real> {
    /// The caller keeps the matrix.
    Borrowed(&'a Mat<T>),
    /// The Amg keeps it.
    Owned(Box<Mat<T>>),
}

impl<'a, T: Real> From<&'a Mat<T>> for AmgMatrix<'a, T> {
    fn from(a: &'a Mat<T>) -> Self {
        AmgMatrix::Borrowed(a)
    }
}

impl<T: Real> From<Mat<T>> for AmgMatrix<'_, T> {
    fn from(a: Mat<T>) -> Self {
        AmgMatrix::Owned(Box::new(a))
    }
}

impl<T: Real> std::ops::Deref for AmgMatrix<'_, T> {
    type Target = Mat<T>;
    fn deref(&self) -> &Mat<T> {
        match self {
            AmgMatrix::Borrowed(a) => a,
            AmgMatrix::Owned(a) => a,
        }
    }
}

impl<'a, T: Real> Amg<'a, T> {
    /// The hierarchy of `a`, built now (the pending loops that assemble `a` run first).
    /// A zero (or missing) diagonal entry, an entry that is not finite and a coarsest level
    /// too large to invert are errors naming them (on N ranks, on every rank).
    #[cfg(not(target_arch = "wasm32"))]
    pub fn new(
        ctx: &Context,
        a: impl Into<AmgMatrix<'a, T>>,
        options: &AmgOptions,
    ) -> Result<Amg<'a, T>> {
        pollster::block_on(Amg::new_async(ctx, a, options))
    }

    /// [`Amg::new`] without blocking on the matrix's readback (what the browser needs).
    pub async fn new_async(
        ctx: &Context,
        a: impl Into<AmgMatrix<'a, T>>,
        options: &AmgOptions,
    ) -> Result<Amg<'a, T>> {
        let a = a.into();
        let (levels, coarse, report, aggregates) = build(ctx, &a, options, None).await?;
        Ok(Amg {
            generation: a.generation.get(),
            a,
            options: options.clone(),
            levels,
            coarse,
            report,
            aggregates,
        })
    }

    /// Rebuilds the hierarchy from the matrix's current values (same options), keeping the
    /// aggregates of the first build (the matrix's pattern is the same; no strength of
    /// connection, no aggregation): the near-nullspace candidate, the prolongations, coarse
    /// operators, smoothers and coarsest inverse come from the new values, as a time or
    /// Newton step needs. When the values change in character (a new anisotropy, a
    /// coefficient jump that moved), build a new `Amg` instead: its aggregates follow the new
    /// strong connections.
    #[cfg(not(target_arch = "wasm32"))]
    pub fn update(&mut self, ctx: &Context) -> Result<()> {
        pollster::block_on(self.update_async(ctx))
    }

    /// [`Amg::update`] without blocking on the matrix's readback.
    pub async fn update_async(&mut self, ctx: &Context) -> Result<()> {
        let reuse = Some(self.aggregates.as_slice());
        let (levels, coarse, report, _) = build(ctx, &self.a, &self.options, reuse).await?;
        (self.levels, self.coarse, self.report) = (levels, coarse, report);
        self.generation = self.a.generation.get();
        Ok(())
    }

    /// The matrix the hierarchy was built from.
    pub fn matrix(&self) -> &Mat<T> {
        &self.a
    }

    /// The levels and the setup's times.
    pub fn report(&self) -> &AmgReport {
        &self.report
    }

    /// Records x = V(b), one V-cycle from x = 0 on level `k`.
    fn cycle(&self, ctx: &Context, k: usize, b: &Dat<T>, x: &Dat<T>) -> Result<()> {
        let Some(l) = self.levels.get(k) else {
            return self.coarse.inverse.mult(ctx, b, x);
        };
        let a = l.a.as_ref().unwrap_or(&self.a);
        l.smoother.smooth(ctx, a, (b, x, &l.q), true)?;
        a.mult(ctx, x, &l.q)?;
        let (t, d) = (T::DTYPE, b.dim());
        ctx.par_loop(
            &super::solve::residual_kernel(t, d),
            b.set(),
            &[b.read(), l.q.read(), l.res.write()],
        )?;
        let (nb, nx) = match self.levels.get(k + 1) {
            Some(n) => (n.b.as_ref(), n.x.as_ref()),
            None => (Some(&self.coarse.b), Some(&self.coarse.x)),
        };
        let (nb, nx) = (nb.expect("coarse levels own b"), nx.expect("and x"));
        l.r.apply(ctx, &l.res, nb)?;
        self.cycle(ctx, k + 1, nb, nx)?;
        l.p.mult(ctx, nx, &l.q)?;
        ctx.par_loop(&kernel("add", t, d), b.set(), &[l.q.read(), x.rw()])?;
        l.smoother.smooth(ctx, a, (b, x, &l.q), false)
    }
}

impl<T: Real> Preconditioner<T> for Amg<'_, T> {
    fn apply(&self, ctx: &Context, r: &Dat<T>, z: &Dat<T>) -> Result<()> {
        let stale = "the matrix changed (assembled, zeroed or constrained) since the hierarchy \
                     was built from it; call Amg::update after each change";
        check_apply("AMG", &self.a, self.generation, (r, z), stale)?;
        self.cycle(ctx, 0, r, z)
    }
}
