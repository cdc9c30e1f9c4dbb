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
        let mut b = if f32 {
            Wave::block_mesh(&ctx, mesh.clone()).map_err(e)?
        } else {
            coords_f64(&ctx, mesh.clone()).map_err(e)?
        };
        let groups = add_groups(&mut b, &mesh).map_err(e)?;
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

/// Gmsh's physical groups as sets with a map to their parent (how a distributed run iterates
/// over part of a set): a group of cells becomes set `<name>` with map `<name>_cells` (arity
/// 1), a group of facets set `<name>` with map `<name>_vertices` (the facets' vertices).
/// Returns a line per group: what it became, or why it was left out.
fn add_groups(
    b: &mut parloop::dist::BlockMesh,
    mesh: &parloop::mesh::Mesh,
) -> parloop::Result<Vec<String>> {
    let cells = b.find_set("cells").expect("declared first");
    let vertices = b.find_set("vertices").expect("declared first");
    let mut said = Vec::new();
    for g in &mesh.groups {
        let name = g.name.as_str();
        let taken = b.find_set(name).is_some()
            || b.find_map(&format!("{name}_cells")).is_some()
            || b.find_map(&format!("{name}_vertices")).is_some();
        if taken || name.is_empty() || name.contains('/') || name == "." {
            said.push(format!(
                "group `{name}` left out: its name is taken or not a file name"
            ));
        } else if g.dim == mesh.dim() {
            let s = b.set(name, g.members.len());
            b.map(&format!("{name}_cells"), s, cells, 1, g.members.clone())?;
            said.push(format!(
                "{name}: {} cells (map {name}_cells)",
                g.members.len()
            ));
        } else if g.dim + 1 == mesh.dim() {
            let rows: Vec<&Vec<u32>> = g
                .members
                .iter()
                .map(|&f| &mesh.facets[f as usize])
                .collect();
            let arity = rows.first().map_or(0, |r| r.len());
            if arity == 0 || rows.iter().any(|r| r.len() != arity) {
                said.push(format!(
                    "group `{name}` left out: its facets mix vertex counts"
                ));
                continue;
            }
            let s = b.set(name, rows.len());
            let values: Vec<u32> = rows.into_iter().flatten().copied().collect();
            b.map(&format!("{name}_vertices"), s, vertices, arity, values)?;
            said.push(format!(
                "{name}: {} facets (map {name}_vertices)",
                g.members.len()
            ));
        } else {
            said.push(format!("group `{name}` left out: of dimension {}", g.dim));
        }
    }
    Ok(said)
}
