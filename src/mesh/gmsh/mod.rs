//! Gmsh meshes (`.msh`): format 4.1, ASCII and binary, and 2.2 ASCII, read here (the formats
//! are a few sections of numbers; [`read`] never panics: a malformed file is a [`MeshError`]
//! that says what is wrong and where, by line or byte offset). First-order cells in 2-D
//! (triangles, quadrilaterals) and 3-D (tetrahedra, hexahedra); lower-dimensional elements
//! (lines in 2-D, triangles and quadrilaterals in 3-D) are read as the facets of physical
//! groups. Physical group names come from `$PhysicalNames`. The mesh becomes parloop data
//! through [`super::topology::MeshData`].

use super::{CellType, Group, Mesh, MeshError};
use std::collections::HashMap;

/// Gmsh's name of an element type number, for messages.
fn gmsh_type_name(t: i32) -> &'static str {
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

fn err<T>(msg: impl Into<String>) -> Result<T, MeshError> {
    Err(MeshError::new(msg))
}

mod cursor;
mod parse;
mod write;

use parse::{Block, Raw};
pub use write::write41;

/// Reads a `.msh` file's bytes (4.1 ASCII or binary, 2.2 ASCII). Any input gives a mesh or an
/// error saying what is wrong and where (a line, or a byte offset in a binary file).
pub fn read(bytes: &[u8]) -> Result<Mesh, MeshError> {
    let raw = parse::read(bytes)?;
    assemble(raw, bytes)
}

/// Reads a `.msh` file; an error names the file.
#[cfg(not(target_arch = "wasm32"))]
pub fn read_file(path: impl AsRef<std::path::Path>) -> Result<Mesh, MeshError> {
    let path = path.as_ref();
    let bytes = std::fs::read(path).map_err(|e| {
        MeshError::new(format!("cannot read {}: {e}", path.display())).in_file(path)
    })?;
    read(&bytes)
        .map_err(|e| MeshError::new(format!("{}: {}", path.display(), e.message)).in_file(path))
}

/// Node tag -> vertex (file order): a table when the tags are dense enough, else a hash map.
enum NodeIndex {
    Table { min: u64, slot: Vec<u32> },
    Map(HashMap<u64, u32>),
}

impl NodeIndex {
    /// The index of `tags`; a tag twice is an error naming it and both places.
    fn new(tags: &[u64], at: &[usize], place: &dyn Fn(usize) -> String) -> Result<Self, MeshError> {
        let twice = |t: u64, first: u32, i: usize| {
            MeshError::new(format!(
                "{}: node tag {t} appears twice in $Nodes (first at {})",
                place(at[i]),
                place(at[first as usize])
            ))
        };
        let (min, max) = (tags.iter().min(), tags.iter().max());
        let (Some(&min), Some(&max)) = (min, max) else {
            return Ok(NodeIndex::Map(HashMap::new()));
        };
        if max - min < 2 * tags.len() as u64 + 1024 {
            let mut slot = vec![u32::MAX; (max - min + 1) as usize];
            for (i, &t) in tags.iter().enumerate() {
                let s = &mut slot[(t - min) as usize];
                if *s != u32::MAX {
                    return Err(twice(t, *s, i));
                }
                *s = i as u32;
            }
            Ok(NodeIndex::Table { min, slot })
        } else {
            let mut map = HashMap::with_capacity(tags.len());
            for (i, &t) in tags.iter().enumerate() {
                if let Some(&first) = map.get(&t) {
                    return Err(twice(t, first, i));
                }
                map.insert(t, i as u32);
            }
            Ok(NodeIndex::Map(map))
        }
    }
    fn get(&self, tag: u64) -> Option<u32> {
        match self {
            NodeIndex::Table { min, slot } => tag
                .checked_sub(*min)
                .and_then(|k| slot.get(usize::try_from(k).ok()?))
                .copied()
                .filter(|&v| v != u32::MAX),
            NodeIndex::Map(map) => map.get(&tag).copied(),
        }
    }
}

