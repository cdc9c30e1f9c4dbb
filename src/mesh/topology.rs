//! Topology derived from a cell -> vertex map, as a user would otherwise write it by hand: the
//! facets (edges in 2-D, faces in 3-D) with their two cells (one on the boundary) and their
//! vertices, and in 3-D the edges, in linear time: each facet is found once, from its first
//! cell, among the cells around its lowest vertex.

use super::{CellType, MeshError};

type Key = [u32; 4];

/// A facet's (or edge's) vertices, sorted, padded with `u32::MAX`: the same key from every cell.
fn key(vs: &[u32]) -> Key {
    let mut k = [u32::MAX; 4];
    k[..vs.len()].copy_from_slice(vs);
    k[..vs.len()].sort_unstable();
    k
}

/// Local facets of each cell type, in Gmsh's node numbering, oriented outward.
fn local_facets(t: CellType) -> &'static [&'static [usize]] {
    match t {
        CellType::Triangle => &[&[0, 1], &[1, 2], &[2, 0]],
        CellType::Quadrilateral => &[&[0, 1], &[1, 2], &[2, 3], &[3, 0]],
        CellType::Tetrahedron => &[&[0, 2, 1], &[0, 1, 3], &[0, 3, 2], &[1, 2, 3]],
        CellType::Hexahedron => &[
            &[0, 3, 2, 1],
            &[4, 5, 6, 7],
            &[0, 1, 5, 4],
            &[1, 2, 6, 5],
            &[2, 3, 7, 6],
            &[3, 0, 4, 7],
        ],
    }
}

/// Local edges of a 3-D cell type.
fn local_edges(t: CellType) -> &'static [[usize; 2]] {
    match t {
        CellType::Tetrahedron => &[[0, 1], [1, 2], [2, 0], [0, 3], [1, 3], [2, 3]],
        CellType::Hexahedron => &[
            [0, 1],
            [1, 2],
            [2, 3],
            [3, 0],
            [4, 5],
            [5, 6],
            [6, 7],
            [7, 4],
            [0, 4],
            [1, 5],
            [2, 6],
            [3, 7],
        ],
        _ => &[],
    }
}

/// Facets and edges of a mesh.
#[derive(Clone, Debug)]
pub struct Topology {
    /// Vertices per facet (2 in 2-D, 3 or 4 in 3-D).
    pub facet_arity: usize,
    /// Each facet's vertices, as the first cell that has it orders them (outward from it).
    pub facet_vertices: Vec<u32>,
    /// Each facet's cells: the first cell that has it, then the other (`u32::MAX` for a
    /// boundary facet).
    pub facet_cells: Vec<[u32; 2]>,
    /// In 3-D, each edge's two vertices (empty in 2-D, where the facets are the edges).
    pub edges: Vec<[u32; 2]>,
    cells: Vec<u32>,
    cell_type: CellType,
    /// Vertex v's cells are `incident[start[v]..start[v + 1]]`.
    start: Vec<u32>,
    incident: Vec<u32>,
    /// The facet of each (cell, local facet).
    cell_facet: Vec<u32>,
}

