//! The reader: `$MeshFormat`, then the sections in any order. MSH 4.1 (ASCII and binary):
//! `$PhysicalNames`, `$Entities`, `$Nodes`, `$Elements`; MSH 2.2 ASCII: `$PhysicalNames`,
//! `$Nodes`, `$Elements` (one record per line). Other sections are skipped. Node tags are kept
//! as written (any order, sparse, over several blocks); [`super::assemble`] resolves them.

use super::cursor::{Cursor, shown};
use super::{err, gmsh_type_name};
use crate::mesh::MeshError;
use std::collections::HashMap;

/// A run of elements of one type and physical tags: node tags, `nodes_of(kind)` per element.
pub(super) struct Block {
    pub kind: u32,
    pub phys: Vec<i32>,
    pub nodes: Vec<u64>,
    /// Where each element begins.
    pub at: Vec<usize>,
}

/// What the reader produces before the cells and groups are sorted out.
pub(super) struct Raw {
    pub binary: bool,
    /// `$PhysicalNames`: (dim, tag) -> name.
    pub names: HashMap<(usize, i32), String>,
    /// Nodes in file order: tag, coordinates, where the tag is.
    pub tags: Vec<u64>,
    pub coords: Vec<[f64; 3]>,
    pub node_at: Vec<usize>,
    pub blocks: Vec<Block>,
    /// Where `$Elements` begins.
    pub elements_at: usize,
}

/// Nodes of the element types parloop reads (first-order cells, their facets, points).
pub(super) fn nodes_of(kind: i32) -> Option<usize> {
    match kind {
        15 => Some(1),
        1 => Some(2),
        2 => Some(3),
        3 | 4 => Some(4),
        5 => Some(8),
        _ => None,
    }
}

fn unsupported(kind: i32) -> String {
    format!(
        "element type {kind} ({}) is not supported: parloop reads first-order triangles, \
         quadrilaterals, tetrahedra and hexahedra, with lines or faces for boundary groups (in \
         Gmsh: Mesh.ElementOrder = 1, no prisms or pyramids)",
        gmsh_type_name(kind)
    )
}

/// Reads a `.msh` file (4.1 ASCII or binary, 2.2 ASCII) into [`Raw`].
pub(super) fn read(bytes: &[u8]) -> Result<Raw, MeshError> {
    let mut c = Cursor::new(bytes);
    let v41 = header(&mut c)?;
    let mut raw = Raw {
        binary: c.binary,
        names: HashMap::new(),
        tags: Vec::new(),
        coords: Vec::new(),
        node_at: Vec::new(),
        blocks: Vec::new(),
        elements_at: 0,
    };
    let mut entities: HashMap<(i32, i32), Vec<i32>> = HashMap::new();
    // Each block's entity (4.1), to find its physical tags once $Entities is read.
    let mut block_entity = Vec::new();
    let mut seen: Vec<&str> = Vec::new();
    loop {
        c.skip_space();
        if c.left() == 0 {
            break;
        }
        let start = c.pos;
        let w = c.word("a section")?;
        let name = match w.strip_prefix(b"$").map(std::str::from_utf8) {
            Some(Ok(n)) if !n.is_empty() && n.bytes().all(|b| b.is_ascii_alphanumeric()) => n,
            _ => {
                return c.fail(
                    start,
                    format!("expected a section (`$Name`), found {}", shown(w)),
                );
            }
        };
        if name.starts_with("End") {
            return c.fail(
                start,
                format!("${name} closes a section that was not opened"),
            );
        }
        c.line_end()?;
        let known = [
            "MeshFormat",
            "PhysicalNames",
            "Entities",
            "Nodes",
            "Elements",
        ];
        if let Some(k) = known.iter().find(|&&k| k == name) {
            if seen.contains(k) || *k == "MeshFormat" {
                return c.fail(start, format!("a second ${name} section"));
            }
            seen.push(k);
        }
        match name {
            "PhysicalNames" => raw.names = physical_names(&mut c)?,
            "Entities" if v41 => entities = entities41(&mut c)?,
            "Nodes" if v41 => nodes41(&mut c, &mut raw)?,
            "Nodes" => nodes22(&mut c, &mut raw)?,
            "Elements" => {
                raw.elements_at = start;
                if v41 {
                    elements41(&mut c, &mut raw, &mut block_entity)?
                } else {
                    elements22(&mut c, &mut raw)?
                }
            }
            _ => {
                c.skip_section(name, start)?;
                continue;
            }
        }
        c.end(name, start)?;
    }
    for s in ["Nodes", "Elements"] {
        if !seen.contains(&s) {
            return c.fail(bytes.len(), format!("the file has no ${s} section"));
        }
    }
    for (b, e) in raw.blocks.iter_mut().zip(block_entity) {
        b.phys = entities.get(&e).cloned().unwrap_or_default();
    }
    Ok(raw)
}

