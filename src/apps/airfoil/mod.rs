//! Airfoil, OP2's standard benchmark: a 2D inviscid Euler finite-volume solver
//! on the NACA0012 C-grid, marched to steady state by a predictor/corrector loop. The five
//! kernels in WGSL, the driver, the bytes each kernel moves, and an independent plain-Rust
//! implementation ([`reference`](mod@reference)) in f32 or f64.

use crate::mesh::airfoil::AirfoilMesh;
use crate::{Context, Dat, Global, Kernel, Map, Result, Scalar, Set};

/// The precision Airfoil runs in: f32, or f64 (OP2's default; needs an adapter with f64).
pub trait Precision: reference::Real + Scalar {}
impl Precision for f32 {}
impl Precision for f64 {}

/// The kernels in precision R: [`KERNELS`] with every f32 made R.
pub fn kernels<R: Precision>() -> String {
    KERNELS.replace("f32", R::DTYPE.wgsl())
}

/// The kernels in single precision (Consts gam, gm1, cfl, eps, qinf are compiled in; see
/// [`kernels`] for f64).
pub const KERNELS: &str = include_str!("kernels.wgsl");

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

/// Bytes each kernel moves per call in single precision (each datum once; the maps
/// included): the model of docs/background.md, extended to all five kernels.
pub fn bytes_per_call(m: &AirfoilMesh) -> [(&'static str, f64); 5] {
    bytes_per_call_in(m, 4)
}

/// [`bytes_per_call`] with floating-point values of `float_bytes` bytes (8 for f64; the maps
/// and `bound` stay 4-byte integers).
pub fn bytes_per_call_in(m: &AirfoilMesh, float_bytes: usize) -> [(&'static str, f64); 5] {
    let (nn, nc, ne, nb) = m.counts();
    let (nn, nc, ne, nb) = (nn as f64, nc as f64, ne as f64, nb as f64);
    let f = float_bytes as f64;
    [
        // q read, qold written.
        ("save_soln", 8.0 * f * nc),
        // x per node; pcell, q, adt per cell.
        ("adt_calc", 2.0 * f * nn + (16.0 + 5.0 * f) * nc),
        // x per node; q, adt, res read and written per cell; pedge, pecell per edge.
        ("res_calc", 2.0 * f * nn + 13.0 * f * nc + 16.0 * ne),
        // pbedge, pbecell, bound; x of 2 nodes, q, adt, res read and written.
        ("bres_calc", (16.0 + 17.0 * f) * nb),
        // qold, q, res read and written, adt.
        ("update", 17.0 * f * nc),
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
struct Globals<R> {
    pcell: Vec<u32>,
    pedge: Vec<u32>,
    pecell: Vec<u32>,
    pbedge: Vec<u32>,
    x: Vec<R>,
    q: Vec<R>,
    bound: Vec<i32>,
}

impl<R: Precision> Globals<R> {
    fn of(m: &AirfoilMesh) -> Globals<R> {
        let flat2 = |v: &[[u32; 2]]| v.iter().flatten().copied().collect::<Vec<u32>>();
        let qinf = constants::<R>().qinf;
        Globals {
            pcell: m.cells.iter().flatten().copied().collect(),
            pedge: flat2(&m.edges),
            pecell: flat2(&m.ecells),
            pbedge: flat2(&m.bedges),
            x: m.x
                .iter()
                .flat_map(|p| [R::of(p[0]), R::of(p[1])])
                .collect(),
            q: (0..m.cells.len()).flat_map(|_| qinf).collect(),
            bound: m.bound.iter().map(|&b| b as i32).collect(),
        }
    }
}

/// The solver's data on a context, in precision R (f32 unless asked).
pub struct Airfoil<R: Precision = f32> {
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
    pub x: Dat<R>,
    /// The flow state per cell (dim 4).
    pub q: Dat<R>,
    /// The state at the start of the iteration (dim 4).
    pub qold: Dat<R>,
    /// The local time step per cell.
    pub adt: Dat<R>,
    /// The residual per cell (dim 4), accumulated by res_calc and bres_calc.
    pub res: Dat<R>,
    /// Each boundary edge's type (1: wall, 2: far field).
    pub bound: Dat<i32>,
    /// On a distributed run: the edge cut of the cells' partition and the distribution's
    /// time in milliseconds.
    pub partition: Option<(usize, f64)>,
    k: Kernels,
}

impl Airfoil {
    /// Declares the sets, maps, data (q = qinf, res = 0) and Consts, in single precision.
    pub fn new(ctx: &Context, m: &AirfoilMesh) -> Result<Airfoil> {
        Airfoil::build(ctx, m)
    }

    /// This rank's part of the solver on `m`, distributed over `ctx`'s ranks with the cells
    /// partitioned by `partitioner` (every rank calls it with the same mesh), in single
    /// precision. On one rank it is the same as [`Airfoil::new`].
    pub fn distributed(
        ctx: &Context,
        m: &AirfoilMesh,
        partitioner: crate::dist::Partitioner,
    ) -> Result<Airfoil> {
        Airfoil::build_distributed(ctx, m, partitioner)
    }
}

impl<R: Precision> Airfoil<R> {
    /// [`Airfoil::new`] in precision R: `Airfoil::<f64>::build` is OP2's double build (its
    /// Dats and Consts are f64, so the adapter needs f64).
    pub fn build(ctx: &Context, m: &AirfoilMesh) -> Result<Airfoil<R>> {
        let g = Globals::<R>::of(m);
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

    /// [`Airfoil::distributed`] in precision R.
    pub fn build_distributed(
        ctx: &Context,
        m: &AirfoilMesh,
        partitioner: crate::dist::Partitioner,
    ) -> Result<Airfoil<R>> {
        let g = Globals::<R>::of(m);
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
        let zeros = |n: usize| vec![R::of(0.0); n];
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

    /// OP2's grid `m` as a mesh in blocks (every rank declares its block: what
    /// `h5::write` writes as `grid.h5`): sets nodes, cells, edges, bedges; maps pcell, pedge,
    /// pecell, pbedge, pbecell; Dats x and q (free stream) in precision R, bound (i32).
    pub fn block_mesh(ctx: &Context, m: &AirfoilMesh) -> Result<crate::dist::BlockMesh> {
        let g = Globals::<R>::of(m);
        let (nn, nc, ne, nb) = m.counts();
        let mut b = crate::dist::BlockMesh::new(ctx);
        let [nodes, cells, edges, bedges] =
            [("nodes", nn), ("cells", nc), ("edges", ne), ("bedges", nb)].map(|(n, s)| b.set(n, s));
        let block = |b: &crate::dist::BlockMesh, s, v: &[u32], a: usize| {
            let r = b.range(s);
            v[r.start * a..r.end * a].to_vec()
        };
        let maps: [(&str, _, _, usize, &[u32]); 5] = [
            ("pcell", cells, nodes, 4, &g.pcell),
            ("pedge", edges, nodes, 2, &g.pedge),
            ("pecell", edges, cells, 2, &g.pecell),
            ("pbedge", bedges, nodes, 2, &g.pbedge),
            ("pbecell", bedges, cells, 1, &m.becells),
        ];
        for (name, from, to, arity, values) in maps {
            let rows = block(&b, from, values, arity);
            b.map(name, from, to, arity, rows)?;
        }
        let (rn, rc, rb) = (b.range(nodes), b.range(cells), b.range(bedges));
        b.dat("x", nodes, 2, &g.x[rn.start * 2..rn.end * 2])?;
        b.dat("q", cells, 4, &g.q[rc.start * 4..rc.end * 4])?;
        b.dat("bound", bedges, 1, &g.bound[rb.clone()])?;
        Ok(b)
    }

    /// This rank's part of the solver on a mesh distributed from blocks (a file read with
    /// `h5::MeshFile`, or a checkpoint): the sets, maps and Dats of [`Airfoil::block_mesh`];
    /// qold, adt and res start at zero (an iteration writes them before it reads them).
    pub fn from_part(ctx: &Context, part: &mut crate::dist::Distributed) -> Result<Airfoil<R>> {
        let sets = ["nodes", "cells", "edges", "bedges"].map(|n| part.set_named(n));
        let [nodes, cells, edges, bedges] = sets;
        let sets = [nodes?, cells?, edges?, bedges?];
        let maps = ["pcell", "pedge", "pecell", "pbedge", "pbecell"].map(|n| part.map_named(n));
        let [a, b, c, d, e] = maps;
        let maps = [a?, b?, c?, d?, e?];
        let zeros = |name: &str, dim: usize| ctx.dat_zeros::<R>(name, &sets[1], dim);
        let dats = [
            part.dat_named::<R>("x")?,
            part.dat_named::<R>("q")?,
            zeros("qold", 4)?,
            zeros("adt", 1)?,
            zeros("res", 4)?,
        ];
        let bound = part.dat_named::<i32>("bound")?;
        let mut a = Airfoil::assemble(ctx, sets, maps, dats, bound)?;
        a.partition = Some((part.edge_cut, part.partition_ms));
        Ok(a)
    }

    /// A checkpoint of the solver's state (the mesh, x, q and bound) at `iteration`: a mesh
    /// file that [`Airfoil::from_part`] restarts from, on any number of ranks.
    #[cfg(all(feature = "hdf5", not(target_arch = "wasm32")))]
    pub fn checkpoint(&self, iteration: u64) -> Result<crate::h5::Checkpoint> {
        let mut c = crate::h5::Checkpoint::new(&self.ctx);
        for m in [
            &self.pcell,
            &self.pedge,
            &self.pecell,
            &self.pbedge,
            &self.pbecell,
        ] {
            c.map(m);
        }
        c.dat(&self.x)?
            .dat(&self.q)?
            .dat(&self.bound)?
            .step(iteration);
        Ok(c)
    }

    fn assemble(
        ctx: &Context,
        [nodes, cells, edges, bedges]: [Set; 4],
        [pcell, pedge, pecell, pbedge, pbecell]: [Map; 5],
        [x, q, qold, adt, res]: [Dat<R>; 5],
        bound: Dat<i32>,
    ) -> Result<Airfoil<R>> {
        let c = constants::<R>();
        ctx.constant("gam", c.gam)?;
        ctx.constant("gm1", c.gm1)?;
        ctx.constant("cfl", c.cfl)?;
        ctx.constant("eps", c.eps)?;
        ctx.constant("qinf", c.qinf)?;
        let source = kernels::<R>();
        let kernel = |name: &str| Kernel::new(name, source.as_str());
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
    pub fn iteration(&self, rms: Option<&Global<R>>) -> Result<()> {
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
pub mod reference;
