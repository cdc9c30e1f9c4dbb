//! Orientation and geometry from the mesh (issue 28): `MeshData` orients every cell, so facet
//! normals point from a facet's first cell to its second and outward on the boundary, on
//! meshes with reversed and mixed windings; cell measures and centroids, facet measures, unit
//! normals and centroids, computed by par_loops in f32 and f64, against plain-Rust f64
//! geometry of the unturned mesh and exact values (a square's area and perimeter, the channel's
//! area, a cube's volume and surface, a sheared box of hexahedra), and the divergence theorem.

mod common;

use common::ctx;
use parloop::mesh::geometry::{FacetGeometry, Geometry};
use parloop::mesh::topology::MeshData;
use parloop::mesh::{CellType, Mesh, gmsh, unit_cube_tets, unit_square};
use parloop::util::Rng;
use parloop::{Context, Dat, Real};

type V = [f64; 3];

fn sub(a: V, b: V) -> V {
    [a[0] - b[0], a[1] - b[1], a[2] - b[2]]
}
fn dot(a: V, b: V) -> f64 {
    a[0] * b[0] + a[1] * b[1] + a[2] * b[2]
}
fn cross(a: V, b: V) -> V {
    [
        a[1] * b[2] - a[2] * b[1],
        a[2] * b[0] - a[0] * b[2],
        a[0] * b[1] - a[1] * b[0],
    ]
}
fn mean(xs: &[V]) -> V {
    let n = xs.len() as f64;
    [0, 1, 2].map(|k| xs.iter().map(|x| x[k]).sum::<f64>() / n)
}

