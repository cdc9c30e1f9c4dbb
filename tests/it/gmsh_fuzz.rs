//! The Gmsh reader under fuzzing, and the regressions it and issue 25 found.
//!
//! Valid files are written here as the formats specify (MSH 4.1 ASCII; 4.1 binary in both byte
//! orders with 4- and 8-byte size_t; MSH 2.2 ASCII), node tags ascending, permuted across
//! several blocks, sparse, or with one tag twice, from the committed meshes (whose own files are
//! fuzzed too). Each case mutates one deterministically (`parloop::util::Rng`, seeded by the
//! case's number): truncation, counts made huge, negative or zero, bad data sizes, flipped bytes,
//! lines deleted, duplicated or swapped, section tags broken, bytes inserted. Every case must
//! read or fail with an error that says where (a line or a byte offset); none may panic (each
//! runs under `catch_unwind`, a panic reports its seed). An unmutated file must read as the mesh
//! written, each node with its tag's coordinates (or, with a duplicated tag, fail naming it).
//! Each mesh read is also given to `Topology::new`, which must not panic either.
//!
//! `GMSH_FUZZ_SEED=<seed> cargo test --test it -- gmsh_fuzz::one_seed --ignored --nocapture`
//! replays one case; `GMSH_FUZZ_CASES=<n> cargo test --test it -- gmsh_fuzz::long --ignored` runs
//! n cases (default 20,000).

use parloop::mesh::topology::Topology;
use parloop::mesh::{Group, Mesh, gmsh};
use parloop::util::Rng;
use std::panic::{AssertUnwindSafe, catch_unwind};

mod gmsh_write;
use gmsh_write::{Written, encode, write};

/// A format: the header's version and file type, the size of size_t, big-endian.
pub type Format = (&'static str, usize, bool);
const FORMATS: [Format; 5] = [
    ("4.1 0", 8, false),
    ("4.1 1", 8, false),
    ("4.1 1", 4, true),
    ("4.1 1", 8, true),
    ("2.2 0", 8, false),
];
const TAGS: [Tags; 4] = [
    Tags::Ascending,
    Tags::Permuted,
    Tags::Sparse,
    Tags::Duplicate,
];

#[derive(Clone, Copy, Debug)]
pub enum Tags {
    Ascending,
    Permuted,
    Sparse,
    Duplicate,
}

/// The meshes written: the committed ones and two triangles (with their own files).
fn meshes() -> Vec<(String, Vec<u8>, Mesh)> {
    let mut out = Vec::new();
    for name in ["disk", "lshape", "cube"] {
        let path = format!("{}/tests/data/{name}.msh", env!("CARGO_MANIFEST_DIR"));
        let bytes = std::fs::read(&path).unwrap();
        let m = gmsh::read(&bytes).unwrap();
        out.push((name.to_string(), bytes, m));
    }
    let square = gmsh::read(SQUARE_22.as_bytes()).unwrap();
    out.push(("square".into(), SQUARE_22.as_bytes().to_vec(), square));
    out
}

/// Whether an error message says where: `line N` or `byte N`.
fn has_place(msg: &str) -> bool {
    ["line ", "byte "].iter().any(|p| {
        msg.match_indices(p)
            .any(|(i, _)| msg[i + p.len()..].starts_with(|c: char| c.is_ascii_digit()))
    })
}

/// Words put in place of numbers, and headers in place of the file's, separated by `|`.
const NUMBERS: &str = "0|-1|1|2|-2147483649|2147483648|4294967296|18446744073709551615|\
    18446744073709551616|99999999999999999999999999|1e308|-1e308|1e999|nan|inf|1.5|-0|+3|0x10||$Nodes";
const HEADERS: &str = "4.1 0 99999999999999999999|4.1 1 3|4.1 1 0|4.1 1 16|4.1 2 8|4.1 0 -8|\
    4.1||2.2 0 8|2.2 1 8|4.1 1 8|4.1 0 8|4.1 1 4|4 0 8|4.1 0 8 0";

fn pick<'a>(list: &'a str, rng: &mut Rng) -> &'a str {
    let v: Vec<&str> = list.split('|').collect();
    v[rng.below(v.len())]
}

/// The byte ranges of the lines (without their newline).
fn lines(b: &[u8]) -> Vec<(usize, usize)> {
    let mut starts: Vec<usize> = (0..b.len())
        .filter(|&i| b[i] == b'\n')
        .map(|i| i + 1)
        .collect();
    starts.insert(0, 0);
    let ends = starts[1..].iter().map(|&s| s - 1).chain([b.len()]);
    starts.iter().copied().zip(ends).collect()
}

