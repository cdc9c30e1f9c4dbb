//! Airfoil, OP2's standard benchmark: a 2D inviscid Euler finite-volume solver
//! on the NACA0012 C-grid, marched to steady state by a predictor/corrector loop. The five
//! kernels in WGSL, the driver, the bytes each kernel moves, and an independent plain-Rust
//! implementation ([`reference`](mod@reference)) in f32 or f64.

use crate::mesh::airfoil::AirfoilMesh;
use crate::{Context, Dat, Global, Kernel, Map, Result, Set};

/// The kernels (Consts gam, gm1, cfl, eps, qinf are compiled in).
pub const KERNELS: &str = r#"
fn save_soln(q: ptr<function, array<f32, 4>>, qold: ptr<function, array<f32, 4>>) {
    for (var n = 0; n < 4; n++) { (*qold)[n] = (*q)[n]; }
}

fn adt_calc(x: ptr<function, array<f32, 8>>, q: ptr<function, array<f32, 4>>, adt: ptr<function, array<f32, 1>>) {
    let ri = 1.0 / (*q)[0];
    let u = ri * (*q)[1];
    let v = ri * (*q)[2];
    let c = sqrt(gam * gm1 * (ri * (*q)[3] - 0.5 * (u * u + v * v)));
    var a = 0.0;
    for (var k = 0; k < 4; k++) {
        let k2 = (k + 1) % 4;
        let dx = (*x)[2 * k2] - (*x)[2 * k];
        let dy = (*x)[2 * k2 + 1] - (*x)[2 * k + 1];
        a += abs(u * dy - v * dx) + c * sqrt(dx * dx + dy * dy);
    }
    (*adt)[0] = a / cfl;
}

fn res_calc(x: ptr<function, array<f32, 4>>, q: ptr<function, array<f32, 8>>,
            adt: ptr<function, array<f32, 2>>, res: ptr<function, array<f32, 8>>) {
    let dx = (*x)[0] - (*x)[2];
    let dy = (*x)[1] - (*x)[3];
    var ri = 1.0 / (*q)[0];
    let p1 = gm1 * ((*q)[3] - 0.5 * ri * ((*q)[1] * (*q)[1] + (*q)[2] * (*q)[2]));
    let vol1 = ri * ((*q)[1] * dy - (*q)[2] * dx);
    ri = 1.0 / (*q)[4];
    let p2 = gm1 * ((*q)[7] - 0.5 * ri * ((*q)[5] * (*q)[5] + (*q)[6] * (*q)[6]));
    let vol2 = ri * ((*q)[5] * dy - (*q)[6] * dx);
    let mu = 0.5 * ((*adt)[0] + (*adt)[1]) * eps;
    var f = 0.5 * (vol1 * (*q)[0] + vol2 * (*q)[4]) + mu * ((*q)[0] - (*q)[4]);
    (*res)[0] += f;
    (*res)[4] -= f;
    f = 0.5 * (vol1 * (*q)[1] + p1 * dy + vol2 * (*q)[5] + p2 * dy) + mu * ((*q)[1] - (*q)[5]);
    (*res)[1] += f;
    (*res)[5] -= f;
    f = 0.5 * (vol1 * (*q)[2] - p1 * dx + vol2 * (*q)[6] - p2 * dx) + mu * ((*q)[2] - (*q)[6]);
    (*res)[2] += f;
    (*res)[6] -= f;
    f = 0.5 * (vol1 * ((*q)[3] + p1) + vol2 * ((*q)[7] + p2)) + mu * ((*q)[3] - (*q)[7]);
    (*res)[3] += f;
    (*res)[7] -= f;
}

