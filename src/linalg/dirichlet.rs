//! Dirichlet conditions on a system A u = b, applied as PETSc's `MatZeroRowsColumns` does.

use super::Mat;
use crate::{Context, Dat, Error, IterSpace, Kernel, Map, Real, Result};

/// The nodes where u is given (u = g there) in a square system A u = b: a mask on the rows'
/// set, 1 on a constrained node and 0 elsewhere, from groups of facets or from a Dat.
///
/// [`Dirichlet::apply`] changes the assembled system the way PETSc's `MatZeroRowsColumns`
/// does, so that it stays symmetric (CG needs that) and its solution is u = g on the
/// constrained nodes:
/// - *lifting*: b -= A g0, where g0 is g on the constrained nodes and 0 elsewhere (the
///   known values move to the right-hand side of every other row);
/// - the constrained rows and columns of A are zeroed, 1 put on their diagonal;
/// - b = g and u = g on the constrained nodes (so CG starts from the right values there).
///
/// Every step is a par_loop: lazy, on the device, and on N ranks on every rank's part (a
/// constrained node in another rank's halo zeroes the column here too). A time loop that
/// keeps A and builds a new b each step applies the condition with
/// [`Dirichlet::apply_keeping`] and then [`Lifting::apply`] on each b.
///
/// ```
/// # fn main() -> parloop::Result<()> {
/// use parloop::linalg::{Dirichlet, SolveOptions, cg};
/// use parloop::{apps::poisson::assemble, mesh::{topology::MeshData, unit_square}};
/// let ctx = parloop::Context::new()?;
/// let md = MeshData::new(&ctx, &unit_square(8))?;
/// let f = ctx.dat_zeros::<f32>("f", &md.vertices, 1)?;
/// let (a, b) = assemble::<f32>(&ctx, "A", &md.cell_vertices, &md.coords, &f)?;
/// // Every boundary facet here; a group of them is `md.group("inlet")`.
/// let bc = Dirichlet::<f32>::on_facets(&ctx, &md.boundary, &md.boundary_vertices)?;
/// let (u, g) = (ctx.dat_zeros("u", &md.vertices, 1)?, ctx.dat_zeros("g", &md.vertices, 1)?);
/// ctx.fill(&g, 2.0)?; // u = 2 on the walls
/// bc.apply(&ctx, &a, &b, &u, &g)?;
/// cg(&ctx, &a, &b, &u, None, &SolveOptions::default())?;
/// assert!(u.data_ro()?.iter().all(|v| (v - 2.0).abs() < 1e-4)); // harmonic: 2 everywhere
/// # Ok(())
/// # }
/// ```
pub struct Dirichlet<T: Real> {
    /// Above zero on the constrained nodes (a Dat of dim 1 on the nodes' set).
    pub mask: Dat<T>,
}

impl<T: Real> Dirichlet<T> {
    /// The nodes of the facets in `group` (a group of facets such as `md.group("inlet")`, or
    /// a whole set of facets such as `&md.boundary`), found through `facet_nodes` (facet ->
    /// its nodes, for example `MeshData::boundary_vertices`), as a par_loop. A group on
    /// another set than the map's source is an error naming both.
    #[track_caller]
    pub fn on_facets(
        ctx: &Context,
        group: impl Into<IterSpace>,
        facet_nodes: &Map,
    ) -> Result<Dirichlet<T>> {
        let group = group.into();
        let name = format!("Dirichlet nodes of `{}`", called(&group));
        let bc = Dirichlet::from_mask(ctx.dat_zeros::<T>(&name, facet_nodes.to_set(), 1)?);
        bc.add_facets(ctx, group, facet_nodes)?;
        Ok(bc)
    }

    /// The nodes where `mask` is above zero (a Dat of dim 1 on the rows' set).
    pub fn from_mask(mask: Dat<T>) -> Dirichlet<T> {
        Dirichlet { mask }
    }

