//! Gmsh meshes: the committed meshes (a disk of triangles, an L-shape of quadrilaterals, a unit
//! cube of tetrahedra, made by the generators below and written by `gmsh::write41`) read back
//! with their counts and physical groups; topology checked (interior facets join two cells that
//! share its vertices, the boundary is closed, Euler's formula); writer -> reader round trips;
//! MSH 2.2 ASCII; malformed files; the topology against a brute-force construction on random
//! meshes; the mesh as parloop data.
//!
//! `UPDATE_MESHES=1 cargo test --test it -- gmsh::` rewrites tests/data/*.msh.

use parloop::mesh::topology::{MeshData, Topology};
use parloop::mesh::{CellType, Mesh, gmsh, unit_square};
use proptest::prelude::*;
use std::collections::{BTreeMap, BTreeSet};

use crate::gmsh_meshes;
use gmsh_meshes::{cube, disk, lshape};

/// What a mesh means, independent of the order of its facet elements and groups: the
/// vertices, the cells, and each group's members (cells by index, facets by vertex list).
type Canonical = (
    Vec<[f64; 3]>,
    CellType,
    Vec<u32>,
    BTreeMap<(usize, i32, String), BTreeSet<Vec<u32>>>,
);

fn canonical(m: &Mesh) -> Canonical {
    let groups = m
        .groups
        .iter()
        .map(|g| {
            let members = g
                .members
                .iter()
                .map(|&k| {
                    if g.dim == m.dim() {
                        vec![k]
                    } else {
                        m.facets[k as usize].clone()
                    }
                })
                .collect();
            ((g.dim, g.tag, g.name.clone()), members)
        })
        .collect();
    (m.coords.clone(), m.cell_type, m.cells.clone(), groups)
}

fn committed() -> Vec<(&'static str, Mesh)> {
    vec![("disk", disk(8)), ("lshape", lshape(4)), ("cube", cube(3))]
}

fn data_path(name: &str) -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("tests/data/{name}.msh"))
}

#[test]
fn committed_meshes_are_what_the_generators_write() {
    for (name, m) in committed() {
        let text = gmsh::write41(&m);
        let path = data_path(name);
        if std::env::var_os("UPDATE_MESHES").is_some() {
            std::fs::write(&path, &text).unwrap();
        }
        let on_disk = std::fs::read_to_string(&path).unwrap_or_default();
        assert!(
            on_disk == text,
            "{}: rerun with UPDATE_MESHES=1",
            path.display()
        );
    }
}

#[test]
fn committed_meshes_read_back_with_their_counts_and_groups() {
    let expect = [
        (
            "disk",
            81,
            128,
            &[("disk", 2, 128), ("upper", 1, 16), ("lower", 1, 16)][..],
        ),
        (
            "lshape",
            65,
            48,
            &[("domain", 2, 48), ("left", 1, 8), ("rest", 1, 24)][..],
        ),
        (
            "cube",
            64,
            162,
            &[("cube", 3, 162), ("bottom", 2, 18), ("sides", 2, 90)][..],
        ),
    ];
    for (name, nv, nc, groups) in expect {
        let m = gmsh::read_file(data_path(name)).unwrap();
        assert_eq!((m.nvertices(), m.ncells()), (nv, nc), "{name}");
        for &(g, dim, size) in groups {
            let grp = m.group(g).unwrap_or_else(|| panic!("{name}: group {g}"));
            assert_eq!(
                (grp.dim, grp.members.len()),
                (dim, size),
                "{name}: group {g}"
            );
        }
        // Read back exactly what was written.
        let generated = committed().into_iter().find(|(n, _)| *n == name).unwrap().1;
        assert!(
            canonical(&m) == canonical(&generated),
            "{name}: not what was written"
        );
    }
}

