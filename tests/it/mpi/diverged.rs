//! Ranks whose programs diverge, under `mpirun`: ranks that make different collective calls at
//! the same point, and a rank that stops while the others wait. Every rank gets an error naming
//! what each rank was doing, instead of a hang or one call's messages paired with another's.
//! The mesh is `mpi::seams`' chain.
//!
//! `cargo test --features mpi --test it -- mpi::diverged::` (needs Open MPI's `mpirun`).

use super::seams::{chain, local_values, worker_ctx, write_out};
use crate::common::mpirun;
use mpirun::{mpirun_env, mpirun_status, out_path};
use parloop::dist::{Distribution, Partitioner};
use parloop::{Config, Kernel};

#[test]
#[ignore = "run by the other tests under mpirun"]
fn diverging_calls_worker() {
    let Some(_) = out_path() else { return };
    let ctx = worker_ctx(Config::from_env().unwrap());
    let (part, cells, _, _) = chain(&ctx);
    let cells = part.set(cells);
    let o = ctx.dat_zeros::<f32>("o", &cells, 1).unwrap();
    let k = Kernel::new(
        "one",
        "fn one(o: ptr<function, array<f32, 1>>) { (*o)[0] = 1.0; }",
    );
    // Rank 1 records a loop while rank 0 gathers: each call is an error naming both.
    let err = if ctx.rank() == 1 {
        ctx.par_loop(&k, &cells, &[o.write()]).unwrap_err()
    } else {
        o.gather().unwrap_err()
    };
    let m = err.to_string();
    assert!(
        m.contains("diverged") && m.contains("par_loop `one`") && m.contains("gather of Dat `o`"),
        "rank {}: {m}",
        ctx.rank()
    );
    // Neither call did anything: the ranks go on together.
    ctx.par_loop(&k, &cells, &[o.write()]).unwrap();
    let out = o.gather().unwrap().unwrap_or_default();
    // A force that would reduce over the ranks, against a par_loop: no message of the one is
    // paired with the other's.
    let g = ctx.global("g", &[0.0f32]).unwrap();
    let sum = Kernel::new(
        "sum",
        "fn sum(o: ptr<function, array<f32, 1>>, g: ptr<function, array<f32, 1>>) { (*g)[0] += (*o)[0]; }",
    );
    ctx.par_loop(&sum, &cells, &[o.read(), g.inc()]).unwrap();
    let err = if ctx.rank() == 1 {
        ctx.par_loop(&k, &cells, &[o.write()]).unwrap_err()
    } else {
        g.value().unwrap_err()
    };
    let m = err.to_string();
    assert!(
        m.contains("diverged") && m.contains("par_loop `one`") && m.contains("running the trace"),
        "rank {}: {m}",
        ctx.rank()
    );
    write_out(&ctx, &out);
}

/// Ranks that make different collective calls at the same point get an error naming both
/// calls on every rank, instead of one call's messages paired with the other's.
#[test]
fn ranks_in_different_calls_get_an_error_naming_both() {
    assert_eq!(
        mpirun_env(2, &worker!("diverging_calls_worker"), &[]),
        vec![1.0; 8]
    );
}

#[test]
#[ignore = "run by the other tests under mpirun"]
fn stopped_rank_worker() {
    let Some(_) = out_path() else { return };
    let ctx = worker_ctx(Config::from_env().unwrap());
    let (part, cells, _, _) = chain(&ctx);
    let o = ctx.dat_zeros::<f32>("o", &part.set(cells), 1).unwrap();
    if ctx.rank() == 1 {
        // Rank 0 never joins: it waits for rank 1 in MPI's finalize.
        let _ = o.gather();
    }
}

/// A rank left waiting in a collective the others never make ends the job after
/// `PARLOOP_COMM_TIMEOUT` seconds with a message naming it and what it waits in.
#[test]
fn a_rank_left_waiting_ends_the_job_naming_itself() {
    let t0 = std::time::Instant::now();
    let (ok, stderr) = mpirun_status(
        2,
        &worker!("stopped_rank_worker"),
        &[("PARLOOP_COMM_TIMEOUT", "3")],
    );
    assert!(!ok, "the job should have been aborted:\n{stderr}");
    assert!(
        stderr.contains("parloop: rank 1 of 2 waited 3 s in gather of Dat `o`"),
        "{stderr}"
    );
    assert!(t0.elapsed().as_secs() < 60, "took {:?}", t0.elapsed());
}

#[test]
#[ignore = "run by the other tests under mpirun"]
fn empty_rank_f64_worker() {
    let Some(_) = out_path() else { return };
    let ctx = worker_ctx(Config::from_env().unwrap());
    if !ctx.gpu().f64() {
        write_out(&ctx, &[0.0]);
        return;
    }
    // Every cell on rank 0: rank 1 owns no cell.
    let mut d = Distribution::new(&ctx);
    let cells = d.set("cells", 8);
    let nodes = d.set("nodes", 9);
    let c2n: Vec<u32> = (0..8).flat_map(|c| [c, c + 1]).collect();
    d.map("c2n", cells, nodes, 2, &c2n).unwrap();
    let part = d
        .distribute(cells, Partitioner::Owners(vec![0; 8]))
        .unwrap();
    let cells = part.set(cells);
    let owned: Vec<f64> = cells.global_ids().unwrap()[..cells.size()]
        .iter()
        .map(|&g| g as f64 * 0.5)
        .collect();
    let mut v = ctx.dat::<f64>("v", &cells, 1, &owned).unwrap();
    // A rank with nothing to read or write reads and writes an empty slice.
    assert_eq!(v.data_ro().unwrap().len(), cells.size());
    v.data().unwrap().iter_mut().for_each(|x| *x += 1.0);
    let sum = v.data_ro().unwrap().iter().sum::<f64>();
    let total = ctx.global("total", &[sum]).unwrap();
    let mut out = total.value().unwrap();
    out.extend(v.gather().unwrap().unwrap_or_default());
    write_out(&ctx, &out.iter().map(|&x| x as f32).collect::<Vec<_>>());
}

