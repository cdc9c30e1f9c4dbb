//! Preconditioners: z = M^-1 r recorded as par_loops, for the Krylov solvers.

use super::Mat;
use crate::{Context, Dat, Error, Kernel, Real, Result};

/// A preconditioner M: records z = M^-1 r on the device. A Dat is Jacobi's (the diagonal it
/// holds), [`super::Amg`] is algebraic multigrid, and any closure
/// `Fn(&Context, &Dat<T>, &Dat<T>) -> Result<()>` recording par_loops is one.
pub trait Preconditioner<T: Real> {
    /// Records z = M^-1 r (r and z are Dats on the operator's rows, apart).
    fn apply(&self, ctx: &Context, r: &Dat<T>, z: &Dat<T>) -> Result<()>;

    /// The Dats it reads that live on the operator's rows, which the solvers check against
    /// b (one set and dim, neither b nor x); none by default.
    fn vectors(&self) -> Vec<&Dat<T>> {
        Vec::new()
    }
}

/// Jacobi's preconditioner by a diagonal (as [`super::Mat::diagonal`] gives it): z = r / d.
impl<T: Real> Preconditioner<T> for Dat<T> {
    fn apply(&self, ctx: &Context, r: &Dat<T>, z: &Dat<T>) -> Result<()> {
        let (t, n) = (T::DTYPE, r.dim());
        let name = format!("pl_jacobi_{t}_{n}");
        let k = Kernel::new(
            &name,
            format!(
                "fn {name}(d: ptr<function, array<{t}, {n}>>, v: ptr<function, array<{t}, {n}>>, \
                 z: ptr<function, array<{t}, {n}>>) {{
    for (var i = 0u; i < {n}u; i++) {{ (*z)[i] = (*v)[i] / (*d)[i]; }}
}}
"
            ),
        );
        ctx.par_loop(&k, r.set(), &[self.read(), r.read(), z.write()])
    }

    fn vectors(&self) -> Vec<&Dat<T>> {
        vec![self]
    }
}

/// A closure recording z = M^-1 r.
impl<T: Real, F: Fn(&Context, &Dat<T>, &Dat<T>) -> Result<()>> Preconditioner<T> for F {
    fn apply(&self, ctx: &Context, r: &Dat<T>, z: &Dat<T>) -> Result<()> {
        self(ctx, r, z)
    }
}

/// Refuses z = M^-1 r for a preconditioner `what` built from `a` (at its `generation`) when r
/// or z is not a Dat of a's block dim on a's rows, when they are one Dat, or when a changed since
/// (`stale` says what to do).
pub(super) fn check_apply<T: Real>(
    what: &str,
    a: &Mat<T>,
    generation: u64,
    (r, z): (&Dat<T>, &Dat<T>),
    stale: &str,
) -> Result<()> {
    let (name, dim) = (a.values.name(), a.block());
    let rows = a.sparsity().rows();
    for v in [r, z] {
        if v.set().id() != rows.id() || v.dim() != dim {
            return Err(Error::Usage(format!(
                "{what} of Mat `{name}` preconditions Dats of dim {dim} on `{}`, and was given \
                 `{}` of dim {} on `{}`: build it from the matrix of the system solved",
                rows.name(),
                v.name(),
                v.dim(),
                v.set().name()
            )));
        }
    }
    if r.inner.id == z.inner.id {
        return Err(Error::Usage(format!(
            "{what} of Mat `{name}`: r and z are the same Dat `{}`; z = M^-1 r needs them apart",
            r.name()
        )));
    }
    if a.generation.get() != generation {
        return Err(Error::Usage(format!("{what} of Mat `{name}`: {stale}")));
    }
    Ok(())
}
