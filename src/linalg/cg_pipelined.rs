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
//! are computed afresh from x, and s, q and z from p (as PETSc's `KSPPIPECGRR` does where
//! its error estimate asks; here the rule is Sleijpen and van der Vorst's reliable
//! updating, decided by the host at a check, so no estimate is carried per iteration).
//! p, the step lengths and beta's history are kept: the recurrence goes on, unless the
//! updated r was farther than [`DRIFT`] times its norm from b - A x (rounding errors the
//! residual's size, at the true residual's floor): then it restarts from x. [`STALLED`] restarts in a row that do not halve the smallest replaced
//! residual stop the solve: its true residual has stopped falling above rtol.

use super::cg_single::{BREAKDOWN, constants, products};
use super::options::{Operator, SolveOptions, SolveReport};
use super::precond::Preconditioner;
use super::solve::{Frame, not_fixed};
use crate::error::SolverFailure;
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
// Residual replacement: r = b - q (q = A x), and the squared norm of what that changed.
fn pl_cgp_replace_{t}_{d}(b: ptr<function, array<{t}, {d}>>, q: ptr<function, array<{t}, {d}>>,
                      r: ptr<function, array<{t}, {d}>>, drift: ptr<function, array<{t}, 1>>) {{
    for (var i = 0u; i < {d}u; i++) {{
        let v = (*b)[i] - (*q)[i];
        let e = v - (*r)[i];
        (*drift)[0] += e * e;
        (*r)[i] = v;
    }}
}}
// and p out of the auxiliary Dat, and s = A p, q = M s, z = A q back in.
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

/// How far the updated residual may be from b - A x, relative to its own norm, for the
/// recurrence to go on with p after a replacement; farther, it restarts. (The drift grows
/// about as fast as the residual falls: on Poisson problems it was below 1.5e-2 at every
/// replacement before the one at the true residual's floor, where it was 0.5 to 1.2; a
/// restart before the floor costs iterations, not accuracy.)
const DRIFT: f64 = 0.1;

/// Restarts in a row without progress that stop the solve below its attainable accuracy.
const STALLED: usize = 2;

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
    // Set by a replacement that restarts the recurrence, for the next iteration.
    let mut restart = false;
    let mut floor = Floor {
        least: f.report.residuals[0].1,
        misses: 0,
        found: Vec::new(),
    };
    for it in 1..=opts.max_iterations {
        // Neither reads the reduction in flight.
        precondition(&w, m)?;
        a.apply(ctx, m, &n)?;
        constants(ctx, tau, it == 1 || std::mem::take(&mut restart))?;
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
        // r = b - A x, and how far the updated r was from it.
        a.apply(ctx, x, &w)?;
        let drift = ctx.global::<T>("cg ||b - A x - r||^2", &[T::default()])?;
        ctx.par_loop(
            &k("replace"),
            set,
            &[b.read(), w.read(), r.rw(), drift.inc()],
        )?;
        drift.prefetch_async().await?;
        precondition(&r, u)?;
        a.apply(ctx, u, &w)?;
        current = products(ctx, &r, u, &w)?;
        f.kept_again(it, current.clone(), 2);
        f.report.replacements += 1;
        base = None;
        // The replaced residual and the drift, read now (replacements are few; the drift is
        // prefetched above). Where the updated residual was farther than DRIFT times its norm
        // from b - A x, rounding errors have grown to the residual's size: p, built from
        // residuals that were not b - A x, is dropped (the next iteration starts the
        // recurrence again from x, as the first did). STALLED such restarts in a row that do
        // not halve the smallest replaced residual: the true residual is no longer falling.
        // One is enough above what rounding explains (as `finish` judges): the operator or
        // the preconditioner changed under the solve.
        let replaced = current.value_async().await?[2].to_f64().sqrt() / f.b_norm();
        let drift = drift.value_async().await?[0].to_f64().sqrt() / f.b_norm();
        f.report.true_residual = replaced;
        let before = floor.least;
        let progress = replaced < 0.5 * before;
        floor.least = before.min(replaced);
        floor.found.push((it, replaced));
        if drift <= DRIFT * res {
            floor.misses = 0;
            continue;
        }
        restart = true;
        f.report.restarts += 1;
        floor.misses = if progress { 0 } else { floor.misses + 1 };
        let far = f.far();
        if floor.misses > 0 && replaced > far {
            let error = floor.changed(it, res, before, far, f.first());
            return f.give_up(error);
        }
        if floor.misses == STALLED {
            return f.give_up(floor.error(it, opts.rtol));
        }
    }
    // Its recurrences can stagnate where the standard one converges: the limit says so.
    let mut done = f.limit(a, &r, &n).await;
    if let Err(crate::Error::Solver { message, .. }) = &mut done {
        message.push_str(
            " (pipelined CG's recurrences stagnate on some systems where the standard \
             recurrence converges: try it, or single_reduction)",
        );
    }
    done
}

/// The replaced residuals of a solve, to tell where its true residual stopped falling.
struct Floor {
    /// The smallest replaced residual (or the first residual).
    least: f64,
    /// Restarts in a row that did not halve `least`.
    misses: usize,
    /// (iteration, replaced residual) of each replacement.
    found: Vec<(usize, f64)>,
}

impl Floor {
    /// The error of a solve stopped after iteration `it` at its true residual's floor.
    fn error(&self, it: usize, rtol: f64) -> crate::Error {
        let found = self.found[self.found.len().saturating_sub(STALLED + 1)..]
            .iter()
            .map(|(k, res)| format!("{res:.3e} at iteration {k}"))
            .collect::<Vec<_>>()
            .join(", ");
        let least = self.least;
        crate::Error::Solver {
            solver: "cg",
            failure: SolverFailure::NotConverged,
            iterations: it,
            residual: self.found.last().map_or(least, |l| l.1),
            message: format!(
                "cg (pipelined) stopped after iteration {it}: its true residual is no longer \
                 falling, near {least:.3e}, above rtol {rtol:e} (the residual replacements \
                 found {found}, each after the updated residual had fallen 100-fold, and \
                 the last {STALLED} restarted the recurrence without halving it): rtol is \
                 below the accuracy this system reaches in f64 (near cond(A) times its \
                 epsilon, {:.1e}); loosen rtol to above {least:.1e}, or set allow_unconverged \
                 to take the iterate",
                f64::EPSILON
            ),
        }
    }

    /// The error of a replacement after iteration `it` that restarted without progress at a
    /// true residual above `far`, from an updated one `res`, the smallest before `before`.
    fn changed(&self, it: usize, res: f64, before: f64, far: f64, first: f64) -> crate::Error {
        let (_, replaced) = self.found[self.found.len() - 1];
        crate::Error::Solver {
            solver: "cg",
            failure: SolverFailure::Inaccurate,
            iterations: it,
            residual: replaced,
            message: format!(
                "cg (pipelined) stopped after iteration {it}: its updated residual had fallen \
                 to {res:.3e}, but the true residual ||b - A x|| / ||b|| is {replaced:.3e}, not \
                 below half of {before:.3e} (its smallest before) and above {far:.3e}, more \
                 than rounding explains: {}; set allow_unconverged to take the iterate",
                not_fixed(crate::DType::F64, first)
            ),
        }
    }
}
