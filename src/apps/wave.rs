//! The explicit wave equation of seed 001 (Firedrake's wave test), as par_loops:
//!
//! ```text
//! p = exp(-40 ((x - 1/2)^2 + (y - 1/2)^2)), phi = 0; M = lumped P1 mass (area / 3 per corner)
//! each step:  phi -= dt/2 p;  t1 = 0;  t1 += dt K phi (cells, INC through cell -> vertex);
//!             p += t1 / M;  phi -= dt/2 p
//! ```
//!
//! with K the P1 stiffness matrix (the integral of grad v . grad phi). Shared by
//! `examples/wave.rs`, the browser demo and the tests; [`reference`](mod@reference) is an independent
//! plain-Rust implementation of the same scheme in f64.

use crate::mesh::{TriMesh, unit_square};
use crate::{Context, Dat, Global, Kernel, Map, Result, Set};

/// The WGSL kernels (the Const `dt` is compiled in).
pub const KERNELS: &str = r#"
fn geometry(x: ptr<function, array<f32, 6>>, g: ptr<function, array<vec2<f32>, 3>>) -> f32 {
    let x0 = vec2<f32>((*x)[0], (*x)[1]);
    let d1 = vec2<f32>((*x)[2], (*x)[3]) - x0;
    let d2 = vec2<f32>((*x)[4], (*x)[5]) - x0;
    let det = d1.x * d2.y - d1.y * d2.x;
    (*g)[1] = vec2<f32>(d2.y, -d2.x) / det;
    (*g)[2] = vec2<f32>(-d1.y, d1.x) / det;
    (*g)[0] = -(*g)[1] - (*g)[2];
    return 0.5 * abs(det);
}

fn lumped_mass(x: ptr<function, array<f32, 6>>, m: ptr<function, array<f32, 3>>) {
    var g: array<vec2<f32>, 3>;
    let area = geometry(x, &g);
    for (var a = 0; a < 3; a++) { (*m)[a] += area / 3.0; }
}

fn phi_half(p: ptr<function, array<f32, 1>>, phi: ptr<function, array<f32, 1>>) {
    (*phi)[0] -= 0.5 * dt * (*p)[0];
}

fn zero(t: ptr<function, array<f32, 1>>) {
    (*t)[0] = 0.0;
}

fn stiffness(x: ptr<function, array<f32, 6>>, phi: ptr<function, array<f32, 3>>, t: ptr<function, array<f32, 3>>) {
    var g: array<vec2<f32>, 3>;
    let area = geometry(x, &g);
    let grad = g[0] * (*phi)[0] + g[1] * (*phi)[1] + g[2] * (*phi)[2];
    for (var a = 0; a < 3; a++) { (*t)[a] += dt * area * dot(g[a], grad); }
}

fn p_update(t: ptr<function, array<f32, 1>>, m: ptr<function, array<f32, 1>>, p: ptr<function, array<f32, 1>>) {
    (*p)[0] += (*t)[0] / (*m)[0];
}

fn energy_cells(x: ptr<function, array<f32, 6>>, phi: ptr<function, array<f32, 3>>, e: ptr<function, array<f32, 1>>) {
    var g: array<vec2<f32>, 3>;
    let area = geometry(x, &g);
    let grad = g[0] * (*phi)[0] + g[1] * (*phi)[1] + g[2] * (*phi)[2];
    (*e)[0] += 0.5 * area * dot(grad, grad);
}

fn energy_vertices(p: ptr<function, array<f32, 1>>, m: ptr<function, array<f32, 1>>, e: ptr<function, array<f32, 1>>) {
    (*e)[0] += 0.5 * (*m)[0] * (*p)[0] * (*p)[0];
}

fn pulse(x: ptr<function, array<f32, 2>>, p: ptr<function, array<f32, 1>>, c: ptr<function, array<f32, 3>>) {
    let d = vec2<f32>((*x)[0] - (*c)[0], (*x)[1] - (*c)[1]);
    (*p)[0] += (*c)[2] * exp(-400.0 * dot(d, d));
}
"#;

/// p at t = 0 on every vertex of `mesh`.
fn initial_values(mesh: &TriMesh) -> Vec<f32> {
    mesh.coords
        .iter()
        .map(|c| initial_p(c[0], c[1]) as f32)
        .collect()
}

/// The initial pressure of the seed's program.
pub fn initial_p(x: f64, y: f64) -> f64 {
    (-40.0 * ((x - 0.5).powi(2) + (y - 0.5).powi(2))).exp()
}

