//! A mesh given in blocks (`BlockMesh`: each rank declares only its block of every set, as a
//! parallel reader does) gives each rank the same part as the global-array `Distribution` on
//! the same partition: sections, global numbering, exchange lists, local maps, injectivity
//! and Dat values, on Airfoil's grid and a triangle mesh, on 2 and 3 ranks, for block,
//! scattered and PT-Scotch partitions.
//!
//! `cargo test --features mpi,ptscotch --test it -- mpi::blocks::` (needs Open MPI's `mpirun`).

use crate::common::mpirun;

use crate::common::decl;

use decl::{airfoil, blocks, duplicates, global, same_part, tiny, triangles};
use parloop::dist::{Comm, Partitioner};
use parloop::{Config, Context};

#[test]
#[ignore = "run by the other tests under mpirun"]
fn same_part_worker() {
    let Some(out) = mpirun::out_path() else {
        return;
    };
    let comm = Comm::world().unwrap();
    let ctx = Context::with_comm(Config::from_env().unwrap(), &comm).unwrap();
    let ranks = ctx.ranks();
    let meshes = [
        ("airfoil", airfoil(12, 6)),
        ("triangles", triangles(9)),
        ("duplicate targets", duplicates()),
        ("fewer cells than ranks", tiny()),
    ];
    for (mesh, d) in meshes {
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
    mpirun::report_done(ctx.rank(), &out);
}

#[test]
fn blocks_give_the_global_arrays_part_on_2_and_3_ranks() {
    for np in [2, 3] {
        assert_eq!(
            mpirun::mpirun(np, &worker!("same_part_worker"), "block"),
            vec![1.0]
        );
    }
}