    /// Constrains the nodes of the facets in `group` too (a condition on several groups).
    #[track_caller]
    pub fn add_facets(
        &self,
        ctx: &Context,
        group: impl Into<IterSpace>,
        facet_nodes: &Map,
    ) -> Result<()> {
        let group = group.into();
        let name = called(&group);
        if group.set().id() != facet_nodes.from_set().id() {
            return Err(Error::Usage(format!(
                "Dirichlet condition on group `{}`: the group is a subset of set `{}`, but \
                 map `{}` goes from set `{}`; give the map from the group's facets to their \
                 nodes (a group of cells or of interior facets is not a boundary)",
                name,
                group.set().name(),
                facet_nodes.name(),
                facet_nodes.from_set().name()
            )));
        }
        if facet_nodes.to_set().id() != self.mask.set().id() {
            return Err(Error::Usage(format!(
                "Dirichlet condition on group `{}`: map `{}` goes to set `{}`, but the \
                 condition's nodes are on set `{}`",
                name,
                facet_nodes.name(),
                facet_nodes.to_set().name(),
                self.mask.set().name()
            )));
        }
        let (t, a) = (T::DTYPE, facet_nodes.arity());
        let kname = format!("pl_dirichlet_mark_{t}_{a}");
        let k = Kernel::new(
            &kname,
            format!(
                "fn {kname}(m: ptr<function, array<{t}, {a}>>) {{
    for (var i = 0u; i < {a}u; i++) {{ (*m)[i] += {t}(1); }}
}}
"
            ),
        );
        ctx.par_loop(&k, group, &[self.mask.all(facet_nodes).inc()])
    }

    /// Applies u = `g` on the constrained nodes to the assembled system `a` u = `b` with the
    /// initial guess `u` (see the type's docs): `b` and `u` of dim `a.block()` on the rows'
    /// set, `g` too (read on the constrained nodes only). Call it once, after assembling `a`
    /// and `b`: it changes both (a second call before `a` is assembled again is an error,
    /// since its constrained columns, which the lifting needs, are zero; a time loop that keeps
    /// `a` uses [`Dirichlet::apply_keeping`]). `u` may be `g`. Recorded as par_loops, like the
    /// assembly.
    #[track_caller]
    pub fn apply(
        &self,
        ctx: &Context,
        a: &Mat<T>,
        b: &Dat<T>,
        u: &Dat<T>,
        g: &Dat<T>,
    ) -> Result<()> {
        let what = format!("Dirichlet condition on Mat `{}`", a.values.name());
        self.check(&what, a, b, g)?;
        check_vectors(&what, a, &[(u, "u")])?;
        if b.inner.id == u.inner.id {
            return Err(Error::Usage(format!(
                "{what}: b (`{}`) is also u; give b apart from u and g (b is rewritten while \
                 they are read)",
                b.name()
            )));
        }
        if a.constrained.get() {
            return Err(Error::Usage(format!(
                "{what}: a Dirichlet condition was applied to it since it was assembled, so its \
                 constrained columns are zero and b could not be lifted again; assemble it again \
                 (Mat::zero and the assembly par_loop), or keep the lifting for later \
                 right-hand sides with Dirichlet::apply_keeping"
            )));
        }
        lift(ctx, &self.mask, a, b, g)?;
        if u.inner.id != g.inner.id {
            let (t, bk) = (T::DTYPE, a.block());
            let kname = format!("pl_dirichlet_guess_{t}_{bk}");
            let k = Kernel::new(
                &kname,
                format!(
                    "fn {kname}(m: ptr<function, array<{t}, 1>>, g: ptr<function, array<{t}, \
                     {bk}>>, u: ptr<function, array<{t}, {bk}>>) {{
    if ((*m)[0] > {t}()) {{ for (var i = 0u; i < {bk}u; i++) {{ (*u)[i] = (*g)[i]; }} }}
}}
"
                ),
            );
            let rows = &a.sparsity.rows;
            ctx.par_loop(&k, rows, &[self.mask.read(), g.read(), u.rw()])?;
        }
        self.zero_rows_columns(ctx, a)?;
        a.constrained.set(true);
        Ok(())
    }

    /// [`Dirichlet::apply`], keeping a copy of `a`'s entries first (as much device memory as
    /// `a`'s values) so that later right-hand sides get the condition without assembling `a`
    /// again: a time loop that keeps its matrix calls [`Lifting::apply`] on each step's b.
    #[track_caller]
    pub fn apply_keeping(
        &self,
        ctx: &Context,
        a: &Mat<T>,
        b: &Dat<T>,
        u: &Dat<T>,
        g: &Dat<T>,
    ) -> Result<Lifting<T>> {
        let what = format!("Dirichlet condition on Mat `{}`", a.values.name());
        self.check(&what, a, b, g)?;
        if a.constrained.get() {
            return Err(Error::Usage(format!(
                "{what}: a Dirichlet condition was applied to it since it was assembled, so its \
                 constrained columns are zero and there is no lifting left to keep; call \
                 apply_keeping once, right after the assembly, and Lifting::apply on each later \
                 right-hand side"
            )));
        }
        let coupling = a.duplicate(ctx)?;
        let mask = ctx.dat_zeros::<T>(self.mask.name(), self.mask.set(), 1)?;
        ctx.copy(&self.mask, &mask)?;
        self.apply(ctx, a, b, u, g)?;
        Ok(Lifting { mask, coupling })
    }

    /// Refuses a non-square `a`, a mask off its rows, and `b` or `g` off its rows or aliased.
    fn check(&self, what: &str, a: &Mat<T>, b: &Dat<T>, g: &Dat<T>) -> Result<()> {
        let s = &a.sparsity;
        let rows = &s.rows;
        if s.cols.id() != rows.id() {
            return Err(Error::Usage(format!(
                "{what}: its rows are set `{}` and its columns set `{}`; a Dirichlet condition \
                 needs a square system on one set",
                rows.name(),
                s.cols.name()
            )));
        }
        if self.mask.set().id() != rows.id() || self.mask.dim() != 1 {
            return Err(Error::Usage(format!(
                "{what}: its nodes `{}` are dim {} on set `{}`; give a mask of dim 1 on the \
                 rows' set `{}`",
                self.mask.name(),
                self.mask.dim(),
                self.mask.set().name(),
                rows.name()
            )));
        }
        if b.inner.id == g.inner.id {
            return Err(Error::Usage(format!(
                "{what}: b (`{}`) is also g; give b apart from u and g (b is rewritten while \
                 they are read)",
                b.name()
            )));
        }
        check_vectors(what, a, &[(b, "b"), (g, "g")])
    }

    /// Zeros the constrained rows and columns of `a`, 1 on their diagonal.
    fn zero_rows_columns(&self, ctx: &Context, a: &Mat<T>) -> Result<()> {
        a.changed();
        let s = &a.sparsity;
        let (t, w, b) = (T::DTYPE, s.width, a.block());
        let bb = b * b;
        let kname = format!("pl_dirichlet_zero_{t}_{w}_{b}");
        let k = Kernel::new(
            &kname,
            format!(
                "fn {kname}(at: ptr<function, array<u32, 1>>, n: ptr<function, array<u32, 1>>, \
                 m: ptr<function, array<{t}, 1>>, mc: ptr<function, array<{t}, {w}>>, \
                 v: ptr<function, array<{t}, {}>>) {{
    let row = (*m)[0] > {t}();
    for (var s = 0u; s < (*n)[0]; s++) {{
        if (row || (*mc)[s] > {t}()) {{
            for (var k = 0u; k < {bb}u; k++) {{
                let one = row && s == (*at)[0] && k / {b}u == k % {b}u;
                (*v)[s * {bb}u + k] = select({t}(), {t}(1), one);
            }}
        }}
    }}
}}
",
                w * bb
            ),
        );
        let args = [
            a.diag.read(),
            a.count.read(),
            self.mask.read(),
            self.mask.all(&s.row_cols).read(),
            a.values.all(&s.row_slots).rw(),
        ];
        ctx.par_loop(&k, &s.rows, &args)
    }
}