/// Values put in binary counts, tags, types and flags.
const VALUES: [u64; 7] = [0, u64::MAX, 1 << 31, 1 << 32, 1 << 63, 2, u64::MAX - 1];

/// Applies 1 to 3 mutations; says what they were.
fn mutate(w: &Written, rng: &mut Rng, log: &mut Vec<String>) -> Vec<u8> {
    let mut b = w.bytes.clone();
    for _ in 0..1 + rng.below(3) {
        let ls = lines(&b);
        let (s, e) = ls[rng.below(ls.len())];
        match rng.below(10) {
            0 => {
                let at = rng.below(b.len() + 1);
                b.truncate(at);
                log.push(format!("truncated at byte {at}"));
            }
            1 if !b.is_empty() => {
                let at = rng.below(b.len());
                b[at] ^= 1 << rng.below(8);
                log.push(format!("flipped a bit of byte {at}"));
            }
            2 => {
                let (s, e) = ls[1.min(ls.len() - 1)];
                let h = pick(HEADERS, rng);
                b.splice(s..e, h.bytes());
                log.push(format!("header {h:?}"));
            }
            3 | 4 if !w.fields.is_empty() => {
                let (at, width) = w.fields[rng.below(w.fields.len())];
                let v = VALUES.get(rng.below(9)).copied().unwrap_or(rng.next_u64());
                let bytes = encode(v, width, w.big);
                if at + width <= b.len() {
                    b[at..at + width].copy_from_slice(&bytes);
                    log.push(format!("field at byte {at} ({width} bytes) set to {v}"));
                }
            }
            3 | 4 => {
                // A word of line s..e replaced.
                let ws = |i: usize| b[i].is_ascii_whitespace();
                let starts: Vec<usize> = (s..e)
                    .filter(|&i| !ws(i) && (i == s || ws(i - 1)))
                    .collect();
                if !starts.is_empty() {
                    let i = starts[rng.below(starts.len())];
                    let j = (i..e).find(|&j| ws(j)).unwrap_or(e);
                    let x = pick(NUMBERS, rng);
                    log.push(format!("word at byte {i} set to {x:?}"));
                    b.splice(i..j, x.bytes());
                }
            }
            5 => {
                b.drain(s..(e + 1).min(b.len()));
                log.push(format!("deleted the line at byte {s}"));
            }
            6 => {
                let line: Vec<u8> = b[s..(e + 1).min(b.len())].to_vec();
                b.splice(s..s, line);
                log.push(format!("duplicated the line at byte {s}"));
            }
            7 => {
                let (s2, e2) = ls[rng.below(ls.len())];
                if e < s2 {
                    let (a, c) = (b[s..e].to_vec(), b[s2..e2].to_vec());
                    b.splice(s2..e2, a);
                    b.splice(s..e, c);
                    log.push(format!("swapped the lines at bytes {s} and {s2}"));
                }
            }
            8 => {
                let tags: Vec<_> = ls.iter().filter(|l| b.get(l.0) == Some(&b'$')).collect();
                let Some(&&(s, e)) = tags.get(rng.below(tags.len().max(1))) else {
                    continue;
                };
                // A section tag broken.
                match rng.below(3) {
                    0 => b[e - 1] = b'z',
                    1 => b.insert(s + 1, b'E'),
                    _ => drop(b.drain(s..e)),
                }
                log.push(format!("section tag at byte {s} broken"));
            }
            _ => {
                let at = rng.below(b.len() + 1);
                let junk: Vec<u8> = (0..1 + rng.below(8))
                    .map(|_| rng.below(256) as u8)
                    .collect();
                log.push(format!("inserted {junk:?} at byte {at}"));
                b.splice(at..at, junk);
            }
        }
    }
    b
}

/// A mesh the reader returned is consistent: indices in range, coordinates finite.
fn consistent(m: &Mesh) -> Result<(), String> {
    let nv = m.nvertices() as u32;
    let sizes = |g: &Group| {
        if g.dim == m.dim() {
            m.ncells()
        } else {
            m.facets.len()
        }
    };
    let ok = m.cells.len().is_multiple_of(m.cell_type.vertices())
        && m.cells
            .iter()
            .chain(m.facets.iter().flatten())
            .all(|&v| v < nv)
        && m.coords.iter().flatten().all(|x| x.is_finite())
        && m.groups
            .iter()
            .all(|g| g.members.iter().all(|&k| (k as usize) < sizes(g)));
    ok.then_some(())
        .ok_or_else(|| "an inconsistent mesh".to_string())
}

fn panic_text(p: Box<dyn std::any::Any + Send>) -> String {
    p.downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| p.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "(not a string)".into())
}

/// Cases read, refused, unmutated.
type Tally = [usize; 3];

