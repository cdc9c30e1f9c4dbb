//! parloop's HDF5 mesh file (feature `hdf5`): written by every rank at once (each its blocks),
//! read by every rank at once on another number of ranks, or by one process without MPI, and
//! distributed: the parts equal those of the global arrays' `Distribution` on the same
//! partition. A missing, foreign or truncated file is an error on every rank.
//!
//! `cargo test --features hdf5,ptscotch --test mpi_h5` (needs Open MPI's `mpirun`).

#[path = "common/mpirun.rs"]
mod mpirun;

#[path = "common/decl.rs"]
mod decl;

use decl::{Decl, airfoil, block_mesh, global, same_part, triangles};
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
    if ctx.rank() == 0 {
        std::fs::write(out, bytemuck::cast_slice(&[1.0f32])).unwrap();
    }
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
    if ctx.rank() == 0 {
        std::fs::write(out, bytemuck::cast_slice(&[1.0f32])).unwrap();
    }
}

#[test]
fn a_file_written_on_some_ranks_is_read_on_others_and_on_one_process() {
    for (name, write_np, read_np) in [("airfoil", 2, 3), ("triangles", 3, 2)] {
        let path = scratch(&format!("{name}-{write_np}.h5"));
        let file = path.to_str().unwrap();
        let env = [("MESH", name), ("FILE", file)];
        assert_eq!(
            mpirun::mpirun_env(write_np, "write_worker", &env),
            vec![1.0]
        );
        assert_eq!(mpirun::mpirun_env(read_np, "read_worker", &env), vec![1.0]);
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
    if ctx.rank() == 0 {
        std::fs::write(out, bytemuck::cast_slice(&[1.0f32])).unwrap();
    }
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
        assert_eq!(mpirun::mpirun_env(2, "bad_file_worker", &env), vec![1.0]);
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
    let ck = scratch(&format!("{app}-checkpoint.h5"));
    let (g, c) = (grid.to_str().unwrap(), ck.to_str().unwrap());
    let twice = (2 * ITERATIONS).to_string();
    let once = ITERATIONS.to_string();
    let run = |np, env: &[(&str, &str)]| {
        let mut env = env.to_vec();
        env.push(("APP", app));
        mpirun::mpirun_env(np, "app_worker", &env)
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
