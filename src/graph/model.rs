//! The loop-graph model of seed 000 (MOOSE): nodes with a location, a target, a persistence
//! (cached or ephemeral), an availability (reducing or not) and dependencies.
//!
//! Building a [`Graph`] validates it: unknown or duplicate ids, dependency cycles (the error
//! names the nodes on the cycle) and ephemeral values needed across locations or targets are
//! rejected with an error that names the nodes involved.

use petgraph::algo::{tarjan_scc, toposort};
use petgraph::graph::{DiGraph, NodeIndex};
use serde::Deserialize;
use std::collections::HashMap;

/// Index of a node in a [`Graph`] (its position in the input).
pub type NodeIx = usize;

/// Where a node is computed: its mesh location (with block restriction) and its target.
/// Nodes of different keys never share a loop.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct LocKey {
    /// The mesh location (set, with block restriction).
    pub location: String,
    /// The target (device, host, ...).
    pub target: String,
}

/// One node as given by a user (the JSON schema of `parloop partition`).
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NodeSpec {
    /// A unique id.
    pub id: String,
    /// Where it is computed.
    pub location: String,
    #[serde(default = "default_target")]
    /// Its target (default: `default`).
    pub target: String,
    #[serde(default = "default_true")]
    /// Stored for later loops (default); an ephemeral node is recomputed in every loop that needs it.
    pub cached: bool,
    #[serde(default)]
    /// Reduces over its location (a sum, min or max): nothing in the same loop can use it.
    pub reducing: bool,
    #[serde(default)]
    /// The ids of the nodes it needs.
    pub needs: Vec<String>,
    /// Dependencies whose value is not available inside the same loop even though neither
    /// side reduces (e.g. an indirect read of a value computed on the same set). Not part of
    /// the JSON schema; the fusion pass sets it.
    #[serde(skip)]
    pub barrier_needs: Vec<String>,
}

fn default_target() -> String {
    "default".to_string()
}
fn default_true() -> bool {
    true
}

impl NodeSpec {
    /// A cached, non-reducing node with no dependencies.
    pub fn new(id: impl Into<String>, location: impl Into<String>) -> Self {
        NodeSpec {
            id: id.into(),
            location: location.into(),
            target: default_target(),
            cached: true,
            reducing: false,
            needs: Vec::new(),
            barrier_needs: Vec::new(),
        }
    }
    /// Sets the target.
    pub fn target(mut self, target: impl Into<String>) -> Self {
        self.target = target.into();
        self
    }
    /// Makes the node ephemeral (recomputed where needed, never stored).
    pub fn ephemeral(mut self) -> Self {
        self.cached = false;
        self
    }
    /// Makes the node a reduction.
    pub fn reducing(mut self) -> Self {
        self.reducing = true;
        self
    }
    /// Adds dependencies by id.
    pub fn needs<S: Into<String>>(mut self, ids: impl IntoIterator<Item = S>) -> Self {
        self.needs.extend(ids.into_iter().map(Into::into));
        self
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct GraphFile {
    nodes: Vec<NodeSpec>,
}

/// A validated node.
#[derive(Clone, Debug)]
pub struct Node {
    /// The id from the input.
    pub id: String,
    /// Index into [`Graph::keys`].
    pub key: usize,
    /// Stored for later loops.
    pub cached: bool,
    /// A reduction.
    pub reducing: bool,
    /// Dependencies (nodes this one needs), each with its barrier flag.
    pub needs: Vec<(NodeIx, bool)>,
}

/// What is wrong with a graph given by a user.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum GraphError {
    #[error("malformed graph JSON at line {line}, column {column}: {message}")]
    /// The input is not valid JSON or not the schema.
    Json {
        /// Line of the error.
        line: usize,
        /// Column of the error.
        column: usize,
        /// What the parser says.
        message: String,
    },
    #[error("node id {0:?} appears more than once: ids must be unique")]
    /// Two nodes share an id.
    DuplicateId(String),
    #[error("node {node:?} needs {need:?}, which is not a node id")]
    /// A node needs an id that is no node's.
    UnknownNeed {
        /// The node.
        node: String,
        /// The id it needs.
        need: String,
    },
    #[error("dependency cycle: {}: a value cannot depend on itself", .0.join(" -> "))]
    /// Dependencies form a cycle (the ids on it).
    Cycle(Vec<String>),
    #[error(
        "ephemeral node {ephemeral:?} ({ephemeral_key}) is needed by {consumer:?} ({consumer_key}): \
         a value used at another location or target must be cached (set \"cached\": true on {ephemeral:?})"
    )]
    /// An ephemeral node is needed at another location or target.
    EphemeralAcross {
        /// The ephemeral node's id.
        ephemeral: String,
        /// Its location and target.
        ephemeral_key: String,
        /// The node that needs it.
        consumer: String,
        /// That node's location and target.
        consumer_key: String,
    },
    #[error("node {0:?} has an empty location: every node needs a location")]
    /// A node has an empty location.
    EmptyLocation(String),
}

