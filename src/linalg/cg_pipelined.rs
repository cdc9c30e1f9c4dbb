//! Pipelined conjugate gradients (Ghysels and Vanroose, 2014; PETSc's `KSPPIPECG`), chosen by
//! [`SolveOptions::pipelined`]: an iteration's one reduction, (r, u), (w, u) and (r, r) with
//! u = M r and w = A u, is taken before the preconditioner and the operator are applied to w,
//! and nothing those two compute needs it. On N ranks the reduction over the ranks begins
//! with m's halo packed (after m = M w, which the pack needs) and is in flight while n = A m
//! runs and m's messages travel; the next vector update is the first computation that waits
//! for it.
//!
//! The recurrences, with gamma = (r, u) and delta = (w, u): beta = gamma / gamma_old,
//! alpha = gamma / (delta - beta gamma / alpha_old); z = n + beta z, q = m + beta q,
//! s = w + beta s, p = u + beta p, then x += alpha p, r -= alpha s, u -= alpha q,
//! w -= alpha z. The auxiliary vectors z, q, s, p and each element's copies of the previous
//! alpha and gamma are one Dat, so that the update binds 8 storage buffers (WebGPU's default
//! limit; checking mode adds its records): the reduction's Global, m, n, that Dat, x, r, u
//! and w. Without a preconditioner u is r, m is w and q is s.
//!
//! Residual replacement: the updated r drifts from b - A x as rounding errors propagate
//! through the recurrences of s, q and z. At a check where the updated residual fell
//! [`DROP`]-fold since the first check after the last replacement (or the start), r, u and w
//! are computed afresh from x, and s, q and z from p (as PETSc's `KSPPIPECGRR` does where its error estimate asks; here the rule
//! is Sleijpen and van der Vorst's reliable updating, decided by the host at a check, so no
//! estimate is carried per iteration). p, the step lengths and beta's history are kept: the
//! recurrence goes on, it does not restart.

use super::cg_single::{BREAKDOWN, constants, products};
use super::options::{Operator, SolveOptions, SolveReport};
use super::precond::Preconditioner;
use super::solve::Frame;
use crate::{Context, Dat, Kernel, Real, Result};

