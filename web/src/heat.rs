//! The page's implicit mode: steady heat, -div(grad u) = f with u = 0 on the boundary, on the
//! mesh the wave runs on (P1, `parloop::apps::poisson`). Each click adds a Gaussian source to
//! f; the page then solves A u = M f by Jacobi-CG on the device with `cg_async` (its residual
//! checks await their readbacks: nothing blocks the browser), from the last solution, and
//! draws u from its device buffer.

use parloop::apps::poisson::assemble;
use parloop::linalg::{Mat, SolveOptions, SolveReport, cg_async};
use parloop::mesh::Mesh;
use parloop::mesh::topology::MeshData;
use parloop::{Context, Dat, Kernel, Result, Set};
use wasm_bindgen::prelude::*;

use super::{App, View, busy, draw, js};

pub(crate) struct Heat {
    a: Mat<f32>,
    diagonal: Dat<f32>,
    /// The lumped mass on free vertices, 0 on fixed ones: b = weight f.
    weight: Dat<f32>,
    f_host: Vec<f32>,
    f: Dat<f32>,
    b: Dat<f32>,
    pub u: Dat<f32>,
    vertices: Set,
    coords: Vec<[f64; 3]>,
}

/// c = a b, element by element.
fn times() -> Kernel {
    Kernel::new(
        "times",
        "fn times(a: ptr<function, array<f32, 1>>, b: ptr<function, array<f32, 1>>, \
         c: ptr<function, array<f32, 1>>) { (*c)[0] = (*a)[0] * (*b)[0]; }",
    )
}

impl Heat {
    /// The system on `mesh` (triangles, oriented): the stiffness matrix with u = 0 on the
    /// boundary's vertices (and on vertices in no cell), f = 0, u = 0.
    pub fn new(ctx: &Context, mesh: &Mesh) -> Result<Heat> {
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
        let diagonal = a.diagonal(ctx)?;
        Ok(Heat {
            a,
            diagonal,
            weight,
            f_host: vec![0.0; n],
            f: ctx.dat_zeros::<f32>("f", &md.vertices, 1)?,
            b: ctx.dat_zeros::<f32>("b", &md.vertices, 1)?,
            u: ctx.dat_zeros::<f32>("u", &md.vertices, 1)?,
            vertices: md.vertices.clone(),
            coords: mesh.coords.clone(),
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
        for (f, c) in self.f_host.iter_mut().zip(&self.coords) {
            let r2 = (c[0] - at.0).powi(2) + (c[1] - at.1).powi(2);
            *f += (peak * (-r2 / (width * width)).exp()) as f32;
        }
        self.f.set_data(&self.f_host)?;
        let args = [self.weight.read(), self.f.read(), self.b.write()];
        ctx.par_loop(&times(), &self.vertices, &args)
    }

    /// Solves for u from the last u (a relative residual of 1e-5, checked every 10
    /// iterations).
    pub async fn solve(&self, ctx: &Context) -> Result<SolveReport> {
        let opts = SolveOptions {
            rtol: 1e-5,
            ..SolveOptions::default()
        };
        cg_async(ctx, &self.a, &self.b, &self.u, Some(&self.diagonal), &opts).await
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

    /// Implicit mode: adds a heat source at (x, y) in [0, 1]^2 of the picture, solves for the
    /// steady temperature by CG on the device and draws it. Resolves to what the solve took:
    /// `{"iterations": n, "residual": r, "recomputed": t}` (JSON: CG's relative residual at
    /// its last check, then ||b - A u|| / ||b|| computed afresh).
    // The borrow is held across the solve's readbacks on purpose: the other entry points see
    // BUSY until it is done.
    #[allow(clippy::await_holding_refcell_ref)]
    pub fn heat_source(&self, x: f32, y: f32) -> js_sys::Promise {
        let state = self.state.clone();
        wasm_bindgen_futures::future_to_promise(async move {
            let mut guard = state.try_borrow_mut().map_err(|_| busy())?;
            let s = &mut *guard;
            let view = View::of(&s.wave.mesh);
            let (mx, my) = view.to_mesh(x, y);
            let Some(h) = s.heat.as_mut() else {
                return Err(js(
                    "heat_source: the implicit mode is off (set_implicit(true))",
                ));
            };
            // A source a twentieth of the picture wide, of total strength 0.5.
            let width = 0.05 / view.scale as f64;
            h.add_source(&s.ctx, (mx as f64, my as f64), 0.5, width)
                .map_err(js)?;
            let solved = h.solve(&s.ctx).await;
            // Drawn whatever the solve gave: a failed solve shows its last iterate.
            draw(s)?;
            let report = solved.map_err(js)?;
            // CG's residual at its last check, and ||b - A u|| / ||b|| recomputed (in f32 the
            // two part near 1e-5).
            let last = report.residuals.last().map_or(f64::NAN, |r| r.1);
            Ok(JsValue::from_str(&format!(
                "{{\"iterations\": {}, \"residual\": {last:e}, \"recomputed\": {:e}}}",
                report.iterations, report.true_residual
            )))
        })
    }
}
