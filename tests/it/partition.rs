//! The partitioner against the seed-derived cases (docs/background.md), a brute-force
//! minimum on random graphs, the validator, and the CLI's error handling.

use parloop::graph::generate::{RandomShape, random};
use parloop::graph::{
    Algorithm, Budget, Graph, GraphError, NodeSpec, Options, can_merge_loops, partition, violations,
};
use proptest::prelude::*;
use std::collections::BTreeMap;

fn load(name: &str) -> Graph {
    let path = format!(
        "{}/tests/it/partition/{name}.json",
        env!("CARGO_MANIFEST_DIR")
    );
    let text = std::fs::read_to_string(&path).unwrap();
    Graph::from_json(&text).unwrap_or_else(|e| panic!("{path}: {e}"))
}

mod seed_cases;
use seed_cases::SEED_CASES;

fn run(g: &Graph, algorithm: Algorithm) -> parloop::graph::Partition {
    partition(
        g,
        &Options {
            algorithm,
            ..Default::default()
        },
    )
}

#[test]
fn best_reaches_the_optimum_on_every_seed_case() {
    for (name, optimum) in SEED_CASES {
        let g = load(name);
        let p = run(&g, Algorithm::Best);
        assert_eq!(violations(&g, &p.loops), Vec::<String>::new(), "{name}");
        assert_eq!(
            p.loops.len(),
            optimum,
            "{name}: {}",
            p.render(&g, Default::default())
        );
        assert!(p.optimal, "{name}: optimum not proven");
        assert!(p.lower_bound <= optimum, "{name}");
    }
}

#[test]
fn every_algorithm_is_valid_on_every_seed_case() {
    let mut table = String::new();
    for (name, optimum) in SEED_CASES {
        let g = load(name);
        let mut row = format!("{name:<15} optimum {optimum}");
        for algorithm in Algorithm::ALL {
            let p = run(&g, algorithm);
            assert_eq!(
                violations(&g, &p.loops),
                Vec::<String>::new(),
                "{name} {algorithm}"
            );
            assert!(
                p.loops.len() >= optimum,
                "{name} {algorithm} beat the optimum"
            );
            row += &format!("  {algorithm} {}", p.loops.len());
        }
        table += &row;
        table.push('\n');
    }
    println!("{table}");
}

#[test]
fn case1_duplicates_the_ephemeral_node_into_both_loops() {
    let g = load("case1");
    let p = run(&g, Algorithm::Best);
    let c = g.nodes.iter().position(|n| n.id == "c").unwrap();
    assert!(p.loops.iter().all(|l| l.nodes.contains(&c)));
}

// ---- an independent brute force --------------------------------------------------------------

/// Constraints derived by enumerating every dependency path (no memoization): for each required
/// v and required u reached through ephemeral nodes only, the heaviest weight.
fn brute_constraints(g: &Graph) -> (Vec<usize>, BTreeMap<(usize, usize), u8>) {
    let req: Vec<usize> = (0..g.len()).filter(|&v| g.is_required(v)).collect();
    let mut cons = BTreeMap::new();
    fn walk(
        g: &Graph,
        v: usize,
        at: usize,
        barrier: bool,
        cons: &mut BTreeMap<(usize, usize), u8>,
    ) {
        for &(u, b) in &g.nodes[at].needs {
            let b = barrier || b;
            if g.is_required(u) {
                let w = u8::from(b || g.nodes[u].reducing || g.nodes[u].key != g.nodes[v].key);
                let e = cons.entry((u, v)).or_insert(0);
                *e = (*e).max(w);
            } else {
                walk(g, v, u, b, cons);
            }
        }
    }
    for &v in &req {
        walk(g, v, v, false, &mut cons);
    }
    (req, cons)
}

/// Fewest loops, by iterative deepening over key sequences where each loop places at least one
/// node and every node goes into the earliest loop it fits.
fn brute_force_minimum(g: &Graph) -> usize {
    let (req, cons) = brute_constraints(g);
    let order: Vec<usize> = g
        .topo
        .iter()
        .copied()
        .filter(|&v| g.is_required(v))
        .collect();
    assert_eq!(order.len(), req.len());
    fn dfs(
        g: &Graph,
        order: &[usize],
        cons: &BTreeMap<(usize, usize), u8>,
        loop_of: &mut BTreeMap<usize, usize>,
        depth: usize,
        limit: usize,
    ) -> bool {
        if loop_of.len() == order.len() {
            return true;
        }
        if depth == limit {
            return false;
        }
        for key in 0..g.keys.len() {
            let mut placed = Vec::new();
            for &v in order {
                if loop_of.contains_key(&v) || g.nodes[v].key != key {
                    continue;
                }
                let fits = cons
                    .iter()
                    .filter(|((_, b), _)| *b == v)
                    .all(|(&(u, _), &w)| match loop_of.get(&u) {
                        Some(&k) => k + w as usize <= depth,
                        None => false,
                    });
                if fits {
                    loop_of.insert(v, depth);
                    placed.push(v);
                }
            }
            if placed.is_empty() {
                continue;
            }
            if dfs(g, order, cons, loop_of, depth + 1, limit) {
                return true;
            }
            for v in placed {
                loop_of.remove(&v);
            }
        }
        false
    }
    (0..=order.len())
        .find(|&limit| dfs(g, &order, &cons, &mut BTreeMap::new(), 0, limit))
        .unwrap()
}

