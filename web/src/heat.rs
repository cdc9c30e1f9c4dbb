//! The page's implicit mode: steady heat, -div(grad u) = f with u = 0 on the boundary, on the
//! mesh the wave runs on (P1, `parloop::apps::poisson`). Each click adds a Gaussian source to
//! f; the page then solves A u = M f on the device by CG preconditioned with smoothed-
//! aggregation AMG (or Jacobi), with `cg_async` (its residual checks await their readbacks:
//! nothing blocks the browser), from the last solution, and draws u from its device buffer.

use parloop::apps::poisson::assemble;
use parloop::linalg::{Amg, AmgOptions, AmgReport, Mat, SolveOptions, SolveReport, cg_async};
use parloop::mesh::Mesh;
use parloop::mesh::topology::MeshData;
use parloop::{Context, Dat, Kernel, Result, Set};
use wasm_bindgen::prelude::*;
use web_time::Instant;

use super::{App, View, busy, draw, js};

pub(crate) struct Heat {
    /// The matrix, until the first AMG solve moves it into `amg`.
    a: Option<Mat<f32>>,
    amg: Option<Amg<'static, f32>>,
    diagonal: Dat<f32>,
    /// The lumped mass on free vertices, 0 on fixed ones: b = weight f.
    weight: Dat<f32>,
    f_host: Vec<f32>,
    f: Dat<f32>,
    b: Dat<f32>,
    pub u: Dat<f32>,
    /// The largest u of the last solve (the top of the colour scale).
    pub top: f32,
    vertices: Set,
    mesh: Mesh,
}

/// What a solve took.
pub(crate) struct Solved {
    report: SolveReport,
    seconds: f64,
    /// The AMG setup, when this solve built it.
    setup: Option<AmgReport>,
}

/// c = a b, element by element.
fn times() -> Kernel {
    Kernel::new(
        "times",
        "fn times(a: ptr<function, array<f32, 1>>, b: ptr<function, array<f32, 1>>, \
         c: ptr<function, array<f32, 1>>) { (*c)[0] = (*a)[0] * (*b)[0]; }",
    )
}

/// The error of a solve after a failed AMG setup whose matrix could not be assembled again.
fn lost() -> parloop::Error {
    parloop::Error::Usage(
        "the heat mode lost its matrix (an AMG setup failed, then assembling it again did): \
         switch to the wave and back, or reset"
            .to_string(),
    )
}

/// m = max(m, u).
fn largest() -> Kernel {
    Kernel::new(
        "largest",
        "fn largest(u: ptr<function, array<f32, 1>>, m: ptr<function, array<f32, 1>>) \
         { (*m)[0] = max((*m)[0], (*u)[0]); }",
    )
}

/// The stiffness matrix on `mesh` with u = 0 on the boundary's vertices (and on vertices in
/// no cell), and the lumped mass on the free vertices.
fn system(ctx: &Context, mesh: &Mesh) -> Result<(Mat<f32>, Dat<f32>, Set)> {
    let md = MeshData::new(ctx, mesh)?;
    let n = mesh.nvertices();
    let x = md.coords_as::<f32>(ctx)?;
    let one = ctx.dat("one", &md.vertices, 1, &vec![1.0f32; n])?;
    // The load of f = 1 is the lumped mass.
    let (a, mass) = assemble::<f32>(ctx, "heat", &md.cell_vertices, &x, &one)?;
    let mut fixed = vec![true; n];
    mesh.cells.iter().for_each(|&v| fixed[v as usize] = false);
    for &v in md.boundary_vertices.values() {
        fixed[v as usize] = true;
    }
    let rows: Vec<u32> = (0..n as u32).filter(|&v| fixed[v as usize]).collect();
    a.zero_rows(ctx, &rows, 1.0)?;
    let free: Vec<f32> = fixed.iter().map(|&f| if f { 0.0 } else { 1.0 }).collect();
    let free = ctx.dat("free", &md.vertices, 1, &free)?;
    let weight = ctx.dat_zeros::<f32>("weight", &md.vertices, 1)?;
    let args = [mass.read(), free.read(), weight.write()];
    ctx.par_loop(&times(), &md.vertices, &args)?;
    Ok((a, weight, md.vertices.clone()))
}

