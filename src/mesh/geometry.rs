//! Mesh geometry as Dats (Firedrake's `CellVolume`, `FacetArea`, `FacetNormal`; deal.II's
//! `cell->measure()`): cell measures and centroids, facet measures, unit normals and centroids,
//! each computed on the device by a par_loop parloop writes over the cells or facets, reading
//! the coordinates through the cell or facet -> vertex map. The loops are lazy like any other
//! (nothing runs until a result is read; they fuse with their neighbours) and on N ranks run on
//! each rank's part through the same halo exchanges.
//!
//! Definitions, in 2-D (x, y) and 3-D:
//! - a cell's measure is its signed area or volume (positive for the positively oriented cells
//!   [`MeshData`] makes), exact for straight-sided cells and trilinear hexahedra (2 x 2 x 2
//!   Gauss points); its centroid is the centre of mass of the cell;
//! - a facet's normal is the unit normal of its vertex order (the right-hand rule in 3-D; in
//!   2-D, (dy, -dx) along the edge from its first vertex to its second), which for
//!   [`MeshData`]'s facets points from the first cell to the second and outward on the
//!   boundary. A quadrilateral facet's measure and normal are those of its vector area
//!   (exact when it is planar), its centroid the area-weighted centroid of its two triangles.

use super::CellType;
use super::topology::MeshData;
use crate::{Context, DType, Dat, Error, Kernel, Map, Real, Result};

/// A cell's measure (area or volume) and centroid, one value and `dim` values per cell.
pub struct CellGeometry<T: Real> {
    /// Signed area (2-D) or volume (3-D).
    pub measure: Dat<T>,
    /// Centre of mass.
    pub centroid: Dat<T>,
}

/// A facet's measure (length or area), unit normal and centroid.
pub struct FacetGeometry<T: Real> {
    /// Length (2-D) or area (3-D).
    pub measure: Dat<T>,
    /// Unit normal, from the facet's first cell to its second (outward on the boundary).
    pub normal: Dat<T>,
    /// Centroid.
    pub centroid: Dat<T>,
}

/// The geometry of a [`MeshData`]: its cells, interior facets and boundary facets.
pub struct Geometry<T: Real> {
    /// On `MeshData::cells`.
    pub cells: CellGeometry<T>,
    /// On `MeshData::facets` (normals from `facet_cells` index 0 to index 1).
    pub facets: FacetGeometry<T>,
    /// On `MeshData::boundary` (outward normals).
    pub boundary: FacetGeometry<T>,
}

impl MeshData {
    /// The vertex coordinates as a new Dat of `T` (from the mesh's f64 values), for geometry
    /// in double precision: `md.geometry(&ctx, &md.coords_as::<f64>(&ctx)?)`.
    pub fn coords_as<T: Real>(&self, ctx: &Context) -> Result<Dat<T>> {
        let d = self.cell_type.dim();
        let values: Vec<T> = self
            .coords64
            .iter()
            .flat_map(|x| x[..d].iter().map(|&x| T::from_f64(x)))
            .collect();
        ctx.dat(
            &format!("coords ({})", T::DTYPE),
            &self.vertices,
            d,
            &values,
        )
    }

    /// A Dat `name` on the vertices holding `f(x)` at each vertex (x its coordinates in f64,
    /// z = 0 in 2-D): initial values, sources, boundary values, exact solutions. On N ranks
    /// each rank evaluates its own vertices, halo included, so the values are the owners'.
    pub fn interpolate<T: Real>(
        &self,
        ctx: &Context,
        name: &str,
        f: impl Fn([f64; 3]) -> f64,
    ) -> Result<Dat<T>> {
        let values: Vec<T> = self.coords64.iter().map(|&x| T::from_f64(f(x))).collect();
        ctx.dat(name, &self.vertices, 1, &values)
    }

