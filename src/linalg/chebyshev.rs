//! Chebyshev polynomials in D^-1 A: the smoother of multigrid's levels, and a preconditioner
//! of its own. Both damp the eigenvalues of D^-1 A in an interval [lo, hi] by the Chebyshev
//! polynomial of a degree (from x = 0 the first step scales by the diagonal, each later one
//! is a product with A), whose coefficients are Globals the
//! kernels read: nothing waits for the host. The standalone preconditioner bounds hi by the
//! rows' sums (a par_loop over the rows, so it runs on N ranks as the solvers do).

use super::Mat;
use super::precond::{Preconditioner, check_apply};
use crate::{Context, Dat, Error, Global, Kernel, Real, Result, Set};

/// Chebyshev smoothing of A x = b on [lo, hi] for D^-1 A: the polynomial's coefficients and
/// the direction it updates x by.
pub(super) struct Smoother<T: Real> {
    /// 1 / a_ii.
    dinv: Dat<T>,
    /// The first step's [1 / theta], and each later step's [c1, c2].
    first: Global<T>,
    steps: Vec<Global<T>>,
    d: Dat<T>,
}

impl<T: Real> Smoother<T> {
    /// `degree` steps (at least 1) on [lo, hi], 0 < lo < hi; `label` names its Dats.
    pub(super) fn new(
        ctx: &Context,
        label: &str,
        set: &Set,
        dinv: Dat<T>,
        degree: usize,
        (lo, hi): (f64, f64),
    ) -> Result<Smoother<T>> {
        let (theta, delta) = (0.5 * (hi + lo), 0.5 * (hi - lo));
        let sigma = theta / delta;
        let mut rho = 1.0 / sigma;
        let mut steps = Vec::new();
        for s in 1..degree {
            let next = 1.0 / (2.0 * sigma - rho);
            let c = [T::from_f64(next * rho), T::from_f64(2.0 * next / delta)];
            steps.push(ctx.global(&format!("{label} chebyshev {s}"), &c)?);
            rho = next;
        }
        let dim = dinv.dim();
        Ok(Smoother {
            dinv,
            first: ctx.global(&format!("{label} chebyshev 0"), &[T::from_f64(1.0 / theta)])?,
            steps,
            d: ctx.dat_zeros::<T>(&format!("{label} chebyshev d"), set, dim)?,
        })
    }

    /// Records the smoothing of A x = b, from x = 0 when `zero`; `q` is scratch.
    pub(super) fn smooth(
        &self,
        ctx: &Context,
        a: &Mat<T>,
        (b, x, q): (&Dat<T>, &Dat<T>, &Dat<T>),
        zero: bool,
    ) -> Result<()> {
        let (t, d, set) = (T::DTYPE, b.dim(), b.set());
        if zero {
            let args = [
                self.first.read(),
                b.read(),
                self.dinv.read(),
                self.d.write(),
                x.write(),
            ];
            ctx.par_loop(&kernel("first", t, d), set, &args)?;
        } else {
            a.mult(ctx, x, q)?;
            let args = [
                self.first.read(),
                b.read(),
                q.read(),
                self.dinv.read(),
                self.d.write(),
                x.rw(),
            ];
            ctx.par_loop(&kernel("restart", t, d), set, &args)?;
        }
        for c in &self.steps {
            a.mult(ctx, x, q)?;
            let args = [
                c.read(),
                b.read(),
                q.read(),
                self.dinv.read(),
                self.d.rw(),
                x.rw(),
            ];
            ctx.par_loop(&kernel("step", t, d), set, &args)?;
        }
        Ok(())
    }
}

/// The kernels of the smoothing and of the multigrid cycle, for type `t` and `d` components:
/// `first` (d = c0 dinv b, x = d), `restart` (d = c0 dinv (b - q), x += d), `step`
/// (d = c0 d + c1 dinv (b - q), x += d), `add` (x += q).
pub(super) fn kernel(which: &str, t: crate::DType, d: usize) -> Kernel {
    let name = format!("pl_chebyshev_{which}_{t}_{d}");
    let v = |n: &str| format!("{n}: ptr<function, array<{t}, {d}>>");
    let (params, body) = match which {
        "first" => (
            format!(
                "c: ptr<function, array<{t}, 1>>, {}, {}, {}, {}",
                v("b"),
                v("dinv"),
                v("dv"),
                v("x")
            ),
            "(*dv)[i] = (*c)[0] * (*dinv)[i] * (*b)[i]; (*x)[i] = (*dv)[i];",
        ),
        "restart" => (
            format!(
                "c: ptr<function, array<{t}, 1>>, {}, {}, {}, {}, {}",
                v("b"),
                v("q"),
                v("dinv"),
                v("dv"),
                v("x")
            ),
            "(*dv)[i] = (*c)[0] * (*dinv)[i] * ((*b)[i] - (*q)[i]); (*x)[i] += (*dv)[i];",
        ),
        "step" => (
            format!(
                "c: ptr<function, array<{t}, 2>>, {}, {}, {}, {}, {}",
                v("b"),
                v("q"),
                v("dinv"),
                v("dv"),
                v("x")
            ),
            "(*dv)[i] = (*c)[0] * (*dv)[i] + (*c)[1] * (*dinv)[i] * ((*b)[i] - (*q)[i]); \
             (*x)[i] += (*dv)[i];",
        ),
        _ => (format!("{}, {}", v("q"), v("x")), "(*x)[i] += (*q)[i];"),
    };
    Kernel::new(
        &name,
        format!("fn {name}({params}) {{\n    for (var i = 0u; i < {d}u; i++) {{ {body} }}\n}}\n"),
    )
}

