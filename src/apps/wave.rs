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

/// The kernels on vertices, the same in 2-D and 3-D (a macro, so that both kernel sets are
/// string literals).
macro_rules! vertex_kernels {
    () => {
        r#"
fn phi_half(p: ptr<function, array<f32, 1>>, phi: ptr<function, array<f32, 1>>) {
    (*phi)[0] -= 0.5 * dt * (*p)[0];
}

fn zero(t: ptr<function, array<f32, 1>>) {
    (*t)[0] = 0.0;
}

fn p_update(t: ptr<function, array<f32, 1>>, m: ptr<function, array<f32, 1>>, p: ptr<function, array<f32, 1>>) {
    (*p)[0] += (*t)[0] / (*m)[0];
}

fn energy_vertices(p: ptr<function, array<f32, 1>>, m: ptr<function, array<f32, 1>>, e: ptr<function, array<f32, 1>>) {
    (*e)[0] += 0.5 * (*m)[0] * (*p)[0] * (*p)[0];
}
"#
    };
}
pub(crate) use vertex_kernels;

/// The WGSL kernels (the Const `dt` is compiled in).
pub const KERNELS: &str = concat!(
    vertex_kernels!(),
    r#"
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

fn stiffness(x: ptr<function, array<f32, 6>>, phi: ptr<function, array<f32, 3>>, t: ptr<function, array<f32, 3>>) {
    var g: array<vec2<f32>, 3>;
    let area = geometry(x, &g);
    let grad = g[0] * (*phi)[0] + g[1] * (*phi)[1] + g[2] * (*phi)[2];
    for (var a = 0; a < 3; a++) { (*t)[a] += dt * area * dot(g[a], grad); }
}

fn energy_cells(x: ptr<function, array<f32, 6>>, phi: ptr<function, array<f32, 3>>, e: ptr<function, array<f32, 1>>) {
    var g: array<vec2<f32>, 3>;
    let area = geometry(x, &g);
    let grad = g[0] * (*phi)[0] + g[1] * (*phi)[1] + g[2] * (*phi)[2];
    (*e)[0] += 0.5 * area * dot(grad, grad);
}

fn pulse(x: ptr<function, array<f32, 2>>, p: ptr<function, array<f32, 1>>, c: ptr<function, array<f32, 3>>) {
    let d = vec2<f32>((*x)[0] - (*c)[0], (*x)[1] - (*c)[1]);
    (*p)[0] += (*c)[2] * exp(-400.0 * dot(d, d));
}
"#
);

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

/// The kernels of one kernel set (2-D or 3-D; `pulse` exists in 2-D only).
pub(crate) struct Kernels {
    phi_half: Kernel,
    zero: Kernel,
    stiffness: Kernel,
    p_update: Kernel,
    energy_cells: Kernel,
    energy_vertices: Kernel,
    pulse: Kernel,
}

