//! Dat arithmetic (PyOP2's `dat.zero()` and Dat arithmetic): zero, fill, copy, scale, axpy and
//! dot, each recorded as a par_loop over the Dat's set with a kernel parloop writes. They are
//! lazy like any loop, fuse with the loops around them (direct access over one set), and on N
//! ranks run on the owned elements with the dot product reduced over the ranks. A scalar
//! (`fill`'s value, `scale`'s and `axpy`'s alpha) travels in a Global the loop reads, so a
//! value that changes every step reuses one pipeline. Globals made for a MIN or MAX reduction
//! start from the reduction's identity (`global_min`, `global_max`).

use super::*;
use crate::data::Set;
use crate::types::ReduceOp;

/// The WGSL of a kernel `name` over `args` (parameter name and element count each) of type `t`
/// whose body runs `body` for each component `i` of the Dats (`dim` of them).
fn kernel(name: &str, t: DType, dim: usize, args: &[(&str, usize)], body: &str) -> Kernel {
    let params: Vec<String> = args
        .iter()
        .map(|(p, n)| format!("{p}: ptr<function, array<{t}, {n}>>"))
        .collect();
    Kernel::new(
        name,
        format!(
            "fn {name}({}) {{\n    for (var i = 0u; i < {dim}u; i++) {{ {body} }}\n}}\n",
            params.join(", ")
        ),
    )
}

/// The kernel's name for one type and dim (one function name per source: fusion needs it).
fn name_of(op: &str, t: DType, dim: usize) -> String {
    format!("pl_{op}_{t}_{dim}")
}

impl Context {
    /// `dat = 0`, as a par_loop (lazy; fuses with its neighbours).
    ///
    /// ```
    /// # fn main() -> parloop::Result<()> {
    /// let ctx = parloop::Context::new()?;
    /// let nodes = parloop::Set::new("nodes", 3);
    /// let u = ctx.dat("u", &nodes, 2, &[1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0])?;
    /// let v = ctx.dat("v", &nodes, 2, &[1.0f32; 6])?;
    /// ctx.axpy(2.0, &u, &v)?; // v += 2 u
    /// assert_eq!(&*v.data_ro()?, &[3.0, 5.0, 7.0, 9.0, 11.0, 13.0]);
    /// ctx.zero(&u)?;
    /// ctx.fill(&v, 0.5)?;
    /// assert_eq!(ctx.dot(&v, &v)?.value()?[0], 1.5);
    /// # Ok(())
    /// # }
    /// ```
    #[track_caller]
    pub fn zero<T: Scalar>(&self, dat: &Dat<T>) -> Result<()> {
        let (t, dim) = (T::DTYPE, dat.dim());
        let name = name_of("zero", t, dim);
        let k = kernel(&name, t, dim, &[("d", dim)], &format!("(*d)[i] = {t}();"));
        self.par_loop(&k, dat.set(), &[dat.write()])
    }

    /// Every value of `dat` set to `value`, as a par_loop.
    #[track_caller]
    pub fn fill<T: Scalar>(&self, dat: &Dat<T>, value: T) -> Result<()> {
        let (t, dim) = (T::DTYPE, dat.dim());
        let value = self.global(&format!("{} fill value", dat.name()), &[value])?;
        let name = name_of("fill", t, dim);
        let k = kernel(&name, t, dim, &[("a", 1), ("d", dim)], "(*d)[i] = (*a)[0];");
        self.par_loop(&k, dat.set(), &[value.read(), dat.write()])
    }

    /// `to = from` (one set, one dim), as a par_loop.
    #[track_caller]
    pub fn copy<T: Scalar>(&self, from: &Dat<T>, to: &Dat<T>) -> Result<()> {
        let (t, dim) = (T::DTYPE, same_shape("copy", from, to)?);
        let name = name_of("copy", t, dim);
        let k = kernel(
            &name,
            t,
            dim,
            &[("x", dim), ("y", dim)],
            "(*y)[i] = (*x)[i];",
        );
        self.par_loop(&k, from.set(), &[from.read(), to.write()])
    }

    /// `dat = alpha dat`, as a par_loop.
    #[track_caller]
    pub fn scale<T: Scalar>(&self, dat: &Dat<T>, alpha: T) -> Result<()> {
        let (t, dim) = (T::DTYPE, dat.dim());
        let alpha = self.global(&format!("{} scale", dat.name()), &[alpha])?;
        let name = name_of("scale", t, dim);
        let k = kernel(
            &name,
            t,
            dim,
            &[("a", 1), ("d", dim)],
            "(*d)[i] *= (*a)[0];",
        );
        self.par_loop(&k, dat.set(), &[alpha.read(), dat.rw()])
    }

