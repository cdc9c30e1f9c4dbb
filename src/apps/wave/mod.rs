//! The explicit wave equation (Firedrake's wave test), as par_loops, on triangles
//! (2-D) or tetrahedra (3-D):
//!
//! ```text
//! p = exp(-40 |x - c|^2) (c the centre of the unit square or cube), phi = 0;
//! M = lumped P1 mass (area / 3, or volume / 4, per corner)
//! each step:  phi -= dt/2 p;  t1 = 0;  t1 += dt K phi (cells, INC through cell -> vertex);
//!             p += t1 / M;  phi -= dt/2 p
//! ```
//!
//! with K the P1 stiffness matrix (the integral of grad v . grad phi). One [`Wave`] for both
//! dimensions: the step is the same five par_loops, only the cell kernels differ
//! ([`KERNELS`], [`KERNELS_3D`]). Shared by `examples/wave.rs`, the browser demo and the tests;
//! [`reference`](mod@reference) is an independent plain-Rust implementation of the same scheme
//! in f64.

mod kernels;
pub mod reference;
#[cfg(not(target_arch = "wasm32"))]
mod restart;

pub use kernels::{KERNELS, KERNELS_3D};

use crate::mesh::{CellType, Mesh, unit_square};
use crate::{Context, Dat, Error, Global, Kernel, Map, Result, Set};

/// The initial pressure of the seed's program (2-D).
pub fn initial_p(x: f64, y: f64) -> f64 {
    (-40.0 * ((x - 0.5).powi(2) + (y - 0.5).powi(2))).exp()
}

/// The initial pressure in 3-D: the Gaussian of [`initial_p`] around the centre of the unit
/// cube.
pub fn initial_p_3d(x: [f64; 3]) -> f64 {
    let r2: f64 = x.iter().map(|c| (c - 0.5).powi(2)).sum();
    (-40.0 * r2).exp()
}

/// Triangles and tetrahedra run; any other cell type is an error naming it.
fn check_cells(t: CellType) -> Result<()> {
    match t {
        CellType::Triangle | CellType::Tetrahedron => Ok(()),
        CellType::Quadrilateral | CellType::Hexahedron => Err(Error::Usage(format!(
            "the wave runs on triangles (2-D) or tetrahedra (3-D); this mesh has {} cells",
            t.name()
        ))),
    }
}

/// The mesh as the wave runs it: cells positively oriented ([`Mesh::orient`]); other cells
/// than triangles and tetrahedra refused.
fn prepared(mut mesh: Mesh) -> Result<Mesh> {
    check_cells(mesh.cell_type)?;
    mesh.orient()?;
    Ok(mesh)
}

/// p at t = 0 on every vertex of `mesh` (2-D or 3-D by its cells).
fn initial_values(mesh: &Mesh) -> Vec<f32> {
    if mesh.dim() == 2 {
        mesh.coords
            .iter()
            .map(|c| initial_p(c[0], c[1]) as f32)
            .collect()
    } else {
        mesh.coords
            .iter()
            .map(|&c| initial_p_3d(c) as f32)
            .collect()
    }
}

/// The kernels of one kernel set (2-D or 3-D; `pulse` exists in 2-D only).
struct Kernels {
    /// The set's WGSL (one string, so that a fused group includes it once).
    source: &'static str,
    phi_half: Kernel,
    zero: Kernel,
    stiffness: Kernel,
    p_update: Kernel,
    energy_cells: Kernel,
    energy_vertices: Kernel,
    pulse: Kernel,
}

impl Kernels {
    /// The kernels of `source`.
    fn of(source: &'static str) -> Kernels {
        let kernel = |name: &str| Kernel::new(name, source);
        Kernels {
            source,
            phi_half: kernel("phi_half"),
            zero: kernel("zero"),
            stiffness: kernel("stiffness"),
            p_update: kernel("p_update"),
            energy_cells: kernel("energy_cells"),
            energy_vertices: kernel("energy_vertices"),
            pulse: kernel("pulse"),
        }
    }
}

