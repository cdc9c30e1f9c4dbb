//! The loop-graph partitioner.
//!
//! Given computations with a location (and target), a persistence and an availability, it
//! finds the fewest loops that compute them all in a valid order: the model ([`Graph`]), the
//! algorithms (`best`, `exact`, `list`, `moose`, `tvm`), the lower bounds, the validator, and
//! the JSON/dot/text formats of the `parloop partition` CLI.

mod constraints;
mod exact;
pub mod generate;
mod list;
mod model;
mod moose;
mod output;
mod quotient;
mod tvm;
mod validate;

pub(crate) use constraints::{Constraints, Schedule};
pub use exact::Budget;
pub use model::{Graph, GraphError, LocKey, Node, NodeIx, NodeSpec, describe_key};
pub use output::Format;
pub use validate::{can_merge_loops, is_valid, violations};

use std::fmt;
use std::str::FromStr;

/// Which algorithm partitions the graph.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Algorithm {
    /// Exact when the graph fits the search budget, else the best of the heuristics.
    #[default]
    Best,
    /// Branch and bound over location sequences (falls back to the best heuristic, and says so,
    /// when the budget runs out).
    Exact,
    /// Typed list scheduling with critical-path priority and lookahead.
    List,
    /// The seed's basic split and full merge, with every merge checked.
    Moose,
    /// TVM's restriction-map region formation.
    Tvm,
}

impl Algorithm {
    /// Every algorithm, in the order the CLI lists them.
    pub const ALL: [Algorithm; 5] = [
        Algorithm::Best,
        Algorithm::Exact,
        Algorithm::List,
        Algorithm::Moose,
        Algorithm::Tvm,
    ];
    /// The algorithm's name, as the CLI reads it.
    pub fn name(self) -> &'static str {
        match self {
            Algorithm::Best => "best",
            Algorithm::Exact => "exact",
            Algorithm::List => "list",
            Algorithm::Moose => "moose",
            Algorithm::Tvm => "tvm",
        }
    }
}

impl fmt::Display for Algorithm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Algorithm {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Algorithm::ALL
            .into_iter()
            .find(|a| a.name() == s)
            .ok_or_else(|| format!("unknown algorithm {s:?}: use best, exact, list, moose or tvm"))
    }
}

/// One loop: a key (index into [`Graph::keys`]) and its nodes in execution order. Ephemeral
/// nodes appear in every loop that recomputes them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Loop {
    /// The loop's location and target (index into [`Graph::keys`]).
    pub key: usize,
    /// The nodes the loop computes, in execution order.
    pub nodes: Vec<NodeIx>,
}

/// The answer: loops in a valid execution order, with a lower bound on the number of loops.
#[derive(Clone, Debug)]
pub struct Partition {
    /// The loops in a valid execution order.
    pub loops: Vec<Loop>,
    /// max(LB_path, LB_loc): no valid partition has fewer loops.
    pub lower_bound: usize,
    /// Proven minimal (exact search finished, or the count equals the lower bound).
    pub optimal: bool,
    /// The algorithm whose answer this is.
    pub algorithm: Algorithm,
    /// Why the answer is not what was asked for (e.g. the exact search ran out of budget).
    pub note: Option<String>,
}

/// How to partition.
#[derive(Clone, Copy, Debug, Default)]
pub struct Options {
    /// The algorithm to run.
    pub algorithm: Algorithm,
    /// The exact search's budget.
    pub budget: Budget,
}

/// Up to this many required nodes, `best` also runs `tvm` and `moose` (their merge checks and
/// restriction sets grow quadratically) and keeps the best answer.
const MERGE_HEURISTICS_IN_BEST_MAX: usize = 600;

/// Partitions `g` into loops.
///
/// ```
/// use parloop::graph::{Graph, Options, partition};
/// // Two values on cells, a sum over cells that needs the first, and a value on nodes.
/// let g = Graph::from_json(r#"{"nodes": [
///     {"id": "a", "location": "cells"},
///     {"id": "b", "location": "cells", "needs": ["a"]},
///     {"id": "s", "location": "cells", "reducing": true, "needs": ["a"]},
///     {"id": "n", "location": "nodes", "needs": ["b"]}
/// ]}"#).unwrap();
/// let p = partition(&g, &Options::default());
/// // a, b and s share one loop over cells, n needs a loop over nodes.
/// assert_eq!(p.loops.len(), 2);
/// assert!(p.optimal);
/// ```
pub fn partition(g: &Graph, opts: &Options) -> Partition {
    let c = Constraints::new(g);
    let lb = c.lower_bound();
    let (schedule, algorithm, proven, note) = match opts.algorithm {
        Algorithm::List => (list::schedule(&c, true), Algorithm::List, false, None),
        Algorithm::Moose => (moose::schedule(&c), Algorithm::Moose, false, None),
        Algorithm::Tvm => match tvm::schedule(&c) {
            Some(s) => (s, Algorithm::Tvm, false, None),
            None => (
                list::schedule(&c, true),
                Algorithm::List,
                false,
                Some("tvm regions came out cyclic (a bug): answer from list scheduling".into()),
            ),
        },
        Algorithm::Exact | Algorithm::Best => best(&c, lb, opts),
    };
    let optimal = proven || schedule.loops() == lb;
    Partition {
        loops: loops_of(g, &c, &schedule),
        lower_bound: lb,
        optimal,
        algorithm,
        note,
    }
}

