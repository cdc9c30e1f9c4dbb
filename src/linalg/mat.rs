//! A sparse matrix on a [`Sparsity`]: its values are a Dat on the nonzero slots, so assembly,
//! Dirichlet rows, the diagonal and y = A x are par_loops (lazy, planned and fused like any
//! other; assembly races exactly as an INC through a map does and takes the same strategies).

use super::Sparsity;
use crate::{Arg, Context, Dat, Error, Kernel, Map, Real, Result, Set};
use std::rc::Rc;

/// A sparse matrix of `T` (f32, or f64 where the adapter has it), of blocks: each entry of
/// the sparsity is a `block` x `block` block, for vector unknowns (`block` components per
/// row and column of the sparsity; 1: scalar unknowns).
pub struct Mat<T: Real> {
    pub(super) sparsity: Rc<Sparsity>,
    /// The values, one block per nonzero slot (dim `block^2`, row-major): row r's entries in
    /// its first `sparsity().row(r)` slots; the padding slots after them are never read.
    pub values: Dat<T>,
    block: usize,
    /// Each row's diagonal position within its slots (`width`: none), for the kernels.
    pub(super) diag: Rc<Dat<u32>>,
    /// Each row's number of entries, for the kernels.
    pub(super) count: Rc<Dat<u32>>,
    /// On N ranks: each row's entries in owned columns (the first ones).
    owned: Option<Rc<Dat<u32>>>,
    /// A Dirichlet condition zeroed columns since the last assembly (`inc`) or `zero`.
    pub(super) constrained: std::cell::Cell<bool>,
    /// Counts the changes made through the Mat's methods (assembly, zero, zero_rows, a
    /// Dirichlet condition), for a preconditioner built from its values to see it is stale.
    pub(super) generation: std::cell::Cell<u64>,
}

impl<T: Real> Mat<T> {
    /// A zero matrix named `name` on `sparsity` (scalar entries).
    pub fn new(ctx: &Context, name: &str, sparsity: &Rc<Sparsity>) -> Result<Mat<T>> {
        Mat::blocked(ctx, name, sparsity, 1)
    }

    /// A zero matrix of `block` x `block` blocks on `sparsity` (PyOP2's vector function
    /// spaces): x and y of [`Mat::mult`] have dim `block`, the element matrix of
    /// [`Mat::inc`] holds a block per pair of nodes. `block` 0 is an error.
    pub fn blocked(
        ctx: &Context,
        name: &str,
        sparsity: &Rc<Sparsity>,
        block: usize,
    ) -> Result<Mat<T>> {
        let s = sparsity;
        // Each invocation of y = A x holds a row's width x block^2 values: 4 components
        // (tested to 3) keep that in registers.
        if block == 0 || block > 4 {
            return Err(Error::Usage(format!(
                "Mat `{name}`: block {block}: give 1 (scalar unknowns) to 4 components"
            )));
        }
        let values = ctx.dat_zeros::<T>(name, &s.slots, block * block)?;
        let pos: Vec<u32> = (0..s.rows.total())
            .map(|r| match s.diagonal[r] {
                u32::MAX => s.width as u32,
                d => d - (r * s.width) as u32,
            })
            .collect();
        // Each rank's own layout, halo rows included (not the owners' values).
        let diag = ctx.dat_local(&format!("{name} diagonal slot"), &s.rows, 1, &pos);
        let count = ctx.dat_local(&format!("{name} row lengths"), &s.rows, 1, &s.counts);
        let owned = s.owned.as_ref().map(|(counts, _)| {
            ctx.dat_local(&format!("{name} owned row lengths"), &s.rows, 1, counts)
        });
        Ok(Mat {
            sparsity: s.clone(),
            values,
            block,
            diag: Rc::new(diag),
            count: Rc::new(count),
            owned: owned.map(Rc::new),
            constrained: std::cell::Cell::new(false),
            generation: std::cell::Cell::new(0),
        })
    }

    /// A copy of this matrix (its values copied by a par_loop; the layout shared).
    pub(super) fn duplicate(&self, ctx: &Context) -> Result<Mat<T>> {
        let name = format!("{} (copy)", self.values.name());
        let values = ctx.dat_zeros::<T>(&name, &self.sparsity.slots, self.block * self.block)?;
        ctx.copy(&self.values, &values)?;
        Ok(Mat {
            sparsity: self.sparsity.clone(),
            values,
            block: self.block,
            diag: self.diag.clone(),
            count: self.count.clone(),
            owned: self.owned.clone(),
            constrained: std::cell::Cell::new(false),
            generation: std::cell::Cell::new(0),
        })
    }

    /// Records a change of the values (see `generation`).
    pub(super) fn changed(&self) {
        self.generation.set(self.generation.get() + 1);
    }

