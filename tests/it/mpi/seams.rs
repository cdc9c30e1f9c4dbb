//! A user's program at the seams of a distributed run, under `mpirun` on 2 and 3 ranks: values
//! given to a Dat on a rank's part (halo included, or owned only), maps made with `Map::new`
//! after the distribution, checks that fail on one rank only, and Dats dropped on one rank only
//! (ranks whose programs diverge: `mpi::diverged`). Each result is the one-process result,
//! computed here by hand, or the same clear error on every rank.
//!
//! The mesh: a chain of 8 cells between 9 nodes (cell c has nodes c and c + 1), cells in
//! blocks on 2 ranks (rank 0 owns cells 0-3 and nodes 0-4, rank 1 cells 4-7 and nodes 5-8), or
//! scattered round robin on 3.
//!
//! `cargo test --features mpi --test it -- mpi::seams::` (needs Open MPI's `mpirun`).

use crate::common::mpirun;

use mpirun::{mpirun_env, out_path};
use parloop::dist::{Comm, Distributed, Distribution, GlobalMap, GlobalSet, Partitioner};
use parloop::{Config, Context, Error, Kernel, Map, Set};
use std::collections::HashMap;

pub(super) fn worker_ctx(config: Config) -> Context {
    let comm = Comm::world().unwrap();
    Context::with_comm(config, &comm).unwrap()
}

/// The chain on this context's ranks: blocks on 2 ranks, round robin on more. Nodes also map
/// to a cell (node n to cell n - 2), so that a rank holds cells in its non-exec halo.
pub(super) fn chain(ctx: &Context) -> (Distributed, GlobalSet, GlobalSet, GlobalMap) {
    let mut d = Distribution::new(ctx);
    let cells = d.set("cells", 8);
    let nodes = d.set("nodes", 9);
    let c2n: Vec<u32> = (0..8).flat_map(|c| [c, c + 1]).collect();
    let c2n = d.map("c2n", cells, nodes, 2, &c2n).unwrap();
    let n2c: Vec<u32> = (0..9).map(|n| n.max(2) - 2).collect();
    d.map("n2c", nodes, cells, 1, &n2c).unwrap();
    let partitioner = if ctx.ranks() == 2 {
        Partitioner::Block
    } else {
        Partitioner::Owners((0..8).map(|c| (c % ctx.ranks()) as u32).collect())
    };
    let part = d.distribute(cells, partitioner).unwrap();
    (part, cells, nodes, c2n)
}

/// `f` of each local element's global number; the halo part replaced by `halo`.
pub(super) fn local_values(set: &Set, f: impl Fn(u32) -> f32, halo: Option<f32>) -> Vec<f32> {
    let ids = set.global_ids().unwrap();
    ids.iter()
        .enumerate()
        .map(|(k, &g)| match halo {
            Some(h) if k >= set.size() => h,
            _ => f(g),
        })
        .collect()
}

pub(super) fn write_out(ctx: &Context, values: &[f32]) {
    if ctx.rank() == 0 {
        let out = std::env::var_os("MPI_TEST_OUT").unwrap();
        std::fs::write(out, bytemuck::cast_slice(values)).unwrap();
    }
}

/// Each cell gets the sum of its two nodes' values.
fn gather_nodes() -> Kernel {
    Kernel::new(
        "gather_nodes",
        "fn gather_nodes(x: ptr<function, array<f32, 2>>, y: ptr<function, array<f32, 1>>) {
            (*y)[0] = (*x)[0] + (*x)[1];
        }",
    )
}

#[test]
#[ignore = "run by the other tests under mpirun"]
fn initial_values_worker() {
    let Some(_) = out_path() else { return };
    let ctx = worker_ctx(Config::from_env().unwrap());
    let (part, cells, nodes, c2n) = chain(&ctx);
    let (cells, nodes, c2n) = (part.set(cells), part.set(nodes), part.map(c2n));
    let f = |g: u32| (g * g + 1) as f32;
    // Every local value given, with something else than the owners' values in the halo; the
    // owned values only; and set_data of both kinds on a fourth Dat.
    let all = ctx
        .dat("all", &nodes, 1, &local_values(&nodes, f, Some(-999.0)))
        .unwrap();
    let owned: Vec<f32> = local_values(&nodes, f, None)[..nodes.size()].to_vec();
    let own = ctx.dat("own", &nodes, 1, &owned).unwrap();
    let mut set = ctx.dat_zeros::<f32>("set", &nodes, 1).unwrap();
    set.set_data(&local_values(&nodes, f, Some(-7.0))).unwrap();
    let mut out = Vec::new();
    for x in [&all, &own, &set] {
        let y = ctx.dat_zeros::<f32>("y", &cells, 1).unwrap();
        ctx.par_loop(&gather_nodes(), &cells, &[x.all(&c2n).read(), y.write()])
            .unwrap();
        out.extend(y.gather().unwrap().unwrap_or_default());
    }
    // set_data with owned values after a loop read the halo: exchanged again.
    set.set_data(&vec![2.0; nodes.size()]).unwrap();
    let y = ctx.dat_zeros::<f32>("y", &cells, 1).unwrap();
    ctx.par_loop(&gather_nodes(), &cells, &[set.all(&c2n).read(), y.write()])
        .unwrap();
    out.extend(y.gather().unwrap().unwrap_or_default());
    // A wrong length on one rank is an error on every rank.
    let n = if ctx.rank() == 1 {
        nodes.total() + 1
    } else {
        nodes.size()
    };
    let err = ctx.dat("bad", &nodes, 1, &vec![0.0f32; n]).err().unwrap();
    assert!(err.to_string().contains("Dat `bad`"), "{err}");
    write_out(&ctx, &out);
}

