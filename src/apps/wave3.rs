//! The wave of [`super::wave`] on tetrahedra: P1 in 3-D, with the lumped mass (volume / 4 per
//! corner) and the stiffness action assembled through the cell -> vertex map of a mesh.
//! The step is the 2-D one (the same five par_loops); only the cell kernels differ.
//! [`super::wave::reference::State::tetrahedra`] is its plain-Rust f64 reference.

use super::wave::{Fields, Kernels, record_energy, record_mass, record_step, vertex_kernels};
use crate::mesh::{CellType, Mesh};
use crate::{Context, Dat, Error, Global, Map, Result, Set};

/// The WGSL kernels on tetrahedra (the Const `dt` is compiled in; no `pulse`: clicks are a
/// 2-D demo's).
pub const KERNELS: &str = concat!(
    vertex_kernels!(),
    r#"
fn geometry(x: ptr<function, array<f32, 12>>, g: ptr<function, array<vec3<f32>, 4>>) -> f32 {
    let x0 = vec3<f32>((*x)[0], (*x)[1], (*x)[2]);
    let d1 = vec3<f32>((*x)[3], (*x)[4], (*x)[5]) - x0;
    let d2 = vec3<f32>((*x)[6], (*x)[7], (*x)[8]) - x0;
    let d3 = vec3<f32>((*x)[9], (*x)[10], (*x)[11]) - x0;
    let det = dot(d1, cross(d2, d3));
    // The rows of the inverse Jacobian: the gradients of the barycentric coordinates 1..3.
    (*g)[1] = cross(d2, d3) / det;
    (*g)[2] = cross(d3, d1) / det;
    (*g)[3] = cross(d1, d2) / det;
    (*g)[0] = -(*g)[1] - (*g)[2] - (*g)[3];
    return abs(det) / 6.0;
}

fn lumped_mass(x: ptr<function, array<f32, 12>>, m: ptr<function, array<f32, 4>>) {
    var g: array<vec3<f32>, 4>;
    let vol = geometry(x, &g);
    for (var a = 0; a < 4; a++) { (*m)[a] += vol / 4.0; }
}

fn gradient(g: ptr<function, array<vec3<f32>, 4>>, phi: ptr<function, array<f32, 4>>) -> vec3<f32> {
    return (*g)[0] * (*phi)[0] + (*g)[1] * (*phi)[1] + (*g)[2] * (*phi)[2] + (*g)[3] * (*phi)[3];
}

fn stiffness(x: ptr<function, array<f32, 12>>, phi: ptr<function, array<f32, 4>>, t: ptr<function, array<f32, 4>>) {
    var g: array<vec3<f32>, 4>;
    let vol = geometry(x, &g);
    let grad = gradient(&g, phi);
    for (var a = 0; a < 4; a++) { (*t)[a] += dt * vol * dot(g[a], grad); }
}

fn energy_cells(x: ptr<function, array<f32, 12>>, phi: ptr<function, array<f32, 4>>, e: ptr<function, array<f32, 1>>) {
    var g: array<vec3<f32>, 4>;
    let vol = geometry(x, &g);
    let grad = gradient(&g, phi);
    (*e)[0] += 0.5 * vol * dot(grad, grad);
}
"#
);

/// The initial pressure in 3-D: the 2-D Gaussian of [`super::wave::initial_p`] around the
/// centre of the unit cube.
pub fn initial_p(x: [f64; 3]) -> f64 {
    let r2: f64 = x.iter().map(|c| (c - 0.5).powi(2)).sum();
    (-40.0 * r2).exp()
}

/// The wave on a mesh of tetrahedra.
pub struct Wave3 {
    /// The context the simulation runs on.
    pub ctx: Context,
    /// The mesh (for output).
    pub mesh: Mesh,
    /// Mesh vertices (P1 degrees of freedom).
    pub vertices: Set,
    /// Tetrahedra.
    pub cells: Set,
    /// Cell -> its 4 vertices.
    pub c2v: Map,
    /// Vertex coordinates (dim 3).
    pub coords: Dat<f32>,
    /// The pressure-like field p per vertex.
    pub p: Dat<f32>,
    /// The potential phi per vertex.
    pub phi: Dat<f32>,
    /// The stiffness action, assembled each step (a temporary).
    pub t1: Dat<f32>,
    /// The lumped mass per vertex.
    pub mass: Dat<f32>,
    /// The time step.
    pub dt: f32,
    /// Steps recorded so far.
    pub steps: u64,
    energy: Global<f32>,
    k: Kernels,
}

impl Wave3 {
    /// The simulation on `mesh` (tetrahedra; other cell types are refused), p at its initial
    /// value, phi zero, the lumped mass assembled by a par_loop.
    pub fn on_mesh(ctx: &Context, mesh: Mesh, dt: f32) -> Result<Wave3> {
        if mesh.cell_type != CellType::Tetrahedron {
            return Err(Error::Usage(format!(
                "the 3-D wave runs on tetrahedra; this mesh has {} cells (triangles run in 2-D: \
                 Mesh::triangles and Wave::on_mesh)",
                mesh.cell_type.name()
            )));
        }
        let vertices = Set::new("vertices", mesh.nvertices());
        let cells = Set::new("cells", mesh.ncells());
        let c2v = Map::new("cell_vertices", &cells, &vertices, 4, &mesh.cells)?;
        let xyz: Vec<f32> = mesh.coords.iter().flatten().map(|&c| c as f32).collect();
        let p0: Vec<f32> = mesh.coords.iter().map(|&c| initial_p(c) as f32).collect();
        ctx.constant("dt", dt)?;
        let w = Wave3 {
            coords: ctx.dat("coords", &vertices, 3, &xyz)?,
            p: ctx.dat("p", &vertices, 1, &p0)?,
            phi: ctx.dat_zeros("phi", &vertices, 1)?,
            t1: ctx.dat_zeros("t1", &vertices, 1)?,
            mass: ctx.dat_zeros("mass", &vertices, 1)?,
            energy: ctx.global("energy", &[0.0f32])?,
            ctx: ctx.clone(),
            mesh,
            vertices,
            cells,
            c2v,
            dt,
            steps: 0,
            k: Kernels::of(KERNELS),
        };
        record_mass(ctx, KERNELS, &w.fields())?;
        Ok(w)
    }

    fn fields(&self) -> Fields<'_> {
        Fields {
            vertices: &self.vertices,
            cells: &self.cells,
            c2v: &self.c2v,
            coords: &self.coords,
            p: &self.p,
            phi: &self.phi,
            t1: &self.t1,
            mass: &self.mass,
            energy: &self.energy,
        }
    }

    /// Records one time step (five par_loops; nothing runs yet).
    pub fn step(&mut self) -> Result<()> {
        record_step(&self.ctx, &self.k, &self.fields())?;
        self.steps += 1;
        Ok(())
    }

    /// The discrete energy 1/2 p.M p + 1/2 phi.K phi (runs what it needs and reads it back).
    #[cfg(not(target_arch = "wasm32"))]
    pub fn energy(&self) -> Result<f64> {
        record_energy(&self.ctx, &self.k, &self.fields())?;
        Ok(self.energy.value()?[0] as f64)
    }
}
