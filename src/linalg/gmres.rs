//! Restarted GMRES (Saad and Schultz), right-preconditioned, for nonsymmetric systems that
//! BiCGStab breaks down on. The Arnoldi steps run on the device with no host round trip: the
//! basis is one Dat of `restart` columns per unknown, orthogonalised by classical Gram-Schmidt
//! twice (CGS2: two passes of dot products as one Global each, as GPU codes do in place of the
//! sequential modified Gram-Schmidt). The host reads the Hessenberg columns at the checks,
//! applies the Givens rotations in f64 and solves the small triangular system at the end of a
//! cycle; the solution update is one more pass over the basis.

use super::options::{Operator, SolveOptions, SolveReport};
use super::precond::Preconditioner;
use super::solve::Frame;
use crate::{Context, Dat, Error, Global, Kernel, Real, Result};
use std::rc::Rc;

/// The kernels of one type, dim `d` and restart `m`, one WGSL source. `basis` holds column i
/// of an element at [i d, (i + 1) d); columns not yet built are zero, so the dot products and
/// the orthogonalisation run over all `m` (their terms are zero).
fn kernels(t: crate::DType, d: usize, m: usize) -> String {
    let md = m * d;
    let arr = |n: usize| format!("ptr<function, array<{t}, {n}>>");
    let (one, vec, basis, col) = (arr(1), arr(d), arr(md), arr(m));
    format!(
        "
fn pl_gmres_first_{t}_{d}_{m}(bb: {one}, r: {vec}, basis: {basis}, v: {vec}) {{
    let s = {t}(1) / sqrt((*bb)[0]);
    for (var i = 0u; i < {md}u; i++) {{ (*basis)[i] = {t}(); }}
    for (var c = 0u; c < {d}u; c++) {{ (*basis)[c] = (*r)[c] * s; (*v)[c] = (*r)[c] * s; }}
}}
fn pl_gmres_dots_{t}_{d}_{m}(basis: {basis}, w: {vec}, h: {col}) {{
    for (var i = 0u; i < {m}u; i++) {{
        for (var c = 0u; c < {d}u; c++) {{ (*h)[i] += (*basis)[i * {d}u + c] * (*w)[c]; }}
    }}
}}
// w -= sum h_i v_i.
fn pl_gmres_orthogonalise_{t}_{d}_{m}(h: {col}, basis: {basis}, w: {vec}) {{
    for (var c = 0u; c < {d}u; c++) {{
        var s = (*w)[c];
        for (var i = 0u; i < {m}u; i++) {{ s -= (*h)[i] * (*basis)[i * {d}u + c]; }}
        (*w)[c] = s;
    }}
}}
// w -= sum h_i v_i, then the second pass's dot products of the new w.
fn pl_gmres_again_{t}_{d}_{m}(h: {col}, basis: {basis}, w: {vec}, g: {col}) {{
    pl_gmres_orthogonalise_{t}_{d}_{m}(h, basis, w);
    pl_gmres_dots_{t}_{d}_{m}(basis, w, g);
}}
// w -= sum h_i v_i, then ||w||^2.
fn pl_gmres_norm_{t}_{d}_{m}(h: {col}, basis: {basis}, w: {vec}, nn: {one}) {{
    pl_gmres_orthogonalise_{t}_{d}_{m}(h, basis, w);
    for (var c = 0u; c < {d}u; c++) {{ (*nn)[0] += (*w)[c] * (*w)[c]; }}
}}
// Column `parloop_gmres_column` = w / ||w|| (0 when w is: the space is invariant).
fn pl_gmres_next_{t}_{d}_{m}(nn: {one}, w: {vec}, basis: {basis}, v: {vec}) {{
    let s = select({t}(1) / sqrt((*nn)[0]), {t}(), (*nn)[0] == {t}());
    let at = parloop_gmres_column * {d}u;
    for (var c = 0u; c < {d}u; c++) {{ (*basis)[at + c] = (*w)[c] * s; (*v)[c] = (*w)[c] * s; }}
}}
// u = sum y_i v_i (then x += M u), or x += sum y_i v_i without a preconditioner.
fn pl_gmres_combine_{t}_{d}_{m}(y: {col}, basis: {basis}, u: {vec}) {{
    for (var c = 0u; c < {d}u; c++) {{
        var s = {t}();
        for (var i = 0u; i < {m}u; i++) {{ s += (*y)[i] * (*basis)[i * {d}u + c]; }}
        (*u)[c] = s;
    }}
}}
fn pl_gmres_add_{t}_{d}_{m}(y: {col}, basis: {basis}, x: {vec}) {{
    for (var c = 0u; c < {d}u; c++) {{
        var s = (*x)[c];
        for (var i = 0u; i < {m}u; i++) {{ s += (*y)[i] * (*basis)[i * {d}u + c]; }}
        (*x)[c] = s;
    }}
}}
"
    )
}