impl Topology {
    /// Derives facets (and 3-D edges) from `cells` (`cell_type.vertices()` per cell). A facet
    /// shared by more than two cells (a non-manifold mesh) is an error naming it; so are a cell
    /// list that is not whole cells and a cell with a vertex twice.
    ///
    /// Each facet is found from its first cell by scanning the cells around its lowest vertex
    /// (a vertex -> cells table built first): no global hash table, so the work stays in
    /// cache when the mesh is numbered with locality.
    pub fn new(cell_type: CellType, cells: &[u32]) -> Result<Topology, MeshError> {
        let nv = cell_type.vertices();
        let ncells = cells.len() / nv;
        let local = local_facets(cell_type);
        let nf = local.len();
        if !cells.len().is_multiple_of(nv) {
            return Err(MeshError::new(format!(
                "{} cell vertices are not whole {}s: a {} has {nv} vertices",
                cells.len(),
                cell_type.name(),
                cell_type.name()
            )));
        }
        // Facet and cell numbers are u32s, u32::MAX meaning none.
        if ncells
            .checked_mul(nf)
            .is_none_or(|n| n >= u32::MAX as usize)
        {
            return Err(MeshError::new(format!(
                "{ncells} cells: more facet slots than 32-bit facet numbers can count"
            )));
        }
        for (c, cell) in cells.chunks_exact(nv).enumerate() {
            if let Some(v) = (1..nv).find_map(|i| cell[..i].contains(&cell[i]).then_some(cell[i])) {
                return Err(MeshError::new(format!(
                    "cell {c} ({} {cell:?}) has vertex {v} twice",
                    cell_type.name()
                )));
            }
        }
        let facet_arity = local[0].len();
        let nverts = cells.iter().max().map_or(0, |&m| m as usize + 1);
        // Vertex -> incident cells, as offsets and a flat list.
        let mut start = vec![0u32; nverts + 1];
        for &v in cells {
            start[v as usize + 1] += 1;
        }
        for v in 0..nverts {
            start[v + 1] += start[v];
        }
        let mut fill = start.clone();
        let mut incident = vec![0u32; cells.len()];
        for (p, &v) in cells.iter().enumerate() {
            incident[fill[v as usize] as usize] = (p / nv) as u32;
            fill[v as usize] += 1;
        }
        let cell = |c: usize| &cells[c * nv..(c + 1) * nv];
        let mut cell_facet = vec![u32::MAX; ncells * nf];
        let mut facet_vertices = Vec::with_capacity(ncells * nf / 2 * facet_arity);
        let mut facet_cells: Vec<[u32; 2]> = Vec::with_capacity(ncells * nf / 2);
        let mut vs = [0u32; 4];
        for c in 0..ncells {
            for (l, f) in local.iter().enumerate() {
                if cell_facet[c * nf + l] != u32::MAX {
                    continue;
                }
                for (k, &i) in f.iter().enumerate() {
                    vs[k] = cell(c)[i];
                }
                let face = &vs[..facet_arity];
                let low = *face.iter().min().expect("a facet has vertices") as usize;
                let mut other: Option<(u32, usize)> = None;
                for &d in &incident[start[low] as usize..start[low + 1] as usize] {
                    if d as usize == c || !face.iter().all(|v| cell(d as usize).contains(v)) {
                        continue;
                    }
                    // The local facet of d with these vertices (none: d only touches them).
                    let k = key(face);
                    let Some(ld) = local.iter().position(|g| {
                        let mut w = [0u32; 4];
                        for (j, &i) in g.iter().enumerate() {
                            w[j] = cell(d as usize)[i];
                        }
                        key(&w[..facet_arity]) == k
                    }) else {
                        continue;
                    };
                    if let Some((e, _)) = other {
                        return Err(MeshError::new(format!(
                            "facet with vertices {face:?} belongs to cells {c}, {e} and {d}: \
                             the mesh is not a manifold (each facet may join at most two cells)"
                        )));
                    }
                    other = Some((d, ld));
                }
                let id = facet_cells.len() as u32;
                facet_vertices.extend_from_slice(face);
                facet_cells.push([c as u32, other.map_or(u32::MAX, |(d, _)| d)]);
                cell_facet[c * nf + l] = id;
                if let Some((d, ld)) = other {
                    cell_facet[d as usize * nf + ld] = id;
                }
            }
        }
        // 3-D edges: per vertex, the higher ends of the edges of its cells.
        let mut edges = Vec::new();
        let le = local_edges(cell_type);
        if !le.is_empty() {
            let mut ends = Vec::new();
            for v in 0..nverts as u32 {
                ends.clear();
                for &d in &incident[start[v as usize] as usize..start[v as usize + 1] as usize] {
                    let cd = cell(d as usize);
                    for e in le {
                        let (a, b) = (cd[e[0]], cd[e[1]]);
                        if a == v && b > v {
                            ends.push(b);
                        } else if b == v && a > v {
                            ends.push(a);
                        }
                    }
                }
                ends.sort_unstable();
                ends.dedup();
                edges.extend(ends.iter().map(|&w| [v, w]));
            }
        }
        Ok(Topology {
            facet_arity,
            facet_vertices,
            facet_cells,
            edges,
            cells: cells.to_vec(),
            cell_type,
            start,
            incident,
            cell_facet,
        })
    }
    /// Number of facets.
    pub fn nfacets(&self) -> usize {
        self.facet_cells.len()
    }
    /// Facet `f`'s vertices.
    pub fn facet(&self, f: usize) -> &[u32] {
        &self.facet_vertices[f * self.facet_arity..(f + 1) * self.facet_arity]
    }
    /// Whether facet `f` is on the boundary (one cell).
    pub fn is_boundary(&self, f: usize) -> bool {
        self.facet_cells[f][1] == u32::MAX
    }
    /// The facets on the boundary, ascending.
    pub fn boundary(&self) -> Vec<u32> {
        (0..self.nfacets() as u32)
            .filter(|&f| self.is_boundary(f as usize))
            .collect()
    }
    /// The facet with these vertices (in any order), if the mesh has it.
    pub fn facet_of(&self, vertices: &[u32]) -> Option<u32> {
        if vertices.len() != self.facet_arity {
            return None;
        }
        let (nv, local) = (self.cell_type.vertices(), local_facets(self.cell_type));
        let k = key(vertices);
        let low = *vertices.iter().min()? as usize;
        let cells = self
            .incident
            .get(*self.start.get(low)? as usize..*self.start.get(low + 1)? as usize)?;
        for &d in cells {
            let cell = &self.cells[d as usize * nv..(d as usize + 1) * nv];
            for (l, g) in local.iter().enumerate() {
                let w: Vec<u32> = g.iter().map(|&i| cell[i]).collect();
                if key(&w) == k {
                    return Some(self.cell_facet[d as usize * local.len() + l]);
                }
            }
        }
        None
    }
}

