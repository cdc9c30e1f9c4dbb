//! The geometry tests' plain-Rust model: textbook cell and facet geometry in f64, and the check
//! of a `MeshData`'s computed geometry against it (tolerances from the type's rounding of the
//! coordinates), shared by tests/it/geometry.rs (2-D, errors) and tests/it/geometry_3d.rs.
#![allow(dead_code)]

use crate::common::ctx;
use parloop::mesh::geometry::{FacetGeometry, Geometry};
use parloop::mesh::topology::MeshData;
use parloop::mesh::{CellType, Mesh};
use parloop::{Context, Dat, Real};

pub type V = [f64; 3];

pub fn sub(a: V, b: V) -> V {
    [a[0] - b[0], a[1] - b[1], a[2] - b[2]]
}
pub fn dot(a: V, b: V) -> f64 {
    a[0] * b[0] + a[1] * b[1] + a[2] * b[2]
}
pub fn cross(a: V, b: V) -> V {
    [
        a[1] * b[2] - a[2] * b[1],
        a[2] * b[0] - a[0] * b[2],
        a[0] * b[1] - a[1] * b[0],
    ]
}
pub fn mean(xs: &[V]) -> V {
    let n = xs.len() as f64;
    [0, 1, 2].map(|k| xs.iter().map(|x| x[k]).sum::<f64>() / n)
}

/// A cell's area or volume (unsigned) and centroid, by textbook formulas: the shoelace formula
/// for polygons, a sixth of |det| for tetrahedra; a hexahedron is taken as a parallelepiped
/// (the tests' affine boxes), its volume |det| of three edges, its centroid the vertex mean.
pub fn reference_cell(t: CellType, x: &[V]) -> (f64, V) {
    match t {
        CellType::Triangle | CellType::Quadrilateral => {
            // Relative to vertex 0: far from the origin, absolute products lose the digits.
            let n = x.len();
            let (mut a, mut cx, mut cy) = (0.0, 0.0, 0.0);
            for i in 0..n {
                let (p, q) = (sub(x[i], x[0]), sub(x[(i + 1) % n], x[0]));
                let w = p[0] * q[1] - q[0] * p[1];
                a += w;
                cx += (p[0] + q[0]) * w;
                cy += (p[1] + q[1]) * w;
            }
            (
                a.abs() / 2.0,
                [x[0][0] + cx / (3.0 * a), x[0][1] + cy / (3.0 * a), 0.0],
            )
        }
        CellType::Tetrahedron => {
            let v = dot(sub(x[1], x[0]), cross(sub(x[2], x[0]), sub(x[3], x[0])));
            (v.abs() / 6.0, mean(x))
        }
        CellType::Hexahedron => {
            let v = dot(sub(x[1], x[0]), cross(sub(x[3], x[0]), sub(x[4], x[0])));
            (v.abs(), mean(x))
        }
    }
}

pub fn values<T: Real + Into<f64>>(d: &Dat<T>) -> Vec<f64> {
    d.data_ro().unwrap().iter().map(|&v| v.into()).collect()
}

/// Point `i` of a Dat of dim `d` as a 3-vector.
pub fn at(v: &[f64], d: usize, i: usize) -> V {
    let mut p = [0.0; 3];
    p[..d].copy_from_slice(&v[i * d..(i + 1) * d]);
    p
}

/// What a test knows of one facet set's computed geometry.
pub struct Facets {
    pub measure: Vec<f64>,
    pub normal: Vec<f64>,
    pub centroid: Vec<f64>,
}

pub fn facets<T: Real + Into<f64>>(g: &FacetGeometry<T>) -> Facets {
    Facets {
        measure: values(&g.measure),
        normal: values(&g.normal),
        centroid: values(&g.centroid),
    }
}

/// The largest distance between two of `xs`.
pub fn diameter(xs: &[V]) -> f64 {
    xs.iter()
        .flat_map(|a| xs.iter().map(move |b| dot(sub(*a, *b), sub(*a, *b)).sqrt()))
        .fold(0.0, f64::max)
}

