//! One program on 1, 2 and 3 ranks: `MeshData::new` on a mesh with physical groups (the unit
//! disk: cells "disk", boundary facets "upper" and "lower") distributes it under mpirun, and
//! the same loops give the one-process results: the disk's area and each group's length
//! (reductions over sets and groups), the vertices' degrees (increments through a map, a
//! gathered vertex field), in f32 and from f64 coordinates. And a mesh file made by `parloop
//! convert` from OP2's grid runs Airfoil as the grid itself does.
//!
//! `cargo test --features mpi --test it -- mpi::mesh::` (needs Open MPI's `mpirun`).

use crate::common::mpirun;
#[allow(dead_code)]
use crate::gmsh_meshes;

use parloop::dist::Comm;
use parloop::mesh::topology::MeshData;
use parloop::{Config, Context, Kernel};

/// The program, the same whatever the number of ranks: the measures' sums over the cells and
/// over each boundary group (f32 and f64 geometry), and each vertex's number of cells.
/// The mesh is made by `MeshData::new`, or read from `file` (the same mesh in blocks).
fn program(ctx: &Context, file: Option<&std::path::Path>) -> Vec<f64> {
    let mesh = gmsh_meshes::disk(10);
    let md = match file {
        #[cfg(feature = "hdf5")]
        Some(path) => MeshData::read(ctx, path).unwrap(),
        #[cfg(not(feature = "hdf5"))]
        Some(_) => unreachable!("files need the hdf5 feature"),
        None => MeshData::new(ctx, &mesh).unwrap(),
    };
    if ctx.ranks() > 1 {
        // Distributed: each rank owns a part of the cells, numbered globally.
        assert!(md.cells.global_ids().is_some(), "cells not distributed");
        assert!(md.cells.size() < mesh.ncells(), "a rank owns every cell");
    }
    let sum = Kernel::new(
        "sum",
        "fn sum(m: ptr<function, array<f32, 1>>, s: ptr<function, array<f32, 1>>) {
            (*s)[0] += (*m)[0];
        }",
    );
    let sum64 = Kernel::new(
        "sum64",
        "fn sum64(m: ptr<function, array<f64, 1>>, s: ptr<function, array<f64, 1>>) {
            (*s)[0] += (*m)[0];
        }",
    );
    let g = md.geometry(ctx, &md.coords).unwrap();
    let mut out = Vec::new();
    let total = |space: parloop::IterSpace, m: &parloop::Dat<f32>| -> f64 {
        let s = ctx.global("s", &[0.0f32]).unwrap();
        ctx.par_loop(&sum, space, &[m.read(), s.inc()]).unwrap();
        s.value().unwrap()[0] as f64
    };
    out.push(total((&md.cells).into(), &g.cells.measure));
    out.push(total(md.group("disk").unwrap().into(), &g.cells.measure));
    for name in ["upper", "lower"] {
        out.push(total(md.group(name).unwrap().into(), &g.boundary.measure));
    }
    if ctx.gpu().f64() {
        let g64 = md
            .geometry(ctx, &md.coords_as::<f64>(ctx).unwrap())
            .unwrap();
        for (space, m) in [
            (parloop::IterSpace::from(&md.cells), &g64.cells.measure),
            (md.group("upper").unwrap().into(), &g64.boundary.measure),
        ] {
            let s = ctx.global("s64", &[0.0f64]).unwrap();
            ctx.par_loop(&sum64, space, &[m.read(), s.inc()]).unwrap();
            out.push(s.value().unwrap()[0]);
        }
    }
    let degree = ctx.dat_zeros::<f32>("degree", &md.vertices, 1).unwrap();
    let count = Kernel::new(
        "count",
        "fn count(d: ptr<function, array<f32, 3>>) {
            (*d)[0] += 1.0; (*d)[1] += 1.0; (*d)[2] += 1.0;
        }",
    );
    ctx.par_loop(&count, &md.cells, &[degree.all(&md.cell_vertices).inc()])
        .unwrap();
    out.extend(
        degree
            .gather()
            .unwrap()
            .unwrap_or_default()
            .iter()
            .map(|&v| v as f64),
    );
    out
}

#[test]
#[ignore = "run by the other tests under mpirun"]
fn mesh_worker() {
    let Some(out) = mpirun::out_path() else {
        return;
    };
    let comm = Comm::world().unwrap();
    let ctx = Context::with_comm(Config::from_env().unwrap(), &comm).unwrap();
    let file = std::env::var_os("FILE").map(std::path::PathBuf::from);
    let got = program(&ctx, file.as_deref());
    if ctx.rank() == 0 {
        std::fs::write(out, bytemuck::cast_slice(&got)).unwrap();
    }
}