/// An f64 Dat on a rank that owns none of its set: its (empty) host copy is read and written
/// like any other (it was refused as misaligned).
#[test]
fn an_f64_dat_on_a_rank_owning_nothing_is_read_and_written() {
    let got = mpirun_env(2, &worker!("empty_rank_f64_worker"), &[]);
    if got == [0.0] {
        return; // an adapter without f64
    }
    let values: Vec<f32> = (0..8).map(|g| g as f32 * 0.5 + 1.0).collect();
    let sum: f32 = values.iter().sum();
    assert_eq!(got, [vec![sum], values].concat());
}

/// Loops over subsets of the chain's distributed sets: a direct write over nodes 2, 5 and 7;
/// increments through the map from cells 1-5 with a count of them; a sum over even nodes.
#[test]
#[ignore = "run by the other tests under mpirun"]
fn subsets_worker() {
    let Some(_) = out_path() else { return };
    let ctx = worker_ctx(Config::from_env().unwrap());
    let (d, cells, nodes, c2n) = chain(&ctx);
    let (cs, ns, m) = (d.set(cells), d.set(nodes), d.map(c2n));
    let some = d.subset("some nodes", nodes, &[2, 5, 7]).unwrap();
    let middle = d.subset("middle", cells, &[1, 2, 3, 4, 5]).unwrap();
    let even = d.subset("even", nodes, &[0, 2, 4, 6, 8]).unwrap();
    let x = ctx
        .dat("x", &ns, 1, &local_values(&ns, |g| g as f32, None))
        .unwrap();
    let y = ctx.dat_zeros::<f32>("y", &ns, 1).unwrap();
    let w = ctx
        .dat("w", &cs, 1, &local_values(&cs, |g| (g + 1) as f32, None))
        .unwrap();
    let twice = Kernel::new(
        "twice",
        "fn twice(x: ptr<function, array<f32, 1>>, y: ptr<function, array<f32, 1>>) {
            (*y)[0] = 2.0 * (*x)[0];
        }",
    );
    ctx.par_loop(&twice, &some, &[x.read(), y.write()]).unwrap();
    let spread = Kernel::new(
        "spread",
        "fn spread(w: ptr<function, array<f32, 1>>, y: ptr<function, array<f32, 2>>,
                   n: ptr<function, array<f32, 1>>) {
            (*y)[0] += (*w)[0];
            (*y)[1] += 10.0 * (*w)[0];
            (*n)[0] += 1.0;
        }",
    );
    let count = ctx.global("count", &[0.0f32]).unwrap();
    ctx.par_loop(&spread, &middle, &[w.read(), y.all(&m).inc(), count.inc()])
        .unwrap();
    // From local indices, it cannot be trusted to list the exec-halo members: refused.
    let mine = parloop::Subset::new("mine", &cs, &[0]).unwrap();
    let e = ctx
        .par_loop(&spread, &mine, &[w.read(), y.all(&m).inc(), count.inc()])
        .unwrap_err()
        .to_string();
    assert!(e.contains("made from local indices"), "{e}");
    let total = ctx.global("total", &[0.0f32]).unwrap();
    let sum = Kernel::new(
        "sum",
        "fn sum(y: ptr<function, array<f32, 1>>, t: ptr<function, array<f32, 1>>) {
            (*t)[0] += (*y)[0];
        }",
    );
    ctx.par_loop(&sum, &even, &[y.read(), total.inc()]).unwrap();
    let mut got = y.gather().unwrap().unwrap_or_default();
    got.extend(count.value().unwrap());
    got.extend(total.value().unwrap());
    write_out(&ctx, &got);
}

/// Subsets of distributed sets give the one-process result on 2 and 3 ranks (owned members
/// run; through a map, exec-halo members too; reductions count each member once).
#[test]
fn loops_over_subsets_of_distributed_sets_equal_one_process() {
    let mut y = [0.0f32; 9];
    for n in [2, 5, 7] {
        y[n] = 2.0 * n as f32;
    }
    for c in 1..=5 {
        let w = (c + 1) as f32;
        y[c] += w;
        y[c + 1] += 10.0 * w;
    }
    let total: f32 = [0, 2, 4, 6, 8].iter().map(|&n| y[n]).sum();
    let want = [&y[..], &[5.0, total]].concat();
    for (np, lazy) in [(2, "1"), (3, "1"), (3, "0")] {
        let got = mpirun_env(np, &worker!("subsets_worker"), &[("PARLOOP_LAZY", lazy)]);
        assert_eq!(got, want, "{np} ranks, lazy {lazy}");
    }
}
