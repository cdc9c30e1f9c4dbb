//! [`MeshData::read`]: a mesh file in MeshData's layout read on every rank in blocks.

use super::MeshFile;
use crate::dist::{BlockMesh, GlobalMap, GlobalSet, Partitioner};
use crate::mesh::mesh_data::{MAPS, SETS, group_set};
use crate::mesh::topology::MeshData;
use crate::mesh::{CellType, Mesh};
use crate::{Context, DType, Error, Result};
use std::path::Path;

impl MeshData {
    /// The mesh of a parloop mesh file in MeshData's layout ([`MeshData::blocks`]; `parloop
    /// convert mesh.msh mesh.h5` writes one), read on every rank of `ctx` in blocks: no rank
    /// holds the whole mesh (a group's member list excepted: every rank gets each group's
    /// members). The cells are partitioned with PT-Scotch (with the `ptscotch` feature; else
    /// in blocks) and each rank keeps its part, as [`MeshData::new`] does, the groups as
    /// Subsets. `topology`, `interior`, `boundary_facets` and `turned` are empty (the cells
    /// were oriented when the file was written). On one process, the whole mesh. Collective:
    /// a missing file, or one whose sets and maps are not MeshData's (a map of another shape,
    /// a cell turned the wrong way), is an error on every rank naming what is wrong.
    pub fn read(ctx: &Context, path: impl AsRef<Path>) -> Result<MeshData> {
        let path = path.as_ref();
        let mut b = MeshFile::read(ctx, path)
            .map_err(|e| {
                let hint = "MeshData::read takes a parloop mesh file: `parloop convert mesh.msh \
                            mesh.h5` writes one; a Gmsh file is read by gmsh::read_file and \
                            MeshData::new";
                match e {
                    // Another rank's failure, or a message that gives the advice already.
                    Error::Rank { .. } => e,
                    Error::File { message, path } if !message.contains("parloop convert") => {
                        Error::File {
                            message: format!("{message} ({hint})"),
                            path,
                        }
                    }
                    e => e,
                }
            })?
            .mesh;
        let wrong = |why: String| {
            Error::file(
                &path,
                format!(
                    "{}: {why}: not a mesh in MeshData's layout (write one with `parloop convert \
                 mesh.msh {}`)",
                    path.display(),
                    path.display()
                ),
            )
        };
        let sets: Vec<GlobalSet> = SETS
            .iter()
            .map(|&n| b.find_set(n).ok_or_else(|| wrong(format!("no set `{n}`"))))
            .collect::<Result<_>>()?;
        let maps: Vec<GlobalMap> = MAPS
            .iter()
            .map(|&n| b.find_map(n).ok_or_else(|| wrong(format!("no map `{n}`"))))
            .collect::<Result<_>>()?;
        // The coordinates travel as words: read on the host only, on any adapter.
        let (_, dim, dtype) = b
            .dat_shape("coords")
            .filter(|&(on, _, t)| on == sets[3] && matches!(t, DType::F64 | DType::F32))
            .ok_or_else(|| wrong("no Dat `coords` of f64 or f32 values on `vertices`".into()))?;
        let arity = b.map_shape(maps[0]).2;
        let cell_type = match (arity, dim) {
            (3, 2) => CellType::Triangle,
            (4, 2) => CellType::Quadrilateral,
            (4, 3) => CellType::Tetrahedron,
            (8, 3) => CellType::Hexahedron,
            (a, d) => {
                return Err(wrong(format!(
                    "cells of {a} vertices in {d}-D are none of triangles, quadrilaterals, \
                     tetrahedra or hexahedra"
                )));
            }
        };
        let fa = crate::mesh::geometry::facet_arity(cell_type);
        // (map, from, to, arity) as MeshData has them.
        let shapes = [(0, 3, arity), (1, 0, 2), (1, 3, fa), (2, 0, 1), (2, 3, fa)];
        for (k, &(from, to, arity)) in shapes.iter().enumerate() {
            let want = (sets[from], sets[to], arity);
            let (f, t, a) = b.map_shape(maps[k]);
            if (f, t, a) != want {
                return Err(wrong(format!(
                    "map `{}` goes from `{}` to `{}` with arity {a}; MeshData's goes from `{}` \
                     to `{}` with arity {arity}",
                    MAPS[k],
                    b.set_name(f),
                    b.set_name(t),
                    SETS[from],
                    SETS[to]
                )));
            }
        }
        let groups = groups(&b, &sets, &wrong)?;
        b.keep_dats_as_words(&["coords"]);
        let (local_sets, local_maps, coords64, subsets) = if ctx.ranks() == 1 {
            // One process: the blocks are the whole mesh, made as MeshData::new makes it.
            let size = |s: GlobalSet| b.sets().nth(s.0).map_or(0, |(_, n)| n);
            let local_sets: Vec<crate::Set> = sets
                .iter()
                .map(|&s| crate::Set::new(b.set_name(s), size(s)))
                .collect();
            let mut local_maps = Vec::new();
            for (k, &(from, to, arity)) in shapes.iter().enumerate() {
                let (f, t) = (&local_sets[from], &local_sets[to]);
                local_maps.push(crate::Map::new(MAPS[k], f, t, arity, b.map_rows(maps[k]))?);
            }
            let coords64 = points(b.dat_block("coords").expect("kept"), dtype, dim);
            let mut subsets = Vec::new();
            for (name, parent, _, map) in groups {
                let mut members = b.map_rows(map).to_vec();
                members.sort_unstable();
                members.dedup();
                subsets.push(crate::Subset::new(name, &local_sets[parent], &members)?);
            }
            (local_sets, local_maps, coords64, subsets)
        } else {
            let words = b.find_dat::<u32>("coords").expect("kept");
            let partitioner = if cfg!(feature = "ptscotch") {
                Partitioner::Scotch
            } else {
                Partitioner::Block
            };
            let mut part = b.distribute(sets[0], partitioner)?;
            let local_sets: Vec<crate::Set> = sets.iter().map(|&s| part.set(s)).collect();
            let local_maps: Vec<crate::Map> = maps.iter().map(|&m| part.map(m)).collect();
            let coords64 = points(&part.dat(words)?.inner.host.borrow(), dtype, dim);
            let mut subsets = Vec::new();
            for (name, parent, set, map) in groups {
                let members = members(ctx, &part.set(set), &part.map(map), &local_sets[parent]);
                subsets.push(part.subset(&name, sets[parent], &members)?);
            }
            (local_sets, local_maps, coords64, subsets)
        };
        let turned = first_turned(cell_type, &coords64, &local_maps[0], &local_sets[0]);
        let turned = turned.map_or(Ok(()), |c| {
            Err(wrong(format!(
                "cell {c} is turned the wrong way (negative measure)"
            )))
        });
        ctx.agree(turned, "checking the cells' orientation")?;
        MeshData::assemble(
            ctx, cell_type, local_sets, local_maps, subsets, coords64, None,
        )
    }
}

