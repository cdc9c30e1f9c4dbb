//! parloop's HDF5 mesh file (feature `hdf5`): written by every rank at once (each its blocks),
//! read by every rank at once on another number of ranks, or by one process without MPI, and
//! distributed: the parts equal those of the global arrays' `Distribution` on the same
//! partition. A missing, foreign or truncated file is an error on every rank.
//!
//! `cargo test --features hdf5,ptscotch --test it -- mpi::h5::` (needs Open MPI's `mpirun`).

use crate::common::decl::{self, Decl, airfoil, block_mesh, global, same_part, triangles};
use crate::common::mpirun;
use parloop::dist::{Comm, Partitioner};
use parloop::h5::MeshFile;
use parloop::{Config, Context};
use std::path::PathBuf;

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("parloop-h5-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

fn world() -> Context {
    let comm = Comm::world().unwrap();
    Context::with_comm(Config::from_env().unwrap(), &comm).unwrap()
}

fn partitioner() -> Partitioner {
    if cfg!(feature = "ptscotch") {
        Partitioner::Scotch
    } else {
        Partitioner::Block
    }
}

fn mesh(name: &str) -> Decl {
    match name {
        "airfoil" => airfoil(12, 6),
        _ => triangles(9),
    }
}

/// Reads `path` and checks its part against the global arrays of `d` on this context.
fn read_and_compare(ctx: &Context, path: &std::path::Path, d: &Decl, what: &str) {
    let file = MeshFile::read(ctx, path).unwrap();
    assert_eq!(file.step(), None);
    let primary = file.mesh.find_set(d.sets[d.primary].0).unwrap();
    let from_file = file.mesh.distribute(primary, partitioner()).unwrap();
    let reference = global(ctx, d, partitioner());
    same_part(what, d, reference, from_file);
}

#[test]
#[ignore = "run by the other tests under mpirun"]
fn write_worker() {
    let Some(out) = mpirun::out_path() else {
        return;
    };
    let ctx = world();
    let name = std::env::var("MESH").unwrap();
    let path = PathBuf::from(std::env::var("FILE").unwrap());
    parloop::h5::write(&path, &block_mesh(&ctx, &mesh(&name))).unwrap();
    mpirun::report_done(ctx.rank(), &out);
}

#[test]
#[ignore = "run by the other tests under mpirun"]
fn read_worker() {
    let Some(out) = mpirun::out_path() else {
        return;
    };
    let ctx = world();
    let name = std::env::var("MESH").unwrap();
    let path = PathBuf::from(std::env::var("FILE").unwrap());
    let what = format!("{name} read on rank {} of {}", ctx.rank(), ctx.ranks());
    read_and_compare(&ctx, &path, &mesh(&name), &what);
    mpirun::report_done(ctx.rank(), &out);
}

#[test]
fn a_file_written_on_some_ranks_is_read_on_others_and_on_one_process() {
    for (name, write_np, read_np) in [("airfoil", 2, 3), ("triangles", 3, 2)] {
        let path = scratch(&format!("{name}-{write_np}.h5"));
        let file = path.to_str().unwrap();
        let env = [("MESH", name), ("FILE", file)];
        assert_eq!(
            mpirun::mpirun_env(write_np, &worker!("write_worker"), &env),
            vec![1.0]
        );
        assert_eq!(
            mpirun::mpirun_env(read_np, &worker!("read_worker"), &env),
            vec![1.0]
        );
        // One process, no MPI: the part is the whole mesh.
        let ctx = Context::new().unwrap();
        read_and_compare(&ctx, &path, &mesh(name), &format!("{name} on one process"));
    }
}

#[test]
#[ignore = "run by the other tests under mpirun"]
fn bad_file_worker() {
    let Some(out) = mpirun::out_path() else {
        return;
    };
    let ctx = world();
    let path = PathBuf::from(std::env::var("FILE").unwrap());
    let expect = std::env::var("EXPECT").unwrap();
    let err = MeshFile::read(&ctx, &path)
        .err()
        .expect("an error on every rank");
    let text = err.to_string();
    assert!(text.contains(&expect), "rank {}: {text}", ctx.rank());
    mpirun::report_done(ctx.rank(), &out);
}

#[test]
fn a_missing_foreign_or_truncated_file_is_an_error_on_every_rank() {
    let missing = scratch("missing.h5");
    let foreign = scratch("foreign.h5");
    std::fs::write(&foreign, "not an HDF5 file\n").unwrap();
    // A valid file cut in half.
    let whole = scratch("whole.h5");
    let ctx = Context::new().unwrap();
    parloop::h5::write(&whole, &block_mesh(&ctx, &airfoil(12, 6))).unwrap();
    let bytes = std::fs::read(&whole).unwrap();
    let truncated = scratch("truncated.h5");
    std::fs::write(&truncated, &bytes[..bytes.len() / 2]).unwrap();
    for (path, expect) in [
        (&missing, "no such file"),
        (&foreign, "opening the file"),
        (&truncated, "truncated.h5"),
    ] {
        let env = [("FILE", path.to_str().unwrap()), ("EXPECT", expect)];
        assert_eq!(
            mpirun::mpirun_env(2, &worker!("bad_file_worker"), &env),
            vec![1.0]
        );
        let err = MeshFile::read(&ctx, path).err().expect("an error");
        assert!(err.to_string().contains(expect), "{err}");
    }
}

const ITERATIONS: u64 = 10;

/// Runs Airfoil from `file` for `iterations` and returns its q on rank 0 (global order).
fn airfoil_run(ctx: &Context, file: &std::path::Path, iterations: u64) -> Option<Vec<f32>> {
    use parloop::apps::airfoil::Airfoil;
    let f = MeshFile::read(ctx, file).unwrap();
    let cells = f.mesh.find_set("cells").unwrap();
    let mut part = f.mesh.distribute(cells, partitioner()).unwrap();
    let a = Airfoil::<f32>::from_part(ctx, &mut part).unwrap();
    for _ in 0..iterations {
        a.iteration(None).unwrap();
    }
    if let Some(ck) = std::env::var_os("CHECKPOINT") {
        a.checkpoint(iterations).unwrap().write(ck).unwrap();
    }
    a.q.gather().unwrap()
}

/// Runs the wave from `file` for `steps` and returns its p on rank 0 (global order).
fn wave_run(ctx: &Context, file: &std::path::Path, steps: u64) -> Option<Vec<f32>> {
    use parloop::apps::wave::Wave;
    let f = MeshFile::read(ctx, file).unwrap();
    let start = f.step().unwrap_or(0);
    let cells = f.mesh.find_set("cells").unwrap();
    let mut part = f.mesh.distribute(cells, partitioner()).unwrap();
    let mut w = Wave::from_part(ctx, &mut part, 0.001).unwrap();
    w.steps = start;
    for _ in 0..steps {
        w.step().unwrap();
    }
    if let Some(ck) = std::env::var_os("CHECKPOINT") {
        w.checkpoint().unwrap().write(ck).unwrap();
    }
    w.p.gather().unwrap()
}

#[test]
#[ignore = "run by the other tests under mpirun"]
fn app_worker() {
    let Some(out) = mpirun::out_path() else {
        return;
    };
    let ctx = world();
    let file = PathBuf::from(std::env::var("FILE").unwrap());
    let n: u64 = std::env::var("ITER").unwrap().parse().unwrap();
    let run = match std::env::var("APP").unwrap().as_str() {
        "wave" => wave_run,
        _ => airfoil_run,
    };
    // The grid has no step; the checkpoint its iteration.
    let step = MeshFile::read(&ctx, &file).unwrap().step();
    let checkpoint = file.to_str().unwrap().contains("checkpoint");
    assert_eq!(step, checkpoint.then_some(ITERATIONS));
    if let Some(q) = run(&ctx, &file, n) {
        std::fs::write(out, bytemuck::cast_slice(&q)).unwrap();
    }
}

/// Straight through for 2 x ITERATIONS on 2 ranks; then ITERATIONS, a checkpoint, and
/// ITERATIONS more from it on the same 2 ranks (bit for bit), on 3 ranks and on one process
/// (to round-off: other parts add in another order).
fn restart(app: &str, grid: &std::path::Path, cells: usize, dim: usize) {
    // Named after the grid: tests of one app run at once.
    let stem = grid.file_stem().unwrap().to_str().unwrap();
    let ck = scratch(&format!("{stem}-checkpoint.h5"));
    let (g, c) = (grid.to_str().unwrap(), ck.to_str().unwrap());
    let twice = (2 * ITERATIONS).to_string();
    let once = ITERATIONS.to_string();
    let run = |np, env: &[(&str, &str)]| {
        let mut env = env.to_vec();
        env.push(("APP", app));
        mpirun::mpirun_env(np, &worker!("app_worker"), &env)
    };
    let full = run(2, &[("FILE", g), ("ITER", &twice)]);
    let _ = run(2, &[("FILE", g), ("ITER", &once), ("CHECKPOINT", c)]);
    let restarted = run(2, &[("FILE", c), ("ITER", &once)]);
    assert_eq!(full.len(), dim * cells);
    assert_eq!(
        full, restarted,
        "{app}: the same ranks continue bit for bit"
    );
    let three = run(3, &[("FILE", c), ("ITER", &once)]);
    let ctx = Context::new().unwrap();
    let one = match app {
        "wave" => wave_run(&ctx, &ck, ITERATIONS),
        _ => airfoil_run(&ctx, &ck, ITERATIONS),
    }
    .unwrap();
    for (what, q) in [("3 ranks", &three), ("one process", &one)] {
        let worst = full
            .iter()
            .zip(q.iter())
            .map(|(a, b)| ((a - b).abs() / a.abs().max(1.0)) as f64)
            .fold(0.0, f64::max);
        assert!(
            worst < 1e-5,
            "{app} on {what}: relative difference {worst:e}"
        );
        assert_ne!(
            &full, q,
            "{app} on {what}: a different partition adds in another order"
        );
    }
}

#[test]
fn airfoil_restarts_from_a_checkpoint_bit_for_bit_on_the_same_ranks_and_to_round_off_on_others() {
    let grid = scratch("airfoil-grid.h5");
    let ctx = Context::new().unwrap();
    let m = parloop::mesh::airfoil::naca0012(24, 12);
    let mesh = parloop::apps::airfoil::Airfoil::<f32>::block_mesh(&ctx, &m).unwrap();
    parloop::h5::write(&grid, &mesh).unwrap();
    restart("airfoil", &grid, m.cells.len(), 4);
}

#[test]
fn the_wave_restarts_from_a_checkpoint_bit_for_bit_on_the_same_ranks_and_to_round_off_on_others() {
    let grid = scratch("wave-grid.h5");
    let ctx = Context::new().unwrap();
    let mesh = parloop::mesh::unit_square(20);
    let nv = mesh.coords.len();
    let b = parloop::apps::wave::Wave::block_mesh(&ctx, mesh).unwrap();
    parloop::h5::write(&grid, &b).unwrap();
    restart("wave", &grid, nv, 1);
}

/// A mesh file whose coordinates are f64 (as `parloop convert` writes a Gmsh mesh by default)
/// and not representable in f32: the restart on the same ranks is bit for bit too.
#[test]
fn the_wave_on_f64_coordinates_restarts_bit_for_bit() {
    let grid = scratch("wave-grid-f64.h5");
    let ctx = Context::new().unwrap();
    let m = parloop::mesh::unit_square(16);
    let mut b = parloop::dist::BlockMesh::new(&ctx);
    let vertices = b.set("vertices", m.nvertices());
    let cells = b.set("cells", m.ncells());
    b.map("cell_vertices", cells, vertices, 3, m.cells.clone())
        .unwrap();
    let xy: Vec<f64> = m
        .coords
        .iter()
        .flat_map(|c| {
            [
                c[0] + 0.01 * (7.0 * c[1]).sin(),
                c[1] + 0.01 * (5.0 * c[0]).cos(),
            ]
        })
        .collect();
    b.dat("coords", vertices, 2, &xy).unwrap();
    parloop::h5::write(&grid, &b).unwrap();
    restart("wave", &grid, m.nvertices(), 1);
}

/// `parloop convert` of a Gmsh mesh: the wave read from the file (one process, so the part is
/// the whole mesh in its order) runs as the wave on the mesh itself; p differs only by the
/// initial values computed from f32 rather than f64 coordinates.
#[test]
fn parloop_convert_writes_a_gmsh_mesh_the_wave_runs_on() {
    use parloop::apps::wave::Wave;
    let msh = concat!(env!("CARGO_MANIFEST_DIR"), "/data/channel.msh");
    let h5 = scratch("channel.h5");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_parloop"))
        .args(["convert", msh, h5.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(said.contains("8339 triangles, 4318 vertices"), "{said}");
    let ctx = Context::new().unwrap();
    let file = MeshFile::read(&ctx, &h5).unwrap();
    let cells = file.mesh.find_set("cells").unwrap();
    let mut part = file.mesh.distribute(cells, Partitioner::Block).unwrap();
    let mut a = Wave::from_part(&ctx, &mut part, 0.001).unwrap();
    let mut b = Wave::on_mesh(&ctx, parloop::mesh::gmsh::read_file(msh).unwrap(), 0.001).unwrap();
    for _ in 0..20 {
        a.step().unwrap();
        b.step().unwrap();
    }
    // The physical groups: sets with a map to their parent; the inlet's vertices lie on x = 0.
    assert!(said.contains("inlet: "), "{said}");
    assert!(
        said.contains("fluid: 8339 of cells (`fluid (cells)`), map fluid_cells"),
        "{said}"
    );
    let inlet = part.map_named("inlet_vertices").unwrap();
    let x = a.coords.data_ro().unwrap().to_vec();
    assert!(!inlet.values().is_empty());
    assert!(inlet.values().iter().all(|&v| x[2 * v as usize] == 0.0));
    let (pa, pb) = (
        a.p.data_ro().unwrap().to_vec(),
        b.p.data_ro().unwrap().to_vec(),
    );
    assert_eq!(pa.len(), 4318);
    let worst = pa
        .iter()
        .zip(&pb)
        .map(|(x, y)| (x - y).abs())
        .fold(0.0, f32::max);
    assert!(worst < 1e-6, "p differs by {worst:e}");
    // A file that is not a mesh: an error naming it, exit status 2.
    let bad = std::process::Command::new(env!("CARGO_BIN_EXE_parloop"))
        .args(["convert", "/nonexistent.msh", h5.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(bad.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("/nonexistent.msh"));
}

/// Runs Python 3 with h5py (Debian's python3-h5py): the reader and writer independent of
/// parloop's. None where h5py is missing outside CI (in CI it is required).
fn h5py(script: &str) -> Option<String> {
    let out = std::process::Command::new("/usr/bin/python3")
        .args(["-c", script])
        .output();
    match out {
        Ok(o) if o.status.success() => Some(String::from_utf8_lossy(&o.stdout).into_owned()),
        other => {
            assert!(
                std::env::var_os("CI").is_none(),
                "h5py (python3-h5py) is needed in CI: {other:?}"
            );
            eprintln!("skipped h5py: {other:?}");
            None
        }
    }
}

#[test]
fn h5py_reads_the_layout_parloop_writes() {
    let path = scratch("layout.h5");
    let ctx = Context::new().unwrap();
    let m = parloop::mesh::airfoil::naca0012(12, 6);
    let mesh = parloop::apps::airfoil::Airfoil::<f64>::block_mesh(&ctx, &m).unwrap();
    parloop::h5::write(&path, &mesh).unwrap();
    let script = format!(
        "import h5py\nf = h5py.File({:?}, 'r')\n\
         print(f.attrs['format'], f.attrs['version'])\n\
         print(*[(k, int(f['sets'][k].attrs['size'])) for k in sorted(f['sets'])])\n\
         p = f['maps']['pecell']\n\
         print(p.shape, p.dtype, p.attrs['from'], p.attrs['to'], *p[5])\n\
         x = f['dats']['x']\n\
         print(x.shape, x.dtype, x.attrs['set'], repr(x[7, 0]), repr(x[7, 1]))\n",
        path.to_str().unwrap()
    );
    let Some(out) = h5py(&script) else { return };
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines[0], "parloop mesh 1");
    let (nn, nc, ne, nb) = m.counts();
    assert_eq!(
        lines[1],
        format!("('bedges', {nb}) ('cells', {nc}) ('edges', {ne}) ('nodes', {nn})")
    );
    let e = m.ecells[5];
    assert_eq!(
        lines[2],
        format!("({ne}, 2) uint32 edges cells {} {}", e[0], e[1])
    );
    assert_eq!(
        lines[3],
        format!("({nn}, 2) float64 nodes {:?} {:?}", m.x[7][0], m.x[7][1])
    );
}

#[test]
#[ignore = "run by the other tests under mpirun"]
fn checkpoint_of_plain_sets_worker() {
    let Some(out) = mpirun::out_path() else {
        return;
    };
    let ctx = world();
    let s = parloop::Set::new("s", 4 + ctx.rank());
    let d = ctx.dat_zeros::<f32>("d", &s, 1).unwrap();
    let mut c = parloop::h5::Checkpoint::new(&ctx);
    c.dat(&d).unwrap();
    let err = c
        .write(scratch("plain.h5"))
        .err()
        .expect("an error on every rank");
    assert!(
        err.to_string().contains("set `s` was not distributed"),
        "{err}"
    );
    mpirun::report_done(ctx.rank(), &out);
}

#[test]
fn bad_contents_and_names_are_errors_that_name_them() {
    // Files h5py writes: a map with a -1 "no target" marker, a map of floats, a negative and
    // a huge set size, a float set size, a string step, a NaN in a Dat; each an error on 2 ranks
    // and on one process.
    let cases = [
        (
            "negative.h5",
            "m[:] = [[0, 1], [1, -1]]",
            "i8",
            "value -1 at element 1, index 1",
        ),
        (
            "float.h5",
            "m[:] = [[0, 1], [1, 0]]",
            "f8",
            "does not hold integers",
        ),
        (
            "size.h5",
            "f['sets']['a'].attrs['size'] = -5",
            "u4",
            "has size -5",
        ),
        (
            "huge.h5",
            "f['sets']['a'].attrs['size'] = 2**40",
            "u4",
            "has size 1099511627776",
        ),
        // HDF5 would convert these without a word: 826.5 to 826, a string step to nothing.
        (
            "float-size.h5",
            "f['sets']['a'].attrs['size'] = 826.5",
            "u4",
            "set `a`: attribute `size` is stored as Float",
        ),
        (
            "string-step.h5",
            "f.attrs['step'] = 'ten'",
            "u4",
            "attribute `step` is stored as",
        ),
        (
            "nan.h5",
            "d = f.create_dataset('dats/u', data=np.array([[1.0, 2.0], [3.0, np.nan]]))\n\
             d.attrs['set'] = 'a'\nd.attrs['order'] = np.uint64(0)",
            "u4",
            "Dat `u` holds NaN at element 1 (component 1",
        ),
    ];
    let ctx = Context::new().unwrap();
    for (name, change, dtype, expect) in cases {
        let path = scratch(name);
        let script = format!(
            "import h5py, numpy as np\nf = h5py.File({:?}, 'w')\n\
             f.attrs['format'] = 'parloop mesh'\nf.attrs['version'] = np.uint64(1)\n\
             for i, n in enumerate(['a', 'b']):\n\
             \x20   g = f.create_group('sets/' + n)\n\
             \x20   g.attrs['size'] = np.uint64(2)\n\
             \x20   g.attrs['order'] = np.uint64(i)\n\
             m = f.create_dataset('maps/m', (2, 2), dtype='{dtype}')\n\
             m.attrs['from'] = 'a'\nm.attrs['to'] = 'b'\nm.attrs['order'] = np.uint64(0)\n\
             m[:] = [[0, 1], [1, 0]]\n{change}\nf.require_group('dats')\nf.close()\n",
            path.to_str().unwrap()
        );
        if h5py(&script).is_none() {
            return;
        }
        let err = MeshFile::read(&ctx, &path).err().expect("an error");
        assert!(err.to_string().contains(expect), "{name}: {err}");
        let env = [("FILE", path.to_str().unwrap()), ("EXPECT", expect)];
        assert_eq!(
            mpirun::mpirun_env(2, &worker!("bad_file_worker"), &env),
            vec![1.0]
        );
    }
    // Names HDF5 cannot hold are refused before anything is written: an existing file of
    // that name stays as it was, and no temporary file is left beside it.
    let path = scratch("names.h5");
    let mut good = parloop::dist::BlockMesh::new(&ctx);
    good.set("a", 3);
    parloop::h5::write(&path, &good).unwrap();
    let before = std::fs::read(&path).unwrap();
    let mut b = parloop::dist::BlockMesh::new(&ctx);
    b.set("a/b", 1);
    let err = parloop::h5::write(&path, &b).unwrap_err();
    assert!(
        err.to_string().contains("set `a/b` cannot be written"),
        "{err}"
    );
    assert_eq!(
        std::fs::read(&path).unwrap(),
        before,
        "the refused write changed the file"
    );
    let dir = path.parent().unwrap();
    let stray: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(".names.h5.tmp"))
        .collect();
    assert!(stray.is_empty(), "temporary files left: {stray:?}");
    // A write replaces the file whole: it reads back with the new contents.
    good.set("b", 2);
    parloop::h5::write(&path, &good).unwrap();
    assert_ne!(std::fs::read(&path).unwrap(), before);
    MeshFile::read(&ctx, &path).unwrap();
    // A checkpoint of sets that were not distributed, on 2 ranks.
    assert_eq!(
        mpirun::mpirun(2, &worker!("checkpoint_of_plain_sets_worker"), "block"),
        vec![1.0]
    );
}

#[test]
#[ignore = "run by the other tests under mpirun"]
fn globals_worker() {
    let Some(out) = mpirun::out_path() else {
        return;
    };
    let ctx = world();
    let path = PathBuf::from(std::env::var("FILE").unwrap());
    let d = triangles(6);
    let mut part = decl::blocks(&ctx, &d, Partitioner::Block);
    let c2v = part.map_named("c2v").unwrap();
    let coords = part.dat_named::<f32>("coords").unwrap();
    let t = ctx
        .global("time", &[0.25f64.to_bits() as f32, 1.5])
        .unwrap();
    let n = ctx.global("count", &[7u32, 8, 9]).unwrap();
    let mut c = parloop::h5::Checkpoint::new(&ctx);
    c.map(&c2v)
        .dat(&coords)
        .unwrap()
        .global(&t)
        .unwrap()
        .global(&n)
        .unwrap()
        .step(42);
    c.write(&path).unwrap();
    let f = MeshFile::read(&ctx, &path).unwrap();
    assert_eq!(f.step(), Some(42));
    assert_eq!(f.global::<f32>("time").unwrap(), t.value().unwrap());
    assert_eq!(f.global::<u32>("count").unwrap(), vec![7, 8, 9]);
    let err = f.global::<f32>("count").unwrap_err().to_string();
    assert!(err.contains("holds u32 values, not f32"), "{err}");
    assert!(f.global::<f32>("nothing").is_err());
    mpirun::report_done(ctx.rank(), &out);
}

#[test]
fn a_checkpoint_keeps_its_globals_and_step() {
    let path = scratch("globals.h5");
    let env = [("FILE", path.to_str().unwrap())];
    assert_eq!(
        mpirun::mpirun_env(2, &worker!("globals_worker"), &env),
        vec![1.0]
    );
}
