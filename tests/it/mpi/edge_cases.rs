//! Issue 25's distributed defects, each as the small program that showed it, under `mpirun`
//! on 2 ranks against values computed by hand; and errors that arise on one rank reaching
//! every rank (diverging programs and the timeout: tests/it/mpi/seams.rs).
//!
//! The mesh of the first three: a chain of 8 cells between 9 nodes (cell c has nodes c and
//! c + 1), cells in blocks, so rank 0 owns cells 0-3 and nodes 0-4, and rank 1 owns cells 4-7
//! and nodes 5-8: cell 4 is in rank 0's exec halo, and rank 1 has no exec halo at all.
//!
//! `cargo test --features mpi --test it -- mpi::edge_cases::` (needs Open MPI's `mpirun`).

use crate::common::mpirun;

use mpirun::{mpirun_env, out_path};
use parloop::dist::{Comm, Distributed, Distribution, GlobalMap, GlobalSet, Partitioner};
use parloop::{Config, Context, Error, HostArgs, Kernel};

fn worker_ctx() -> Context {
    let comm = Comm::world().unwrap();
    Context::with_comm(Config::from_env().unwrap(), &comm).unwrap()
}

/// The chain, with a map from nodes to cells (node n to cell n - 2, so that a node rank 1
/// owns reads a cell rank 0 owns).
fn chain(ctx: &Context) -> (Distributed, GlobalSet, GlobalSet, GlobalMap, GlobalMap) {
    let mut d = Distribution::new(ctx);
    let cells = d.set("cells", 8);
    let nodes = d.set("nodes", 9);
    let c2n: Vec<u32> = (0..8).flat_map(|c| [c, c + 1]).collect();
    let c2n = d.map("c2n", cells, nodes, 2, &c2n).unwrap();
    let n2c: Vec<u32> = (0..9).map(|n| n.max(2) - 2).collect();
    let n2c = d.map("n2c", nodes, cells, 1, &n2c).unwrap();
    let part = d.distribute(cells, Partitioner::Block).unwrap();
    (part, cells, nodes, c2n, n2c)
}

/// Adds a cell's value to both its nodes.
fn spread() -> Kernel {
    Kernel::new(
        "spread",
        "fn spread(v: ptr<function, array<f32, 1>>, w: ptr<function, array<f32, 2>>) {
            (*w)[0] = (*v)[0]; (*w)[1] = (*v)[0];
        }",
    )
}

/// What `spread` gives on the chain when cell c holds c + 1: node n gets the values of the
/// cells around it, 1, 1+2, 2+3, ..., 7+8, 8.
fn chain_sums() -> Vec<f32> {
    (0..9)
        .map(|n| (if n > 0 { n } else { 0 } + if n < 8 { n + 1 } else { 0 }) as f32)
        .collect()
}

/// Each of this rank's cells' global number plus one (`set_data`'s order).
fn global_ids_plus_one(cells: &parloop::Set) -> Vec<f32> {
    let ids = cells.global_ids().unwrap();
    ids.iter().map(|&g| g as f32 + 1.0).collect()
}

fn write_out(ctx: &Context, values: &[f32]) {
    if ctx.rank() == 0 {
        let out = std::env::var_os("MPI_TEST_OUT").unwrap();
        std::fs::write(out, bytemuck::cast_slice(values)).unwrap();
    }
}

#[test]
#[ignore = "run by the other tests under mpirun"]
fn exec_halo_worker() {
    let Some(_) = out_path() else { return };
    let ctx = worker_ctx();
    let (part, cells, nodes, c2n, _) = chain(&ctx);
    let (cells, nodes, c2n) = (part.set(cells), part.set(nodes), part.map(c2n));
    let v = ctx.dat_zeros::<f32>("v", &cells, 1).unwrap();
    let w = ctx.dat_zeros::<f32>("w", &nodes, 1).unwrap();
    // v = global cell number + 1, written directly; then read directly by a loop that
    // increments through the map (so it runs the exec halo, and needs v's halo).
    let ids = global_ids_plus_one(&cells);
    let ids = ctx.dat("ids", &cells, 1, &ids).unwrap();
    let set_v = Kernel::new(
        "set_v",
        "fn set_v(i: ptr<function, array<f32, 1>>, v: ptr<function, array<f32, 1>>) { (*v)[0] = (*i)[0]; }",
    );
    ctx.par_loop(&set_v, &cells, &[ids.read(), v.write()])
        .unwrap();
    ctx.par_loop(&spread(), &cells, &[v.read(), w.all(&c2n).inc()])
        .unwrap();
    if let Some(w) = w.gather().unwrap() {
        write_out(&ctx, &w);
    }
}

