//! Reading Gmsh meshes and deriving their topology, at 10k, 100k and 1M cells: triangles (the
//! unit square) and tetrahedra (the unit cube), written as MSH 4.1 ASCII, then read back
//! (`mesh::gmsh::read`) and their facets (and 3-D edges) derived (`mesh::topology::Topology`).
//! Each time is the best of 3. Then the wave's steps/s on about 1M triangles numbered three
//! ways: as generated (row by row), shuffled at random (what an unstructured mesher's numbering
//! can look like), and the shuffled mesh renumbered along a Z-order curve
//! (`Mesh::renumbered`), on the adapter PARLOOP_ADAPTER chooses.
//!
//! `cargo bench --bench gmsh`

use parloop::apps::wave::Wave;
use parloop::mesh::topology::Topology;
use parloop::mesh::{Mesh, gmsh, unit_cube_tets, unit_square};
use parloop::{Config, Context};
use std::time::Instant;

fn best_of_3<T>(mut f: impl FnMut() -> T) -> (f64, T) {
    let mut best = f64::INFINITY;
    let mut out = None;
    for _ in 0..3 {
        let t0 = Instant::now();
        let v = f();
        best = best.min(t0.elapsed().as_secs_f64() * 1e3);
        out = Some(v);
    }
    (best, out.expect("three runs"))
}

fn main() {
    println!("| mesh | cells | file (MSH 4.1 ASCII) | read | topology | facets | edges |");
    println!("|---|---:|---:|---:|---:|---:|---:|");
    let meshes: Vec<(&str, Mesh)> = vec![
        ("triangles", unit_square(71)),
        ("triangles", unit_square(224)),
        ("triangles", unit_square(707)),
        ("tetrahedra", unit_cube_tets(12)),
        ("tetrahedra", unit_cube_tets(26)),
        ("tetrahedra", unit_cube_tets(55)),
        // The same with a random numbering: the derivation's memory access at its worst.
        ("tetrahedra, shuffled", unit_cube_tets(55).shuffled(1).0),
    ];
    for (name, m) in meshes {
        let text = gmsh::write41(&m);
        let (read_ms, back) = best_of_3(|| gmsh::read(text.as_bytes()).expect("reads back"));
        assert_eq!(back.ncells(), m.ncells());
        let (topo_ms, t) =
            best_of_3(|| Topology::new(back.cell_type, &back.cells).expect("a manifold"));
        println!(
            "| {name} | {} | {:.1} MB | {read_ms:.0} ms | {topo_ms:.0} ms | {} | {} |",
            m.ncells(),
            text.len() as f64 / 1e6,
            t.nfacets(),
            t.edges.len()
        );
    }

    let ctx =
        Context::with_config(Config::from_env().expect("PARLOOP_* variables")).expect("an adapter");
    println!("\nwave on about 1M triangles ({}):", ctx.adapter());
    println!("| numbering | steps/s |");
    println!("|---|---:|");
    let base = unit_square(707);
    let (shuffled, _) = base.shuffled(1);
    let (renumbered, _) = shuffled.renumbered();
    for (name, m) in [
        ("as generated (row by row)", &base),
        ("shuffled", &shuffled),
        ("shuffled, then renumbered (Z-order)", &renumbered),
    ] {
        let mut w = Wave::on_mesh(&ctx, m.clone(), 0.0001).expect("wave");
        let mut run = |steps: usize| {
            for s in 0..steps {
                w.step().expect("step");
                if s % 10 == 9 {
                    ctx.flush().expect("flush");
                }
            }
            let _ = w.p.data_ro().expect("p");
        };
        run(10); // pipelines, plans
        let t0 = Instant::now();
        run(40);
        println!("| {name} | {:.1} |", 40.0 / t0.elapsed().as_secs_f64());
    }
}
