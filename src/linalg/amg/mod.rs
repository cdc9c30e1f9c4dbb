//! Smoothed-aggregation algebraic multigrid (Vanek, Mandel and Brezina; PyAMG's
//! `smoothed_aggregation_solver`) as a preconditioner: its setup runs on the host in f64
//! (strength, aggregates, smoothed prolongation, Galerkin products), its V-cycle on the device
//! as par_loops and sparse products (Chebyshev smoothing, restriction, prolongation, the
//! coarsest level's inverse), with no host round trip inside a cycle.

mod dense;
mod restrict;
mod setup;
#[cfg(test)]
mod tests;

use super::chebyshev::{Smoother, kernel};
use super::precond::{Preconditioner, check_apply};
use super::{Mat, Sparsity};
use crate::{Context, Dat, Error, Real, Result, Set};
use restrict::Restriction;
use setup::{Hierarchy, Params, SetupError};
use sprs::CsMat;
use std::rc::Rc;
use web_time::Instant;

/// How the hierarchy is built and the cycle smooths.
#[derive(Clone, Debug)]
pub struct AmgOptions {
    /// Strength of connection: a_ij is strong when |a_ij| >= theta sqrt(|a_ii a_jj|) (and
    /// a_ji too). 0 (PyAMG's default) takes every nonzero.
    pub theta: f64,
    /// Levels stop coarsening at this many unknowns; the coarsest is solved directly (a dense
    /// inverse: at most 256).
    pub max_coarse: usize,
    /// The most levels, the finest included.
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
    /// unknowns and entries: a block matrix's times its block and its block squared).
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
/// as a [`Preconditioner`]: `Amg::new` reads the matrix back once and builds the hierarchy;
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
    /// A zero (or missing) diagonal entry, an entry that is not finite, a matrix on a
    /// distributed set and a coarsest level too large to invert are errors naming them.
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

/// The matrix on the host, in f64 CSR of scalar entries (a block matrix's blocks expanded:
/// row r b + i is component i of row r; a single process's).
async fn read<T: Real>(a: &Mat<T>) -> Result<CsMat<f64>> {
    let s = a.sparsity();
    let name = a.values.name();
    let rows = s.rows();
    if rows.id() != s.cols().id() {
        return Err(Error::Usage(format!(
            "AMG of Mat `{name}`: rows `{}` and columns `{}` are different sets; AMG needs a \
             square matrix on one set",
            rows.name(),
            s.cols().name()
        )));
    }
    if rows.halo().is_some() {
        return Err(Error::Usage(format!(
            "AMG of Mat `{name}`: its rows `{}` are distributed; AMG runs on one process \
             (use Chebyshev or Jacobi on N ranks)",
            rows.name()
        )));
    }
    let values = a.values.data_ro_async().await?;
    let (n, m, w, b) = (rows.size(), s.cols().size(), s.width(), a.block());
    let mut indptr = Vec::with_capacity(n * b + 1);
    let (mut indices, mut data) = (Vec::new(), Vec::new());
    indptr.push(0);
    for r in 0..n {
        for i in 0..b {
            for (k, &c) in s.row(r).iter().enumerate() {
                for j in 0..b {
                    indices.push(c as usize * b + j);
                    data.push(values[(r * w + k) * b * b + i * b + j].to_f64());
                }
            }
            indptr.push(indices.len());
        }
    }
    CsMat::try_new((n * b, m * b), indptr, indices, data)
        .map_err(|e| Error::Data(format!("AMG of Mat `{name}`: {}", e.3)))
}

type Built<T> = (Vec<Level<T>>, Coarse<T>, AmgReport, Vec<(Vec<u32>, usize)>);

/// Reads `a`, builds the hierarchy on the host, and creates its levels on the device.
async fn build<T: Real>(
    ctx: &Context,
    a: &Mat<T>,
    o: &AmgOptions,
    reuse: Option<&[(Vec<u32>, usize)]>,
) -> Result<Built<T>> {
    let name = a.values.name().to_string();
    let wrong = [
        (o.degree == 0, "degree must be at least 1"),
        (o.max_levels == 0, "max_levels must be at least 1"),
        (
            !(o.lower > 0.0 && o.lower < 1.0),
            "lower must lie in (0, 1)",
        ),
        (
            !(o.theta >= 0.0 && o.theta <= 1.0),
            "theta must lie in [0, 1]",
        ),
        (o.max_coarse == 0, "max_coarse must be at least 1"),
        (
            o.max_coarse > MAX_COARSE,
            "max_coarse must be at most 256 (the coarsest level is inverted densely)",
        ),
    ];
    if let Some((_, why)) = wrong.iter().find(|w| w.0) {
        return Err(Error::Usage(format!(
            "AMG of Mat `{name}`: {why}; got {o:?}"
        )));
    }
    let t0 = Instant::now();
    let host = read(a).await?;
    let read_s = t0.elapsed().as_secs_f64();
    let t1 = Instant::now();
    let nb = a.block();
    let params = Params {
        theta: o.theta,
        max_coarse: o.max_coarse,
        max_levels: o.max_levels,
        // The coarsest inverse's rows are as wide as its unknowns, in values: at most
        // MAX_COARSE of them whatever the block.
        max_dense: MAX_COARSE / nb,
        ..Params::default()
    };
    let h = Hierarchy::new(host, nb, &params, reuse).map_err(|e| {
        let at = |i: usize| match nb {
            1 => format!("AMG of Mat `{name}`: row {i}"),
            _ => format!("AMG of Mat `{name}`: row {}, component {}", i / nb, i % nb),
        };
        Error::Data(match e {
            SetupError::ZeroDiagonal(i) => format!(
                "{} has no nonzero diagonal entry: smoothing divides by it (a row of zeros, or \
                 a node no element reaches, needs a 1 on its diagonal: Mat::zero_rows)",
                at(i)
            ),
            SetupError::NotFinite(i) => format!("{} has an entry that is not finite", at(i)),
            SetupError::NotSquare(r, c) => {
                format!("AMG of Mat `{name}`: {r} rows and {c} columns; AMG needs a square matrix")
            }
            SetupError::Indefinite(lo, hi) => format!(
                "AMG of Mat `{name}`: D^-1 A has eigenvalues of both signs (about {lo:.3e} to \
                 {hi:.3e}), which smoothing cannot damp: AMG needs a definite matrix (BiCGStab \
                 with Jacobi for this one)"
            ),
            SetupError::CoarseTooLarge {
                unknowns,
                levels,
                stalled,
            } => {
                let why = if stalled {
                    format!(
                        "too few of its unknowns are strongly connected both ways (a_ij and \
                         a_ji nonzero) to aggregate: AMG does not apply to a diagonal or \
                         one-sided matrix (precondition it by Jacobi){}",
                        if o.theta > 0.0 {
                            ", or lower theta"
                        } else {
                            ""
                        }
                    )
                } else {
                    "raise max_levels".to_string()
                };
                format!(
                    "AMG of Mat `{name}`: coarsening stopped at {unknowns} unknowns after \
                     {levels} levels, too many for the coarsest level's dense inverse (at most \
                     {}): {why}",
                    MAX_COARSE / nb
                )
            }
            SetupError::SingularCoarse(n) => format!(
                "AMG of Mat `{name}`: the coarsest level ({n} unknowns) is singular and not \
                 symmetric, so it has no inverse"
            ),
        })
    })?;
    let setup_s = t1.elapsed().as_secs_f64();
    let t2 = Instant::now();
    let mut sizes: Vec<(usize, usize)> = h.levels.iter().map(|l| (l.a.rows(), l.a.nnz())).collect();
    sizes.push((h.coarse.rows(), h.coarse.nnz()));
    let fine = a.sparsity().rows().clone();
    let sets: Vec<Set> = std::iter::once(fine)
        .chain((1..sizes.len()).map(|k| Set::new(format!("{name} AMG level {k}"), sizes[k].0 / nb)))
        .collect();
    let mut levels = Vec::with_capacity(h.levels.len());
    for (k, l) in h.levels.iter().enumerate() {
        let (set, next) = (&sets[k], &sets[k + 1]);
        let label = |what: &str| format!("{name} AMG level {k} {what}");
        let tv = |v: &[f64]| v.iter().map(|&x| T::from_f64(x)).collect::<Vec<T>>();
        let vector = |what: &str| ctx.dat_zeros::<T>(&label(what), set, nb);
        let interval = (o.lower * l.rho, l.rho);
        let dinv = ctx.dat(&label("1/diagonal"), set, nb, &tv(&l.dinv))?;
        levels.push(Level {
            a: (k > 0)
                .then(|| upload(ctx, &label("A"), (set, set), &l.a, nb))
                .transpose()?,
            p: upload(ctx, &label("P"), (set, next), &l.p, nb)?,
            r: Restriction::new(ctx, &label("R"), (set, next), &l.p, nb)?,
            smoother: Smoother::new(ctx, &label("level"), set, dinv, o.degree, interval)?,
            b: (k > 0).then(|| vector("b")).transpose()?,
            x: (k > 0).then(|| vector("x")).transpose()?,
            q: vector("q")?,
            res: vector("r")?,
        });
    }
    let last = sets.last().expect("at least the finest");
    let n = h.coarse.rows();
    let dense = CsMat::new(
        (n, n),
        (0..=n).map(|i| i * n).collect(),
        (0..n * n).map(|j| j % n).collect(),
        h.inverse.clone(),
    );
    let coarse = Coarse {
        inverse: upload(
            ctx,
            &format!("{name} AMG coarsest inverse"),
            (last, last),
            &dense,
            nb,
        )?,
        b: ctx.dat_zeros::<T>(&format!("{name} AMG coarsest b"), last, nb)?,
        x: ctx.dat_zeros::<T>(&format!("{name} AMG coarsest x"), last, nb)?,
    };
    let nnz: usize = sizes.iter().map(|s| s.1).sum();
    let report = AmgReport {
        operator_complexity: nnz as f64 / sizes[0].1.max(1) as f64,
        levels: sizes,
        read_s,
        setup_s,
        upload_s: t2.elapsed().as_secs_f64(),
        reused: reuse.is_some(),
    };
    Ok((levels, coarse, report, h.aggregates))
}

/// A host CSR matrix of scalar entries as a [`Mat`] of `b` x `b` blocks on `rows` x `cols`
/// (scalar row r is component r % b of node r / b, and so for columns).
pub(super) fn upload<T: Real>(
    ctx: &Context,
    name: &str,
    (rows, cols): (&Set, &Set),
    m: &CsMat<f64>,
    b: usize,
) -> Result<Mat<T>> {
    let mut lists: Vec<Vec<u32>> = vec![Vec::new(); rows.size()];
    for (r, row) in m.outer_iterator().enumerate() {
        lists[r / b].extend(row.indices().iter().map(|&c| (c / b) as u32));
    }
    for l in &mut lists {
        l.sort_unstable();
        l.dedup();
    }
    let s = Rc::new(Sparsity::from_rows(name, rows, cols, lists.clone())?);
    let (w, bb) = (s.width(), b * b);
    let mut values = vec![T::from_f64(0.0); rows.size() * w * bb];
    for (r, row) in m.outer_iterator().enumerate() {
        let (node, i) = (r / b, r % b);
        for (c, &v) in row.iter() {
            let k = lists[node]
                .binary_search(&((c / b) as u32))
                .expect("the node's columns include each of its rows'");
            values[(node * w + k) * bb + i * b + c % b] = T::from_f64(v);
        }
    }
    let mut mat = Mat::blocked(ctx, name, &s, b)?;
    mat.values.set_data(&values)?;
    Ok(mat)
}