impl Heat {
    /// The system on `mesh` (triangles, oriented), f = 0, u = 0.
    pub fn new(ctx: &Context, mesh: &Mesh) -> Result<Heat> {
        let (a, weight, vertices) = system(ctx, mesh)?;
        Ok(Heat {
            diagonal: a.diagonal(ctx)?,
            a: Some(a),
            amg: None,
            weight,
            f_host: vec![0.0; mesh.nvertices()],
            f: ctx.dat_zeros::<f32>("f", &vertices, 1)?,
            b: ctx.dat_zeros::<f32>("b", &vertices, 1)?,
            u: ctx.dat_zeros::<f32>("u", &vertices, 1)?,
            top: 0.0,
            vertices,
            mesh: mesh.clone(),
        })
    }

    /// Adds a Gaussian source of total strength `heat` and width `width` at (x, y), in mesh
    /// coordinates, and records b = M f.
    pub fn add_source(
        &mut self,
        ctx: &Context,
        at: (f64, f64),
        heat: f64,
        width: f64,
    ) -> Result<()> {
        let peak = heat / (std::f64::consts::PI * width * width);
        for (f, c) in self.f_host.iter_mut().zip(&self.mesh.coords) {
            let r2 = (c[0] - at.0).powi(2) + (c[1] - at.1).powi(2);
            *f += (peak * (-r2 / (width * width)).exp()) as f32;
        }
        self.load(ctx)
    }

    /// Records b = M f from the host's f.
    fn load(&mut self, ctx: &Context) -> Result<()> {
        self.f.set_data(&self.f_host)?;
        let args = [self.weight.read(), self.f.read(), self.b.write()];
        ctx.par_loop(&times(), &self.vertices, &args)
    }

    /// Solves for u from the last u (a relative residual of 1e-5), preconditioned by AMG
    /// (built at the first AMG solve) or Jacobi; then reads the largest u back.
    pub async fn solve(&mut self, ctx: &Context, amg: bool) -> Result<Solved> {
        let t0 = Instant::now();
        let mut setup = None;
        if amg && self.amg.is_none() {
            let Some(a) = self.a.take() else {
                return Err(lost());
            };
            match Amg::new_async(ctx, a, &AmgOptions::default()).await {
                Ok(m) => {
                    setup = Some(m.report().clone());
                    self.amg = Some(m);
                }
                Err(e) => {
                    // The matrix went with the failed setup. Assembling it again makes new
                    // sets, so the whole system is made again (for Jacobi), its sources kept.
                    let (mesh, f) = (self.mesh.clone(), std::mem::take(&mut self.f_host));
                    *self = Heat::new(ctx, &mesh)?;
                    self.f_host = f;
                    self.load(ctx)?;
                    ctx.flush()?;
                    ctx.upload(&self.u)?;
                    return Err(e);
                }
            }
        }
        let opts = SolveOptions {
            rtol: 1e-5,
            ..SolveOptions::default()
        };
        let a = match (&self.a, &self.amg) {
            (Some(a), _) => a,
            (None, Some(m)) => m.matrix(),
            (None, None) => return Err(lost()),
        };
        let report = match (&self.amg, amg) {
            (Some(m), true) => cg_async(ctx, a, &self.b, &self.u, Some(m), &opts).await?,
            _ => cg_async(ctx, a, &self.b, &self.u, Some(&self.diagonal), &opts).await?,
        };
        let top = ctx.global_max::<f32>("largest u", 1)?;
        ctx.par_loop(&largest(), &self.vertices, &[self.u.read(), top.max()])?;
        self.top = top.value_async().await?[0];
        Ok(Solved {
            report,
            seconds: t0.elapsed().as_secs_f64(),
            setup,
        })
    }
}

