//! Parallel ParaView output with nothing gathered (`mesh::pvtu::PartSeries`): on 2 and 3 ranks
//! every rank writes its piece and rank 0 the `.pvtu` and `.pvd`. Read back by a reader
//! independent of the writer: the pieces cover every cell of the mesh once, every point's
//! vertex field (computed on the host from the coordinates, so a halo vertex's value can only
//! have come from its owner) is right, a cell field matches its cell, and the wave's p equals
//! the one-process run's. A resumed series keeps the first run's frames; runs killed while
//! they write frames or checkpoints leave the previous files whole.
//!
//! `cargo test --features mpi,hdf5 --test it -- mpi::pvtu::` (needs Open MPI's `mpirun`).

use crate::common::mpirun;
use crate::common::vtu;

use parloop::apps::wave::Wave;
use parloop::dist::{Comm, Partitioner};
use parloop::mesh::pvtu::{PartField, PartSeries};
use parloop::mesh::{CellType, unit_square};
use parloop::{Config, Context};
use std::path::PathBuf;

const N: usize = 12;
const STEPS: usize = 10;

fn vertex_value(x: f64, y: f64) -> f64 {
    x + 2.0 * y
}

#[test]
#[ignore = "run by the other tests under mpirun"]
fn write_worker() {
    let Some(out) = mpirun::out_path() else {
        return;
    };
    let comm = Comm::world().unwrap();
    let ctx = Context::with_comm(Config::from_env().unwrap(), &comm).unwrap();
    let dir = PathBuf::from(std::env::var("OUT_DIR").unwrap());
    let mut w = Wave::distributed(&ctx, unit_square(N), 0.001, Partitioner::KWay).unwrap();
    for _ in 0..STEPS {
        w.step().unwrap();
    }
    // A vertex field and a cell field from the global mesh, on owned elements only.
    let m = &w.mesh;
    let owned = |s: &parloop::Set| s.global_ids().unwrap()[..s.size()].to_vec();
    let f: Vec<f32> = owned(&w.vertices)
        .iter()
        .map(|&g| vertex_value(m.coords[g as usize][0], m.coords[g as usize][1]) as f32)
        .collect();
    let cx: Vec<f32> = owned(&w.cells)
        .iter()
        .map(|&c| {
            (m.cell(c as usize)
                .iter()
                .map(|&v| m.coords[v as usize][0])
                .sum::<f64>()
                / 3.0) as f32
        })
        .collect();
    let mut fd = ctx.dat_zeros::<f32>("f", &w.vertices, 1).unwrap();
    fd.set_data(&f).unwrap();
    let mut cd = ctx.dat_zeros::<f32>("cx", &w.cells, 1).unwrap();
    cd.set_data(&cx).unwrap();
    let mut s = PartSeries::new(&ctx, &dir, "wave").unwrap();
    let fields = [
        PartField::vertices(&w.p).unwrap(),
        PartField::vertices(&fd).unwrap(),
        PartField::cells(&cd).unwrap(),
    ];
    s.write(0.01, &w.c2v, CellType::Triangle, &w.coords, &fields)
        .unwrap();
    // A cell field given as a vertex field: an error on every rank, before any exchange.
    let wrong = [PartField::vertices(&cd).unwrap()];
    let err = s
        .write(0.02, &w.c2v, CellType::Triangle, &w.coords, &wrong)
        .unwrap_err();
    assert!(
        err.to_string().contains("field `cx` is on `cells`"),
        "{err}"
    );
    mpirun::report_done(ctx.rank(), &out);
}

/// The pieces a `.pvtu` lists.
fn pieces(pvtu: &std::path::Path) -> Vec<String> {
    let text = std::fs::read_to_string(pvtu).unwrap();
    text.split("<Piece Source=\"")
        .skip(1)
        .map(|p| p.split('"').next().unwrap().to_string())
        .collect()
}