/// Defect 1: only rank 0 has an exec halo, so only it needed v's halo: rank 0 waited for an
/// exchange rank 1 never recorded (lazy and eager).
#[test]
fn a_rank_without_exec_halo_still_exchanges_lazy_and_eager() {
    let want = chain_sums();
    for lazy in ["1", "0"] {
        let got = mpirun_env(2, &worker!("exec_halo_worker"), &[("PARLOOP_LAZY", lazy)]);
        assert_eq!(got, want, "lazy {lazy}");
    }
}

#[test]
#[ignore = "run by the other tests under mpirun"]
fn host_write_worker() {
    let Some(_) = out_path() else { return };
    let ctx = worker_ctx();
    let (part, cells, nodes, _, n2c) = chain(&ctx);
    let (cells, nodes, n2c) = (part.set(cells), part.set(nodes), part.map(n2c));
    let mut v = ctx.dat_zeros::<f32>("v", &cells, 1).unwrap();
    let u = ctx.dat_zeros::<f32>("u", &nodes, 1).unwrap();
    // Rank 1 holds no halo of the cells; rank 0 holds cell 4. The host writes v = 10 c.
    let owned: Vec<f32> = cells.global_ids().unwrap()[..cells.size()]
        .iter()
        .map(|&g| 10.0 * g as f32)
        .collect();
    if std::env::var_os("WITH_GUARD").is_some() {
        v.data().unwrap().copy_from_slice(&owned);
    } else {
        v.set_data(&owned).unwrap();
    }
    let pull = Kernel::new(
        "pull",
        "fn pull(v: ptr<function, array<f32, 1>>, u: ptr<function, array<f32, 1>>) { (*u)[0] = (*v)[0]; }",
    );
    ctx.par_loop(&pull, &nodes, &[v.at(&n2c, 0).read(), u.write()])
        .unwrap();
    if let Some(u) = u.gather().unwrap() {
        write_out(&ctx, &u);
    }
}

/// Defect 2: a host write on the rank whose set has no halo left the halo "current" there, so
/// the next loop that read it through a map exchanged on the other rank only.
#[test]
fn a_host_write_on_a_rank_without_halo_makes_every_halo_stale() {
    let want: Vec<f32> = (0..9).map(|n| 10.0 * (n.max(2) - 2) as f32).collect();
    assert_eq!(
        mpirun_env(2, &worker!("host_write_worker"), &[]),
        want,
        "set_data"
    );
    let got = mpirun_env(2, &worker!("host_write_worker"), &[("WITH_GUARD", "1")]);
    assert_eq!(got, want, "data()");
}

#[test]
#[ignore = "run by the other tests under mpirun"]
fn host_kernel_worker() {
    let Some(_) = out_path() else { return };
    let ctx = worker_ctx();
    let (part, cells, nodes, c2n, _) = chain(&ctx);
    let (cells, nodes, c2n) = (part.set(cells), part.set(nodes), part.map(c2n));
    let ids: Vec<f32> = cells
        .global_ids()
        .unwrap()
        .iter()
        .map(|&g| g as f32)
        .collect();
    let v = ctx.dat("v", &cells, 1, &ids).unwrap();
    let w = ctx.dat_zeros::<f32>("w", &nodes, 1).unwrap();
    let total = ctx.global("total", &[0.0f32]).unwrap();
    let count = Kernel::host("count", |h: &mut HostArgs| {
        let v = h.get::<f32>(0)[0];
        h.get_mut::<f32>(1).fill(1.0);
        h.get_mut::<f32>(2)[0] = v;
    });
    ctx.par_loop(&count, &cells, &[v.read(), w.all(&c2n).inc(), total.inc()])
        .unwrap();
    let mut out = total.value().unwrap();
    out.extend(w.gather().unwrap().unwrap_or_default());
    write_out(&ctx, &out);
}

/// Defect 3: a host kernel running the exec halo added cell 4 to the Global on rank 0 too
/// (32 where one process gives 0 + 1 + ... + 7 = 28).
#[test]
fn host_kernels_count_each_element_once_in_globals() {
    let mut want = vec![28.0f32];
    want.extend((0..9).map(|n| if n == 0 || n == 8 { 1.0 } else { 2.0 }));
    assert_eq!(mpirun_env(2, &worker!("host_kernel_worker"), &[]), want);
}

