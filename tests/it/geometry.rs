//! Orientation and geometry from the mesh (issue 28), in 2-D: `MeshData` orients every cell,
//! so facet normals point from a facet's first cell to its second and outward on the boundary,
//! on meshes with reversed and mixed windings; cell measures and centroids, facet measures,
//! unit normals and centroids, computed by par_loops in f32 and f64, against plain-Rust f64
//! geometry of the unturned mesh (`geometry_model`) and exact values (a square's area and
//! perimeter, the channel's area, an L-shape of quadrilaterals), and the divergence theorem;
//! the errors. 3-D meshes: tests/it/geometry_3d.rs.

use crate::common;
use crate::geometry_model;

use common::ctx;
use geometry_model::*;
use parloop::mesh::topology::MeshData;
use parloop::mesh::{CellType, Mesh, gmsh, unit_square};
use parloop::util::Rng;

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