/// Values given to a Dat on a rank's part: the halo part is never trusted (the owners' values
/// replace it), owned values alone are enough, on 2 ranks in blocks and 3 scattered, lazy and
/// eager.
#[test]
fn values_given_on_a_ranks_part_equal_one_process() {
    let f = |g: u32| (g * g + 1) as f32;
    let sums: Vec<f32> = (0..8).map(|c| f(c) + f(c + 1)).collect();
    let mut want = [sums.clone(), sums.clone(), sums].concat();
    want.extend([4.0; 8]);
    for (np, lazy) in [(2, "1"), (3, "1"), (2, "0")] {
        let got = mpirun_env(
            np,
            &worker!("initial_values_worker"),
            &[("PARLOOP_LAZY", lazy)],
        );
        assert_eq!(got, want, "{np} ranks, lazy {lazy}");
    }
}

#[test]
#[ignore = "run by the other tests under mpirun"]
fn map_after_distribution_worker() {
    let Some(_) = out_path() else { return };
    let ctx = worker_ctx(Config::from_env().unwrap());
    let (part, cells, nodes, _) = chain(&ctx);
    let (cells, nodes) = (part.set(cells), part.set(nodes));
    // Cell g to node g, made on this rank's part: the rows a loop can run hold their node; the
    // non-exec-halo rows, whose node may not be here, hold 0.
    let local: HashMap<u32, u32> = nodes
        .global_ids()
        .unwrap()
        .iter()
        .enumerate()
        .map(|(k, &g)| (g, k as u32))
        .collect();
    let run = cells.size() + cells.sections().exec_halo;
    let values: Vec<u32> = cells.global_ids().unwrap()[..]
        .iter()
        .enumerate()
        .map(|(k, g)| if k < run { local[g] } else { 0 })
        .collect();
    let c2n0 = Map::new("c2n0", &cells, &nodes, 1, &values).unwrap();
    let ids = ctx
        .dat(
            "ids",
            &cells,
            1,
            &local_values(&cells, |g| g as f32 + 1.0, None)[..cells.size()],
        )
        .unwrap();
    let w = ctx.dat_zeros::<f32>("w", &nodes, 1).unwrap();
    let i = ctx.dat_zeros::<f32>("i", &nodes, 1).unwrap();
    let copy = Kernel::new(
        "copy",
        "fn copy(a: ptr<function, array<f32, 1>>, b: ptr<function, array<f32, 1>>) { (*b)[0] = (*a)[0]; }",
    );
    let add = Kernel::new(
        "add",
        "fn add(a: ptr<function, array<f32, 1>>, b: ptr<function, array<f32, 1>>) { (*b)[0] += (*a)[0]; }",
    );
    ctx.par_loop(&copy, &cells, &[ids.read(), w.at(&c2n0, 0).write()])
        .unwrap();
    ctx.par_loop(&add, &cells, &[ids.read(), i.at(&c2n0, 0).inc()])
        .unwrap();
    // Not injective on rank 1 alone (every row to its first node): refused on every rank.
    let first = if ctx.rank() == 1 {
        vec![0; values.len()]
    } else {
        values.clone()
    };
    let c2first = Map::new("c2first", &cells, &nodes, 1, &first).unwrap();
    let err = ctx
        .par_loop(&copy, &cells, &[ids.read(), w.at(&c2first, 0).write()])
        .unwrap_err();
    assert!(
        err.to_string().contains("not injective") || err.to_string().contains("rank 1 of"),
        "{err}"
    );
    // On 2 ranks, rank 0 sends cell 0 to node 5 too, which rank 1 owns but reaches from
    // cell 5 only: an increment there would be lost, so every rank refuses the loop.
    if ctx.ranks() == 2 {
        let mut stray = values.clone();
        if ctx.rank() == 0 {
            stray[0] = local[&5];
        }
        let stray = Map::new("stray", &cells, &nodes, 1, &stray).unwrap();
        let err = ctx
            .par_loop(&add, &cells, &[ids.read(), i.at(&stray, 0).inc()])
            .unwrap_err();
        let m = err.to_string();
        assert!(
            m.contains("Map `stray`") && m.contains("would be lost"),
            "{m}"
        );
        // Reading through it needs no owner's help: allowed.
        let r = ctx.dat_zeros::<f32>("r", &cells, 1).unwrap();
        ctx.par_loop(&copy, &cells, &[i.at(&stray, 0).read(), r.write()])
            .unwrap();
        // Written at index 0 (cell g to node g) and read at index 1 (the stray one): allowed.
        let both: Vec<u32> = values
            .iter()
            .zip(stray.values())
            .flat_map(|(&a, &b)| [a, b])
            .collect();
        let both = Map::new("both", &cells, &nodes, 2, &both).unwrap();
        let j = ctx.dat_zeros::<f32>("j", &nodes, 1).unwrap();
        ctx.par_loop(&add, &cells, &[ids.read(), j.at(&both, 0).inc()])
            .unwrap();
        ctx.par_loop(&copy, &cells, &[j.at(&both, 1).read(), r.write()])
            .unwrap();
        let j = j.gather().unwrap().unwrap_or_default();
        assert!(
            j.is_empty() || j[..8] == [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0],
            "{j:?}"
        );
        // Cell g to node g + 1, but rank 0's copy of cell 4 (its exec halo) holds a
        // placeholder: cell 4 would be counted twice, into two nodes. Refused on every rank.
        let next: Vec<u32> = cells.global_ids().unwrap()[..]
            .iter()
            .enumerate()
            .map(|(k, &g)| match k {
                k if k < cells.size() => local[&(g + 1)],
                k if k < run && ctx.rank() == 0 => 0,
                k if k < run => local[&(g + 1)],
                _ => 0,
            })
            .collect();
        let next = Map::new("next", &cells, &nodes, 1, &next).unwrap();
        let err = ctx
            .par_loop(&add, &cells, &[ids.read(), i.at(&next, 0).inc()])
            .unwrap_err();
        assert!(err.to_string().contains("Map `next`"), "{err}");
    }
    // READ through it, after the writes.
    let r = ctx.dat_zeros::<f32>("r", &cells, 1).unwrap();
    ctx.par_loop(&copy, &cells, &[w.at(&c2n0, 0).read(), r.write()])
        .unwrap();
    let mut out = w.gather().unwrap().unwrap_or_default();
    out.extend(i.gather().unwrap().unwrap_or_default());
    out.extend(r.gather().unwrap().unwrap_or_default());
    write_out(&ctx, &out);
}