/// A validated dependency graph. Node order is the input order; `topo` is a topological order
/// (dependencies first) that keeps input order where it can.
#[derive(Clone, Debug)]
pub struct Graph {
    /// The validated nodes, in input order.
    pub nodes: Vec<Node>,
    /// The distinct (location, target) keys.
    pub keys: Vec<LocKey>,
    /// A topological order (dependencies first) that keeps input order where it can.
    pub topo: Vec<NodeIx>,
    /// `consumers[u]`: the nodes that need u.
    pub consumers: Vec<Vec<NodeIx>>,
}

impl Graph {
    /// Parses the JSON schema of `parloop partition` (unknown fields are rejected).
    pub fn from_json(text: &str) -> Result<Graph, GraphError> {
        let file: GraphFile = serde_json::from_str(text).map_err(|e| GraphError::Json {
            line: e.line(),
            column: e.column(),
            message: strip_position(&e.to_string()),
        })?;
        Graph::new(file.nodes)
    }

    /// Validates and builds a graph.
    pub fn new(specs: Vec<NodeSpec>) -> Result<Graph, GraphError> {
        let mut index: HashMap<&str, NodeIx> = HashMap::with_capacity(specs.len());
        for (i, s) in specs.iter().enumerate() {
            if s.location.is_empty() {
                return Err(GraphError::EmptyLocation(s.id.clone()));
            }
            if index.insert(s.id.as_str(), i).is_some() {
                return Err(GraphError::DuplicateId(s.id.clone()));
            }
        }
        let mut keys: Vec<LocKey> = Vec::new();
        let mut key_index: HashMap<LocKey, usize> = HashMap::new();
        let mut nodes = Vec::with_capacity(specs.len());
        for s in &specs {
            let key = LocKey {
                location: s.location.clone(),
                target: s.target.clone(),
            };
            let k = *key_index.entry(key.clone()).or_insert_with(|| {
                keys.push(key);
                keys.len() - 1
            });
            let mut needs: Vec<(NodeIx, bool)> = Vec::new();
            let all = s
                .needs
                .iter()
                .map(|n| (n, false))
                .chain(s.barrier_needs.iter().map(|n| (n, true)));
            for (n, barrier) in all {
                let Some(&j) = index.get(n.as_str()) else {
                    return Err(GraphError::UnknownNeed {
                        node: s.id.clone(),
                        need: n.clone(),
                    });
                };
                match needs.iter_mut().find(|(d, _)| *d == j) {
                    Some(entry) => entry.1 |= barrier,
                    None => needs.push((j, barrier)),
                }
            }
            nodes.push(Node {
                id: s.id.clone(),
                key: k,
                cached: s.cached || s.reducing,
                reducing: s.reducing,
                needs,
            });
        }
        let topo = topological_order(&nodes)?;
        let mut consumers = vec![Vec::new(); nodes.len()];
        for (v, n) in nodes.iter().enumerate() {
            for &(u, _) in &n.needs {
                consumers[u].push(v);
            }
        }
        let g = Graph {
            nodes,
            keys,
            topo,
            consumers,
        };
        g.check_ephemeral_locality()?;
        Ok(g)
    }

    /// Number of nodes.
    pub fn len(&self) -> usize {
        self.nodes.len()
    }
    /// Whether the graph has no node.
    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }
    /// The location and target of node `v`.
    pub fn key_of(&self, v: NodeIx) -> &LocKey {
        &self.keys[self.nodes[v].key]
    }
    /// Required nodes run exactly once: cached, reducing, and sinks (nobody needs them).
    pub fn is_required(&self, v: NodeIx) -> bool {
        self.nodes[v].cached || self.consumers[v].is_empty()
    }
    /// Whether v can use u's value inside the same loop: w(u, v) = 0 in the model.
    /// (Same key, u not reducing, and the edge is not a barrier.)
    pub fn edge_weight(&self, u: NodeIx, v: NodeIx, barrier: bool) -> u8 {
        let a = &self.nodes[u];
        let b = &self.nodes[v];
        u8::from(barrier || a.reducing || a.key != b.key)
    }

    fn check_ephemeral_locality(&self) -> Result<(), GraphError> {
        for (v, n) in self.nodes.iter().enumerate() {
            for &(u, barrier) in &n.needs {
                let dep = &self.nodes[u];
                if !dep.cached && (dep.key != n.key || barrier) {
                    return Err(GraphError::EphemeralAcross {
                        ephemeral: dep.id.clone(),
                        ephemeral_key: describe_key(&self.keys[dep.key]),
                        consumer: self.nodes[v].id.clone(),
                        consumer_key: describe_key(&self.keys[n.key]),
                    });
                }
            }
        }
        Ok(())
    }
}

