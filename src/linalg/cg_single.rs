//! Conjugate gradients with one reduction per iteration (Chronopoulos and Gear; PETSc's
//! `KSPCGUseSingleReduction`), chosen by [`SolveOptions::single_reduction`]: the dot products
//! of an iteration, (r, u), (w, u) and (r, r) with u = M r and w = A u, are taken in the one
//! pass over the rows that computes w, so an iteration is two passes over memory (the vector
//! updates with the preconditioner, then y = A x with the dot products) and one finalize: on
//! N ranks, one synchronisation of every rank instead of two.
//!
//! The recurrences, with gamma = (r, u), delta = (w, u) and s = A p carried as a vector:
//! beta = gamma / gamma_old, alpha = gamma / (delta - beta gamma / alpha_old);
//! p = u + beta p, s = w + beta s, x += alpha p, r -= alpha s. Each element keeps alpha_old
//! beside its p and s (every element computes the same alpha from the same Globals): no second
//! Global, so on N ranks the one reduction is the iteration's one synchronisation. p, s and
//! alpha are one Dat, so that the update binds 8 storage buffers at most (WebGPU's default
//! limit).

use super::options::{Operator, SolveOptions, SolveReport};
use super::precond::Preconditioner;
use super::solve::Frame;
use crate::{Context, Dat, Global, Kernel, Real, Result};
use std::rc::Rc;

/// The update kernels of one type and dim, one WGSL source. `dots` is [(r, u), (w, u), (r, r)] of
/// this iteration, `old` the previous iteration's, `ps` the element's p, s and copy of the
/// previous alpha (replaced by this iteration's). At or below the squared norm
/// `parloop_cg1_tau_<type>` (or with (r, u) = 0) the steps are 0 and x and r stay as they
/// are; `parloop_cg1_first_<type>` is 1 in the first iteration (beta 0).
fn kernels(t: crate::DType, d: usize) -> String {
    format!(
        "
fn pl_cg1_update_{t}_{d}(dots: ptr<function, array<{t}, 3>>, old: ptr<function, array<{t}, 3>>,
                     u: ptr<function, array<{t}, {d}>>, w: ptr<function, array<{t}, {d}>>,
                     ps: ptr<function, array<{t}, {e}>>, x: ptr<function, array<{t}, {d}>>,
                     r: ptr<function, array<{t}, {d}>>) {{
    let gamma = (*dots)[0];
    let stop = gamma == {t}() || (*dots)[2] <= parloop_cg1_tau_{t};
    let first = parloop_cg1_first_{t} != {t}();
    let beta = select(gamma / (*old)[0], {t}(), first || stop);
    let correction = select(beta * gamma / (*ps)[{a}], {t}(), first || stop);
    let a = select(gamma / ((*dots)[1] - correction), {t}(), stop);
    (*ps)[{a}] = a;
    for (var i = 0u; i < {d}u; i++) {{
        (*ps)[i] = (*u)[i] + beta * (*ps)[i];
        (*ps)[{d}u + i] = (*w)[i] + beta * (*ps)[{d}u + i];
        (*x)[i] += a * (*ps)[i];
        (*r)[i] -= a * (*ps)[{d}u + i];
    }}
}}
// The same without a preconditioner: u is r itself (its value before the update).
fn pl_cg1_update_self_{t}_{d}(dots: ptr<function, array<{t}, 3>>, old: ptr<function, array<{t}, 3>>,
                          w: ptr<function, array<{t}, {d}>>, ps: ptr<function, array<{t}, {e}>>,
                          x: ptr<function, array<{t}, {d}>>, r: ptr<function, array<{t}, {d}>>) {{
    var u = *r;
    pl_cg1_update_{t}_{d}(dots, old, &u, w, ps, x, r);
}}
",
        e = 2 * d + 1,
        a = 2 * d
    )
}

/// What a breakdown means for the recurrences with one reduction (this one and pipelined CG).
pub(super) const BREAKDOWN: &str = "(w, u) - beta (r, u) / alpha or (r, u) was 0 or not \
                                    finite: is A symmetric positive definite, with no zero on \
                                    its diagonal?";