/// WRITE, INC and READ through a map made with `Map::new` on each rank's part after the
/// distribution (injective over the whole mesh, placeholders in rows no loop runs): every rank
/// allows the WRITE, and the values are one process's.
#[test]
fn a_map_made_after_distribution_writes_like_one_process() {
    let mut want: Vec<f32> = (0..8).map(|c| c as f32 + 1.0).collect();
    want.push(0.0);
    let mut want = [want.clone(), want].concat();
    want.extend((0..8).map(|c| c as f32 + 1.0));
    for np in [2, 3] {
        assert_eq!(
            mpirun_env(np, &worker!("map_after_distribution_worker"), &[]),
            want,
            "{np} ranks"
        );
    }
}

#[test]
#[ignore = "run by the other tests under mpirun"]
fn one_rank_check_worker() {
    let Some(_) = out_path() else { return };
    let ctx = worker_ctx(Config::from_env().unwrap());
    let rank = ctx.rank();
    let (part, cells, nodes, c2n) = chain(&ctx);
    let (cells, nodes, c2n) = (part.set(cells), part.set(nodes), part.map(c2n));
    let x = ctx
        .dat("x", &nodes, 1, &local_values(&nodes, |g| g as f32, None))
        .unwrap();
    let y = ctx.dat_zeros::<f32>("y", &cells, 1).unwrap();
    // The kernel's source is built from a rank-dependent string: it does not compile on rank 1.
    let op = if rank == 1 { "+ +" } else { "+" };
    let broken = Kernel::new(
        "gather_nodes",
        format!(
            "fn gather_nodes(x: ptr<function, array<f32, 2>>, y: ptr<function, array<f32, 1>>) {{
                (*y)[0] = (*x)[0] {op} (*x)[1];
            }}"
        ),
    );
    let err = ctx
        .par_loop(&broken, &cells, &[x.all(&c2n).read(), y.write()])
        .unwrap_err();
    match (rank, &err) {
        (
            1,
            Error::Kernel {
                message: m,
                par_loop,
            },
        ) => {
            assert!(m.contains("does not compile"), "{m}");
            assert_eq!(
                par_loop.as_ref().map(|p| p.kernel.as_str()),
                Some("gather_nodes")
            );
        }
        (
            _,
            Error::Rank {
                rank: 1,
                message: m,
            },
        ) => assert!(
            m.contains("rank 1 of") && m.contains("par_loop `gather_nodes`"),
            "{m}"
        ),
        _ => panic!("rank {rank}: {err:?}"),
    }
    // Nothing was recorded on any rank; the ranks go on together.
    assert_eq!(ctx.pending(), 0);
    ctx.par_loop(&gather_nodes(), &cells, &[x.all(&c2n).read(), y.write()])
        .unwrap();
    write_out(&ctx, &y.gather().unwrap().unwrap_or_default());
}

