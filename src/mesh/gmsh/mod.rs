//! Gmsh meshes (`.msh`): format 4.1, ASCII and binary (read by the `mshio` crate), and 2.2
//! ASCII (read here: the format is a few sections of numbers). First-order cells in 2-D
//! (triangles, quadrilaterals) and 3-D (tetrahedra, hexahedra); lower-dimensional elements
//! (lines in 2-D, triangles and quadrilaterals in 3-D) are read as the facets of physical
//! groups. Physical group names come from `$PhysicalNames`.
//!
//! Owns: turning a file into host arrays ([`GmshMesh`]). Must never: touch a Context (the mesh
//! becomes parloop data through [`super::topology::MeshData`]).

use std::collections::HashMap;

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
            _ => 3,
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

/// Gmsh's name of an element type number, for messages.
fn gmsh_type_name(t: u32) -> &'static str {
    match t {
        1 => "2-node line",
        2 => "3-node triangle",
        3 => "4-node quadrilateral",
        4 => "4-node tetrahedron",
        5 => "8-node hexahedron",
        6 => "6-node prism",
        7 => "5-node pyramid",
        8 => "3-node second-order line",
        9 => "6-node second-order triangle",
        10 => "9-node second-order quadrilateral",
        11 => "10-node second-order tetrahedron",
        12 => "27-node second-order hexahedron",
        15 => "1-node point",
        16 => "8-node second-order quadrilateral",
        17 => "20-node second-order hexahedron",
        _ => "higher-order or special element",
    }
}

/// A physical group: its name (or `physical <tag>` when the file names none), dimension, tag,
/// and the indices of its members (cells for a group of the cells' dimension, else entries of
/// [`GmshMesh::facets`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Group {
    /// The group's name from `$PhysicalNames`.
    pub name: String,
    /// The dimension of its elements.
    pub dim: usize,
    /// Gmsh's physical tag.
    pub tag: i32,
    /// Member indices, ascending.
    pub members: Vec<u32>,
}

/// A mesh read from a `.msh` file: vertices (0-based, in the file's node order), cells of one
/// type, the lower-dimensional elements that belong to physical groups (as vertex lists), and
/// the physical groups.
#[derive(Clone, Debug, PartialEq)]
pub struct GmshMesh {
    /// Vertex coordinates (z is 0 in a 2-D mesh).
    pub coords: Vec<[f64; 3]>,
    /// The cells' type.
    pub cell_type: CellType,
    /// Each cell's vertices, `cell_type.vertices()` per cell, in Gmsh's order.
    pub cells: Vec<u32>,
    /// Vertices of each tagged facet element (lines in 2-D, triangles or quadrilaterals in
    /// 3-D), one Vec per element.
    pub facets: Vec<Vec<u32>>,
    /// Physical groups of cells (dimension of the cells) and of facets.
    pub groups: Vec<Group>,
}

/// Why a file could not be read: what and where (line, or byte offset in a binary file).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct MshError(pub String);

fn err<T>(msg: impl Into<String>) -> Result<T, MshError> {
    Err(MshError(msg.into()))
}

impl GmshMesh {
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
    /// A triangle mesh as the wave demo takes it: 2-D coordinates, triangles turned
    /// counter-clockwise. An error names the cell type of any other mesh.
    pub fn triangles(&self) -> Result<super::TriMesh, MshError> {
        if self.cell_type != CellType::Triangle {
            return err(format!(
                "this mesh has {} cells: the wave demo runs on triangles (P1)",
                self.cell_type.name()
            ));
        }
        let coords: Vec<[f64; 2]> = self.coords.iter().map(|c| [c[0], c[1]]).collect();
        let cells = (0..self.ncells())
            .map(|c| {
                let [a, b, d] = <[u32; 3]>::try_from(self.cell(c)).expect("3 vertices");
                let (p, q, r) = (coords[a as usize], coords[b as usize], coords[d as usize]);
                let det = (q[0] - p[0]) * (r[1] - p[1]) - (q[1] - p[1]) * (r[0] - p[0]);
                if det < 0.0 { [a, d, b] } else { [a, b, d] }
            })
            .collect();
        Ok(super::TriMesh { coords, cells })
    }
    /// The group named `name`, if any.
    pub fn group(&self, name: &str) -> Option<&Group> {
        self.groups.iter().find(|g| g.name == name)
    }
}

mod parse;
mod renumber;
mod write;

use parse::{Raw, format_line, physical_names, read22, read41};
pub use write::{unit_cube_tets, write41};

/// Reads a `.msh` file's bytes (4.1 ASCII or binary, 2.2 ASCII).
pub fn read(bytes: &[u8]) -> Result<GmshMesh, MshError> {
    let version = format_line(bytes)?;
    let names = physical_names(bytes)?;
    let raw = match version.as_str() {
        v if v.starts_with("4.1") => read41(bytes)?,
        v if v.starts_with("2.2") => {
            if version.split_whitespace().nth(1) != Some("0") {
                return err(
                    "binary MSH 2.2 is not supported: save the mesh as MSH 4.1 (binary or \
                     ASCII) or MSH 2.2 ASCII",
                );
            }
            read22(bytes)?
        }
        v => {
            return err(format!(
                "MSH format version {v} is not supported: parloop reads 4.1 (ASCII and binary) \
                 and 2.2 ASCII (in Gmsh: File > Export, Version 4 or Version 2 ASCII)"
            ));
        }
    };
    assemble(raw, &names)
}