/// A cell's area or volume (unsigned) and centroid, by textbook formulas: the shoelace formula
/// for polygons, a sixth of |det| for tetrahedra; a hexahedron is taken as a parallelepiped
/// (the tests' affine boxes), its volume |det| of three edges, its centroid the vertex mean.
fn reference_cell(t: CellType, x: &[V]) -> (f64, V) {
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

fn values<T: Real + Into<f64>>(d: &Dat<T>) -> Vec<f64> {
    d.data_ro().unwrap().iter().map(|&v| v.into()).collect()
}

/// Point `i` of a Dat of dim `d` as a 3-vector.
fn at(v: &[f64], d: usize, i: usize) -> V {
    let mut p = [0.0; 3];
    p[..d].copy_from_slice(&v[i * d..(i + 1) * d]);
    p
}

/// What a test knows of one facet set's computed geometry.
struct Facets {
    measure: Vec<f64>,
    normal: Vec<f64>,
    centroid: Vec<f64>,
}

fn facets<T: Real + Into<f64>>(g: &FacetGeometry<T>) -> Facets {
    Facets {
        measure: values(&g.measure),
        normal: values(&g.normal),
        centroid: values(&g.centroid),
    }
}

/// The largest distance between two of `xs`.
fn diameter(xs: &[V]) -> f64 {
    xs.iter()
        .flat_map(|a| xs.iter().map(move |b| dot(sub(*a, *b), sub(*a, *b)).sqrt()))
        .fold(0.0, f64::max)
}

/// Checks `md`'s geometry in `T` against the plain-Rust geometry of `mesh` (the mesh as the
/// user gave it, windings and all), to what `T`'s rounding of the coordinates allows (`eps`:
/// its unit round-off, times 16; coordinates of size `scale` move by `eps scale`, a measure of
/// a cell of diameter `h` by `eps scale h^(d-1)`, a normal's direction by `eps scale / h`);
/// returns (total measure, boundary measure, boundary integral of x . n).
fn check<T: Real + Into<f64>>(ctx: &Context, mesh: &Mesh, eps: f64) -> (f64, f64, f64) {
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
fn check_both(mesh: &Mesh) -> (f64, f64, f64) {
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
fn reversed(mut mesh: Mesh, turn: impl Fn(usize) -> bool) -> (Mesh, Vec<u32>) {
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

#[test]
fn a_square_with_reversed_and_mixed_windings() {
    let ctx = ctx();
    let mut rng = Rng::new(28);
    let coin: Vec<bool> = (0..2 * 6 * 6).map(|_| rng.below(2) == 1).collect();
    for (name, (mesh, turned)) in [
        ("as made", reversed(unit_square(6), |_| false)),
        ("all reversed", reversed(unit_square(6), |_| true)),
        ("mixed", reversed(unit_square(6), |c| coin[c])),
    ] {
        let md = MeshData::new(&ctx, &mesh).unwrap();
        assert_eq!(md.turned, turned, "{name}: the cells MeshData turned");
        let (area, perimeter, x_dot_n) = check_both(&mesh);
        assert!((area - 1.0).abs() < 1e-5, "{name}: area {area}");
        assert!(
            (perimeter - 4.0).abs() < 1e-5,
            "{name}: perimeter {perimeter}"
        );
        assert!(
            (x_dot_n - 2.0).abs() < 1e-5,
            "{name}: boundary x . n {x_dot_n} (2 x area)"
        );
    }
}

/// The exact outward normal of the unit square on each boundary facet.
#[test]
fn boundary_normals_of_a_reversed_square_are_the_outward_axes() {
    let ctx = ctx();
    let (mesh, _) = reversed(unit_square(5), |_| true);
    let md = MeshData::new(&ctx, &mesh).unwrap();
    let g = md.geometry(&ctx, &md.coords).unwrap();
    let (n, c) = (values(&g.boundary.normal), values(&g.boundary.centroid));
    for k in 0..md.boundary.size() {
        let (x, y) = (c[2 * k], c[2 * k + 1]);
        let want = if x < 1e-6 {
            [-1.0, 0.0]
        } else if x > 1.0 - 1e-6 {
            [1.0, 0.0]
        } else if y < 1e-6 {
            [0.0, -1.0]
        } else {
            [0.0, 1.0]
        };
        assert_eq!(
            [n[2 * k], n[2 * k + 1]],
            want,
            "boundary facet {k} at ({x}, {y})"
        );
    }
}

/// The advection example's Gmsh mesh: a channel [0, 2] x [0, 1] around a cylinder of radius
/// 0.15, its circle a polygon inscribed in it: the area is the channel's less the disk's plus
/// the circular segments the polygon leaves out, r^2 / 2 (t - sin t) for an edge of angle t.
#[test]
fn the_channel_from_gmsh() {
    let mesh = gmsh::read_file(concat!(env!("CARGO_MANIFEST_DIR"), "/data/channel.msh")).unwrap();
    let (area, perimeter, x_dot_n) = check_both(&mesh);
    let r: f64 = 0.15;
    let chords: Vec<f64> = mesh
        .group("cylinder")
        .unwrap()
        .members
        .iter()
        .map(|&k| {
            let f = &mesh.facets[k as usize];
            let (a, b) = (mesh.coords[f[0] as usize], mesh.coords[f[1] as usize]);
            ((a[0] - b[0]).powi(2) + (a[1] - b[1]).powi(2)).sqrt()
        })
        .collect();
    let segments: f64 = chords
        .iter()
        .map(|&l| {
            let t = 2.0 * (l / (2.0 * r)).asin();
            r * r / 2.0 * (t - t.sin())
        })
        .sum();
    let exact = 2.0 - std::f64::consts::PI * r * r + segments;
    assert!((area - exact).abs() < 1e-5, "area {area} vs {exact}");
    let exact_perimeter = 6.0 + chords.iter().sum::<f64>();
    assert!(
        (perimeter - exact_perimeter).abs() < 1e-5,
        "perimeter {perimeter} vs {exact_perimeter}"
    );
    assert!(
        (x_dot_n - 2.0 * area).abs() < 1e-4,
        "boundary x . n {x_dot_n} vs 2 x area {area}"
    );
}

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
fn quadrilaterals_of_the_l_shape() {
    let mesh = gmsh::read_file(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/data/lshape.msh"
    ))
    .unwrap();
    let reference: f64 = (0..mesh.ncells())
        .map(|c| {
            let xs: Vec<V> = mesh
                .cell(c)
                .iter()
                .map(|&v| mesh.coords[v as usize])
                .collect();
            reference_cell(CellType::Quadrilateral, &xs).0
        })
        .sum();
    let (mesh, _) = reversed(mesh, |c| c % 3 == 0);
    let (area, _, x_dot_n) = check_both(&mesh);
    assert!(
        (area - reference).abs() < 1e-5 * reference,
        "area {area} vs {reference}"
    );
    assert!(
        (x_dot_n - 2.0 * area).abs() < 1e-4 * area,
        "x . n {x_dot_n} vs {area}"
    );
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

#[test]
fn degenerate_cells_and_wrong_arguments_are_refused() {
    let ctx = ctx();
    let mut mesh = unit_square(2);
    let (a, b) = (mesh.cells[0], mesh.cells[1]);
    mesh.cells[2] = b; // a triangle with a vertex twice
    mesh.cells[1] = a;
    let e = MeshData::new(&ctx, &mesh)
        .err()
        .expect("refused")
        .to_string();
    assert!(
        e.contains("cell 0 (triangle") && e.contains("at one point"),
        "{e}"
    );
    // A quadrilateral with two distinct vertices at one point: positive area, but an edge of
    // length 0 would have no normal.
    let quad = Mesh {
        coords: vec![
            [0.0, 0.0, 0.0],
            [1.0, 0.0, 0.0],
            [0.0, 1.0, 0.0],
            [0.0, 1.0, 0.0],
        ],
        cell_type: CellType::Quadrilateral,
        cells: vec![0, 1, 2, 3],
        facets: Vec::new(),
        groups: Vec::new(),
    };
    let e = MeshData::new(&ctx, &quad)
        .err()
        .expect("refused")
        .to_string();
    assert!(
        e.contains("has vertices 2 and 3 at one point [0.0, 1.0]"),
        "{e}"
    );
    let md = MeshData::new(&ctx, &unit_square(2)).unwrap();
    let wrong = ctx.dat_zeros::<f32>("x3", &md.vertices, 3).unwrap();
    let e = md
        .geometry(&ctx, &wrong)
        .err()
        .expect("refused")
        .to_string();
    assert!(
        e.contains("coordinates `x3` have dim 3, but triangles are 2-D"),
        "{e}"
    );
    let e = parloop::mesh::geometry::cell_geometry(
        &ctx,
        CellType::Quadrilateral,
        &md.cell_vertices,
        &md.coords,
    )
    .err()
    .expect("refused")
    .to_string();
    assert!(
        e.contains("the map has arity 3, but a cell of a quadrilateral has 4 vertices"),
        "{e}"
    );
}

/// A user's Consts named like the geometry kernels' locals (`a`, `dx`, `l`) do not reach into
/// them: declared before the geometry, and after it with a loop that fuses with its facet loop.
#[test]
fn user_consts_named_like_the_kernels_locals() {
    let ctx = ctx();
    ctx.constant("a", 1.0f32).unwrap();
    ctx.constant("l", 2.0f32).unwrap();
    let md = MeshData::new(&ctx, &unit_square(4)).unwrap();
    let g = md.geometry(&ctx, &md.coords).unwrap();
    ctx.constant("dx", 0.25f32).unwrap();
    let k = parloop::Kernel::new(
        "scaled",
        "fn scaled(n: ptr<function, array<f32, 2>>, o: ptr<function, array<f32, 1>>) {
            (*o)[0] = (*n)[0] * dx * l;
        }",
    );
    let o = ctx.dat_zeros::<f32>("o", &md.facets, 1).unwrap();
    ctx.par_loop(&k, &md.facets, &[g.facets.normal.read(), o.write()])
        .unwrap();
    let n = values(&g.facets.normal);
    let got = values(&o);
    for (f, v) in got.iter().enumerate() {
        assert_eq!(*v, n[2 * f] * 0.5, "facet {f}");
    }
}
