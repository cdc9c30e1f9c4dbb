//! Conjugate gradients that stay on the device: every vector update is a par_loop, every dot
//! product a Global reduction that the next loops read on the device (the step lengths are
//! computed inside the update kernels from those Globals), so an iteration costs no host round
//! trip. The host reads the residual norm every `check_every` iterations to decide whether to
//! stop; between checks the iterations are recorded lazily and run in one go.

use super::options::{Operator, SolveOptions, SolveReport};
use super::precond::Preconditioner;
use super::solve::Frame;
use crate::{Context, Dat, Global, Kernel, Real, Result};
use std::rc::Rc;

/// The kernels of one type and dim (components per element), one WGSL source. `dots` holds
/// r.z and r.r, the squared norm of the current residual: at or below the Const `parloop_cg_tau_<type>` the
/// iterate has converged, and the steps leave x, r and p as they are (the iterations until the
/// host's next check change nothing; the dot products of unchanged vectors repeat exactly).
fn kernels(t: crate::DType, d: usize) -> String {
    format!(
        "
fn pl_cg_step_{t}_{d}(dots: ptr<function, array<{t}, 2>>, pq: ptr<function, array<{t}, 1>>,
                  p: ptr<function, array<{t}, {d}>>, q: ptr<function, array<{t}, {d}>>,
                  x: ptr<function, array<{t}, {d}>>, r: ptr<function, array<{t}, {d}>>) {{
    // dots = [r.z, r.r]. r = 0 exactly gives r.z = 0: the step is then 0, not 0/0. (p.Ap = 0
    // with r.z != 0 is a breakdown, and stays one: the division gives inf.)
    let rz = (*dots)[0];
    let stop = rz == {t}() || (*dots)[1] <= parloop_cg_tau_{t};
    let alpha = select(rz / (*pq)[0], {t}(), stop);
    for (var i = 0u; i < {d}u; i++) {{
        (*x)[i] += alpha * (*p)[i];
        (*r)[i] -= alpha * (*q)[i];
    }}
}}
fn pl_cg_direction_{t}_{d}(dots: ptr<function, array<{t}, 2>>, old: ptr<function, array<{t}, 2>>,
                       z: ptr<function, array<{t}, {d}>>, p: ptr<function, array<{t}, {d}>>) {{
    let rz = (*dots)[0];
    let beta = select(rz / (*old)[0], {t}(), rz == {t}());
    let keep = (*dots)[1] <= parloop_cg_tau_{t};
    for (var i = 0u; i < {d}u; i++) {{ (*p)[i] = select((*z)[i] + beta * (*p)[i], (*p)[i], keep); }}
}}
fn pl_cg_dots_{t}_{d}(r: ptr<function, array<{t}, {d}>>, z: ptr<function, array<{t}, {d}>>,
                  dots: ptr<function, array<{t}, 2>>) {{
    for (var i = 0u; i < {d}u; i++) {{
        (*dots)[0] += (*r)[i] * (*z)[i];
        (*dots)[1] += (*r)[i] * (*r)[i];
    }}
}}
"
    )
}

/// Solves A x = b by conjugate gradients from the `x` given (A symmetric positive definite),
/// preconditioned by `pc` when given (A's diagonal as [`super::Mat::diagonal`] gives it:
/// Jacobi; an [`super::Amg`]; any symmetric positive definite [`super::Preconditioner`]).
/// Stopping below `rtol` returns the report (the exact iteration that met it, x that iterate,
/// and the true residual, which must be near rtol); reaching `max_iterations`, a residual that is
/// not finite (breakdown: A is not positive definite, or a zero on the diagonal) or grows
/// 1e10-fold (divergence) are errors that say which and between which iterations; so are
/// wrong inputs and options. Native: it blocks on the residual checks; [`cg_async`] is the
/// same without blocking (the browser's).
#[cfg(not(target_arch = "wasm32"))]
pub fn cg<T: Real>(
    ctx: &Context,
    a: &dyn Operator<T>,
    b: &Dat<T>,
    x: &Dat<T>,
    pc: Option<&dyn Preconditioner<T>>,
    opts: &SolveOptions,
) -> Result<SolveReport> {
    pollster::block_on(cg_async(ctx, a, b, x, pc, opts))
}

/// [`cg`] without blocking: the residual checks await their readbacks.
pub async fn cg_async<T: Real>(
    ctx: &Context,
    a: &dyn Operator<T>,
    b: &Dat<T>,
    x: &Dat<T>,
    pc: Option<&dyn Preconditioner<T>>,
    opts: &SolveOptions,
) -> Result<SolveReport> {
    match (opts.single_reduction, opts.pipelined) {
        (true, true) => {
            return Err(crate::Error::Usage(
                "cg: SolveOptions asks for both single_reduction and pipelined, two different \
                 recurrences: set one"
                    .into(),
            ));
        }
        (true, false) => return super::cg_single::cg_single(ctx, a, b, x, pc, opts).await,
        (false, true) => {
            return super::cg_pipelined::cg_pipelined(ctx, a, b, x, pc, opts).await;
        }
        (false, false) => {}
    }
    let mut f = match Frame::new(ctx, "cg", b, x, pc, opts).await? {
        Ok(f) => f,
        Err(done) => return Ok(done),
    };
    f.overlap_checks();
    let (t, set, d) = (T::DTYPE, b.set(), b.dim());
    let src = kernels(t, d);
    let k = |n: &str| Kernel::new(format!("pl_cg_{n}_{t}_{d}"), src.clone());
    let tmp = |n: &str| ctx.dat_zeros::<T>(&format!("cg {n}"), set, d);
    let (r, p, q) = (tmp("r")?, tmp("p")?, tmp("q")?);
    // Without a preconditioner z is r itself.
    let z_own = pc.map(|_| tmp("z")).transpose()?;
    let z = z_own.as_ref().unwrap_or(&r);
    let precondition = || pc.map_or(Ok(()), |m| m.apply(ctx, &r, z));
    // [r.z, r.r] in one pass, one Global (z is r without a preconditioner).
    let dots = || -> Result<Rc<Global<T>>> {
        let g = ctx.global("cg [r.z, r.r]", &[T::default(); 2])?;
        ctx.par_loop(&k("dots"), set, &[r.read(), z.read(), g.inc()])?;
        Ok(Rc::new(g))
    };
    // Set again before each loop that reads it: a solve inside the operator or the
    // preconditioner sets its own.
    let tau = f.tau();
    let with_tau = || ctx.constant(&format!("parloop_cg_tau_{t}"), tau);
    with_tau()?;
    f.residual(a, &r, &q)?;
    precondition()?;
    ctx.copy(z, &p)?;
    let mut rz = dots()?;
    f.energy_at(0);
    if f.start(&rz, 1).await? {
        return Ok(f.report);
    }
    let breakdown = "p.Ap or r.z was 0 or not finite: is A symmetric positive definite, with no \
                     zero on its diagonal?";
    for it in 1..=opts.max_iterations {
        a.apply(ctx, &p, &q)?;
        let pq = ctx.dot(&p, &q)?;
        let args = [rz.read(), pq.read(), p.read(), q.read(), x.rw(), r.rw()];
        with_tau()?;
        ctx.par_loop(&k("step"), set, &args)?;
        precondition()?;
        let next = dots()?;
        let args = [next.read(), rz.read(), z.read(), p.rw()];
        with_tau()?;
        ctx.par_loop(&k("direction"), set, &args)?;
        rz = next;
        if f.after(it, rz.clone(), 1, breakdown).await? {
            return f.finish(a, &r, &q).await;
        }
    }
    f.limit(a, &r, &q).await
}