    /// The gradients of the P1 (linear) basis functions on each cell, from `coords`: a Dat of
    /// dim `vertices x dim` on the cells, the gradient of vertex i's function (in
    /// `cell_vertices` order) at `i * dim ..`. What an element kernel reads instead of
    /// inverting the Jacobian itself; for triangles and tetrahedra (another cell type is an
    /// error naming it).
    #[track_caller]
    pub fn p1_gradients<T: Real>(&self, ctx: &Context, coords: &Dat<T>) -> Result<Dat<T>> {
        let t = self.cell_type;
        let body = match t {
            CellType::Triangle => P1_TRIANGLE,
            CellType::Tetrahedron => P1_TET,
            _ => {
                return Err(Error::Usage(format!(
                    "P1 basis gradients are for triangles and tetrahedra; this mesh has {}s \
                     (their bilinear functions' gradients vary over the cell)",
                    t.name()
                )));
            }
        };
        let cv = &self.cell_vertices;
        check("cell", cv, t.vertices(), t, coords)?;
        let (d, nv) = (t.dim(), t.vertices());
        let grads = ctx.dat_zeros::<T>("P1 basis gradients", &self.cells, nv * d)?;
        let name = format!("pl_p1_gradients_{}_{}", t.name(), T::DTYPE);
        let body = body
            .replace("T(", &format!("{}(", T::DTYPE))
            .replace("<T,", &format!("<{},", T::DTYPE));
        let k = Kernel::new(
            &name,
            format!(
                "fn {name}(x: ptr<function, array<{dt}, {a}>>, g: ptr<function, array<{dt}, {a}>>) \
                 {{\n{body}}}\n",
                dt = T::DTYPE,
                a = nv * d
            ),
        );
        ctx.par_loop(&k, &self.cells, &[coords.all(cv).read(), grads.write()])?;
        Ok(grads)
    }

    /// The mesh's geometry from `coords` (`self.coords`, or [`MeshData::coords_as`] for f64),
    /// as three par_loops recorded now (see the module's definitions). The cells' alone:
    /// [`cell_geometry`]`(ctx, md.cell_type, &md.cell_vertices, coords)`.
    ///
    /// ```
    /// # fn main() -> parloop::Result<()> {
    /// use parloop::mesh::{topology::MeshData, unit_square};
    /// let ctx = parloop::Context::new()?;
    /// let md = MeshData::new(&ctx, &unit_square(4))?;
    /// let g = md.geometry(&ctx, &md.coords)?;
    /// let area: f32 = g.cells.measure.data_ro()?.iter().sum();
    /// let perimeter: f32 = g.boundary.measure.data_ro()?.iter().sum();
    /// assert!((area - 1.0).abs() < 1e-6 && (perimeter - 4.0).abs() < 1e-5);
    /// # Ok(())
    /// # }
    /// ```
    #[track_caller]
    pub fn geometry<T: Real>(&self, ctx: &Context, coords: &Dat<T>) -> Result<Geometry<T>> {
        Ok(Geometry {
            cells: cell_geometry(ctx, self.cell_type, &self.cell_vertices, coords)?,
            facets: facet_geometry(ctx, self.cell_type, &self.facet_vertices, coords)?,
            boundary: facet_geometry(ctx, self.cell_type, &self.boundary_vertices, coords)?,
        })
    }
}

/// Vertices of each facet of a cell type.
pub(crate) fn facet_arity(t: CellType) -> usize {
    match t {
        CellType::Triangle | CellType::Quadrilateral => 2,
        CellType::Tetrahedron => 3,
        CellType::Hexahedron => 4,
    }
}

/// Refuses coordinates and a map that do not fit the cell type, naming what differs.
fn check<T: Real>(what: &str, map: &Map, arity: usize, t: CellType, coords: &Dat<T>) -> Result<()> {
    let wrong = |why: String| {
        Err(Error::Usage(format!(
            "{what} geometry of {}s through map `{}`: {why}",
            t.name(),
            map.name()
        )))
    };
    if map.arity() != arity {
        return wrong(format!(
            "the map has arity {}, but a {what} of a {} has {arity} vertices",
            map.arity(),
            t.name()
        ));
    }
    if coords.dim() != t.dim() {
        return wrong(format!(
            "coordinates `{}` have dim {}, but {}s are {}-D: give one coordinate per dimension",
            coords.name(),
            coords.dim(),
            t.name(),
            t.dim()
        ));
    }
    if map.to_set().id() != coords.set().id() {
        return wrong(format!(
            "the map points into set `{}`, but coordinates `{}` are on set `{}`",
            map.to_set().name(),
            coords.name(),
            coords.set().name()
        ));
    }
    Ok(())
}

