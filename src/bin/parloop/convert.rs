//! `parloop convert`: a Gmsh mesh or OP2's Airfoil grid to a parloop mesh file (HDF5), which
//! every rank of a distributed run then reads only its blocks of.

use parloop::Context;
use parloop::apps::airfoil::Airfoil;
use parloop::apps::wave::Wave;
use parloop::mesh::airfoil::AirfoilMesh;
use std::path::Path;

/// Converts `input` (`.msh`: Gmsh; else OP2's `new_grid.dat`) into `output`; returns what it
/// wrote.
pub fn run(input: &Path, output: &Path, f32: bool) -> Result<String, String> {
    let ctx = Context::new().map_err(|e| e.to_string())?;
    let e = |e: parloop::Error| format!("{}: {e}", input.display());
    let is_msh = input.extension().is_some_and(|x| x == "msh");
    let (what, mesh) = if is_msh {
        let mesh = parloop::mesh::gmsh::read_file(input)
            .map_err(|x| format!("{}: {x}", input.display()))?;
        let what = format!(
            "{} {}s, {} vertices: sets vertices and cells, map cell_vertices (cells oriented \
             positively), Dat coords ({})",
            mesh.ncells(),
            mesh.cell_type.name(),
            mesh.nvertices(),
            if f32 { "f32" } else { "f64" }
        );
        let b = if f32 {
            Wave::block_mesh(&ctx, mesh).map_err(e)?
        } else {
            coords_f64(&ctx, mesh).map_err(e)?
        };
        (what, b)
    } else {
        let text = std::fs::read_to_string(input)
            .map_err(|x| format!("cannot read {}: {x}", input.display()))?;
        let m =
            AirfoilMesh::from_grid_dat(&text).map_err(|x| format!("{}: {x}", input.display()))?;
        let (nn, nc, ne, nb) = m.counts();
        let what = format!(
            "OP2's grid: {nn} nodes, {nc} cells, {ne} edges, {nb} boundary edges; maps pcell, \
             pedge, pecell, pbedge, pbecell; Dats x and q ({}), bound",
            if f32 { "f32" } else { "f64" }
        );
        let b = if f32 {
            Airfoil::<f32>::block_mesh(&ctx, &m)
        } else {
            Airfoil::<f64>::block_mesh(&ctx, &m)
        }
        .map_err(e)?;
        (what, b)
    };
    parloop::h5::write(output, &mesh).map_err(|x| x.to_string())?;
    Ok(format!("wrote {}: {what}\n", output.display()))
}

/// The wave's layout of `mesh` with f64 coordinates (Gmsh's precision).
fn coords_f64(
    ctx: &Context,
    mut mesh: parloop::mesh::Mesh,
) -> parloop::Result<parloop::dist::BlockMesh> {
    mesh.orient()?;
    let arity = mesh.cell_type.vertices();
    let mut b = parloop::dist::BlockMesh::new(ctx);
    let vertices = b.set("vertices", mesh.nvertices());
    let cells = b.set("cells", mesh.ncells());
    b.map("cell_vertices", cells, vertices, arity, mesh.cells.clone())?;
    let dim = mesh.dim();
    let xyz: Vec<f64> = mesh.coords.iter().flat_map(|c| c[..dim].to_vec()).collect();
    b.dat("coords", vertices, dim, &xyz)?;
    Ok(b)
}
