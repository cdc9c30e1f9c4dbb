//! The frame of a Krylov solve, which every solver shares: its checks, ||b|| on the host, the
//! residual read every `check_every` iterations and the exact iteration of convergence found
//! among the kept norms, the errors, the true residual at the end. The solvers themselves
//! ([`super::cg`], [`super::bicgstab`]) record only par_loops and dot products: no host round
//! trip inside an iteration.

use super::options::{Operator, SolveOptions, SolveReport};
use super::precond::Preconditioner;
use crate::error::SolverFailure;
use crate::types::ReduceOp;
use crate::{Context, DType, Dat, Error, Global, Kernel, Real, Result};
use std::rc::Rc;

/// A solve in progress: the checked inputs, ||b||, the report so far.
pub(super) struct Frame<'a, T: Real> {
    ctx: &'a Context,
    solver: &'static str,
    b: &'a Dat<T>,
    x: &'a Dat<T>,
    opts: &'a SolveOptions,
    b_norm: f64,
    first: f64,
    /// Whether a preconditioner was given (for the advice on reaching the limit).
    preconditioned: bool,
    /// The squared norms of the updated residual after each iteration since the last check
    /// (Globals on the device; read only at a check).
    kept: Vec<(usize, Rc<Global<T>>, usize)>,
    /// Checks overlap the next iterations ([`Frame::overlap_checks`]).
    overlap: bool,
    /// The last check's kept norms, read back while the iterations after it run.
    pending: Option<Vec<(usize, Rc<Global<T>>, usize)>>,
    /// CG: which value of a checked Global is (r, M r) ([`Frame::energy_at`]).
    energy: Option<usize>,
    /// The last residual judged below half the one before it that was (the first
    /// included), and its iteration: where the residual last made progress, not noise (for
    /// the limit's advice).
    best: (usize, f64),
    /// The smallest residual judged.
    least: f64,
    pub report: SolveReport,
}

/// What a true residual far above the updated one says about the system, the first
/// relative residual `first`.
pub(super) fn not_fixed(t: DType, first: f64) -> String {
    format!(
        "the operator is not the same linear map at every application (a closure that \
         changes, or reads data the solve writes), or the preconditioner is not a fixed linear \
         map{}{}",
        match t {
            DType::F32 => ", or f32 loses that much to rounding (solve in f64)",
            _ => ", or A is too ill-conditioned for f64 (cond(A) above about 1e10)",
        },
        if first > 10.0 {
            format!(
                ", or the initial x is far from the solution (its residual is {first:.1e} times \
                 ||b||, and rounding grows with it): solve again from the x it left, or from 0"
            )
        } else {
            String::new()
        }
    )
}

/// r = b - q, the kernel of the residual, for `d` components per element.
pub(super) fn residual_kernel(t: crate::DType, d: usize) -> Kernel {
    let name = format!("pl_residual_{t}_{d}");
    Kernel::new(
        &name,
        format!(
            "fn {name}(b: ptr<function, array<{t}, {d}>>, q: ptr<function, array<{t}, {d}>>, \
             r: ptr<function, array<{t}, {d}>>) {{
    for (var i = 0u; i < {d}u; i++) {{ (*r)[i] = (*b)[i] - (*q)[i]; }}
}}
"
        ),
    )
}