/// The wave simulation on a context, on triangles or tetrahedra.
pub struct Wave {
    /// The context the simulation runs on.
    pub ctx: Context,
    /// The mesh as the wave runs it, triangles turned counter-clockwise (on a run distributed
    /// from a whole mesh: the whole mesh; from a file ([`Wave::from_part`]): the cell type
    /// only, since no rank holds the mesh).
    pub mesh: Mesh,
    /// Mesh vertices (P1 degrees of freedom).
    pub vertices: Set,
    /// Triangles or tetrahedra.
    pub cells: Set,
    /// Cell -> its 3 (triangle) or 4 (tetrahedron) vertices.
    pub c2v: Map,
    /// Vertex coordinates (dim 2 or 3: the mesh's).
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
    /// The pulse's centre and amplitude (2-D only: clicks are a 2-D demo's).
    centre: Option<Global<f32>>,
    k: Kernels,
}

impl Wave {
    /// The n x n unit-square mesh, p and phi at their initial values, the lumped mass
    /// assembled by a par_loop (lazily, like everything else).
    pub fn new(ctx: &Context, n: usize, dt: f32) -> Result<Wave> {
        Wave::on_mesh(ctx, unit_square(n), dt)
    }

    /// The simulation on `mesh`: triangles (turned counter-clockwise first) or tetrahedra;
    /// another cell type is an error naming it. Initial values and mass as [`Wave::new`].
    /// On N ranks (every rank giving the same mesh) each rank runs its part of the cells
    /// partitioned by METIS, as [`Wave::distributed`].
    pub fn on_mesh(ctx: &Context, mesh: Mesh, dt: f32) -> Result<Wave> {
        if ctx.ranks() > 1 {
            return Wave::distributed(ctx, mesh, dt, crate::dist::Partitioner::KWay);
        }
        let mesh = prepared(mesh)?;
        let arity = mesh.cell_type.vertices();
        let vertices = Set::new("vertices", mesh.nvertices());
        let cells = Set::new("cells", mesh.ncells());
        let c2v = Map::new(
            "cell_vertices",
            &cells,
            &vertices,
            arity,
            mesh.cell_vertices(),
        )?;
        let coords = ctx.dat("coords", &vertices, mesh.dim(), &mesh.coords_f32())?;
        let p = ctx.dat("p", &vertices, 1, &initial_values(&mesh))?;
        let phi = ctx.dat_zeros("phi", &vertices, 1)?;
        let t1 = ctx.dat_zeros("t1", &vertices, 1)?;
        let mass = ctx.dat_zeros("mass", &vertices, 1)?;
        Wave::assemble(
            ctx,
            mesh,
            dt,
            [vertices, cells],
            c2v,
            [coords, p, phi, t1, mass],
        )
    }

    /// This rank's part of the wave on `mesh` (triangles or tetrahedra, as
    /// [`Wave::on_mesh`]), distributed over `ctx`'s ranks with the cells partitioned by
    /// `partitioner` (every rank calls it with the same mesh). On one rank it is the same as
    /// [`Wave::on_mesh`].
    pub fn distributed(
        ctx: &Context,
        mesh: Mesh,
        dt: f32,
        partitioner: crate::dist::Partitioner,
    ) -> Result<Wave> {
        let mesh = prepared(mesh)?;
        let arity = mesh.cell_type.vertices();
        let mut d = crate::dist::Distribution::new(ctx);
        let vertices = d.set("vertices", mesh.nvertices());
        let cells = d.set("cells", mesh.ncells());
        let c2v = d.map(
            "cell_vertices",
            cells,
            vertices,
            arity,
            mesh.cell_vertices(),
        )?;
        let zeros = vec![0.0f32; mesh.nvertices()];
        let dats = [
            d.dat("coords", vertices, mesh.dim(), &mesh.coords_f32())?,
            d.dat("p", vertices, 1, &initial_values(&mesh))?,
            d.dat("phi", vertices, 1, &zeros)?,
            d.dat("t1", vertices, 1, &zeros)?,
            d.dat("mass", vertices, 1, &zeros)?,
        ];
        let mut local = d.distribute(cells, partitioner)?;
        let sets = [local.set(vertices), local.set(cells)];
        let c2v = local.map(c2v);
        let [a, b, c, e, f] = dats;
        let dats = [
            local.dat(a)?,
            local.dat(b)?,
            local.dat(c)?,
            local.dat(e)?,
            local.dat(f)?,
        ];
        Wave::assemble(ctx, mesh, dt, sets, c2v, dats)
    }

