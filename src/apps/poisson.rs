//! P1 finite elements for -div(grad u) = f on triangles and tetrahedra, and for implicit time
//! steps of the heat equation: the element matrix `mass M + stiffness K` (M lumped: a third
//! of a triangle's area, a quarter of a tetrahedron's volume, on each vertex's diagonal; K the
//! Laplacian's) and the load as one par_loop that assembles a [`Mat`] and a right-hand side, on one process or on N ranks (the cell and
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

/// [`element_kernel`] on tetrahedra (x of dim 3, a quarter of the volume per vertex).
pub fn element_kernel_3d<T: Real>() -> Kernel {
    let t = T::DTYPE;
    Kernel::new(
        "p1_laplacian_3d",
        format!(
            "
fn p1_laplacian_3d(c: ptr<function, array<{t}, 2>>, x: ptr<function, array<{t}, 12>>,
                   f: ptr<function, array<{t}, 4>>,
                   a: ptr<function, array<{t}, 16>>, b: ptr<function, array<{t}, 4>>) {{
    // J's columns are the edges from vertex 0; grad(phi_k) for k = 1..3 are the rows of J^-1.
    var e: array<array<{t}, 3>, 3>;
    for (var k = 0u; k < 3u; k++) {{
        for (var d = 0u; d < 3u; d++) {{ e[k][d] = (*x)[3u * (k + 1u) + d] - (*x)[d]; }}
    }}
    // The cofactors: row k of J^-1 is (e[k+1] x e[k+2]) / det.
    var g: array<array<{t}, 3>, 4>;
    for (var k = 0u; k < 3u; k++) {{
        let p = e[(k + 1u) % 3u];
        let q = e[(k + 2u) % 3u];
        g[k + 1u] = array<{t}, 3>(p[1] * q[2] - p[2] * q[1], p[2] * q[0] - p[0] * q[2],
                                  p[0] * q[1] - p[1] * q[0]);
    }}
    let det = e[0][0] * g[1][0] + e[0][1] * g[1][1] + e[0][2] * g[1][2];
    for (var k = 1u; k < 4u; k++) {{
        for (var d = 0u; d < 3u; d++) {{ g[k][d] = g[k][d] / det; }}
    }}
    for (var d = 0u; d < 3u; d++) {{ g[0][d] = -(g[1][d] + g[2][d] + g[3][d]); }}
    let volume = abs(det) / 6.0;
    for (var i = 0u; i < 4u; i++) {{
        for (var j = 0u; j < 4u; j++) {{
            let m = select({t}(), (*c)[0] * volume / 4.0, i == j);
            let gg = g[i][0] * g[j][0] + g[i][1] * g[j][1] + g[i][2] * g[j][2];
            (*a)[4u * i + j] += m + (*c)[1] * volume * gg;
        }}
        (*b)[i] += volume / 4.0 * (*f)[i];
    }}
}}
"
        ),
    )
}

/// The stiffness matrix `A` (named `name`) on the pattern of `cell_vertices` and the load
/// `b` of the source `f` (a Dat on the vertices), from the coordinates `x` (dim 2 on
/// triangles, 3 on tetrahedra: `cell_vertices` of arity 3 or 4): one par_loop over the cells,
/// recorded lazily like any other.
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
    let kernel = match (cv.arity(), x.dim()) {
        (3, 2) => element_kernel::<T>(),
        (4, 3) => element_kernel_3d::<T>(),
        (arity, dim) => {
            return Err(crate::Error::Usage(format!(
                "P1 assembly of `{name}`: map `{}` has arity {arity} and the coordinates `{}` \
                 dim {dim}; it takes triangles (arity 3, dim 2) or tetrahedra (arity 4, dim 3)",
                cv.name(),
                x.name()
            )));
        }
    };
    ctx.par_loop(&kernel, cv.from_set(), &args)?;
    Ok((a, b))
}