#[test]
#[ignore = "run by the other tests under mpirun"]
fn empty_target_worker() {
    let Some(_) = out_path() else { return };
    let ctx = worker_ctx();
    // Every cell on rank 0; node 9 is reached by no cell, so the fallback gives it to rank 1,
    // whose only other element is cell 0 (node 9 maps to it): a non-exec-halo cell whose
    // target in `tags` is on rank 0, while rank 1 holds no tag at all.
    let mut d = Distribution::new(&ctx);
    let cells = d.set("cells", 8);
    let nodes = d.set("nodes", 10);
    let tags = d.set("tags", 1);
    let c2n: Vec<u32> = (0..8).flat_map(|c| [c, c + 1]).collect();
    d.map("c2n", cells, nodes, 2, &c2n).unwrap();
    let n2c: Vec<u32> = (0..10).map(|n| (n % 8) as u32).collect();
    let g_n2c = d.map("n2c", nodes, cells, 1, &n2c).unwrap();
    d.map("c2t", cells, tags, 1, &[0; 8]).unwrap();
    let part = d
        .distribute(cells, Partitioner::Owners(vec![0; 8]))
        .unwrap();
    let (cells, nodes) = (part.set(cells), part.set(nodes));
    let n2c = part.map(g_n2c);
    let x = ctx.dat_zeros::<f32>("x", &cells, 1).unwrap();
    let ids: Vec<f32> = nodes
        .global_ids()
        .unwrap()
        .iter()
        .map(|&g| g as f32)
        .collect();
    let n_ids = ctx.dat("n_ids", &nodes, 1, &ids).unwrap();
    let first = Kernel::new(
        "first",
        "fn first(n: ptr<function, array<f32, 1>>, x: ptr<function, array<f32, 1>>) { (*x)[0] = (*n)[0]; }",
    );
    // MAX through n2c: every cell gets the largest node number that maps to it.
    ctx.par_loop(&first, &nodes, &[n_ids.read(), x.at(&n2c, 0).max()])
        .unwrap();
    if let Some(x) = x.gather().unwrap() {
        write_out(&ctx, &x);
    }
}

/// Defect 4: a valid mesh was refused on the rank that holds none of a map's target set.
#[test]
fn a_rank_holding_no_target_element_distributes() {
    // Cells 0 and 1 are reached by nodes 0, 8 and 1, 9.
    let want: Vec<f32> = (0..8)
        .map(|c| match c {
            0 => 8.0,
            1 => 9.0,
            c => c as f32,
        })
        .collect();
    assert_eq!(mpirun_env(2, &worker!("empty_target_worker"), &[]), want);
}

#[test]
#[ignore = "run by the other tests under mpirun"]
fn one_rank_fails_worker() {
    let Some(_) = out_path() else { return };
    let ctx = worker_ctx();
    let rank = ctx.rank();
    // In distribute: rank 1 alone passes a partition of the wrong length.
    let mut d = Distribution::new(&ctx);
    let cells = d.set("cells", 8);
    let nodes = d.set("nodes", 9);
    let c2n: Vec<u32> = (0..8).flat_map(|c| [c, c + 1]).collect();
    d.map("c2n", cells, nodes, 2, &c2n).unwrap();
    let owners = if rank == 1 {
        vec![0; 7]
    } else {
        vec![0, 0, 0, 0, 1, 1, 1, 1]
    };
    let err = d.distribute(cells, Partitioner::Owners(owners)).err();
    let msg = err.expect("an error on every rank").to_string();
    assert!(
        msg.contains(&format!("rank {rank} of 2 was given owners that differ")),
        "rank {rank}: {msg}"
    );
    // In a force: checking mode finds an index out of range on rank 1's part only.
    let (part, cells, _, _, _) = chain(&ctx);
    let cells = part.set(cells);
    let ids: Vec<f32> = cells
        .global_ids()
        .unwrap()
        .iter()
        .map(|&g| g as f32)
        .collect();
    let v = ctx.dat("v", &cells, 1, &ids).unwrap();
    let o = ctx.dat_zeros::<f32>("o", &cells, 1).unwrap();
    let peek = Kernel::new(
        "peek",
        "fn peek(v: ptr<function, array<f32, 1>>, o: ptr<function, array<f32, 1>>) {
            let i = select(0, 1, (*v)[0] == 6.0);
            (*o)[0] = (*v)[i];
        }",
    );
    ctx.par_loop(&peek, &cells, &[v.read(), o.write()]).unwrap();
    let err = o.gather().err().expect("an error on every rank");
    match (rank, &err) {
        (1, Error::Check { message: m, .. }) => assert!(m.contains("peek"), "{m}"),
        (
            0,
            Error::Rank {
                rank: 1,
                message: m,
            },
        ) => {
            assert!(
                m.contains("rank 1 of 2 failed") && m.contains("peek"),
                "{m}"
            )
        }
        _ => panic!("rank {rank}: {err:?}"),
    }
    // And the ranks go on together.
    let again = ctx.dat_zeros::<f32>("again", &cells, 1).unwrap();
    assert_eq!(
        again.gather().unwrap().map(|v| v.len()),
        (rank == 0).then_some(8)
    );
    write_out(&ctx, &[1.0]);
}