/// A group's name: the subset's, or the whole set's.
fn called(space: &IterSpace) -> String {
    space
        .subset()
        .map_or(space.set().name(), |s| s.name())
        .to_string()
}

/// A Dirichlet condition's right-hand side for a matrix it was applied to
/// ([`Dirichlet::apply_keeping`]): the matrix's entries from before its constrained columns
/// were zeroed, so that each new b gets the lifting.
pub struct Lifting<T: Real> {
    mask: Dat<T>,
    coupling: Mat<T>,
}

impl<T: Real> Lifting<T> {
    /// b -= A g0 on the free rows (g0: `g` on the constrained nodes, 0 elsewhere) and b = `g`
    /// on the constrained ones, as par_loops: the condition on a new right-hand side of the
    /// system it was applied to (`g` may change from call to call).
    #[track_caller]
    pub fn apply(&self, ctx: &Context, b: &Dat<T>, g: &Dat<T>) -> Result<()> {
        let what = format!("Dirichlet lifting of Mat `{}`", self.coupling.values.name());
        if b.inner.id == g.inner.id {
            return Err(Error::Usage(format!(
                "{what}: b (`{}`) is also g; give b apart from g",
                b.name()
            )));
        }
        check_vectors(&what, &self.coupling, &[(b, "b"), (g, "g")])?;
        lift(ctx, &self.mask, &self.coupling, b, g)
    }
}