impl<'a, T: Real> Frame<'a, T> {
    /// Checks the inputs (`pc`'s vectors on b's set among them) and the options, and
    /// takes ||b|| on the host in f64 (a sum of squares in f32 underflows below 1e-19 and
    /// overflows above 1e19). `Err(report)` in the Ok: b = 0, so x = 0 and the solve is done.
    pub async fn new(
        ctx: &'a Context,
        solver: &'static str,
        b: &'a Dat<T>,
        x: &'a Dat<T>,
        pc: Option<&dyn Preconditioner<T>>,
        opts: &'a SolveOptions,
    ) -> Result<std::result::Result<Frame<'a, T>, SolveReport>> {
        let set = b.set();
        let more = pc.map_or(Vec::new(), |p| p.vectors());
        for v in std::iter::once(x).chain(more.iter().copied()) {
            if v.set().id() != set.id() || v.dim() != b.dim() {
                return Err(Error::Usage(format!(
                    "{solver}: b `{}` and `{}` must be Dats of one dim on one set; they have \
                     dims {} and {} on `{}` and `{}`",
                    b.name(),
                    v.name(),
                    b.dim(),
                    v.dim(),
                    set.name(),
                    v.set().name()
                )));
            }
        }
        let mut ids = vec![(b.inner.id, b.name()), (x.inner.id, x.name())];
        ids.extend(more.iter().map(|d| (d.inner.id, d.name())));
        for (k, (id, name)) in ids.iter().enumerate() {
            if let Some((_, other)) = ids[..k].iter().find(|(i, _)| i == id) {
                return Err(Error::Usage(format!(
                    "{solver}: `{name}` is given twice (as `{other}` too): b, x and the diagonal \
                     must be different Dats"
                )));
            }
        }
        if opts.check_every == 0
            || opts.max_iterations == 0
            || opts.rtol.is_nan()
            || opts.rtol <= 0.0
        {
            return Err(Error::Usage(format!(
                "{solver}: rtol must be above 0, max_iterations and check_every at least 1; \
                 got {opts:?}"
            )));
        }
        // On N ranks: this rank's owned values, summed over the ranks (with their count).
        let (sum, n) = {
            let local = b.data_ro_async().await.map(|values| {
                [
                    values.iter().map(|v| v.to_f64().powi(2)).sum::<f64>(),
                    values.len() as f64,
                ]
            });
            if set.halo().is_none() {
                // A set of this process: nothing collective.
                let local = local?;
                (local[0], local[1])
            } else {
                // A read that failed on one rank fails every rank before the reduction.
                let local = ctx.comm().agree(local, solver)?;
                let words: &[u32] = bytemuck::cast_slice(&local);
                let all = ctx
                    .comm()
                    .start_all_reduce(DType::F64, ReduceOp::Sum, words, solver)
                    .finish();
                let all: Vec<f64> = bytemuck::pod_collect_to_vec(&all);
                (all[0], all[1])
            }
        };
        let b_norm = {
            if !sum.is_finite() {
                return Err(Error::Usage(format!(
                    "{solver}: b `{}` has a value that is not finite (or too large to square)",
                    b.name()
                )));
            }
            sum.sqrt()
        };
        if b_norm == 0.0 {
            // A x = 0 has the one solution x = 0 when A is nonsingular.
            ctx.zero(x)?;
            return Ok(Err(SolveReport {
                converged: true,
                iterations: 0,
                residuals: vec![(0, 0.0)],
                true_residual: 0.0,
                restarts: 0,
                replacements: 0,
            }));
        }
        // In f32 the residual's squares must stay normal numbers down to rtol: an entry of
        // a residual of norm rtol ||b|| is about rtol ||b|| / sqrt(n), its square above 1e-36.
        let n = n.max(1.0);
        let low = 1e-18 * n.sqrt() / opts.rtol;
        if T::DTYPE == crate::DType::F32 && !(low..=1e18).contains(&b_norm) {
            return Err(Error::Usage(format!(
                "{solver}: ||b|| is {b_norm:e}; in f32 the squares of a residual {:e} times \
                 smaller would leave the normal numbers (with {} unknowns: ||b|| in [{low:e}, \
                 1e18]); scale b (and x), or solve in f64",
                opts.rtol, n as u64
            )));
        }
        Ok(Ok(Frame {
            ctx,
            solver,
            b,
            x,
            opts,
            b_norm,
            first: f64::NAN,
            preconditioned: pc.is_some(),
            kept: Vec::new(),
            overlap: false,
            pending: None,
            energy: None,
            best: (0, f64::INFINITY),
            least: f64::INFINITY,
            report: SolveReport {
                converged: false,
                iterations: 0,
                residuals: Vec::new(),
                true_residual: f64::NAN,
                restarts: 0,
                replacements: 0,
            },
        }))
    }

    /// The squared residual norm at or below which an iterate has converged, in T: the
    /// solvers' kernels stop changing x and r from there (so the iterations until the next
    /// check change nothing), and the host compares the same Globals with the same value.
    pub fn tau(&self) -> T {
        T::from_f64((self.opts.rtol * self.b_norm).powi(2))
    }

    /// Whether a squared residual norm read back has converged (the kernels' test).
    pub fn below(&self, rr: T) -> bool {
        rr.to_f64() <= self.tau().to_f64()
    }

    /// ||v|| / ||b|| through the device's dot product (a readback).
    async fn relative(&self, v: &Dat<T>) -> Result<f64> {
        let g = self.ctx.dot(v, v)?;
        Ok(g.value_async().await?[0].to_f64().sqrt() / self.b_norm)
    }

    /// Records r = b - A x into `r` (`q` a scratch vector).
    pub fn residual(&self, a: &dyn Operator<T>, r: &Dat<T>, q: &Dat<T>) -> Result<()> {
        a.apply(self.ctx, self.x, q)?;
        let args = [self.b.read(), q.read(), r.write()];
        self.ctx.par_loop(
            &residual_kernel(T::DTYPE, self.b.dim()),
            self.b.set(),
            &args,
        )
    }

    /// The initial residual's squared norm, value `at` of `rr`, read: true when it is
    /// already below rtol.
    pub async fn start(&mut self, rr: &Global<T>, at: usize) -> Result<bool> {
        let values = rr.value_async().await?;
        let rr = values[at];
        let first = rr.to_f64().sqrt() / self.b_norm;
        if !first.is_finite() {
            return Err(Error::Usage(format!(
                "{}: the initial residual b - A x is not finite: x `{}` (the initial guess) or \
                 A has a value that is not finite",
                self.solver,
                self.x.name()
            )));
        }
        self.first = first;
        self.report.residuals.push((0, first));
        self.report.true_residual = first;
        self.report.converged = self.below(rr);
        if !self.report.converged {
            self.energy_kept(&values, 0, first)?;
        }
        Ok(self.report.converged)
    }

    /// Whether iteration `it` is a check.
    pub fn checks(&self, it: usize) -> bool {
        it.is_multiple_of(self.opts.check_every) || it == self.opts.max_iterations
    }

    /// This solve's checks overlap the iterations after them where
    /// `SolveOptions::overlap_checks` asks, or by default on a hardware GPU (for solvers whose
    /// kernels stop at convergence and read nothing else at a check). Not on N ranks: there
    /// each check's reduction over the ranks is read at once, so nothing would overlap.
    pub fn overlap_checks(&mut self) {
        self.overlap = self.b.set().halo().is_none()
            && self
                .opts
                .overlap_checks
                .unwrap_or(!self.ctx.gpu().software());
    }

    /// CG: value `at` of each Global checked is (r, M r) (r's squared norm without a
    /// preconditioner). At 0 the recurrences' steps stop, x and r frozen (a definite
    /// preconditioner keeps it from 0 while r is not 0), so a check that finds it 0 above
    /// rtol is a breakdown, not a run to the iteration limit. Its sign is not judged: CG's
    /// iterates are the same under M and -M, and one that changes sign between checks may
    /// still converge.
    pub fn energy_at(&mut self, at: usize) {
        self.energy = Some(at);
    }

    /// `rr` holds iteration `it`'s residual computed again (value `at`; a replacement after
    /// its check): the next check looks for convergence from it on.
    pub fn kept_again(&mut self, it: usize, rr: Rc<Global<T>>, at: usize) {
        self.kept.push((it, rr, at));
    }

    /// Whether the smallest residual is below the square root of epsilon and its last halving
    /// at iteration `it` / 2 or before and at least 100 iterations (or 10 checks) before `it`:
    /// a stall, or a long plateau on the way (CG's residual is not monotone).
    fn stalled_since(&self, it: usize) -> bool {
        let k = self.best.0;
        self.least < Self::small()
            && it.saturating_sub(k) >= k.max(100).max(self.opts.check_every.saturating_mul(10))
    }

    /// The square root of T's epsilon: below it a residual is in rounding's reach.
    fn small() -> f64 {
        match T::DTYPE {
            DType::F32 => f64::from(f32::EPSILON).sqrt(),
            _ => f64::EPSILON.sqrt(),
        }
    }

    /// After iteration `it`, value `at` of `rr` the squared norm of its updated residual: on a
    /// check, reads it (or, overlapping, starts reading it and judges the previous check's);
    /// true when below rtol, the report then holding the exact iteration that first was
    /// (found among the kept norms of that check). A residual that is not finite
    /// (`breakdown` says what that means for this solver) or grew 1e10-fold is an error
    /// naming the iterations.
    pub async fn after(
        &mut self,
        it: usize,
        rr: Rc<Global<T>>,
        at: usize,
        breakdown: &str,
    ) -> Result<bool> {
        self.report.iterations = it;
        self.kept.push((it, rr, at));
        if !self.checks(it) {
            return Ok(false);
        }
        let kept = std::mem::take(&mut self.kept);
        if self.overlap && it < self.opts.max_iterations {
            // This check's norm is read back while the next iterations are recorded and
            // run; the previous check's, read back meanwhile, is judged now.
            kept[kept.len() - 1].1.inner.prefetch().await?;
            let Some(previous) = self.pending.replace(kept) else {
                return Ok(false);
            };
            let converged = self.judge_kept(previous, breakdown).await?;
            if converged {
                // Dropped with its data, the prefetch is dropped at the next force.
                self.pending = None;
            }
            return Ok(converged);
        }
        if let Some(previous) = self.pending.take()
            && self.judge_kept(previous, breakdown).await?
        {
            return Ok(true);
        }
        self.judge_kept(kept, breakdown).await
    }

    /// With [`Frame::energy_at`], a breakdown error when (r, M r) in `values` is 0 (the
    /// residual `res`, after iteration `it`, being above rtol).
    fn energy_kept(&self, values: &[T], it: usize, res: f64) -> Result<()> {
        let Some(k) = self.energy else {
            return Ok(());
        };
        let e = values[k].to_f64();
        if e != 0.0 {
            return Ok(());
        }
        let since = self.report.residuals.iter().rev().nth(1).map_or(0, |l| l.0);
        let when = match it {
            0 => "at its start".to_string(),
            _ => format!("between iterations {since} and {it}"),
        };
        let solver = self.solver;
        Err(Error::Solver {
            solver,
            failure: SolverFailure::BrokeDown,
            iterations: it,
            residual: res,
            message: format!(
                "{solver} broke down {when}: (r, M r) is 0 while the relative residual is \
                 {res:.3e}, above rtol {:e}; the preconditioner maps the residual to a vector \
                 orthogonal to it, so it is not definite: CG needs a symmetric positive \
                 definite preconditioner (bicgstab and gmres take others)",
                self.opts.rtol
            ),
        })
    }

    /// Judges the norms kept up to a check (the last is the check's): true when it is below
    /// rtol, `report.iterations` then the first iteration that was (else left as it is).
    async fn judge_kept(
        &mut self,
        kept: Vec<(usize, Rc<Global<T>>, usize)>,
        breakdown: &str,
    ) -> Result<bool> {
        let value = |k: usize| {
            let (_, g, at) = &kept[k];
            async move { Ok::<T, Error>(g.value_async().await?[*at]) }
        };
        let (it, g, at) = &kept[kept.len() - 1];
        let (it, values) = (*it, g.value_async().await?);
        let last = values[*at];
        let res = last.to_f64().sqrt() / self.b_norm;
        self.judge(it, res, breakdown)?;
        if !self.below(last) {
            self.report.residuals.push((it, res));
            self.energy_kept(&values, it, res)?;
            return Ok(false);
        }
        // Converged at the check: the first kept norm below tau (the kernels stop at it, so
        // every later one is the same value and every earlier one is above), by bisection.
        let (mut lo, mut hi) = (0, kept.len() - 1);
        while lo < hi {
            let mid = (lo + hi) / 2;
            if self.below(value(mid).await?) {
                hi = mid;
            } else {
                lo = mid + 1;
            }
        }
        self.report.iterations = kept[lo].0;
        self.report.residuals.push((kept[lo].0, res));
        Ok(true)
    }

    /// The checks of a residual `res` (relative) after iteration `it`: not finite is a
    /// breakdown (`breakdown` says what that means for this solver), 1e10 times the first is
    /// divergence; each an error naming the iterations, with `res` in the report.
    pub fn judge(&mut self, it: usize, res: f64, breakdown: &str) -> Result<()> {
        self.least = self.least.min(res);
        if res < 0.5 * self.best.1 {
            self.best = (it, res);
        }
        let since = self.report.residuals.last().map_or(0, |l| l.0);
        let solver = self.solver;
        if !res.is_finite() {
            self.report.residuals.push((it, res));
            return Err(Error::Solver {
                solver,
                failure: SolverFailure::BrokeDown,
                iterations: it,
                residual: res,
                message: format!(
                    "{solver} broke down between iterations {since} and {it}: the residual is \
                     {res} ({breakdown})"
                ),
            });
        }
        if res > 1e10 * self.first {
            self.report.residuals.push((it, res));
            return Err(Error::Solver {
                solver,
                failure: SolverFailure::Diverged,
                iterations: it,
                residual: res,
                message: format!(
                    "{solver} diverged: the relative residual grew from {:e} to {res:e} by \
                     iteration {it}",
                    self.first
                ),
            });
        }
        Ok(())
    }

    /// ||b|| (on N ranks, of the whole vector).
    pub fn b_norm(&self) -> f64 {
        self.b_norm
    }

    /// The report of a converged solve, with ||b - A x|| / ||b|| computed afresh (into `r`,
    /// `q` a scratch): an error when it is above 1000 rtol and above 0.1 (f32) or 1e-6 (f64),
    /// a report marked not converged under `allow_unconverged`.
    pub async fn finish(
        mut self,
        a: &dyn Operator<T>,
        r: &Dat<T>,
        q: &Dat<T>,
    ) -> Result<SolveReport> {
        self.residual(a, r, q)?;
        let true_residual = self.relative(r).await?;
        self.report.true_residual = true_residual;
        // Rounding alone leaves the true residual of a correct solve about cond(A) eps above
        // the updated one, below rtol.
        let far = self.far();
        self.report.converged = true_residual <= far;
        if self.report.converged || self.opts.allow_unconverged {
            return Ok(self.report);
        }
        let (solver, it) = (self.solver, self.report.iterations);
        Err(Error::Solver {
            solver,
            failure: SolverFailure::Inaccurate,
            iterations: it,
            residual: true_residual,
            message: format!(
                "{solver} met rtol {:e} at iteration {it}, but the true residual ||b - A x|| / \
                 ||b|| is {true_residual:e}, more than {far:e}: {}; set allow_unconverged to \
                 take the iterate",
                self.opts.rtol,
                not_fixed(T::DTYPE, self.first),
            ),
        })
    }

    /// At the iteration limit: the report marked not converged (with its true residual)
    /// under `allow_unconverged`, else the error.
    pub async fn limit(
        mut self,
        a: &dyn Operator<T>,
        r: &Dat<T>,
        q: &Dat<T>,
    ) -> Result<SolveReport> {
        self.residual(a, r, q)?;
        self.report.true_residual = self.relative(r).await?;
        let error = self.limit_error();
        self.give_up(error)
    }

    /// Stopping short of rtol, `report.true_residual` computed: the report marked not
    /// converged under `allow_unconverged`, else `error`.
    pub fn give_up(self, error: Error) -> Result<SolveReport> {
        if self.opts.allow_unconverged {
            return Ok(self.report);
        }
        Err(error)
    }

    /// Above what a true residual may be: 1000 rtol, and 0.1 (f32) or 1e-6 (f64). Farther is
    /// more than rounding explains for the systems solved in practice (cond(A) up to about
    /// 1e6 in f32, 1e10 in f64), from an initial x not far from the solution (the errors'
    /// messages name that case).
    pub fn far(&self) -> f64 {
        let floor = match T::DTYPE {
            DType::F32 => 0.1,
            _ => 1e-6,
        };
        (1e3 * self.opts.rtol).max(floor)
    }

    /// The first relative residual, ||b - A x0|| / ||b||.
    pub fn first(&self) -> f64 {
        self.first
    }

    /// The error for reaching the iteration limit.
    fn limit_error(&self) -> Error {
        let it = self.opts.max_iterations;
        let res = self.report.residuals.last().map_or(f64::NAN, |l| l.1);
        let eps = Self::small().powi(2);
        let (k, best) = self.best;
        let true_residual = self.report.true_residual;
        // At the limit the true residual is near the updated one, or at the floor rounding
        // allows (far()); farther, the operator changed.
        let advice = if true_residual > (10.0 * res).max(self.far()) {
            format!(
                "its true residual ||b - A x|| / ||b|| is {true_residual:.3e}, far above it: {}; \
                 set allow_unconverged to take the iterate",
                not_fixed(T::DTYPE, self.first)
            )
        } else if self.stalled_since(it) {
            format!(
                "it has not halved since iteration {k} ({best:.3e}): rtol may be \
                 below the accuracy this system reaches in {} (a solve's true residual stops \
                 near cond(A) times its epsilon, {eps:.1e}): loosen rtol, or, if the residual \
                 is on a plateau on its way down, raise max_iterations",
                T::DTYPE
            )
        } else {
            format!(
                "raise max_iterations (or set allow_unconverged to take the iterate){}",
                if self.preconditioned {
                    ""
                } else {
                    ", or precondition (the diagonal: Jacobi; or Amg)"
                }
            )
        };
        Error::Solver {
            solver: self.solver,
            failure: SolverFailure::NotConverged,
            iterations: it,
            residual: res,
            message: format!(
                "{} did not converge in {it} iterations: the relative residual is {res:.3e} \
                 (the true residual {true_residual:.3e}), above rtol {:e}; {advice}",
                self.solver, self.opts.rtol,
            ),
        }
    }
}
