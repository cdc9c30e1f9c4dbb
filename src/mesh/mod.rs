//! Meshes.
//!
//! The neutral [`Mesh`] (vertices, cells of one first-order [`CellType`], the facets
//! of physical groups, the [`Group`]s) that every reader and generator produces and everything
//! downstream takes; its generators (the unit square of Firedrake's UnitSquareMesh, a cube of
//! tetrahedra); the Gmsh reader and writer ([`gmsh`]); derived facets and edges, and the mesh
//! as parloop data ([`topology`]); cell and facet geometry by par_loops ([`geometry`]);
//! locality renumbering ([`renumber`]); VTK output for ParaView; and OP2's Airfoil grid ([`airfoil`]: the NACA0012 C-grid and the `new_grid.dat`
//! format, its own structure). One error type, [`MeshError`].

pub mod airfoil;
pub mod geometry;
pub mod gmsh;
pub(crate) mod mesh_data;
mod neutral;
mod orient;
#[cfg(not(target_arch = "wasm32"))]
pub mod pvtu;
pub mod renumber;
pub(crate) mod spline;
pub mod topology;
#[cfg(not(target_arch = "wasm32"))]
pub mod vtk;

pub use neutral::{CellType, Group, Mesh};

/// Why a mesh could not be read or used: what is wrong and where (a Gmsh file's line or byte
/// offset, an OP2 grid file's line, a cell or facet of the topology), and the file it came
/// from when there was one.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct MeshError {
    /// The file read, when the mesh came from one (`gmsh::read_file`).
    pub path: Option<std::path::PathBuf>,
    /// What is wrong, and where.
    pub message: String,
}

impl MeshError {
    /// An error with this message and no file.
    pub fn new(message: impl Into<String>) -> MeshError {
        MeshError {
            path: None,
            message: message.into(),
        }
    }
    /// The same error, from the file `path`.
    pub fn in_file(self, path: &std::path::Path) -> MeshError {
        MeshError {
            path: Some(path.to_path_buf()),
            ..self
        }
    }
}

/// A mesh error in a function returning [`crate::Result`], with the same message:
/// [`crate::Error::File`] when it came from a file, [`crate::Error::Data`] otherwise.
impl From<MeshError> for crate::Error {
    fn from(e: MeshError) -> crate::Error {
        match e.path {
            Some(path) => crate::Error::File {
                path,
                message: e.message,
            },
            None => crate::Error::Data(e.message),
        }
    }
}

/// Firedrake's `UnitSquareMesh(n, n)`: (n + 1)^2 vertices on a uniform grid, each of the n^2
/// squares split into two triangles along the diagonal from its lower left to its upper right
/// corner. Vertex (i, j) (i along x) has index j (n + 1) + i.
pub fn unit_square(n: usize) -> Mesh {
    let n = n.max(1);
    let v = |i: usize, j: usize| (j * (n + 1) + i) as u32;
    let coords = (0..=n)
        .flat_map(|j| (0..=n).map(move |i| [i as f64 / n as f64, j as f64 / n as f64, 0.0]))
        .collect();
    let mut cells = Vec::with_capacity(6 * n * n);
    for j in 0..n {
        for i in 0..n {
            cells.extend([v(i, j), v(i + 1, j), v(i + 1, j + 1)]);
            cells.extend([v(i, j), v(i + 1, j + 1), v(i, j + 1)]);
        }
    }
    Mesh {
        coords,
        cell_type: CellType::Triangle,
        cells,
        facets: Vec::new(),
        groups: Vec::new(),
    }
}

/// The unit cube as `n`^3 small cubes of 6 tetrahedra each (Kuhn's triangulation: conforming
/// across cubes), with no groups: a 3-D test and benchmark mesh.
pub fn unit_cube_tets(n: usize) -> Mesh {
    let m = n + 1;
    let id = |i: usize, j: usize, k: usize| ((k * m + j) * m + i) as u32;
    let coords: Vec<[f64; 3]> = (0..m * m * m)
        .map(|v| {
            let (i, j, k) = (v % m, (v / m) % m, v / (m * m));
            [
                i as f64 / n as f64,
                j as f64 / n as f64,
                k as f64 / n as f64,
            ]
        })
        .collect();
    let mut cells = Vec::with_capacity(24 * n * n * n);
    let perms = [
        [0, 1, 2],
        [0, 2, 1],
        [1, 0, 2],
        [1, 2, 0],
        [2, 0, 1],
        [2, 1, 0],
    ];
    for k in 0..n {
        for j in 0..n {
            for i in 0..n {
                for p in perms {
                    // The path from (i, j, k) to (i + 1, j + 1, k + 1) along the axes in order p.
                    let mut at = [i, j, k];
                    cells.push(id(at[0], at[1], at[2]));
                    for axis in p {
                        at[axis] += 1;
                        cells.push(id(at[0], at[1], at[2]));
                    }
                }
            }
        }
    }
    Mesh {
        coords,
        cell_type: CellType::Tetrahedron,
        cells,
        facets: Vec::new(),
        groups: Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unit_square_counts_area_and_orientation() {
        let m = unit_square(100);
        assert_eq!(m.nvertices(), 101 * 101);
        assert_eq!(m.ncells(), 20_000);
        let mut total = 0.0;
        assert_eq!(m.cell_type, CellType::Triangle);
        assert!(m.coords.iter().all(|c| c[2] == 0.0));
        for c in m.cells.chunks_exact(3) {
            let [a, b, d] = [c[0], c[1], c[2]].map(|i| m.coords[i as usize]);
            let det = (b[0] - a[0]) * (d[1] - a[1]) - (b[1] - a[1]) * (d[0] - a[0]);
            assert!(det > 0.0, "counter-clockwise");
            total += det / 2.0;
        }
        assert!((total - 1.0).abs() < 1e-12);
    }
}
