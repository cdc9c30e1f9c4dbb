//! [`MeshData::new`]: a mesh's sets, maps, coordinates and groups on a Context, the same
//! object on one process and on N ranks (where the cells are partitioned and each rank keeps
//! its part).

use super::Mesh;
use super::topology::{MeshData, Topology};
use crate::{Context, Error, Map, Result, Set, Subset};

/// The mesh's arrays in global numbering, before they become parloop objects.
struct Lists {
    /// Interior facet k is topology facet `interior[k]`; boundary facet k is `boundary[k]`.
    interior: Vec<usize>,
    boundary: Vec<usize>,
    /// (name, map, from: 0 cells / 1 interior / 2 boundary, to: 0 cells / 3 vertices, arity,
    /// rows)
    maps: Vec<(&'static str, usize, usize, usize, Vec<u32>)>,
    /// (name, on: 0 cells / 1 interior / 2 boundary, members ascending)
    groups: Vec<(String, usize, Vec<u32>)>,
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
        let turned = oriented.orient()?;
        let m = &oriented;
        let t = Topology::new(m.cell_type, &m.cells)?;
        let l = lists(m, &t)?;
        let counts = [
            m.ncells(),
            l.interior.len(),
            l.boundary.len(),
            m.nvertices(),
        ];
        let names = ["cells", "facets", "boundary facets", "vertices"];
        let coords32 = m.coords_f32();
        let (sets, maps, coords, groups) = if ctx.ranks() > 1 {
            let mut d = crate::dist::Distribution::new(ctx);
            let gsets: Vec<_> = (0..4).map(|k| d.set(names[k], counts[k])).collect();
            let mut gmaps = Vec::new();
            for (name, from, to, arity, rows) in &l.maps {
                gmaps.push(d.map(name, gsets[*from], gsets[*to], *arity, rows)?);
            }
            let gc = d.dat("coords", gsets[3], m.dim(), &coords32)?;
            let mut part = d.distribute(gsets[0], crate::dist::Partitioner::KWay)?;
            let sets: Vec<Set> = gsets.iter().map(|&s| part.set(s)).collect();
            let maps: Vec<Map> = gmaps.iter().map(|&g| part.map(g)).collect();
            let coords = part.dat(gc)?;
            let mut groups = Vec::new();
            for (name, on, members) in &l.groups {
                groups.push(part.subset(name, gsets[*on], members)?);
            }
            (sets, maps, coords, groups)
        } else {
            let sets: Vec<Set> = (0..4).map(|k| Set::new(names[k], counts[k])).collect();
            let mut maps = Vec::new();
            for (name, from, to, arity, rows) in &l.maps {
                maps.push(Map::new(*name, &sets[*from], &sets[*to], *arity, rows)?);
            }
            let coords = ctx.dat("coords", &sets[3], m.dim(), &coords32)?;
            let mut groups = Vec::new();
            for (name, on, members) in &l.groups {
                groups.push(Subset::new(name.clone(), &sets[*on], members)?);
            }
            (sets, maps, coords, groups)
        };
        let [cells, facets, boundary, vertices]: [Set; 4] = sets.try_into().expect("four sets");
        let [
            cell_vertices,
            facet_cells,
            facet_vertices,
            boundary_cell,
            boundary_vertices,
        ]: [Map; 5] = maps.try_into().expect("five maps");
        Ok(MeshData {
            turned,
            topology: t,
            interior: l.interior.iter().map(|&f| f as u32).collect(),
            boundary_facets: l.boundary.iter().map(|&f| f as u32).collect(),
            cell_type: m.cell_type,
            coords64: oriented.coords.clone(),
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
fn lists(m: &Mesh, t: &Topology) -> Result<Lists> {
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
        (
            "cell_vertices",
            0,
            3,
            m.cell_type.vertices(),
            m.cells.clone(),
        ),
        (
            "facet_cells",
            1,
            0,
            2,
            interior.iter().flat_map(|&f| t.facet_cells[f]).collect(),
        ),
        (
            "facet_vertices",
            1,
            3,
            fa,
            interior.iter().flat_map(|&f| t.facet(f).to_vec()).collect(),
        ),
        (
            "boundary_cell",
            2,
            0,
            1,
            boundary.iter().map(|&f| t.facet_cells[f][0]).collect(),
        ),
        (
            "boundary_vertices",
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