/// Interior facets join two cells that both hold its vertices; boundary facets close up (in
/// 2-D every boundary vertex ends two boundary edges, in 3-D every boundary edge borders two
/// boundary faces); Euler's formula for a ball.
fn check_topology(m: &Mesh) {
    let t = Topology::new(m.cell_type, &m.cells).unwrap();
    for f in 0..t.nfacets() {
        let [a, b] = t.facet_cells[f];
        for &c in [a, b].iter().filter(|&&c| c != u32::MAX) {
            for v in t.facet(f) {
                assert!(m.cell(c as usize).contains(v), "facet {f} and cell {c}");
            }
        }
    }
    let bnd = t.boundary();
    assert!(!bnd.is_empty());
    let mut count: BTreeMap<(u32, u32), usize> = BTreeMap::new();
    for &f in &bnd {
        let vs = t.facet(f as usize);
        if m.dim() == 2 {
            for &v in vs {
                *count.entry((v, v)).or_default() += 1;
            }
        } else {
            for k in 0..vs.len() {
                let (a, b) = (vs[k], vs[(k + 1) % vs.len()]);
                *count.entry((a.min(b), a.max(b))).or_default() += 1;
            }
        }
    }
    assert!(
        count.values().all(|&c| c == 2),
        "the boundary is not closed"
    );
    let (v, f, c) = (m.nvertices() as i64, t.nfacets() as i64, m.ncells() as i64);
    let euler = if m.dim() == 2 {
        v - f + c
    } else {
        v - t.edges.len() as i64 + f - c
    };
    assert_eq!(euler, 1, "Euler characteristic of a ball");
}

#[test]
fn derived_topology_of_the_committed_meshes() {
    for (_, m) in committed() {
        check_topology(&m);
    }
}

#[test]
fn writer_and_reader_round_trip() {
    for (_, m) in committed() {
        let back = gmsh::read(gmsh::write41(&m).as_bytes()).unwrap();
        assert!(canonical(&back) == canonical(&m), "round trip");
        // Writing what was read gives the same file.
        assert_eq!(gmsh::write41(&back), gmsh::write41(&m));
    }
}

const SQUARE_22: &str = "$MeshFormat\n2.2 0 8\n$EndMeshFormat\n$PhysicalNames\n2\n1 5 \"wall\"\n2 7 \"inside\"\n$EndPhysicalNames\n$Nodes\n4\n1 0 0 0\n2 1 0 0\n3 1 1 0\n4 0 1 0\n$EndNodes\n$Elements\n4\n1 1 2 5 1 1 2\n2 15 2 0 1 1\n3 2 2 7 1 1 2 3\n4 2 2 7 1 1 3 4\n$EndElements\n";

#[test]
fn msh_2_2_ascii() {
    let m = gmsh::read(SQUARE_22.as_bytes()).unwrap();
    assert_eq!(m.cell_type, CellType::Triangle);
    assert_eq!(m.cells, [0, 1, 2, 0, 2, 3]);
    assert_eq!(m.facets, [vec![0, 1]]);
    assert_eq!(m.group("inside").unwrap().members, [0, 1]);
    assert_eq!(m.group("wall").unwrap().members, [0]);
    check_topology(&m);
}

#[test]
fn malformed_files_say_what_and_where() {
    let e = |bytes: &[u8]| gmsh::read(bytes).unwrap_err().to_string();
    let text = gmsh::write41(&disk(4));
    let cut = e(&text.as_bytes()[..text.len() * 3 / 5]);
    assert!(cut.starts_with("line "), "{cut}");
    let second_order = SQUARE_22.replace("3 2 2 7 1 1 2 3", "3 9 2 7 1 1 2 3 1 2 3");
    let so = e(second_order.as_bytes());
    assert!(
        so.contains("element type 9 (6-node second-order triangle) is not supported"),
        "{so}"
    );
    let no_nodes = SQUARE_22
        .replace("$Nodes", "$Nodez")
        .replace("$EndNodes", "$EndNodez");
    assert!(e(no_nodes.as_bytes()).contains("no $Nodes section"));
    assert!(e(b"hello").contains("not a Gmsh .msh file"));
    let v3 = SQUARE_22.replace("2.2 0 8", "3.0 0 8");
    assert!(e(v3.as_bytes()).contains("version 3.0 0 8 is not supported"));
    let missing = SQUARE_22.replace("1 1 3 4", "1 1 3 9");
    assert!(e(missing.as_bytes()).contains("node 9, which $Nodes does not define"));
    let mixed = SQUARE_22.replace("4 2 2 7 1 1 3 4", "4 3 2 7 1 1 2 3 4");
    assert!(e(mixed.as_bytes()).contains("mixes triangle and quadrilateral cells"));
}