#[test]
fn every_rank_writes_its_piece_and_paraview_gets_the_whole_mesh() {
    // The one-process run's p, by vertex position.
    let ctx = Context::new().unwrap();
    let mut one = Wave::distributed(&ctx, unit_square(N), 0.001, Partitioner::Block).unwrap();
    for _ in 0..STEPS {
        one.step().unwrap();
    }
    let p1 = one.p.data_ro().unwrap().to_vec();
    let key = |x: f64, y: f64| ((x * 1e4).round() as i64, (y * 1e4).round() as i64);
    let by_xy: std::collections::HashMap<_, usize> = one
        .mesh
        .coords
        .iter()
        .enumerate()
        .map(|(v, c)| (key(c[0], c[1]), v))
        .collect();
    for np in [2, 3] {
        let dir = std::env::temp_dir().join(format!("parloop-pvtu-{}-{np}", std::process::id()));
        let env = [("OUT_DIR", dir.to_str().unwrap())];
        assert_eq!(
            mpirun::mpirun_env(np, &worker!("write_worker"), &env),
            vec![1.0]
        );
        let pvd = std::fs::read_to_string(dir.join("wave.pvd")).unwrap();
        assert!(pvd.contains("file=\"wave_000000.pvtu\""), "{pvd}");
        let list = pieces(&dir.join("wave_000000.pvtu"));
        assert_eq!(list.len(), np, "one piece per rank");
        let mut cells_seen = vec![0usize; one.mesh.ncells()];
        for piece in &list {
            let v = vtu::read_vtu(&dir.join(piece));
            assert_eq!(v.points_xyz.len(), 3 * v.points);
            let (p, f, cx) = (
                &v.point["p"].values,
                &v.point["f"].values,
                &v.cell["cx"].values,
            );
            for k in 0..v.points {
                let (x, y) = (v.points_xyz[3 * k], v.points_xyz[3 * k + 1]);
                assert!(
                    (f[k] - vertex_value(x, y)).abs() < 1e-5,
                    "{piece}: point {k}"
                );
                let g = by_xy[&key(x, y)];
                assert!(
                    (p[k] - p1[g] as f64).abs() < 1e-5,
                    "{piece}: p at {g}: {} vs {}",
                    p[k],
                    p1[g]
                );
            }
            for c in 0..v.cells {
                let corners: Vec<usize> =
                    (0..3).map(|j| v.connectivity[3 * c + j] as usize).collect();
                let x = corners.iter().map(|&k| v.points_xyz[3 * k]).sum::<f64>() / 3.0;
                assert!((cx[c] - x).abs() < 1e-5, "{piece}: cell {c}");
                // The global cell with these vertices.
                let mut gv: Vec<u32> = corners
                    .iter()
                    .map(|&k| by_xy[&key(v.points_xyz[3 * k], v.points_xyz[3 * k + 1])] as u32)
                    .collect();
                gv.sort_unstable();
                let g = (0..one.mesh.ncells())
                    .find(|&g| {
                        let mut cv = one.mesh.cell(g).to_vec();
                        cv.sort_unstable();
                        cv == gv
                    })
                    .expect("a cell of the mesh");
                cells_seen[g] += 1;
            }
        }
        assert!(
            cells_seen.iter().all(|&n| n == 1),
            "every cell in exactly one piece"
        );
    }
}

/// Writes frames at the times `TIMES` lists (a fresh series, or one resumed from `RESUME`).
#[test]
#[ignore = "run by the other tests under mpirun"]
fn series_worker() {
    let Some(out) = mpirun::out_path() else {
        return;
    };
    let comm = Comm::world().unwrap();
    let ctx = Context::with_comm(Config::from_env().unwrap(), &comm).unwrap();
    let dir = PathBuf::from(std::env::var("OUT_DIR").unwrap());
    let w = Wave::distributed(&ctx, unit_square(N), 0.001, Partitioner::KWay).unwrap();
    let mut s = match std::env::var("RESUME").ok() {
        Some(t) => PartSeries::resume(&ctx, &dir, "wave", t.parse().unwrap()).unwrap(),
        None => PartSeries::new(&ctx, &dir, "wave").unwrap(),
    };
    let times = std::env::var("TIMES").unwrap();
    for t in times.split(',') {
        let fields = [PartField::vertices(&w.p).unwrap()];
        s.write(
            t.parse().unwrap(),
            &w.c2v,
            CellType::Triangle,
            &w.coords,
            &fields,
        )
        .unwrap();
    }
    mpirun::report_done(ctx.rank(), &out);
}

