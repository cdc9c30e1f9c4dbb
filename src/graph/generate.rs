//! Graph generators: small random graphs (property tests) and large MOOSE-like graphs
//! (benchmarks) with variables, materials, kernels, boundary conditions and postprocessors on
//! several blocks, as the loop-graph model describes (docs/background.md).

use super::model::NodeSpec;
use crate::util::Rng;

/// Shape of a random graph.
#[derive(Clone, Copy, Debug)]
pub struct RandomShape {
    /// Number of nodes.
    pub nodes: usize,
    /// Number of distinct locations.
    pub locations: usize,
    /// Number of distinct targets.
    pub targets: usize,
    /// Probability of an edge from each earlier node.
    pub density: f64,
}

/// A random valid graph: node i needs earlier nodes only; an ephemeral node is needed only by
/// nodes of its own location and target.
pub fn random(shape: RandomShape, seed: u64) -> Vec<NodeSpec> {
    let mut rng = Rng::new(seed);
    let mut specs: Vec<NodeSpec> = Vec::with_capacity(shape.nodes);
    for i in 0..shape.nodes {
        let loc = format!("L{}", rng.below(shape.locations.max(1)));
        let target = format!("T{}", rng.below(shape.targets.max(1)));
        let mut s = NodeSpec::new(format!("n{i}"), loc).target(target);
        match rng.below(3) {
            0 => s.cached = false,
            1 => s.reducing = true,
            _ => {}
        }
        for (j, dep) in specs.iter().enumerate() {
            let same = dep.location == s.location && dep.target == s.target;
            if (dep.cached || same) && rng.chance(shape.density) {
                s.needs.push(format!("n{j}"));
            }
        }
        specs.push(s);
    }
    specs
}

/// A MOOSE-like multiphysics graph of about `target_nodes` nodes: `blocks` subdomains, each
/// with element-quadrature materials (ephemeral), kernels (cached) and postprocessors
/// (reducing, some on the host target); nodal variables and residuals; boundary conditions on
/// sides. Stages repeat (nonlinear iterations), each stage's variables needing the previous
/// stage's residuals.
pub fn moose_like(target_nodes: usize, blocks: usize, seed: u64) -> Vec<NodeSpec> {
    let mut rng = Rng::new(seed);
    let blocks = blocks.max(1);
    let sides = 4;
    let vars = 6;
    let mut specs: Vec<NodeSpec> = Vec::with_capacity(target_nodes + 64);
    let mut residuals: Vec<String> = Vec::new();
    let mut postprocessors: Vec<String> = Vec::new();
    let mut stage = 0usize;
    while specs.len() < target_nodes {
        let tag = |kind: &str, i: usize| format!("s{stage}.{kind}{i}");
        // Nodal variables, updated from the previous stage's residuals.
        let mut var_ids = Vec::new();
        for i in 0..vars {
            let id = tag("var", i);
            let mut s = NodeSpec::new(&id, "node").target("gpu");
            if !residuals.is_empty() {
                s.needs.push(residuals[i % residuals.len()].clone());
            }
            if let Some(pp) = postprocessors.get(i % postprocessors.len().max(1)) {
                if rng.chance(0.3) {
                    s.needs.push(pp.clone());
                }
            }
            specs.push(s);
            var_ids.push(id);
        }
        let mut kernel_ids = Vec::new();
        let mut new_pps = Vec::new();
        for b in 0..blocks {
            let loc = format!("elem:b{b}");
            // Materials: ephemeral, from variables and earlier materials of the block.
            let mut mats: Vec<String> = Vec::new();
            for m in 0..4 {
                let id = format!("s{stage}.b{b}.mat{m}");
                let mut s = NodeSpec::new(&id, &loc).target("gpu").ephemeral();
                s.needs.push(var_ids[rng.below(vars)].clone());
                if !mats.is_empty() && rng.chance(0.5) {
                    s.needs.push(mats[rng.below(mats.len())].clone());
                }
                specs.push(s);
                mats.push(id);
            }
            // Kernels: cached residual contributions.
            for k in 0..5 {
                let id = format!("s{stage}.b{b}.kernel{k}");
                let mut s = NodeSpec::new(&id, &loc).target("gpu");
                s.needs.push(var_ids[rng.below(vars)].clone());
                s.needs.push(mats[rng.below(mats.len())].clone());
                specs.push(s);
                kernel_ids.push(id);
            }
            // A postprocessor: a reduction over the block, on the host for some blocks.
            let id = format!("s{stage}.b{b}.pp");
            let target = if b % 3 == 2 { "host" } else { "gpu" };
            let host_loc = if target == "host" {
                format!("{loc}:host")
            } else {
                loc.clone()
            };
            let mut s = NodeSpec::new(&id, host_loc).target(target).reducing();
            if target == "gpu" {
                s.needs.push(mats[rng.below(mats.len())].clone());
            }
            s.needs.push(var_ids[rng.below(vars)].clone());
            specs.push(s);
            new_pps.push(id);
        }
        // Boundary conditions.
        let mut bc_ids = Vec::new();
        for side in 0..sides {
            let id = format!("s{stage}.bc{side}");
            let s = NodeSpec::new(&id, format!("side:{side}"))
                .target("gpu")
                .needs([var_ids[rng.below(vars)].clone()]);
            specs.push(s);
            bc_ids.push(id);
        }
        // Nodal residuals: reductions of kernels and boundary conditions.
        residuals.clear();
        for i in 0..vars {
            let id = tag("res", i);
            let mut s = NodeSpec::new(&id, "node").target("gpu").reducing();
            for _ in 0..3 {
                s.needs
                    .push(kernel_ids[rng.below(kernel_ids.len())].clone());
            }
            s.needs.push(bc_ids[rng.below(bc_ids.len())].clone());
            s.needs.sort();
            s.needs.dedup();
            specs.push(s);
            residuals.push(id);
        }
        postprocessors = new_pps;
        stage += 1;
    }
    specs
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::graph::Graph;

    #[test]
    fn generated_graphs_are_valid_input() {
        for seed in 0..50 {
            let shape = RandomShape {
                nodes: 12,
                locations: 3,
                targets: 2,
                density: 0.3,
            };
            Graph::new(random(shape, seed)).unwrap();
        }
        let g = Graph::new(moose_like(5_000, 8, 1)).unwrap();
        assert!(g.len() >= 5_000);
    }
}
