//! Checks that a list of loops is a valid execution of a graph, independently of how the loops
//! were found: every required node runs exactly once, every node runs in a loop of its own
//! location and target, every dependency is computed before it is used (in an earlier loop, or
//! earlier in the same loop when the value is usable there), and ephemeral values are
//! recomputed in each loop that uses them.

use super::Loop;
use super::model::{Graph, describe_key};

/// Returns every violation found (empty when the loops are valid).
pub fn violations(g: &Graph, loops: &[Loop]) -> Vec<String> {
    let mut errs = Vec::new();
    let mut home: Vec<Option<(usize, usize)>> = vec![None; g.len()];
    for (k, lp) in loops.iter().enumerate() {
        for (pos, &v) in lp.nodes.iter().enumerate() {
            if v >= g.len() {
                errs.push(format!(
                    "loop {k} holds node index {v}, which is not in the graph"
                ));
                continue;
            }
            if g.nodes[v].key != lp.key {
                errs.push(format!(
                    "node {:?} ({}) is in loop {k} of {}",
                    g.nodes[v].id,
                    describe_key(g.key_of(v)),
                    describe_key(&g.keys[lp.key])
                ));
            }
            if g.is_required(v) {
                if let Some((k0, _)) = home[v] {
                    errs.push(format!(
                        "required node {:?} runs twice (loops {k0} and {k})",
                        g.nodes[v].id
                    ));
                }
                home[v] = Some((k, pos));
            }
        }
    }
    for (v, h) in home.iter().enumerate() {
        if g.is_required(v) && h.is_none() {
            errs.push(format!("required node {:?} never runs", g.nodes[v].id));
        }
    }
    for (k, lp) in loops.iter().enumerate() {
        for (pos, &v) in lp.nodes.iter().enumerate() {
            if v >= g.len() {
                continue;
            }
            for &(u, barrier) in &g.nodes[v].needs {
                let ok = if g.is_required(u) {
                    match home[u] {
                        None => false,
                        Some((ku, _)) if g.edge_weight(u, v, barrier) == 1 => ku < k,
                        Some((ku, pu)) => ku < k || (ku == k && pu < pos),
                    }
                } else {
                    lp.nodes[..pos].contains(&u)
                };
                if !ok {
                    errs.push(format!(
                        "node {:?} in loop {k} needs {:?}, which is not available there",
                        g.nodes[v].id, g.nodes[u].id
                    ));
                }
            }
        }
    }
    errs
}

/// Whether `loops` is a valid execution of `g`.
pub fn is_valid(g: &Graph, loops: &[Loop]) -> bool {
    violations(g, loops).is_empty()
}

/// Whether two loops could still be merged into one valid loop (used to check that a result is
/// fully merged): the merged loop set, reordered topologically, must validate.
pub fn can_merge_loops(g: &Graph, loops: &[Loop], a: usize, b: usize) -> bool {
    if a == b || loops[a].key != loops[b].key {
        return false;
    }
    let mut merged: Vec<Loop> = Vec::new();
    for (k, lp) in loops.iter().enumerate() {
        if k == b {
            continue;
        }
        let mut lp = lp.clone();
        if k == a {
            let mut nodes = loops[a].nodes.clone();
            nodes.extend(loops[b].nodes.iter().copied());
            lp.nodes = g
                .topo
                .iter()
                .copied()
                .filter(|v| nodes.contains(v))
                .collect();
        }
        merged.push(lp);
    }
    // Loop-level dependencies, then a topological order of the loops.
    let mut home = vec![usize::MAX; g.len()];
    for (k, lp) in merged.iter().enumerate() {
        for &v in &lp.nodes {
            if g.is_required(v) {
                home[v] = k;
            }
        }
    }
    let m = merged.len();
    let mut preds = vec![std::collections::BTreeSet::new(); m];
    for (k, lp) in merged.iter().enumerate() {
        for &v in &lp.nodes {
            for &(u, _) in &g.nodes[v].needs {
                if g.is_required(u) && home[u] != k && home[u] != usize::MAX {
                    preds[k].insert(home[u]);
                }
            }
        }
    }
    let mut done = vec![false; m];
    let mut order = Vec::with_capacity(m);
    while order.len() < m {
        let Some(k) = (0..m).find(|&k| !done[k] && preds[k].iter().all(|&p| done[p])) else {
            return false;
        };
        done[k] = true;
        order.push(merged[k].clone());
    }
    is_valid(g, &order)
}