/// Cells of the highest dimension present, facets of one dimension less, groups.
fn assemble(raw: Raw, bytes: &[u8]) -> Result<Mesh, MeshError> {
    let place = |at: usize| cursor::place(bytes, raw.binary, at);
    let fail = |at: usize, msg: String| MeshError::new(format!("{}: {msg}", place(at)));
    let nelements: usize = raw.blocks.iter().map(|b| b.at.len()).sum();
    if raw.tags.len() >= u32::MAX as usize || nelements >= u32::MAX as usize {
        return Err(fail(0, "more than 2^32 - 2 nodes or elements".into()));
    }
    let index = NodeIndex::new(&raw.tags, &raw.node_at, &place)?;
    let dim_of = |kind: u32| match kind {
        15 => 0,
        1 => 1,
        2 | 3 => 2,
        _ => 3,
    };
    let cell_kind = |t: u32| match t {
        2 => CellType::Triangle,
        3 => CellType::Quadrilateral,
        4 => CellType::Tetrahedron,
        _ => CellType::Hexahedron,
    };
    let present = || raw.blocks.iter().filter(|b| !b.at.is_empty());
    let top = present()
        .map(|b| dim_of(b.kind))
        .max()
        .filter(|&d| d >= 2)
        .ok_or_else(|| fail(raw.elements_at, "the file has no 2-D or 3-D cells".into()))?;
    let mut cell_blocks = present().filter(|b| dim_of(b.kind) == top);
    let first = cell_blocks.next().expect("a block of the top dimension");
    let cell_type = cell_kind(first.kind);
    if let Some(b) = cell_blocks.find(|b| b.kind != first.kind) {
        let mut t = [cell_type, cell_kind(b.kind)];
        t.sort_by_key(|c| c.gmsh_type());
        return Err(fail(
            b.at[0],
            format!(
                "the mesh mixes {} and {} cells: parloop reads meshes of one cell type (in \
                 Gmsh: recombine everything or nothing)",
                t[0].name(),
                t[1].name()
            ),
        ));
    }
    // An element's vertices: defined, distinct.
    let vertices = |b: &Block, e: usize, out: &mut Vec<u32>| -> Result<(), MeshError> {
        let k = b.nodes.len() / b.at.len();
        let tags = &b.nodes[e * k..(e + 1) * k];
        let start = out.len();
        for (j, &tag) in tags.iter().enumerate() {
            let v = index.get(tag).ok_or_else(|| {
                fail(
                    b.at[e],
                    format!("an element refers to node {tag}, which $Nodes does not define"),
                )
            })?;
            if tags[..j].contains(&tag) {
                return Err(fail(
                    b.at[e],
                    format!("a {} has node {tag} twice", gmsh_type_name(b.kind as i32)),
                ));
            }
            out.push(v);
        }
        debug_assert_eq!(out.len() - start, k);
        Ok(())
    };
    let mut cells = Vec::new();
    let mut facets = Vec::new();
    let mut members: HashMap<(usize, i32), Vec<u32>> = HashMap::new();
    for b in present() {
        let d = dim_of(b.kind);
        for e in 0..b.at.len() {
            if d == top {
                let c = (cells.len() / cell_type.vertices()) as u32;
                vertices(b, e, &mut cells)?;
                for &p in &b.phys {
                    members.entry((d, p)).or_default().push(c);
                }
            } else if d + 1 == top && !b.phys.is_empty() {
                let f = facets.len() as u32;
                let mut vs = Vec::new();
                vertices(b, e, &mut vs)?;
                facets.push(vs);
                for &p in &b.phys {
                    members.entry((d, p)).or_default().push(f);
                }
            }
        }
    }
    let mut groups: Vec<Group> = members
        .into_iter()
        .map(|((dim, tag), mut m)| {
            m.sort_unstable();
            m.dedup();
            Group {
                name: raw
                    .names
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
    Ok(Mesh {
        coords: raw.coords,
        cell_type,
        cells,
        facets,
        groups,
    })
}
