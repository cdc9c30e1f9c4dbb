//! `parloop convert`: a Gmsh mesh or OP2's Airfoil grid to a parloop mesh file (HDF5), which
//! every rank of a distributed run then reads only its blocks of.

use parloop::Context;
use parloop::apps::airfoil::Airfoil;
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
            "{} {}s, {} vertices in MeshData's layout: sets cells, facets, boundary facets \
             and vertices, maps cell_vertices, facet_cells, facet_vertices, boundary_cell and \
             boundary_vertices (cells oriented positively), Dat coords ({})",
            mesh.ncells(),
            mesh.cell_type.name(),
            mesh.nvertices(),
            if f32 { "f32" } else { "f64" }
        );
        let (b, groups) = parloop::mesh::topology::MeshData::blocks(&ctx, &mesh, f32).map_err(e)?;
        let what = if groups.is_empty() {
            what
        } else {
            format!(
                "{what}; physical groups as sets with a map to their parent: {}",
                groups.join("; ")
            )
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
