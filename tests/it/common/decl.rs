//! Meshes as global arrays for the distributed tests (Airfoil's grid, a triangle mesh), their
//! distribution by both paths, and the comparison of two parts.
#![allow(dead_code)]

use parloop::Context;
use parloop::dist::{BlockMesh, Distributed, Distribution, Partitioner};

/// A mesh as global arrays: sets (name, size), maps (name, from, to, arity, values), Dats
/// (name, set, dim, values), and the set to partition.
pub struct Decl {
    pub sets: Vec<(&'static str, usize)>,
    pub maps: Vec<(&'static str, usize, usize, usize, Vec<u32>)>,
    pub dats: Vec<(&'static str, usize, usize, Vec<f32>)>,
    pub primary: usize,
}

pub fn airfoil(ni: usize, nj: usize) -> Decl {
    let m = parloop::mesh::airfoil::naca0012(ni, nj);
    let flat = |v: &[[u32; 2]]| v.iter().flatten().copied().collect::<Vec<u32>>();
    Decl {
        sets: vec![
            ("nodes", m.x.len()),
            ("cells", m.cells.len()),
            ("edges", m.edges.len()),
            ("bedges", m.bedges.len()),
        ],
        maps: vec![
            (
                "pcell",
                1,
                0,
                4,
                m.cells.iter().flatten().copied().collect(),
            ),
            ("pedge", 2, 0, 2, flat(&m.edges)),
            ("pecell", 2, 1, 2, flat(&m.ecells)),
            ("pbedge", 3, 0, 2, flat(&m.bedges)),
            ("pbecell", 3, 1, 1, m.becells.clone()),
        ],
        dats: vec![
            ("x", 0, 2, m.x.iter().flatten().map(|&v| v as f32).collect()),
            ("bound", 3, 1, m.bound.iter().map(|&b| b as f32).collect()),
            (
                "cellno",
                1,
                1,
                (0..m.cells.len()).map(|c| c as f32).collect(),
            ),
        ],
        primary: 1,
    }
}

/// A map whose rows name a target twice: cell 0 is [0, 0], cell c is [0, c + 1], so node 0's
/// group holds every cell once (64: at the dual graph's limit) however many times cell 0
/// names it.
pub fn duplicates() -> Decl {
    let n = 64;
    let mut rows = vec![0, 0];
    rows.extend((1..n as u32).flat_map(|c| [0, c + 1]));
    Decl {
        sets: vec![("cells", n), ("nodes", n + 1)],
        maps: vec![("c2n", 0, 1, 2, rows)],
        dats: vec![("w", 0, 1, (0..n).map(|c| c as f32).collect())],
        primary: 0,
    }
}

/// Fewer elements than ranks: 2 cells, 3 nodes, 1 edge between the cells (on 3 ranks some
/// ranks' blocks are empty).
pub fn tiny() -> Decl {
    Decl {
        sets: vec![("cells", 2), ("nodes", 3), ("edges", 1)],
        maps: vec![
            ("c2n", 0, 1, 2, vec![0, 1, 1, 2]),
            ("e2c", 2, 0, 2, vec![0, 1]),
        ],
        dats: vec![("w", 1, 1, vec![1.0, 2.0, 3.0])],
        primary: 0,
    }
}

pub fn triangles(n: usize) -> Decl {
    let m = parloop::mesh::unit_square(n);
    let nc = m.cells.len() / 3;
    Decl {
        sets: vec![("cells", nc), ("vertices", m.coords.len())],
        maps: vec![("c2v", 0, 1, 3, m.cells.clone())],
        dats: vec![(
            "coords",
            1,
            3,
            m.coords.iter().flatten().map(|&v| v as f32).collect(),
        )],
        primary: 0,
    }
}

pub fn global(ctx: &Context, d: &Decl, p: Partitioner) -> Distributed {
    let mut g = Distribution::new(ctx);
    let sets: Vec<_> = d.sets.iter().map(|&(n, s)| g.set(n, s)).collect();
    for (name, from, to, arity, values) in &d.maps {
        g.map(name, sets[*from], sets[*to], *arity, values).unwrap();
    }
    for (name, set, dim, values) in &d.dats {
        g.dat(name, sets[*set], *dim, values).unwrap();
    }
    g.distribute(sets[d.primary], p).unwrap()
}

/// This rank's blocks of `d`.
pub fn block_mesh(ctx: &Context, d: &Decl) -> BlockMesh {
    let mut b = BlockMesh::new(ctx);
    let sets: Vec<_> = d.sets.iter().map(|&(n, s)| b.set(n, s)).collect();
    for (name, from, to, arity, values) in &d.maps {
        let r = b.range(sets[*from]);
        let rows = values[r.start * arity..r.end * arity].to_vec();
        b.map(name, sets[*from], sets[*to], *arity, rows).unwrap();
    }
    for (name, set, dim, values) in &d.dats {
        let r = b.range(sets[*set]);
        b.dat(name, sets[*set], *dim, &values[r.start * dim..r.end * dim])
            .unwrap();
    }
    b
}

/// `d` distributed from this rank's blocks.
pub fn blocks(ctx: &Context, d: &Decl, p: Partitioner) -> Distributed {
    let b = block_mesh(ctx, d);
    let primary = b.find_set(d.sets[d.primary].0).unwrap();
    b.distribute(primary, p).unwrap()
}

pub fn same_part(what: &str, d: &Decl, mut a: Distributed, mut b: Distributed) {
    for &(name, size) in &d.sets {
        let (x, y) = (a.set_named(name).unwrap(), b.set_named(name).unwrap());
        assert_eq!(x.sections(), y.sections(), "{what}: sections of {name}");
        assert_eq!(
            x.global_ids(),
            y.global_ids(),
            "{what}: numbering of {name}"
        );
        assert_eq!(x.exchanges(), y.exchanges(), "{what}: exchanges of {name}");
        assert_eq!(y.global_size(), size);
    }
    for (name, _, _, arity, _) in &d.maps {
        let (x, y) = (a.map_named(name).unwrap(), b.map_named(name).unwrap());
        assert_eq!(x.values(), y.values(), "{what}: map {name}");
        for j in (0..*arity).map(Some).chain([None]) {
            assert_eq!(
                x.injective(j),
                y.injective(j),
                "{what}: {name} injective {j:?}"
            );
        }
    }
    for (name, ..) in &d.dats {
        let x = a.dat_named::<f32>(name).unwrap();
        let y = b.dat_named::<f32>(name).unwrap();
        assert_eq!(
            &*x.data_ro().unwrap(),
            &*y.data_ro().unwrap(),
            "{what}: Dat {name}"
        );
    }
    assert_eq!(a.edge_cut, b.edge_cut, "{what}: edge cut");
}
