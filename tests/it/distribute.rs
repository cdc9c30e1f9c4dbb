//! Distribution on one process (no MPI): a distributed mesh on one rank runs as the plain one,
//! and objects that were not distributed together are refused with errors that name them.

use crate::common;

use parloop::apps::wave::Wave;
use parloop::dist::{Distribution, Partitioner};
use parloop::mesh::unit_square;
use parloop::*;

#[test]
fn a_distributed_wave_on_one_rank_equals_the_plain_one() {
    let ctx = common::ctx();
    let mut a = Wave::new(&ctx, 16, 0.001).unwrap();
    let ctx2 = common::ctx();
    let mut b = Wave::distributed(&ctx2, unit_square(16), 0.001, Partitioner::Block).unwrap();
    for _ in 0..50 {
        a.step().unwrap();
        b.step().unwrap();
    }
    assert_eq!(&*a.p.data_ro().unwrap(), &*b.p.data_ro().unwrap());
    assert_eq!(
        b.p.gather().unwrap().unwrap(),
        a.p.data_ro().unwrap().to_vec()
    );
    assert_eq!(b.vertices.global_size(), a.vertices.size());
}

#[test]
fn objects_not_distributed_together_are_refused() {
    let ctx = common::ctx();
    let mut d = Distribution::new(&ctx);
    let cells = d.set("cells", 4);
    let nodes = d.set("nodes", 5);
    let c2n = d
        .map("c2n", cells, nodes, 2, &[0, 1, 1, 2, 2, 3, 3, 4])
        .unwrap();
    let xd = d.dat("x", nodes, 1, &[1.0f32; 5]).unwrap();
    let mut l = d.distribute(cells, Partitioner::Block).unwrap();
    let (cells, c2n, x) = (l.set(cells), l.map(c2n), l.dat(xd).unwrap());
    // A Dat is handed out once.
    assert!(l.dat(xd).is_err());
    let k = Kernel::new(
        "k",
        "fn k(a: ptr<function, array<f32, 2>>, b: ptr<function, array<f32, 1>>) { (*b)[0] = (*a)[0] + (*a)[1]; }",
    );
    // A Set, Map and Dat made after distribution, reached from a distributed set.
    let late = Set::new("late", 2);
    let to_late = Map::new("to_late", &cells, &late, 2, &[0, 1, 1, 0, 0, 1, 1, 0]).unwrap();
    let y = ctx.dat("y", &late, 1, &[1.0f32, 2.0]).unwrap();
    let z = ctx.dat_zeros::<f32>("z", &cells, 1).unwrap();
    let e = ctx
        .par_loop(&k, &cells, &[y.all(&to_late).read(), z.write()])
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("par_loop `k`")
            && e.contains("`y` through all of `to_late`")
            && e.contains("one Distribution"),
        "{e}"
    );
    // What works: a loop over a subset of the distributed set (its members only), and the
    // same loop over the set.
    let sub = Subset::new("some", &cells, &[0, 2]).unwrap();
    ctx.par_loop(&k, &sub, &[x.all(&c2n).read(), z.write()])
        .unwrap();
    assert_eq!(&*z.data_ro().unwrap(), &[2.0, 0.0, 2.0, 0.0]);
    ctx.par_loop(&k, &cells, &[x.all(&c2n).read(), z.write()])
        .unwrap();
    assert_eq!(&*z.data_ro().unwrap(), &[2.0; 4]);
}

#[test]
fn declarations_are_checked_and_name_the_object() {
    let ctx = common::ctx();
    let mut d = Distribution::new(&ctx);
    let cells = d.set("cells", 4);
    let nodes = d.set("nodes", 5);
    let lonely = d.set("lonely", 3);
    let e = d
        .map("c2n", cells, nodes, 2, &[0, 1, 9, 2, 2, 3, 3, 4])
        .unwrap_err();
    assert!(
        e.to_string()
            .contains("Map `c2n`: value 9 at element 1, index 0"),
        "{e}"
    );
    let e = d.dat("x", nodes, 2, &[1.0f32; 5]).unwrap_err();
    assert!(
        e.to_string().contains("Dat `x`: got 5 values, expected 10"),
        "{e}"
    );
    d.map("c2n", cells, nodes, 2, &[0, 1, 1, 2, 2, 3, 3, 4])
        .unwrap();
    let _ = lonely;
    let e = d
        .distribute(cells, Partitioner::Block)
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("`lonely`"), "{e}");
}
