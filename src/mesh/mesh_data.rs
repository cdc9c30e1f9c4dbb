//! [`MeshData::new`]: a mesh's sets, maps, coordinates and groups on a Context, the same
//! object on one process and on N ranks (where the cells are partitioned and each rank keeps
//! its part).

use super::topology::{MeshData, Topology};
use super::{CellType, Mesh};
use crate::{Context, Error, Map, Result, Set, Subset};

/// The mesh's arrays in global numbering, before they become parloop objects.
pub(crate) struct Lists {
    /// Interior facet k is topology facet `interior[k]`; boundary facet k is `boundary[k]`.
    pub(crate) interior: Vec<usize>,
    pub(crate) boundary: Vec<usize>,
    /// (name, from: an index of [`SETS`], to: one too, arity, rows), in [`MAPS`] order.
    pub(crate) maps: Vec<(&'static str, usize, usize, usize, Vec<u32>)>,
    /// (name, on: 0 cells / 1 interior / 2 boundary, members ascending)
    pub(crate) groups: Vec<(String, usize, Vec<u32>)>,
}

/// The sets' names: cells, interior facets, boundary facets, vertices.
pub(crate) const SETS: [&str; 4] = ["cells", "facets", "boundary facets", "vertices"];

/// The maps' names.
pub(crate) const MAPS: [&str; 5] = [
    "cell_vertices",
    "facet_cells",
    "facet_vertices",
    "boundary_cell",
    "boundary_vertices",
];

/// What the whole mesh gives beside its parloop objects (None when no rank holds it).
pub(crate) struct Whole {
    pub(crate) turned: Vec<u32>,
    pub(crate) topology: Topology,
    pub(crate) interior: Vec<u32>,
    pub(crate) boundary: Vec<u32>,
}

impl MeshData {
    /// The mesh `m` as Sets, Maps, a coordinates Dat and Subsets on `ctx`, its cells oriented
    /// first. A degenerate cell (measure 0), a non-manifold facet and a tagged facet the mesh
    /// does not have are errors naming them.
    ///
    /// On N ranks (every rank giving the same mesh) the cells are partitioned with METIS and
    /// each rank keeps its part: the sets are distributed (core | owned | exec halo | non-exec
    /// halo), the maps and coordinates local, the groups Subsets of the local sets. The same
    /// program then runs unchanged: par_loops over the sets and groups give the one-process
    /// results. `topology`, `interior`, `boundary_facets` and `turned` stay in global
    /// numbering (the sets' `global_ids` lead there).
    pub fn new(ctx: &Context, m: &Mesh) -> Result<MeshData> {
        let mut oriented = m.clone();
        let prepared = (|| -> Result<_> {
            let turned = oriented.orient()?;
            let t = Topology::new(oriented.cell_type, &oriented.cells)?;
            let l = lists(&oriented, &t)?;
            Ok((turned, t, l))
        })();
        // On N ranks a mesh one rank cannot use is an error on every rank, and so are
        // meshes whose coordinates differ (their sets and maps are compared when they are
        // distributed).
        let (turned, t, l) = if ctx.ranks() > 1 {
            let (turned, t, l) = ctx.agree(prepared, "building MeshData (MeshData::new)")?;
            use std::hash::{Hash, Hasher};
            let mut h = std::collections::hash_map::DefaultHasher::new();
            for x in &oriented.coords {
                x.map(f64::to_bits).hash(&mut h);
            }
            let what = "comparing the ranks' vertex coordinates";
            let (lo, hi) = ctx.comm().min_max(h.finish(), what)?;
            if lo != hi {
                return Err(Error::Data(
                    "MeshData::new: the ranks gave meshes with different vertex coordinates: \
                     every rank must give the same mesh (read or generate it the same way on \
                     each)"
                        .into(),
                ));
            }
            (turned, t, l)
        } else {
            prepared?
        };
        let m = &oriented;
        let counts = [
            m.ncells(),
            l.interior.len(),
            l.boundary.len(),
            m.nvertices(),
        ];
        let (sets, maps, groups, coords64) = if ctx.ranks() > 1 {
            let mut d = crate::dist::Distribution::new(ctx);
            let gsets: Vec<_> = (0..4).map(|k| d.set(SETS[k], counts[k])).collect();
            let mut gmaps = Vec::new();
            for (name, from, to, arity, rows) in &l.maps {
                gmaps.push(d.map(name, gsets[*from], gsets[*to], *arity, rows)?);
            }
            let part = d.distribute(gsets[0], crate::dist::Partitioner::KWay)?;
            let sets: Vec<Set> = gsets.iter().map(|&s| part.set(s)).collect();
            let maps: Vec<Map> = gmaps.iter().map(|&g| part.map(g)).collect();
            let mut groups = Vec::new();
            for (name, on, members) in &l.groups {
                groups.push(part.subset(name, gsets[*on], members)?);
            }
            // This rank's vertices by their global numbers.
            let ids = sets[3].global_ids().unwrap_or_default();
            let coords64 = ids.iter().map(|&g| m.coords[g as usize]).collect();
            (sets, maps, groups, coords64)
        } else {
            let sets: Vec<Set> = (0..4).map(|k| Set::new(SETS[k], counts[k])).collect();
            let mut maps = Vec::new();
            for (name, from, to, arity, rows) in &l.maps {
                maps.push(Map::new(*name, &sets[*from], &sets[*to], *arity, rows)?);
            }
            let mut groups = Vec::new();
            for (name, on, members) in &l.groups {
                groups.push(Subset::new(name.clone(), &sets[*on], members)?);
            }
            (sets, maps, groups, m.coords.clone())
        };
        let whole = Whole {
            turned,
            topology: t,
            interior: l.interior.iter().map(|&f| f as u32).collect(),
            boundary: l.boundary.iter().map(|&f| f as u32).collect(),
        };
        MeshData::assemble(ctx, m.cell_type, sets, maps, groups, coords64, Some(whole))
    }

