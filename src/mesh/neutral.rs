//! The neutral mesh: what every reader and generator produces and every consumer (topology,
//! parloop data, renumbering, the Gmsh writer, VTK output, the wave) takes.

/// A first-order cell type parloop reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CellType {
    /// 3-node triangle (Gmsh type 2).
    Triangle,
    /// 4-node quadrilateral (Gmsh type 3).
    Quadrilateral,
    /// 4-node tetrahedron (Gmsh type 4).
    Tetrahedron,
    /// 8-node hexahedron (Gmsh type 5).
    Hexahedron,
}

impl CellType {
    /// Vertices per cell.
    pub fn vertices(self) -> usize {
        match self {
            CellType::Triangle => 3,
            CellType::Quadrilateral | CellType::Tetrahedron => 4,
            CellType::Hexahedron => 8,
        }
    }
    /// The cell's dimension (2 or 3).
    pub fn dim(self) -> usize {
        match self {
            CellType::Triangle | CellType::Quadrilateral => 2,
            CellType::Tetrahedron | CellType::Hexahedron => 3,
        }
    }
    /// Gmsh's element type number.
    pub fn gmsh_type(self) -> u32 {
        match self {
            CellType::Triangle => 2,
            CellType::Quadrilateral => 3,
            CellType::Tetrahedron => 4,
            CellType::Hexahedron => 5,
        }
    }
    /// The name ParaView and Gmsh users know.
    pub fn name(self) -> &'static str {
        match self {
            CellType::Triangle => "triangle",
            CellType::Quadrilateral => "quadrilateral",
            CellType::Tetrahedron => "tetrahedron",
            CellType::Hexahedron => "hexahedron",
        }
    }
}

/// A physical group: its name (or `physical <tag>` when the file names none), dimension, tag,
/// and the indices of its members (cells for a group of the cells' dimension, else entries of
/// [`Mesh::facets`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Group {
    /// The group's name (from a Gmsh file's `$PhysicalNames`).
    pub name: String,
    /// The dimension of its elements.
    pub dim: usize,
    /// The group's tag (Gmsh's physical tag).
    pub tag: i32,
    /// Member indices, ascending.
    pub members: Vec<u32>,
}

/// A mesh on the host: vertices (0-based; a Gmsh file's in its node order, whatever its node
/// tags), cells of one first-order type, the lower-dimensional elements that belong to
/// physical groups (as vertex lists), and the physical groups.
#[derive(Clone, Debug, PartialEq)]
pub struct Mesh {
    /// Vertex coordinates (z is 0 in a 2-D mesh).
    pub coords: Vec<[f64; 3]>,
    /// The cells' type.
    pub cell_type: CellType,
    /// Each cell's vertices, `cell_type.vertices()` per cell, in Gmsh's (and VTK's) order.
    pub cells: Vec<u32>,
    /// Vertices of each tagged facet element (lines in 2-D, triangles or quadrilaterals in
    /// 3-D), one Vec per element.
    pub facets: Vec<Vec<u32>>,
    /// Physical groups of cells (dimension of the cells) and of facets.
    pub groups: Vec<Group>,
}

impl Mesh {
    /// Number of vertices.
    pub fn nvertices(&self) -> usize {
        self.coords.len()
    }
    /// Number of cells.
    pub fn ncells(&self) -> usize {
        self.cells.len() / self.cell_type.vertices()
    }
    /// The mesh's dimension (its cells').
    pub fn dim(&self) -> usize {
        self.cell_type.dim()
    }
    /// Cell `c`'s vertices.
    pub fn cell(&self, c: usize) -> &[u32] {
        let n = self.cell_type.vertices();
        &self.cells[c * n..(c + 1) * n]
    }
    /// The cell -> vertex map's values (arity `cell_type.vertices()`).
    pub fn cell_vertices(&self) -> &[u32] {
        &self.cells
    }
    /// Coordinates in f32 with the components the dimension needs: x0, y0, x1, y1, ... in 2-D,
    /// x0, y0, z0, ... in 3-D.
    pub fn coords_f32(&self) -> Vec<f32> {
        let d = self.dim();
        self.coords
            .iter()
            .flat_map(|c| c[..d].iter().map(|&x| x as f32))
            .collect()
    }
    /// The group named `name`, if any.
    pub fn group(&self, name: &str) -> Option<&Group> {
        self.groups.iter().find(|g| g.name == name)
    }
}
