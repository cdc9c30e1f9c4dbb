//! BiCGStab (van der Vorst's stabilised biconjugate gradients) for nonsymmetric systems, on the
//! device as [`super::cg`] is: the five dot products of an iteration are Globals that the
//! update kernels read (each step length computed in the kernel from them), so an iteration
//! costs no host round trip; right-preconditioned when given a preconditioner.

use super::options::{Operator, SolveOptions, SolveReport};
use super::precond::Preconditioner;
use super::solve::Frame;
use crate::{Context, Dat, Global, Kernel, Real, Result};
use std::rc::Rc;

/// The kernels of one type, one WGSL source. Every step length is a ratio of two dot
/// products, taken as 0 once the residual has converged (r.r, from the end of the last
/// iteration, at or below the Const `parloop_bicgstab_tau_<type>`, rtol^2 ||b||^2) or when its
/// numerator is 0: the iterations after convergence, until the host's next check, change
/// nothing (the dot products of unchanged vectors repeat exactly). A zero denominator under a live nonzero numerator is a breakdown and gives inf.
/// Each loop takes at most 8 buffers.
fn kernels(t: crate::DType, d: usize) -> String {
    // The parameters: the dot products (Globals, one value each), then the vectors (`d`
    // values per element).
    let g = |dots: &[&str], vectors: &[&str]| {
        let with = |ns: &[&str], len: usize| {
            ns.iter()
                .map(|n| format!("{n}: ptr<function, array<{t}, {len}>>"))
                .collect::<Vec<_>>()
        };
        [with(dots, 1), with(vectors, d)].concat().join(", ")
    };
    format!(
        "
fn pl_bicg_ratio_{t}_{d}(a: {t}, b: {t}, rr: {t}) -> {t} {{
    return select(a / b, {t}(), a == {t}() || rr <= parloop_bicgstab_tau_{t});
}}
fn pl_bicg_direction_{t}_{d}({}) {{
    // beta = (rho / rho') (alpha' / omega') = (rho / rv') (tt' / ts'); omega' = ts' / tt'.
    let q = (*rr)[0];
    let beta = pl_bicg_ratio_{t}_{d}((*rho)[0], (*rv)[0], q) * pl_bicg_ratio_{t}_{d}((*tt)[0], (*ts)[0], q);
    let omega = pl_bicg_ratio_{t}_{d}((*ts)[0], (*tt)[0], q);
    for (var i = 0u; i < {d}u; i++) {{
        (*p)[i] = select((*r)[i], {t}(), q <= parloop_bicgstab_tau_{t}) + beta * ((*p)[i] - omega * (*v)[i]);
    }}
}}
fn pl_bicg_half_{t}_{d}({}) {{
    let alpha = pl_bicg_ratio_{t}_{d}((*rho)[0], (*rv)[0], (*rr)[0]);
    for (var i = 0u; i < {d}u; i++) {{ (*s)[i] = (*r)[i] - alpha * (*v)[i]; }}
}}
fn pl_bicg_solution_{t}_{d}({}) {{
    let q = (*rr)[0];
    let alpha = pl_bicg_ratio_{t}_{d}((*rho)[0], (*rv)[0], q);
    let omega = pl_bicg_ratio_{t}_{d}((*ts)[0], (*tt)[0], q);
    for (var i = 0u; i < {d}u; i++) {{ (*x)[i] += alpha * (*y)[i] + omega * (*z)[i]; }}
}}
fn pl_bicg_residual_{t}_{d}({}) {{
    let omega = pl_bicg_ratio_{t}_{d}((*ts)[0], (*tt)[0], (*rr)[0]);
    for (var i = 0u; i < {d}u; i++) {{ (*r)[i] = (*s)[i] - omega * (*tv)[i]; }}
}}
fn pl_bicg_dots_{t}_{d}({}) {{
    for (var i = 0u; i < {d}u; i++) {{
        (*rho)[0] += (*h)[i] * (*r)[i];
        (*rr)[0] += (*r)[i] * (*r)[i];
    }}
}}
",
        g(&["rho", "rv", "ts", "tt", "rr"], &["r", "v", "p"]),
        g(&["rho", "rv", "rr"], &["r", "v", "s"]),
        g(&["rho", "rv", "ts", "tt", "rr"], &["y", "z", "x"]),
        g(&["ts", "tt", "rr"], &["s", "tv", "r"]),
        g(&["rho", "rr"], &["h", "r"]),
    )
}

/// Solves A x = b by BiCGStab from the `x` given (A nonsingular, not necessarily symmetric),
/// right-preconditioned by `pc` when given (the diagonal: Jacobi; an [`super::Amg`]). Stops,
/// reports and fails as [`super::cg`] does. When r^.r is exactly 0 at a check while the
/// residual is not (r^ has become orthogonal to r), the recurrence restarts with r^ = r (`SolveReport::restarts`); a
/// breakdown (r^.v or t.s zero with the residual not) is an error naming the iterations
/// between which it happened. Breakdowns are seen as values that are not finite, which WGSL
/// produces on IEEE hardware (Vulkan, DX12) but does not promise everywhere. After an error x
/// holds the last iterate (or values that are not finite).
/// Native: it blocks on the residual checks; [`bicgstab_async`] is the same without blocking.
#[cfg(not(target_arch = "wasm32"))]
pub fn bicgstab<T: Real>(
    ctx: &Context,
    a: &dyn Operator<T>,
    b: &Dat<T>,
    x: &Dat<T>,
    pc: Option<&dyn Preconditioner<T>>,
    opts: &SolveOptions,
) -> Result<SolveReport> {
    pollster::block_on(bicgstab_async(ctx, a, b, x, pc, opts))
}