#[test]
fn a_non_manifold_mesh_is_refused() {
    // Three triangles on one edge (0, 1).
    let e = Topology::new(CellType::Triangle, &[0, 1, 2, 1, 0, 3, 0, 1, 4]).unwrap_err();
    assert!(e.to_string().contains("not a manifold"), "{e}");
}

/// Issue 25: a cell list that is not whole cells panicked; a cell with a vertex twice is refused.
#[test]
fn topology_refuses_what_is_not_a_cell_list() {
    let e = Topology::new(CellType::Triangle, &[0, 1, 2, 3]).unwrap_err();
    assert!(
        e.message
            .contains("4 cell vertices are not whole triangles"),
        "{e}"
    );
    let e = Topology::new(CellType::Tetrahedron, &[0, 1, 2, 1]).unwrap_err();
    assert!(
        e.message
            .contains("cell 0 (tetrahedron [0, 1, 2, 1]) has vertex 1 twice"),
        "{e}"
    );
}

/// Facets by brute force: every pair of cells sharing a facet's worth of vertices, and every
/// cell face no other cell shares.
fn brute_force(cells: &[[u32; 3]]) -> BTreeMap<Vec<u32>, Vec<u32>> {
    let mut out: BTreeMap<Vec<u32>, Vec<u32>> = BTreeMap::new();
    for (c, cell) in cells.iter().enumerate() {
        for k in 0..3 {
            let mut e = vec![cell[k], cell[(k + 1) % 3]];
            e.sort();
            let sharing: Vec<u32> = cells
                .iter()
                .enumerate()
                .filter(|(_, o)| o.contains(&e[0]) && o.contains(&e[1]))
                .map(|(d, _)| d as u32)
                .collect();
            assert!(sharing.contains(&(c as u32)));
            out.insert(e, sharing);
        }
    }
    out
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(40))]
    #[test]
    fn topology_matches_brute_force(n in 1usize..7, seed in any::<u64>(), keep in 0.3f64..1.0) {
        // A square's triangles, vertices renumbered at random, a random part of the cells kept.
        let sq = unit_square(n);
        let mut rng = parloop::util::Rng::new(seed);
        let mut perm: Vec<u32> = (0..sq.nvertices() as u32).collect();
        for i in (1..perm.len()).rev() {
            perm.swap(i, rng.below(i + 1));
        }
        let cells: Vec<[u32; 3]> = sq
            .cells
            .chunks_exact(3)
            .filter(|_| rng.unit() < keep)
            .map(|c| [c[0], c[1], c[2]].map(|v| perm[v as usize]))
            .collect();
        prop_assume!(!cells.is_empty());
        let flat: Vec<u32> = cells.iter().flatten().copied().collect();
        let t = Topology::new(CellType::Triangle, &flat).unwrap();
        let mut got: BTreeMap<Vec<u32>, Vec<u32>> = BTreeMap::new();
        for f in 0..t.nfacets() {
            let mut k = t.facet(f).to_vec();
            k.sort();
            let mut cs: Vec<u32> = t.facet_cells[f].iter().copied().filter(|&c| c != u32::MAX).collect();
            cs.sort();
            prop_assert!(got.insert(k, cs).is_none(), "a facet twice");
        }
        prop_assert_eq!(got, brute_force(&cells));
    }
}