/// Reads a `.msh` file.
#[cfg(not(target_arch = "wasm32"))]
pub fn read_file(path: &std::path::Path) -> Result<GmshMesh, MshError> {
    let bytes = std::fs::read(path)
        .map_err(|e| MshError(format!("cannot read {}: {e}", path.display())))?;
    read(&bytes).map_err(|e| MshError(format!("{}: {}", path.display(), e.0)))
}

/// Cells of the highest dimension present, facets of one dimension less, groups.
fn assemble(raw: Raw, names: &HashMap<(usize, i32), String>) -> Result<GmshMesh, MshError> {
    let mut index: HashMap<u64, u32> = HashMap::with_capacity(raw.nodes.len());
    let mut coords = Vec::with_capacity(raw.nodes.len());
    for (tag, xyz) in raw.nodes {
        if index.insert(tag, coords.len() as u32).is_some() {
            return err(format!("node tag {tag} appears twice in $Nodes"));
        }
        coords.push(xyz);
    }
    let cell_kind = |t: u32| match t {
        2 => Some(CellType::Triangle),
        3 => Some(CellType::Quadrilateral),
        4 => Some(CellType::Tetrahedron),
        5 => Some(CellType::Hexahedron),
        _ => None,
    };
    let dim_of = |t: u32| match t {
        15 => Some(0),
        1 => Some(1),
        2 | 3 => Some(2),
        4 | 5 => Some(3),
        _ => None,
    };
    for (t, _, _) in &raw.elements {
        if dim_of(*t).is_none() {
            return err(format!(
                "element type {t} ({}) is not supported: parloop reads first-order triangles, \
                 quadrilaterals, tetrahedra and hexahedra, with lines or faces for boundary \
                 groups (in Gmsh: Mesh.ElementOrder = 1, no prisms or pyramids)",
                gmsh_type_name(*t)
            ));
        }
    }
    let top = raw
        .elements
        .iter()
        .filter_map(|(t, _, _)| dim_of(*t))
        .max()
        .filter(|&d| d >= 2)
        .ok_or_else(|| MshError("the file has no 2-D or 3-D cells".into()))?;
    let types: Vec<CellType> = {
        let mut v: Vec<CellType> = raw
            .elements
            .iter()
            .filter(|(t, _, _)| dim_of(*t) == Some(top))
            .filter_map(|(t, _, _)| cell_kind(*t))
            .collect();
        v.dedup();
        v.sort_by_key(|c| c.gmsh_type());
        v.dedup();
        v
    };
    if types.len() > 1 {
        return err(format!(
            "the mesh mixes {} and {} cells: parloop reads meshes of one cell type (in Gmsh: \
             recombine everything or nothing)",
            types[0].name(),
            types[1].name()
        ));
    }
    let cell_type = types[0];
    let node = |tag: u64| -> Result<u32, MshError> {
        index.get(&tag).copied().ok_or_else(|| {
            MshError(format!(
                "an element refers to node {tag}, which $Nodes does not define"
            ))
        })
    };
    let mut cells = Vec::new();
    let mut facets = Vec::new();
    let mut members: HashMap<(usize, i32), Vec<u32>> = HashMap::new();
    for (t, phys, tags) in &raw.elements {
        let d = dim_of(*t).expect("checked above");
        let want = if d == top {
            cell_type.vertices()
        } else {
            match *t {
                1 => 2,
                2 => 3,
                3 => 4,
                15 => 1,
                _ => unreachable!(),
            }
        };
        if tags.len() != want {
            return err(format!(
                "a {} has {} nodes, expected {want}",
                gmsh_type_name(*t),
                tags.len()
            ));
        }
        if d == top {
            let c = (cells.len() / want) as u32;
            for &tag in tags {
                cells.push(node(tag)?);
            }
            for &p in phys {
                members.entry((d, p)).or_default().push(c);
            }
        } else if d + 1 == top && !phys.is_empty() {
            let f = facets.len() as u32;
            facets.push(
                tags.iter()
                    .map(|&t| node(t))
                    .collect::<Result<Vec<_>, _>>()?,
            );
            for &p in phys {
                members.entry((d, p)).or_default().push(f);
            }
        }
    }
    let mut groups: Vec<Group> = members
        .into_iter()
        .map(|((dim, tag), mut m)| {
            m.sort_unstable();
            m.dedup();
            Group {
                name: names
                    .get(&(dim, tag))
                    .cloned()
                    .unwrap_or_else(|| format!("physical {tag}")),
                dim,
                tag,
                members: m,
            }
        })
        .collect();
    groups.sort_by_key(|g| (g.dim, g.tag));
    Ok(GmshMesh {
        coords,
        cell_type,
        cells,
        facets,
        groups,
    })
}
