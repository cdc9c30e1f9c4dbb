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
    ///
    /// None if `c` is not a cell of the mesh or names a vertex the mesh does not have.
    pub fn signed_measure(&self, c: usize) -> Option<f64> {
        let n = self.cell_type.vertices();
        let cell = self.cells.get(c * n..(c + 1) * n)?;
        let origin = *self.coords.get(*cell.first()? as usize)?;
        // Relative to vertex 0: far from the origin, absolute products lose the digits.
        let x = cell
            .iter()
            .map(|&v| self.coords.get(v as usize).map(|&p| sub(p, origin)))
            .collect::<Option<Vec<[f64; 3]>>>()?;
        Some(match self.cell_type {
            CellType::Triangle | CellType::Quadrilateral => {
                // The shoelace formula.
                (0..n)
                    .map(|i| x[i][0] * x[(i + 1) % n][1] - x[(i + 1) % n][0] * x[i][1])
                    .sum::<f64>()
                    / 2.0
            }
            CellType::Tetrahedron => det3(sub(x[1], x[0]), sub(x[2], x[0]), sub(x[3], x[0])) / 6.0,
            CellType::Hexahedron => hex_volume(&x),
        })
    }

    /// Turns every negatively oriented cell (see [`Mesh::signed_measure`]) by reversing its
    /// vertex order (local vertices 1 and 2 of a triangle or tetrahedron swapped, a
    /// quadrilateral's 1 and 3, a hexahedron's two ends exchanged: 0-3 with 4-7), and returns
    /// the cells it turned, ascending. Facet vertex lists and groups are unchanged (a facet is
    /// found by its vertex set). A cell naming a vertex the mesh does not have, with two
    /// vertices at one point, of measure 0 (its vertices on one line in x and y, or on one
    /// plane), or with a coordinate that is not finite, is an error naming it.
    pub fn orient(&mut self) -> Result<Vec<u32>, MeshError> {
        let nv = self.cell_type.vertices();
        if !self.cells.len().is_multiple_of(nv) {
            return Err(MeshError::new(format!(
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
                return Err(MeshError::new(format!(
                    "cell {c} ({} {cell:?}) names vertex {v}, but the mesh has {} vertices",
                    self.cell_type.name(),
                    self.nvertices()
                )));
            }
            let m = self.signed_measure(c).unwrap_or(f64::NAN);
            let what = || format!("cell {c} ({} {cell:?})", self.cell_type.name());
            let d = self.dim();
            let x: Vec<[f64; 3]> = cell.iter().map(|&v| self.coords[v as usize]).collect();
            if x.iter().flatten().any(|v| !v.is_finite()) {
                return Err(MeshError::new(format!(
                    "{} has a coordinate that is not finite: {x:?}",
                    what()
                )));
            }
            let dist = |a: [f64; 3], b: [f64; 3]| {
                let e = sub(a, b);
                e[..d].iter().map(|v| v * v).sum::<f64>().sqrt()
            };
            let size = x.iter().map(|&p| dist(p, x[0])).fold(0.0, f64::max);
            for i in 0..nv {
                for j in 0..i {
                    if dist(x[i], x[j]) <= 1e-12 * size {
                        return Err(MeshError::new(format!(
                            "{} has vertices {} and {} at one point {:?}: a degenerate cell has \
                             no normals (fix the mesh)",
                            what(),
                            cell[j],
                            cell[i],
                            &x[i][..d]
                        )));
                    }
                }
            }
            if m.abs() <= 1e-12 * size.powi(d as i32) {
                return Err(MeshError::new(format!(
                    "{} has {} {m:e}: its vertices lie on one {}; a degenerate cell has no \
                     normals (fix the mesh, e.g. with Gmsh's Mesh.Optimize)",
                    what(),
                    if d == 2 { "area" } else { "volume" },
                    if d == 2 {
                        "line in x and y (a 2-D mesh is read in the x-y plane)"
                    } else {
                        "plane"
                    },
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
            let before = m.signed_measure(0).unwrap();
            assert!(close(before, -measure), "{:?}: {before}", m.cell_type);
            let n = m.ncells() as u32;
            assert_eq!(m.orient().unwrap(), [0], "{:?}", m.cell_type);
            for c in 0..n as usize {
                let after = m.signed_measure(c).unwrap();
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
        assert!(
            e.message.contains("cell 0 (triangle [0, 1, 2]) has area"),
            "{e}"
        );
        let e = one(CellType::Triangle, line.clone(), vec![0, 1, 3])
            .orient()
            .unwrap_err();
        assert!(
            e.message
                .contains("names vertex 3, but the mesh has 3 vertices"),
            "{e}"
        );
        let mut twice = line.clone();
        twice[2] = [0.0, 0.0, 0.0];
        let e = one(CellType::Triangle, twice, vec![0, 1, 2])
            .orient()
            .unwrap_err();
        assert!(
            e.message
                .contains("has vertices 0 and 2 at one point [0.0, 0.0]"),
            "{e}"
        );
        let mut nan = line;
        nan[1][1] = f64::NAN;
        let e = one(CellType::Triangle, nan, vec![0, 1, 2])
            .orient()
            .unwrap_err();
        assert!(e.message.contains("a coordinate that is not finite"), "{e}");
        assert_eq!(
            one(CellType::Triangle, vec![], vec![0, 1, 2]).signed_measure(0),
            None
        );
    }

    /// A small cell far from the origin (UTM-like coordinates) keeps its area and orientation.
    #[test]
    fn far_from_the_origin() {
        let (x, h) = (4_194_304.0, 0.0078125);
        let mut m = one(
            CellType::Triangle,
            vec![[x, x, 0.0], [x, x + h, 0.0], [x + h, x, 0.0]],
            vec![0, 1, 2],
        );
        assert_eq!(m.signed_measure(0), Some(-h * h / 2.0));
        assert_eq!(m.orient().unwrap(), [0]);
    }
}