#[test]
fn the_mesh_as_parloop_data() {
    let ctx = parloop::Context::new().unwrap();
    for (_, m) in committed() {
        let d = MeshData::new(&ctx, &m).unwrap();
        let t = d.topology.as_ref().unwrap();
        assert_eq!(d.cells.size(), m.ncells());
        assert_eq!(d.facets.size() + d.boundary.size(), t.nfacets());
        assert_eq!(d.boundary.size(), t.boundary().len());
        // The boundary groups cover the boundary, once.
        let covered: usize = m
            .groups
            .iter()
            .filter(|g| g.dim + 1 == m.dim())
            .map(|g| d.group(&g.name).unwrap().len())
            .sum();
        assert_eq!(covered, d.boundary.size());
        assert_eq!(d.coords.dim(), m.dim());
    }
}

/// The wave on the committed disk (a Gmsh file) equals the plain-Rust f64 reference on the
/// same mesh within 1e-5 after 200 steps.
#[test]
fn the_wave_on_a_gmsh_disk_matches_the_reference() {
    use parloop::apps::wave::{Wave, reference};
    let mesh = gmsh::read_file(data_path("disk")).unwrap();
    let (steps, dt) = (200, 0.001);
    let mut r = reference::State::new(&mesh).unwrap();
    for _ in 0..steps {
        r.step(dt);
    }
    let ctx = parloop::Context::new().unwrap();
    let mut w = Wave::on_mesh(&ctx, mesh, dt as f32).unwrap();
    for _ in 0..steps {
        w.step().unwrap();
    }
    let p = w.p.data_ro().unwrap().to_vec();
    let scale = r.p.iter().fold(0.0f64, |m, v| m.max(v.abs()));
    let diff = p
        .iter()
        .zip(&r.p)
        .fold(0.0f64, |m, (g, c)| m.max((*g as f64 - c).abs()));
    assert!(
        diff <= 1e-5 * scale,
        "p differs by {:e} (scale {scale})",
        diff / scale
    );
    // A mesh of quadrilaterals is refused with its cell type named (tetrahedra run in 3-D:
    // tests/it/wave3.rs).
    let lshape = gmsh::read_file(data_path("lshape")).unwrap();
    let refused = Wave::on_mesh(&ctx, lshape.clone(), dt as f32)
        .err()
        .unwrap()
        .to_string();
    assert!(refused.contains("quadrilateral cells"), "{refused}");
    assert!(reference::State::new(&lshape).is_err());
}

/// Renumbering (and shuffling) permutes vertices and cells and changes no result: the same
/// cells by coordinates, the same groups, and the wave gives the same p at each vertex to
/// round-off.
#[test]
fn renumbering_is_a_permutation_and_changes_no_result() {
    use parloop::apps::wave::Wave;
    let m = disk(12);
    let cells_by_coords = |m: &Mesh| {
        let mut v: Vec<Vec<[u64; 3]>> = (0..m.ncells())
            .map(|c| {
                let mut x: Vec<[u64; 3]> = m
                    .cell(c)
                    .iter()
                    .map(|&v| m.coords[v as usize].map(f64::to_bits))
                    .collect();
                x.sort();
                x
            })
            .collect();
        v.sort();
        v
    };
    let ctx = parloop::Context::new().unwrap();
    let run = |m: &Mesh| {
        let mut w = Wave::on_mesh(&ctx, m.clone(), 0.001).unwrap();
        for _ in 0..100 {
            w.step().unwrap();
        }
        w.p.data_ro().unwrap().to_vec()
    };
    let base = run(&m);
    for (what, (r, order)) in [("renumbered", m.renumbered()), ("shuffled", m.shuffled(7))] {
        let mut seen = order.clone();
        seen.sort_unstable();
        assert_eq!(
            seen,
            (0..m.nvertices() as u32).collect::<Vec<_>>(),
            "{what}"
        );
        assert_eq!(cells_by_coords(&r), cells_by_coords(&m), "{what}");
        for (g, h) in r.groups.iter().zip(&m.groups) {
            assert_eq!(
                (&g.name, g.members.len()),
                (&h.name, h.members.len()),
                "{what}"
            );
        }
        let p = run(&r);
        let scale = base.iter().fold(0f32, |a, v| a.max(v.abs()));
        for (k, &v) in order.iter().enumerate() {
            assert!(
                (p[k] - base[v as usize]).abs() <= 1e-5 * scale,
                "{what}: vertex {v}"
            );
        }
    }
    // The renumbered disk's cells read their vertices closer together than the shuffled one's.
    let spread = |m: &Mesh| -> f64 {
        (0..m.ncells())
            .map(|c| {
                let vs = m.cell(c);
                (*vs.iter().max().unwrap() - *vs.iter().min().unwrap()) as f64
            })
            .sum::<f64>()
            / m.ncells() as f64
    };
    assert!(spread(&m.renumbered().0) < spread(&m.shuffled(7).0) / 4.0);
}