    /// The sparsity.
    pub fn sparsity(&self) -> &Sparsity {
        &self.sparsity
    }

    /// Components per block (1: scalar entries).
    pub fn block(&self) -> usize {
        self.block
    }

    /// The argument that adds a local matrix to the entries (`rows[e, i]`, `cols[e, j]`):
    /// PyOP2's `mat(INC, (rows[i], cols[j]))`. The kernel sees it as
    /// `ptr<function, array<T, ra * ca * b * b>>` (b the block), starting at zero: node pair
    /// (i, j) row-major, then its block row-major, so component (bi, bj) of pair (i, j) is at
    /// `((i * ca + j) * b + bi) * b + bj` (`i * ca + j` for scalar entries).
    /// A pair the sparsity was not built from is an error naming it.
    pub fn inc(&self, rows: &Map, cols: &Map) -> Result<Arg> {
        self.constrained.set(false);
        self.changed();
        let s = &self.sparsity;
        let (_, _, m) = s
            .pairs
            .iter()
            .find(|(r, c, _)| *r == rows.id() && *c == cols.id())
            .ok_or_else(|| {
                Error::Usage(format!(
                    "Mat `{}`: its sparsity `{}` was not built from the pair (`{}`, `{}`); \
                     give that pair to Sparsity::new",
                    self.values.name(),
                    s.name,
                    rows.name(),
                    cols.name()
                ))
            })?;
        Ok(self.values.all(m).inc())
    }

    /// Zeros every entry, as a par_loop.
    #[track_caller]
    pub fn zero(&self, ctx: &Context) -> Result<()> {
        self.constrained.set(false);
        self.changed();
        ctx.zero(&self.values)
    }

