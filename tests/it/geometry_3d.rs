//! Geometry from the mesh in 3-D (issue 28): tetrahedra of the unit cube with mixed
//! orientations, hexahedra of a sheared box, trilinear hexahedra that tile it, and a frustum
//! hexahedron with trapezoid faces, against plain-Rust geometry (`geometry_model`) and exact
//! volumes, surfaces, centroids and the divergence theorem.

use crate::common;
use crate::geometry_model;

use common::ctx;
use geometry_model::*;
use parloop::mesh::topology::MeshData;
use parloop::mesh::{CellType, Mesh, unit_cube_tets};
use parloop::util::Rng;

/// A frustum of a square pyramid as one hexahedron (bottom [0, 1]^2 at z = 0, top
/// [0.25, 0.75]^2 at z = 1): its volume h/3 (A1 + sqrt(A1 A2) + A2) and centroid height
/// h (A1 + 2 sqrt(A1 A2) + 3 A2) / (4 (A1 + sqrt(A1 A2) + A2)), and its trapezoid sides'
/// areas and centroids (a third of the way up, weighted by the parallel sides: t = (a + 2 b) /
/// (3 (a + b))), none of them a parallelogram.
#[test]
fn a_frustum_hexahedron_and_its_trapezoid_faces() {
    let ctx = ctx();
    let (lo, hi) = (0.25, 0.75);
    let mesh = Mesh {
        coords: vec![
            [0.0, 0.0, 0.0],
            [1.0, 0.0, 0.0],
            [1.0, 1.0, 0.0],
            [0.0, 1.0, 0.0],
            [lo, lo, 1.0],
            [hi, lo, 1.0],
            [hi, hi, 1.0],
            [lo, hi, 1.0],
        ],
        cell_type: CellType::Hexahedron,
        cells: (0..8).collect(),
        facets: Vec::new(),
        groups: Vec::new(),
    };
    let md = MeshData::new(&ctx, &mesh).unwrap();
    let g = md.geometry(&ctx, &md.coords).unwrap();
    let (a1, a2): (f64, f64) = (1.0, 0.25);
    let volume = (a1 + (a1 * a2).sqrt() + a2) / 3.0;
    let z = (a1 + 2.0 * (a1 * a2).sqrt() + 3.0 * a2) / (4.0 * (a1 + (a1 * a2).sqrt() + a2));
    let m = values(&g.cells.measure)[0];
    let c = values(&g.cells.centroid);
    assert!((m - volume).abs() < 1e-6, "volume {m} vs {volume}");
    for (k, want) in [0.5, 0.5, z].iter().enumerate() {
        assert!(
            (c[k] - want).abs() < 1e-6,
            "centroid {c:?} vs (0.5, 0.5, {z})"
        );
    }
    // The side y = 0 side: a trapezoid from (0,0,0)-(1,0,0) up to (lo,lo,1)-(hi,lo,1).
    let (a, b) = (1.0, hi - lo);
    let slant = (lo * lo + 1.0f64).sqrt();
    let t = (a + 2.0 * b) / (3.0 * (a + b));
    let (fm, fc, fnorm) = (
        values(&g.boundary.measure),
        values(&g.boundary.centroid),
        values(&g.boundary.normal),
    );
    let k = (0..6)
        .find(|&k| fnorm[3 * k + 1] < -0.9)
        .expect("the face looking down y");
    assert!(
        (fm[k] - (a + b) / 2.0 * slant).abs() < 1e-6,
        "area {} vs {}",
        fm[k],
        (a + b) / 2.0 * slant
    );
    let want = [0.5, t * lo, t];
    for j in 0..3 {
        assert!(
            (fc[3 * k + j] - want[j]).abs() < 1e-6,
            "centroid {:?} vs {want:?}",
            &fc[3 * k..3 * k + 3]
        );
    }
    // The outward normal of that face: (0, -1, lo) normalised.
    let n = [0.0, -1.0 / slant, lo / slant];
    for j in 0..3 {
        assert!(
            (fnorm[3 * k + j] - n[j]).abs() < 1e-6,
            "normal {:?} vs {n:?}",
            &fnorm[3 * k..3 * k + 3]
        );
    }
}

#[test]
fn tetrahedra_of_the_unit_cube_mixed() {
    let (mesh, _) = reversed(unit_cube_tets(3), |c| c % 2 == 0);
    let (volume, surface, x_dot_n) = check_both(&mesh);
    assert!((volume - 1.0).abs() < 1e-5, "volume {volume}");
    assert!((surface - 6.0).abs() < 1e-5, "surface {surface}");
    assert!((x_dot_n - 3.0).abs() < 1e-5, "x . n {x_dot_n} (3 x volume)");
}