/// An error on one rank, inside `distribute` or a force, is an error on every rank that names
/// the rank where it arose; afterwards the ranks still run together.
#[test]
fn an_error_on_one_rank_reaches_every_rank() {
    let got = mpirun_env(
        2,
        &worker!("one_rank_fails_worker"),
        &[("PARLOOP_CHECK", "1")],
    );
    assert_eq!(got, [1.0]);
}

#[test]
#[ignore = "run by the other tests under mpirun"]
fn exec_only_halo_worker() {
    let Some(_) = out_path() else { return };
    let ctx = worker_ctx();
    // tags[c] belongs to cell c. Rank 0 runs cell 4 as exec halo, so it holds tag 4 in its
    // non-exec halo, though no map row crosses owners through the tags (tag 4 and cell 4
    // are both rank 1's): the tags' halo must still be exchanged.
    let mut d = Distribution::new(&ctx);
    let (cells, nodes, tags) = (d.set("cells", 8), d.set("nodes", 9), d.set("tags", 8));
    let c2n: Vec<u32> = (0..8).flat_map(|c| [c, c + 1]).collect();
    let c2n = d.map("c2n", cells, nodes, 2, &c2n).unwrap();
    let c2t = d
        .map("c2t", cells, tags, 1, &(0..8).collect::<Vec<u32>>())
        .unwrap();
    let p = d.distribute(cells, Partitioner::Block).unwrap();
    let (cells, nodes, tags) = (p.set(cells), p.set(nodes), p.set(tags));
    let (c2n, c2t) = (p.map(c2n), p.map(c2t));
    let ids: Vec<f32> = tags
        .global_ids()
        .unwrap()
        .iter()
        .map(|&g| g as f32 + 1.0)
        .collect();
    let ids = ctx.dat("ids", &tags, 1, &ids).unwrap();
    let t = ctx.dat_zeros::<f32>("t", &tags, 1).unwrap();
    let w = ctx.dat_zeros::<f32>("w", &nodes, 1).unwrap();
    let copy = Kernel::new(
        "copy",
        "fn copy(i: ptr<function, array<f32, 1>>, t: ptr<function, array<f32, 1>>) { (*t)[0] = (*i)[0]; }",
    );
    ctx.par_loop(&copy, &tags, &[ids.read(), t.write()])
        .unwrap();
    ctx.par_loop(
        &spread(),
        &cells,
        &[t.at(&c2t, 0).read(), w.all(&c2n).inc()],
    )
    .unwrap();
    if let Some(w) = w.gather().unwrap() {
        write_out(&ctx, &w);
    }
}

/// A set whose only halo comes from exec-halo elements (found by review): its halo is
/// exchanged like any other.
#[test]
fn a_halo_reached_only_through_the_exec_halo_is_exchanged() {
    let want = chain_sums();
    for lazy in ["1", "0"] {
        let got = mpirun_env(
            2,
            &worker!("exec_only_halo_worker"),
            &[("PARLOOP_LAZY", lazy)],
        );
        assert_eq!(got, want, "lazy {lazy}");
    }
}

#[test]
#[ignore = "run by the other tests under mpirun"]
fn global_max_worker() {
    let Some(_) = out_path() else { return };
    let ctx = worker_ctx();
    let (part, cells, ..) = chain(&ctx);
    let cells = part.set(cells);
    let ids = global_ids_plus_one(&cells);
    let v = ctx.dat("v", &cells, 1, &ids).unwrap();
    let g = ctx.global::<f32>("g", &[f32::NEG_INFINITY]).unwrap();
    let mx = Kernel::new(
        "mx",
        "fn mx(a: ptr<function, array<f32, 1>>, g: ptr<function, array<f32, 1>>) { \
         (*g)[0] = max((*g)[0], (*a)[0]); }",
    );
    ctx.par_loop(&mx, &cells, &[v.read(), g.max()]).unwrap();
    let first = g.value().unwrap()[0];
    // A loop over a set that is not distributed (every rank runs it whole) reduces into the
    // same Global: its only write, which must not be dropped as dead.
    let plain = parloop::Set::new("plain", 1);
    let w = ctx.dat("w", &plain, 1, &[100.0f32]).unwrap();
    ctx.par_loop(&mx, &plain, &[w.read(), g.max()]).unwrap();
    write_out(&ctx, &[first, g.value().unwrap()[0]]);
}

