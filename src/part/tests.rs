//! The distribution on random meshes with N simulated ranks: ownership, halos, core, local maps,
//! exchange lists, and an increment loop run rank by rank against the same loop run globally.

use super::*;
use proptest::prelude::*;

struct Mesh {
    sizes: Vec<(&'static str, usize)>,
    /// (from, to, arity, values)
    maps: Vec<(usize, usize, usize, Vec<u32>)>,
}

impl Mesh {
    fn specs(&self) -> Vec<MapSpec<'_>> {
        self.maps
            .iter()
            .map(|(from, to, arity, values)| MapSpec {
                from: *from,
                to: *to,
                arity: *arity,
                values,
            })
            .collect()
    }
}

/// cells (0), nodes (1), edges (2): edges -> cells (2), cells -> nodes (3), edges -> nodes (2).
/// With `local`, each target lies near its element's place in the numbering (a mesh numbered
/// with locality: with block owners, each rank has few neighbours).
fn mesh(seed: u64, ncells: usize, nnodes: usize, nedges: usize, local: bool) -> Mesh {
    let mut rng = crate::util::Rng::new(seed);
    let mut random = |n: usize, to: usize| -> Vec<u32> {
        (0..n)
            .map(|k| {
                if local {
                    ((k * to / n.max(1)) + rng.below(3)).min(to - 1) as u32
                } else {
                    rng.below(to) as u32
                }
            })
            .collect()
    };
    let e2c = random(nedges * 2, ncells);
    let c2n = random(ncells * 3, nnodes);
    let e2n = random(nedges * 2, nnodes);
    Mesh {
        sizes: vec![("cells", ncells), ("nodes", nnodes), ("edges", nedges)],
        maps: vec![(2, 0, 2, e2c), (0, 1, 3, c2n), (2, 1, 2, e2n)],
    }
}