/// n^3 hexahedra on the unit cube, mapped by x -> A x + b (a sheared box, every face a
/// parallelogram), with interior vertices moved at random by up to `wobble` of a cell.
fn hexes(n: usize, wobble: f64) -> Mesh {
    let m = n + 1;
    let id = |i: usize, j: usize, k: usize| ((k * m + j) * m + i) as u32;
    let a = [[1.0, 0.3, 0.1], [0.0, 0.8, 0.2], [0.1, 0.0, 1.2]];
    let mut rng = Rng::new(7);
    let mut coords = Vec::new();
    for k in 0..m {
        for j in 0..m {
            for i in 0..m {
                let mut p = [i, j, k].map(|c| c as f64 / n as f64);
                if [i, j, k].iter().all(|&c| c > 0 && c < n) {
                    for c in &mut p {
                        *c += wobble * (rng.unit() - 0.5) / n as f64;
                    }
                }
                coords.push([0, 1, 2].map(|r| 2.0 + (0..3).map(|s| a[r][s] * p[s]).sum::<f64>()));
            }
        }
    }
    let mut cells = Vec::new();
    for k in 0..n {
        for j in 0..n {
            for i in 0..n {
                cells.extend([
                    id(i, j, k),
                    id(i + 1, j, k),
                    id(i + 1, j + 1, k),
                    id(i, j + 1, k),
                    id(i, j, k + 1),
                    id(i + 1, j, k + 1),
                    id(i + 1, j + 1, k + 1),
                    id(i, j + 1, k + 1),
                ]);
            }
        }
    }
    Mesh {
        coords,
        cell_type: CellType::Hexahedron,
        cells,
        facets: Vec::new(),
        groups: Vec::new(),
    }
}

#[test]
fn hexahedra_of_a_sheared_box() {
    let det = 1.0 * (0.8 * 1.2 - 0.0) - 0.3 * (0.0 * 1.2 - 0.2 * 0.1) + 0.1 * (0.0 - 0.8 * 0.1);
    let (mesh, _) = reversed(hexes(3, 0.0), |c| c % 4 == 1);
    let (volume, _, x_dot_n) = check_both(&mesh);
    assert!(
        (volume - det).abs() < 1e-5,
        "volume {volume} vs det A {det}"
    );
    assert!(
        (x_dot_n - 3.0 * volume).abs() < 1e-4,
        "x . n {x_dot_n} vs 3 x {volume}"
    );
}

/// Trilinear cells (interior vertices moved, so faces are not planar) still tile the box: their
/// volumes, exact by Gauss quadrature, sum to the box's.
#[test]
fn trilinear_hexahedra_sum_to_the_box() {
    let det = 1.0 * (0.8 * 1.2 - 0.0) - 0.3 * (0.0 * 1.2 - 0.2 * 0.1) + 0.1 * (0.0 - 0.8 * 0.1);
    let ctx = ctx();
    let mesh = hexes(4, 0.5);
    let md = MeshData::new(&ctx, &mesh).unwrap();
    let g = md.geometry(&ctx, &md.coords).unwrap();
    let volume: f64 = values(&g.cells.measure).iter().sum();
    assert!(
        (volume - det).abs() < 1e-5,
        "volume {volume} vs det A {det}"
    );
    if ctx.gpu().f64() {
        let g = md
            .geometry(&ctx, &md.coords_as::<f64>(&ctx).unwrap())
            .unwrap();
        let volume: f64 = values(&g.cells.measure).iter().sum();
        assert!(
            (volume - det).abs() < 1e-13,
            "f64 volume {volume} vs det A {det}"
        );
    }
}

/// The P1 basis gradients reproduce the gradient of any linear function exactly (sum over a
/// cell's vertices of u(x_i) grad(phi_i) = grad u), on jittered triangles and on tetrahedra of
/// both orientations; their sum is zero; quadrilaterals are refused.
#[test]
fn p1_basis_gradients_reproduce_linear_functions() {
    let ctx = ctx();
    let mut square = parloop::mesh::unit_square(5);
    let mut rng = Rng::new(7);
    for c in square.coords.iter_mut() {
        if c[0] > 0.0 && c[0] < 1.0 && c[1] > 0.0 && c[1] < 1.0 {
            c[0] += 0.05 * (rng.unit() - 0.5);
            c[1] += 0.05 * (rng.unit() - 0.5);
        }
    }
    for mesh in [square, unit_cube_tets(2)] {
        let d = mesh.dim();
        let slope = [0.7, -1.3, 2.1];
        let md = MeshData::new(&ctx, &mesh).unwrap();
        let g = md.p1_gradients(&ctx, &md.coords).unwrap();
        let g = g.data_ro().unwrap();
        let nv = mesh.cell_type.vertices();
        let cells = md.cell_vertices.values();
        for c in 0..mesh.ncells() {
            for k in 0..d {
                let (mut du, mut sum) = (0.0f64, 0.0f64);
                for i in 0..nv {
                    let x = mesh.coords[cells[c * nv + i] as usize];
                    let u: f64 = (0..d).map(|j| slope[j] * x[j]).sum::<f64>() + 0.4;
                    let gi = g[c * nv * d + i * d + k] as f64;
                    du += u * gi;
                    sum += gi;
                }
                assert!((du - slope[k]).abs() < 1e-4, "cell {c}, d/dx{k}: {du}");
                assert!(sum.abs() < 1e-3, "cell {c}: the gradients sum to {sum}");
            }
        }
    }
    let quads = Mesh {
        coords: vec![
            [0.0, 0.0, 0.0],
            [1.0, 0.0, 0.0],
            [1.0, 1.0, 0.0],
            [0.0, 1.0, 0.0],
        ],
        cell_type: CellType::Quadrilateral,
        cells: vec![0, 1, 2, 3],
        facets: Vec::new(),
        groups: Vec::new(),
    };
    let md = MeshData::new(&ctx, &quads).unwrap();
    let e = md.p1_gradients(&ctx, &md.coords).err().expect("refused");
    assert!(e.to_string().contains("triangles and tetrahedra"), "{e}");
}