/// A Hessenberg column on the device: the two passes' coefficients and ||w||^2.
struct Column<T: Real> {
    first: Global<T>,
    second: Global<T>,
    nn: Global<T>,
}

/// The least-squares problem of a cycle on the host, in f64: the Hessenberg columns rotated
/// to upper triangular by Givens rotations, and the rotated right side g (|g[j + 1]| is the
/// residual norm after column j).
struct Givens {
    r: Vec<Vec<f64>>,
    rot: Vec<(f64, f64)>,
    g: Vec<f64>,
}

impl Givens {
    fn new(beta: f64) -> Givens {
        Givens {
            r: Vec::new(),
            rot: Vec::new(),
            g: vec![beta],
        }
    }

    /// Adds column `h` (j + 2 entries for column j): the residual norm after it, or None
    /// when the rotated diagonal is 0 (the least-squares problem is singular: A is).
    fn push(&mut self, mut h: Vec<f64>) -> Option<f64> {
        let j = self.r.len();
        for (i, &(c, s)) in self.rot.iter().enumerate() {
            let (a, b) = (h[i], h[i + 1]);
            h[i] = c * a + s * b;
            h[i + 1] = -s * a + c * b;
        }
        let d = h[j].hypot(h[j + 1]);
        if d == 0.0 || !d.is_finite() {
            return None;
        }
        let (c, s) = (h[j] / d, h[j + 1] / d);
        h[j] = d;
        h.truncate(j + 1);
        self.rot.push((c, s));
        let g = self.g[j];
        self.g[j] = c * g;
        self.g.push(-s * g);
        self.r.push(h);
        Some(self.g[j + 1].abs())
    }

    /// y minimising ||beta e1 - H y|| over the first `k` columns (back substitution).
    fn solve(&self, k: usize) -> Vec<f64> {
        let mut y = vec![0.0; k];
        for i in (0..k).rev() {
            let s: f64 = (i + 1..k).map(|l| self.r[l][i] * y[l]).sum();
            y[i] = (self.g[i] - s) / self.r[i][i];
        }
        y
    }
}

/// Solves A x = b by restarted GMRES from the `x` given (A nonsingular), right-preconditioned
/// by `pc` when given, keeping `restart` basis vectors (SolveOptions::restart, 30 by default;
/// memory: that many values per unknown). GMRES minimises the residual over the Krylov space,
/// so it does not break down where BiCGStab does; it costs more per iteration as the basis
/// grows. `iterations` counts Arnoldi steps, exactly; the residual it checks is GMRES's own
/// estimate (|g| of the rotated least-squares problem). Stops, reports and fails as
/// [`super::cg`] does; A singular shows as a breakdown. Native: it blocks on its checks;
/// [`gmres_async`] is the same without blocking.
#[cfg(not(target_arch = "wasm32"))]
pub fn gmres<T: Real>(
    ctx: &Context,
    a: &dyn Operator<T>,
    b: &Dat<T>,
    x: &Dat<T>,
    pc: Option<&dyn Preconditioner<T>>,
    opts: &SolveOptions,
) -> Result<SolveReport> {
    pollster::block_on(gmres_async(ctx, a, b, x, pc, opts))
}