/// `$MeshFormat`: returns whether the file is MSH 4.1 (else 2.2 ASCII); sets the cursor's
/// binary mode, size_t and byte order.
fn header(c: &mut Cursor) -> Result<bool, MeshError> {
    let not_msh = "line 1: expected `$MeshFormat`: this is not a Gmsh .msh file";
    match c.word("`$MeshFormat`") {
        Ok(b"$MeshFormat") => c.line_end().map_err(|_| MeshError::new(not_msh))?,
        _ => return err(not_msh),
    }
    let at = c.pos;
    let end = c.bytes[at..]
        .iter()
        .position(|&b| b == b'\n')
        .map_or(c.bytes.len(), |i| at + i);
    let line = String::from_utf8_lossy(&c.bytes[at..end])
        .trim()
        .to_string();
    c.pos = end;
    let w: Vec<&str> = line.split_whitespace().collect();
    let version = w.first().and_then(|v| v.parse::<f64>().ok());
    let v41 = match version.map(|v| (v == 4.1, v == 2.2)) {
        Some((true, _)) => true,
        Some((_, true)) => false,
        _ => {
            return c.fail(
                at,
                format!(
                    "MSH format version {line} is not supported: parloop reads 4.1 (ASCII and \
                     binary) and 2.2 ASCII (in Gmsh: File > Export, Version 4 or Version 2 ASCII)"
                ),
            );
        }
    };
    if w.len() != 3 {
        return c.fail(
            at,
            format!("expected `version file-type data-size`, found `{line}`"),
        );
    }
    let binary = match w[1] {
        "0" => false,
        "1" => true,
        t => {
            return c.fail(
                at,
                format!("file type `{t}`: expected 0 (ASCII) or 1 (binary)"),
            );
        }
    };
    if binary && !v41 {
        return c.fail(
            at,
            "binary MSH 2.2 is not supported: save the mesh as MSH 4.1 (binary or ASCII) or MSH \
             2.2 ASCII",
        );
    }
    // The size of size_t in 4.1 (of a double in 2.2); binary numbers need it.
    let size = w[2]
        .parse::<u64>()
        .ok()
        .filter(|&s| s == 4 || s == 8)
        .ok_or_else(|| {
            MeshError::new(format!(
                "{}: data size `{}`: expected 8 (or 4), the size of {} in bytes",
                c.place(at),
                w[2],
                if v41 { "size_t" } else { "a double" }
            ))
        })?;
    if binary {
        c.line_end()?;
        c.binary = true;
        c.size_t = size as usize;
        let one = c.int("the integer 1 that tells the byte order")?;
        if one != 1 {
            if one.swap_bytes() != 1 {
                return c.fail(
                    c.last,
                    format!("expected the integer 1 (the byte order), found {one}"),
                );
            }
            c.big_endian = true;
        }
    }
    c.end("MeshFormat", 0)?;
    Ok(v41)
}

/// `$PhysicalNames` (ASCII in every format): `dim tag "name"` per line.
fn physical_names(c: &mut Cursor) -> Result<HashMap<(usize, i32), String>, MeshError> {
    let n: u64 = c.ascii("the number of physical names", "an integer")?;
    let n = c.check_count(n, "the number of physical names", 6, 3)?;
    let mut out = HashMap::with_capacity(n);
    for _ in 0..n {
        c.begin_record();
        let dim: i32 = c.ascii("a physical group's dimension", "0 to 3")?;
        if !(0..=3).contains(&dim) {
            return c.fail(
                c.last,
                format!("physical group dimension {dim}: expected 0 to 3"),
            );
        }
        let tag: i32 = c.ascii("a physical tag", "an integer")?;
        c.skip_space();
        let at = c.pos;
        let rest = &c.bytes[at..];
        let line = &rest[..rest.iter().position(|&b| b == b'\n').unwrap_or(rest.len())];
        let quoted = line.strip_prefix(b"\"").and_then(|l| {
            let close = l.iter().position(|&b| b == b'"')?;
            Some((&l[..close], close + 2))
        });
        // Gmsh quotes names; an unquoted one is the rest of the line.
        let (name, len) = quoted.unwrap_or((line.trim_ascii_end(), line.len()));
        if name.is_empty() {
            return c.fail(at, "expected a group name: `dim tag \"name\"`");
        }
        c.pos = at + len;
        c.end_record("a physical name")?;
        if out
            .insert(
                (dim as usize, tag),
                String::from_utf8_lossy(name).into_owned(),
            )
            .is_some()
        {
            return c.fail(
                at,
                format!("a second name for physical group {tag} of dimension {dim}"),
            );
        }
    }
    Ok(out)
}