/// A restart writing into the same folder keeps the first run's frames before its time,
/// numbers its own after them and lists all of them, in time order, in the one `.pvd`.
#[test]
fn a_resumed_series_keeps_the_first_run_s_frames_and_continues_the_times() {
    let dir = std::env::temp_dir().join(format!("parloop-resume-{}", std::process::id()));
    let d = dir.to_str().unwrap();
    let first = [("OUT_DIR", d), ("TIMES", "0,0.5,1,1.5")];
    assert_eq!(
        mpirun::mpirun_env(2, &worker!("series_worker"), &first),
        vec![1.0]
    );
    let kept: Vec<Vec<u8>> = (0..2)
        .flat_map(|k| (0..2).map(move |r| format!("wave_{k:06}_{r}.vtu")))
        .map(|f| std::fs::read(dir.join(f)).unwrap())
        .collect();
    // Restarted from a checkpoint at t = 1 on 3 ranks: the frames at 1 and 1.5 are redone.
    let again = [("OUT_DIR", d), ("TIMES", "1,1.5,2"), ("RESUME", "1")];
    assert_eq!(
        mpirun::mpirun_env(3, &worker!("series_worker"), &again),
        vec![1.0]
    );
    let frames = parloop::mesh::vtk::read_pvd(&dir.join("wave.pvd")).unwrap();
    let want: Vec<(f64, String)> = [0.0, 0.5, 1.0, 1.5, 2.0]
        .iter()
        .enumerate()
        .map(|(k, &t)| (t, format!("wave_{k:06}.pvtu")))
        .collect();
    assert_eq!(frames, want);
    for (k, (_, f)) in frames.iter().enumerate() {
        assert_eq!(pieces(&dir.join(f)).len(), if k < 2 { 2 } else { 3 }, "{f}");
    }
    let now: Vec<Vec<u8>> = (0..2)
        .flat_map(|k| (0..2).map(move |r| format!("wave_{k:06}_{r}.vtu")))
        .map(|f| std::fs::read(dir.join(f)).unwrap())
        .collect();
    assert!(kept == now, "the first run's frames changed");
    std::fs::remove_dir_all(&dir).ok();
}