/// [`gmres`] without blocking: the checks await their readbacks.
pub async fn gmres_async<T: Real>(
    ctx: &Context,
    a: &dyn Operator<T>,
    b: &Dat<T>,
    x: &Dat<T>,
    pc: Option<&dyn Preconditioner<T>>,
    opts: &SolveOptions,
) -> Result<SolveReport> {
    let m = opts.restart;
    if !(1..=256).contains(&m) {
        return Err(Error::Usage(format!(
            "gmres: restart must be in 1..=256 (basis vectors kept); got {m}"
        )));
    }
    let mut f = match Frame::new(ctx, "gmres", b, x, pc, opts).await? {
        Ok(f) => f,
        Err(done) => return Ok(done),
    };
    let (t, set, d) = (T::DTYPE, b.set(), b.dim());
    let src = kernels(t, d, m);
    let k = |n: &str| Kernel::new(format!("pl_gmres_{n}_{t}_{d}_{m}"), src.clone());
    let tmp = |n: &str, dim: usize| ctx.dat_zeros::<T>(&format!("gmres {n}"), set, dim);
    let (r, w, v) = (tmp("r", d)?, tmp("w", d)?, tmp("v", d)?);
    let basis = tmp("basis", m * d)?;
    // With a preconditioner: z = M v for the operator, u = V y for the update.
    let (z_own, u_own) = match pc {
        Some(_) => (Some(tmp("z", d)?), Some(tmp("u", d)?)),
        None => (None, None),
    };
    let z = z_own.as_ref().unwrap_or(&v);
    let zeros = |n: &str, len: usize| ctx.global(n, &vec![T::default(); len]);
    // The column `next` writes (one source holds every kernel: declared before any runs).
    ctx.constant("parloop_gmres_column", 1u32)?;
    f.residual(a, &r, &w)?;
    let mut rr = Rc::new(ctx.dot(&r, &r)?);
    if f.start(&rr, 0).await? {
        return Ok(f.report);
    }
    let breakdown = "the least-squares problem became singular or a value not finite: is A \
                     nonsingular, with no zero on its diagonal under a preconditioner?";
    let (rtol, b_norm) = (opts.rtol, f.b_norm());
    let mut it = 0;
    loop {
        // A cycle: V[0] = r / ||r||.
        let beta = rr.value_async().await?[0].to_f64().sqrt();
        f.judge(it, beta / b_norm, breakdown)?;
        ctx.par_loop(
            &k("first"),
            set,
            &[rr.read(), r.read(), basis.write(), v.write()],
        )?;
        let mut givens = Givens::new(beta);
        let mut columns: Vec<Column<T>> = Vec::new();
        // The columns whose estimate is known, and the first that met rtol.
        let mut done: Option<usize> = None;
        for j in 0..m {
            it += 1;
            if let Some(p) = pc {
                p.apply(ctx, &v, z)?;
            }
            a.apply(ctx, z, &w)?;
            let first = zeros("gmres h", m)?;
            ctx.par_loop(&k("dots"), set, &[basis.read(), w.read(), first.inc()])?;
            let second = zeros("gmres h'", m)?;
            let args = [first.read(), basis.read(), w.rw(), second.inc()];
            ctx.par_loop(&k("again"), set, &args)?;
            let nn = zeros("gmres ||w||^2", 1)?;
            let args = [second.read(), basis.read(), w.rw(), nn.inc()];
            ctx.par_loop(&k("norm"), set, &args)?;
            if j + 1 < m {
                ctx.constant("parloop_gmres_column", (j + 1) as u32)?;
                let args = [nn.read(), w.read(), basis.rw(), v.write()];
                ctx.par_loop(&k("next"), set, &args)?;
            }
            columns.push(Column { first, second, nn });
            if !(f.checks(it) || j + 1 == m) {
                continue;
            }
            // Read the columns since the last read; the first estimate below rtol ends it.
            let mut res = f64::NAN;
            for (i, c) in columns.iter().enumerate().skip(givens.r.len()) {
                let (h1, h2) = (c.first.value_async().await?, c.second.value_async().await?);
                let nn = c.nn.value_async().await?[0].to_f64();
                // ||w||^2 below 0 is a NaN's doing; keep it one.
                let mut h: Vec<f64> = (0..=i).map(|l| h1[l].to_f64() + h2[l].to_f64()).collect();
                h.push(nn.sqrt());
                // None: the rotated diagonal is 0, the least-squares problem singular.
                res = givens.push(h).map_or(f64::NAN, |g| g / b_norm);
                let at = it - j + i;
                if res <= rtol && done.is_none() {
                    done = Some(i);
                    f.report.iterations = at;
                    f.report.residuals.push((at, res));
                    break;
                }
                if res.is_nan() {
                    f.judge(at, res, breakdown)?;
                }
            }
            if done.is_some() {
                break;
            }
            f.report.iterations = it;
            f.judge(it, res, breakdown)?;
            f.report.residuals.push((it, res));
            if it == opts.max_iterations {
                break;
            }
        }
        // x += M V y over the columns used (a happy breakdown's zero column is not among
        // them: its estimate is 0, below rtol).
        let used = done.map_or(givens.r.len(), |i| i + 1);
        let mut y: Vec<T> = givens.solve(used).into_iter().map(T::from_f64).collect();
        y.resize(m, T::default());
        let y = ctx.global("gmres y", &y)?;
        match (pc, u_own.as_ref()) {
            (Some(p), Some(u)) => {
                ctx.par_loop(&k("combine"), set, &[y.read(), basis.read(), u.write()])?;
                p.apply(ctx, u, z)?;
                ctx.axpy(T::from_f64(1.0), z, x)?;
            }
            _ => ctx.par_loop(&k("add"), set, &[y.read(), basis.read(), x.rw()])?,
        }
        if done.is_some() {
            return f.finish(a, &r, &w).await;
        }
        if it >= opts.max_iterations {
            return f.limit(a, &r, &w).await;
        }
        // A restart from the true residual, which may already be below rtol (the estimate
        // and the true residual part in finite precision).
        f.residual(a, &r, &w)?;
        rr = Rc::new(ctx.dot(&r, &r)?);
        let value = rr.value_async().await?[0];
        if f.below(value) {
            f.report.iterations = it;
            f.report
                .residuals
                .push((it, value.to_f64().sqrt() / b_norm));
            return f.finish(a, &r, &w).await;
        }
    }
}
