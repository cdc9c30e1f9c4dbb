//! The code keeps its own rules (as rust-analyzer's tidy test does): the layer table of
//! ARCHITECTURE.md, read from it as data, says which stage may import which; no source file
//! is over 600 lines; no match over access modes, reductions or strategies has a catch-all arm
//! (a new mode or strategy must be decided everywhere, and the compiler says where).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

const MAX_LINES: usize = 600;

/// The layer table: (rank, path prefix) from ARCHITECTURE.md's "Layers" section, a table whose
/// rows are `| rank | paths |` with paths in backquotes.
fn layers(root: &Path) -> Vec<(usize, String)> {
    let text = std::fs::read_to_string(root.join("ARCHITECTURE.md")).unwrap();
    let section = text
        .split("\n## Layers")
        .nth(1)
        .expect("ARCHITECTURE.md has a `## Layers` section");
    let mut out = Vec::new();
    for line in section.lines().skip_while(|l| !l.starts_with('|')) {
        if !line.starts_with('|') {
            break;
        }
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        let Ok(rank) = cells[1].parse::<usize>() else {
            continue; // the header and its rule
        };
        for path in cells[2].split('`').skip(1).step_by(2) {
            out.push((rank, path.to_string()));
        }
    }
    assert!(out.len() > 10, "the layer table is empty or unreadable");
    out
}

