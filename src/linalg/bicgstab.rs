//! BiCGStab (van der Vorst's stabilised biconjugate gradients) for nonsymmetric systems, on the
//! device as [`super::cg`] is: the four dot products of an iteration are Globals that the
//! update kernels read (each step length computed in the kernel from them), so an iteration
//! costs no host round trip; right-preconditioned by Jacobi when given the diagonal.

use super::solve::{Frame, Operator, SolveOptions, SolveReport};
use crate::{Context, Dat, Kernel, Real, Result};

/// The kernels of one type, one WGSL source. A ratio whose numerator is 0 is 0 (a solve that
/// converged exactly between two checks goes on with zero steps); a zero denominator under a
/// nonzero numerator is a breakdown and gives inf. Each loop takes at most 7 buffers.
fn kernels(t: crate::DType) -> String {
    let one = |n: &str| format!("{n}: ptr<function, array<{t}, 1>>");
    let g = |ns: &[&str]| ns.iter().map(|n| one(n)).collect::<Vec<_>>().join(", ");
    format!(
        "
fn pl_bicg_ratio_{t}(a: {t}, b: {t}) -> {t} {{ return select(a / b, {t}(), a == {t}()); }}
fn pl_bicg_precondition_{t}({}) {{
    (*z)[0] = (*v)[0] / (*d)[0];
}}
fn pl_bicg_direction_{t}({}) {{
    // beta = (rho / rho') (alpha' / omega') = (rho / rv') (tt' / ts'); omega' = ts' / tt'.
    let beta = pl_bicg_ratio_{t}((*rho)[0], (*rv)[0]) * pl_bicg_ratio_{t}((*tt)[0], (*ts)[0]);
    let omega = pl_bicg_ratio_{t}((*ts)[0], (*tt)[0]);
    (*p)[0] = (*r)[0] + beta * ((*p)[0] - omega * (*v)[0]);
}}
fn pl_bicg_half_{t}({}) {{
    (*s)[0] = (*r)[0] - pl_bicg_ratio_{t}((*rho)[0], (*rv)[0]) * (*v)[0];
}}
fn pl_bicg_solution_{t}({}) {{
    (*x)[0] += pl_bicg_ratio_{t}((*rho)[0], (*rv)[0]) * (*y)[0]
        + pl_bicg_ratio_{t}((*ts)[0], (*tt)[0]) * (*z)[0];
}}
fn pl_bicg_residual_{t}({}) {{
    (*r)[0] = (*s)[0] - pl_bicg_ratio_{t}((*ts)[0], (*tt)[0]) * (*tv)[0];
}}
",
        g(&["d", "v", "z"]),
        g(&["rho", "rv", "ts", "tt", "r", "v", "p"]),
        g(&["rho", "rv", "r", "v", "s"]),
        g(&["rho", "rv", "ts", "tt", "y", "z", "x"]),
        g(&["ts", "tt", "s", "tv", "r"]),
    )
}

/// Solves A x = b by BiCGStab from the `x` given (A nonsingular, not necessarily symmetric),
/// right-preconditioned by Jacobi when `diagonal` is given. Stops, reports and fails as
/// [`super::cg`] does; a breakdown (r^.v or t.s zero with the residual not) is an error
/// naming the iterations between which it happened.
pub fn bicgstab<T: Real>(
    ctx: &Context,
    a: &dyn Operator<T>,
    b: &Dat<T>,
    x: &Dat<T>,
    diagonal: Option<&Dat<T>>,
    opts: &SolveOptions,
) -> Result<SolveReport> {
    let mut f = match Frame::new(ctx, "bicgstab", b, x, &[diagonal], opts)? {
        Ok(f) => f,
        Err(done) => return Ok(done),
    };
    let (t, set) = (T::DTYPE, b.set());
    let src = kernels(t);
    let k = |n: &str| Kernel::new(format!("pl_bicg_{n}_{t}"), src.clone());
    let tmp = |n: &str| ctx.dat_zeros::<T>(&format!("bicgstab {n}"), set, 1);
    let (r, r0, p, v) = (tmp("r")?, tmp("r^")?, tmp("p")?, tmp("v")?);
    let (s, tv) = (tmp("s")?, tmp("t")?);
    // Without a preconditioner y is p and z is s.
    let (y_own, z_own) = match diagonal {
        Some(_) => (Some(tmp("y")?), Some(tmp("z")?)),
        None => (None, None),
    };
    let (y, z) = (y_own.as_ref().unwrap_or(&p), z_own.as_ref().unwrap_or(&s));
    let precondition = |from: &Dat<T>, to: &Dat<T>| match diagonal {
        Some(d) => ctx.par_loop(
            &k("precondition"),
            set,
            &[d.read(), from.read(), to.write()],
        ),
        None => Ok(()),
    };
    f.residual(a, &r, &tv)?;
    ctx.copy(&r, &r0)?;
    if f.start(&r)? {
        return Ok(f.report);
    }
    // The last iteration's r^.v, t.s and t.t: 1 before the first (with p = v = 0 the first
    // direction is r whatever beta is).
    let one = || ctx.global("bicgstab start", &[T::from_f64(1.0)]);
    let (mut rv_last, mut ts_last, mut tt_last) = (one()?, one()?, one()?);
    let breakdown = "r^.v or t.s was 0 with the residual not, or a value not finite: is A \
                     nonsingular, with no zero on its diagonal?";
    for it in 1..=opts.max_iterations {
        let rho = ctx.dot(&r0, &r)?;
        let args = [
            rho.read(),
            rv_last.read(),
            ts_last.read(),
            tt_last.read(),
            r.read(),
            v.read(),
            p.rw(),
        ];
        ctx.par_loop(&k("direction"), set, &args)?;
        precondition(&p, y)?;
        a.apply(ctx, y, &v)?;
        let rv = ctx.dot(&r0, &v)?;
        let args = [rho.read(), rv.read(), r.read(), v.read(), s.write()];
        ctx.par_loop(&k("half"), set, &args)?;
        precondition(&s, z)?;
        a.apply(ctx, z, &tv)?;
        let (ts, tt) = (ctx.dot(&tv, &s)?, ctx.dot(&tv, &tv)?);
        let args = [
            rho.read(),
            rv.read(),
            ts.read(),
            tt.read(),
            y.read(),
            z.read(),
            x.rw(),
        ];
        ctx.par_loop(&k("solution"), set, &args)?;
        let args = [ts.read(), tt.read(), s.read(), tv.read(), r.write()];
        ctx.par_loop(&k("residual"), set, &args)?;
        (rv_last, ts_last, tt_last) = (rv, ts, tt);
        if f.after(it, &r, breakdown)? {
            return f.finish(a, &r, &tv);
        }
    }
    Err(f.limit())
}
