//! The committed test meshes' generators: a disk of triangles, an L-shape of quadrilaterals
//! and a unit cube of tetrahedra, with their boundary groups.

use parloop::mesh::topology::Topology;
use parloop::mesh::{CellType, Group, Mesh, unit_cube_tets, unit_square};
use std::collections::{BTreeMap, BTreeSet};

/// Boundary facets of `cells` split into groups by `which` (a facet's vertex coordinates ->
/// group index).
fn tag_boundary(
    cell_type: CellType,
    cells: &[u32],
    coords: &[[f64; 3]],
    names: &[&str],
    which: impl Fn(&[[f64; 3]]) -> usize,
) -> (Vec<Vec<u32>>, Vec<Group>) {
    let t = Topology::new(cell_type, cells).unwrap();
    let dim = cell_type.dim();
    let mut facets = Vec::new();
    let mut groups: Vec<Group> = names
        .iter()
        .enumerate()
        .map(|(k, n)| Group {
            name: n.to_string(),
            dim: dim - 1,
            tag: 10 + k as i32,
            members: Vec::new(),
        })
        .collect();
    for f in t.boundary() {
        let vs = t.facet(f as usize).to_vec();
        let xs: Vec<[f64; 3]> = vs.iter().map(|&v| coords[v as usize]).collect();
        groups[which(&xs)].members.push(facets.len() as u32);
        facets.push(vs);
    }
    (facets, groups)
}

/// The unit disk: the square [-1, 1]^2 triangulated n x n, mapped onto the disk (the square's
/// boundary onto the circle). Groups: "disk" (cells), "upper" and "lower" (the circle, y >= 0
/// and y < 0 by the facet's midpoint).
pub fn disk(n: usize) -> Mesh {
    let sq = unit_square(n);
    let coords: Vec<[f64; 3]> = sq
        .coords
        .iter()
        .map(|c| {
            let (x, y) = (2.0 * c[0] - 1.0, 2.0 * c[1] - 1.0);
            [
                x * (1.0 - y * y / 2.0).sqrt(),
                y * (1.0 - x * x / 2.0).sqrt(),
                0.0,
            ]
        })
        .collect();
    let cells: Vec<u32> = sq.cells.clone();
    let (facets, mut groups) = tag_boundary(
        CellType::Triangle,
        &cells,
        &coords,
        &["upper", "lower"],
        |xs| usize::from(xs[0][1] + xs[1][1] < 0.0),
    );
    groups.insert(
        0,
        Group {
            name: "disk".into(),
            dim: 2,
            tag: 1,
            members: (0..cells.len() as u32 / 3).collect(),
        },
    );
    Mesh {
        coords,
        cell_type: CellType::Triangle,
        cells,
        facets,
        groups,
    }
}

/// The L-shape [0, 2]^2 minus (1, 2]^2 in quadrilaterals of side 1/n. Groups: "domain",
/// "left" (x = 0) and "rest" (the other boundary facets).
pub fn lshape(n: usize) -> Mesh {
    let m = 2 * n + 1;
    let id = |i: usize, j: usize| (j * m + i) as u32;
    let coords: Vec<[f64; 3]> = (0..m * m)
        .map(|v| [(v % m) as f64 / n as f64, (v / m) as f64 / n as f64, 0.0])
        .collect();
    let mut cells = Vec::new();
    for j in 0..2 * n {
        for i in 0..2 * n {
            if i >= n && j >= n {
                continue;
            }
            cells.extend([id(i, j), id(i + 1, j), id(i + 1, j + 1), id(i, j + 1)]);
        }
    }
    // Drop the vertices of the removed quadrant (renumbering the rest).
    let used: BTreeSet<u32> = cells.iter().copied().collect();
    let renum: BTreeMap<u32, u32> = used
        .iter()
        .enumerate()
        .map(|(k, &v)| (v, k as u32))
        .collect();
    let coords: Vec<[f64; 3]> = used.iter().map(|&v| coords[v as usize]).collect();
    let cells: Vec<u32> = cells.iter().map(|v| renum[v]).collect();
    let (facets, mut groups) = tag_boundary(
        CellType::Quadrilateral,
        &cells,
        &coords,
        &["left", "rest"],
        |xs| usize::from(!(xs[0][0] == 0.0 && xs[1][0] == 0.0)),
    );
    groups.insert(
        0,
        Group {
            name: "domain".into(),
            dim: 2,
            tag: 1,
            members: (0..cells.len() as u32 / 4).collect(),
        },
    );
    Mesh {
        coords,
        cell_type: CellType::Quadrilateral,
        cells,
        facets,
        groups,
    }
}

/// The unit cube of tetrahedra. Groups: "cube", "bottom" (z = 0) and "sides" (the rest of the
/// boundary).
pub fn cube(n: usize) -> Mesh {
    let Mesh { coords, cells, .. } = unit_cube_tets(n);
    let (facets, mut groups) = tag_boundary(
        CellType::Tetrahedron,
        &cells,
        &coords,
        &["bottom", "sides"],
        |xs| usize::from(!xs.iter().all(|x| x[2] == 0.0)),
    );
    groups.insert(
        0,
        Group {
            name: "cube".into(),
            dim: 3,
            tag: 1,
            members: (0..cells.len() as u32 / 4).collect(),
        },
    );
    Mesh {
        coords,
        cell_type: CellType::Tetrahedron,
        cells,
        facets,
        groups,
    }
}
