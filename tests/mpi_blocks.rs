//! A mesh given in blocks (`BlockMesh`: each rank declares only its block of every set, as a
//! parallel reader does) gives each rank the same part as the global-array `Distribution` on
//! the same partition: sections, global numbering, exchange lists, local maps, injectivity
//! and Dat values, on Airfoil's grid and a triangle mesh, on 2 and 3 ranks, for block,
//! scattered and PT-Scotch partitions.
//!
//! `cargo test --features mpi,ptscotch --test mpi_blocks` (needs Open MPI's `mpirun`).

#[path = "common/mpirun.rs"]
mod mpirun;

use parloop::dist::{BlockMesh, Comm, Distributed, Distribution, Partitioner};
use parloop::{Config, Context};

/// A mesh as global arrays: sets (name, size), maps (name, from, to, arity, values), Dats
/// (name, set, dim, values), and the set to partition.
struct Decl {
    sets: Vec<(&'static str, usize)>,
    maps: Vec<(&'static str, usize, usize, usize, Vec<u32>)>,
    dats: Vec<(&'static str, usize, usize, Vec<f32>)>,
    primary: usize,
}

fn airfoil(ni: usize, nj: usize) -> Decl {
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

fn triangles(n: usize) -> Decl {
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

fn global(ctx: &Context, d: &Decl, p: Partitioner) -> Distributed {
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

fn blocks(ctx: &Context, d: &Decl, p: Partitioner) -> Distributed {
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
    b.distribute(sets[d.primary], p).unwrap()
}

fn same_part(what: &str, d: &Decl, mut a: Distributed, mut b: Distributed) {
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

#[test]
#[ignore = "run by the other tests under mpirun"]
fn same_part_worker() {
    let Some(out) = mpirun::out_path() else {
        return;
    };
    let comm = Comm::world().unwrap();
    let ctx = Context::with_comm(Config::from_env().unwrap(), &comm).unwrap();
    let ranks = ctx.ranks();
    for (mesh, d) in [("airfoil", airfoil(12, 6)), ("triangles", triangles(9))] {
        let n = d.sets[d.primary].1;
        let scattered: Vec<u32> = (0..n).map(|e| ((e * 7 + e / 5) % ranks) as u32).collect();
        let mut parts = vec![
            ("block", Partitioner::Block),
            ("scattered", Partitioner::Owners(scattered)),
        ];
        if cfg!(feature = "ptscotch") {
            parts.push(("scotch", Partitioner::Scotch));
        }
        for (name, p) in parts {
            let what = format!("{mesh}, {name} partition, rank {} of {ranks}", ctx.rank());
            let a = global(&ctx, &d, p.clone());
            let b = blocks(&ctx, &d, p);
            same_part(&what, &d, a, b);
        }
    }
    if ctx.rank() == 0 {
        std::fs::write(out, bytemuck::cast_slice(&[1.0f32])).unwrap();
    }
}

#[test]
fn blocks_give_the_global_arrays_part_on_2_and_3_ranks() {
    for np in [2, 3] {
        assert_eq!(mpirun::mpirun(np, "same_part_worker", "block"), vec![1.0]);
    }
}