/// Refuses vectors off `a`'s rows or of another dim than its block, naming their role.
fn check_vectors<T: Real>(what: &str, a: &Mat<T>, vectors: &[(&Dat<T>, &str)]) -> Result<()> {
    let (rows, bk) = (&a.sparsity.rows, a.block());
    for (v, role) in vectors {
        if v.set().id() != rows.id() || v.dim() != bk {
            return Err(Error::Usage(format!(
                "{what}: {role} (`{}`) is dim {} on set `{}`; give a Dat of dim {bk} (the \
                 block) on the rows' set `{}`",
                v.name(),
                v.dim(),
                v.set().name(),
                rows.name()
            )));
        }
    }
    Ok(())
}

/// b -= `a` g0 on the rows `mask` leaves free, b = g on the others (g0: g where `mask` is
/// set, 0 elsewhere), as par_loops.
fn lift<T: Real>(ctx: &Context, mask: &Dat<T>, a: &Mat<T>, b: &Dat<T>, g: &Dat<T>) -> Result<()> {
    let (t, bk, rows) = (T::DTYPE, a.block(), &a.sparsity.rows);
    let name = a.values.name();
    let g0 = ctx.dat_zeros::<T>(&format!("{name} known values"), rows, bk)?;
    let kname = format!("pl_dirichlet_known_{t}_{bk}");
    let known = Kernel::new(
        &kname,
        format!(
            "fn {kname}(m: ptr<function, array<{t}, 1>>, g: ptr<function, array<{t}, {bk}>>, \
             v: ptr<function, array<{t}, {bk}>>) {{
    for (var i = 0u; i < {bk}u; i++) {{ (*v)[i] = select({t}(), (*g)[i], (*m)[0] > {t}()); }}
}}
"
        ),
    );
    ctx.par_loop(&known, rows, &[mask.read(), g.read(), g0.write()])?;
    let product = ctx.dat_zeros::<T>(&format!("{name} lifting"), rows, bk)?;
    a.mult(ctx, &g0, &product)?;
    let kname = format!("pl_dirichlet_rhs_{t}_{bk}");
    let k = Kernel::new(
        &kname,
        format!(
            "fn {kname}(m: ptr<function, array<{t}, 1>>, g: ptr<function, array<{t}, {bk}>>, \
             l: ptr<function, array<{t}, {bk}>>, b: ptr<function, array<{t}, {bk}>>) {{
    for (var i = 0u; i < {bk}u; i++) {{
        (*b)[i] = select((*b)[i] - (*l)[i], (*g)[i], (*m)[0] > {t}());
    }}
}}
"
        ),
    );
    ctx.par_loop(&k, rows, &[mask.read(), g.read(), product.read(), b.rw()])
}