fn random_graph(nodes: usize, locations: usize, seed: u64) -> Graph {
    let shape = RandomShape {
        nodes,
        locations,
        targets: 2,
        density: 0.25,
    };
    Graph::new(random(shape, seed)).unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn every_algorithm_is_valid_and_never_below_the_bound(
        nodes in 1usize..=12, locations in 1usize..=4, seed in any::<u64>()
    ) {
        let g = random_graph(nodes, locations, seed);
        for algorithm in Algorithm::ALL {
            let p = run(&g, algorithm);
            prop_assert_eq!(violations(&g, &p.loops), Vec::<String>::new(), "{}", algorithm);
            prop_assert!(p.loops.len() >= p.lower_bound, "{} below the bound", algorithm);
        }
    }

    #[test]
    fn exact_equals_the_brute_force_minimum(
        nodes in 1usize..=12, locations in 1usize..=4, seed in any::<u64>()
    ) {
        let g = random_graph(nodes, locations, seed);
        let p = run(&g, Algorithm::Exact);
        prop_assert!(p.optimal);
        prop_assert_eq!(p.loops.len(), brute_force_minimum(&g));
    }

    #[test]
    fn moose_output_is_fully_merged(
        nodes in 1usize..=12, locations in 1usize..=4, seed in any::<u64>()
    ) {
        let g = random_graph(nodes, locations, seed);
        let p = run(&g, Algorithm::Moose);
        for a in 0..p.loops.len() {
            for b in a + 1..p.loops.len() {
                prop_assert!(!can_merge_loops(&g, &p.loops, a, b), "loops {} and {} can merge", a, b);
            }
        }
    }
}

#[test]
fn list_is_within_one_loop_of_exact_on_97_percent_of_graphs() {
    let (mut within, mut total, mut equal) = (0, 0, 0);
    for seed in 0..600u64 {
        let g = random_graph(6 + (seed % 7) as usize, 1 + (seed % 4) as usize, seed);
        let exact = run(&g, Algorithm::Exact);
        assert!(exact.optimal);
        let list = run(&g, Algorithm::List);
        total += 1;
        within += usize::from(list.loops.len() <= exact.loops.len() + 1);
        equal += usize::from(list.loops.len() == exact.loops.len());
    }
    println!("list: optimal on {equal}/{total}, within one loop on {within}/{total}");
    assert!(within * 100 >= total * 97, "{within}/{total}");
}

#[test]
fn exact_says_so_when_the_budget_runs_out() {
    let g = random_graph(40, 4, 3);
    let p = partition(
        &g,
        &Options {
            algorithm: Algorithm::Exact,
            budget: Budget {
                max_nodes: 10,
                max_states: 10,
            },
        },
    );
    assert!(violations(&g, &p.loops).is_empty());
    if !p.optimal {
        assert!(
            p.note.as_deref().unwrap_or("").contains("exceed"),
            "{:?}",
            p.note
        );
    }
}

#[test]
fn large_moose_like_graph_is_partitioned_validly() {
    let g = Graph::new(parloop::graph::generate::moose_like(10_000, 8, 5)).unwrap();
    let p = run(&g, Algorithm::Best);
    assert!(violations(&g, &p.loops).is_empty());
    assert!(p.loops.len() >= p.lower_bound);
}

// ---- bad input ----------------------------------------------------------------------------------