/// Starts `worker` on 2 ranks, waits until each rank has written its pid to `ready.<rank>`
/// (after its first write), lets them write for `ms` more milliseconds, then SIGKILLs both
/// ranks at once (Open MPI starts them in process groups of their own) and mpirun.
fn kill_during(worker: &str, env: &[(&str, &str)], ready: &std::path::Path, ms: u64) {
    let pid_file = |r: usize| ready.with_extension(format!("ready.{r}"));
    for r in 0..2 {
        let _ = std::fs::remove_file(pid_file(r));
    }
    let (mut cmd, out) = mpirun::command(2, worker, env);
    let mut child = cmd.spawn().expect("mpirun");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    let pids: Vec<String> = (0..2)
        .map(|r| {
            loop {
                if let Ok(p) = std::fs::read_to_string(pid_file(r))
                    && !p.is_empty()
                {
                    break p;
                }
                assert!(
                    std::time::Instant::now() < deadline,
                    "{worker} never got ready"
                );
                std::thread::sleep(std::time::Duration::from_millis(5));
            }
        })
        .collect();
    std::thread::sleep(std::time::Duration::from_millis(ms));
    let killed = std::process::Command::new("kill")
        .arg("-KILL")
        .args(&pids)
        .status()
        .unwrap();
    assert!(killed.success());
    let _ = child.kill();
    let _ = child.wait();
    // Gone (or a zombie) before anything is read.
    let alive = |p: &String| {
        std::fs::read_to_string(format!("/proc/{p}/stat")).is_ok_and(|s| {
            s.rsplit(')')
                .next()
                .is_some_and(|t| !t.trim_start().starts_with('Z'))
        })
    };
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while pids.iter().any(alive) {
        assert!(
            std::time::Instant::now() < deadline,
            "{worker}: a killed rank lives on"
        );
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    for r in 0..2 {
        let _ = std::fs::remove_file(pid_file(r));
    }
    let _ = std::fs::remove_file(out);
}

/// In a worker: writes this process's pid to `<READY>.ready.<rank>`.
fn say_ready(ctx: &Context) {
    let ready = PathBuf::from(std::env::var("READY").unwrap());
    let tmp = ready.with_extension(format!("tmp.{}", ctx.rank()));
    std::fs::write(&tmp, std::process::id().to_string()).unwrap();
    std::fs::rename(tmp, ready.with_extension(format!("ready.{}", ctx.rank()))).unwrap();
}

/// Writes frames of the wave in a loop until killed.
#[test]
#[ignore = "run by the other tests under mpirun"]
fn frames_forever_worker() {
    let Some(_) = mpirun::out_path() else { return };
    let comm = Comm::world().unwrap();
    let ctx = Context::with_comm(Config::from_env().unwrap(), &comm).unwrap();
    let dir = PathBuf::from(std::env::var("OUT_DIR").unwrap());
    let mut w = Wave::distributed(&ctx, unit_square(40), 0.001, Partitioner::KWay).unwrap();
    let mut s = PartSeries::new(&ctx, &dir, "wave").unwrap();
    for k in 0.. {
        w.step().unwrap();
        let fields = [PartField::vertices(&w.p).unwrap()];
        s.write(k as f64, &w.c2v, CellType::Triangle, &w.coords, &fields)
            .unwrap();
        if k == 0 {
            say_ready(&ctx);
        }
    }
}

/// A run killed (SIGKILL, every rank) at several moments while it writes frames: the `.pvd`
/// always parses, and every frame it lists has all its pieces, readable.
#[test]
fn frames_killed_while_written_leave_a_readable_series() {
    let dir = std::env::temp_dir().join(format!("parloop-kill-pvd-{}", std::process::id()));
    let ready = dir.with_extension("ready");
    for ms in [5, 40, 90, 170, 260] {
        let env = [
            ("OUT_DIR", dir.to_str().unwrap()),
            ("READY", ready.to_str().unwrap()),
        ];
        kill_during(&worker!("frames_forever_worker"), &env, &ready, ms);
        let frames = parloop::mesh::vtk::read_pvd(&dir.join("wave.pvd"))
            .unwrap_or_else(|e| panic!("killed after {ms} ms: {e}"));
        assert!(!frames.is_empty(), "killed after {ms} ms: no frame listed");
        for (t, f) in &frames {
            let list = pieces(&dir.join(f));
            assert_eq!(list.len(), 2, "{f} at {t}");
            for p in list {
                let v = vtu::read_vtu(&dir.join(&p));
                assert!(v.cells > 0 && v.point["p"].values.len() == v.points, "{p}");
            }
        }
        std::fs::remove_dir_all(&dir).ok();
    }
    std::fs::remove_file(&ready).ok();
}

/// Writes checkpoints of a 32 MB Dat in a loop until killed (every value of checkpoint k is
/// `FIRST + k`, its step), keeping the last 2.
#[cfg(feature = "hdf5")]
#[test]
#[ignore = "run by the other tests under mpirun"]
fn checkpoints_forever_worker() {
    let Some(_) = mpirun::out_path() else { return };
    let comm = Comm::world().unwrap();
    let ctx = Context::with_comm(Config::from_env().unwrap(), &comm).unwrap();
    let path = PathBuf::from(std::env::var("CHECKPOINT").unwrap());
    let first: u64 = std::env::var("FIRST").unwrap().parse().unwrap();
    let n = 4 << 20;
    let mut d = parloop::dist::Distribution::new(&ctx);
    let cells = d.set("cells", n);
    let u = d.dat("u", cells, 1, &vec![0.0f64; n]).unwrap();
    let mut part = d.distribute(cells, Partitioner::Block).unwrap();
    let mut u = part.dat(u).unwrap();
    let owned = part.set(cells).size();
    for step in first.. {
        u.set_data(&vec![step as f64; owned]).unwrap();
        let mut c = parloop::h5::Checkpoint::new(&ctx);
        c.dat(&u).unwrap().step(step).keep(2);
        c.write(&path).unwrap();
        if step == first {
            say_ready(&ctx);
        }
    }
}

/// A run killed (SIGKILL, every rank) at several moments while it writes checkpoints: the
/// newest file and the one kept before it are always whole, each holding its own step's
/// values (read by parloop, and by h5py where it is installed).
#[cfg(feature = "hdf5")]
#[test]
fn checkpoints_killed_while_written_keep_the_last_whole_ones() {
    let path = std::env::temp_dir().join(format!("parloop-kill-ck-{}.h5", std::process::id()));
    let ready = path.with_extension("ready");
    let ctx = Context::new().unwrap();
    let mut last = 0;
    for (round, ms) in [10u64, 60, 140, 230, 330].into_iter().enumerate() {
        let first = (1000 * (round + 1)).to_string();
        let env = [
            ("CHECKPOINT", path.to_str().unwrap()),
            ("READY", ready.to_str().unwrap()),
            ("FIRST", first.as_str()),
        ];
        kill_during(&worker!("checkpoints_forever_worker"), &env, &ready, ms);
        let older = parloop::h5::older(&path, 1);
        let mut steps = Vec::new();
        // The first round may be killed before its second checkpoint; after it, every
        // round's first checkpoint has kept the one before.
        assert!(
            round == 0 || older.exists(),
            "round {round}: no older checkpoint"
        );
        for p in [&path, &older].into_iter().filter(|p| p.exists()) {
            let f = parloop::h5::MeshFile::read(&ctx, p)
                .unwrap_or_else(|e| panic!("killed after {ms} ms: {}: {e}", p.display()));
            let step = f.step().unwrap();
            let cells = f.mesh.find_set("cells").unwrap();
            let mut part = f.mesh.distribute(cells, Partitioner::Block).unwrap();
            let u = part.dat_named::<f64>("u").unwrap();
            assert!(
                u.data_ro().unwrap().iter().all(|&v| v == step as f64),
                "{}: step {step} holds other values",
                p.display()
            );
            steps.push(step);
            let script = format!(
                "import h5py, numpy as np\nf = h5py.File({:?}, 'r')\n\
                 print(int(f.attrs['step']), bool(np.all(f['dats']['u'][:] == f.attrs['step'])))",
                p.to_str().unwrap()
            );
            if let Ok(o) = std::process::Command::new("/usr/bin/python3")
                .args(["-c", &script])
                .output()
                && o.status.success()
            {
                assert_eq!(
                    String::from_utf8_lossy(&o.stdout).trim(),
                    format!("{step} True")
                );
            }
        }
        // The newest is this round's or, killed before its first rename, the last round's.
        assert!(
            steps.windows(2).all(|w| w[0] > w[1]) && steps[0] >= last,
            "{steps:?} after {last}"
        );
        last = steps[0];
    }
    for p in [path.clone(), parloop::h5::older(&path, 1), ready] {
        std::fs::remove_file(p).ok();
    }
    // The hidden temporary files the killed runs left beside it (32 MB each).
    let hidden = format!(".{}", path.file_name().unwrap().to_str().unwrap());
    for e in std::fs::read_dir(std::env::temp_dir()).unwrap().flatten() {
        if e.file_name().to_string_lossy().starts_with(&hidden) {
            std::fs::remove_file(e.path()).ok();
        }
    }
}

/// `keep(3)` keeps the last three checkpoints; a restart whose newest file is damaged falls
/// back to the one before it, and with none readable the error lists each file's reason.
#[cfg(feature = "hdf5")]
#[test]
fn kept_checkpoints_rotate_and_a_restart_falls_back_to_the_newest_readable() {
    use parloop::h5::{Checkpoint, MeshFile, older};
    let ctx = Context::new().unwrap();
    let path = std::env::temp_dir().join(format!("parloop-keep-{}.h5", std::process::id()));
    let cells = parloop::Set::new("cells", 10);
    for step in 1..=4u64 {
        let u = ctx.dat("u", &cells, 1, &[step as f32; 10]).unwrap();
        let mut c = Checkpoint::new(&ctx);
        c.dat(&u).unwrap().step(step).keep(3);
        c.write(&path).unwrap();
    }
    let step_of = |p: &std::path::Path| MeshFile::read(&ctx, p).unwrap().step();
    assert_eq!(step_of(&path), Some(4));
    // A diverged run's NaN is refused before anything is written: the kept files stay.
    let before = std::fs::read(&path).unwrap();
    let u = ctx.dat("u", &cells, 1, &[f32::NAN; 10]).unwrap();
    let mut c = Checkpoint::new(&ctx);
    c.dat(&u).unwrap().step(5).keep(3);
    let e = c.write(&path).unwrap_err().to_string();
    assert!(e.contains("Dat `u` holds NaN at element 0"), "{e}");
    assert_eq!(std::fs::read(&path).unwrap(), before);
    assert_eq!(step_of(&older(&path, 1)), Some(3));
    assert_eq!(step_of(&older(&path, 2)), Some(2));
    assert!(!older(&path, 3).exists(), "a fourth file kept");
    // The newest cut short (a disk that filled up): the restart takes the one before.
    let bytes = std::fs::read(&path).unwrap();
    std::fs::write(&path, &bytes[..bytes.len() / 2]).unwrap();
    let (f, from) = MeshFile::read_newest(&ctx, &path).unwrap();
    assert_eq!((f.step(), from), (Some(3), older(&path, 1)));
    for p in [older(&path, 1), older(&path, 2)] {
        std::fs::write(&p, b"not hdf5").unwrap();
    }
    let e = MeshFile::read_newest(&ctx, &path)
        .err()
        .unwrap()
        .to_string();
    assert!(
        e.contains("no readable checkpoint") && e.matches("parloop-keep").count() >= 3,
        "{e}"
    );
    for p in [path.clone(), older(&path, 1), older(&path, 2)] {
        std::fs::remove_file(p).ok();
    }
}