/// [`bicgstab`] without blocking: the residual checks await their readbacks.
pub async fn bicgstab_async<T: Real>(
    ctx: &Context,
    a: &dyn Operator<T>,
    b: &Dat<T>,
    x: &Dat<T>,
    pc: Option<&dyn Preconditioner<T>>,
    opts: &SolveOptions,
) -> Result<SolveReport> {
    let mut f = match Frame::new(ctx, "bicgstab", b, x, pc, opts).await? {
        Ok(f) => f,
        Err(done) => return Ok(done),
    };
    let (t, set, d) = (T::DTYPE, b.set(), b.dim());
    let src = kernels(t, d);
    let k = |n: &str| Kernel::new(format!("pl_bicg_{n}_{t}_{d}"), src.clone());
    let tmp = |n: &str| ctx.dat_zeros::<T>(&format!("bicgstab {n}"), set, d);
    let (r, r0, p, v) = (tmp("r")?, tmp("r^")?, tmp("p")?, tmp("v")?);
    let (s, tv) = (tmp("s")?, tmp("t")?);
    // Without a preconditioner y is p and z is s.
    let (y_own, z_own) = match pc {
        Some(_) => (Some(tmp("y")?), Some(tmp("z")?)),
        None => (None, None),
    };
    let (y, z) = (y_own.as_ref().unwrap_or(&p), z_own.as_ref().unwrap_or(&s));
    let precondition = |from: &Dat<T>, to: &Dat<T>| pc.map_or(Ok(()), |m| m.apply(ctx, from, to));
    // r^.r and r.r of the current r, in one pass.
    let dots = || -> Result<(Global<T>, Rc<Global<T>>)> {
        let g = |n: &str| ctx.global(n, &[T::default()]);
        let (rho, rr) = (g("bicgstab r^.r")?, g("bicgstab r.r")?);
        let args = [rho.inc(), rr.inc(), r0.read(), r.read()];
        ctx.par_loop(&k("dots"), set, &args)?;
        Ok((rho, Rc::new(rr)))
    };
    // Set again before each loop that reads it: a solve inside the operator or the
    // preconditioner sets its own.
    let tau = f.tau();
    let with_tau = || ctx.constant(&format!("parloop_bicgstab_tau_{t}"), tau);
    with_tau()?;
    f.residual(a, &r, &tv)?;
    ctx.copy(&r, &r0)?;
    let (mut rho, mut rr) = dots()?;
    if f.start(&rr, 0).await? {
        return Ok(f.report);
    }
    // The last iteration's r^.v, t.s and t.t: 1 before the first (with p = v = 0 the first
    // direction is r whatever beta is).
    let one = || ctx.global("bicgstab start", &[T::from_f64(1.0)]);
    let (mut rv_last, mut ts_last, mut tt_last) = (one()?, one()?, one()?);
    let breakdown = "r^.v or t.s was 0 with the residual not, or a value not finite: try \
                     another initial guess x; with a preconditioner, no zero on A's diagonal";
    for it in 1..=opts.max_iterations {
        let args = [
            rho.read(),
            rv_last.read(),
            ts_last.read(),
            tt_last.read(),
            rr.read(),
            r.read(),
            v.read(),
            p.rw(),
        ];
        with_tau()?;
        ctx.par_loop(&k("direction"), set, &args)?;
        precondition(&p, y)?;
        a.apply(ctx, y, &v)?;
        let rv = ctx.dot(&r0, &v)?;
        let args = [
            rho.read(),
            rv.read(),
            rr.read(),
            r.read(),
            v.read(),
            s.write(),
        ];
        with_tau()?;
        ctx.par_loop(&k("half"), set, &args)?;
        precondition(&s, z)?;
        a.apply(ctx, z, &tv)?;
        let (ts, tt) = (ctx.dot(&tv, &s)?, ctx.dot(&tv, &tv)?);
        let args = [
            rho.read(),
            rv.read(),
            ts.read(),
            tt.read(),
            rr.read(),
            y.read(),
            z.read(),
            x.rw(),
        ];
        with_tau()?;
        ctx.par_loop(&k("solution"), set, &args)?;
        let args = [
            ts.read(),
            tt.read(),
            rr.read(),
            s.read(),
            tv.read(),
            r.write(),
        ];
        with_tau()?;
        ctx.par_loop(&k("residual"), set, &args)?;
        (rv_last, ts_last, tt_last) = (rv, ts, tt);
        (rho, rr) = dots()?;
        if f.after(it, rr.clone(), 0, breakdown).await? {
            return f.finish(a, &r, &tv).await;
        }
        // r^ orthogonal to r while r is not 0 (Dirichlet data in b only, x = 0, makes r^ a left
        // eigenvector of A): the steps above were zero. Restart the recurrence with r^ = r.
        if f.checks(it)
            && rho.value_async().await?[0] == T::default()
            && rr.value_async().await?[0].to_f64() > f.tau().to_f64()
        {
            ctx.copy(&r, &r0)?;
            ctx.zero(&p)?;
            ctx.zero(&v)?;
            (rv_last, ts_last, tt_last) = (one()?, one()?, one()?);
            (rho, rr) = dots()?;
            f.report.restarts += 1;
        }
    }
    f.limit(a, &r, &tv).await
}
