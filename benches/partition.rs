//! The partitioner: `best` on generated MOOSE-like graphs of 1k, 10k and 100k nodes (time, loops
//! against the lower bound), the heuristics beside it, and every algorithm on the seed cases.
//!
//! `cargo bench --bench partition`

#[path = "common.rs"]
mod common;
#[path = "../tests/it/partition/seed_cases.rs"]
mod seed_cases;

use parloop::graph::generate::moose_like;
use parloop::graph::{Algorithm, Graph, Options, is_valid, partition};
use std::time::Instant;

fn main() {
    common::header(
        "Partitioner on MOOSE-like graphs (release build)",
        "none (CPU only)",
        "cargo bench --bench partition",
    );
    println!("| nodes | blocks | algorithm | time | loops | lower bound | optimal | valid |");
    println!("|---:|---:|---|---:|---:|---:|---|---|");
    for (n, blocks) in [(1_000usize, 4usize), (10_000, 16), (100_000, 64)] {
        let g = Graph::new(moose_like(n, blocks, 42)).expect("generated graphs are valid");
        for algorithm in [
            Algorithm::Best,
            Algorithm::List,
            Algorithm::Tvm,
            Algorithm::Moose,
        ] {
            if algorithm == Algorithm::Moose && n > 1_000 {
                continue; // quadratic merge checks: meant for small graphs
            }
            let opts = Options {
                algorithm,
                ..Default::default()
            };
            let t = Instant::now();
            let p = partition(&g, &opts);
            let secs = t.elapsed().as_secs_f64();
            println!(
                "| {} | {blocks} | {algorithm} ({}) | {:.1} ms | {} | {} | {} | {} |",
                g.len(),
                p.algorithm,
                secs * 1e3,
                p.loops.len(),
                p.lower_bound,
                if p.optimal { "yes" } else { "no" },
                if is_valid(&g, &p.loops) { "yes" } else { "NO" }
            );
        }
    }
    println!("\nLoops found on the seed-derived cases (docs/background.md):\n");
    println!("| case | optimum | best | exact | list | moose | tvm |");
    println!("|---|---:|---:|---:|---:|---:|---:|");
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/it/partition");
    for (name, optimum) in seed_cases::SEED_CASES {
        let text = std::fs::read_to_string(format!("{dir}/{name}.json")).expect("case file");
        let g = Graph::from_json(&text).expect("valid case");
        let counts: Vec<String> = Algorithm::ALL
            .iter()
            .map(|&algorithm| {
                let p = partition(
                    &g,
                    &Options {
                        algorithm,
                        ..Default::default()
                    },
                );
                p.loops.len().to_string()
            })
            .collect();
        println!("| {name} | {optimum} | {} |", counts.join(" | "));
    }
}
