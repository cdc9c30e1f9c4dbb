//! Locality renumbering of a whole Gmsh mesh before it becomes parloop data: vertices in the
//! order of a Z-order (Morton) curve through their coordinates, cells in the order of the curve
//! through their centroids ([`crate::mesh::renumber`] renumbers Sets already declared).

use super::GmshMesh;
use crate::mesh::renumber::Renumbering;

impl GmshMesh {
    /// The mesh renumbered for locality: vertices along a Z-order curve, cells along the curve
    /// of their centroids. Returns it and, for each new vertex, its index in `self` (to map
    /// results back). Groups and facets follow their cells and vertices.
    pub fn renumbered(&self) -> (GmshMesh, Vec<u32>) {
        let vertex_order = Renumbering::z_order(&self.coords).order().to_vec();
        let n = self.cell_type.vertices() as f64;
        let centroids: Vec<[f64; 3]> = (0..self.ncells())
            .map(|c| {
                let mut s = [0.0; 3];
                for &v in self.cell(c) {
                    for a in 0..3 {
                        s[a] += self.coords[v as usize][a] / n;
                    }
                }
                s
            })
            .collect();
        let cell_order = Renumbering::z_order(&centroids).order().to_vec();
        (self.permuted(&vertex_order, &cell_order), vertex_order)
    }

    /// The mesh with vertices and cells in a random order (seeded): what a badly numbered mesh
    /// looks like, for measuring what renumbering buys. Returns it and each new vertex's index
    /// in `self`.
    pub fn shuffled(&self, seed: u64) -> (GmshMesh, Vec<u32>) {
        let mut rng = crate::util::Rng::new(seed);
        let mut shuffle = |n: usize| {
            let mut p: Vec<u32> = (0..n as u32).collect();
            for i in (1..n).rev() {
                p.swap(i, rng.below(i + 1));
            }
            p
        };
        let vertex_order = shuffle(self.nvertices());
        let cell_order = shuffle(self.ncells());
        (self.permuted(&vertex_order, &cell_order), vertex_order)
    }

    /// Vertex k of the result is `self`'s vertex `vertex_order[k]`, cell k its cell
    /// `cell_order[k]`.
    fn permuted(&self, vertex_order: &[u32], cell_order: &[u32]) -> GmshMesh {
        let mut new_vertex = vec![0u32; vertex_order.len()];
        for (k, &v) in vertex_order.iter().enumerate() {
            new_vertex[v as usize] = k as u32;
        }
        let mut new_cell = vec![0u32; cell_order.len()];
        for (k, &c) in cell_order.iter().enumerate() {
            new_cell[c as usize] = k as u32;
        }
        let cells = cell_order
            .iter()
            .flat_map(|&c| {
                self.cell(c as usize)
                    .iter()
                    .map(|&v| new_vertex[v as usize])
            })
            .collect();
        let facets = self
            .facets
            .iter()
            .map(|f| f.iter().map(|&v| new_vertex[v as usize]).collect())
            .collect();
        let groups = self
            .groups
            .iter()
            .map(|g| {
                let mut g = g.clone();
                if g.dim == self.dim() {
                    g.members = g.members.iter().map(|&c| new_cell[c as usize]).collect();
                    g.members.sort_unstable();
                }
                g
            })
            .collect();
        GmshMesh {
            coords: vertex_order
                .iter()
                .map(|&v| self.coords[v as usize])
                .collect(),
            cell_type: self.cell_type,
            cells,
            facets,
            groups,
        }
    }
}
