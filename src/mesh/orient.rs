//! Cell orientation: the convention every facet normal rests on. A cell is positively
//! oriented when its signed measure is positive: counter-clockwise in x and y in 2-D, a
//! right-handed vertex order (positive Jacobian) in 3-D. Then each cell's local facets, as
//! [`super::topology`] lists them, are ordered outward from it, so a facet's normal points from
//! its first cell to its second, and outward on the boundary.

use super::{CellType, Mesh, MeshError};

/// Gmsh's hexahedron vertices on the reference cube [-1, 1]^3.
const HEX_REF: [[f64; 3]; 8] = [
    [-1.0, -1.0, -1.0],
    [1.0, -1.0, -1.0],
    [1.0, 1.0, -1.0],
    [-1.0, 1.0, -1.0],
    [-1.0, -1.0, 1.0],
    [1.0, -1.0, 1.0],
    [1.0, 1.0, 1.0],
    [-1.0, 1.0, 1.0],
];

fn sub(a: [f64; 3], b: [f64; 3]) -> [f64; 3] {
    [a[0] - b[0], a[1] - b[1], a[2] - b[2]]
}

fn det3(a: [f64; 3], b: [f64; 3], c: [f64; 3]) -> f64 {
    a[0] * (b[1] * c[2] - b[2] * c[1]) - a[1] * (b[0] * c[2] - b[2] * c[0])
        + a[2] * (b[0] * c[1] - b[1] * c[0])
}

/// The signed volume of a trilinear hexahedron: its Jacobian's determinant summed over the
/// 2 x 2 x 2 Gauss points (exact: the determinant has degree at most 2 in each variable).
fn hex_volume(x: &[[f64; 3]]) -> f64 {
    let g = 1.0 / 3f64.sqrt();
    let mut vol = 0.0;
    for q in HEX_REF {
        let p = q.map(|s| g * s);
        let mut jac = [[0.0; 3]; 3]; // jac[d]: dx/d(reference coordinate d)
        for (r, xv) in HEX_REF.iter().zip(x) {
            let f = [0, 1, 2].map(|d| 1.0 + p[d] * r[d]);
            let dn = [
                r[0] * f[1] * f[2] / 8.0,
                r[1] * f[0] * f[2] / 8.0,
                r[2] * f[0] * f[1] / 8.0,
            ];
            for d in 0..3 {
                for k in 0..3 {
                    jac[d][k] += xv[k] * dn[d];
                }
            }
        }
        vol += det3(jac[0], jac[1], jac[2]);
    }
    vol
}

impl Mesh {
    /// Cell `c`'s signed measure in f64: its area in x and y (2-D) or its volume (3-D),
    /// positive when the cell is positively oriented. Exact for straight-sided cells and
    /// trilinear hexahedra.
    pub fn signed_measure(&self, c: usize) -> f64 {
        let x: Vec<[f64; 3]> = self
            .cell(c)
            .iter()
            .map(|&v| self.coords[v as usize])
            .collect();
        match self.cell_type {
            CellType::Triangle | CellType::Quadrilateral => {
                // The shoelace formula.
                let n = x.len();
                (0..n)
                    .map(|i| x[i][0] * x[(i + 1) % n][1] - x[(i + 1) % n][0] * x[i][1])
                    .sum::<f64>()
                    / 2.0
            }
            CellType::Tetrahedron => det3(sub(x[1], x[0]), sub(x[2], x[0]), sub(x[3], x[0])) / 6.0,
            CellType::Hexahedron => hex_volume(&x),
        }
    }

