//! Locality renumbering, as OP2's renumbering step provides: vertices in the order of a
//! Z-order (Morton) curve through their coordinates, cells in the order of the curve through
//! their centroids, so that what a loop reads through a map sits close in memory. Gmsh numbers
//! unstructured meshes in the order its mesher made them.

use super::GmshMesh;

/// Morton codes of points: coordinates scaled to the bounding box, 21 bits per axis,
/// interleaved.
fn morton(points: &[[f64; 3]]) -> Vec<u64> {
    let mut lo = [f64::INFINITY; 3];
    let mut hi = [f64::NEG_INFINITY; 3];
    for p in points {
        for a in 0..3 {
            lo[a] = lo[a].min(p[a]);
            hi[a] = hi[a].max(p[a]);
        }
    }
    let spread = |mut v: u64| {
        // Spread 21 bits so that two zeros follow each.
        v &= 0x1f_ffff;
        v = (v | v << 32) & 0x1f_0000_0000_ffff;
        v = (v | v << 16) & 0x1f_0000_ff00_00ff;
        v = (v | v << 8) & 0x100f_00f0_0f00_f00f;
        v = (v | v << 4) & 0x10c3_0c30_c30c_30c3;
        (v | v << 2) & 0x1249_2492_4924_9249
    };
    points
        .iter()
        .map(|p| {
            let q = |a: usize| {
                let w = hi[a] - lo[a];
                if w > 0.0 {
                    ((p[a] - lo[a]) / w * ((1 << 21) - 1) as f64) as u64
                } else {
                    0
                }
            };
            spread(q(0)) | spread(q(1)) << 1 | spread(q(2)) << 2
        })
        .collect()
}

/// Indices 0..codes.len() ordered by code (stable).
fn order_by(codes: &[u64]) -> Vec<u32> {
    let mut order: Vec<u32> = (0..codes.len() as u32).collect();
    order.sort_by_key(|&i| codes[i as usize]);
    order
}

impl GmshMesh {
    /// The mesh renumbered for locality: vertices along a Z-order curve, cells along the curve
    /// of their centroids. Returns it and, for each new vertex, its index in `self` (to map
    /// results back). Groups and facets follow their cells and vertices.
    pub fn renumbered(&self) -> (GmshMesh, Vec<u32>) {
        let vertex_order = order_by(&morton(&self.coords));
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
        let cell_order = order_by(&morton(&centroids));
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