    /// Zeros `rows` (indices into the row set, in any order, repeats allowed; with blocks,
    /// every component of the row's node) and puts `diagonal` on their diagonal, as a par_loop
    /// over the rows (PyOP2's `zero_rows`). On N ranks `rows` are local indices; the halo rows
    /// among them are their owners' to zero and are left alone here. A row out of range or
    /// without a diagonal entry (a rectangular pattern) is an error naming it (on every rank).
    ///
    /// For Dirichlet conditions u = g this alone leaves the columns: the system is no longer
    /// symmetric, and CG is right only if b holds `diagonal * g` on those rows and its initial
    /// guess already holds g there. [`crate::linalg::Dirichlet`] does the whole job and keeps
    /// the system symmetric.
    #[track_caller]
    pub fn zero_rows(&self, ctx: &Context, rows: &[u32], diagonal: T) -> Result<()> {
        self.changed();
        let s = &self.sparsity;
        let (owned, total) = (s.rows.size(), s.rows.total());
        let mut flags = vec![0u32; total];
        let mut checked = Ok(());
        for &r in rows {
            let r = r as usize;
            if r >= total {
                checked = Err(format!("row {r} is out of range ({total} rows)"));
                break;
            }
            if r < owned && s.diagonal[r] == u32::MAX {
                checked = Err(format!(
                    "row {r} has no diagonal entry in sparsity `{}`, so zero_rows cannot put \
                     a value there",
                    s.name
                ));
                break;
            }
            flags[r] = u32::from(r < owned);
        }
        let what = format!("zero_rows of Mat `{}`", self.values.name());
        let checked = checked.map_err(|why| Error::Usage(format!("{what}: {why}")));
        if s.rows.halo().is_some() {
            ctx.comm().agree(checked, &what)?;
        } else {
            checked?;
        }
        let name = self.values.name();
        // This rank's own rows (halo rows, never read, are left alone).
        let flags = ctx.dat_local(&format!("{name} zeroed rows"), &s.rows, 1, &flags);
        let d = ctx.global(&format!("{name} zero_rows diagonal"), &[diagonal])?;
        let (t, w, b) = (T::DTYPE, s.width, self.block);
        let (wbb, bb) = (w * b * b, b * b);
        let kname = format!("pl_zero_rows_{t}_{w}_{b}");
        let k = Kernel::new(
            &kname,
            format!(
                "fn {kname}(d: ptr<function, array<{t}, 1>>, at: ptr<function, array<u32, 1>>, \
                 z: ptr<function, array<u32, 1>>, v: ptr<function, array<{t}, {wbb}>>) {{
    if ((*z)[0] != 0u) {{
        for (var k = 0u; k < {wbb}u; k++) {{
            let on = k / {bb}u == (*at)[0] && (k % {bb}u) / {b}u == k % {b}u;
            (*v)[k] = select({t}(), (*d)[0], on);
        }}
    }}
}}
"
            ),
        );
        let args = [
            d.read(),
            self.diag.read(),
            flags.read(),
            self.values.all(&s.row_slots).rw(),
        ];
        ctx.par_loop(&k, &s.rows, &args)
    }

    /// The diagonal as a new Dat on the rows (dim `block`: the diagonal of each diagonal
    /// block; 0 where a row has none), as a par_loop: point Jacobi's.
    #[track_caller]
    pub fn diagonal(&self, ctx: &Context) -> Result<Dat<T>> {
        let s = &self.sparsity;
        let (t, w, b) = (T::DTYPE, s.width, self.block);
        let (wbb, bb) = (w * b * b, b * b);
        let out = ctx.dat_zeros::<T>(&format!("{} diagonal", self.values.name()), &s.rows, b)?;
        let name = format!("pl_diagonal_{t}_{w}_{b}");
        let k = Kernel::new(
            &name,
            format!(
                "fn {name}(v: ptr<function, array<{t}, {wbb}>>, at: ptr<function, array<u32, 1>>, \
                 d: ptr<function, array<{t}, {b}>>) {{
    for (var i = 0u; i < {b}u; i++) {{ (*d)[i] = {t}(); }}
    for (var s = 0u; s < {w}u; s++) {{
        if (s == (*at)[0]) {{
            for (var i = 0u; i < {b}u; i++) {{ (*d)[i] = (*v)[s * {bb}u + i * {b}u + i]; }}
        }}
    }}
}}
"
            ),
        );
        let args = [
            self.values.all(&s.row_slots).read(),
            self.diag.read(),
            out.write(),
        ];
        ctx.par_loop(&k, &s.rows, &args)?;
        Ok(out)
    }

    /// Refuses y = A x (or A^T x: `how` is " transposed", the sets swapped) with x and y one
    /// Dat, or either not of the block's dim on its set (`sets`: x's, then y's).
    fn check_product(&self, how: &str, x: &Dat<T>, y: &Dat<T>, sets: (&Set, &Set)) -> Result<()> {
        let name = self.values.name();
        if x.inner.id == y.inner.id {
            return Err(Error::Usage(format!(
                "Mat `{name}`{how} times `{}` into the same Dat: the product needs x and y apart \
                 (x is read while y is written)",
                x.name()
            )));
        }
        let b = self.block;
        for (v, set, what) in [(x, sets.0, "x"), (y, sets.1, "y")] {
            if v.set().id() != set.id() || v.dim() != b {
                return Err(Error::Usage(format!(
                    "Mat `{name}`{how} times `{}` into `{}`: {what} must be a Dat of dim {b} (the \
                     block) on `{}`; `{}` has dim {} on `{}`",
                    x.name(),
                    y.name(),
                    set.name(),
                    v.name(),
                    v.dim(),
                    v.set().name()
                )));
            }
        }
        Ok(())
    }

    /// y = A x, as a par_loop over the rows (x on the columns, y on the rows).
    #[track_caller]
    pub fn mult(&self, ctx: &Context, x: &Dat<T>, y: &Dat<T>) -> Result<()> {
        let s = &self.sparsity;
        self.check_product("", x, y, (&s.cols, &s.rows))?;
        let (t, w, b) = (T::DTYPE, s.width, self.block);
        let v = self.values.all(&s.row_slots).read();
        let Some((owned, (_, owned_cols))) = self.owned.as_ref().zip(s.owned.as_ref()) else {
            let args = [v, self.count.read(), x.all(&s.row_cols).read(), y.write()];
            return ctx.par_loop(&spmv(t, w, b, false), &s.rows, &args);
        };
        // N ranks: the owned columns first, while x's halo travels; then the halo columns.
        let args = [v.clone(), owned.read(), x.all(owned_cols).read(), y.write()];
        ctx.par_loop(&spmv(t, w, b, false), &s.rows, &args)?;
        let args = [
            v,
            owned.read(),
            self.count.read(),
            x.all(&s.row_cols).read(),
            y.rw(),
        ];
        ctx.par_loop(&spmv(t, w, b, true), &s.rows, &args)
    }

    /// y = A^T x, as a par_loop over the rows that increments y through each row's columns
    /// (x on the rows, y on the columns; y is zeroed first, so after an error it may hold
    /// zeros). Its kernel is as wide as A's rows, not as A^T's; its increments race (under
    /// `auto`, f64 ones take a colouring, as many dispatches as the most rows sharing a column,
    /// unless those are many and small: see `Config::min_colour_size`). One process only.
    #[track_caller]
    pub fn mult_transpose(&self, ctx: &Context, x: &Dat<T>, y: &Dat<T>) -> Result<()> {
        let s = &self.sparsity;
        if s.rows.halo().is_some() {
            return Err(Error::Usage(format!(
                "Mat `{}`: mult_transpose runs on one process (its rows `{}` are distributed)",
                self.values.name(),
                s.rows.name()
            )));
        }
        self.check_product(" transposed", x, y, (&s.rows, &s.cols))?;
        let (t, w, b) = (T::DTYPE, s.width, self.block);
        let (wbb, wb, bb) = (w * b * b, w * b, b * b);
        let kname = format!("pl_spmv_transpose_{t}_{w}_{b}");
        let k = Kernel::new(
            &kname,
            format!(
                "fn {kname}(v: ptr<function, array<{t}, {wbb}>>, n: ptr<function, array<u32, 1>>, \
                 x: ptr<function, array<{t}, {b}>>, y: ptr<function, array<{t}, {wb}>>) {{
    for (var s = 0u; s < {w}u; s++) {{
        if (s < (*n)[0]) {{
            for (var j = 0u; j < {b}u; j++) {{
                var sum = {t}();
                for (var i = 0u; i < {b}u; i++) {{ sum += (*v)[s * {bb}u + i * {b}u + j] * (*x)[i]; }}
                (*y)[s * {b}u + j] += sum;
            }}
        }}
    }}
}}
"
            ),
        );
        ctx.zero(y)?;
        let args = [
            self.values.all(&s.row_slots).read(),
            self.count.read(),
            x.read(),
            y.all(&s.row_cols).inc(),
        ];
        ctx.par_loop(&k, &s.rows, &args)
    }

    /// Writes the matrix (its entries, not the padding) as a MatrixMarket coordinate file,
    /// 1-based, which SciPy's `scipy.io.mmread` and MATLAB read. Forces the assembly.
    #[cfg(not(target_arch = "wasm32"))]
    pub fn write_matrix_market(&self, path: impl AsRef<std::path::Path>) -> Result<()> {
        let s = &self.sparsity;
        let global = s.rows.halo().map_or(s.rows.size(), |h| h.global_size);
        if s.rows.total() != global {
            return Err(Error::Usage(format!(
                "Mat `{}`: write_matrix_market writes a matrix of one process; on N ranks \
                 each holds its rows in local numbering (gather the vectors instead)",
                self.values.name()
            )));
        }
        let v = self.values.data_ro()?;
        let io = |e: std::io::Error| {
            Error::file(
                path.as_ref(),
                format!(
                    "writing Mat `{}` to {}: {e}",
                    self.values.name(),
                    path.as_ref().display()
                ),
            )
        };
        use std::io::Write as _;
        let f = std::fs::File::create(path.as_ref()).map_err(io)?;
        let mut f = std::io::BufWriter::new(f);
        writeln!(f, "%%MatrixMarket matrix coordinate real general").map_err(io)?;
        writeln!(f, "% {} from parloop", self.values.name()).map_err(io)?;
        let b = self.block;
        let (rows, cols) = (s.rows.size() * b, s.cols.size() * b);
        writeln!(f, "{rows} {cols} {}", s.nnz() * b * b).map_err(io)?;
        // `{:?}` writes the shortest text that reads back as the same value. A block's
        // components are rows r * b + bi and columns c * b + bj.
        for r in 0..s.rows.size() {
            for bi in 0..b {
                for (k, c) in s.row(r).iter().enumerate() {
                    for bj in 0..b {
                        let at = ((r * s.width + k) * b + bi) * b + bj;
                        let (i, j) = (r * b + bi + 1, *c as usize * b + bj + 1);
                        writeln!(f, "{i} {j} {:?}", v[at]).map_err(io)?;
                    }
                }
            }
        }
        f.flush().map_err(io)
    }
}