/// Case `seed`: a mesh, a format, a tag scheme, and (for 5 cases in 6) mutations. Err: why the
/// case fails.
fn run_case(
    seed: u64,
    meshes: &[(String, Vec<u8>, Mesh)],
    tally: &mut Tally,
    verbose: bool,
) -> Result<(), String> {
    let mut rng = Rng::new(seed);
    let (name, committed, mesh) = &meshes[rng.below(meshes.len())];
    let (f, tags) = (FORMATS[rng.below(5)], TAGS[rng.below(4)]);
    let w = if rng.chance(0.15) {
        // The committed file itself.
        Written {
            bytes: committed.clone(),
            expect: Ok(mesh.clone()),
            fields: Vec::new(),
            big: false,
        }
    } else {
        write(mesh, f, tags, &mut rng)
    };
    let mut log = Vec::new();
    let bytes = if rng.chance(1.0 / 6.0) {
        w.bytes.clone()
    } else {
        mutate(&w, &mut rng, &mut log)
    };
    let what = format!("{name}, {f:?}, {tags:?}, mutations {log:?}");
    let got = catch_unwind(AssertUnwindSafe(|| gmsh::read(&bytes)))
        .map_err(|p| format!("the reader panicked ({what}): {}", panic_text(p)))?;
    if verbose {
        println!("seed {seed}: {what}\n{}", String::from_utf8_lossy(&bytes));
        println!("result: {:?}", got.as_ref().map(|m| m.nvertices()));
    }
    let valid = log.is_empty();
    tally[2] += usize::from(valid);
    match got {
        Ok(m) => {
            tally[0] += 1;
            consistent(&m).map_err(|e| format!("{e} ({what})"))?;
            if valid {
                match &w.expect {
                    Ok(e) if *e == m => {}
                    Ok(e) => {
                        return Err(format!("read a different mesh ({what}): {}", diff(e, &m)));
                    }
                    Err(t) => return Err(format!("node tag {t} twice was accepted ({what})")),
                }
            }
            let t = catch_unwind(AssertUnwindSafe(|| Topology::new(m.cell_type, &m.cells)));
            match t.map_err(|p| format!("Topology::new panicked ({what}): {}", panic_text(p)))? {
                Err(e) if valid => Err(format!("{e} ({what})")),
                _ => Ok(()),
            }
        }
        Err(e) => {
            tally[1] += 1;
            let e = e.to_string();
            if !has_place(&e) {
                return Err(format!(
                    "an error without a line or byte offset ({what}): {e}"
                ));
            }
            match (&w.expect, valid) {
                (Ok(_), true) => Err(format!("a valid file refused ({what}): {e}")),
                (Err(t), true) if !e.contains(&format!("node tag {t} ")) => Err(format!(
                    "the error does not name node tag {t} ({what}): {e}"
                )),
                _ => Ok(()),
            }
        }
    }
}

/// Where two meshes differ first, by node.
fn diff(want: &Mesh, got: &Mesh) -> String {
    let (w, g) = (&want.coords, &got.coords);
    match (0..w.len().min(g.len())).find(|&i| w[i] != g[i]) {
        Some(i) => format!("vertex {i} at {:?}, expected {:?}", g[i], w[i]),
        None if w.len() != g.len() => format!("{} vertices, expected {}", g.len(), w.len()),
        None => format!("cells, facets or groups: {got:?}"),
    }
}

fn fuzz(cases: u64, first: u64) {
    let meshes = meshes();
    let t0 = std::time::Instant::now();
    let mut tally = Tally::default();
    let mut failures = Vec::new();
    for seed in first..first + cases {
        if let Err(e) = run_case(seed, &meshes, &mut tally, false) {
            failures.push(format!("seed {seed}: {e}"));
        }
    }
    println!(
        "{cases} cases in {:.1} s: {} read, {} refused with a place, {} unmutated",
        t0.elapsed().as_secs_f64(),
        tally[0],
        tally[1],
        tally[2]
    );
    assert!(
        failures.is_empty(),
        "{} of {cases} cases failed (replay one with GMSH_FUZZ_SEED=<seed> cargo test --test \
         gmsh_fuzz one_seed -- --ignored --nocapture):\n{}",
        failures.len(),
        failures[..failures.len().min(20)].join("\n")
    );
}

/// The default run: quick (a few seconds in a debug build).
#[test]
fn reader_fuzz() {
    fuzz(2000, 0);
}

#[test]
#[ignore = "long: GMSH_FUZZ_CASES cases (default 20,000)"]
fn long() {
    let n = std::env::var("GMSH_FUZZ_CASES").map_or(20_000, |v| v.parse().expect("a count"));
    fuzz(n, 1_000_000);
}

