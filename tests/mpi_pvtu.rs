//! Parallel ParaView output with nothing gathered (`mesh::pvtu::PartSeries`): on 2 and 3 ranks
//! every rank writes its piece and rank 0 the `.pvtu` and `.pvd`. Read back by a reader
//! independent of the writer: the pieces cover every cell of the mesh once, every point's
//! vertex field (computed on the host from the coordinates, so a halo vertex's value can only
//! have come from its owner) is right, a cell field matches its cell, and the wave's p equals
//! the one-process run's.
//!
//! `cargo test --features mpi --test mpi_pvtu` (needs Open MPI's `mpirun`).

#[path = "common/mpirun.rs"]
mod mpirun;
#[path = "common/vtu.rs"]
mod vtu;

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
    if ctx.rank() == 0 {
        std::fs::write(out, bytemuck::cast_slice(&[1.0f32])).unwrap();
    }
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
        assert_eq!(mpirun::mpirun_env(np, "write_worker", &env), vec![1.0]);
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
    if ctx.rank() == 0 {
        std::fs::write(out, bytemuck::cast_slice(&[1.0f32])).unwrap();
    }
}

/// A restart writing into the same folder keeps the first run's frames before its time,
/// numbers its own after them and lists all of them, in time order, in the one `.pvd`.
#[test]
fn a_resumed_series_keeps_the_first_run_s_frames_and_continues_the_times() {
    let dir = std::env::temp_dir().join(format!("parloop-resume-{}", std::process::id()));
    let d = dir.to_str().unwrap();
    let first = [("OUT_DIR", d), ("TIMES", "0,0.5,1,1.5")];
    assert_eq!(mpirun::mpirun_env(2, "series_worker", &first), vec![1.0]);
    let kept: Vec<Vec<u8>> = (0..2)
        .flat_map(|k| (0..2).map(move |r| format!("wave_{k:06}_{r}.vtu")))
        .map(|f| std::fs::read(dir.join(f)).unwrap())
        .collect();
    // Restarted from a checkpoint at t = 1 on 3 ranks: the frames at 1 and 1.5 are redone.
    let again = [("OUT_DIR", d), ("TIMES", "1,1.5,2"), ("RESUME", "1")];
    assert_eq!(mpirun::mpirun_env(3, "series_worker", &again), vec![1.0]);
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
