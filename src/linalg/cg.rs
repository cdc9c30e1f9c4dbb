//! Conjugate gradients that stay on the device: every vector update is a par_loop, every dot
//! product a Global reduction that the next loops read on the device (the step lengths are
//! computed inside the update kernels from those Globals), so an iteration costs no host round
//! trip. The host reads the residual norm every `check_every` iterations to decide whether to
//! stop; between checks the iterations are recorded lazily and run in one go.

use super::Mat;
use crate::{Context, Dat, Error, Kernel, Real, Result};

/// An operator y = A x for [`cg`]: a [`Mat`], or any closure recording par_loops (a
/// matrix-free action).
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

/// When [`cg`] stops, and how often it looks.
#[derive(Clone, Debug)]
pub struct CgOptions {
    /// Stop when ||r|| <= rtol ||b||, r the residual CG updates as it goes (as PETSc's KSP
    /// tests by default; in f32 it can fall below the true residual b - A x, which the report
    /// gives at the end).
    pub rtol: f64,
    /// The most iterations; more is an error.
    pub max_iterations: usize,
    /// Read the residual norm every this many iterations (each read is a readback; the
    /// iterations between run as one lazy batch).
    pub check_every: usize,
}

impl Default for CgOptions {
    fn default() -> CgOptions {
        CgOptions {
            rtol: 1e-6,
            max_iterations: 10_000,
            check_every: 10,
        }
    }
}

/// What a converged solve did.
#[derive(Clone, Debug, PartialEq)]
pub struct SolveReport {
    /// Iterations run.
    pub iterations: usize,
    /// (iteration, ||r|| / ||b||) at each check of the updated residual, the first at
    /// iteration 0.
    pub residuals: Vec<(usize, f64)>,
    /// ||b - A x|| / ||b|| at the end, computed afresh.
    pub true_residual: f64,
}

/// The kernels of one type, one WGSL source.
fn kernels(t: crate::DType) -> String {
    format!(
        "
fn pl_cg_residual_{t}(b: ptr<function, array<{t}, 1>>, q: ptr<function, array<{t}, 1>>,
                      r: ptr<function, array<{t}, 1>>) {{
    (*r)[0] = (*b)[0] - (*q)[0];
}}
fn pl_cg_precondition_{t}(d: ptr<function, array<{t}, 1>>, r: ptr<function, array<{t}, 1>>,
                          z: ptr<function, array<{t}, 1>>) {{
    (*z)[0] = (*r)[0] / (*d)[0];
}}
fn pl_cg_step_{t}(rz: ptr<function, array<{t}, 1>>, pq: ptr<function, array<{t}, 1>>,
                  p: ptr<function, array<{t}, 1>>, q: ptr<function, array<{t}, 1>>,
                  x: ptr<function, array<{t}, 1>>, r: ptr<function, array<{t}, 1>>) {{
    // Exact convergence between two checks makes r, then p, zero: the step is then 0, not 0/0.
    // (p.Ap = 0 with r.z != 0 is a breakdown, and stays one: the division gives inf.)
    let alpha = select((*rz)[0] / (*pq)[0], {t}(), (*rz)[0] == {t}());
    (*x)[0] += alpha * (*p)[0];
    (*r)[0] -= alpha * (*q)[0];
}}
fn pl_cg_direction_{t}(rz: ptr<function, array<{t}, 1>>, old: ptr<function, array<{t}, 1>>,
                       z: ptr<function, array<{t}, 1>>, p: ptr<function, array<{t}, 1>>) {{
    let beta = select((*rz)[0] / (*old)[0], {t}(), (*rz)[0] == {t}());
    (*p)[0] = (*z)[0] + beta * (*p)[0];
}}
"
    )
}