    /// The MeshData of this rank's sets and maps (in [`SETS`] and [`MAPS`] order), groups and
    /// vertex coordinates (local order).
    pub(crate) fn assemble(
        ctx: &Context,
        cell_type: CellType,
        sets: Vec<Set>,
        maps: Vec<Map>,
        groups: Vec<Subset>,
        coords64: Vec<[f64; 3]>,
        whole: Option<Whole>,
    ) -> Result<MeshData> {
        let d = cell_type.dim();
        // Only the mesh's dimensions count (z = 0 in 2-D, whatever the file held).
        let mut coords64 = coords64;
        coords64.iter_mut().for_each(|x| x[d..].fill(0.0));
        let xyz: Vec<f32> = coords64
            .iter()
            .flat_map(|x| x[..d].iter().map(|&v| v as f32))
            .collect();
        let coords = ctx.dat("coords", &sets[3], d, &xyz)?;
        let [cells, facets, boundary, vertices]: [Set; 4] = sets.try_into().expect("four sets");
        let [
            cell_vertices,
            facet_cells,
            facet_vertices,
            boundary_cell,
            boundary_vertices,
        ]: [Map; 5] = maps.try_into().expect("five maps");
        let (turned, topology, interior, boundary_facets) = match whole {
            Some(w) => (w.turned, Some(w.topology), w.interior, w.boundary),
            None => (Vec::new(), None, Vec::new(), Vec::new()),
        };
        Ok(MeshData {
            turned,
            topology,
            interior,
            boundary_facets,
            cell_type,
            coords64,
            vertices,
            cells,
            facets,
            boundary,
            cell_vertices,
            facet_cells,
            facet_vertices,
            boundary_cell,
            boundary_vertices,
            coords,
            groups,
        })
    }
}

/// The facets split into interior and boundary, the maps' rows and the groups' members.
pub(crate) fn lists(m: &Mesh, t: &Topology) -> Result<Lists> {
    let (mut interior, mut boundary) = (Vec::new(), Vec::new());
    let mut place = vec![(false, 0u32); t.nfacets()];
    for f in 0..t.nfacets() {
        if t.is_boundary(f) {
            place[f] = (true, boundary.len() as u32);
            boundary.push(f);
        } else {
            place[f] = (false, interior.len() as u32);
            interior.push(f);
        }
    }
    let fa = t.facet_arity;
    let maps = vec![
        (MAPS[0], 0, 3, m.cell_type.vertices(), m.cells.clone()),
        (
            MAPS[1],
            1,
            0,
            2,
            interior.iter().flat_map(|&f| t.facet_cells[f]).collect(),
        ),
        (
            MAPS[2],
            1,
            3,
            fa,
            interior.iter().flat_map(|&f| t.facet(f).to_vec()).collect(),
        ),
        (
            MAPS[3],
            2,
            0,
            1,
            boundary.iter().map(|&f| t.facet_cells[f][0]).collect(),
        ),
        (
            MAPS[4],
            2,
            3,
            fa,
            boundary.iter().flat_map(|&f| t.facet(f).to_vec()).collect(),
        ),
    ];
    let mut groups = Vec::new();
    for g in &m.groups {
        if g.dim == m.dim() {
            groups.push((g.name.clone(), 0, g.members.clone()));
            continue;
        }
        let (mut on_b, mut on_i) = (Vec::new(), Vec::new());
        for &k in &g.members {
            let vs = &m.facets[k as usize];
            let f = t.facet_of(vs).ok_or_else(|| {
                Error::Data(format!(
                    "physical group `{}`: its element with vertices {vs:?} is not a facet of \
                     any cell",
                    g.name
                ))
            })?;
            match place[f as usize] {
                (true, i) => on_b.push(i),
                (false, i) => on_i.push(i),
            }
        }
        for (on, mut members) in [(2, on_b), (1, on_i)] {
            members.sort_unstable();
            members.dedup();
            if !members.is_empty() {
                groups.push((g.name.clone(), on, members));
            }
        }
    }
    Ok(Lists {
        interior,
        boundary,
        maps,
        groups,
    })
}

/// A group's set and map in a mesh file: `<group> (<parent>)`, e.g. `inlet (boundary
/// facets)`.
fn group_set_name(group: &str, parent: &str) -> String {
    format!("{group} ({parent})")
}

/// Given a set's name and a parent's, the group's name if the set is one of it
/// ([`group_set_name`]'s inverse).
#[cfg_attr(not(feature = "hdf5"), allow(dead_code))]
pub(crate) fn group_set<'a>(name: &'a str, parent: &str) -> Option<&'a str> {
    name.strip_suffix(&format!(" ({parent})"))
}