/// A par_loop whose checks fail on one rank only (its kernel built from a rank-dependent
/// string) is refused on every rank, before anything is recorded; the program goes on.
#[test]
fn a_check_failing_on_one_rank_fails_every_rank() {
    let want: Vec<f32> = (0..8).map(|c| (2 * c + 1) as f32).collect();
    assert_eq!(mpirun_env(2, &worker!("one_rank_check_worker"), &[]), want);
}

#[test]
#[ignore = "run by the other tests under mpirun"]
fn drop_on_one_rank_worker() {
    let Some(_) = out_path() else { return };
    let config = Config {
        trace_bound: 7,
        ..Config::from_env().unwrap()
    };
    let ctx = worker_ctx(config);
    let (part, cells, nodes, c2n) = chain(&ctx);
    let (cells, nodes, c2n) = (part.set(cells), part.set(nodes), part.map(c2n));
    let x = ctx
        .dat("x", &nodes, 1, &local_values(&nodes, |g| g as f32, None))
        .unwrap();
    let y = ctx.dat_zeros::<f32>("y", &cells, 1).unwrap();
    let plain = Set::new("plain", 4);
    let mine = ctx.dat_zeros::<f32>("mine", &plain, 1).unwrap();
    let bump = Kernel::new(
        "bump",
        "fn bump(m: ptr<function, array<f32, 1>>) { (*m)[0] += 1.0; }",
    );
    for step in 0..6 {
        let t = ctx.dat_zeros::<f32>("t", &cells, 1).unwrap();
        ctx.par_loop(&gather_nodes(), &cells, &[x.all(&c2n).read(), t.write()])
            .unwrap();
        if ctx.rank() == 0 || step % 2 == 0 {
            // Dropped on rank 0 (and, every other step, everywhere) with its writer pending.
            drop(t);
        } else {
            std::mem::forget(t);
        }
        // A loop of rank 1's own over a set of this process: not counted by the bound.
        if ctx.rank() == 1 {
            ctx.par_loop(&bump, &plain, &[mine.rw()]).unwrap();
        }
        // A host access forces (and, before, dropped dead loops on one rank only).
        assert_eq!(x.data_ro().unwrap().len(), nodes.size());
        let add = Kernel::new(
            "add",
            "fn add(a: ptr<function, array<f32, 2>>, b: ptr<function, array<f32, 1>>) { (*b)[0] += (*a)[0] + (*a)[1]; }",
        );
        ctx.par_loop(&add, &cells, &[x.all(&c2n).read(), y.rw()])
            .unwrap();
    }
    // Rank 1's own loops are bounded on their own: at most the bound pending, beside at most
    // the bound of the ranks' shared computations.
    for _ in 0..20 {
        if ctx.rank() == 1 {
            ctx.par_loop(&bump, &plain, &[mine.rw()]).unwrap();
        }
    }
    assert!(
        ctx.pending() <= 14,
        "rank {}: {} pending",
        ctx.rank(),
        ctx.pending()
    );
    let mine = mine.data_ro().unwrap()[0];
    assert_eq!(mine, if ctx.rank() == 1 { 26.0 } else { 0.0 });
    write_out(&ctx, &y.gather().unwrap().unwrap_or_default());
}

/// Dats dropped on one rank only while a loop writing them is pending, and loops of one
/// rank's own, under a trace bound: every rank forces at the same loop (no deadlock), and the
/// values are one process's.
#[test]
fn drops_and_local_loops_on_one_rank_keep_the_ranks_together() {
    let want: Vec<f32> = (0..8).map(|c| 6.0 * (2 * c + 1) as f32).collect();
    let env = [("PARLOOP_COMM_TIMEOUT", "20")];
    assert_eq!(
        mpirun_env(2, &worker!("drop_on_one_rank_worker"), &env),
        want
    );
}