/// Checks `md`'s geometry in `T` against the plain-Rust geometry of `mesh` (the mesh as the
/// user gave it, windings and all), to what `T`'s rounding of the coordinates allows (`eps`:
/// its unit round-off, times 16; coordinates of size `scale` move by `eps scale`, a measure of
/// a cell of diameter `h` by `eps scale h^(d-1)`, a normal's direction by `eps scale / h`);
/// returns (total measure, boundary measure, boundary integral of x . n).
pub fn check<T: Real + Into<f64>>(ctx: &Context, mesh: &Mesh, eps: f64) -> (f64, f64, f64) {
    let tol = 16.0 * eps;
    let md = MeshData::new(ctx, mesh).unwrap();
    let coords = md.coords_as::<T>(ctx).unwrap();
    let g: Geometry<T> = md.geometry(ctx, &coords).unwrap();
    let (d, t) = (mesh.dim(), mesh.cell_type);
    let what = format!("{} {}", t.name(), T::DTYPE);
    let (cm, cc) = (values(&g.cells.measure), values(&g.cells.centroid));
    let x = |v: u32| mesh.coords[v as usize];
    let scale = mesh
        .coords
        .iter()
        .flat_map(|c| c.iter().map(|v| v.abs()))
        .fold(1.0f64, f64::max);
    let mut centroids = Vec::new();
    for (c, &got) in cm.iter().enumerate() {
        let xs: Vec<V> = mesh.cell(c).iter().map(|&v| x(v)).collect();
        let (m, centre) = reference_cell(t, &xs);
        let h = diameter(&xs);
        assert!(
            (got - m).abs() <= tol * (m + d as f64 * scale * h.powi(d as i32 - 1)),
            "{what}: cell {c} measure {got} vs {m}"
        );
        let got = at(&cc, d, c);
        assert!(
            dot(sub(got, centre), sub(got, centre)).sqrt() <= tol * scale,
            "{what}: cell {c} centroid {got:?} vs {centre:?}"
        );
        centroids.push(centre);
    }
    // Closure: each cell's outward vector areas sum to zero.
    let mut closure = vec![[0.0f64; 3]; mesh.ncells()];
    let check_facets =
        |f: &Facets, vertices: &[u32], cells: &[u32], two: bool, closure: &mut Vec<V>| {
            let arity = vertices.len() / f.measure.len().max(1);
            let per = if two { 2 } else { 1 };
            for k in 0..f.measure.len() {
                let xs: Vec<V> = vertices[k * arity..(k + 1) * arity]
                    .iter()
                    .map(|&v| x(v))
                    .collect();
                let m = match arity {
                    2 => dot(sub(xs[1], xs[0]), sub(xs[1], xs[0])).sqrt(),
                    3 => {
                        dot(
                            cross(sub(xs[1], xs[0]), sub(xs[2], xs[0])),
                            cross(sub(xs[1], xs[0]), sub(xs[2], xs[0])),
                        )
                        .sqrt()
                            / 2.0
                    }
                    _ => {
                        let s = cross(sub(xs[2], xs[0]), sub(xs[3], xs[1]));
                        dot(s, s).sqrt() / 2.0
                    }
                };
                let h = diameter(&xs);
                let allowed = tol * (m + 3.0 * scale * h.powi(d as i32 - 2));
                assert!(
                    (f.measure[k] - m).abs() <= allowed,
                    "{what}: facet {k} measure {} vs {m}",
                    f.measure[k]
                );
                let n = at(&f.normal, d, k);
                assert!(
                    (dot(n, n).sqrt() - 1.0).abs() <= tol,
                    "{what}: facet {k} normal {n:?} not unit"
                );
                for p in &xs[1..] {
                    let e = sub(*p, xs[0]);
                    let allowed = tol * scale / h * dot(e, e).sqrt();
                    assert!(
                        dot(n, e).abs() <= allowed,
                        "{what}: facet {k} normal {n:?} not normal to it"
                    );
                }
                let fc = at(&f.centroid, d, k);
                let want = mean(&xs);
                assert!(
                    dot(sub(fc, want), sub(fc, want)).sqrt() <= tol * scale,
                    "{what}: facet {k} centroid {fc:?} vs {want:?}"
                );
                // The normal points away from the first cell, towards the second.
                let first = cells[k * per] as usize;
                assert!(
                    dot(n, sub(fc, centroids[first])) > 0.0,
                    "{what}: facet {k}'s normal {n:?} points into its first cell {first}"
                );
                for j in 0..3 {
                    closure[first][j] += f.measure[k] * n[j];
                }
                if two {
                    let second = cells[k * 2 + 1] as usize;
                    assert!(
                        dot(n, sub(centroids[second], fc)) > 0.0,
                        "{what}: facet {k}'s normal {n:?} points away from its second cell {second}"
                    );
                    for j in 0..3 {
                        closure[second][j] -= f.measure[k] * n[j];
                    }
                }
            }
        };
    let (fi, fb) = (facets(&g.facets), facets(&g.boundary));
    check_facets(
        &fi,
        md.facet_vertices.values(),
        md.facet_cells.values(),
        true,
        &mut closure,
    );
    check_facets(
        &fb,
        md.boundary_vertices.values(),
        md.boundary_cell.values(),
        false,
        &mut closure,
    );
    for (c, s) in closure.iter().enumerate() {
        let xs: Vec<V> = mesh.cell(c).iter().map(|&v| x(v)).collect();
        let allowed = tol * 10.0 * scale * diameter(&xs).powi(d as i32 - 2);
        assert!(
            dot(*s, *s).sqrt() <= allowed,
            "{what}: cell {c}'s facets do not close: {s:?}"
        );
    }
    let x_dot_n: f64 = (0..fb.measure.len())
        .map(|k| dot(at(&fb.centroid, d, k), at(&fb.normal, d, k)) * fb.measure[k])
        .sum();
    (cm.iter().sum(), fb.measure.iter().sum(), x_dot_n)
}

/// Checks in f32, and in f64 where the adapter has it; returns the f32 totals.
pub fn check_both(mesh: &Mesh) -> (f64, f64, f64) {
    let ctx = ctx();
    let single = check::<f32>(&ctx, mesh, f32::EPSILON as f64 / 2.0);
    if ctx.gpu().f64() {
        let double = check::<f64>(&ctx, mesh, f64::EPSILON / 2.0);
        for (s, d) in [
            (single.0, double.0),
            (single.1, double.1),
            (single.2, double.2),
        ] {
            assert!(
                (s - d).abs() <= 1e-5 * d.abs().max(1.0),
                "f32 {s} vs f64 {d}"
            );
        }
    }
    single
}

/// `mesh` with the cells `turn` says reversed (vertex order mirrored).
pub fn reversed(mut mesh: Mesh, turn: impl Fn(usize) -> bool) -> (Mesh, Vec<u32>) {
    let nv = mesh.cell_type.vertices();
    let mut turned = Vec::new();
    for c in 0..mesh.ncells() {
        if turn(c) {
            let cell = &mut mesh.cells[c * nv..(c + 1) * nv];
            match mesh.cell_type {
                CellType::Triangle | CellType::Tetrahedron => cell.swap(0, 1),
                CellType::Quadrilateral => cell.reverse(),
                CellType::Hexahedron => {
                    let (lo, hi) = cell.split_at_mut(4);
                    lo.swap_with_slice(hi);
                }
            }
            turned.push(c as u32);
        }
    }
    (mesh, turned)
}