    /// Turns every negatively oriented cell (see [`Mesh::signed_measure`]) by reversing its
    /// vertex order (a triangle's or tetrahedron's last two vertices swapped, a
    /// quadrilateral's traversal reversed, a hexahedron's two ends exchanged), and returns the
    /// cells it turned, ascending. Facet vertex lists and groups are unchanged (a facet is
    /// found by its vertex set). A cell naming a vertex the mesh does not have, or of measure
    /// 0 (its vertices on one line or plane), is an error naming it.
    pub fn orient(&mut self) -> Result<Vec<u32>, MeshError> {
        let nv = self.cell_type.vertices();
        if !self.cells.len().is_multiple_of(nv) {
            return Err(MeshError(format!(
                "{} cell vertices are not whole {}s: a {} has {nv} vertices",
                self.cells.len(),
                self.cell_type.name(),
                self.cell_type.name()
            )));
        }
        let mut turned = Vec::new();
        for c in 0..self.ncells() {
            let cell = self.cell(c);
            if let Some(&v) = cell.iter().find(|&&v| v as usize >= self.nvertices()) {
                return Err(MeshError(format!(
                    "cell {c} ({} {cell:?}) names vertex {v}, but the mesh has {} vertices",
                    self.cell_type.name(),
                    self.nvertices()
                )));
            }
            let m = self.signed_measure(c);
            // Measure 0 relative to the cell's size: its vertices are on one line or plane.
            let size = cell
                .iter()
                .map(|&v| {
                    let d = sub(self.coords[v as usize], self.coords[cell[0] as usize]);
                    d.iter().map(|x| x * x).sum::<f64>().sqrt()
                })
                .fold(0.0, f64::max);
            if !m.is_finite() || m.abs() <= 1e-12 * size.powi(self.dim() as i32) {
                return Err(MeshError(format!(
                    "cell {c} ({} {cell:?}) has {} {m:e}: its vertices lie on one {}; \
                     a degenerate cell has no normals (fix the mesh, e.g. Gmsh's \
                     Mesh.Optimize)",
                    self.cell_type.name(),
                    if self.dim() == 2 { "area" } else { "volume" },
                    if self.dim() == 2 { "line" } else { "plane" },
                )));
            }
            if m < 0.0 {
                let cell = &mut self.cells[c * nv..(c + 1) * nv];
                match self.cell_type {
                    CellType::Triangle => cell.swap(1, 2),
                    CellType::Tetrahedron => cell.swap(1, 2),
                    CellType::Quadrilateral => cell.swap(1, 3),
                    CellType::Hexahedron => {
                        let (lo, hi) = cell.split_at_mut(4);
                        lo.swap_with_slice(hi);
                    }
                }
                turned.push(c as u32);
            }
        }
        Ok(turned)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one(cell_type: CellType, coords: Vec<[f64; 3]>, cells: Vec<u32>) -> Mesh {
        Mesh {
            coords,
            cell_type,
            cells,
            facets: Vec::new(),
            groups: Vec::new(),
        }
    }

    const CUBE: [[f64; 3]; 8] = [
        [0.0, 0.0, 0.0],
        [2.0, 0.0, 0.0],
        [2.0, 1.0, 0.0],
        [0.0, 1.0, 0.0],
        [0.0, 0.0, 3.0],
        [2.0, 0.0, 3.0],
        [2.0, 1.0, 3.0],
        [0.0, 1.0, 3.0],
    ];

    #[test]
    fn each_cell_type_is_turned_to_positive_measure() {
        let sq = vec![
            [0.0, 0.0, 0.0],
            [2.0, 0.0, 0.0],
            [2.0, 1.0, 0.0],
            [0.0, 1.0, 0.0],
        ];
        let cases = [
            (
                one(CellType::Triangle, sq.clone(), vec![0, 2, 1, 0, 1, 2]),
                1.0,
            ),
            (
                one(
                    CellType::Quadrilateral,
                    sq.clone(),
                    vec![0, 3, 2, 1, 0, 1, 2, 3],
                ),
                2.0,
            ),
            (
                one(
                    CellType::Tetrahedron,
                    CUBE.to_vec(),
                    vec![0, 3, 1, 4, 0, 1, 3, 4],
                ),
                1.0,
            ),
            (
                one(
                    CellType::Hexahedron,
                    CUBE.to_vec(),
                    vec![4, 5, 6, 7, 0, 1, 2, 3],
                ),
                6.0,
            ),
        ];
        for (mut m, measure) in cases {
            let close = |a: f64, b: f64| (a - b).abs() < 1e-12 * b.abs();
            let before = m.signed_measure(0);
            assert!(close(before, -measure), "{:?}: {before}", m.cell_type);
            let n = m.ncells() as u32;
            assert_eq!(m.orient().unwrap(), [0], "{:?}", m.cell_type);
            for c in 0..n as usize {
                let after = m.signed_measure(c);
                assert!(close(after, measure), "{:?} cell {c}: {after}", m.cell_type);
            }
        }
    }

    #[test]
    fn degenerate_cells_and_missing_vertices_are_refused() {
        let line = vec![[0.0, 0.0, 0.0], [1.0, 1.0, 0.0], [2.0, 2.0, 0.0]];
        let e = one(CellType::Triangle, line.clone(), vec![0, 1, 2])
            .orient()
            .unwrap_err();
        assert!(e.0.contains("cell 0 (triangle [0, 1, 2]) has area"), "{e}");
        let e = one(CellType::Triangle, line, vec![0, 1, 3])
            .orient()
            .unwrap_err();
        assert!(
            e.0.contains("names vertex 3, but the mesh has 3 vertices"),
            "{e}"
        );
    }
}