/// How the standalone Chebyshev preconditioner is built.
#[derive(Clone, Debug)]
pub struct ChebyshevOptions {
    /// Steps of the polynomial: the first scales by the diagonal, each later one is a
    /// product with A (degree 3: two products per application).
    pub degree: usize,
    /// The low end of the interval, as a fraction of its high end (max_i sum_j |a_ij / a_ii|,
    /// a bound of the spectral radius of D^-1 A).
    pub lower: f64,
}

impl Default for ChebyshevOptions {
    fn default() -> ChebyshevOptions {
        ChebyshevOptions {
            degree: 3,
            lower: 1.0 / 30.0,
        }
    }
}

/// Chebyshev polynomial preconditioning by a scalar [`Mat`] A: z = p(D^-1 A) D^-1 r, the
/// polynomial of `degree` steps that approximates A^-1 on [lower hi, hi], hi = max_i sum_j
/// |a_ij / a_ii| (which bounds D^-1 A's spectral radius). A fixed symmetric operator, definite
/// of A's sign for a symmetric definite A, so it preconditions CG; its steps are products with A and
/// vector updates only, on one process or N ranks. The diagonal must be of one sign; an
/// indefinite A is not detected here (CG reports its breakdown).
pub struct Chebyshev<'a, T: Real> {
    a: &'a Mat<T>,
    smoother: Smoother<T>,
    q: Dat<T>,
    interval: (f64, f64),
    generation: u64,
}

impl<'a, T: Real> Chebyshev<'a, T> {
    /// The preconditioner of `a`, its interval bounded now (the pending loops that assemble
    /// `a` run first).
    #[cfg(not(target_arch = "wasm32"))]
    pub fn new(ctx: &Context, a: &'a Mat<T>, options: &ChebyshevOptions) -> Result<Self> {
        pollster::block_on(Chebyshev::new_async(ctx, a, options))
    }

    /// [`Chebyshev::new`] without blocking on the bound's readbacks (the browser's).
    pub async fn new_async(
        ctx: &Context,
        a: &'a Mat<T>,
        options: &ChebyshevOptions,
    ) -> Result<Self> {
        let o = options;
        let name = a.values.name().to_string();
        let rows = a.sparsity().rows().clone();
        let usage = |why: String| Err(Error::Usage(format!("Chebyshev of Mat `{name}`: {why}")));
        if a.block() != 1 || rows.id() != a.sparsity().cols().id() {
            return usage(format!(
                "Chebyshev takes square scalar matrices on one set (this one has blocks of {} \
                 on `{}` x `{}`)",
                a.block(),
                rows.name(),
                a.sparsity().cols().name()
            ));
        }
        if o.degree == 0 || !(o.lower > 0.0 && o.lower < 1.0) {
            return usage(format!(
                "degree must be at least 1 and lower in (0, 1); got {o:?}"
            ));
        }
        let diagonal = a.diagonal(ctx)?;
        let (lo, hi) = diagonal_range(ctx, &diagonal).await?;
        if !(lo > 0.0 || hi < 0.0) {
            return Err(Error::Data(format!(
                "Chebyshev of Mat `{name}`: its diagonal runs from {lo:e} to {hi:e}; Chebyshev \
                 needs a diagonal of one sign and no zero (a row of zeros, or a node no element \
                 reaches, needs a 1 on its diagonal: Mat::zero_rows)"
            )));
        }
        let label = format!("{name} Chebyshev");
        let dinv = ctx.dat_zeros::<T>(&format!("{label} 1/diagonal"), &rows, 1)?;
        let t = T::DTYPE;
        let k = Kernel::new(
            format!("pl_chebyshev_inverse_{t}"),
            format!(
                "fn pl_chebyshev_inverse_{t}(d: ptr<function, array<{t}, 1>>, \
                 v: ptr<function, array<{t}, 1>>) {{ (*v)[0] = {t}(1) / (*d)[0]; }}"
            ),
        );
        ctx.par_loop(&k, &rows, &[diagonal.read(), dinv.write()])?;
        let top = row_sum_bound(ctx, a, &dinv).await?;
        if !top.is_finite() || top <= 0.0 {
            return Err(Error::Data(format!(
                "Chebyshev of Mat `{name}`: the largest row sum of |a_ij / a_ii| is {top:e} (an \
                 entry that is not finite, or no rows)"
            )));
        }
        let interval = (o.lower * top, top);
        Ok(Chebyshev {
            a,
            smoother: Smoother::new(ctx, &label, &rows, dinv, o.degree, interval)?,
            q: ctx.dat_zeros::<T>(&format!("{label} q"), &rows, 1)?,
            interval,
            generation: a.generation.get(),
        })
    }

