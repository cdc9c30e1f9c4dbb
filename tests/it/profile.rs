//! The timeline (Chrome trace JSON) and the OP2-style table, checked against the program that
//! made them: a span per par_loop recorded, per force, per fusion, per pipeline compiled, per
//! plan built and per submission, as the Stats count them; a GPU span per timed group
//! execution, with the group times of the Stats; counters; the table's calls and bytes from
//! the byte model, computed here by hand. Both timers (GPU timestamps and the wall clock).

use crate::common;

use common::{ctx_with, random_map, small_ints};
use parloop::{Config, Context, Kernel, Set};
use serde_json::Value;
use std::collections::BTreeMap;

const SCATTER: &str = "fn scatter(w: ptr<function, array<f32, 1>>, a: ptr<function, array<f32, 2>>, \
                       b: ptr<function, array<f32, 2>>) {\n    \
                       (*a)[0] += (*w)[0]; (*b)[1] += (*w)[0];\n}\n";
const DECAY: &str = "fn decay(a: ptr<function, array<f32, 2>>, c: ptr<function, array<f32, 2>>) {\n    \
                     (*c)[0] = (*a)[0] * 0.5; (*c)[1] = (*a)[1] * 0.5;\n}\n";

const EDGES: usize = 4000;
const NODES: usize = 600;
const STEPS: usize = 5;

/// Five steps of a scatter through a map and a direct loop, read back each step; checked
/// against plain Rust.
fn program(ctx: &Context) {
    let edges = Set::new("edges", EDGES);
    let nodes = Set::new("nodes", NODES);
    let m = random_map("e2n", &edges, &nodes, 2, 4);
    let w = small_ints(EDGES, 2);
    let wd = ctx.dat("w", &edges, 1, &w).unwrap();
    let a = ctx.dat_zeros::<f32>("a", &nodes, 2).unwrap();
    let c = ctx.dat_zeros::<f32>("c", &nodes, 2).unwrap();
    let (scatter, decay) = (Kernel::new("scatter", SCATTER), Kernel::new("decay", DECAY));
    let mut model = vec![0f32; NODES * 2];
    for _ in 0..STEPS {
        ctx.par_loop(
            &scatter,
            &edges,
            &[wd.read(), a.at(&m, 0).inc(), a.at(&m, 1).inc()],
        )
        .unwrap();
        ctx.par_loop(&decay, &nodes, &[a.read(), c.write()])
            .unwrap();
        for e in 0..EDGES {
            model[m.values()[2 * e] as usize * 2] += w[e];
            model[m.values()[2 * e + 1] as usize * 2 + 1] += w[e];
        }
        let want: Vec<f32> = model.iter().map(|v| v * 0.5).collect();
        assert_eq!(&*c.data_ro().unwrap(), &want[..]);
    }
}

fn spans<'a>(events: &'a [Value], cat: &str) -> Vec<&'a Value> {
    events
        .iter()
        .filter(|e| e["ph"] == "X" && e["cat"] == cat)
        .collect()
}