/// "cells" or "cells @ gpu" (the default target is not shown).
pub fn describe_key(k: &LocKey) -> String {
    if k.target == "default" {
        k.location.clone()
    } else {
        format!("{} @ {}", k.location, k.target)
    }
}

fn strip_position(msg: &str) -> String {
    match msg.rfind(" at line ") {
        Some(i) => msg[..i].to_string(),
        None => msg.to_string(),
    }
}

/// Kahn's algorithm with the smallest ready index first (keeps input order where possible);
/// on a cycle, petgraph's strongly connected components name its nodes.
fn topological_order(nodes: &[Node]) -> Result<Vec<NodeIx>, GraphError> {
    let n = nodes.len();
    let mut indeg = vec![0usize; n];
    let mut consumers = vec![Vec::new(); n];
    for (v, node) in nodes.iter().enumerate() {
        for &(u, _) in &node.needs {
            indeg[v] += 1;
            consumers[u].push(v);
        }
    }
    let mut ready: std::collections::BinaryHeap<std::cmp::Reverse<usize>> = (0..n)
        .filter(|&v| indeg[v] == 0)
        .map(std::cmp::Reverse)
        .collect();
    let mut order = Vec::with_capacity(n);
    while let Some(std::cmp::Reverse(u)) = ready.pop() {
        order.push(u);
        for &v in &consumers[u] {
            indeg[v] -= 1;
            if indeg[v] == 0 {
                ready.push(std::cmp::Reverse(v));
            }
        }
    }
    if order.len() == n {
        return Ok(order);
    }
    Err(GraphError::Cycle(find_cycle(nodes)))
}

/// Names the nodes of one dependency cycle, in dependency order, first node repeated at the end.
fn find_cycle(nodes: &[Node]) -> Vec<String> {
    let mut g: DiGraph<(), ()> = DiGraph::with_capacity(nodes.len(), 0);
    for _ in nodes {
        g.add_node(());
    }
    for (v, node) in nodes.iter().enumerate() {
        for &(u, _) in &node.needs {
            g.add_edge(NodeIndex::new(u), NodeIndex::new(v), ());
        }
    }
    debug_assert!(toposort(&g, None).is_err());
    for scc in tarjan_scc(&g) {
        let members: std::collections::HashSet<usize> = scc.iter().map(|i| i.index()).collect();
        let self_loop = |v: usize| nodes[v].needs.iter().any(|&(u, _)| u == v);
        if members.len() == 1 && !self_loop(scc[0].index()) {
            continue;
        }
        // Walk backwards along needs inside the component until a node repeats.
        let start = *members.iter().min().unwrap_or(&0);
        let mut path = vec![start];
        let mut seen = HashMap::from([(start, 0usize)]);
        let mut v = start;
        while let Some(&(u, _)) = nodes[v].needs.iter().find(|(u, _)| members.contains(u)) {
            if let Some(&pos) = seen.get(&u) {
                let mut cycle: Vec<String> = path[pos..]
                    .iter()
                    .rev()
                    .map(|&x| nodes[x].id.clone())
                    .collect();
                cycle.push(cycle[0].clone());
                return cycle;
            }
            seen.insert(u, path.len());
            path.push(u);
            v = u;
        }
    }
    Vec::new()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cycle_is_named() {
        let g = Graph::new(vec![
            NodeSpec::new("a", "x").needs(["c"]),
            NodeSpec::new("b", "x").needs(["a"]),
            NodeSpec::new("c", "x").needs(["b"]),
            NodeSpec::new("d", "x"),
        ]);
        let GraphError::Cycle(names) = g.unwrap_err() else {
            panic!("expected a cycle")
        };
        assert_eq!(names.len(), 4);
        assert_eq!(names.first(), names.last());
        for id in ["a", "b", "c"] {
            assert!(names.iter().any(|n| n == id), "{names:?}");
        }
    }

    #[test]
    fn reducing_implies_cached_and_topo_keeps_input_order() {
        let mut spec = NodeSpec::new("r", "x").reducing();
        spec.cached = false;
        let g = Graph::new(vec![spec, NodeSpec::new("s", "x"), NodeSpec::new("t", "x")]).unwrap();
        assert!(g.nodes[0].cached);
        assert_eq!(g.topo, vec![0, 1, 2]);
    }
}
