//! The formats of `parloop partition`: JSON (machine readable, the documented schema), Graphviz
//! dot (loops as clusters) and a text summary.

use super::Partition;
use super::model::{Graph, describe_key};
use serde::Serialize;
use std::fmt::Write;
use std::str::FromStr;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
/// An output format of `parloop partition`.
pub enum Format {
    #[default]
    /// The documented JSON schema (machine readable).
    Json,
    /// Graphviz dot, one cluster per loop.
    Dot,
    /// A text summary.
    Text,
}

impl FromStr for Format {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "json" => Ok(Format::Json),
            "dot" => Ok(Format::Dot),
            "text" => Ok(Format::Text),
            _ => Err(format!("unknown format {s:?}: use json, dot or text")),
        }
    }
}

#[derive(Serialize)]
struct JsonLoop<'a> {
    location: &'a str,
    target: &'a str,
    nodes: Vec<&'a str>,
}

#[derive(Serialize)]
struct JsonPartition<'a> {
    loops: Vec<JsonLoop<'a>>,
    lower_bound: usize,
    optimal: bool,
    algorithm: &'static str,
}

pub(super) fn render(p: &Partition, g: &Graph, format: Format) -> String {
    match format {
        Format::Json => json(p, g),
        Format::Dot => dot(p, g),
        Format::Text => text(p, g),
    }
}

fn json(p: &Partition, g: &Graph) -> String {
    let out = JsonPartition {
        loops: p
            .loops
            .iter()
            .map(|lp| JsonLoop {
                location: &g.keys[lp.key].location,
                target: &g.keys[lp.key].target,
                nodes: lp.nodes.iter().map(|&v| g.nodes[v].id.as_str()).collect(),
            })
            .collect(),
        lower_bound: p.lower_bound,
        optimal: p.optimal,
        algorithm: p.algorithm.name(),
    };
    let mut s = serde_json::to_string_pretty(&out).unwrap_or_default();
    s.push('\n');
    s
}

fn quote(s: &str) -> String {
    format!("\"{}\"", s.replace('\\', "\\\\").replace('"', "\\\""))
}

fn dot(p: &Partition, g: &Graph) -> String {
    let mut s = String::from("digraph partition {\n  rankdir=TB;\n  node [shape=box];\n");
    // Where each node's value comes from, per loop: (loop, occurrence name).
    let name = |v: usize, k: usize| quote(&format!("{}#{k}", g.nodes[v].id));
    let mut home = vec![usize::MAX; g.len()];
    for (k, lp) in p.loops.iter().enumerate() {
        let _ = writeln!(
            s,
            "  subgraph cluster_{k} {{\n    label={};",
            quote(&format!(
                "loop {}: {}",
                k + 1,
                describe_key(&g.keys[lp.key])
            ))
        );
        for &v in &lp.nodes {
            let n = &g.nodes[v];
            let style = match (n.reducing, g.is_required(v)) {
                (true, _) => ", style=bold",
                (false, false) => ", style=dashed",
                _ => "",
            };
            let _ = writeln!(s, "    {} [label={}{style}];", name(v, k), quote(&n.id));
            if g.is_required(v) {
                home[v] = k;
            }
        }
        s.push_str("  }\n");
    }
    for (k, lp) in p.loops.iter().enumerate() {
        for &v in &lp.nodes {
            for &(u, _) in &g.nodes[v].needs {
                let from = if g.is_required(u) { home[u] } else { k };
                if from != usize::MAX {
                    let _ = writeln!(s, "  {} -> {};", name(u, from), name(v, k));
                }
            }
        }
    }
    s.push_str("}\n");
    s
}

fn text(p: &Partition, g: &Graph) -> String {
    let mut s = format!(
        "{} loops, lower bound {} ({}), algorithm {}\n",
        p.loops.len(),
        p.lower_bound,
        if p.optimal {
            "optimal"
        } else {
            "not proven optimal"
        },
        p.algorithm
    );
    if let Some(note) = &p.note {
        let _ = writeln!(s, "note: {note}");
    }
    let width = p
        .loops
        .iter()
        .map(|lp| describe_key(&g.keys[lp.key]).len())
        .max()
        .unwrap_or(0);
    for (k, lp) in p.loops.iter().enumerate() {
        let ids: Vec<String> = lp
            .nodes
            .iter()
            .map(|&v| {
                if g.is_required(v) {
                    g.nodes[v].id.clone()
                } else {
                    format!("({})", g.nodes[v].id)
                }
            })
            .collect();
        let _ = writeln!(
            s,
            "  loop {:>3}  {:<width$}  {}",
            k + 1,
            describe_key(&g.keys[lp.key]),
            ids.join(" ")
        );
    }
    s.push_str("  (ephemeral copies in parentheses)\n");
    s
}
