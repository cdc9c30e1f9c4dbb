//! Halo exchanges in the lazy trace (seed 001) under `mpirun`: the DAG of one wave step, the
//! overlap of exchanges with core work, and the two halo simplifications.
//!
//! `cargo test --features mpi --test it -- mpi::halo::` (needs Open MPI's `mpirun`).

use crate::common::mpirun;

use mpirun::{mpirun, out_path};
use parloop::apps::wave::Wave;
use parloop::dist::{Comm, Distribution, Partitioner};
use parloop::mesh::unit_square;
use parloop::{Config, Context, Kernel};

fn worker_ctx() -> Context {
    let comm = Comm::world().unwrap();
    Context::with_comm(Config::from_env().unwrap(), &comm).unwrap()
}

fn has(edges: &[(String, String)], a: &str, b: &str) -> bool {
    edges.iter().any(|(x, y)| x == a && y == b)
}

#[test]
#[ignore = "run by the other tests under mpirun"]
fn dag_worker() {
    let Some(out) = out_path() else { return };
    let ctx = worker_ctx();
    let mut w = Wave::distributed(&ctx, unit_square(24), 0.001, Partitioner::Block).unwrap();
    ctx.flush().unwrap();
    w.step().unwrap();
    let edges = ctx.trace_edges();
    let dot = ctx.trace_dot();
    let show = format!("rank {}: {edges:?}\n{dot}", ctx.rank());
    // assemble[core] after phi_expr and zero(t1), not after any HaloRecv.
    assert!(
        has(&edges, "phi_half[core,owned]", "stiffness[core]"),
        "{show}"
    );
    assert!(has(&edges, "zero[core,owned]", "stiffness[core]"), "{show}");
    assert!(
        !edges
            .iter()
            .any(|(a, b)| a.starts_with("HaloRecv") && b == "stiffness[core]"),
        "{show}"
    );
    // assemble[owned] after assemble[core] and the HaloRecv; HaloRecv after its HaloSend
    // through NET; the HaloSend after the loop that wrote phi.
    assert!(has(&edges, "stiffness[core]", "stiffness[owned]"), "{show}");
    assert!(has(&edges, "HaloRecv(phi)", "stiffness[owned]"), "{show}");
    assert!(has(&edges, "HaloSend(phi)", "HaloRecv(phi)"), "{show}");
    assert!(
        has(&edges, "phi_half[core,owned]", "HaloSend(phi)"),
        "{show}"
    );
    // The coordinates' halo is current: no exchange of them (early halo skip).
    assert!(!dot.contains("HaloSend(coords)"), "{show}");
    assert!(dot.contains("label=\"HaloSend(phi)\""), "{show}");
    mpirun::report_done(ctx.rank(), &out);
}

#[test]
fn one_wave_step_on_2_ranks_has_the_seeds_dag() {
    assert_eq!(mpirun(2, &worker!("dag_worker"), "block"), [1.0]);
}

#[test]
#[ignore = "run by the other tests under mpirun"]
fn overlap_worker() {
    let Some(out) = out_path() else { return };
    let ctx = worker_ctx();
    let mut w = Wave::distributed(&ctx, unit_square(24), 0.001, Partitioner::Block).unwrap();
    ctx.flush().unwrap();
    // A slow network: every round's receives complete 200 ms after the messages were posted.
    ctx.test_delay_receives(200);
    for _ in 0..5 {
        w.step().unwrap();
    }
    let p = w.p.gather().unwrap();
    let s = ctx.stats();
    // The assembly's core part was submitted before the exchange waited.
    let explain = ctx.explain();
    assert!(
        explain.lines().any(|l| l.contains("round")
            && l.split("while the messages travel")
                .nth(1)
                .is_some_and(|c| c.contains("stiffness[core]"))),
        "{explain}"
    );
    assert!(s.halo_overlap_rounds >= 5, "{s:?}");
    assert_eq!(
        s.halo_core_first, s.halo_overlap_rounds,
        "the core work was not done on the device when the receives completed"
    );
    if let Some(p) = p {
        let mut r = vec![1.0f32];
        r.extend(p);
        std::fs::write(out, bytemuck::cast_slice(&r)).unwrap();
    }
}

#[test]
fn core_work_completes_while_a_slow_receive_waits() {
    let got = mpirun(2, &worker!("overlap_worker"), "block");
    assert_eq!(got[0], 1.0);
    // The delayed run computes what one process computes.
    let ctx = Context::with_config(Config::from_env().unwrap()).unwrap();
    let mut w = Wave::new(&ctx, 24, 0.001).unwrap();
    for _ in 0..5 {
        w.step().unwrap();
    }
    let want = w.p.data_ro().unwrap().to_vec();
    let scale = want.iter().fold(0f32, |m, v| m.max(v.abs()));
    for (i, (g, w)) in got[1..].iter().zip(&want).enumerate() {
        assert!(
            (g - w).abs() <= 1e-5 * scale,
            "p[{i}]: {g} vs one process {w}"
        );
    }
}