fn best(c: &Constraints, lb: usize, opts: &Options) -> (Schedule, Algorithm, bool, Option<String>) {
    let mut heuristic = (list::schedule(c, true), Algorithm::List);
    // The merge-based heuristics are quadratic; on large graphs list scheduling alone.
    let mut others: Vec<(Schedule, Algorithm)> = Vec::new();
    if c.len() <= MERGE_HEURISTICS_IN_BEST_MAX {
        others.extend(tvm::schedule(c).map(|s| (s, Algorithm::Tvm)));
        others.push((moose::schedule(c), Algorithm::Moose));
    }
    for o in others {
        if o.0.loops() < heuristic.0.loops() {
            heuristic = o;
        }
    }
    if heuristic.0.loops() == lb {
        // Proven by the bound: with `exact` asked for, that is the exact answer.
        let algorithm = if opts.algorithm == Algorithm::Exact {
            Algorithm::Exact
        } else {
            heuristic.1
        };
        return (heuristic.0, algorithm, true, None);
    }
    if c.len() > opts.budget.max_nodes {
        let note = (opts.algorithm == Algorithm::Exact).then(|| {
            format!(
                "{} required nodes exceed the exact search's limit of {}: answer from {}",
                c.len(),
                opts.budget.max_nodes,
                heuristic.1
            )
        });
        return (heuristic.0, heuristic.1, false, note);
    }
    let start_loops = heuristic.0.loops();
    let r = exact::search(c, heuristic.0, opts.budget);
    let improved = r.schedule.loops() < start_loops;
    let algorithm = if improved || r.proven {
        Algorithm::Exact
    } else {
        heuristic.1
    };
    let note = (!r.proven).then(|| {
        format!(
            "exact search stopped after {} states without a proof: best answer found, from {}",
            r.states, algorithm
        )
    });
    (r.schedule, algorithm, r.proven, note)
}

/// Turns a schedule into loops: each required node in its loop, preceded by the ephemeral
/// nodes it recomputes, all in topological order.
fn loops_of(g: &Graph, c: &Constraints, s: &Schedule) -> Vec<Loop> {
    let mut pos = vec![0usize; g.len()];
    for (i, &v) in g.topo.iter().enumerate() {
        pos[v] = i;
    }
    let mut loops: Vec<Loop> = s
        .seq
        .iter()
        .map(|&key| Loop {
            key,
            nodes: Vec::new(),
        })
        .collect();
    for (r, &k) in s.t.iter().enumerate() {
        loops[k].nodes.extend(c.ephemeral[r].iter().copied());
        loops[k].nodes.push(c.node[r]);
    }
    for lp in &mut loops {
        lp.nodes.sort_unstable_by_key(|&v| pos[v]);
        lp.nodes.dedup();
    }
    loops
}

impl Partition {
    /// The partition in one of the CLI's formats.
    pub fn render(&self, g: &Graph, format: Format) -> String {
        output::render(self, g, format)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The 6-node counterexample to the published MOOSE heuristic (docs/background.md).
    fn counterexample() -> Graph {
        Graph::new(vec![
            NodeSpec::new("n0", "Nd"),
            NodeSpec::new("n1", "El").ephemeral(),
            NodeSpec::new("n2", "El").ephemeral().needs(["n0"]),
            NodeSpec::new("n3", "El"),
            NodeSpec::new("n4", "Nd").ephemeral().needs(["n3"]),
            NodeSpec::new("n5", "Nd").ephemeral().needs(["n3", "n4"]),
        ])
        .unwrap()
    }

    #[test]
    fn every_algorithm_is_valid_on_the_counterexample() {
        let g = counterexample();
        for algorithm in Algorithm::ALL {
            let p = partition(
                &g,
                &Options {
                    algorithm,
                    ..Default::default()
                },
            );
            assert_eq!(
                violations(&g, &p.loops),
                Vec::<String>::new(),
                "{algorithm}"
            );
            assert!(p.loops.len() >= 3, "{algorithm}: {:?}", p.loops);
        }
        let p = partition(&g, &Options::default());
        assert_eq!(p.loops.len(), 3);
        assert!(p.optimal);
    }
}
#[cfg(test)]
mod barrier_tests {
    use super::*;
    #[test]
    fn barrier_edges_separate_loops() {
        let mut b = NodeSpec::new("L1", "s");
        b.barrier_needs.push("L0".into());
        let g = Graph::new(vec![NodeSpec::new("L0", "s"), b]).unwrap();
        let p = partition(&g, &Options::default());
        assert_eq!(p.loops.len(), 2, "{:?}", p.loops);
    }
}