/// The layer of a source file or module path (the longest matching prefix).
fn layer_of(layers: &[(usize, String)], path: &str) -> Option<usize> {
    layers
        .iter()
        .filter(|(_, p)| path == p || path.starts_with(&format!("{}/", p.trim_end_matches(".rs"))))
        .max_by_key(|(_, p)| p.len())
        .map(|(r, _)| *r)
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// The source without comments (doc links name later stages without importing them).
fn code(text: &str) -> String {
    text.lines()
        .map(|l| match l.find("//") {
            Some(i) if !l[..i].contains('"') => &l[..i],
            _ => l,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The crate's root re-exports: a name used as `crate::Name` and the module it comes from.
fn root_names(root: &Path) -> BTreeMap<String, String> {
    let lib = std::fs::read_to_string(root.join("src/lib.rs")).unwrap();
    let mut out = BTreeMap::new();
    for stmt in code(&lib).split(';') {
        let s = stmt.trim();
        let Some(rest) = s.strip_prefix("pub use ") else {
            continue;
        };
        let module = rest.split("::").next().unwrap().trim().to_string();
        let names = rest.split_once("::").map_or("", |x| x.1);
        for n in names.split(|c: char| !(c.is_alphanumeric() || c == '_')) {
            if n.chars().next().is_some_and(char::is_uppercase) {
                out.insert(n.to_string(), module.clone());
            }
        }
    }
    out
}

/// The module paths a file names through `crate::`: `crate::a::b`, `crate::{a::b, c}`.
fn crate_paths(code: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = code;
    while let Some(i) = rest.find("crate::") {
        rest = &rest[i + 7..];
        if let Some(group) = rest.strip_prefix('{') {
            let end = group.find('}').unwrap_or(group.len());
            for item in group[..end].split(',') {
                let item = item.trim();
                if !item.is_empty() {
                    out.push(item.to_string());
                }
            }
        } else {
            let end = rest
                .find(|c: char| !(c.is_alphanumeric() || c == '_' || c == ':'))
                .unwrap_or(rest.len());
            out.push(rest[..end].to_string());
        }
    }
    out
}

/// Where `crate::path` lives: the longest prefix of it that is a file or folder of src/.
fn resolve(root: &Path, names: &BTreeMap<String, String>, path: &str) -> Option<String> {
    let parts: Vec<&str> = path.split("::").filter(|p| !p.is_empty()).collect();
    let first = *parts.first()?;
    let first = names.get(first).map_or(first, String::as_str);
    let mut best = None;
    let mut dir = format!("src/{first}");
    for k in 0..parts.len() {
        if k > 0 {
            dir = format!("{dir}/{}", parts[k]);
        }
        if root.join(format!("{dir}.rs")).is_file() {
            best = Some(format!("{dir}.rs"));
        } else if root.join(&dir).is_dir() {
            best = Some(dir.clone());
        } else {
            break;
        }
    }
    best
}

#[test]
fn no_import_runs_from_an_earlier_stage_to_a_later_one() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let layers = layers(root);
    let names = root_names(root);
    let mut files = Vec::new();
    rust_files(&root.join("src"), &mut files);
    let mut wrong = Vec::new();
    for f in files {
        let rel = f
            .strip_prefix(root)
            .unwrap()
            .to_string_lossy()
            .replace('\\', "/");
        if rel == "src/lib.rs" || rel.starts_with("src/bin/") {
            continue;
        }
        let Some(mine) = layer_of(&layers, &rel) else {
            wrong.push(format!("{rel}: in no layer of ARCHITECTURE.md's table"));
            continue;
        };
        let text = std::fs::read_to_string(&f).unwrap();
        for path in crate_paths(&code(&text)) {
            let Some(target) = resolve(root, &names, &path) else {
                continue;
            };
            let Some(theirs) = layer_of(&layers, &target) else {
                wrong.push(format!("{rel}: uses {target}, which is in no layer"));
                continue;
            };
            if theirs > mine {
                wrong.push(format!(
                    "{rel} (layer {mine}) uses crate::{path} ({target}, layer {theirs})"
                ));
            }
        }
    }
    wrong.sort();
    wrong.dedup();
    assert!(
        wrong.is_empty(),
        "imports against ARCHITECTURE.md's layer table:\n{}",
        wrong.join("\n")
    );
}

#[test]
fn no_source_file_is_over_600_lines() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    for dir in ["src", "tests", "benches", "examples", "web/src"] {
        rust_files(&root.join(dir), &mut files);
    }
    let mut long: Vec<String> = files
        .iter()
        .filter_map(|f| {
            let n = std::fs::read_to_string(f).unwrap().lines().count();
            (n > MAX_LINES)
                .then(|| format!("{} ({n} lines)", f.strip_prefix(root).unwrap().display()))
        })
        .collect();
    long.sort();
    assert!(
        long.is_empty(),
        "files over {MAX_LINES} lines: split them:\n{}",
        long.join("\n")
    );
}

/// The enums whose every value must be decided in each match over them.
const EXHAUSTIVE: [&str; 6] = [
    "Access::",
    "ReduceOp::",
    "Strategy::",
    "Schedule::",
    "PlanKind::",
    "Computation::",
];

/// Catch-all arms (`_ =>`) in matches whose other arms name one of `EXHAUSTIVE` (by rustfmt's
/// layout: a match's arms start at one indentation inside its braces).
fn catch_alls(code: &str) -> Vec<usize> {
    let lines: Vec<&str> = code.lines().collect();
    let indent = |l: &str| l.len() - l.trim_start().len();
    let mut out = Vec::new();
    for (k, line) in lines.iter().enumerate() {
        if !(line.contains("match ") && line.trim_end().ends_with('{')) {
            continue;
        }
        let arm = indent(line) + 4;
        let mut names_enum = false;
        let mut catch_all = None;
        for (j, l) in lines.iter().enumerate().skip(k + 1) {
            if l.trim().is_empty() {
                continue;
            }
            if indent(l) < arm {
                break;
            }
            if indent(l) != arm {
                continue;
            }
            let t = l.trim_start();
            let pattern = t.split("=>").next().unwrap_or("");
            if t.starts_with("_ =>") || t.starts_with("_ if ") {
                catch_all = Some(j);
            } else if EXHAUSTIVE.iter().any(|e| pattern.contains(e)) {
                names_enum = true;
            }
        }
        if let (true, Some(j)) = (names_enum, catch_all) {
            out.push(j + 1);
        }
    }
    out
}

#[test]
fn matches_over_access_modes_and_strategies_have_no_catch_all_arm() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    rust_files(&root.join("src"), &mut files);
    let mut found = Vec::new();
    for f in files {
        let text = std::fs::read_to_string(&f).unwrap();
        for line in catch_alls(&code(&text)) {
            found.push(format!(
                "{}:{line}",
                f.strip_prefix(root).unwrap().display()
            ));
        }
    }
    assert!(
        found.is_empty(),
        "catch-all arms in matches over access modes, reductions or strategies (name every \
         value):\n{}",
        found.join("\n")
    );
}

#[test]
fn the_checks_find_what_they_look_for() {
    let m = "fn f(a: Access) -> u32 {\n    match a {\n        Access::Inc => 1,\n        _ => 0,\n    }\n}\n";
    assert_eq!(catch_alls(m), vec![4]);
    let ok = "fn f(a: Access) -> u32 {\n    match a {\n        Access::Inc => 1,\n        Access::Read => 0,\n    }\n}\n";
    assert!(catch_alls(ok).is_empty());
    assert_eq!(
        crate_paths("use crate::{data::Set, types::DType};\nlet x = crate::util::now_ms();"),
        vec!["data::Set", "types::DType", "util::now_ms"]
    );
    let layers = vec![
        (0, "src/types.rs".to_string()),
        (3, "src/dist".to_string()),
        (5, "src/dist/distribute.rs".to_string()),
    ];
    assert_eq!(layer_of(&layers, "src/dist/comm.rs"), Some(3));
    assert_eq!(layer_of(&layers, "src/dist/distribute.rs"), Some(5));
    assert_eq!(layer_of(&layers, "src/types.rs"), Some(0));
    assert_eq!(layer_of(&layers, "src/trace/mod.rs"), None);
}