/// The file's groups: (name, its parent's index in SETS, its set, its map to the parent),
/// each map checked (from the group's set to the parent, arity 1).
#[allow(clippy::type_complexity)]
fn groups(
    b: &BlockMesh,
    sets: &[GlobalSet],
    wrong: &dyn Fn(String) -> Error,
) -> Result<Vec<(String, usize, GlobalSet, GlobalMap)>> {
    let mut out = Vec::new();
    for (name, _) in b.sets() {
        for (parent, &on) in SETS[..3].iter().enumerate() {
            let Some(group) = group_set(name, on) else {
                continue;
            };
            // A set without a map of its name is some other set (a physical group named
            // like one, kept for other readers).
            let Some(map) = b.find_map(name) else {
                continue;
            };
            let set = b.find_set(name).expect("listed");
            let (f, t, a) = b.map_shape(map);
            if (f, t, a) != (set, sets[parent], 1) {
                return Err(wrong(format!(
                    "group map `{name}` goes from `{}` to `{}` with arity {a}; a group of {on} \
                     goes from its set `{name}` to `{on}` with arity 1",
                    b.set_name(f),
                    b.set_name(t)
                )));
            }
            out.push((group.to_string(), parent, set, map));
        }
    }
    Ok(out)
}

/// The coordinates' local values (owned and halo) as points, from their words.
fn points(words: &[u32], dtype: DType, dim: usize) -> Vec<[f64; 3]> {
    let values: Vec<f64> = match dtype {
        DType::F64 => bytemuck::pod_collect_to_vec::<u32, f64>(words),
        _ => words.iter().map(|&w| f32::from_bits(w) as f64).collect(),
    };
    values
        .chunks_exact(dim)
        .map(|c| {
            let mut x = [0.0; 3];
            x[..dim].copy_from_slice(c);
            x
        })
        .collect()
}

/// The first of this rank's owned cells (a global number) whose measure is negative.
fn first_turned(
    t: CellType,
    coords: &[[f64; 3]],
    cell_vertices: &crate::Map,
    cells: &crate::Set,
) -> Option<u32> {
    let n = t.vertices();
    let owned = cells.size();
    let local = Mesh {
        coords: coords.to_vec(),
        cell_type: t,
        cells: cell_vertices.values()[..owned * n].to_vec(),
        facets: Vec::new(),
        groups: Vec::new(),
    };
    let ids = cells.global_ids();
    (0..owned)
        .find(|&c| local.signed_measure(c).is_some_and(|m| m < 0.0))
        .map(|c| ids.map_or(c as u32, |ids| ids[c]))
}

/// Every member of a group (its parent's global numbers, ascending), on every rank: each rank
/// gives its owned elements' targets, rank 0 joins them and sends the list to all.
fn members(ctx: &Context, set: &crate::Set, map: &crate::Map, parent: &crate::Set) -> Vec<u32> {
    let owned: Vec<u32> = map.values()[..set.size()]
        .iter()
        .map(|&l| parent.global_ids().map_or(l, |ids| ids[l as usize]))
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