/// y = A x over a row's first `n` entries (`halo`: y += over entries `n` to `count`), for
/// blocks of `b` components.
fn spmv(t: crate::DType, w: usize, b: usize, halo: bool) -> Kernel {
    let (name, range, start) = if halo {
        (
            format!("pl_spmv_halo_{t}_{w}_{b}"),
            "c: ptr<function, array<u32, 1>>, ",
            "(*y)[i]".to_string(),
        )
    } else {
        (format!("pl_spmv_{t}_{w}_{b}"), "", format!("{t}()"))
    };
    let within = if halo {
        "s >= (*n)[0] && s < (*c)[0]"
    } else {
        "s < (*n)[0]"
    };
    let (wbb, wb, bb) = (w * b * b, w * b, b * b);
    Kernel::new(
        &name,
        format!(
            "fn {name}(v: ptr<function, array<{t}, {wbb}>>, n: ptr<function, array<u32, 1>>, \
             {range}x: ptr<function, array<{t}, {wb}>>, y: ptr<function, array<{t}, {b}>>) {{
    for (var i = 0u; i < {b}u; i++) {{
        var sum = {start};
        for (var s = 0u; s < {w}u; s++) {{
            if ({within}) {{
                for (var j = 0u; j < {b}u; j++) {{
                    sum += (*v)[s * {bb}u + i * {b}u + j] * (*x)[s * {b}u + j];
                }}
            }}
        }}
        (*y)[i] = sum;
    }}
}}
"
        ),
    )
}