#[test]
#[ignore = "replays GMSH_FUZZ_SEED"]
fn one_seed() {
    let seed: u64 = std::env::var("GMSH_FUZZ_SEED")
        .expect("GMSH_FUZZ_SEED")
        .parse()
        .unwrap();
    let mut tally = Tally::default();
    if let Err(e) = run_case(seed, &meshes(), &mut tally, true) {
        panic!("seed {seed}: {e}");
    }
}

fn read_err(bytes: &[u8]) -> String {
    let e = gmsh::read(bytes).unwrap_err().to_string();
    assert!(has_place(&e), "{e}");
    e
}

const SQUARE_22: &str = "$MeshFormat\n2.2 0 8\n$EndMeshFormat\n$PhysicalNames\n2\n1 5 \"wall\"\n2 7 \"inside\"\n$EndPhysicalNames\n$Nodes\n4\n1 0 0 0\n2 1 0 0\n3 1 1 0\n4 0 1 0\n$EndNodes\n$Elements\n3\n1 1 2 5 1 1 2\n2 2 2 7 1 1 2 3\n3 2 2 7 1 1 3 4\n$EndElements\n";

/// Issue 25: three headers panicked (two inside mshio, one in our 2.2 parser); mshio also
/// underflowed on an empty `$Nodes` or `$Elements`.
#[test]
fn bad_headers_and_counts_are_errors() {
    let huge = SQUARE_22.replace("2.2 0 8", "4.1 0 99999999999999999999");
    assert!(read_err(huge.as_bytes()).starts_with("line 2: data size `99999"));
    let mut b = b"$MeshFormat\n4.1 1 3\n".to_vec();
    b.extend(1i32.to_le_bytes());
    b.extend(b"\n$EndMeshFormat\n$Nodes\n");
    assert!(read_err(&b).starts_with("line 2: data size `3`"));
    for n in [
        "18446744073709551615",
        "18446744073709551614",
        "9223372036854775807",
    ] {
        let e = read_err(
            SQUARE_22
                .replace("$Nodes\n4", &format!("$Nodes\n{n}"))
                .as_bytes(),
        );
        assert!(e.starts_with("line 10: the number of nodes is"), "{e}");
    }
    let empty = "$MeshFormat\n4.1 0 8\n$EndMeshFormat\n$Nodes\n0 0 1 1\n$EndNodes\n$Elements\n0 0 1 1\n$EndElements\n";
    assert!(read_err(empty.as_bytes()).contains("line 7: the file has no 2-D or 3-D cells"));
}

/// Issue 25: node tags 2, 1, 4, 3 (dense, not ascending) were numbered in file order.
#[test]
fn dense_tags_out_of_order_keep_their_coordinates() {
    let text = "$MeshFormat\n4.1 0 8\n$EndMeshFormat\n$Nodes\n1 4 1 4\n2 1 0 4\n2\n1\n4\n3\n1 0 0\n0 0 0\n1 1 0\n0 1 0\n$EndNodes\n$Elements\n1 2 1 2\n2 1 2 2\n1 1 2 4\n2 1 4 3\n$EndElements\n";
    let m = gmsh::read(text.as_bytes()).unwrap();
    let xy =
        |c: usize| -> Vec<[f64; 3]> { m.cell(c).iter().map(|&v| m.coords[v as usize]).collect() };
    assert_eq!(xy(0), [[0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [1.0, 1.0, 0.0]]);
    assert_eq!(xy(1), [[0.0, 0.0, 0.0], [1.0, 1.0, 0.0], [0.0, 1.0, 0.0]]);
    assert_eq!(m.cells, [1, 0, 2, 1, 2, 3]);
}

/// Every format, ascending, permuted (over several blocks) and sparse tags: read as written,
/// each node with its tag's coordinates; a duplicated tag is named.
#[test]
fn every_valid_variant_reads_as_written() {
    let mut rng = Rng::new(25);
    for (name, _, m) in meshes() {
        for f in FORMATS {
            for tags in TAGS {
                let w = write(&m, f, tags, &mut rng);
                match (gmsh::read(&w.bytes), &w.expect) {
                    (Ok(got), Ok(want)) => {
                        assert!(got == *want, "{name} {f:?} {tags:?}: {}", diff(want, &got))
                    }
                    (Err(e), Err(t)) => assert!(
                        has_place(&e.message)
                            && e.message.contains(&format!("node tag {t} appears twice")),
                        "{e}"
                    ),
                    (got, want) => panic!(
                        "{name} {f:?} {tags:?}: {:?}, expected {:?}",
                        got.err(),
                        want.as_ref().err()
                    ),
                }
            }
        }
    }
}