/// The update kernels of one type and dim, one WGSL source. `dots` is [(r, u), (w, u), (r, r)]
/// of the current iteration, `aux` the element's [z, q, s, p, alpha_old, gamma_old] (the
/// second without q: [z, s, p, alpha_old, gamma_old]). At or below the squared norm
/// `parloop_cg1_tau_<type>` (or with (r, u) = 0) the step is 0 and x, r, u and w stay as they
/// are; `parloop_cg1_first_<type>` is 1 in the first iteration (beta 0); both are
/// [`constants`], shared with `single_reduction`.
fn kernels(t: crate::DType, d: usize) -> String {
    format!(
        "
fn pl_cgp_steps_{t}_{d}(dots: ptr<function, array<{t}, 3>>, alpha_old: {t}, gamma_old: {t}) -> array<{t}, 2> {{
    let gamma = (*dots)[0];
    let stop = gamma == {t}() || (*dots)[2] <= parloop_cg1_tau_{t};
    let first = parloop_cg1_first_{t} != {t}();
    let beta = select(gamma / gamma_old, {t}(), first || stop);
    let correction = select(beta * gamma / alpha_old, {t}(), first || stop);
    return array<{t}, 2>(select(gamma / ((*dots)[1] - correction), {t}(), stop), beta);
}}
fn pl_cgp_update_{t}_{d}(dots: ptr<function, array<{t}, 3>>, m: ptr<function, array<{t}, {d}>>,
                     n: ptr<function, array<{t}, {d}>>, aux: ptr<function, array<{t}, {e4}>>,
                     x: ptr<function, array<{t}, {d}>>, r: ptr<function, array<{t}, {d}>>,
                     u: ptr<function, array<{t}, {d}>>, w: ptr<function, array<{t}, {d}>>) {{
    let ab = pl_cgp_steps_{t}_{d}(dots, (*aux)[{a4}], (*aux)[{a4} + 1u]);
    let a = ab[0];
    let beta = ab[1];
    (*aux)[{a4}] = a;
    (*aux)[{a4} + 1u] = (*dots)[0];
    for (var i = 0u; i < {d}u; i++) {{
        (*aux)[i] = (*n)[i] + beta * (*aux)[i];
        (*aux)[{d}u + i] = (*m)[i] + beta * (*aux)[{d}u + i];
        (*aux)[{d2}u + i] = (*w)[i] + beta * (*aux)[{d2}u + i];
        (*aux)[{d3}u + i] = (*u)[i] + beta * (*aux)[{d3}u + i];
        (*x)[i] += a * (*aux)[{d3}u + i];
        (*r)[i] -= a * (*aux)[{d2}u + i];
        (*u)[i] -= a * (*aux)[{d}u + i];
        (*w)[i] -= a * (*aux)[i];
    }}
}}
fn pl_cgp_update_self_{t}_{d}(dots: ptr<function, array<{t}, 3>>, n: ptr<function, array<{t}, {d}>>,
                          aux: ptr<function, array<{t}, {e3}>>, x: ptr<function, array<{t}, {d}>>,
                          r: ptr<function, array<{t}, {d}>>, w: ptr<function, array<{t}, {d}>>) {{
    let ab = pl_cgp_steps_{t}_{d}(dots, (*aux)[{a3}], (*aux)[{a3} + 1u]);
    let a = ab[0];
    let beta = ab[1];
    (*aux)[{a3}] = a;
    (*aux)[{a3} + 1u] = (*dots)[0];
    for (var i = 0u; i < {d}u; i++) {{
        (*aux)[i] = (*n)[i] + beta * (*aux)[i];
        (*aux)[{d}u + i] = (*w)[i] + beta * (*aux)[{d}u + i];
        (*aux)[{d2}u + i] = (*r)[i] + beta * (*aux)[{d2}u + i];
        (*x)[i] += a * (*aux)[{d2}u + i];
        (*r)[i] -= a * (*aux)[{d}u + i];
        (*w)[i] -= a * (*aux)[i];
    }}
}}
// Residual replacement: p out of the auxiliary Dat, and s = A p, q = M s, z = A q back in.
fn pl_cgp_take_p_{t}_{d}(aux: ptr<function, array<{t}, {e4}>>, p: ptr<function, array<{t}, {d}>>) {{
    for (var i = 0u; i < {d}u; i++) {{ (*p)[i] = (*aux)[{d3}u + i]; }}
}}
fn pl_cgp_put_{t}_{d}(s: ptr<function, array<{t}, {d}>>, q: ptr<function, array<{t}, {d}>>,
                  z: ptr<function, array<{t}, {d}>>, aux: ptr<function, array<{t}, {e4}>>) {{
    for (var i = 0u; i < {d}u; i++) {{
        (*aux)[i] = (*z)[i];
        (*aux)[{d}u + i] = (*q)[i];
        (*aux)[{d2}u + i] = (*s)[i];
    }}
}}
fn pl_cgp_take_p_self_{t}_{d}(aux: ptr<function, array<{t}, {e3}>>, p: ptr<function, array<{t}, {d}>>) {{
    for (var i = 0u; i < {d}u; i++) {{ (*p)[i] = (*aux)[{d2}u + i]; }}
}}
fn pl_cgp_put_self_{t}_{d}(s: ptr<function, array<{t}, {d}>>, z: ptr<function, array<{t}, {d}>>,
                       aux: ptr<function, array<{t}, {e3}>>) {{
    for (var i = 0u; i < {d}u; i++) {{
        (*aux)[i] = (*z)[i];
        (*aux)[{d}u + i] = (*s)[i];
    }}
}}
",
        e4 = 4 * d + 2,
        a4 = 4 * d,
        e3 = 3 * d + 2,
        a3 = 3 * d,
        d2 = 2 * d,
        d3 = 3 * d,
    )
}

/// The fall of the updated residual, since the first check after the last replacement (or
/// the start), at which a check replaces it with the true one (Sleijpen and van der Vorst's
/// reliable updating).
const DROP: f64 = 1e-2;