    /// `y = y + alpha x` (one set, one dim), as a par_loop.
    #[track_caller]
    pub fn axpy<T: Scalar>(&self, alpha: T, x: &Dat<T>, y: &Dat<T>) -> Result<()> {
        let (t, dim) = (T::DTYPE, same_shape("axpy", x, y)?);
        let alpha = self.global(&format!("{} axpy alpha", y.name()), &[alpha])?;
        let name = name_of("axpy", t, dim);
        let args = [("a", 1), ("x", dim), ("y", dim)];
        let k = kernel(&name, t, dim, &args, "(*y)[i] += (*a)[0] * (*x)[i];");
        self.par_loop(&k, x.set(), &[alpha.read(), x.read(), y.rw()])
    }

    /// The dot product of `x` and `y` (one set, one dim: the sum over elements and components
    /// of their products) into a new Global, as a par_loop with a Global INC: nothing runs
    /// until the Global is read. The 2-norm of `x` is `dot(&x, &x)?.value()?[0].sqrt()`.
    #[track_caller]
    pub fn dot<T: Scalar>(&self, x: &Dat<T>, y: &Dat<T>) -> Result<Global<T>> {
        let (t, dim) = (T::DTYPE, same_shape("dot", x, y)?);
        let sum = self.global(&format!("{} . {}", x.name(), y.name()), &[T::default()])?;
        let name = name_of("dot", t, dim);
        let args = [("x", dim), ("y", dim), ("s", 1)];
        let k = kernel(&name, t, dim, &args, "(*s)[0] += (*x)[i] * (*y)[i];");
        self.par_loop(&k, x.set(), &[x.read(), y.read(), sum.inc()])?;
        Ok(sum)
    }

    /// A Global of `dim` values for a MIN reduction, starting from MIN's identity (+infinity
    /// for floats, the largest integer for integers): the first `.min()` gives the least value
    /// the loop offers, not the least of it and a seed.
    pub fn global_min<T: Scalar>(&self, name: &str, dim: usize) -> Result<Global<T>> {
        self.global_from(name, dim, ReduceOp::Min)
    }

    /// A Global of `dim` values for a MAX reduction, starting from MAX's identity (-infinity
    /// for floats, the least integer for integers).
    pub fn global_max<T: Scalar>(&self, name: &str, dim: usize) -> Result<Global<T>> {
        self.global_from(name, dim, ReduceOp::Max)
    }

    fn global_from<T: Scalar>(&self, name: &str, dim: usize, op: ReduceOp) -> Result<Global<T>> {
        // Refuses dim 0 and f64 without the adapter's support, as `global` does.
        let g = self.global(name, &vec![T::default(); dim])?;
        *g.inner.host.borrow_mut() = op.identity_words(T::DTYPE).repeat(dim);
        g.inner.state.written_on_host();
        Ok(g)
    }
}

/// The dim two Dats share, or an error naming the operation and what differs.
fn same_shape<T: Scalar>(op: &str, x: &Dat<T>, y: &Dat<T>) -> Result<usize> {
    if op != "dot" && x.inner.id == y.inner.id {
        let instead = match op {
            "axpy" => "for y = y + alpha y use `scale(&y, 1 + alpha)`",
            _ => "a Dat copied onto itself is unchanged: leave the call out",
        };
        return Err(Error::ParLoop {
            par_loops: Vec::new(),
            arg: None,
            message: format!(
                "{op}: `{}` is both the source and the target: {instead}",
                x.name()
            ),
        });
    }
    let same_set = |a: &Set, b: &Set| a.id() == b.id();
    if !same_set(x.set(), y.set()) || x.dim() != y.dim() {
        return Err(Error::ParLoop {
            par_loops: Vec::new(),
            arg: None,
            message: format!(
                "{op}: `{}` (set `{}`, dim {}) and `{}` (set `{}`, dim {}) differ: {op} takes two \
             Dats on one set with one dim",
                x.name(),
                x.set().name(),
                x.dim(),
                y.name(),
                y.set().name(),
                y.dim()
            ),
        });
    }
    Ok(x.dim())
}