#[test]
fn mesh_data_runs_the_same_program_on_1_2_and_3_ranks() {
    let ctx = Context::new().unwrap();
    let one = program(&ctx, None);
    // The disk's area (a polygon inside the circle) and its halves' lengths.
    assert!((one[0] - std::f64::consts::PI).abs() < 0.05, "{one:?}");
    assert!((one[2] - std::f64::consts::PI).abs() < 0.05, "{one:?}");
    assert_eq!(one[0], one[1], "the group `disk` is every cell");
    for np in [2, 3] {
        let got = mpirun::mpirun_f64(np, &worker!("mesh_worker"), &[]);
        assert_eq!(got.len(), one.len(), "{np} ranks");
        for (k, (a, b)) in one.iter().zip(&got).enumerate() {
            assert!(
                (a - b).abs() <= 1e-5 * a.abs().max(1.0),
                "{np} ranks, value {k}: {b} against one process's {a}"
            );
        }
    }
}

/// The same mesh written in MeshData's layout (`MeshData::blocks`, what `parloop convert`
/// writes) and read back in blocks by `MeshData::read`, on one process and on 2 and 3 ranks
/// (PT-Scotch): the program gives what `MeshData::new` gives on one process. A file without
/// MeshData's sets is refused, naming what is missing.
#[cfg(feature = "hdf5")]
#[test]
fn mesh_data_read_from_a_file_in_blocks_runs_the_same_program() {
    let ctx = Context::new().unwrap();
    let one = program(&ctx, None);
    let path = std::env::temp_dir().join(format!("parloop-disk-{}.h5", std::process::id()));
    let (blocks, said) = MeshData::blocks(&ctx, &gmsh_meshes::disk(10), false).unwrap();
    assert!(
        said.iter().any(|l| l.starts_with("upper: ")
            && l.ends_with(" of boundary facets (`upper (boundary facets)`), map upper_vertices")),
        "{said:?}"
    );
    parloop::h5::write(&path, &blocks).unwrap();
    let file = path.to_str().unwrap();
    let read = program(&ctx, Some(&path));
    let mut runs = vec![(1, read)];
    for np in [2, 3] {
        runs.push((
            np,
            mpirun::mpirun_f64(np, &worker!("mesh_worker"), &[("FILE", file)]),
        ));
    }
    for (np, got) in runs {
        assert_eq!(got.len(), one.len(), "{np} ranks");
        for (k, (a, b)) in one.iter().zip(&got).enumerate() {
            assert!(
                (a - b).abs() <= 1e-5 * a.abs().max(1.0),
                "read on {np} ranks, value {k}: {b} against MeshData::new's {a}"
            );
        }
    }
    // A file in the wave's layout (no facets) is not a MeshData file.
    let wave = parloop::apps::wave::Wave::block_mesh(&ctx, gmsh_meshes::disk(4)).unwrap();
    parloop::h5::write(&path, &wave).unwrap();
    let e = MeshData::read(&ctx, &path)
        .err()
        .expect("refused")
        .to_string();
    assert!(
        e.contains("no set `facets`") && e.contains("parloop convert"),
        "{e}"
    );
    let _ = std::fs::remove_file(&path);
}

/// Files that are not in MeshData's layout, made by hand: one triangle, its three boundary
/// facets, and a group of them; each defect is an error naming it.
#[cfg(feature = "hdf5")]
#[test]
fn mesh_data_read_refuses_what_is_not_its_layout() {
    use parloop::dist::BlockMesh;
    let ctx = Context::new().unwrap();
    let path = std::env::temp_dir().join(format!("parloop-bad-{}.h5", std::process::id()));
    // `cells`: the triangle's vertex order; `group`: (its map's arity, its values).
    let file = |cells: [u32; 3], group: (usize, Vec<u32>)| {
        let mut b = BlockMesh::new(&ctx);
        let [c, f, bf, v] = ["cells", "facets", "boundary facets", "vertices"].map(|n| {
            let size = match n {
                "cells" => 1,
                "facets" => 0,
                _ => 3,
            };
            b.set(n, size)
        });
        b.map("cell_vertices", c, v, 3, cells.to_vec()).unwrap();
        b.map("facet_cells", f, c, 2, vec![]).unwrap();
        b.map("facet_vertices", f, v, 2, vec![]).unwrap();
        b.map("boundary_cell", bf, c, 1, vec![0, 0, 0]).unwrap();
        b.map("boundary_vertices", bf, v, 2, vec![0, 1, 1, 2, 2, 0])
            .unwrap();
        b.dat("coords", v, 2, &[0.0f64, 0.0, 1.0, 0.0, 0.0, 1.0])
            .unwrap();
        let g = b.set("wall (boundary facets)", group.1.len() / group.0);
        b.map("wall (boundary facets)", g, bf, group.0, group.1)
            .unwrap();
        parloop::h5::write(&path, &b).unwrap();
        MeshData::read(&ctx, &path).map(|md| md.group("wall").unwrap().len())
    };
    assert_eq!(file([0, 1, 2], (1, vec![0, 2])).unwrap(), 2);
    let e = file([0, 2, 1], (1, vec![0]))
        .err()
        .expect("refused")
        .to_string();
    assert!(e.contains("cell 0 is turned the wrong way"), "{e}");
    let e = file([0, 1, 2], (2, vec![0, 1]))
        .err()
        .expect("refused")
        .to_string();
    assert!(
        e.contains("group map `wall (boundary facets)`") && e.contains("with arity 2"),
        "{e}"
    );
    let _ = std::fs::remove_file(&path);
}