fn parts(m: &Mesh, ranks: usize, owners0: Vec<u32>) -> (Vec<Vec<u32>>, Vec<LocalPart>) {
    let specs = m.specs();
    let owners = derive_owners(&m.sizes, &specs, 0, owners0, ranks).unwrap();
    let parts = (0..ranks as u32)
        .map(|r| local_part(&m.sizes, &specs, &owners, r))
        .collect();
    (owners, parts)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn distribution_is_consistent(
        seed in any::<u64>(),
        ncells in 1usize..120,
        nnodes in 1usize..80,
        nedges in 1usize..200,
        ranks in 1usize..9,
        blocks in any::<bool>(),
        local in any::<bool>(),
    ) {
        let m = mesh(seed, ncells, nnodes, nedges, local);
        let owners0 = if blocks {
            block_owners(ncells, ranks)
        } else {
            let mut rng = crate::util::Rng::new(seed ^ 1);
            (0..ncells).map(|_| rng.below(ranks) as u32).collect()
        };
        let (owners, parts) = parts(&m, ranks, owners0);
        let specs = m.specs();
        for (s, &(_, n)) in m.sizes.iter().enumerate() {
            // Every element owned exactly once, by the rank the owners say.
            let mut count = vec![0; n];
            for p in &parts {
                let ls = &p.sets[s];
                let owned = ls.sections.core + ls.sections.owned;
                prop_assert_eq!(ls.global.len(), owned + ls.sections.exec_halo + ls.sections.nonexec_halo);
                for &g in &ls.global[..owned] {
                    count[g as usize] += 1;
                    prop_assert_eq!(owners[s][g as usize], p.rank);
                }
                for (h, &g) in ls.global[owned..].iter().enumerate() {
                    prop_assert!(owners[s][g as usize] != p.rank);
                    prop_assert_eq!(ls.halo_owner[h], owners[s][g as usize]);
                }
            }
            prop_assert!(count.iter().all(|&c| c == 1), "set {}: {:?}", s, count);
        }
        for p in &parts {
            let r = p.rank;
            for (mi, ms) in specs.iter().enumerate() {
                let from = &p.sets[ms.from];
                let owned = from.sections.core + from.sections.owned;
                let executed = owned + from.sections.exec_halo;
                // Local maps of executed rows translate back to the global map.
                for (l, &g) in from.global[..executed].iter().enumerate() {
                    for j in 0..ms.arity {
                        let lt = p.maps[mi][l * ms.arity + j] as usize;
                        prop_assert_eq!(p.sets[ms.to].global[lt], ms.values[g as usize * ms.arity + j]);
                    }
                }
                // Core elements reach owned elements only.
                for &g in &from.global[..from.sections.core] {
                    for j in 0..ms.arity {
                        let t = ms.values[g as usize * ms.arity + j];
                        prop_assert_eq!(owners[ms.to][t as usize], r);
                    }
                }
                // Exec halo: exactly the foreign elements that reach an owned element.
                let exec: std::collections::HashSet<u32> = from.global[owned..executed].iter().copied().collect();
                for e in 0..m.sizes[ms.from].1 {
                    let reaches = (0..ms.arity).any(|j| owners[ms.to][ms.values[e * ms.arity + j] as usize] == r);
                    if owners[ms.from][e] != r && reaches {
                        prop_assert!(exec.contains(&(e as u32)), "element {} of set {} missing from rank {}'s exec halo", e, ms.from, r);
                    }
                }
            }
            // Halos hold exactly the foreign elements that owned and exec-halo elements reach
            // (plus the exec halo itself).
            for s in 0..m.sizes.len() {
                let ls = &p.sets[s];
                let owned = ls.sections.core + ls.sections.owned;
                let executed = owned + ls.sections.exec_halo;
                let mut want: std::collections::BTreeSet<u32> = ls.global[owned..executed].iter().copied().collect();
                for ms in specs.iter().filter(|ms| ms.to == s) {
                    let fs = &p.sets[ms.from];
                    let fe = fs.sections.core + fs.sections.owned + fs.sections.exec_halo;
                    for &g in &fs.global[..fe] {
                        for j in 0..ms.arity {
                            let t = ms.values[g as usize * ms.arity + j];
                            if owners[s][t as usize] != r {
                                want.insert(t);
                            }
                        }
                    }
                }
                let got: std::collections::BTreeSet<u32> = ls.global[owned..].iter().copied().collect();
                prop_assert_eq!(got, want, "rank {} set {}", r, s);
            }
        }
        // Send and receive lists match pairwise, element for element.
        for p in &parts {
            for s in 0..m.sizes.len() {
                for x in &p.exchanges[s] {
                    let q = &parts[x.rank as usize];
                    let back = q.exchanges[s].iter().find(|y| y.rank == p.rank);
                    let sent: Vec<u32> = x.send.iter().map(|&l| p.sets[s].global[l as usize]).collect();
                    let got: Vec<u32> = back.map_or(vec![], |y| y.recv.iter().map(|&l| q.sets[s].global[l as usize]).collect());
                    prop_assert_eq!(sent, got, "set {} from {} to {}", s, p.rank, x.rank);
                    let recv: Vec<u32> = x.recv.iter().map(|&l| p.sets[s].global[l as usize]).collect();
                    let sent_back: Vec<u32> = back.map_or(vec![], |y| y.send.iter().map(|&l| q.sets[s].global[l as usize]).collect());
                    prop_assert_eq!(recv, sent_back, "set {} from {} to {}", s, x.rank, p.rank);
                }
            }
        }
        // An exchange fills every halo with the owners' values; then an increment loop over
        // edges (owned + exec halo) into cells through the edge -> cell map, reading a value on
        // the edge's nodes, gives every rank's owned cells the global result.
        let node_val: Vec<f64> = (0..nnodes).map(|t| (t * 7 % 13) as f64).collect();
        let mut global = vec![0.0f64; ncells];
        for e in 0..nedges {
            let v = node_val[m.maps[2].3[e * 2] as usize] + 1.0;
            for j in 0..2 {
                global[m.maps[0].3[e * 2 + j] as usize] += v;
            }
        }
        let mut nodes_local: Vec<Vec<f64>> = parts
            .iter()
            .map(|p| {
                let ls = &p.sets[1];
                let owned = ls.sections.core + ls.sections.owned;
                (0..ls.global.len()).map(|l| if l < owned { node_val[ls.global[l] as usize] } else { f64::NAN }).collect()
            })
            .collect();
        for p in &parts {
            for x in &p.exchanges[1] {
                let vals: Vec<f64> = x.send.iter().map(|&l| nodes_local[p.rank as usize][l as usize]).collect();
                let q = &parts[x.rank as usize];
                let y = q.exchanges[1].iter().find(|y| y.rank == p.rank).unwrap();
                for (&l, v) in y.recv.iter().zip(vals) {
                    nodes_local[q.rank as usize][l as usize] = v;
                }
            }
        }
        for p in &parts {
            let nodes = &nodes_local[p.rank as usize];
            prop_assert!(nodes.iter().all(|v| !v.is_nan()), "rank {}: a halo value was not received", p.rank);
            let edges = &p.sets[2];
            let executed = edges.sections.core + edges.sections.owned + edges.sections.exec_halo;
            let cells = &p.sets[0];
            let mut acc = vec![0.0f64; cells.global.len()];
            for l in 0..executed {
                let v = nodes[p.maps[2][l * 2] as usize] + 1.0;
                for j in 0..2 {
                    acc[p.maps[0][l * 2 + j] as usize] += v;
                }
            }
            let owned = cells.sections.core + cells.sections.owned;
            for l in 0..owned {
                prop_assert_eq!(acc[l], global[cells.global[l] as usize], "rank {} cell {}", p.rank, cells.global[l]);
            }
        }
    }
}