/// The measure and centroid of the cells `cell_vertices` maps from (a cell -> vertex map of
/// cells of type `t`), from vertex coordinates `coords` (dim: `t.dim()`), as a par_loop.
#[track_caller]
pub fn cell_geometry<T: Real>(
    ctx: &Context,
    t: CellType,
    cell_vertices: &Map,
    coords: &Dat<T>,
) -> Result<CellGeometry<T>> {
    check("cell", cell_vertices, t.vertices(), t, coords)?;
    let (d, cells) = (t.dim(), cell_vertices.from_set());
    let measure = ctx.dat_zeros::<T>(&format!("{} measure", cells.name()), cells, 1)?;
    let centroid = ctx.dat_zeros::<T>(&format!("{} centroid", cells.name()), cells, d)?;
    let name = format!("pl_cell_geometry_{}_{}", t.name(), T::DTYPE);
    let body = match t {
        CellType::Triangle | CellType::Quadrilateral => polygon(t.vertices()),
        CellType::Tetrahedron => TET.to_string(),
        CellType::Hexahedron => HEX.to_string(),
    };
    let k = kernel(&name, T::DTYPE, &[t.vertices() * d, 1, d], &body);
    ctx.par_loop(
        &k,
        cells,
        &[
            coords.all(cell_vertices).read(),
            measure.write(),
            centroid.write(),
        ],
    )?;
    Ok(CellGeometry { measure, centroid })
}

/// The measure, unit normal and centroid of the facets `facet_vertices` maps from (facets of
/// cells of type `t`, their vertices in the order that gives the normal), as a par_loop.
#[track_caller]
pub fn facet_geometry<T: Real>(
    ctx: &Context,
    t: CellType,
    facet_vertices: &Map,
    coords: &Dat<T>,
) -> Result<FacetGeometry<T>> {
    let arity = facet_arity(t);
    check("facet", facet_vertices, arity, t, coords)?;
    let (d, facets) = (t.dim(), facet_vertices.from_set());
    let measure = ctx.dat_zeros::<T>(&format!("{} measure", facets.name()), facets, 1)?;
    let normal = ctx.dat_zeros::<T>(&format!("{} normal", facets.name()), facets, d)?;
    let centroid = ctx.dat_zeros::<T>(&format!("{} centroid", facets.name()), facets, d)?;
    let shape = match arity {
        2 => "edge",
        3 => "triangle",
        _ => "quadrilateral",
    };
    let name = format!("pl_facet_geometry_{shape}_{}", T::DTYPE);
    let body = match arity {
        2 => EDGE,
        3 => TRIANGLE_3D,
        _ => QUAD_3D,
    };
    let k = kernel(&name, T::DTYPE, &[arity * d, 1, d, d], body);
    ctx.par_loop(
        &k,
        facets,
        &[
            coords.all(facet_vertices).read(),
            measure.write(),
            normal.write(),
            centroid.write(),
        ],
    )?;
    Ok(FacetGeometry {
        measure,
        normal,
        centroid,
    })
}

/// A kernel `name` whose parameters are `x` (the vertices' coordinates), `m`, then `n` and
/// `c` (or `c` alone), with `sizes` values each, and `body`; `T` in the body is the type.
fn kernel(name: &str, t: DType, sizes: &[usize], body: &str) -> Kernel {
    let names: &[&str] = if sizes.len() == 3 {
        &["x", "m", "c"]
    } else {
        &["x", "m", "n", "c"]
    };
    let params: Vec<String> = names
        .iter()
        .zip(sizes)
        .map(|(p, k)| format!("{p}: ptr<function, array<{t}, {k}>>"))
        .collect();
    let body = body
        .replace("T(", &format!("{t}("))
        .replace("<T,", &format!("<{t},"));
    Kernel::new(
        name,
        format!("fn {name}({}) {{\n{body}}}\n", params.join(", ")),
    )
}

/// A polygon of `n` vertices in 2-D: the shoelace formula relative to vertex 0 (for
/// precision far from the origin).
fn polygon(n: usize) -> String {
    format!(
        "    var a = T(0); var cx = T(0); var cy = T(0);
    for (var i = 1u; i + 1u < {n}u; i++) {{
        let px = (*x)[2u * i] - (*x)[0]; let py = (*x)[2u * i + 1u] - (*x)[1];
        let qx = (*x)[2u * i + 2u] - (*x)[0]; let qy = (*x)[2u * i + 3u] - (*x)[1];
        let w = px * qy - qx * py;
        a += w; cx += (px + qx) * w; cy += (py + qy) * w;
    }}
    (*m)[0] = a / 2.0;
    (*c)[0] = (*x)[0] + cx / (3.0 * a);
    (*c)[1] = (*x)[1] + cy / (3.0 * a);
"
    )
}