/// Solves A x = b by conjugate gradients from the `x` given (A symmetric positive definite),
/// preconditioned by Jacobi when `diagonal` (A's diagonal, as [`Mat::diagonal`] gives) is
/// given. Stopping below `rtol` returns the report; reaching `max_iterations`, a residual that
/// is not finite (breakdown: A is not positive definite, or a zero on the diagonal) or grows
/// 1e10-fold (divergence) are errors that say which and between which iterations.
pub fn cg<T: Real>(
    ctx: &Context,
    a: &dyn Operator<T>,
    b: &Dat<T>,
    x: &Dat<T>,
    diagonal: Option<&Dat<T>>,
    opts: &CgOptions,
) -> Result<SolveReport> {
    let set = b.set();
    for v in [Some(x), diagonal].into_iter().flatten() {
        if v.set().id() != set.id() || v.dim() != 1 || b.dim() != 1 {
            return Err(Error::Usage(format!(
                "cg: b `{}` and `{}` must be Dats of dim 1 on one set; they have dims {} and {} \
                 on `{}` and `{}`",
                b.name(),
                v.name(),
                b.dim(),
                v.dim(),
                set.name(),
                v.set().name()
            )));
        }
    }
    if opts.check_every == 0 || opts.max_iterations == 0 || !(opts.rtol > 0.0) {
        return Err(Error::Usage(format!(
            "cg: rtol must be above 0, max_iterations and check_every at least 1; got {opts:?}"
        )));
    }
    let t = T::DTYPE;
    let src = kernels(t);
    let k = |n: &str| Kernel::new(format!("pl_cg_{n}_{t}"), src.clone());
    // Norms through the device's dot product, in T.
    let norm = |v: &Dat<T>| -> Result<f64> {
        let g = ctx.dot(v, v)?;
        Ok(g.value()?[0].to_f64().sqrt())
    };
    // ||b|| on the host in f64 (a sum of squares in f32 underflows below 1e-19 and overflows
    // above 1e19); the device's norms are taken relative to it.
    let b_norm = {
        let values = b.data_ro()?;
        let sum: f64 = values.iter().map(|v| v.to_f64().powi(2)).sum();
        if !sum.is_finite() {
            return Err(Error::Usage(format!(
                "cg: b `{}` has a value that is not finite (or too large to square)",
                b.name()
            )));
        }
        sum.sqrt()
    };
    if b_norm == 0.0 {
        // A x = 0 has the one solution x = 0 when A is positive definite.
        ctx.zero(x)?;
        return Ok(SolveReport {
            iterations: 0,
            residuals: vec![(0, 0.0)],
            true_residual: 0.0,
        });
    }
    if t == crate::DType::F32 && !(1e-15..=1e15).contains(&b_norm) {
        return Err(Error::Usage(format!(
            "cg: ||b|| is {b_norm:e}, where f32 dot products underflow or overflow; scale b \
             (and x) into [1e-15, 1e15], or solve in f64"
        )));
    }
    let tmp = |n: &str| ctx.dat_zeros::<T>(&format!("cg {n}"), set, 1);
    let (r, p, q) = (tmp("r")?, tmp("p")?, tmp("q")?);
    // Without a preconditioner z is r itself.
    let z_own = diagonal.map(|_| tmp("z")).transpose()?;
    let z = z_own.as_ref().unwrap_or(&r);
    a.apply(ctx, x, &q)?;
    ctx.par_loop(&k("residual"), set, &[b.read(), q.read(), r.write()])?;
    let precondition = || match diagonal {
        Some(d) => ctx.par_loop(&k("precondition"), set, &[d.read(), r.read(), z.write()]),
        None => Ok(()),
    };
    precondition()?;
    ctx.copy(z, &p)?;
    let mut rz = ctx.dot(&r, z)?;
    let first = norm(&r)? / b_norm;
    if !first.is_finite() {
        return Err(Error::Usage(format!(
            "cg: the initial residual b - A x is not finite: x `{}` (the initial guess) or A has \
             a value that is not finite",
            x.name()
        )));
    }
    let mut report = SolveReport {
        iterations: 0,
        residuals: vec![(0, first)],
        true_residual: first,
    };
    if first <= opts.rtol {
        return Ok(report);
    }
    for it in 1..=opts.max_iterations {
        a.apply(ctx, &p, &q)?;
        let pq = ctx.dot(&p, &q)?;
        let args = [rz.read(), pq.read(), p.read(), q.read(), x.rw(), r.rw()];
        ctx.par_loop(&k("step"), set, &args)?;
        precondition()?;
        let next = ctx.dot(&r, z)?;
        let args = [next.read(), rz.read(), z.read(), p.rw()];
        ctx.par_loop(&k("direction"), set, &args)?;
        rz = next;
        report.iterations = it;
        if it % opts.check_every == 0 || it == opts.max_iterations {
            let res = norm(&r)? / b_norm;
            let since = report.residuals.last().map_or(0, |l| l.0);
            report.residuals.push((it, res));
            if !res.is_finite() {
                return Err(Error::Device(format!(
                    "cg broke down between iterations {since} and {it}: the residual is {res} \
                     (p.Ap or r.z was 0 or not finite: is A symmetric positive definite, with \
                     no zero on its diagonal?)"
                )));
            }
            if res > 1e10 * first {
                return Err(Error::Device(format!(
                    "cg diverged: the relative residual grew from {first:e} to {res:e} by \
                     iteration {it} (is A symmetric positive definite?)"
                )));
            }
            if res <= opts.rtol {
                // ||b - A x|| / ||b|| afresh, into the report.
                a.apply(ctx, x, &q)?;
                ctx.par_loop(&k("residual"), set, &[b.read(), q.read(), r.write()])?;
                report.true_residual = norm(&r)? / b_norm;
                return Ok(report);
            }
        }
    }
    let res = report.residuals.last().map_or(f64::NAN, |l| l.1);
    Err(Error::Device(format!(
        "cg did not converge in {} iterations: the relative residual is {res:e}, above rtol \
         {:e}; raise max_iterations, or precondition (pass the diagonal)",
        opts.max_iterations, opts.rtol
    )))
}