#[test]
fn a_set_no_map_reaches_is_an_error_naming_it() {
    let e2c: Vec<u32> = vec![0, 1, 1, 2];
    let maps = [MapSpec {
        from: 1,
        to: 0,
        arity: 2,
        values: &e2c,
    }];
    let sizes = [("cells", 3), ("edges", 2), ("lonely", 5)];
    let e = derive_owners(&sizes, &maps, 0, block_owners(3, 2), 2).unwrap_err();
    assert!(e.to_string().contains("`lonely`"), "{e}");
    let e = derive_owners(&sizes, &maps, 0, vec![0, 1, 5], 2).unwrap_err();
    assert!(e.to_string().contains("rank 5"), "{e}");
    let e = derive_owners(&sizes, &maps, 0, vec![0, 1], 2).unwrap_err();
    assert!(e.to_string().contains("2 owners for a set of 3"), "{e}");
}

#[test]
fn the_dual_graph_joins_elements_that_share_a_target() {
    // Four cells in a row, each with two nodes: 0-1, 1-2, 2-3, 3-4; and one edge joining
    // cells 0 and 3.
    let c2n: Vec<u32> = vec![0, 1, 1, 2, 2, 3, 3, 4];
    let e2c: Vec<u32> = vec![0, 3];
    let maps = [
        MapSpec {
            from: 0,
            to: 1,
            arity: 2,
            values: &c2n,
        },
        MapSpec {
            from: 2,
            to: 0,
            arity: 2,
            values: &e2c,
        },
    ];
    let sizes = [("cells", 4), ("nodes", 5), ("edges", 1)];
    let (xadj, adjncy) = dual_graph(&sizes, &maps, 0);
    let neighbours = |v: usize| adjncy[xadj[v] as usize..xadj[v + 1] as usize].to_vec();
    assert_eq!(neighbours(0), [1, 3]);
    assert_eq!(neighbours(1), [0, 2]);
    assert_eq!(neighbours(3), [0, 2]);
    assert_eq!(edge_cut(&xadj, &adjncy, &[0, 0, 1, 1]), 2);
    assert_eq!(edge_cut(&xadj, &adjncy, &[0, 0, 0, 0]), 0);
}