    /// The Consts, Globals and kernels of the simulation on its data; records the lumped mass.
    fn assemble(
        ctx: &Context,
        mesh: Mesh,
        dt: f32,
        [vertices, cells]: [Set; 2],
        c2v: Map,
        [coords, p, phi, t1, mass]: [Dat<f32>; 5],
    ) -> Result<Wave> {
        ctx.constant("dt", dt)?;
        let energy = ctx.global("energy", &[0.0f32])?;
        let (centre, source) = match mesh.cell_type {
            CellType::Triangle => (Some(ctx.global("pulse", &[0.5f32, 0.5, 0.0])?), KERNELS),
            _ => (None, KERNELS_3D),
        };
        let w = Wave {
            ctx: ctx.clone(),
            energy,
            centre,
            mesh,
            vertices,
            cells,
            c2v,
            coords,
            p,
            phi,
            t1,
            mass,
            dt,
            steps: 0,
            k: Kernels::of(source),
        };
        w.record_mass()?;
        Ok(w)
    }

    /// Records the lumped mass: each cell gives its area (volume) / (its vertices) to each
    /// vertex.
    fn record_mass(&self) -> Result<()> {
        self.ctx.par_loop(
            &Kernel::new("lumped_mass", self.k.source),
            &self.cells,
            &[
                self.coords.all(&self.c2v).read(),
                self.mass.all(&self.c2v).inc(),
            ],
        )
    }

    /// Records one time step (five par_loops; nothing runs yet).
    pub fn step(&mut self) -> Result<()> {
        let (k, v, c, c2v) = (&self.k, &self.vertices, &self.cells, &self.c2v);
        let ctx = &self.ctx;
        ctx.par_loop(&k.phi_half, v, &[self.p.read(), self.phi.rw()])?;
        ctx.par_loop(&k.zero, v, &[self.t1.write()])?;
        ctx.par_loop(
            &k.stiffness,
            c,
            &[
                self.coords.all(c2v).read(),
                self.phi.all(c2v).read(),
                self.t1.all(c2v).inc(),
            ],
        )?;
        ctx.par_loop(
            &k.p_update,
            v,
            &[self.t1.read(), self.mass.read(), self.p.rw()],
        )?;
        ctx.par_loop(&k.phi_half, v, &[self.p.read(), self.phi.rw()])?;
        self.steps += 1;
        Ok(())
    }

    /// Records the loops that compute the discrete energy 1/2 p.M p + 1/2 phi.K phi.
    fn record_energy(&self) -> Result<()> {
        let c2v = &self.c2v;
        self.energy.set(&[0.0])?;
        self.ctx.par_loop(
            &self.k.energy_cells,
            &self.cells,
            &[
                self.coords.all(c2v).read(),
                self.phi.all(c2v).read(),
                self.energy.inc(),
            ],
        )?;
        self.ctx.par_loop(
            &self.k.energy_vertices,
            &self.vertices,
            &[self.p.read(), self.mass.read(), self.energy.inc()],
        )
    }

    #[cfg(not(target_arch = "wasm32"))]
    /// The discrete energy 1/2 p.M p + 1/2 phi.K phi (runs what it needs and reads it back).
    pub fn energy(&self) -> Result<f64> {
        self.record_energy()?;
        Ok(self.energy.value()?[0] as f64)
    }
    /// [`Wave::energy`] without blocking (what the browser needs).
    pub async fn energy_async(&self) -> Result<f64> {
        self.record_energy()?;
        Ok(self.energy.value_async().await?[0] as f64)
    }

    /// Adds a narrow Gaussian pulse of amplitude `amp` to p around (x, y). A wave on
    /// tetrahedra has no pulse (an error).
    pub fn pulse(&mut self, x: f32, y: f32, amp: f32) -> Result<()> {
        let Some(centre) = &self.centre else {
            return Err(Error::Usage(
                "a pulse is added to a wave on triangles (2-D); this one runs on tetrahedra".into(),
            ));
        };
        centre.set(&[x, y, amp])?;
        self.ctx.par_loop(
            &self.k.pulse,
            &self.vertices,
            &[self.coords.read(), self.p.rw(), centre.read()],
        )
    }
}