/// Records [(r, u), (w, u), (r, r)] into a new Global (cleared on the device, not written by
/// the host), which pipelined CG takes too.
pub(super) fn products<T: Real>(
    ctx: &Context,
    r: &Dat<T>,
    u: &Dat<T>,
    w: &Dat<T>,
) -> Result<Rc<Global<T>>> {
    let g = ctx.global::<T>("cg [r.u, w.u, r.r]", &[T::default(); 3])?;
    let args = [r.read(), u.read(), w.read(), g.inc()];
    ctx.par_loop(&dots_kernel(T::DTYPE, r.dim()), r.set(), &args)?;
    Ok(Rc::new(g))
}

/// Sets the Consts the update kernels of this recurrence and pipelined CG's read: the squared
/// norm at which they stop, and whether this is the first iteration (beta 0). Set again before
/// each loop that reads them: a solve inside the operator or the preconditioner sets its own.
pub(super) fn constants<T: Real>(ctx: &Context, tau: T, first: bool) -> Result<()> {
    let t = T::DTYPE;
    ctx.constant(&format!("parloop_cg1_tau_{t}"), tau)?;
    let one = T::from_f64(if first { 1.0 } else { 0.0 });
    ctx.constant(&format!("parloop_cg1_first_{t}"), one)
}

/// The kernel of [(r, u), (w, u), (r, r)] added into a Global of 3 (r, u, w in that order).
fn dots_kernel(t: crate::DType, d: usize) -> Kernel {
    let name = format!("pl_cg1_dots_{t}_{d}");
    Kernel::new(
        &name,
        format!(
            "fn {name}(r: ptr<function, array<{t}, {d}>>, u: ptr<function, array<{t}, {d}>>,
     w: ptr<function, array<{t}, {d}>>, next: ptr<function, array<{t}, 3>>) {{
    for (var i = 0u; i < {d}u; i++) {{
        (*next)[0] += (*r)[i] * (*u)[i];
        (*next)[1] += (*w)[i] * (*u)[i];
        (*next)[2] += (*r)[i] * (*r)[i];
    }}
}}
"
        ),
    )
}

/// [`super::cg`] under `single_reduction`.
pub(super) async fn cg_single<T: Real>(
    ctx: &Context,
    a: &dyn Operator<T>,
    b: &Dat<T>,
    x: &Dat<T>,
    pc: Option<&dyn Preconditioner<T>>,
    opts: &SolveOptions,
) -> Result<SolveReport> {
    let mut f = match Frame::new(ctx, "cg", b, x, pc, opts).await? {
        Ok(f) => f,
        Err(done) => return Ok(done),
    };
    f.overlap_checks();
    let (t, set, d) = (T::DTYPE, b.set(), b.dim());
    let src = kernels(t, d);
    let k = |n: &str| Kernel::new(format!("pl_cg1_{n}_{t}_{d}"), src.clone());
    let tmp = |n: &str| ctx.dat_zeros::<T>(&format!("cg {n}"), set, d);
    let (r, w) = (tmp("r")?, tmp("w")?);
    let ps = ctx.dat_zeros::<T>("cg [p, A p, alpha]", set, 2 * d + 1)?;
    // Without a preconditioner u is r itself.
    let u_own = pc.map(|_| tmp("u")).transpose()?;
    let u = u_own.as_ref().unwrap_or(&r);
    let precondition = || pc.map_or(Ok(()), |m| m.apply(ctx, &r, u));
    let tau = f.tau();
    f.residual(a, &r, &w)?;
    precondition()?;
    a.apply(ctx, u, &w)?;
    let mut dots = products(ctx, &r, u, &w)?;
    f.energy_at(0);
    if f.start(&dots, 2).await? {
        return Ok(f.report);
    }
    let mut old = dots.clone();
    for it in 1..=opts.max_iterations {
        constants(ctx, tau, it == 1)?;
        if u_own.is_some() {
            let args = [
                dots.read(),
                old.read(),
                u.read(),
                w.read(),
                ps.rw(),
                x.rw(),
                r.rw(),
            ];
            ctx.par_loop(&k("update"), set, &args)?;
        } else {
            let args = [dots.read(), old.read(), w.read(), ps.rw(), x.rw(), r.rw()];
            ctx.par_loop(&k("update_self"), set, &args)?;
        }
        precondition()?;
        a.apply(ctx, u, &w)?;
        let next = products(ctx, &r, u, &w)?;
        (old, dots) = (dots, next);
        if f.after(it, dots.clone(), 2, BREAKDOWN).await? {
            return f.finish(a, &r, &w).await;
        }
    }
    f.limit(a, &r, &w).await
}