fn bres_calc(x: ptr<function, array<f32, 4>>, q: ptr<function, array<f32, 4>>, adt: ptr<function, array<f32, 1>>,
             res: ptr<function, array<f32, 4>>, bound: ptr<function, array<i32, 1>>) {
    let dx = (*x)[0] - (*x)[2];
    let dy = (*x)[1] - (*x)[3];
    var ri = 1.0 / (*q)[0];
    let p1 = gm1 * ((*q)[3] - 0.5 * ri * ((*q)[1] * (*q)[1] + (*q)[2] * (*q)[2]));
    if ((*bound)[0] == 1) {
        (*res)[1] += p1 * dy;
        (*res)[2] += -p1 * dx;
    } else {
        let vol1 = ri * ((*q)[1] * dy - (*q)[2] * dx);
        ri = 1.0 / qinf[0];
        let p2 = gm1 * (qinf[3] - 0.5 * ri * (qinf[1] * qinf[1] + qinf[2] * qinf[2]));
        let vol2 = ri * (qinf[1] * dy - qinf[2] * dx);
        let mu = (*adt)[0] * eps;
        (*res)[0] += 0.5 * (vol1 * (*q)[0] + vol2 * qinf[0]) + mu * ((*q)[0] - qinf[0]);
        (*res)[1] += 0.5 * (vol1 * (*q)[1] + p1 * dy + vol2 * qinf[1] + p2 * dy) + mu * ((*q)[1] - qinf[1]);
        (*res)[2] += 0.5 * (vol1 * (*q)[2] - p1 * dx + vol2 * qinf[2] - p2 * dx) + mu * ((*q)[2] - qinf[2]);
        (*res)[3] += 0.5 * (vol1 * ((*q)[3] + p1) + vol2 * (qinf[3] + p2)) + mu * ((*q)[3] - qinf[3]);
    }
}

fn update_cell(qold: ptr<function, array<f32, 4>>, q: ptr<function, array<f32, 4>>,
               res: ptr<function, array<f32, 4>>, adt: ptr<function, array<f32, 1>>) -> f32 {
    let adti = 1.0 / (*adt)[0];
    var sq = 0.0;
    for (var n = 0; n < 4; n++) {
        let del = adti * (*res)[n];
        (*q)[n] = (*qold)[n] - del;
        (*res)[n] = 0.0;
        sq += del * del;
    }
    return sq;
}

fn update(qold: ptr<function, array<f32, 4>>, q: ptr<function, array<f32, 4>>,
          res: ptr<function, array<f32, 4>>, adt: ptr<function, array<f32, 1>>) {
    update_cell(qold, q, res, adt);
}

fn update_rms(qold: ptr<function, array<f32, 4>>, q: ptr<function, array<f32, 4>>,
              res: ptr<function, array<f32, 4>>, adt: ptr<function, array<f32, 1>>, rms: ptr<function, array<f32, 1>>) {
    (*rms)[0] += update_cell(qold, q, res, adt);
}
"#;

/// Airfoil's constants, computed as the original does from single-precision literals.
#[derive(Clone, Copy, Debug)]
pub struct Constants<T> {
    /// Ratio of specific heats (1.4).
    pub gam: T,
    /// gam - 1.
    pub gm1: T,
    /// CFL number of the local time step.
    pub cfl: T,
    /// Artificial dissipation coefficient.
    pub eps: T,
    /// The far-field state (density, momentum x and y, energy).
    pub qinf: [T; 4],
}

/// Airfoil's constants in T, computed as the original does: from single-precision literals
/// (also in its double build), the arithmetic in T.
pub fn constants<T: reference::Real>() -> Constants<T> {
    let lit = |v: f32| T::of(v as f64);
    let (gam, cfl, eps, mach, p, r) = (lit(1.4), lit(0.9), lit(0.05), lit(0.4), lit(1.0), lit(1.0));
    let gm1 = gam - lit(1.0);
    let u = (gam * p / r).sqrt() * mach;
    let e = p / (r * gm1) + lit(0.5) * u * u;
    Constants {
        gam,
        gm1,
        cfl,
        eps,
        qinf: [r, r * u, lit(0.0), r * e],
    }
}

/// In single precision (the GPU's).
pub fn constants_f32() -> Constants<f32> {
    constants()
}

/// In double precision from the same single-precision literals (as OP2's double build).
pub fn constants_f64() -> Constants<f64> {
    constants()
}

