//! The two readers: MSH 4.1 through `mshio`, MSH 2.2 ASCII by hand; `$MeshFormat` and
//! `$PhysicalNames` (ASCII in every format).

use super::{MshError, err};
use std::collections::HashMap;

/// The version field of `$MeshFormat` (e.g. "4.1 0 8").
pub(super) fn format_line(bytes: &[u8]) -> Result<String, MshError> {
    let head = &bytes[..bytes.len().min(256)];
    let text = String::from_utf8_lossy(head);
    let mut lines = text.lines();
    match lines.next().map(str::trim) {
        Some("$MeshFormat") => {}
        _ => return err("line 1: expected `$MeshFormat`: this is not a Gmsh .msh file"),
    }
    lines
        .next()
        .map(|l| l.trim().to_string())
        .ok_or_else(|| MshError("line 2: the file ends inside $MeshFormat".into()))
}

/// `$PhysicalNames` (ASCII in every format): (dim, tag) -> name.
pub(super) fn physical_names(bytes: &[u8]) -> Result<HashMap<(usize, i32), String>, MshError> {
    let mut out = HashMap::new();
    let Some(start) = find(bytes, b"$PhysicalNames") else {
        return Ok(out);
    };
    let line0 = line_of(bytes, start);
    let rest = &bytes[start..];
    let end = find(rest, b"$EndPhysicalNames").ok_or_else(|| {
        MshError(format!(
            "line {line0}: $PhysicalNames has no $EndPhysicalNames"
        ))
    })?;
    let text = String::from_utf8_lossy(&rest[..end]);
    let mut lines = text.lines().skip(1);
    let n: usize = lines
        .next()
        .and_then(|l| l.trim().parse().ok())
        .ok_or_else(|| MshError(format!("line {}: expected the number of names", line0 + 1)))?;
    for k in 0..n {
        let line = lines.next().unwrap_or("");
        let bad = || {
            MshError(format!(
                "line {}: expected `dim tag \"name\"` in $PhysicalNames, found {line:?}",
                line0 + 2 + k
            ))
        };
        let mut it = line.trim().splitn(3, char::is_whitespace);
        let dim: usize = it.next().and_then(|v| v.parse().ok()).ok_or_else(bad)?;
        let tag: i32 = it.next().and_then(|v| v.parse().ok()).ok_or_else(bad)?;
        let name = it
            .next()
            .ok_or_else(bad)?
            .trim()
            .trim_matches('"')
            .to_string();
        out.insert((dim, tag), name);
    }
    Ok(out)
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// 1-based line number of byte `at`.
fn line_of(bytes: &[u8], at: usize) -> usize {
    1 + bytes[..at.min(bytes.len())]
        .iter()
        .filter(|&&b| b == b'\n')
        .count()
}

/// What both readers produce before the cells and groups are sorted out: nodes (tag, xyz) and
/// elements (type, physical tags, node tags).
pub(super) struct Raw {
    pub nodes: Vec<(u64, [f64; 3])>,
    pub elements: Vec<(u32, Vec<i32>, Vec<u64>)>,
}

pub(super) fn read41(bytes: &[u8]) -> Result<Raw, MshError> {
    let msh = mshio::parse_msh_bytes(bytes).map_err(|e| {
        // Each level of the parser's backtrace holds the rest of the input where it failed;
        // the innermost is first.
        let kinds: Vec<_> = e
            .backtrace
            .iter()
            .filter(|(_, k)| !k.is_nom_error())
            .collect();
        let at = kinds
            .first()
            .copied()
            .or(e.backtrace.first())
            .map(|(input, _)| (input.as_ptr() as usize).saturating_sub(bytes.as_ptr() as usize));
        let what: Vec<String> = kinds
            .iter()
            .rev()
            .map(|(_, k)| k.context().map_or_else(|| k.to_string(), str::to_string))
            .collect();
        let what = if what.is_empty() {
            "malformed MSH 4.1".to_string()
        } else {
            what.join(": ")
        };
        match at {
            Some(at) => MshError(format!("line {} (byte {at}): {what}", line_of(bytes, at))),
            None => MshError(what),
        }
    })?;
    let data = msh.data;
    let nodes_sec = data
        .nodes
        .ok_or_else(|| MshError("the file has no $Nodes section".into()))?;
    let elements_sec = data
        .elements
        .ok_or_else(|| MshError("the file has no $Elements section".into()))?;
    // Physical tags per entity (dim, tag), from $Entities.
    let mut phys: HashMap<(i32, i32), Vec<i32>> = HashMap::new();
    if let Some(ent) = &data.entities {
        for p in &ent.points {
            phys.insert((0, p.tag), p.physical_tags.clone());
        }
        for c in &ent.curves {
            phys.insert((1, c.tag), c.physical_tags.clone());
        }
        for s in &ent.surfaces {
            phys.insert((2, s.tag), s.physical_tags.clone());
        }
        for v in &ent.volumes {
            phys.insert((3, v.tag), v.physical_tags.clone());
        }
    }
    let mut nodes = Vec::new();
    // mshio keeps a block's node tags only when the file's numbering is sparse; a dense
    // numbering (min..=max, no gaps) is taken as consecutive in file order, as Gmsh writes it.
    let mut next = nodes_sec.min_node_tag;
    for block in &nodes_sec.node_blocks {
        let tags: Vec<u64> = match &block.node_tags {
            Some(map) => {
                let mut t = vec![0u64; block.nodes.len()];
                for (&tag, &i) in map {
                    t[i] = tag;
                }
                t
            }
            None => (next..next + block.nodes.len() as u64).collect(),
        };
        next += block.nodes.len() as u64;
        for (tag, n) in tags.into_iter().zip(&block.nodes) {
            nodes.push((tag, [n.x, n.y, n.z]));
        }
    }
    let mut elements = Vec::new();
    for block in &elements_sec.element_blocks {
        let t = block.element_type as u32;
        let tags = phys
            .get(&(block.entity_dim, block.entity_tag))
            .cloned()
            .unwrap_or_default();
        for e in &block.elements {
            elements.push((t, tags.clone(), e.nodes.clone()));
        }
    }
    Ok(Raw { nodes, elements })
}

/// MSH 2.2 ASCII: `$Nodes` (count, then `tag x y z`) and `$Elements` (count, then `tag type
/// ntags physical elementary ... nodes`).
pub(super) fn read22(bytes: &[u8]) -> Result<Raw, MshError> {
    let text = std::str::from_utf8(bytes).map_err(|e| {
        MshError(format!(
            "byte {}: MSH 2.2 ASCII must be text",
            e.valid_up_to()
        ))
    })?;
    let lines: Vec<&str> = text.lines().collect();
    let section = |name: &str| -> Result<(usize, usize), MshError> {
        let start = lines
            .iter()
            .position(|l| l.trim() == format!("${name}"))
            .ok_or_else(|| MshError(format!("the file has no ${name} section")))?;
        let end = lines[start..]
            .iter()
            .position(|l| l.trim() == format!("$End{name}"))
            .map(|e| start + e)
            .ok_or_else(|| MshError(format!("line {}: ${name} has no $End{name}", start + 1)))?;
        Ok((start, end))
    };
    let count = |at: usize, what: &str| -> Result<usize, MshError> {
        lines
            .get(at)
            .and_then(|l| l.trim().parse().ok())
            .ok_or_else(|| MshError(format!("line {}: expected the number of {what}", at + 1)))
    };
    let (ns, ne) = section("Nodes")?;
    let n = count(ns + 1, "nodes")?;
    if ns + 2 + n > ne {
        return err(format!(
            "line {}: $Nodes announces {n} nodes but holds {}",
            ns + 2,
            ne.saturating_sub(ns + 2)
        ));
    }
    let mut nodes = Vec::with_capacity(n);
    for k in 0..n {
        let at = ns + 2 + k;
        let v: Vec<f64> = lines[at]
            .split_whitespace()
            .map(str::parse)
            .collect::<Result<_, _>>()
            .map_err(|_| MshError(format!("line {}: expected `tag x y z`", at + 1)))?;
        if v.len() != 4 {
            return err(format!(
                "line {}: expected `tag x y z`, found {:?}",
                at + 1,
                lines[at]
            ));
        }
        nodes.push((v[0] as u64, [v[1], v[2], v[3]]));
    }
    let (es, ee) = section("Elements")?;
    let m = count(es + 1, "elements")?;
    if es + 2 + m > ee {
        return err(format!(
            "line {}: $Elements announces {m} elements but holds {}",
            es + 2,
            ee.saturating_sub(es + 2)
        ));
    }
    let mut elements = Vec::with_capacity(m);
    for k in 0..m {
        let at = es + 2 + k;
        let v: Vec<i64> = lines[at]
            .split_whitespace()
            .map(str::parse)
            .collect::<Result<_, _>>()
            .map_err(|_| MshError(format!("line {}: expected integers", at + 1)))?;
        let bad = || {
            MshError(format!(
                "line {}: malformed element {:?}",
                at + 1,
                lines[at]
            ))
        };
        let (t, ntags) = (
            *v.get(1).ok_or_else(bad)?,
            *v.get(2).ok_or_else(bad)? as usize,
        );
        let tags = v.get(3..3 + ntags).ok_or_else(bad)?;
        // The first tag is the physical group (0: none).
        let phys: Vec<i32> = tags
            .first()
            .filter(|&&p| p != 0)
            .map(|&p| p as i32)
            .into_iter()
            .collect();
        let node_tags: Vec<u64> = v[3 + ntags..].iter().map(|&x| x as u64).collect();
        elements.push((t as u32, phys, node_tags));
    }
    Ok(Raw { nodes, elements })
}