/// Review of issue 31: the end of a MIN/MAX reduction over the ranks marked the user's Global
/// as dropped, so a later loop whose only write was into it was dropped as dead.
#[test]
fn a_global_max_reduced_over_the_ranks_stays_alive_lazy_and_eager() {
    for lazy in ["1", "0"] {
        let got = mpirun_env(2, &worker!("global_max_worker"), &[("PARLOOP_LAZY", lazy)]);
        assert_eq!(got, [8.0, 100.0], "lazy {lazy}");
    }
}

#[test]
#[ignore = "run by the other tests under mpirun"]
fn differing_declarations_worker() {
    let Some(_) = out_path() else { return };
    let ctx = worker_ctx();
    let mut d = Distribution::new(&ctx);
    let cells = d.set("cells", 8);
    let nodes = d.set("nodes", 9);
    let mut c2n: Vec<u32> = (0..8).flat_map(|c| [c, c + 1]).collect();
    let extra = std::env::var_os("EXTRA_SET").is_some();
    if ctx.rank() == 1 && !extra {
        c2n[5] = 0;
    }
    d.map("c2n", cells, nodes, 2, &c2n).unwrap();
    if ctx.rank() == 1 && extra {
        d.set("faces", 3);
    }
    let e = d.distribute(cells, Partitioner::Block).err().unwrap();
    let text = e.to_string();
    let want = if extra {
        "rank 1 declared a different number of sets, maps and Dats than rank 0 (3)"
    } else {
        "Map `c2n` on rank 1 differs from rank 0's"
    };
    assert!(text.contains(want), "{text}");
    let rank_is_named = match (&e, ctx.rank()) {
        (Error::Data(_), 1) => true,
        (Error::Rank { rank: 1, .. }, 0) => true,
        _ => false,
    };
    assert!(rank_is_named, "{e:?}");
    write_out(&ctx, &[1.0]);
}

/// A Distribution whose declarations differ between ranks is an error naming the
/// declaration and the rank where it differs, on every rank.
#[test]
fn differing_declarations_name_the_map_and_the_rank() {
    let got = mpirun_env(2, &worker!("differing_declarations_worker"), &[]);
    assert_eq!(got, vec![1.0]);
    let got = mpirun_env(
        2,
        &worker!("differing_declarations_worker"),
        &[("EXTRA_SET", "1")],
    );
    assert_eq!(got, vec![1.0], "one more set on rank 1");
}

#[test]
#[ignore = "run by the other tests under mpirun"]
fn differing_meshes_worker() {
    let Some(_) = out_path() else { return };
    let ctx = worker_ctx();
    let mut mesh = parloop::mesh::unit_square(4);
    let degenerate = std::env::var_os("DEGENERATE").is_some();
    if ctx.rank() == 1 {
        if degenerate {
            // Cell 1 with a repeated vertex, which orientation refuses.
            mesh.cells[4] = mesh.cells[3];
        } else {
            mesh.coords[6][0] += 0.01;
        }
    }
    let e = parloop::mesh::topology::MeshData::new(&ctx, &mesh)
        .err()
        .unwrap();
    let text = e.to_string();
    let want = if degenerate {
        "cell 1 (triangle"
    } else {
        "different vertex coordinates"
    };
    assert!(text.contains(want), "{text}");
    write_out(&ctx, &[1.0]);
}

/// MeshData::new given a different mesh on one rank is an error on every rank, not a wait
/// for the others: different coordinates (same connectivity), or a cell only one rank
/// cannot use.
#[test]
fn a_mesh_that_differs_on_one_rank_is_an_error_on_all() {
    let got = mpirun_env(2, &worker!("differing_meshes_worker"), &[]);
    assert_eq!(got, vec![1.0]);
    let env = [("DEGENERATE", "1"), ("PARLOOP_COMM_TIMEOUT", "60")];
    let got = mpirun_env(2, &worker!("differing_meshes_worker"), &env);
    assert_eq!(got, vec![1.0], "a bad cell on rank 1");
}