#[test]
#[ignore = "run by the other tests under mpirun"]
fn simplify_worker() {
    let Some(out) = out_path() else { return };
    let ctx = worker_ctx();
    let n = 60usize;
    let mut d = Distribution::new(&ctx);
    let cells = d.set("cells", n);
    let nodes = d.set("nodes", n + 1);
    let c2n: Vec<u32> = (0..n as u32).flat_map(|c| [c, c + 1]).collect();
    let c2n = d.map("c2n", cells, nodes, 2, &c2n).unwrap();
    let init: Vec<f32> = (0..=n).map(|i| i as f32).collect();
    let v = d.dat("v", nodes, 1, &init).unwrap();
    let mut l = d.distribute(cells, Partitioner::Block).unwrap();
    let (cells, nodes, c2n, v) = (l.set(cells), l.set(nodes), l.map(c2n), l.dat(v).unwrap());
    let bump = Kernel::new(
        "bump",
        "fn bump(v: ptr<function, array<f32, 1>>) { (*v)[0] = (*v)[0] + 1.0; }",
    );
    let avg = Kernel::new(
        "avg",
        "fn avg(v: ptr<function, array<f32, 2>>, w: ptr<function, array<f32, 1>>) { \
         (*w)[0] = 0.5 * ((*v)[0] + (*v)[1]); }",
    );
    let outs: Vec<_> = (0..3)
        .map(|k| ctx.dat_zeros::<f32>(&format!("w{k}"), &cells, 1).unwrap())
        .collect();
    ctx.par_loop(&bump, &nodes, &[v.rw()]).unwrap();
    let s0 = ctx.stats();
    // Two reads of v through the map with no write between: one exchange.
    ctx.par_loop(&avg, &cells, &[v.all(&c2n).read(), outs[0].write()])
        .unwrap();
    ctx.par_loop(&avg, &cells, &[v.all(&c2n).read(), outs[1].write()])
        .unwrap();
    ctx.flush().unwrap();
    let s1 = ctx.stats();
    let explain1 = ctx.explain();
    let g0 = outs[0].gather().unwrap();
    let g1 = outs[1].gather().unwrap();
    // A third read once the exchange has run: the halo is current, nothing is exchanged.
    ctx.par_loop(&avg, &cells, &[v.all(&c2n).read(), outs[2].write()])
        .unwrap();
    let g2 = outs[2].gather().unwrap();
    let s2 = ctx.stats();
    let explain2 = ctx.explain();
    assert_eq!(s1.halo_exchanges - s0.halo_exchanges, 1, "{explain1}");
    assert_eq!(s1.halo_exchanges_merged - s0.halo_exchanges_merged, 1);
    assert_eq!(s2.halo_exchanges, s1.halo_exchanges, "{explain2}");
    assert_eq!(s2.halo_exchanges_skipped - s1.halo_exchanges_skipped, 1);
    assert_eq!(s2.halo_messages, s1.halo_messages);
    assert!(
        explain1.contains(
            "0 because the halo was current (early halo skip), 1 because an \
                           exchange of the Dat was still in the trace"
        ),
        "{explain1}"
    );
    assert!(
        explain2.contains("1 because the halo was current (early halo skip), 0 because"),
        "{explain2}"
    );
    // A reduction ends only when its value is needed: forcing other data leaves it open.
    let total = ctx.global("total", &[0.0f32]).unwrap();
    let sum = Kernel::new(
        "sum",
        "fn sum(w: ptr<function, array<f32, 1>>, t: ptr<function, array<f32, 1>>) { \
         (*t)[0] = (*w)[0]; }",
    );
    ctx.par_loop(&sum, &cells, &[outs[2].read(), total.inc()])
        .unwrap();
    ctx.par_loop(&bump, &nodes, &[v.rw()]).unwrap();
    let r0 = ctx.stats().global_reductions;
    let _ = v.gather().unwrap();
    assert_eq!(ctx.stats().global_reductions, r0);
    // Cell c holds c + 1.5: the sum over 60 cells is 1860.
    assert_eq!(total.value().unwrap(), [1860.0]);
    assert_eq!(ctx.stats().global_reductions, r0 + 1);
    if let (Some(g0), Some(g1), Some(g2)) = (g0, g1, g2) {
        // After the bump v[i] = i + 1, so cell c averages c + 1 and c + 2.
        let want: Vec<f32> = (0..n).map(|c| c as f32 + 1.5).collect();
        assert_eq!(g0, want);
        assert_eq!(g1, want);
        assert_eq!(g2, want);
        std::fs::write(out, bytemuck::cast_slice(&[1.0f32])).unwrap();
    }
}

#[test]
fn an_unchanged_halo_is_exchanged_once() {
    assert_eq!(mpirun(2, &worker!("simplify_worker"), "block"), [1.0]);
    assert_eq!(mpirun(3, &worker!("simplify_worker"), "block"), [1.0]);
}
