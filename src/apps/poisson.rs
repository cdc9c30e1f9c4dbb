//! P1 finite elements for -div(grad u) = f on triangles, and for implicit time steps of the
//! heat equation: the element matrix `mass M + stiffness K` (M lumped: a third of the cell's
//! area on each vertex's diagonal; K the Laplacian's) and the load as one par_loop that
//! assembles a [`Mat`] and a right-hand side, on one process or on N ranks (the cell and
//! vertex sets of a `dist::Distribution`: each rank assembles its owned rows whole, through
//! its exec halo). Shared by `examples/poisson.rs`, `examples/heat.rs`, the benchmarks and
//! the distributed tests.

use crate::linalg::{Mat, Sparsity};
use crate::{Context, Dat, Kernel, Map, Real, Result};
use std::rc::Rc;

/// The element kernel: `a += c[0] area / 3 delta_ij + c[1] area grad(phi_i) . grad(phi_j)`
/// and `b_i += area / 3 f(x_i)` (the vertex rule), from the coefficients `c` (a Global), the
/// vertices' coordinates `x` and the source's values `f`, for `T` = f32 or f64.
pub fn element_kernel<T: Real>() -> Kernel {
    let t = T::DTYPE;
    Kernel::new(
        "p1_laplacian",
        format!(
            "
fn p1_laplacian(c: ptr<function, array<{t}, 2>>, x: ptr<function, array<{t}, 6>>,
                f: ptr<function, array<{t}, 3>>,
                a: ptr<function, array<{t}, 9>>, b: ptr<function, array<{t}, 3>>) {{
    let det = ((*x)[2] - (*x)[0]) * ((*x)[5] - (*x)[1]) - ((*x)[4] - (*x)[0]) * ((*x)[3] - (*x)[1]);
    var gx: array<{t}, 3>;
    var gy: array<{t}, 3>;
    for (var i = 0u; i < 3u; i++) {{
        let j = (i + 1u) % 3u;
        let k = (i + 2u) % 3u;
        gx[i] = ((*x)[2u * j + 1u] - (*x)[2u * k + 1u]) / det;
        gy[i] = ((*x)[2u * k] - (*x)[2u * j]) / det;
    }}
    let area = abs(det) / 2.0;
    for (var i = 0u; i < 3u; i++) {{
        for (var j = 0u; j < 3u; j++) {{
            let m = select({t}(), (*c)[0] * area / 3.0, i == j);
            (*a)[3u * i + j] += m + (*c)[1] * area * (gx[i] * gx[j] + gy[i] * gy[j]);
        }}
        (*b)[i] += area / 3.0 * (*f)[i];
    }}
}}
"
        ),
    )
}

/// The stiffness matrix `A` (named `name`) on the pattern of `cell_vertices` and the load
/// `b` of the source `f` (a Dat on the vertices), from the coordinates `x` (dim 2): one
/// par_loop over the cells, recorded lazily like any other.
pub fn assemble<T: Real>(
    ctx: &Context,
    name: &str,
    cell_vertices: &Map,
    x: &Dat<T>,
    f: &Dat<T>,
) -> Result<(Mat<T>, Dat<T>)> {
    assemble_scaled(ctx, name, cell_vertices, x, f, [0.0, 1.0])
}

/// [`assemble`] of `c[0] M + c[1] K` (M the lumped mass matrix, K the stiffness matrix): a
/// backward-Euler step of u_t = div(grad u) solves (M + dt K) u' = M u.
pub fn assemble_scaled<T: Real>(
    ctx: &Context,
    name: &str,
    cell_vertices: &Map,
    x: &Dat<T>,
    f: &Dat<T>,
    c: [f64; 2],
) -> Result<(Mat<T>, Dat<T>)> {
    let (cv, vertices) = (cell_vertices, cell_vertices.to_set());
    let sparsity = Rc::new(Sparsity::new(ctx, name, vertices, vertices, &[(cv, cv)])?);
    let a = Mat::<T>::new(ctx, name, &sparsity)?;
    let b = ctx.dat_zeros::<T>(&format!("{name} load"), vertices, 1)?;
    let c = ctx.global(
        &format!("{name} coefficients"),
        &[T::from_f64(c[0]), T::from_f64(c[1])],
    )?;
    let args = [
        c.read(),
        x.all(cv).read(),
        f.all(cv).read(),
        a.inc(cv, cv)?,
        b.all(cv).inc(),
    ];
    ctx.par_loop(&element_kernel::<T>(), cv.from_set(), &args)?;
    Ok((a, b))
}