#[test]
fn bad_graphs_are_rejected_with_the_nodes_named() {
    let err = |json: &str| Graph::from_json(json).unwrap_err();
    assert_eq!(
        err(r#"{"nodes": [{"id": "a", "location": "x", "needs": ["zz"]}]}"#),
        GraphError::UnknownNeed {
            need: "zz".into(),
            node: "a".into()
        }
    );
    assert_eq!(
        err(r#"{"nodes": [{"id": "a", "location": "x"}, {"id": "a", "location": "y"}]}"#),
        GraphError::DuplicateId("a".into())
    );
    let e = err(r#"{"nodes": [{"id": "a", "location": "x", "needs": ["b"]},
                          {"id": "b", "location": "x", "needs": ["a"]}]}"#);
    assert!(
        matches!(&e, GraphError::Cycle(c) if c.contains(&"a".into()) && c.contains(&"b".into()))
    );
    let e = err(
        r#"{"nodes": [{"id": "m", "location": "El", "cached": false},
                          {"id": "n", "location": "Nd", "needs": ["m"]}]}"#,
    );
    let msg = e.to_string();
    assert!(
        msg.contains("\"m\"") && msg.contains("\"n\"") && msg.contains("cached"),
        "{msg}"
    );
    let e = err("{\"nodes\": [\n  {\"id\": \"a\", \"location\": \"x\", \"colour\": 1}]}");
    assert!(matches!(e, GraphError::Json { line: 2, .. }), "{e:?}");
    assert!(e.to_string().contains("colour"), "{e}");
    let e = err("{\"nodes\": [ {\"id\": \"a\" ");
    assert!(matches!(e, GraphError::Json { line: 1, .. }), "{e:?}");
    let e = err(r#"{"nodes": [{"location": "x"}]}"#);
    assert!(e.to_string().contains("id"), "{e}");
}

#[test]
fn node_spec_builder_matches_the_json_defaults() {
    let from_json = Graph::from_json(r#"{"nodes": [{"id": "a", "location": "x"}]}"#).unwrap();
    let built = Graph::new(vec![NodeSpec::new("a", "x")]).unwrap();
    assert_eq!(from_json.keys, built.keys);
    assert_eq!(from_json.nodes[0].cached, built.nodes[0].cached);
    assert_eq!(from_json.keys[0].target, "default");
}

/// `parloop partition` on bad input: exit code 2, the message on stderr, nothing on stdout; on
/// good input, the documented JSON.
#[test]
fn cli_reports_bad_graphs_with_exit_code_2() {
    let exe = env!("CARGO_BIN_EXE_parloop");
    let dir = std::env::temp_dir().join(format!("parloop-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let bad = dir.join("cycle.json");
    std::fs::write(&bad, r#"{"nodes": [{"id": "a", "location": "x", "needs": ["b"]}, {"id": "b", "location": "x", "needs": ["a"]}]}"#).unwrap();
    let out = std::process::Command::new(exe)
        .args(["partition"])
        .arg(&bad)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        out.stdout.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("dependency cycle") && err.contains("a") && err.contains("b"),
        "{err}"
    );

    let good = format!(
        "{}/tests/it/partition/case7.json",
        env!("CARGO_MANIFEST_DIR")
    );
    let out = std::process::Command::new(exe)
        .args(["partition", &good, "--algorithm", "exact"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["loops"].as_array().unwrap().len(), 3);
    assert_eq!(v["lower_bound"], 3);
    assert_eq!(v["optimal"], true);
    assert_eq!(v["algorithm"], "exact");
    let first = &v["loops"][0];
    assert_eq!(
        (first["location"].as_str(), first["target"].as_str()),
        (Some("El"), Some("default"))
    );
    std::fs::remove_dir_all(&dir).ok();
}

/// `parloop partition ... --format text | head`: when the reader closes the pipe early, the CLI
/// exits quietly with status 0 instead of panicking on the broken pipe.
#[test]
fn cli_exits_quietly_when_the_reader_closes_the_pipe() {
    use std::io::Read;
    let exe = env!("CARGO_BIN_EXE_parloop");
    let dir = std::env::temp_dir().join(format!("parloop-pipe-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    // A chain of 20,000 loops: far more text than a pipe buffers.
    let nodes: Vec<String> = (0..20_000)
        .map(|i| {
            let needs = if i == 0 {
                String::new()
            } else {
                format!("\"n{}\"", i - 1)
            };
            format!(
                r#"{{"id": "n{i}", "location": "L{}", "needs": [{needs}]}}"#,
                i % 7
            )
        })
        .collect();
    let graph = dir.join("chain.json");
    std::fs::write(&graph, format!(r#"{{"nodes": [{}]}}"#, nodes.join(","))).unwrap();
    let mut child = std::process::Command::new(exe)
        .args(["partition", "--algorithm", "list", "--format", "text"])
        .arg(&graph)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut head = [0u8; 64];
    child.stdout.take().unwrap().read_exact(&mut head).unwrap(); // then the pipe closes
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "stderr: {err}");
    assert!(!err.contains("panicked"), "{err}");
    std::fs::remove_dir_all(&dir).ok();
}