struct Kernels {
    phi_half: Kernel,
    zero: Kernel,
    stiffness: Kernel,
    p_update: Kernel,
    energy_cells: Kernel,
    energy_vertices: Kernel,
    pulse: Kernel,
}

/// The wave simulation on a context.
pub struct Wave {
    /// The context the simulation runs on.
    pub ctx: Context,
    /// The triangle mesh (on a distributed run: the whole mesh, for output on rank 0).
    pub mesh: TriMesh,
    /// Mesh vertices (P1 degrees of freedom).
    pub vertices: Set,
    /// Triangles.
    pub cells: Set,
    /// Cell -> its 3 vertices.
    pub c2v: Map,
    /// Vertex coordinates (dim 2).
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
    centre: Global<f32>,
    k: Kernels,
}

impl Wave {
    /// The n x n unit-square mesh, p and phi at their initial values, the lumped mass
    /// assembled by a par_loop (lazily, like everything else).
    pub fn new(ctx: &Context, n: usize, dt: f32) -> Result<Wave> {
        let mesh = unit_square(n);
        Wave::on_mesh(ctx, mesh, dt)
    }

    /// The simulation on a given triangle mesh (initial values and mass as [`Wave::new`]).
    pub fn on_mesh(ctx: &Context, mesh: TriMesh, dt: f32) -> Result<Wave> {
        let vertices = Set::new("vertices", mesh.nvertices());
        let cells = Set::new("cells", mesh.ncells());
        let c2v = Map::new("cell_vertices", &cells, &vertices, 3, &mesh.cell_vertices())?;
        let coords = ctx.dat("coords", &vertices, 2, &mesh.coords_f32())?;
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

    /// This rank's part of the wave on `mesh`, distributed over `ctx`'s ranks with the cells
    /// partitioned by `partitioner` (every rank calls it with the same mesh). On one rank it
    /// is the same as [`Wave::on_mesh`].
    pub fn distributed(
        ctx: &Context,
        mesh: TriMesh,
        dt: f32,
        partitioner: crate::dist::Partitioner,
    ) -> Result<Wave> {
        let mut d = crate::dist::Distribution::new(ctx);
        let vertices = d.set("vertices", mesh.nvertices());
        let cells = d.set("cells", mesh.ncells());
        let c2v = d.map("cell_vertices", cells, vertices, 3, &mesh.cell_vertices())?;
        let zeros = vec![0.0f32; mesh.nvertices()];
        let dats = [
            d.dat("coords", vertices, 2, &mesh.coords_f32())?,
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

    fn assemble(
        ctx: &Context,
        mesh: TriMesh,
        dt: f32,
        [vertices, cells]: [Set; 2],
        c2v: Map,
        [coords, p, phi, t1, mass]: [Dat<f32>; 5],
    ) -> Result<Wave> {
        ctx.constant("dt", dt)?;
        let kernel = |name: &str| Kernel::new(name, KERNELS);
        let k = Kernels {
            phi_half: kernel("phi_half"),
            zero: kernel("zero"),
            stiffness: kernel("stiffness"),
            p_update: kernel("p_update"),
            energy_cells: kernel("energy_cells"),
            energy_vertices: kernel("energy_vertices"),
            pulse: kernel("pulse"),
        };
        ctx.par_loop(
            &kernel("lumped_mass"),
            &cells,
            &[coords.all(&c2v).read(), mass.all(&c2v).inc()],
        )?;
        Ok(Wave {
            ctx: ctx.clone(),
            energy: ctx.global("energy", &[0.0f32])?,
            centre: ctx.global("pulse", &[0.5f32, 0.5, 0.0])?,
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
            k,
        })
    }

    /// Records one time step (five par_loops; nothing runs yet).
    pub fn step(&mut self) -> Result<()> {
        let (ctx, k) = (&self.ctx, &self.k);
        let (v, c) = (&self.vertices, &self.cells);
        ctx.par_loop(&k.phi_half, v, &[self.p.read(), self.phi.rw()])?;
        ctx.par_loop(&k.zero, v, &[self.t1.write()])?;
        ctx.par_loop(
            &k.stiffness,
            c,
            &[
                self.coords.all(&self.c2v).read(),
                self.phi.all(&self.c2v).read(),
                self.t1.all(&self.c2v).inc(),
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
        self.energy.set(&[0.0])?;
        self.ctx.par_loop(
            &self.k.energy_cells,
            &self.cells,
            &[
                self.coords.all(&self.c2v).read(),
                self.phi.all(&self.c2v).read(),
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

    /// Adds a narrow Gaussian pulse of amplitude `amp` to p around (x, y).
    pub fn pulse(&mut self, x: f32, y: f32, amp: f32) -> Result<()> {
        self.centre.set(&[x, y, amp])?;
        self.ctx.par_loop(
            &self.k.pulse,
            &self.vertices,
            &[self.coords.read(), self.p.rw(), self.centre.read()],
        )
    }
}

/// The same scheme in plain Rust, f64, one core: the independent reference.
pub mod reference {
    use super::{TriMesh, initial_p};

    /// Per cell: area and the gradients of the three P1 basis functions.
    fn geometry(m: &TriMesh) -> Vec<(f64, [[f64; 2]; 3])> {
        m.cells
            .iter()
            .map(|c| {
                let [a, b, d] = c.map(|i| m.coords[i as usize]);
                let d1 = [b[0] - a[0], b[1] - a[1]];
                let d2 = [d[0] - a[0], d[1] - a[1]];
                let det = d1[0] * d2[1] - d1[1] * d2[0];
                let g1 = [d2[1] / det, -d2[0] / det];
                let g2 = [-d1[1] / det, d1[0] / det];
                let g0 = [-g1[0] - g2[0], -g1[1] - g2[1]];
                (0.5 * det.abs(), [g0, g1, g2])
            })
            .collect()
    }

    /// The state of the reference solver.
    pub struct State {
        /// p per vertex.
        pub p: Vec<f64>,
        /// phi per vertex.
        pub phi: Vec<f64>,
        /// The lumped mass per vertex.
        pub mass: Vec<f64>,
        geo: Vec<(f64, [[f64; 2]; 3])>,
        cells: Vec<[u32; 3]>,
        t1: Vec<f64>,
    }

    impl State {
        /// The initial state on mesh `m` (as the GPU version starts).
        pub fn new(m: &TriMesh) -> State {
            let geo = geometry(m);
            let mut mass = vec![0.0; m.nvertices()];
            for (c, (area, _)) in m.cells.iter().zip(&geo) {
                for &v in c {
                    mass[v as usize] += area / 3.0;
                }
            }
            State {
                p: m.coords.iter().map(|c| initial_p(c[0], c[1])).collect(),
                phi: vec![0.0; m.nvertices()],
                mass,
                geo,
                cells: m.cells.clone(),
                t1: vec![0.0; m.nvertices()],
            }
        }

        fn grad(&self, k: usize, phi: &[f64]) -> [f64; 2] {
            let (_, g) = &self.geo[k];
            let c = self.cells[k];
            let mut s = [0.0; 2];
            for a in 0..3 {
                s[0] += g[a][0] * phi[c[a] as usize];
                s[1] += g[a][1] * phi[c[a] as usize];
            }
            s
        }

        /// One time step of `dt` (the same five updates as [`super::Wave::step`]).
        pub fn step(&mut self, dt: f64) {
            for (phi, p) in self.phi.iter_mut().zip(&self.p) {
                *phi -= 0.5 * dt * p;
            }
            self.t1.iter_mut().for_each(|t| *t = 0.0);
            for k in 0..self.cells.len() {
                let gr = self.grad(k, &self.phi);
                let (area, g) = &self.geo[k];
                for a in 0..3 {
                    self.t1[self.cells[k][a] as usize] +=
                        dt * area * (g[a][0] * gr[0] + g[a][1] * gr[1]);
                }
            }
            for ((p, t), m) in self.p.iter_mut().zip(&self.t1).zip(&self.mass) {
                *p += t / m;
            }
            for (phi, p) in self.phi.iter_mut().zip(&self.p) {
                *phi -= 0.5 * dt * p;
            }
        }

        /// 1/2 p.M p + 1/2 phi.K phi.
        pub fn energy(&self) -> f64 {
            let kinetic: f64 = self
                .p
                .iter()
                .zip(&self.mass)
                .map(|(p, m)| 0.5 * m * p * p)
                .sum();
            let potential: f64 = (0..self.cells.len())
                .map(|k| {
                    let g = self.grad(k, &self.phi);
                    0.5 * self.geo[k].0 * (g[0] * g[0] + g[1] * g[1])
                })
                .sum();
            kinetic + potential
        }
    }
}
