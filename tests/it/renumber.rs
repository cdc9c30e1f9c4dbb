//! Locality renumbering of declared Sets (mesh::renumber): the Maps and Dats that refer to a
//! renumbered Set follow it, a loop gives the same results (permuted), the spread of the
//! cell -> vertex map shrinks, and bad input is refused.

use crate::common;

use parloop::mesh::renumber::Renumbering;
use parloop::mesh::unit_cube_tets;
use parloop::{Kernel, Map, Set};

/// Mean over cells of (largest - smallest vertex index): how far apart a cell's data sits.
fn spread(values: &[u32], arity: usize) -> f64 {
    let total: u64 = values
        .chunks_exact(arity)
        .map(|c| (c.iter().max().unwrap() - c.iter().min().unwrap()) as u64)
        .sum();
    total as f64 / (values.len() / arity) as f64
}

#[test]
fn renumbered_sets_carry_their_maps_and_dats_and_change_no_result() {
    let ctx = common::ctx();
    let (mesh, _) = unit_cube_tets(6).shuffled(7);
    let vertices = Set::new("vertices", mesh.nvertices());
    let cells = Set::new("cells", mesh.ncells());
    let c2v = Map::new("c2v", &cells, &vertices, 4, &mesh.cells).unwrap();
    let x: Vec<f32> = mesh
        .coords
        .iter()
        .map(|c| c[0] as f32 + 2.0 * c[2] as f32)
        .collect();
    let xd = ctx.dat("x", &vertices, 1, &x).unwrap();
    let w: Vec<f32> = (0..mesh.ncells()).map(|c| (c % 7) as f32).collect();
    let wd = ctx.dat("w", &cells, 1, &w).unwrap();
    // Each cell adds w * (sum of its vertices' x) to each of its vertices.
    let k = Kernel::new(
        "gather_scatter",
        "fn gather_scatter(x: ptr<function, array<f32, 4>>, w: ptr<function, array<f32, 1>>,
                           a: ptr<function, array<f32, 4>>) {
            let s = (*x)[0] + (*x)[1] + (*x)[2] + (*x)[3];
            for (var j = 0; j < 4; j++) { (*a)[j] += (*w)[0] * s; }
        }",
    );
    let run =
        |cells: &Set, vertices: &Set, c2v: &Map, xd: &parloop::Dat<f32>, wd: &parloop::Dat<f32>| {
            let a = ctx.dat_zeros::<f32>("a", vertices, 1).unwrap();
            ctx.par_loop(
                &k,
                cells,
                &[xd.all(c2v).read(), wd.read(), a.all(c2v).inc()],
            )
            .unwrap();
            a.data_ro().unwrap().to_vec()
        };
    let before = run(&cells, &vertices, &c2v, &xd, &wd);

    // Vertices along the curve through their coordinates, cells through their centroids.
    let rv = Renumbering::z_order(&mesh.coords);
    let centroids: Vec<[f64; 3]> = mesh
        .cells
        .chunks_exact(4)
        .map(|c| {
            let mut s = [0.0; 3];
            for &v in c {
                for (sa, xa) in s.iter_mut().zip(mesh.coords[v as usize]) {
                    *sa += xa / 4.0;
                }
            }
            s
        })
        .collect();
    let rc = Renumbering::z_order(&centroids);
    let nv = rv.apply(&vertices).unwrap();
    let nc = rc.apply(&cells).unwrap();
    let c2v2 = nc.map(&nv.map(&c2v).unwrap()).unwrap();
    assert_eq!(c2v2.from_set().id(), nc.set().id());
    assert_eq!(c2v2.to_set().id(), nv.set().id());
    let xd2 = nv.dat(&ctx, &xd).unwrap();
    let wd2 = nc.dat(&ctx, &wd).unwrap();
    let after = run(nc.set(), nv.set(), &c2v2, &xd2, &wd2);

    // A permutation of each set...
    for r in [&rv, &rc] {
        let mut o = r.order().to_vec();
        o.sort_unstable();
        assert!(o.iter().enumerate().all(|(k, &v)| k as u32 == v));
    }
    // ...that moves every value with its element and changes no result (sums of the same
    // terms in another order: round-off only).
    for (old, &b) in before.iter().enumerate() {
        let a = after[rv.new_index(old as u32) as usize];
        assert!(
            (a - b).abs() <= 1e-5 * b.abs().max(1.0),
            "vertex {old}: {b} vs {a}"
        );
    }
    // The cells' vertices sit closer together (shuffled: about a third of the set apart).
    let (s0, s1) = (spread(&mesh.cells, 4), spread(c2v2.values(), 4));
    assert!(s1 * 3.0 < s0, "spread {s0} -> {s1}");
}

#[test]
fn bad_renumberings_are_refused_with_what_is_wrong() {
    let ctx = common::ctx();
    let e = |r: parloop::Result<Renumbering>| r.err().unwrap().to_string();
    assert!(e(Renumbering::from_order(vec![0, 2, 2])).contains("old element 2 appears twice"));
    assert!(e(Renumbering::from_order(vec![0, 3, 1])).contains("out of range 0..3"));
    let a = Set::new("a", 3);
    let b = Set::new("b", 2);
    let c = Set::new("c", 2);
    let r = Renumbering::from_order(vec![2, 0, 1]).unwrap();
    let msg = r.apply(&b).err().unwrap().to_string();
    assert!(
        msg.contains("`b`: the set has 2 elements, the renumbering 3"),
        "{msg}"
    );
    let ra = r.apply(&a).unwrap();
    let m = Map::new("b2c", &b, &c, 1, &[1, 0]).unwrap();
    let msg = ra.map(&m).err().unwrap().to_string();
    assert!(msg.contains("map `b2c` goes from `b` to `c`"), "{msg}");
    let d = ctx.dat("d", &b, 1, &[1.0f32, 2.0]).unwrap();
    let msg = ra.dat(&ctx, &d).err().unwrap().to_string();
    assert!(msg.contains("Dat `d` is on `b`"), "{msg}");
    // A map from the set to itself is renumbered at both ends.
    let self_map = Map::new("next", &a, &a, 1, &[1, 2, 0]).unwrap();
    let m2 = ra.map(&self_map).unwrap();
    // New k is old order[k]; old e -> old next(e); so new k -> new_index(next(order[k])).
    let want: Vec<u32> = (0..3)
        .map(|k| r.new_index([1, 2, 0][r.order()[k] as usize]))
        .collect();
    assert_eq!(m2.values(), &want[..]);
}
