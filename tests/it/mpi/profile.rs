//! The profile on N ranks, under `mpirun`: each rank's timeline file (`PATH` with `.rank<r>`)
//! has its process, a halo span per exchange and a GPU span per timed group execution, as its
//! Stats count them; `profile_table` on rank 0 gives every rank's table and their sum.
//! `cargo test --features mpi --test it -- mpi::profile::` (needs Open MPI's `mpirun`).

use crate::common::mpirun;

use mpirun::{mpirun_env, out_path};
use parloop::apps::wave::Wave;
use parloop::dist::{Comm, Partitioner};
use parloop::mesh::unit_square;
use parloop::{Config, Context};
use serde_json::Value;
use std::path::PathBuf;

/// The count column of the line of `group` in the table headed by `title`.
fn count(table: &str, title: &str, group: &str) -> u64 {
    let start = table
        .find(title)
        .unwrap_or_else(|| panic!("no {title:?} in\n{table}"));
    let rest = &table[start..];
    let end = rest[1..]
        .find("parloop profile")
        .map_or(rest.len(), |e| e + 1);
    let line = rest[..end]
        .lines()
        .find(|l| l.ends_with(&format!("  {group}")))
        .unwrap_or_else(|| panic!("no {group} under {title:?} in\n{table}"));
    line.split_whitespace().next().unwrap().parse().unwrap()
}

#[test]
#[ignore = "run by the other tests under mpirun"]
fn profile_worker() {
    let Some(out) = out_path() else { return };
    let dir = PathBuf::from(std::env::var("MPI_TEST_TRACE_DIR").unwrap());
    let comm = Comm::world().unwrap();
    let ctx = Context::with_comm(
        Config {
            trace: Some(dir.join("wave.json")),
            ..Config::from_env().unwrap()
        },
        &comm,
    )
    .unwrap();
    let (rank, ranks) = (ctx.rank(), ctx.ranks());
    let mut w = Wave::distributed(&ctx, unit_square(16), 0.001, Partitioner::Block).unwrap();
    for _ in 0..30 {
        w.step().unwrap();
    }
    let _ = w.energy().unwrap();
    let stats = ctx.stats();
    assert!(stats.halo_exchanges > 0);
    let table = ctx.profile_table().unwrap();
    drop(w);
    drop(ctx);
    // This rank's file, written when its Context ended.
    let file = dir.join(format!("wave.rank{rank}.json"));
    let json: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    let events = json["traceEvents"].as_array().unwrap();
    assert!(events.iter().any(|e| e["name"] == "process_name"
        && e["args"]["name"] == format!("parloop rank {rank} of {ranks}")));
    assert!(events.iter().all(|e| e["pid"] == rank));
    let spans = |cat: &str, prefix: &str| {
        events
            .iter()
            .filter(|e| e["ph"] == "X" && e["cat"] == cat)
            .filter(|e| e["name"].as_str().unwrap().starts_with(prefix))
            .count() as u64
    };
    assert_eq!(
        spans("halo", "messages of `"),
        stats.halo_exchanges,
        "rank {rank}"
    );
    let calls: u64 = stats.kernel_times.values().map(|t| t.calls).sum();
    assert!(calls > 0);
    assert_eq!(spans("gpu", ""), calls, "rank {rank}");
    if rank == 0 {
        // Every rank's table, and the sum: the stiffness group ran on each rank.
        let mut sum = 0;
        for r in 0..ranks {
            sum += count(
                &table,
                &format!("parloop profile, rank {r} of {ranks}"),
                "stiffness",
            );
        }
        let combined = format!("parloop profile, {ranks} ranks combined");
        assert_eq!(count(&table, &combined, "stiffness"), sum, "{table}");
        assert_eq!(
            count(&table, "parloop profile, rank 0 of", "stiffness"),
            stats.kernel_times["stiffness"].calls
        );
        std::fs::write(out, bytemuck::cast_slice(&[1.0f32])).unwrap();
    }
}

#[test]
fn each_rank_writes_its_timeline_and_rank_0_gets_every_table() {
    let dir = std::env::temp_dir().join(format!("parloop-mpi-profile-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let d = dir.to_string_lossy().into_owned();
    for lazy in ["1", "0"] {
        let got = mpirun_env(
            2,
            &worker!("profile_worker"),
            &[("MPI_TEST_TRACE_DIR", &d), ("PARLOOP_LAZY", lazy)],
        );
        assert_eq!(got, [1.0], "lazy {lazy}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}
