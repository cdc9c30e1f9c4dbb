//! The wave on tetrahedra (3-D P1, `Wave::on_mesh` on a mesh of tetrahedra): GPU results
//! against the plain-Rust f64 reference on the committed Gmsh cube and on a finer generated
//! one, energy conservation, other cell types refused, and ParaView frames with tetrahedral
//! cells.

use crate::common;

use common::ctx_with;
use parloop::apps::wave::{Wave, reference};
use parloop::mesh::{Mesh, gmsh, unit_cube_tets, vtk};
use parloop::{Config, Staging, Strategy};

fn max_rel_diff(gpu: &[f32], reference: &[f64]) -> f64 {
    let scale = reference.iter().fold(0.0f64, |m, v| m.max(v.abs()));
    let diff = gpu
        .iter()
        .zip(reference)
        .fold(0.0f64, |m, (g, r)| m.max((*g as f64 - r).abs()));
    diff / scale
}

fn committed_cube() -> Mesh {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/cube.msh");
    gmsh::read_file(path).unwrap()
}

/// 200 steps equal the reference within 1e-5 (max norm, relative) on the committed cube
/// (a Gmsh file) and on an 8^3 x 6 cube, under every strategy the adapter has; the energy
/// matches the reference's, and both stay within 0.1% of the start.
#[test]
fn two_hundred_steps_on_tetrahedra_match_the_cpu_reference() {
    let (steps, dt) = (200, 0.001);
    let probe = ctx_with(Config::from_env().unwrap());
    for (name, mesh) in [
        ("cube.msh", committed_cube()),
        ("8^3 cube", unit_cube_tets(8)),
    ] {
        let mut r = reference::State::new(&mesh).unwrap();
        let e0 = r.energy();
        for _ in 0..steps {
            r.step(dt);
        }
        let e_ref = r.energy();
        assert!(((e_ref - e0) / e0).abs() < 1e-3, "{name}: reference drifts");
        for (strategy, staging) in common::strategies(&probe) {
            let ctx = ctx_with(Config {
                strategy,
                staging,
                ..Config::from_env().unwrap()
            });
            let mut w = Wave::on_mesh(&ctx, mesh.clone(), dt as f32).unwrap();
            let start = w.energy().unwrap();
            assert!(
                ((start - e0) / e0).abs() < 1e-5,
                "{name}: initial energy {start} vs {e0}"
            );
            for _ in 0..steps {
                w.step().unwrap();
            }
            let how = format!("{name}, {} {staging:?}", strategy.name());
            let p = w.p.data_ro().unwrap().to_vec();
            let phi = w.phi.data_ro().unwrap().to_vec();
            let (ep, ephi) = (max_rel_diff(&p, &r.p), max_rel_diff(&phi, &r.phi));
            assert!(ep <= 1e-5, "{how}: p differs by {ep:e}");
            assert!(ephi <= 1e-5, "{how}: phi differs by {ephi:e}");
            let e = w.energy().unwrap();
            assert!(
                ((e - e_ref) / e_ref).abs() < 1e-5,
                "{how}: energy {e} vs {e_ref}"
            );
        }
    }
}

/// The wave refuses a mesh of quadrilaterals (it runs triangles and tetrahedra), naming its
/// cell type, and so does the reference; a wave on tetrahedra has no 2-D pulse.
#[test]
fn the_wave_refuses_other_cells() {
    let ctx = ctx_with(Config::from_env().unwrap());
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/lshape.msh");
    let lshape = gmsh::read_file(path).unwrap();
    let msg = Wave::on_mesh(&ctx, lshape.clone(), 0.001)
        .err()
        .unwrap()
        .to_string();
    assert!(
        msg.contains("tetrahedra") && msg.contains("triangle") && msg.contains("quadrilateral"),
        "{msg}"
    );
    assert!(reference::State::new(&lshape).is_err());
    let mut w = Wave::on_mesh(&ctx, unit_cube_tets(2), 0.001).unwrap();
    let msg = w.pulse(0.5, 0.5, 1.0).unwrap_err().to_string();
    assert!(msg.contains("tetrahedra"), "{msg}");
}

/// Frames of the 3-D wave parse back as tetrahedra with a value per vertex.
#[test]
fn vtk_frames_of_tetrahedra_parse_back() {
    let ctx = ctx_with(Config {
        strategy: Strategy::Auto,
        staging: Staging::Inc,
        ..Config::from_env().unwrap()
    });
    let mesh = unit_cube_tets(3);
    let mut w = Wave::on_mesh(&ctx, mesh, 0.001).unwrap();
    w.step().unwrap();
    let dir = std::env::temp_dir().join(format!("parloop-vtk3-{}", std::process::id()));
    let mut series = vtk::Series::new(&dir, "p").unwrap();
    let p = w.p.data_ro().unwrap().to_vec();
    series
        .write(0.001, &w.mesh, &[vtk::Field::vertices("p", &p)])
        .unwrap();
    let vtk = vtkio::Vtk::import(dir.join("p_000000.vtu")).unwrap();
    let vtkio::model::DataSet::UnstructuredGrid { pieces, .. } = vtk.data else {
        panic!("not an unstructured grid")
    };
    let piece = pieces[0].load_piece_data(None).unwrap();
    assert_eq!(piece.num_points(), 64);
    assert_eq!(piece.cells.types.len(), 162);
    assert!(
        piece
            .cells
            .types
            .iter()
            .all(|t| *t == vtkio::model::CellType::Tetra)
    );
    // Points keep their z.
    let vtkio::model::IOBuffer::F32(xyz) = &piece.points else {
        panic!("points not f32")
    };
    assert_eq!(xyz[3 * 63 + 2], 1.0);
    std::fs::remove_dir_all(&dir).ok();
}

/// The one wave's distributed constructor takes tetrahedra too: on one rank it runs as
/// `Wave::on_mesh`.
#[test]
fn a_distributed_wave_on_tetrahedra_on_one_rank_equals_the_plain_one() {
    // Equal to the last bit: the increments in the same order where `auto` colours (it would
    // run this mesh's 30 small colours with atomics).
    let config = || Config {
        min_colour_size: 0,
        ..Config::from_env().unwrap()
    };
    let mut a = Wave::on_mesh(&ctx_with(config()), unit_cube_tets(3), 0.001).unwrap();
    let partitioner = parloop::dist::Partitioner::Block;
    let mut b =
        Wave::distributed(&ctx_with(config()), unit_cube_tets(3), 0.001, partitioner).unwrap();
    for _ in 0..20 {
        a.step().unwrap();
        b.step().unwrap();
    }
    assert_eq!(&*a.p.data_ro().unwrap(), &*b.p.data_ro().unwrap());
    assert_eq!(b.coords.dim(), 3);
}
