//! The wave on a mesh no rank holds whole: its mesh in blocks (for `h5::write`), the wave on a
//! part distributed from a file, and its checkpoints.

use super::{Wave, check_cells, initial_p, initial_p_3d, prepared};
use crate::context::Context;
use crate::dist::{BlockMesh, Distributed};
use crate::error::{Error, Result};
use crate::mesh::{CellType, Mesh};

impl Wave {
    /// `mesh` as the wave runs it (cells positively oriented), every rank declaring its block:
    /// sets `vertices` and `cells`, map `cell_vertices`, Dat `coords` (f32). `h5::write` makes
    /// it the mesh file [`Wave::from_part`] starts from.
    pub fn block_mesh(ctx: &Context, mesh: Mesh) -> Result<BlockMesh> {
        let mesh = prepared(mesh)?;
        let arity = mesh.cell_type.vertices();
        let mut b = BlockMesh::new(ctx);
        let vertices = b.set("vertices", mesh.nvertices());
        let cells = b.set("cells", mesh.ncells());
        let rc = b.range(cells);
        let rows = mesh.cells[rc.start * arity..rc.end * arity].to_vec();
        b.map("cell_vertices", cells, vertices, arity, rows)?;
        let (rv, dim) = (b.range(vertices), mesh.dim());
        b.dat(
            "coords",
            vertices,
            dim,
            &mesh.coords_f32()[rv.start * dim..rv.end * dim],
        )?;
        Ok(b)
    }

    /// This rank's part of the wave on a mesh distributed from blocks (a file read with
    /// `h5::MeshFile`, or a checkpoint), with the names of [`Wave::block_mesh`]: triangles
    /// (3 vertices, 2-D coordinates, f32 or f64) or tetrahedra (4, 3-D). p and phi are the part's Dats of
    /// those names where the file has them (a checkpoint), else p's initial values and phi = 0.
    /// No rank holds the mesh, so `mesh` has the cell type only (no vertices or cells): write
    /// frames with `mesh::pvtu::PartSeries`.
    pub fn from_part(ctx: &Context, part: &mut Distributed, dt: f32) -> Result<Wave> {
        let vertices = part.set_named("vertices")?;
        let cells = part.set_named("cells")?;
        let c2v = part.map_named("cell_vertices")?;
        // Coordinates in f64 (a Gmsh mesh converted in its precision) run in f32.
        let coords = if part.dat_type("coords") == Some(crate::types::DType::F64) {
            let c64 = part.dat_named::<f64>("coords")?;
            let values: Vec<f32> = c64.data_ro()?.iter().map(|&v| v as f32).collect();
            let mut c = ctx.dat_zeros::<f32>("coords", &vertices, c64.dim())?;
            c.set_data(&values)?;
            c
        } else {
            part.dat_named::<f32>("coords")?
        };
        let cell_type = match (c2v.arity(), coords.dim()) {
            (3, 2) => CellType::Triangle,
            (4, 3) => CellType::Tetrahedron,
            (a, d) => {
                return Err(Error::Data(format!(
                    "the wave runs on triangles (3 vertices, 2-D coordinates) or tetrahedra \
                     (4, 3-D); this mesh has {a} vertices per cell and {d}-D coordinates"
                )));
            }
        };
        check_cells(cell_type)?;
        let p = if part.has_dat("p") {
            part.dat_named::<f32>("p")?
        } else {
            let xyz = coords.data_ro()?.to_vec();
            let d = coords.dim();
            let values: Vec<f32> = xyz
                .chunks_exact(d)
                .map(|c| match d {
                    2 => initial_p(c[0] as f64, c[1] as f64) as f32,
                    _ => initial_p_3d([c[0] as f64, c[1] as f64, c[2] as f64]) as f32,
                })
                .collect();
            let mut p = ctx.dat_zeros::<f32>("p", &vertices, 1)?;
            p.set_data(&values)?;
            p
        };
        let phi = if part.has_dat("phi") {
            part.dat_named::<f32>("phi")?
        } else {
            ctx.dat_zeros("phi", &vertices, 1)?
        };
        let t1 = ctx.dat_zeros("t1", &vertices, 1)?;
        let mass = ctx.dat_zeros("mass", &vertices, 1)?;
        let mesh = Mesh {
            coords: Vec::new(),
            cell_type,
            cells: Vec::new(),
            facets: Vec::new(),
            groups: Vec::new(),
        };
        Wave::assemble(
            ctx,
            mesh,
            dt,
            [vertices, cells],
            c2v,
            [coords, p, phi, t1, mass],
        )
    }

    /// A checkpoint of the wave (its mesh, coords, p and phi) at its step count: a mesh file
    /// that [`Wave::from_part`] restarts from, on any number of ranks.
    #[cfg(all(feature = "hdf5", not(target_arch = "wasm32")))]
    pub fn checkpoint(&self) -> Result<crate::h5::Checkpoint> {
        let mut c = crate::h5::Checkpoint::new(&self.ctx);
        c.map(&self.c2v);
        c.dat(&self.coords)?
            .dat(&self.p)?
            .dat(&self.phi)?
            .step(self.steps);
        Ok(c)
    }
}