/// [`super::cg`] under `pipelined`.
pub(super) async fn cg_pipelined<T: Real>(
    ctx: &Context,
    a: &dyn Operator<T>,
    b: &Dat<T>,
    x: &Dat<T>,
    pc: Option<&dyn Preconditioner<T>>,
    opts: &SolveOptions,
) -> Result<SolveReport> {
    if T::DTYPE == crate::DType::F32 {
        return Err(crate::Error::Usage(format!(
            "cg: pipelined runs in f64 only: in f32 its recurrences, which carry A u and A q as \
             vectors, lose the residual (on the Laplacian of a 65 x 65 grid the updated \
             residual stalled near 2e-3 and the true one grew to 1.3, where the standard \
             recurrence met rtol 1e-6 in 100 iterations); b `{}` is f32: solve in f64, or \
             use single_reduction (one reduction per iteration, not hidden)",
            b.name()
        )));
    }
    let mut f = match Frame::new(ctx, "cg", b, x, pc, opts).await? {
        Ok(f) => f,
        Err(done) => return Ok(done),
    };
    let (t, set, d) = (T::DTYPE, b.set(), b.dim());
    let src = kernels(t, d);
    let k = |n: &str| Kernel::new(format!("pl_cgp_{n}_{t}_{d}"), src.clone());
    let tmp = |n: &str| ctx.dat_zeros::<T>(&format!("cg {n}"), set, d);
    let (r, w, n) = (tmp("r")?, tmp("w")?, tmp("n = A m")?);
    // Without a preconditioner u is r and m is w.
    let (u_own, m_own) = match pc {
        Some(_) => (Some(tmp("u")?), Some(tmp("m = M w")?)),
        None => (None, None),
    };
    let (u, m) = (u_own.as_ref().unwrap_or(&r), m_own.as_ref().unwrap_or(&w));
    let aux = match pc {
        Some(_) => ctx.dat_zeros::<T>("cg [z, q, s, p, alpha, gamma]", set, 4 * d + 2)?,
        None => ctx.dat_zeros::<T>("cg [z, s, p, alpha, gamma]", set, 3 * d + 2)?,
    };
    let precondition = |from: &Dat<T>, to: &Dat<T>| pc.map_or(Ok(()), |p| p.apply(ctx, from, to));
    let tau = f.tau();
    f.residual(a, &r, &w)?;
    precondition(&r, u)?;
    a.apply(ctx, u, &w)?;
    let mut current = products(ctx, &r, u, &w)?;
    f.energy_at(0);
    if f.start(&current, 2).await? {
        return Ok(f.report);
    }
    // The residual of the first check after the last replacement (or the start): None
    // right after a replacement, until that check.
    let mut base = Some(f.report.residuals[0].1);
    for it in 1..=opts.max_iterations {
        // Neither reads the reduction in flight.
        precondition(&w, m)?;
        a.apply(ctx, m, &n)?;
        constants(ctx, tau, it == 1)?;
        if pc.is_some() {
            let args = [
                current.read(),
                m.read(),
                n.read(),
                aux.rw(),
                x.rw(),
                r.rw(),
                u.rw(),
                w.rw(),
            ];
            ctx.par_loop(&k("update"), set, &args)?;
        } else {
            let args = [current.read(), n.read(), aux.rw(), x.rw(), r.rw(), w.rw()];
            ctx.par_loop(&k("update_self"), set, &args)?;
        }
        current = products(ctx, &r, u, &w)?;
        if f.after(it, current.clone(), 2, BREAKDOWN).await? {
            return f.finish(a, &r, &n).await;
        }
        // A check (its residual judged, at this iteration: pipelined CG's checks do not
        // overlap the iterations after them) whose residual fell DROP-fold since the first
        // check after the last replacement (the replaced residual's own size), short of the
        // limit: r, u, w and s, q, z computed afresh from x and p.
        let Some(&(at, res)) = f.report.residuals.last() else {
            continue;
        };
        if at != it || it == opts.max_iterations {
            continue;
        }
        let Some(from) = base else {
            base = Some(res);
            continue;
        };
        if res > DROP * from {
            continue;
        }
        let own = pc.is_some();
        let (take, put) = if own {
            ("take_p", "put")
        } else {
            ("take_p_self", "put_self")
        };
        ctx.par_loop(&k(take), set, &[aux.read(), n.write()])?;
        a.apply(ctx, &n, &w)?;
        if own {
            precondition(&w, m)?;
            a.apply(ctx, m, &n)?;
            ctx.par_loop(&k(put), set, &[w.read(), m.read(), n.read(), aux.rw()])?;
        } else {
            a.apply(ctx, &w, &n)?;
            ctx.par_loop(&k(put), set, &[w.read(), n.read(), aux.rw()])?;
        }
        f.residual(a, &r, &w)?;
        precondition(&r, u)?;
        a.apply(ctx, u, &w)?;
        current = products(ctx, &r, u, &w)?;
        f.kept_again(it, current.clone(), 2);
        f.report.replacements += 1;
        base = None;
    }
    f.limit(a, &r, &n).await
}