/// Bytes each kernel moves per call (single precision, each datum once; the maps included):
/// the model of docs/background.md, extended to all five kernels.
pub fn bytes_per_call(m: &AirfoilMesh) -> [(&'static str, f64); 5] {
    let (nn, nc, ne, nb) = m.counts();
    let (nn, nc, ne, nb) = (nn as f64, nc as f64, ne as f64, nb as f64);
    [
        ("save_soln", 32.0 * nc),
        ("adt_calc", 8.0 * nn + (16.0 + 16.0 + 4.0) * nc),
        ("res_calc", 8.0 * nn + (32.0 + 20.0) * nc + 16.0 * ne),
        (
            "bres_calc",
            (8.0 + 4.0 + 4.0 + 16.0 + 16.0 + 4.0 + 32.0) * nb,
        ),
        ("update", 68.0 * nc),
    ]
}

struct Kernels {
    save_soln: Kernel,
    adt_calc: Kernel,
    res_calc: Kernel,
    bres_calc: Kernel,
    update: Kernel,
    update_rms: Kernel,
}

/// The mesh as flat arrays, and the initial data.
struct Globals {
    pcell: Vec<u32>,
    pedge: Vec<u32>,
    pecell: Vec<u32>,
    pbedge: Vec<u32>,
    x: Vec<f32>,
    q: Vec<f32>,
    bound: Vec<i32>,
}

impl Globals {
    fn of(m: &AirfoilMesh) -> Globals {
        let flat2 = |v: &[[u32; 2]]| v.iter().flatten().copied().collect::<Vec<u32>>();
        let qinf = constants_f32().qinf;
        Globals {
            pcell: m.cells.iter().flatten().copied().collect(),
            pedge: flat2(&m.edges),
            pecell: flat2(&m.ecells),
            pbedge: flat2(&m.bedges),
            x: m.x
                .iter()
                .flat_map(|p| [p[0] as f32, p[1] as f32])
                .collect(),
            q: (0..m.cells.len()).flat_map(|_| qinf).collect(),
            bound: m.bound.iter().map(|&b| b as i32).collect(),
        }
    }
}

/// The solver's data on a context.
pub struct Airfoil {
    /// The context the solver runs on.
    pub ctx: Context,
    /// Mesh nodes.
    pub nodes: Set,
    /// Quadrilateral cells.
    pub cells: Set,
    /// Interior edges.
    pub edges: Set,
    /// Boundary edges.
    pub bedges: Set,
    /// Cell -> its 4 nodes.
    pub pcell: Map,
    /// Edge -> its 2 nodes.
    pub pedge: Map,
    /// Edge -> its 2 cells.
    pub pecell: Map,
    /// Boundary edge -> its 2 nodes.
    pub pbedge: Map,
    /// Boundary edge -> its cell.
    pub pbecell: Map,
    /// Node coordinates (dim 2).
    pub x: Dat<f32>,
    /// The flow state per cell (dim 4).
    pub q: Dat<f32>,
    /// The state at the start of the iteration (dim 4).
    pub qold: Dat<f32>,
    /// The local time step per cell.
    pub adt: Dat<f32>,
    /// The residual per cell (dim 4), accumulated by res_calc and bres_calc.
    pub res: Dat<f32>,
    /// Each boundary edge's type (1: wall, 2: far field).
    pub bound: Dat<i32>,
    /// On a distributed run: the edge cut of the cells' partition and the distribution's
    /// time in milliseconds.
    pub partition: Option<(usize, f64)>,
    k: Kernels,
}

impl Airfoil {
    /// Declares the sets, maps, data (q = qinf, res = 0) and Consts.
    pub fn new(ctx: &Context, m: &AirfoilMesh) -> Result<Airfoil> {
        let g = Globals::of(m);
        let (nn, nc, ne, nb) = m.counts();
        let nodes = Set::new("nodes", nn);
        let cells = Set::new("cells", nc);
        let edges = Set::new("edges", ne);
        let bedges = Set::new("bedges", nb);
        let pcell = Map::new("pcell", &cells, &nodes, 4, &g.pcell)?;
        let pedge = Map::new("pedge", &edges, &nodes, 2, &g.pedge)?;
        let pecell = Map::new("pecell", &edges, &cells, 2, &g.pecell)?;
        let pbedge = Map::new("pbedge", &bedges, &nodes, 2, &g.pbedge)?;
        let pbecell = Map::new("pbecell", &bedges, &cells, 1, &m.becells)?;
        let dats = [
            ctx.dat("x", &nodes, 2, &g.x)?,
            ctx.dat("q", &cells, 4, &g.q)?,
            ctx.dat_zeros("qold", &cells, 4)?,
            ctx.dat_zeros("adt", &cells, 1)?,
            ctx.dat_zeros("res", &cells, 4)?,
        ];
        let bound = ctx.dat("bound", &bedges, 1, &g.bound)?;
        Airfoil::assemble(
            ctx,
            [nodes, cells, edges, bedges],
            [pcell, pedge, pecell, pbedge, pbecell],
            dats,
            bound,
        )
    }

    /// This rank's part of the solver on `m`, distributed over `ctx`'s ranks with the cells
    /// partitioned by `partitioner` (every rank calls it with the same mesh). On one rank it
    /// is the same as [`Airfoil::new`].
    pub fn distributed(
        ctx: &Context,
        m: &AirfoilMesh,
        partitioner: crate::dist::Partitioner,
    ) -> Result<Airfoil> {
        let g = Globals::of(m);
        let (nn, nc, ne, nb) = m.counts();
        let mut d = crate::dist::Distribution::new(ctx);
        let nodes = d.set("nodes", nn);
        let cells = d.set("cells", nc);
        let edges = d.set("edges", ne);
        let bedges = d.set("bedges", nb);
        let maps = [
            d.map("pcell", cells, nodes, 4, &g.pcell)?,
            d.map("pedge", edges, nodes, 2, &g.pedge)?,
            d.map("pecell", edges, cells, 2, &g.pecell)?,
            d.map("pbedge", bedges, nodes, 2, &g.pbedge)?,
            d.map("pbecell", bedges, cells, 1, &m.becells)?,
        ];
        let zeros = |n: usize| vec![0.0f32; n];
        let dats = [
            d.dat("x", nodes, 2, &g.x)?,
            d.dat("q", cells, 4, &g.q)?,
            d.dat("qold", cells, 4, &zeros(4 * nc))?,
            d.dat("adt", cells, 1, &zeros(nc))?,
            d.dat("res", cells, 4, &zeros(4 * nc))?,
        ];
        let bound = d.dat("bound", bedges, 1, &g.bound)?;
        let mut l = d.distribute(cells, partitioner)?;
        let sets = [nodes, cells, edges, bedges].map(|s| l.set(s));
        let maps = maps.map(|m| l.map(m));
        let [a, b, c, e, f] = dats;
        let dats = [l.dat(a)?, l.dat(b)?, l.dat(c)?, l.dat(e)?, l.dat(f)?];
        let bound = l.dat(bound)?;
        let mut a = Airfoil::assemble(ctx, sets, maps, dats, bound)?;
        a.partition = Some((l.edge_cut, l.partition_ms));
        Ok(a)
    }

    fn assemble(
        ctx: &Context,
        [nodes, cells, edges, bedges]: [Set; 4],
        [pcell, pedge, pecell, pbedge, pbecell]: [Map; 5],
        [x, q, qold, adt, res]: [Dat<f32>; 5],
        bound: Dat<i32>,
    ) -> Result<Airfoil> {
        let c = constants_f32();
        ctx.constant("gam", c.gam)?;
        ctx.constant("gm1", c.gm1)?;
        ctx.constant("cfl", c.cfl)?;
        ctx.constant("eps", c.eps)?;
        ctx.constant("qinf", c.qinf)?;
        let kernel = |name: &str| Kernel::new(name, KERNELS);
        Ok(Airfoil {
            x,
            q,
            qold,
            adt,
            res,
            bound,
            partition: None,
            k: Kernels {
                save_soln: kernel("save_soln"),
                adt_calc: kernel("adt_calc"),
                res_calc: kernel("res_calc"),
                bres_calc: kernel("bres_calc"),
                update: kernel("update"),
                update_rms: kernel("update_rms"),
            },
            ctx: ctx.clone(),
            nodes,
            cells,
            edges,
            bedges,
            pcell,
            pedge,
            pecell,
            pbedge,
            pbecell,
        })
    }

    /// Records one iteration (save_soln, then twice adt_calc, res_calc, bres_calc, update).
    /// With `rms`, the second update adds the sum of squared changes to it (the caller makes it
    /// zero first, and turns it into sqrt(rms / ncells)).
    pub fn iteration(&self, rms: Option<&Global<f32>>) -> Result<()> {
        let (ctx, k) = (&self.ctx, &self.k);
        ctx.par_loop(
            &k.save_soln,
            &self.cells,
            &[self.q.read(), self.qold.write()],
        )?;
        for inner in 0..2 {
            ctx.par_loop(
                &k.adt_calc,
                &self.cells,
                &[
                    self.x.all(&self.pcell).read(),
                    self.q.read(),
                    self.adt.write(),
                ],
            )?;
            ctx.par_loop(
                &k.res_calc,
                &self.edges,
                &[
                    self.x.all(&self.pedge).read(),
                    self.q.all(&self.pecell).read(),
                    self.adt.all(&self.pecell).read(),
                    self.res.all(&self.pecell).inc(),
                ],
            )?;
            ctx.par_loop(
                &k.bres_calc,
                &self.bedges,
                &[
                    self.x.all(&self.pbedge).read(),
                    self.q.at(&self.pbecell, 0).read(),
                    self.adt.at(&self.pbecell, 0).read(),
                    self.res.at(&self.pbecell, 0).inc(),
                    self.bound.read(),
                ],
            )?;
            let args = [
                self.qold.read(),
                self.q.write(),
                self.res.rw(),
                self.adt.read(),
            ];
            match rms.filter(|_| inner == 1) {
                Some(r) => {
                    let mut a = args.to_vec();
                    a.push(r.inc());
                    ctx.par_loop(&k.update_rms, &self.cells, &a)?
                }
                None => ctx.par_loop(&k.update, &self.cells, &args)?,
            }
        }
        Ok(())
    }
}

/// Airfoil in plain Rust, sequential: the independent check of the GPU results, and the CPU
/// side of the benchmark.
pub mod reference {
    use super::{AirfoilMesh, Constants};
    use std::ops::{Add, Div, Mul, Neg, Sub};

    /// f32 or f64.
    pub trait Real:
        Copy
        + PartialOrd
        + Add<Output = Self>
        + Sub<Output = Self>
        + Mul<Output = Self>
        + Div<Output = Self>
        + Neg<Output = Self>
    {
        /// The value of an f64 constant in this type.
        fn of(v: f64) -> Self;
        /// Square root.
        fn sqrt(self) -> Self;
        /// Absolute value.
        fn abs(self) -> Self;
        /// The value as f64.
        fn to_f64(self) -> f64;
    }
    impl Real for f32 {
        fn of(v: f64) -> Self {
            v as f32
        }
        fn sqrt(self) -> Self {
            f32::sqrt(self)
        }
        fn abs(self) -> Self {
            f32::abs(self)
        }
        fn to_f64(self) -> f64 {
            self as f64
        }
    }
    impl Real for f64 {
        fn of(v: f64) -> Self {
            v
        }
        fn sqrt(self) -> Self {
            f64::sqrt(self)
        }
        fn abs(self) -> Self {
            f64::abs(self)
        }
        fn to_f64(self) -> f64 {
            self
        }
    }

    /// The solver state: q, qold, adt, res per cell.
    pub struct State<T> {
        /// The flow state per cell.
        pub q: Vec<[T; 4]>,
        /// The state at the start of the iteration.
        pub qold: Vec<[T; 4]>,
        /// The local time step per cell.
        pub adt: Vec<T>,
        /// The residual per cell.
        pub res: Vec<[T; 4]>,
        c: Constants<T>,
        x: Vec<[T; 2]>,
    }

    impl<T: Real> State<T> {
        /// The far-field state on every cell of `m`, as the GPU solver starts.
        pub fn new(m: &AirfoilMesh, c: Constants<T>) -> State<T> {
            let nc = m.cells.len();
            let zero = T::of(0.0);
            State {
                q: vec![c.qinf; nc],
                qold: vec![[zero; 4]; nc],
                adt: vec![zero; nc],
                res: vec![[zero; 4]; nc],
                x: m.x.iter().map(|p| [T::of(p[0]), T::of(p[1])]).collect(),
                c,
            }
        }

        /// One iteration; returns sqrt(rms / ncells) of its second update.
        pub fn iteration(&mut self, m: &AirfoilMesh) -> f64 {
            self.qold.copy_from_slice(&self.q);
            let mut rms = 0.0;
            for _ in 0..2 {
                self.adt_calc(m);
                self.res_calc(m);
                self.bres_calc(m);
                rms = self.update();
            }
            (rms / m.cells.len() as f64).sqrt()
        }

        fn adt_calc(&mut self, m: &AirfoilMesh) {
            let c = &self.c;
            let half = T::of(0.5);
            for (k, cell) in m.cells.iter().enumerate() {
                let q = self.q[k];
                let ri = T::of(1.0) / q[0];
                let (u, v) = (ri * q[1], ri * q[2]);
                let snd = (c.gam * c.gm1 * (ri * q[3] - half * (u * u + v * v))).sqrt();
                let mut a = T::of(0.0);
                for s in 0..4 {
                    let (p0, p1) = (self.x[cell[s] as usize], self.x[cell[(s + 1) % 4] as usize]);
                    let (dx, dy) = (p1[0] - p0[0], p1[1] - p0[1]);
                    a = a + (u * dy - v * dx).abs() + snd * (dx * dx + dy * dy).sqrt();
                }
                self.adt[k] = a / c.cfl;
            }
        }

        fn res_calc(&mut self, m: &AirfoilMesh) {
            let c = &self.c;
            let (half, one) = (T::of(0.5), T::of(1.0));
            for (e, n) in m.edges.iter().enumerate() {
                let (x1, x2) = (self.x[n[0] as usize], self.x[n[1] as usize]);
                let (dx, dy) = (x1[0] - x2[0], x1[1] - x2[1]);
                let [c1, c2] = m.ecells[e].map(|v| v as usize);
                let (q1, q2) = (self.q[c1], self.q[c2]);
                let ri1 = one / q1[0];
                let p1 = c.gm1 * (q1[3] - half * ri1 * (q1[1] * q1[1] + q1[2] * q1[2]));
                let vol1 = ri1 * (q1[1] * dy - q1[2] * dx);
                let ri2 = one / q2[0];
                let p2 = c.gm1 * (q2[3] - half * ri2 * (q2[1] * q2[1] + q2[2] * q2[2]));
                let vol2 = ri2 * (q2[1] * dy - q2[2] * dx);
                let mu = half * (self.adt[c1] + self.adt[c2]) * c.eps;
                let f = [
                    half * (vol1 * q1[0] + vol2 * q2[0]) + mu * (q1[0] - q2[0]),
                    half * (vol1 * q1[1] + p1 * dy + vol2 * q2[1] + p2 * dy) + mu * (q1[1] - q2[1]),
                    half * (vol1 * q1[2] - p1 * dx + vol2 * q2[2] - p2 * dx) + mu * (q1[2] - q2[2]),
                    half * (vol1 * (q1[3] + p1) + vol2 * (q2[3] + p2)) + mu * (q1[3] - q2[3]),
                ];
                for n in 0..4 {
                    self.res[c1][n] = self.res[c1][n] + f[n];
                    self.res[c2][n] = self.res[c2][n] - f[n];
                }
            }
        }

        fn bres_calc(&mut self, m: &AirfoilMesh) {
            let c = &self.c;
            let (half, one) = (T::of(0.5), T::of(1.0));
            for (b, n) in m.bedges.iter().enumerate() {
                let (x1, x2) = (self.x[n[0] as usize], self.x[n[1] as usize]);
                let (dx, dy) = (x1[0] - x2[0], x1[1] - x2[1]);
                let k = m.becells[b] as usize;
                let q1 = self.q[k];
                let ri = one / q1[0];
                let p1 = c.gm1 * (q1[3] - half * ri * (q1[1] * q1[1] + q1[2] * q1[2]));
                let r = &mut self.res[k];
                if m.bound[b] == 1 {
                    r[1] = r[1] + p1 * dy;
                    r[2] = r[2] + -p1 * dx;
                } else {
                    let q2 = c.qinf;
                    let vol1 = ri * (q1[1] * dy - q1[2] * dx);
                    let ri2 = one / q2[0];
                    let p2 = c.gm1 * (q2[3] - half * ri2 * (q2[1] * q2[1] + q2[2] * q2[2]));
                    let vol2 = ri2 * (q2[1] * dy - q2[2] * dx);
                    let mu = self.adt[k] * c.eps;
                    r[0] = r[0] + half * (vol1 * q1[0] + vol2 * q2[0]) + mu * (q1[0] - q2[0]);
                    r[1] = r[1]
                        + half * (vol1 * q1[1] + p1 * dy + vol2 * q2[1] + p2 * dy)
                        + mu * (q1[1] - q2[1]);
                    r[2] = r[2]
                        + half * (vol1 * q1[2] - p1 * dx + vol2 * q2[2] - p2 * dx)
                        + mu * (q1[2] - q2[2]);
                    r[3] = r[3]
                        + half * (vol1 * (q1[3] + p1) + vol2 * (q2[3] + p2))
                        + mu * (q1[3] - q2[3]);
                }
            }
        }

        /// Returns the sum of squared changes.
        fn update(&mut self) -> f64 {
            let mut rms = 0.0f64;
            for k in 0..self.q.len() {
                let adti = T::of(1.0) / self.adt[k];
                for n in 0..4 {
                    let del = adti * self.res[k][n];
                    self.q[k][n] = self.qold[k][n] - del;
                    self.res[k][n] = T::of(0.0);
                    rms += (del * del).to_f64();
                }
            }
            rms
        }
    }
}