/// `parloop convert` of OP2's grid (new_grid.dat): Airfoil read from the file runs as Airfoil
/// on the grid itself, bit for bit (one process: the same numbering, the same f32 values).
#[cfg(feature = "hdf5")]
#[test]
fn parloop_convert_writes_op2_s_grid_airfoil_runs_on() {
    use parloop::apps::airfoil::Airfoil;
    let m = parloop::mesh::airfoil::naca0012(24, 12);
    let dat = std::env::temp_dir().join(format!("parloop-mesh-grid-{}.dat", std::process::id()));
    std::fs::write(&dat, m.to_grid_dat()).unwrap();
    let m = parloop::mesh::airfoil::AirfoilMesh::from_grid_dat(&m.to_grid_dat()).unwrap();
    let h5 = dat.with_extension("h5");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_parloop"))
        .args([
            "convert",
            dat.to_str().unwrap(),
            h5.to_str().unwrap(),
            "--f32",
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let ctx = Context::new().unwrap();
    let file = parloop::h5::MeshFile::read(&ctx, &h5).unwrap();
    let cells = file.mesh.find_set("cells").unwrap();
    let mut part = file
        .mesh
        .distribute(cells, parloop::dist::Partitioner::Block)
        .unwrap();
    let a = Airfoil::<f32>::from_part(&ctx, &mut part).unwrap();
    let b = Airfoil::new(&ctx, &m).unwrap();
    for _ in 0..5 {
        a.iteration(None).unwrap();
        b.iteration(None).unwrap();
    }
    assert_eq!(&*a.q.data_ro().unwrap(), &*b.q.data_ro().unwrap());
    std::fs::remove_file(&dat).ok();
    std::fs::remove_file(&h5).ok();
}

/// The cost of `MeshData::new` on N ranks: wall time and peak memory per rank for the unit
/// square of `MESH_N` squares per side (2 MESH_N^2 triangles; 707 gives 10^6), printed by
/// each rank (BENCHMARKS.md). `MESH_N=707 mpirun -np 4 <mpi_mesh test binary> --exact
/// mesh_cost --ignored --nocapture`; with `MESH_FILE=square.h5`, `MeshData::read` of that
/// file, which `MESH_WRITE=1 MESH_FILE=square.h5` (one process) writes first.
#[test]
#[ignore = "a measurement: run by hand under mpirun"]
fn mesh_cost() {
    let comm = Comm::world().unwrap();
    let ctx = Context::with_comm(Config::from_env().unwrap(), &comm).unwrap();
    let n: usize = std::env::var("MESH_N").map_or(707, |v| v.parse().unwrap());
    let file = std::env::var_os("MESH_FILE").map(std::path::PathBuf::from);
    let (how, mesh) = match &file {
        // MESH_WRITE=1: write the file (no measurement); else read it in blocks.
        #[cfg(feature = "hdf5")]
        Some(path) if std::env::var_os("MESH_WRITE").is_some() => {
            let square = parloop::mesh::unit_square(n);
            let (blocks, _) = MeshData::blocks(&ctx, &square, false).unwrap();
            parloop::h5::write(path, &blocks).unwrap();
            return;
        }
        Some(_) => ("MeshData::read", None),
        None => ("MeshData::new", Some(parloop::mesh::unit_square(n))),
    };
    let t = std::time::Instant::now();
    let md = match (&mesh, &file) {
        (Some(m), _) => MeshData::new(&ctx, m).unwrap(),
        #[cfg(feature = "hdf5")]
        (None, Some(path)) => MeshData::read(&ctx, path).unwrap(),
        _ => unreachable!("MESH_FILE needs the hdf5 feature"),
    };
    let ms = t.elapsed().as_secs_f64() * 1e3;
    let peak = std::fs::read_to_string("/proc/self/status")
        .unwrap()
        .lines()
        .find(|l| l.starts_with("VmHWM"))
        .map(|l| l.split_whitespace().nth(1).unwrap().parse::<f64>().unwrap() / 1024.0)
        .unwrap();
    println!(
        "rank {} of {}: {} cells in all, {} owned here; {how} {ms:.0} ms; peak memory \
         {peak:.0} MB",
        ctx.rank(),
        ctx.ranks(),
        md.cells.global_size(),
        md.cells.size()
    );
}