#[wasm_bindgen]
impl App {
    /// Switches the implicit mode on (steady heat on the current mesh, u = 0 on its boundary,
    /// no source yet) or off (back to the wave, where it was), and draws.
    pub fn set_implicit(&self, on: bool) -> Result<(), JsValue> {
        let mut guard = self.get_mut()?;
        let s = &mut *guard;
        if on {
            // Made before the mode changes: a failure (a mesh whose matrix does not fit)
            // leaves the page in the wave.
            s.ctx.flush().map_err(js)?;
            let h = Heat::new(&s.ctx, &s.wave.mesh).map_err(js)?;
            s.ctx.flush().map_err(js)?;
            s.ctx.upload(&h.u).map_err(js)?;
            s.heat = Some(h);
        } else {
            s.heat = None;
        }
        draw(s)
    }

    /// Implicit mode: adds a heat source at each (x, y) of `points` (x0, y0, x1, y1, ..., in
    /// [0, 1]^2 of the picture), solves once for the steady temperature by CG on the device,
    /// preconditioned by AMG (`amg`) or Jacobi, and draws it. Resolves to what the solve took
    /// (JSON): `iterations`, `residual` (CG's relative residual where it stopped), `recomputed`
    /// (||b - A u|| / ||b|| afresh), `seconds` (the solve, with the AMG setup when this solve
    /// built it), `setup` (that setup's seconds, or null) and `top` (the largest u, the top of
    /// the colour scale).
    // The borrow is held across the solve's readbacks on purpose: the other entry points see
    // BUSY until it is done.
    #[allow(clippy::await_holding_refcell_ref)]
    pub fn heat_source(&self, points: Vec<f32>, amg: bool) -> js_sys::Promise {
        let state = self.state.clone();
        wasm_bindgen_futures::future_to_promise(async move {
            let mut guard = state.try_borrow_mut().map_err(|_| busy())?;
            let s = &mut *guard;
            let view = View::of(&s.wave.mesh);
            let Some(h) = s.heat.as_mut() else {
                return Err(js(
                    "heat_source: the implicit mode is off (set_implicit(true))",
                ));
            };
            if points.is_empty() || points.len() % 2 != 0 {
                return Err(js(format!(
                    "heat_source: points are (x, y) pairs, and {} numbers were given",
                    points.len()
                )));
            }
            // A source a twentieth of the picture wide, of total strength 0.5.
            let width = 0.05 / view.scale as f64;
            for xy in points.chunks(2) {
                let (mx, my) = view.to_mesh(xy[0], xy[1]);
                h.add_source(&s.ctx, (mx as f64, my as f64), 0.5, width)
                    .map_err(js)?;
            }
            let solved = h.solve(&s.ctx, amg).await;
            // Drawn whatever the solve gave: a failed solve shows its last iterate.
            draw(s)?;
            let Solved {
                report,
                seconds,
                setup,
            } = solved.map_err(js)?;
            let last = report.residuals.last().map_or(f64::NAN, |r| r.1);
            let setup = setup.map_or("null".to_string(), |r| {
                format!("{:e}", r.read_s + r.setup_s + r.upload_s)
            });
            // The scale's top as the legend shows it: at least 0, and a number JSON reads.
            let top = s.heat.as_ref().map_or(0.0, |h| h.top);
            let top = if top.is_finite() { top.max(0.0) } else { 0.0 };
            Ok(JsValue::from_str(&format!(
                "{{\"iterations\": {}, \"residual\": {last:e}, \"recomputed\": {:e}, \
                 \"seconds\": {seconds:e}, \"setup\": {setup}, \"top\": {top:e}}}",
                report.iterations, report.true_residual
            )))
        })
    }
}
