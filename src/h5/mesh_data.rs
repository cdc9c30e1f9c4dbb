//! [`MeshData::read`]: a mesh file in MeshData's layout read on every rank in blocks.

use super::MeshFile;
use crate::dist::{GlobalMap, GlobalSet, Partitioner};
use crate::mesh::CellType;
use crate::mesh::mesh_data::{MAPS, SETS};
use crate::mesh::topology::MeshData;
use crate::{Context, Error, Result, Scalar};
use std::path::Path;

impl MeshData {
    /// The mesh of a parloop mesh file in MeshData's layout ([`MeshData::blocks`]; `parloop
    /// convert mesh.msh mesh.h5` writes one), read on every rank of `ctx` in blocks: no rank
    /// holds the whole mesh. The cells are partitioned with PT-Scotch (with the `ptscotch`
    /// feature; else in blocks) and each rank keeps its part, as [`MeshData::new`] does; the
    /// groups are the file's sets with a map `<name>_cells`, `<name>_facets` or
    /// `<name>_boundary`. `topology`, `interior`, `boundary_facets` and `turned` are empty
    /// (the file's cells were oriented when it was written). On one process, the whole mesh.
    /// Collective: a missing file, or one without MeshData's sets and maps, is an error on
    /// every rank naming what is missing.
    pub fn read(ctx: &Context, path: impl AsRef<Path>) -> Result<MeshData> {
        let path = path.as_ref();
        let file = MeshFile::read(ctx, path)?;
        let b = &file.mesh;
        let missing = |what: &str, name: &str| {
            Error::Data(format!(
                "{}: no {what} `{name}`: not a mesh in MeshData's layout (write one with \
                 `parloop convert mesh.msh {}`)",
                path.display(),
                path.display()
            ))
        };
        let sets: Vec<GlobalSet> = SETS
            .iter()
            .map(|&n| b.find_set(n).ok_or_else(|| missing("set", n)))
            .collect::<Result<_>>()?;
        let maps: Vec<GlobalMap> = MAPS
            .iter()
            .map(|&n| b.find_map(n).ok_or_else(|| missing("map", n)))
            .collect::<Result<_>>()?;
        let f64_coords = b.find_dat::<f64>("coords");
        let f32_coords = b.find_dat::<f32>("coords");
        if f64_coords.is_none() && f32_coords.is_none() {
            return Err(missing("Dat", "coords"));
        }
        // Groups: (name, parent's index in SETS, the set, its map to the parent).
        let mut groups = Vec::new();
        for (name, _) in b.sets().filter(|(n, _)| !SETS.contains(n)) {
            for (parent, suffix) in [(0, "cells"), (1, "facets"), (2, "boundary")] {
                if let Some(m) = b.find_map(&format!("{name}_{suffix}")) {
                    let set = b.find_set(name).expect("listed");
                    groups.push((name.to_string(), parent, set, m));
                }
            }
        }
        let partitioner = if cfg!(feature = "ptscotch") {
            Partitioner::Scotch
        } else {
            Partitioner::Block
        };
        let mut part = file.mesh.distribute(sets[0], partitioner)?;
        let local_sets: Vec<crate::Set> = sets.iter().map(|&s| part.set(s)).collect();
        let local_maps: Vec<crate::Map> = maps.iter().map(|&m| part.map(m)).collect();
        let (coords64, dim) = match (f64_coords, f32_coords) {
            (Some(c), _) => local_values(&part.dat(c)?),
            (None, Some(c)) => local_values(&part.dat(c)?),
            (None, None) => unreachable!("refused above"),
        };
        let cell_type = match (local_maps[0].arity(), dim) {
            (3, 2) => CellType::Triangle,
            (4, 2) => CellType::Quadrilateral,
            (4, 3) => CellType::Tetrahedron,
            (8, 3) => CellType::Hexahedron,
            (a, d) => {
                return Err(Error::Data(format!(
                    "{}: cells of {a} vertices in {d}-D are none of triangles, \
                     quadrilaterals, tetrahedra or hexahedra",
                    path.display()
                )));
            }
        };
        let mut subsets = Vec::new();
        for (name, parent, set, map) in groups {
            let members = group_members(ctx, &part.set(set), &part.map(map), &local_sets[parent]);
            subsets.push(part.subset(&name, sets[parent], &members)?);
        }
        MeshData::assemble(
            ctx, cell_type, local_sets, local_maps, subsets, coords64, None,
        )
    }
}

/// A coordinates Dat's local values (owned and halo) as points, and their dimension.
fn local_values<T: Scalar + Into<f64>>(dat: &crate::Dat<T>) -> (Vec<[f64; 3]>, usize) {
    let words = dat.inner.host.borrow();
    let values: Vec<T> = bytemuck::pod_collect_to_vec(&words[..]);
    let d = dat.dim();
    let points = values
        .chunks_exact(d)
        .map(|c| {
            let mut x = [0.0; 3];
            c.iter().enumerate().for_each(|(k, &v)| x[k] = v.into());
            x
        })
        .collect();
    (points, d)
}

/// Every member of a group (its parent's global numbers, ascending), on every rank: each rank
/// gives its owned elements' targets, rank 0 joins them and sends the list to all.
fn group_members(
    ctx: &Context,
    set: &crate::Set,
    map: &crate::Map,
    parent: &crate::Set,
) -> Vec<u32> {
    let ids = parent.global_ids().unwrap_or_default();
    let owned: Vec<u32> = map.values()[..set.size()]
        .iter()
        .map(|&l| ids.get(l as usize).copied().unwrap_or(l))
        .collect();
    let comm = ctx.comm();
    let what = format!("gathering the members of group `{}`", set.name());
    let mut all: Vec<u32> = comm
        .gather(&owned, &what)
        .map(|parts| parts.concat())
        .unwrap_or_default();
    all.sort_unstable();
    all.dedup();
    let mut n = [all.len() as u32];
    comm.broadcast(&mut n, &what);
    all.resize(n[0] as usize, 0);
    comm.broadcast(&mut all, &what);
    all
}