/// A tetrahedron: a sixth of the determinant of its edges from vertex 0; the mean vertex.
const TET: &str = "    var e: array<T, 9>;
    for (var i = 0u; i < 3u; i++) {
        for (var k = 0u; k < 3u; k++) { e[3u * i + k] = (*x)[3u * (i + 1u) + k] - (*x)[k]; }
    }
    (*m)[0] = (e[0] * (e[4] * e[8] - e[5] * e[7]) - e[1] * (e[3] * e[8] - e[5] * e[6])
        + e[2] * (e[3] * e[7] - e[4] * e[6])) / 6.0;
    for (var k = 0u; k < 3u; k++) {
        (*c)[k] = ((*x)[k] + (*x)[3u + k] + (*x)[6u + k] + (*x)[9u + k]) / 4.0;
    }
";

/// A trilinear hexahedron: the Jacobian's determinant (and the position times it) summed over
/// the 2 x 2 x 2 Gauss points, which is exact, relative to vertex 0.
const HEX: &str =
    "    var s = array<T, 24>(-1.0, -1.0, -1.0, 1.0, -1.0, -1.0, 1.0, 1.0, -1.0, -1.0, 1.0, -1.0,
        -1.0, -1.0, 1.0, 1.0, -1.0, 1.0, 1.0, 1.0, 1.0, -1.0, 1.0, 1.0);
    let g = T(0.57735026918962576451);
    var vol = T(0);
    var mom = array<T, 3>(T(0), T(0), T(0));
    for (var q = 0u; q < 8u; q++) {
        var j = array<T, 9>(T(0), T(0), T(0), T(0), T(0), T(0), T(0), T(0), T(0));
        var p = array<T, 3>(T(0), T(0), T(0));
        for (var i = 0u; i < 8u; i++) {
            var f: array<T, 3>;
            for (var d = 0u; d < 3u; d++) { f[d] = 1.0 + g * s[3u * q + d] * s[3u * i + d]; }
            let dn = array<T, 3>(s[3u * i] * f[1] * f[2], s[3u * i + 1u] * f[0] * f[2],
                s[3u * i + 2u] * f[0] * f[1]);
            for (var k = 0u; k < 3u; k++) {
                let xk = (*x)[3u * i + k] - (*x)[k];
                p[k] += xk * f[0] * f[1] * f[2] / 8.0;
                for (var d = 0u; d < 3u; d++) { j[3u * d + k] += xk * dn[d] / 8.0; }
            }
        }
        let det = j[0] * (j[4] * j[8] - j[5] * j[7]) - j[1] * (j[3] * j[8] - j[5] * j[6])
            + j[2] * (j[3] * j[7] - j[4] * j[6]);
        vol += det;
        for (var k = 0u; k < 3u; k++) { mom[k] += p[k] * det; }
    }
    (*m)[0] = vol;
    for (var k = 0u; k < 3u; k++) { (*c)[k] = (*x)[k] + mom[k] / vol; }
";

/// An edge in 2-D: its length, (dy, -dx) normalised, its midpoint.
const EDGE: &str = "    let dx = (*x)[2] - (*x)[0];
    let dy = (*x)[3] - (*x)[1];
    let l = sqrt(dx * dx + dy * dy);
    (*m)[0] = l;
    (*n)[0] = dy / l;
    (*n)[1] = -dx / l;
    (*c)[0] = ((*x)[0] + (*x)[2]) / 2.0;
    (*c)[1] = ((*x)[1] + (*x)[3]) / 2.0;
";

/// A triangle in 3-D: half the cross product of two edges (its vector area); the mean vertex.
const TRIANGLE_3D: &str = "    var a: array<T, 3>; var b: array<T, 3>;
    for (var k = 0u; k < 3u; k++) { a[k] = (*x)[3u + k] - (*x)[k]; b[k] = (*x)[6u + k] - (*x)[k]; }
    let sx = (a[1] * b[2] - a[2] * b[1]) / 2.0;
    let sy = (a[2] * b[0] - a[0] * b[2]) / 2.0;
    let sz = (a[0] * b[1] - a[1] * b[0]) / 2.0;
    let l = sqrt(sx * sx + sy * sy + sz * sz);
    (*m)[0] = l;
    (*n)[0] = sx / l; (*n)[1] = sy / l; (*n)[2] = sz / l;
    for (var k = 0u; k < 3u; k++) { (*c)[k] = ((*x)[k] + (*x)[3u + k] + (*x)[6u + k]) / 3.0; }