/// `$Entities` (4.1): the physical tags of each (dim, tag).
fn entities41(c: &mut Cursor) -> Result<HashMap<(i32, i32), Vec<i32>>, MeshError> {
    let s = c.size_t;
    let mut counts = [0; 4];
    for (d, n) in counts.iter_mut().enumerate() {
        let what = ["points", "curves", "surfaces", "volumes"][d];
        // A point: tag, x y z, physical count; more: tag, box, physical and boundary counts.
        let (bytes, words) = if d == 0 { (28 + s, 5) } else { (52 + 2 * s, 9) };
        *n = c.count(&format!("the number of {what}"), bytes, words)?;
    }
    let mut out = HashMap::new();
    for (d, &n) in counts.iter().enumerate() {
        for _ in 0..n {
            let tag = c.int("an entity tag")?;
            let at = c.last;
            for _ in 0..if d == 0 { 3 } else { 6 } {
                c.double("an entity's coordinates")?;
            }
            let np = c.count("the number of physical tags", 4, 1)?;
            let phys = (0..np)
                .map(|_| c.int("a physical tag"))
                .collect::<Result<Vec<_>, _>>()?;
            if d > 0 {
                for _ in 0..c.count("the number of bounding entities", 4, 1)? {
                    c.int("a bounding entity's tag")?;
                }
            }
            if out.insert((d as i32, tag), phys).is_some() {
                return c.fail(
                    at,
                    format!("a second entity of dimension {d} with tag {tag}"),
                );
            }
        }
    }
    Ok(out)
}

/// `$Nodes` (4.1): blocks of node tags, then their coordinates (and parametric coordinates,
/// skipped).
fn nodes41(c: &mut Cursor, raw: &mut Raw) -> Result<(), MeshError> {
    let s = c.size_t;
    let nblocks = c.count("the number of node blocks", 12 + s, 4)?;
    let total = c.size_t("the number of nodes")?;
    let total_at = c.last;
    let total = c.check_count(total, "the number of nodes", s + 24, 4)?;
    let min = c.size_t("the smallest node tag")?;
    let max = c.size_t("the largest node tag")?;
    // (Too narrow a range for `total` distinct tags shows as a tag twice, named.)
    if total > 0 && (min == 0 || max < min) {
        return c.fail(
            total_at,
            format!("{total} nodes with tags from {min} to {max}: tags are 1 or more"),
        );
    }
    raw.tags.reserve(total);
    raw.coords.reserve(total);
    raw.node_at.reserve(total);
    for _ in 0..nblocks {
        let dim = c.int("a node block's entity dimension")?;
        if !(0..=3).contains(&dim) {
            return c.fail(c.last, format!("entity dimension {dim}: expected 0 to 3"));
        }
        c.int("a node block's entity tag")?;
        let extra = match c.int("a node block's parametric flag")? {
            0 => 0,
            1 => dim as usize,
            p => return c.fail(c.last, format!("parametric flag {p}: expected 0 or 1")),
        };
        let n = c.count(
            "the number of nodes in a block",
            s + 8 * (3 + extra),
            4 + extra,
        )?;
        if raw.tags.len() + n > total {
            return c.fail(
                c.last,
                format!("more nodes in the blocks than the {total} announced"),
            );
        }
        for _ in 0..n {
            let t = c.size_t("a node tag")?;
            if !(min..=max).contains(&t) {
                return c.fail(
                    c.last,
                    format!(
                        "node tag {t} is outside the range {min} to {max} that $Nodes announces"
                    ),
                );
            }
            raw.tags.push(t);
            raw.node_at.push(c.last);
        }
        for _ in 0..n {
            let mut xyz = [0.0; 3];
            for (a, x) in xyz.iter_mut().enumerate() {
                *x = c.coordinate(["a node's x", "a node's y", "a node's z"][a])?;
            }
            for _ in 0..extra {
                c.double("a node's parametric coordinate")?;
            }
            raw.coords.push(xyz);
        }
    }
    if raw.tags.len() != total {
        return c.fail(
            total_at,
            format!(
                "$Nodes announces {total} nodes, its blocks hold {}",
                raw.tags.len()
            ),
        );
    }
    Ok(())
}