impl Kernels {
    /// The kernels of `source` (one string, so that a fused group includes it once).
    pub(crate) fn of(source: &'static str) -> Kernels {
        let kernel = |name: &str| Kernel::new(name, source);
        Kernels {
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

/// What the loops of a step touch: the 2-D and the 3-D wave share the step.
pub(crate) struct Fields<'a> {
    pub vertices: &'a Set,
    pub cells: &'a Set,
    pub c2v: &'a Map,
    pub coords: &'a Dat<f32>,
    pub p: &'a Dat<f32>,
    pub phi: &'a Dat<f32>,
    pub t1: &'a Dat<f32>,
    pub mass: &'a Dat<f32>,
    pub energy: &'a Global<f32>,
}

/// Records the lumped mass: each cell gives its area (volume) / (its vertices) to each vertex.
pub(crate) fn record_mass(ctx: &Context, source: &'static str, f: &Fields) -> Result<()> {
    ctx.par_loop(
        &Kernel::new("lumped_mass", source),
        f.cells,
        &[f.coords.all(f.c2v).read(), f.mass.all(f.c2v).inc()],
    )
}

/// Records one time step (five par_loops; nothing runs yet).
pub(crate) fn record_step(ctx: &Context, k: &Kernels, f: &Fields) -> Result<()> {
    let (v, c) = (f.vertices, f.cells);
    ctx.par_loop(&k.phi_half, v, &[f.p.read(), f.phi.rw()])?;
    ctx.par_loop(&k.zero, v, &[f.t1.write()])?;
    ctx.par_loop(
        &k.stiffness,
        c,
        &[
            f.coords.all(f.c2v).read(),
            f.phi.all(f.c2v).read(),
            f.t1.all(f.c2v).inc(),
        ],
    )?;
    ctx.par_loop(&k.p_update, v, &[f.t1.read(), f.mass.read(), f.p.rw()])?;
    ctx.par_loop(&k.phi_half, v, &[f.p.read(), f.phi.rw()])
}

/// Records the loops that compute the discrete energy 1/2 p.M p + 1/2 phi.K phi.
pub(crate) fn record_energy(ctx: &Context, k: &Kernels, f: &Fields) -> Result<()> {
    f.energy.set(&[0.0])?;
    ctx.par_loop(
        &k.energy_cells,
        f.cells,
        &[
            f.coords.all(f.c2v).read(),
            f.phi.all(f.c2v).read(),
            f.energy.inc(),
        ],
    )?;
    ctx.par_loop(
        &k.energy_vertices,
        f.vertices,
        &[f.p.read(), f.mass.read(), f.energy.inc()],
    )
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
        let energy = ctx.global("energy", &[0.0f32])?;
        let w = Wave {
            ctx: ctx.clone(),
            energy,
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

    fn record_energy(&self) -> Result<()> {
        record_energy(&self.ctx, &self.k, &self.fields())
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

/// The same scheme in plain Rust, f64, one core: the independent reference, on triangles and
/// on tetrahedra.
pub mod reference {
    use super::{TriMesh, initial_p};
    use crate::mesh::{CellType, Mesh};

    /// Per cell: its area (volume) and the gradients of its P1 basis functions (z = 0 in 2-D).
    type Geometry = (f64, Vec<[f64; 3]>);

    fn sub(a: [f64; 3], b: [f64; 3]) -> [f64; 3] {
        [a[0] - b[0], a[1] - b[1], a[2] - b[2]]
    }
    fn dot(a: [f64; 3], b: [f64; 3]) -> f64 {
        a[0] * b[0] + a[1] * b[1] + a[2] * b[2]
    }
    fn cross(a: [f64; 3], b: [f64; 3]) -> [f64; 3] {
        [
            a[1] * b[2] - a[2] * b[1],
            a[2] * b[0] - a[0] * b[2],
            a[0] * b[1] - a[1] * b[0],
        ]
    }
    /// The first gradient makes the sum zero (the basis functions sum to one).
    fn with_first(rest: [[f64; 3]; 3], n: usize) -> Vec<[f64; 3]> {
        let mut g = vec![[0.0; 3]; n];
        for (k, r) in rest.iter().take(n - 1).enumerate() {
            g[k + 1] = *r;
            g[0] = sub(g[0], *r);
        }
        g
    }

    fn triangle(x: [[f64; 3]; 3]) -> Geometry {
        let (d1, d2) = (sub(x[1], x[0]), sub(x[2], x[0]));
        let det = d1[0] * d2[1] - d1[1] * d2[0];
        let rest = [
            [d2[1] / det, -d2[0] / det, 0.0],
            [-d1[1] / det, d1[0] / det, 0.0],
            [0.0; 3],
        ];
        (0.5 * det.abs(), with_first(rest, 3))
    }

    fn tetrahedron(x: [[f64; 3]; 4]) -> Geometry {
        let (d1, d2, d3) = (sub(x[1], x[0]), sub(x[2], x[0]), sub(x[3], x[0]));
        let det = dot(d1, cross(d2, d3));
        let scale = |v: [f64; 3]| v.map(|c| c / det);
        let rest = [
            scale(cross(d2, d3)),
            scale(cross(d3, d1)),
            scale(cross(d1, d2)),
        ];
        (det.abs() / 6.0, with_first(rest, 4))
    }

    /// The state of the reference solver.
    pub struct State {
        /// p per vertex.
        pub p: Vec<f64>,
        /// phi per vertex.
        pub phi: Vec<f64>,
        /// The lumped mass per vertex.
        pub mass: Vec<f64>,
        geo: Vec<Geometry>,
        /// Vertices per cell.
        arity: usize,
        cells: Vec<u32>,
        t1: Vec<f64>,
    }

    impl State {
        /// The initial state on triangle mesh `m` (as the GPU version starts).
        pub fn new(m: &TriMesh) -> State {
            let geo = m
                .cells
                .iter()
                .map(|c| {
                    triangle(c.map(|i| {
                        let [x, y] = m.coords[i as usize];
                        [x, y, 0.0]
                    }))
                })
                .collect();
            let p = m.coords.iter().map(|c| initial_p(c[0], c[1])).collect();
            State::build(p, geo, 3, m.cells.iter().flatten().copied().collect())
        }

        /// The initial state on a mesh of tetrahedra (as [`super::super::wave3::Wave3`] starts).
        /// Other cell types are refused.
        pub fn tetrahedra(m: &Mesh) -> Result<State, String> {
            if m.cell_type != CellType::Tetrahedron {
                return Err(format!(
                    "the 3-D wave needs tetrahedra, not {}",
                    m.cell_type.name()
                ));
            }
            let geo = m
                .cells
                .chunks_exact(4)
                .map(|c| tetrahedron([0, 1, 2, 3].map(|k| m.coords[c[k] as usize])))
                .collect();
            let p = m
                .coords
                .iter()
                .map(|&c| super::super::wave3::initial_p(c))
                .collect();
            Ok(State::build(p, geo, 4, m.cells.clone()))
        }

        fn build(p: Vec<f64>, geo: Vec<Geometry>, arity: usize, cells: Vec<u32>) -> State {
            let n = p.len();
            let mut mass = vec![0.0; n];
            for (c, (vol, _)) in cells.chunks_exact(arity).zip(&geo) {
                for &v in c {
                    mass[v as usize] += vol / arity as f64;
                }
            }
            State {
                p,
                phi: vec![0.0; n],
                mass,
                geo,
                arity,
                cells,
                t1: vec![0.0; n],
            }
        }

        fn cell(&self, k: usize) -> &[u32] {
            &self.cells[k * self.arity..(k + 1) * self.arity]
        }

        fn grad(&self, k: usize, phi: &[f64]) -> [f64; 3] {
            let (_, g) = &self.geo[k];
            let mut s = [0.0; 3];
            for (ga, &v) in g.iter().zip(self.cell(k)) {
                for d in 0..3 {
                    s[d] += ga[d] * phi[v as usize];
                }
            }
            s
        }

        /// One time step of `dt` (the same five updates as [`super::Wave::step`]).
        pub fn step(&mut self, dt: f64) {
            for (phi, p) in self.phi.iter_mut().zip(&self.p) {
                *phi -= 0.5 * dt * p;
            }
            self.t1.iter_mut().for_each(|t| *t = 0.0);
            for k in 0..self.geo.len() {
                let gr = self.grad(k, &self.phi);
                let (vol, g) = &self.geo[k];
                for (a, &v) in self.cells[k * self.arity..(k + 1) * self.arity]
                    .iter()
                    .enumerate()
                {
                    self.t1[v as usize] += dt * vol * dot(g[a], gr);
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
            let potential: f64 = (0..self.geo.len())
                .map(|k| {
                    let g = self.grad(k, &self.phi);
                    0.5 * self.geo[k].0 * dot(g, g)
                })
                .sum();
            kinetic + potential
        }
    }
}
