//! The MSH 4.1 ASCII writer (meshes for tests, and for Gmsh or ParaView users).

use crate::mesh::{Group, Mesh};

/// Writes `mesh` as MSH 4.1 ASCII: one entity per physical group (and one for untagged cells),
/// `$PhysicalNames`, `$Entities`, `$Nodes`, `$Elements`. What Gmsh writes for such a mesh, up
/// to entity bounding boxes (written as zeros).
pub fn write41(mesh: &Mesh) -> String {
    use std::fmt::Write;
    let top = mesh.dim();
    // Groups by (dim, tag), as the reader returns them: the file depends only on the mesh.
    let mut groups: Vec<&Group> = mesh.groups.iter().collect();
    groups.sort_by_key(|g| (g.dim, g.tag));
    let mut s = String::from("$MeshFormat\n4.1 0 8\n$EndMeshFormat\n");
    if !groups.is_empty() {
        let _ = writeln!(s, "$PhysicalNames\n{}", groups.len());
        for g in &groups {
            let _ = writeln!(s, "{} {} \"{}\"", g.dim, g.tag, g.name);
        }
        s.push_str("$EndPhysicalNames\n");
    }
    // Entities: per dimension, one per group (tag = index + 1), and for cells not in any
    // group an untagged one. Each element goes to the first group holding it.
    let cell_groups: Vec<&Group> = groups.iter().copied().filter(|g| g.dim == top).collect();
    let facet_groups: Vec<&Group> = groups
        .iter()
        .copied()
        .filter(|g| g.dim + 1 == top)
        .collect();
    let mut cell_entity = vec![0usize; mesh.ncells()];
    for (k, g) in cell_groups.iter().enumerate() {
        for &c in &g.members {
            if cell_entity[c as usize] == 0 {
                cell_entity[c as usize] = k + 1;
            }
        }
    }
    let mut facet_entity = vec![0usize; mesh.facets.len()];
    for (k, g) in facet_groups.iter().enumerate() {
        for &f in &g.members {
            if facet_entity[f as usize] == 0 {
                facet_entity[f as usize] = k + 1;
            }
        }
    }
    let ncell_entities = cell_groups.len() + 1;
    let nfacet_entities = facet_groups.len();
    let mut counts = [0usize; 4];
    counts[top] = ncell_entities;
    counts[top - 1] = nfacet_entities;
    let _ = writeln!(
        s,
        "$Entities\n{} {} {} {}",
        counts[0], counts[1], counts[2], counts[3]
    );
    let entity_line = |s: &mut String, dim: usize, tag: usize, phys: Option<i32>| {
        let _ = write!(s, "{tag} 0 0 0 0 0 0 ");
        match phys {
            Some(p) => {
                let _ = write!(s, "1 {p} ");
            }
            None => s.push_str("0 "),
        }
        if dim > 0 {
            s.push('0');
        }
        s.push('\n');
    };
    for d in 1..=3 {
        if d + 1 == top {
            for (k, g) in facet_groups.iter().enumerate() {
                entity_line(&mut s, d, k + 1, Some(g.tag));
            }
        }
        if d == top {
            entity_line(&mut s, d, ncell_entities, None);
            for (k, g) in cell_groups.iter().enumerate() {
                entity_line(&mut s, d, k + 1, Some(g.tag));
            }
        }
    }
    s.push_str("$EndEntities\n");
    // All nodes in one block on the untagged cell entity.
    let n = mesh.nvertices();
    let _ = writeln!(s, "$Nodes\n1 {n} 1 {n}\n{top} {ncell_entities} 0 {n}");
    for v in 1..=n {
        let _ = writeln!(s, "{v}");
    }
    for c in &mesh.coords {
        let _ = writeln!(s, "{:?} {:?} {:?}", c[0], c[1], c[2]);
    }
    s.push_str("$EndNodes\n");
    // Elements: one block per entity.
    let mut blocks: Vec<(usize, usize, u32, Vec<Vec<u32>>)> = Vec::new();
    let facet_type = |len: usize| match len {
        2 => 1,
        3 => 2,
        _ => 3,
    };
    for (k, _) in facet_groups.iter().enumerate() {
        let els: Vec<Vec<u32>> = (0..mesh.facets.len())
            .filter(|&f| facet_entity[f] == k + 1)
            .map(|f| mesh.facets[f].clone())
            .collect();
        if let Some(first) = els.first() {
            let t = facet_type(first.len());
            blocks.push((top - 1, k + 1, t, els));
        }
    }
    for e in 0..=cell_groups.len() {
        let entity = if e == 0 { ncell_entities } else { e };
        let els: Vec<Vec<u32>> = (0..mesh.ncells())
            .filter(|&c| cell_entity[c] == e)
            .map(|c| mesh.cell(c).to_vec())
            .collect();
        if !els.is_empty() {
            blocks.push((top, entity, mesh.cell_type.gmsh_type(), els));
        }
    }
    let total: usize = blocks.iter().map(|b| b.3.len()).sum();
    let _ = writeln!(s, "$Elements\n{} {total} 1 {total}", blocks.len());
    let mut tag = 1;
    for (dim, entity, t, els) in &blocks {
        let _ = writeln!(s, "{dim} {entity} {t} {}", els.len());
        for el in els {
            let _ = write!(s, "{tag}");
            for v in el {
                let _ = write!(s, " {}", v + 1);
            }
            s.push('\n');
            tag += 1;
        }
    }
    s.push_str("$EndElements\n");
    s
}