    /// The interval [lo, hi] of D^-1 A's eigenvalues the polynomial inverts.
    pub fn interval(&self) -> (f64, f64) {
        self.interval
    }
}

impl<T: Real> Preconditioner<T> for Chebyshev<'_, T> {
    fn apply(&self, ctx: &Context, r: &Dat<T>, z: &Dat<T>) -> Result<()> {
        let stale = "the matrix changed since its interval was bounded; build the Chebyshev \
                     again after each change";
        check_apply("Chebyshev", self.a, self.generation, (r, z), stale)?;
        self.smoother.smooth(ctx, self.a, (r, z, &self.q), true)
    }
}

/// The least and largest diagonal entries over every rank (-inf and +inf when one is not
/// finite).
async fn diagonal_range<T: Real>(ctx: &Context, d: &Dat<T>) -> Result<(f64, f64)> {
    let t = T::DTYPE;
    let big = largest_literal(t);
    let k = Kernel::new(
        format!("pl_diagonal_range_{t}"),
        format!(
            "fn pl_diagonal_range_{t}(d: ptr<function, array<{t}, 1>>, \
             m: ptr<function, array<{t}, 3>>) {{
    let v = (*d)[0];
    (*m)[0] = min((*m)[0], v);
    (*m)[1] = min((*m)[1], -v);
    (*m)[2] = min((*m)[2], select({t}(0), {t}(1), abs(v) <= {t}({big})));
}}"
        ),
    );
    let m = ctx.global_min::<T>(&format!("{} range", d.name()), 3)?;
    ctx.par_loop(&k, d.set(), &[d.read(), m.min()])?;
    let v = m.value_async().await?;
    if v[2].to_f64() < 0.5 {
        return Ok((f64::NEG_INFINITY, f64::INFINITY));
    }
    Ok((v[0].to_f64(), -v[1].to_f64()))
}

/// max_i sum_j |a_ij / a_ii| over every rank: the infinity norm of D^-1 A, an upper bound of
/// its spectral radius whatever A's symmetry (hypre's row-sum estimate). For an M-matrix
/// with zero row sums (a Laplacian's interior rows) it is 2, where the radius is a little
/// below.
async fn row_sum_bound<T: Real>(ctx: &Context, a: &Mat<T>, dinv: &Dat<T>) -> Result<f64> {
    let s = a.sparsity();
    let (t, w) = (T::DTYPE, s.width());
    let big = largest_literal(t);
    let name = format!("pl_chebyshev_row_sum_{t}_{w}");
    let k = Kernel::new(
        &name,
        format!(
            "fn {name}(v: ptr<function, array<{t}, {w}>>, n: ptr<function, array<u32, 1>>, \
             dinv: ptr<function, array<{t}, 1>>, m: ptr<function, array<{t}, 2>>) {{
    var sum = {t}();
    for (var k = 0u; k < {w}u; k++) {{
        if (k < (*n)[0]) {{ sum += abs((*v)[k]); }}
    }}
    let r = sum * abs((*dinv)[0]);
    (*m)[0] = max((*m)[0], r);
    (*m)[1] = max((*m)[1], select({t}(1), {t}(0), r <= {t}({big})));
}}"
        ),
    );
    let m = ctx.global_max::<T>(&format!("{} row sums", a.values.name()), 2)?;
    let args = [
        a.values.all(&s.row_slots).read(),
        a.count.read(),
        dinv.read(),
        m.max(),
    ];
    ctx.par_loop(&k, s.rows(), &args)?;
    let v = m.value_async().await?;
    // A sum that is not finite (NaN fails `<=`) flags 1: +inf, which the caller refuses.
    Ok(match v[1].to_f64() > 0.5 {
        true => f64::INFINITY,
        false => v[0].to_f64(),
    })
}

/// A finite literal near the type's largest value: x <= it is false for infinities and NaN.
fn largest_literal(t: crate::DType) -> &'static str {
    if t == crate::DType::F64 {
        "1.7e308"
    } else {
        "3.4e38"
    }
}