fn check(gpu_timestamps: bool) {
    let path = std::env::temp_dir().join(format!(
        "parloop-profile-test-{}-{gpu_timestamps}.json",
        std::process::id()
    ));
    let ctx = ctx_with(Config {
        trace: Some(path.clone()),
        gpu_timestamps,
        ..Config::from_env().unwrap()
    });
    program(&ctx);
    let stats = ctx.stats();
    ctx.write_trace(&path).unwrap();
    let json: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let events = json["traceEvents"].as_array().unwrap();
    // Tracks and the process.
    let meta: Vec<&Value> = events.iter().filter(|e| e["ph"] == "M").collect();
    assert!(
        meta.iter()
            .any(|e| e["name"] == "process_name" && e["args"]["name"] == "parloop")
    );
    for t in ["host", "GPU", "halo"] {
        assert!(
            meta.iter()
                .any(|e| e["name"] == "thread_name" && e["args"]["name"] == t)
        );
    }
    for e in events.iter().filter(|e| e["ph"] == "X") {
        assert!(
            e["ts"].as_f64().unwrap() >= 0.0 && e["dur"].as_f64().unwrap() >= 0.0,
            "{e}"
        );
        assert_eq!(e["pid"], 0);
    }
    // One span per par_loop recorded, in program order.
    let record: Vec<&str> = spans(events, "record")
        .iter()
        .map(|e| e["name"].as_str().unwrap())
        .collect();
    let want: Vec<&str> = (0..STEPS)
        .flat_map(|_| ["record scatter", "record decay"])
        .collect();
    assert_eq!(record, want);
    assert_eq!(spans(events, "force").len() as u64, stats.forces);
    assert_eq!(spans(events, "fusion").len() as u64, stats.forces);
    assert_eq!(
        spans(events, "compile").len() as u64,
        stats.pipelines_compiled
    );
    assert_eq!(spans(events, "plan").len() as u64, stats.plans_built);
    assert_eq!(spans(events, "submit").len() as u64, stats.submissions);
    assert_eq!(
        spans(events, "readback").len(),
        STEPS,
        "one readback of c per step"
    );
    // A GPU span per timed group execution, on the GPU track, with the Stats' times.
    let gpu = spans(events, "gpu");
    let mut per_group: BTreeMap<String, (u64, f64)> = BTreeMap::new();
    for e in &gpu {
        assert_eq!(e["tid"], 2);
        let g = per_group
            .entry(e["name"].as_str().unwrap().to_string())
            .or_default();
        g.0 += 1;
        g.1 += e["dur"].as_f64().unwrap() * 1e3;
    }
    assert_eq!(per_group.len(), stats.kernel_times.len(), "{per_group:?}");
    for (name, t) in &stats.kernel_times {
        let (calls, ns) = per_group[name];
        assert_eq!(calls, t.calls, "{name}");
        assert!(
            (ns - t.ns as f64).abs() <= 1e-6 * ns + t.calls as f64,
            "{name}: {ns} vs {t:?}"
        );
    }
    // Fused or not, every step ran both kernels once.
    let calls: u64 = stats.kernel_times.values().map(|t| t.calls).sum();
    assert!(calls >= STEPS as u64, "{:?}", stats.kernel_times);
    // Counters.
    for c in ["device MB", "pending loops"] {
        assert!(
            events.iter().any(|e| e["ph"] == "C" && e["name"] == c),
            "counter {c}"
        );
    }
    assert_eq!(json["otherData"]["dropped_events"], 0);
    check_table(&ctx, &stats);
    let _ = std::fs::remove_file(&path);
}

/// The table's lines against the Stats, and the byte model by hand.
fn check_table(ctx: &Context, stats: &parloop::Stats) {
    let table = ctx.profile_table().unwrap();
    eprintln!("{table}");
    assert!(table.starts_with("parloop profile: "), "{table}");
    for (name, t) in &stats.kernel_times {
        let line = table
            .lines()
            .find(|l| l.ends_with(&format!("  {name}")))
            .unwrap_or_else(|| panic!("no line for {name}: {table}"));
        let count: u64 = line.split_whitespace().next().unwrap().parse().unwrap();
        assert_eq!(count, t.calls, "{line}");
        // scatter: w read directly (4 bytes an edge), a incremented through e2n at two
        // indices (read and written: 2 x 8 bytes for each node reachable, at most the 600
        // nodes), the two map indices (4 bytes each an edge); decay: a read and c written
        // directly (8 bytes a node each). They iterate different sets, so never fuse.
        let scatter = 4.0 * EDGES as f64 + 2.0 * 8.0 * NODES as f64 + 2.0 * 4.0 * EDGES as f64;
        let decay = 2.0 * 8.0 * NODES as f64;
        let want = match name.as_str() {
            "scatter" => scatter,
            "decay" => decay,
            other => panic!("unexpected group {other}"),
        };
        assert_eq!(t.bytes as f64, want * t.calls as f64, "{name}");
    }
}

#[test]
fn the_timeline_and_table_follow_the_program_with_gpu_timestamps() {
    check(true);
}

#[test]
fn the_timeline_and_table_follow_the_program_with_the_wall_clock() {
    check(false);
}

#[test]
fn the_trace_and_table_are_written_when_the_context_ends() {
    let path =
        std::env::temp_dir().join(format!("parloop-profile-drop-{}.json", std::process::id()));
    let _ = std::fs::remove_file(&path);
    let config = Config::from_vars([(
        "PARLOOP_PROFILE".to_string(),
        format!("table,trace:{}", path.display()),
    )])
    .unwrap();
    assert!(config.profile_table && config.trace.as_deref() == Some(path.as_path()));
    let ctx = ctx_with(config);
    program(&ctx);
    drop(ctx);
    let json: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    assert!(spans(json["traceEvents"].as_array().unwrap(), "gpu").len() >= STEPS);
    let _ = std::fs::remove_file(&path);
    let e = Config::from_vars([("PARLOOP_PROFILE".to_string(), "trace:".to_string())])
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("PARLOOP_PROFILE") && e.contains("trace:PATH"),
        "{e}"
    );
}