";

/// A quadrilateral in 3-D: the vector area of triangles (0, 1, 2) and (0, 2, 3) (half the
/// cross product of the diagonals), the centroid weighted by each triangle's projected area.
const QUAD_3D: &str = "    var e: array<T, 9>;
    for (var i = 0u; i < 3u; i++) {
        for (var k = 0u; k < 3u; k++) { e[3u * i + k] = (*x)[3u * (i + 1u) + k] - (*x)[k]; }
    }
    let s1 = array<T, 3>((e[1] * e[5] - e[2] * e[4]) / 2.0, (e[2] * e[3] - e[0] * e[5]) / 2.0,
        (e[0] * e[4] - e[1] * e[3]) / 2.0);
    let s2 = array<T, 3>((e[4] * e[8] - e[5] * e[7]) / 2.0, (e[5] * e[6] - e[3] * e[8]) / 2.0,
        (e[3] * e[7] - e[4] * e[6]) / 2.0);
    let sx = s1[0] + s2[0]; let sy = s1[1] + s2[1]; let sz = s1[2] + s2[2];
    let l = sqrt(sx * sx + sy * sy + sz * sz);
    (*m)[0] = l;
    (*n)[0] = sx / l; (*n)[1] = sy / l; (*n)[2] = sz / l;
    let w1 = (s1[0] * sx + s1[1] * sy + s1[2] * sz) / l;
    let w2 = (s2[0] * sx + s2[1] * sy + s2[2] * sz) / l;
    for (var k = 0u; k < 3u; k++) {
        let c1 = (e[k] + e[3u + k]) / 3.0;
        let c2 = (e[3u + k] + e[6u + k]) / 3.0;
        (*c)[k] = (*x)[k] + (w1 * c1 + w2 * c2) / (w1 + w2);
    }
";

/// A triangle's P1 gradients: with edges e0 = x1 - x0 and e1 = x2 - x0, those of vertices 1
/// and 2 are the columns of the inverse of [e0; e1] ((e1.y, -e1.x) / det, (-e0.y, e0.x) /
/// det); vertex 0's is minus their sum.
const P1_TRIANGLE: &str = "    let a = (*x)[2] - (*x)[0]; let b = (*x)[3] - (*x)[1];
    let c = (*x)[4] - (*x)[0]; let d = (*x)[5] - (*x)[1];
    let det = a * d - b * c;
    (*g)[2] = d / det; (*g)[3] = -c / det;
    (*g)[4] = -b / det; (*g)[5] = a / det;
    (*g)[0] = -(*g)[2] - (*g)[4]; (*g)[1] = -(*g)[3] - (*g)[5];
";

/// A tetrahedron's: vertex i + 1's gradient is e(i+1) x e(i+2) / det (edges from vertex 0,
/// indices mod 3: the inverse's columns by cofactors), vertex 0's minus their sum.
const P1_TET: &str = "    var e: array<T, 9>;
    for (var i = 0u; i < 3u; i++) {
        for (var k = 0u; k < 3u; k++) { e[3u * i + k] = (*x)[3u * (i + 1u) + k] - (*x)[k]; }
    }
    var det = T(0);
    for (var i = 0u; i < 3u; i++) {
        let p = 3u * ((i + 1u) % 3u); let q = 3u * ((i + 2u) % 3u);
        (*g)[3u * i + 3u] = e[p + 1u] * e[q + 2u] - e[p + 2u] * e[q + 1u];
        (*g)[3u * i + 4u] = e[p + 2u] * e[q] - e[p] * e[q + 2u];
        (*g)[3u * i + 5u] = e[p] * e[q + 1u] - e[p + 1u] * e[q];
    }
    det = e[0] * (*g)[3] + e[1] * (*g)[4] + e[2] * (*g)[5];
    for (var k = 0u; k < 3u; k++) {
        var sum = T(0);
        for (var i = 1u; i < 4u; i++) { (*g)[3u * i + k] /= det; sum += (*g)[3u * i + k]; }
        (*g)[k] = -sum;
    }
";