/// A mesh as parloop data, in OP2's layout: interior facets (two cells) and boundary facets
/// (one cell) are separate sets, as Airfoil's edges and boundary edges are.
///
/// The cells are positively oriented first ([`Mesh::orient`](super::Mesh::orient): counter-clockwise in 2-D,
/// positive volume in 3-D; `turned` lists the cells whose vertex order was reversed), so the
/// facet convention holds on every mesh: an interior facet's vertices are ordered outward from
/// its first cell (its normal points from `facet_cells` index 0 to index 1), and a boundary
/// facet's outward from its cell.
pub struct MeshData {
    /// The mesh's vertices.
    pub vertices: crate::Set,
    /// Its cells.
    pub cells: crate::Set,
    /// Facets between two cells.
    pub facets: crate::Set,
    /// Facets on the boundary.
    pub boundary: crate::Set,
    /// Cell -> its vertices (Gmsh's order, reversed for the cells in `turned`).
    pub cell_vertices: crate::Map,
    /// Interior facet -> its two cells (the normal points from the first to the second).
    pub facet_cells: crate::Map,
    /// Interior facet -> its vertices (ordered outward from its first cell).
    pub facet_vertices: crate::Map,
    /// Boundary facet -> its cell.
    pub boundary_cell: crate::Map,
    /// Boundary facet -> its vertices (ordered outward).
    pub boundary_vertices: crate::Map,
    /// Vertex coordinates (dim: the mesh's dimension), in f32.
    pub coords: crate::Dat<f32>,
    /// Physical groups: a Subset of the cells, the interior facets or the boundary facets,
    /// named as in the file (a group of facets on both sides of the boundary gives two).
    pub groups: Vec<crate::Subset>,
    /// The cells whose vertex order was reversed to orient them, ascending (in the mesh's
    /// numbering; empty for a mesh read from a file, oriented when it was written).
    pub turned: Vec<u32>,
    /// The whole mesh's facets and edges (of the oriented cells); `interior` and
    /// `boundary_facets` give each set's element as a facet of it, in the mesh's numbering.
    /// None for a mesh read from a file in blocks ([`MeshData::read`]): no rank holds it.
    pub topology: Option<Topology>,
    /// Interior facet k is `topology`'s facet `interior[k]` (empty without `topology`).
    pub interior: Vec<u32>,
    /// Boundary facet k is `topology`'s facet `boundary_facets[k]` (empty without
    /// `topology`).
    pub boundary_facets: Vec<u32>,
    /// The cells' type.
    pub cell_type: CellType,
    /// This rank's vertex coordinates (owned and halo, in local order) in f64, for geometry
    /// and values in either precision.
    pub(crate) coords64: Vec<[f64; 3]>,
}

impl MeshData {
    /// The Subset named `name` (the first, if the group spans interior and boundary facets).
    /// A name the mesh lacks is an error listing the groups it has (the same on every rank).
    pub fn group(&self, name: &str) -> crate::Result<&crate::Subset> {
        self.groups.iter().find(|s| s.name() == name).ok_or_else(|| {
            let have: Vec<String> = self
                .groups
                .iter()
                .map(|g| format!("`{}` ({})", g.name(), g.set().name()))
                .collect();
            crate::Error::Usage(format!(
                "the mesh has no group `{name}`; its groups: {}",
                if have.is_empty() {
                    "none (Gmsh writes physical groups only when the .geo or the API names them)"
                        .to_string()
                } else {
                    have.join(", ")
                }
            ))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::{CellType, Topology};

    /// Random cell lists (any length, few vertices, so facets are shared by many cells, cells
    /// degenerate) and facet queries: an error or a topology, never a panic.
    #[test]
    fn random_cell_lists_never_panic() {
        let types = [
            CellType::Triangle,
            CellType::Quadrilateral,
            CellType::Tetrahedron,
            CellType::Hexahedron,
        ];
        for seed in 0..2000u64 {
            let mut rng = crate::util::Rng::new(seed);
            let t = types[rng.below(4)];
            let nv = 1 + rng.below(24);
            let len = rng.below(8 * t.vertices() + 2);
            let cells: Vec<u32> = (0..len).map(|_| rng.below(nv) as u32).collect();
            let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                if let Ok(top) = Topology::new(t, &cells) {
                    for _ in 0..8 {
                        let q: Vec<u32> = (0..rng.below(5))
                            .map(|_| rng.below(nv + 2) as u32)
                            .collect();
                        let _ = top.facet_of(&q);
                    }
                }
            }));
            assert!(r.is_ok(), "seed {seed}: {t:?} {cells:?}");
        }
    }
}