/// `$Elements` (4.1): blocks of one entity and type, each element its tag and node tags.
fn elements41(
    c: &mut Cursor,
    raw: &mut Raw,
    entity: &mut Vec<(i32, i32)>,
) -> Result<(), MeshError> {
    let s = c.size_t;
    let nblocks = c.count("the number of element blocks", 12 + s, 4)?;
    let total = c.size_t("the number of elements")?;
    let total_at = c.last;
    c.size_t("the smallest element tag")?;
    c.size_t("the largest element tag")?;
    let mut sum = 0;
    for _ in 0..nblocks {
        let dim = c.int("an element block's entity dimension")?;
        let tag = c.int("an element block's entity tag")?;
        let kind = c.int("an element type")?;
        let Some(k) = nodes_of(kind) else {
            return c.fail(c.last, unsupported(kind));
        };
        let n = c.count("the number of elements in a block", s * (1 + k), 1 + k)?;
        let mut b = Block {
            kind: kind as u32,
            phys: Vec::new(),
            nodes: Vec::with_capacity(n * k),
            at: Vec::with_capacity(n),
        };
        for _ in 0..n {
            c.size_t("an element tag")?;
            b.at.push(c.last);
            for _ in 0..k {
                b.nodes.push(c.size_t("an element's node tag")?);
            }
        }
        sum += n;
        raw.blocks.push(b);
        entity.push((dim, tag));
    }
    if sum as u64 != total {
        return c.fail(
            total_at,
            format!("$Elements announces {total} elements, its blocks hold {sum}"),
        );
    }
    Ok(())
}

/// `$Nodes` (2.2): a count, then `tag x y z` per line.
fn nodes22(c: &mut Cursor, raw: &mut Raw) -> Result<(), MeshError> {
    let n = c.count("the number of nodes", 0, 4)?;
    raw.tags.reserve(n);
    raw.coords.reserve(n);
    raw.node_at.reserve(n);
    for _ in 0..n {
        c.begin_record();
        raw.tags.push(c.size_t("a node tag")?);
        raw.node_at.push(c.last);
        let mut xyz = [0.0; 3];
        for (a, x) in xyz.iter_mut().enumerate() {
            *x = c.coordinate(["the node's x", "the node's y", "the node's z"][a])?;
        }
        raw.coords.push(xyz);
        c.end_record("a node's `tag x y z`")?;
    }
    Ok(())
}

/// `$Elements` (2.2): a count, then `tag type ntags tags... nodes...` per line; the first tag
/// is the physical group (0: none).
fn elements22(c: &mut Cursor, raw: &mut Raw) -> Result<(), MeshError> {
    let n = c.count("the number of elements", 0, 4)?;
    for _ in 0..n {
        c.begin_record();
        c.size_t("an element tag")?;
        let at = c.last;
        let kind = c.int("an element type")?;
        let Some(k) = nodes_of(kind) else {
            return c.fail(c.last, unsupported(kind));
        };
        let ntags = c.count("the number of tags", 0, 1)?;
        let mut phys = Vec::new();
        for i in 0..ntags {
            let t = c.int("an element's tag")?;
            if i == 0 && t != 0 {
                phys.push(t);
            }
        }
        let what = match kind {
            15 => "the node tag of a point",
            1 => "the 2 node tags of a line",
            2 => "the 3 node tags of a triangle",
            3 => "the 4 node tags of a quadrilateral",
            4 => "the 4 node tags of a tetrahedron",
            _ => "the 8 node tags of a hexahedron",
        };
        let b = match raw.blocks.last_mut() {
            Some(b) if b.kind == kind as u32 && b.phys == phys => b,
            _ => {
                raw.blocks.push(Block {
                    kind: kind as u32,
                    phys,
                    nodes: Vec::new(),
                    at: Vec::new(),
                });
                raw.blocks.last_mut().expect("just pushed")
            }
        };
        b.at.push(at);
        for _ in 0..k {
            b.nodes.push(c.size_t(what)?);
        }
        c.end_record(what)?;
    }
    Ok(())
}