impl MeshData {
    /// `m` in MeshData's layout as the blocks of a parloop mesh file (`h5::write` writes them;
    /// `parloop convert` does both): the cells oriented; sets `cells`, `facets`, `boundary
    /// facets` and `vertices`; the five maps of [`MeshData`]; Dat `coords` (f64, or f32 with
    /// `coords_f32`); each group of [`MeshData::new`] a set and a map of its members to their
    /// parent, both named `<name> (<parent>)` (`inlet (boundary facets)`). For other readers
    /// each physical group is also a set `<name>` with map `<name>_cells` (a group of cells)
    /// or `<name>_vertices` (a group of facets: their vertices), where those names are free.
    /// Every rank gives the whole mesh and declares its blocks of it. Also returns a line per
    /// physical group: what it became.
    pub fn blocks(
        ctx: &Context,
        m: &Mesh,
        coords_f32: bool,
    ) -> Result<(crate::dist::BlockMesh, Vec<String>)> {
        let mut m = m.clone();
        m.orient()?;
        let t = Topology::new(m.cell_type, &m.cells)?;
        let l = lists(&m, &t)?;
        let counts = [
            m.ncells(),
            l.interior.len(),
            l.boundary.len(),
            m.nvertices(),
        ];
        let mut b = crate::dist::BlockMesh::new(ctx);
        let sets: Vec<_> = (0..4).map(|k| b.set(SETS[k], counts[k])).collect();
        for (name, from, to, arity, rows) in &l.maps {
            let r = b.range(sets[*from]);
            let block = rows[r.start * arity..r.end * arity].to_vec();
            b.map(name, sets[*from], sets[*to], *arity, block)?;
        }
        let (d, r) = (m.dim(), b.range(sets[3]));
        let xyz = m.coords[r].iter().flat_map(|x| x[..d].to_vec());
        if coords_f32 {
            b.dat(
                "coords",
                sets[3],
                d,
                &xyz.map(|v| v as f32).collect::<Vec<_>>(),
            )?;
        } else {
            b.dat("coords", sets[3], d, &xyz.collect::<Vec<_>>())?;
        }
        // A set `set` of `all.len() / arity` elements and a map `map` to set `to`, where both
        // names are free; whether they were.
        let declare =
            |b: &mut crate::dist::BlockMesh, set: &str, map: &str, to, arity, all: &[u32]| {
                if b.find_set(set).is_some() || b.find_map(map).is_some() {
                    return Ok(false);
                }
                let s = b.set(set, all.len() / arity);
                let r = b.range(s);
                let rows = all[r.start * arity..r.end * arity].to_vec();
                b.map(map, s, sets[to], arity, rows).map(|_| true)
            };
        let mut said = Vec::new();
        for g in &m.groups {
            let name = &g.name;
            if name.contains('/') || name == "." {
                said.push(format!(
                    "group `{name}` left out: an HDF5 file cannot name an object so"
                ));
                continue;
            }
            let mut line = Vec::new();
            for (_, on, members) in l.groups.iter().filter(|(n, _, _)| n == name) {
                let both = group_set_name(name, SETS[*on]);
                match declare(&mut b, &both, &both, *on, 1, members)? {
                    true => line.push(format!("{} of {} (`{both}`)", members.len(), SETS[*on])),
                    false => line.push(format!("`{both}` left out: the name is taken")),
                }
            }
            let plain = if g.dim == m.dim() {
                let map = format!("{name}_cells");
                declare(&mut b, name, &map, 0, 1, &g.members)?.then_some(map)
            } else {
                let facets = g.members.iter().map(|&f| &m.facets[f as usize]);
                let vertices: Vec<u32> = facets.flatten().copied().collect();
                let (arity, map) = (t.facet_arity, format!("{name}_vertices"));
                let fits = vertices.len() == g.members.len() * arity;
                (fits && declare(&mut b, name, &map, 3, arity, &vertices)?).then_some(map)
            };
            line.extend(plain.map(|map| format!("map {map}")));
            said.push(format!("{name}: {}", line.join(", ")));
        }
        Ok((b, said))
    }
}