/// MSH 4.1 binary (little endian, 8-byte size_t), laid out as the format specifies: two
/// triangles of a unit square on one surface in physical group "square".
#[test]
fn msh_4_1_binary() {
    let q = |v: &[u64]| v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>();
    let i = |v: &[i32]| v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>();
    let d = |v: &[f64]| v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>();
    let mut b: Vec<u8> = b"$MeshFormat\n4.1 1 8\n".to_vec();
    b.extend(i(&[1]));
    b.extend(
        b"\n$EndMeshFormat\n$PhysicalNames\n1\n2 7 \"square\"\n$EndPhysicalNames\n$Entities\n",
    );
    // No points or curves, one surface (tag 1, bounding box, physical tag 7, no boundary).
    b.extend(q(&[0, 0, 1, 0]));
    b.extend(i(&[1]));
    b.extend(d(&[0.0, 0.0, 0.0, 1.0, 1.0, 0.0]));
    b.extend(q(&[1]));
    b.extend(i(&[7]));
    b.extend(q(&[0]));
    b.extend(b"\n$EndEntities\n$Nodes\n");
    b.extend(q(&[1, 4, 1, 4]));
    b.extend(i(&[2, 1, 0]));
    b.extend(q(&[4, 1, 2, 3, 4]));
    b.extend(d(&[
        0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 1.0, 1.0, 0.0, 0.0, 1.0, 0.0,
    ]));
    b.extend(b"\n$EndNodes\n$Elements\n");
    b.extend(q(&[1, 2, 1, 2]));
    b.extend(i(&[2, 1, 2]));
    b.extend(q(&[2, 1, 1, 2, 3, 2, 1, 3, 4]));
    b.extend(b"\n$EndElements\n");
    let m = gmsh::read(&b).unwrap();
    assert_eq!(m.cell_type, CellType::Triangle);
    assert_eq!(m.coords[2], [1.0, 1.0, 0.0]);
    assert_eq!(m.cells, [0, 1, 2, 0, 2, 3]);
    assert_eq!(m.group("square").unwrap().members, [0, 1]);
    check_topology(&m);
    // Cut inside the binary node data: an error with a byte offset.
    let cut = gmsh::read(&b[..b.len() - 120]).unwrap_err().to_string();
    assert!(cut.contains("byte "), "{cut}");
}

/// A Gmsh file that cannot be read, or is not a mesh, is `Error::File` with its path (after
/// `?`), and the message names it.
#[test]
fn unreadable_gmsh_files_are_file_errors_naming_the_path() {
    let dir = std::env::temp_dir().join(format!("parloop-gmsh-file-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let missing = dir.join("missing.msh");
    let garbage = dir.join("garbage.msh");
    std::fs::write(&garbage, "not a mesh\n").unwrap();
    for path in [&missing, &garbage] {
        let e = parloop::Error::from(gmsh::read_file(path).err().unwrap());
        let parloop::Error::File { path: p, message } = &e else {
            panic!("{e:?}")
        };
        assert_eq!(p, path);
        assert!(message.contains(&path.display().to_string()), "{message}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
