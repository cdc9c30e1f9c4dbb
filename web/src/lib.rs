//! The wave demo in the browser: the same `parloop::apps::wave` scheme as `examples/wave.rs`,
//! compiled to wasm32 and run on the browser's WebGPU; each frame records some steps, submits
//! them, and draws the triangle mesh coloured by p straight from the simulation's GPU buffer
//! (no readback). JavaScript drives it through [`App`].
#![cfg(target_arch = "wasm32")]

use parloop::apps::wave::Wave;
use parloop::{Config, Context, Strategy};
use std::cell::RefCell;
use std::rc::Rc;
use wasm_bindgen::prelude::*;

mod draw;
mod heat;
use draw::draw;

/// Vertices from a vertex buffer (coordinates), p from the simulation's storage buffer, coloured
/// with viridis (p over [-range, range]; in the implicit mode u over [0, its largest value]).
const SHADER: &str = include_str!("../../shaders/render.wgsl");

/// parloop's log messages (the adapter chosen, device errors) go to the browser console.
struct ConsoleLog;

impl log::Log for ConsoleLog {
    fn enabled(&self, m: &log::Metadata) -> bool {
        m.level() <= log::Level::Info
    }
    fn log(&self, r: &log::Record) {
        if !self.enabled(r.metadata()) {
            return;
        }
        let text = format!("{}: {}", r.target(), r.args());
        match r.level() {
            log::Level::Error => web_sys::console::error_1(&text.into()),
            log::Level::Warn => web_sys::console::warn_1(&text.into()),
            _ => web_sys::console::log_1(&text.into()),
        }
    }
    fn flush(&self) {}
}

static LOGGER: ConsoleLog = ConsoleLog;

/// Where frames go: the canvas (interactive), or an offscreen texture read back on request
/// (headless tests: Chromium's headless SwiftShader does not present WebGPU canvases, and stops
/// resolving every mapAsync once one has been configured).
enum Target {
    Surface {
        surface: wgpu::Surface<'static>,
        config: wgpu::SurfaceConfiguration,
    },
    Offscreen {
        texture: wgpu::Texture,
        width: u32,
        height: u32,
    },
}

impl Target {
    fn format(&self) -> wgpu::TextureFormat {
        match self {
            Target::Surface { config, .. } => config.format,
            Target::Offscreen { .. } => OFFSCREEN_FORMAT,
        }
    }
}

const OFFSCREEN_FORMAT: wgpu::TextureFormat = wgpu::TextureFormat::Rgba8Unorm;

struct Renderer {
    target: Target,
    pipeline: wgpu::RenderPipeline,
    view: wgpu::Buffer,
    vertices: wgpu::Buffer,
    indices: wgpu::Buffer,
    count: u32,
}

struct State {
    ctx: Context,
    wave: Wave,
    renderer: Renderer,
    range: f32,
    /// Steps whose GPU work has completed (counted by queue completion callbacks).
    completed: std::sync::Arc<std::sync::atomic::AtomicU64>,
    /// The last `advance`: steps, loops, loop groups and dispatches.
    last: [u64; 4],
    /// The implicit mode (steady heat on the wave's mesh), when on: drawn instead of p.
    heat: Option<heat::Heat>,
}

/// The demo, as JavaScript sees it.
#[wasm_bindgen]
pub struct App {
    state: Rc<RefCell<State>>,
}

fn js(e: impl std::fmt::Display) -> JsValue {
    JsValue::from_str(&e.to_string())
}

/// How mesh coordinates map onto the unit square the canvas shows: (x - origin) * scale, the
/// bounding box fitted with its aspect ratio kept (the unit square maps to itself).
#[derive(Clone, Copy)]
struct View {
    origin: [f32; 2],
    scale: f32,
}

impl View {
    fn of(mesh: &parloop::mesh::Mesh) -> View {
        let (mut lo, mut hi) = ([f64::INFINITY; 2], [f64::NEG_INFINITY; 2]);
        for c in &mesh.coords {
            for a in 0..2 {
                lo[a] = lo[a].min(c[a]);
                hi[a] = hi[a].max(c[a]);
            }
        }
        let size = (hi[0] - lo[0]).max(hi[1] - lo[1]).max(1e-30);
        View {
            origin: [lo[0] as f32, lo[1] as f32],
            scale: (1.0 / size) as f32,
        }
    }
    /// Canvas position in [0, 1]^2 -> mesh coordinates.
    fn to_mesh(self, x: f32, y: f32) -> (f32, f32) {
        (
            self.origin[0] + x / self.scale,
            self.origin[1] + y / self.scale,
        )
    }
}

fn mesh_buffers(ctx: &Context, wave: &Wave) -> (wgpu::Buffer, wgpu::Buffer, u32) {
    let gpu = ctx.gpu();
    let view = View::of(&wave.mesh);
    let coords: Vec<f32> = wave
        .mesh
        .coords
        .iter()
        .flat_map(|c| [0, 1].map(|a| (c[a] as f32 - view.origin[a]) * view.scale))
        .collect();
    let idx = wave.mesh.cell_vertices();
    // Written through the queue, not mapped at creation: browsers throw (a wasm panic) on a
    // large mappedAtCreation buffer instead of reporting a device error.
    let buffer = |label, bytes: &[u8], usage| {
        let b = gpu.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some(label),
            size: (bytes.len() as u64).max(4),
            usage: usage | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        gpu.queue.write_buffer(&b, 0, bytes);
        b
    };
    let v = buffer(
        "mesh vertices",
        bytemuck_cast(&coords),
        wgpu::BufferUsages::VERTEX,
    );
    let i = buffer(
        "mesh triangles",
        bytemuck_cast(idx),
        wgpu::BufferUsages::INDEX,
    );
    (v, i, idx.len() as u32)
}

fn bytemuck_cast<T: Copy>(v: &[T]) -> &[u8] {
    // f32 and u32 have no padding and every bit pattern is a valid byte.
    unsafe { std::slice::from_raw_parts(v.as_ptr().cast::<u8>(), std::mem::size_of_val(v)) }
}

/// While a readback (`checksum`, `snapshot`) is in flight the state is borrowed across its
/// await; calls that would change it meanwhile get this error instead of a panic.
const BUSY: &str = "the simulation is busy with a readback: wait for checksum(), snapshot() or heat_source() \
     (a solve) to finish";

/// The first panic's message. A panic aborts the call that hit it (wasm cannot unwind), which
/// leaves the simulation's state borrowed: every later call reports the panic, not "busy".
static PANIC: std::sync::Mutex<Option<String>> = std::sync::Mutex::new(None);

/// The first internal error (panic) of this page, if any: what the page shows, since the
/// exception JavaScript sees says only "unreachable".
#[wasm_bindgen]
pub fn last_panic() -> Option<String> {
    PANIC.lock().ok().and_then(|p| p.clone())
}

fn busy() -> JsValue {
    match last_panic() {
        Some(p) => js(format!("{p} (reload the page)")),
        None => js(BUSY),
    }
}

impl App {
    fn get(&self) -> Result<std::cell::Ref<'_, State>, JsValue> {
        self.state.try_borrow().map_err(|_| busy())
    }
    fn get_mut(&self) -> Result<std::cell::RefMut<'_, State>, JsValue> {
        self.state.try_borrow_mut().map_err(|_| busy())
    }
}

#[wasm_bindgen]
impl App {
    /// Opens WebGPU and sets up an n x n wave simulation drawn on `canvas`, or (with
    /// `offscreen`) into a texture of the canvas's size that `snapshot` reads back. With
    /// `check` (the page's `?check=1`), kernels run in checking mode: an out-of-range index
    /// becomes the page's error message. `strategy` (the page's `?strategy=`; empty: auto)
    /// chooses how racing increments are made safe; under `tune`, `tune_cache` (the page's
    /// storage) holds the choices of earlier visits. With `trace`, the timeline is recorded
    /// (`trace_json`).
    #[allow(clippy::too_many_arguments)]
    pub async fn create(
        canvas: web_sys::HtmlCanvasElement,
        n: usize,
        offscreen: bool,
        check: bool,
        strategy: String,
        tune_cache: String,
        trace: bool,
    ) -> Result<App, JsValue> {
        if log::set_logger(&LOGGER).is_ok() {
            log::set_max_level(log::LevelFilter::Info);
        }
        std::panic::set_hook(Box::new(|info| {
            let text = format!("internal error (a panic): {info}");
            web_sys::console::error_1(&format!("PARLOOP_ERROR {text}").into());
            if let Ok(mut p) = PANIC.lock() {
                p.get_or_insert(text);
            }
        }));
        let (width, height) = (canvas.width().max(1), canvas.height().max(1));
        let strategy = Strategy::parse(&strategy).ok_or_else(|| {
            JsValue::from_str(&format!(
                "?strategy={strategy}: use auto, global-colour, hierarchical, staged or cas \
                 (atomics needs f32 atomics, which browsers lack)"
            ))
        })?;
        let ctx = Context::new_async(Config {
            check,
            strategy,
            trace: trace.then(|| "parloop-trace.json".into()),
            ..Config::default()
        })
        .await
        .map_err(js)?;
        if !tune_cache.is_empty() {
            if let Err(e) = ctx.load_tune_cache(&tune_cache) {
                log::warn!("the stored tune choices are ignored: {e}");
            }
        }
        let gpu = ctx.gpu();
        let target = if offscreen {
            Target::Offscreen {
                texture: gpu.device.create_texture(&wgpu::TextureDescriptor {
                    label: Some("offscreen frame"),
                    size: wgpu::Extent3d {
                        width,
                        height,
                        depth_or_array_layers: 1,
                    },
                    mip_level_count: 1,
                    sample_count: 1,
                    dimension: wgpu::TextureDimension::D2,
                    format: OFFSCREEN_FORMAT,
                    usage: wgpu::TextureUsages::RENDER_ATTACHMENT | wgpu::TextureUsages::COPY_SRC,
                    view_formats: &[],
                }),
                width,
                height,
            }
        } else {
            let surface = gpu
                .instance
                .create_surface(wgpu::SurfaceTarget::Canvas(canvas))
                .map_err(js)?;
            let config = surface
                .get_default_config(&gpu.adapter, width, height)
                .ok_or_else(|| js("the canvas does not support this adapter"))?;
            surface.configure(&gpu.device, &config);
            Target::Surface { surface, config }
        };
        let module = gpu
            .device
            .create_shader_module(wgpu::ShaderModuleDescriptor {
                label: Some("wave render"),
                source: wgpu::ShaderSource::Wgsl(SHADER.into()),
            });
        let pipeline = gpu
            .device
            .create_render_pipeline(&wgpu::RenderPipelineDescriptor {
                label: Some("wave render"),
                layout: None,
                vertex: wgpu::VertexState {
                    module: &module,
                    entry_point: Some("vs"),
                    compilation_options: Default::default(),
                    buffers: &[Some(wgpu::VertexBufferLayout {
                        array_stride: 8,
                        step_mode: wgpu::VertexStepMode::Vertex,
                        attributes: &wgpu::vertex_attr_array![0 => Float32x2],
                    })],
                },
                primitive: wgpu::PrimitiveState::default(),
                depth_stencil: None,
                multisample: wgpu::MultisampleState::default(),
                fragment: Some(wgpu::FragmentState {
                    module: &module,
                    entry_point: Some("fs"),
                    compilation_options: Default::default(),
                    targets: &[Some(target.format().into())],
                }),
                multiview_mask: None,
                cache: None,
            });
        let view = gpu.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("view"),
            size: 16,
            usage: wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        let wave = Wave::new(&ctx, n, 0.001).map_err(js)?;
        let (vertices, indices, count) = mesh_buffers(&ctx, &wave);
        let renderer = Renderer {
            target,
            pipeline,
            view,
            vertices,
            indices,
            count,
        };
        Ok(App {
            state: Rc::new(RefCell::new(State {
                ctx,
                wave,
                renderer,
                range: 0.25,
                completed: Default::default(),
                last: [0; 4],
                heat: None,
            })),
        })
    }

    /// `tune`'s choices (empty under another strategy), for the page's storage.
    pub fn tune_cache(&self) -> String {
        self.get()
            .map_or_else(|_| String::new(), |s| s.ctx.tune_cache_json())
    }

    /// What `tune` tried and chose, a line per loop group.
    pub fn tuning(&self) -> String {
        self.get().map_or_else(
            |_| String::new(),
            |s| {
                let explain = s.ctx.explain();
                let lines: Vec<&str> = explain.lines().filter(|l| l.starts_with("tune ")).collect();
                lines.join("\n")
            },
        )
    }

    /// The timeline recorded so far (Chrome trace JSON), with `trace`.
    pub fn trace_json(&self) -> String {
        self.get()
            .map_or_else(|_| String::new(), |s| s.ctx.trace_json())
    }

    /// "llvmpipe (Vulkan)" or the browser's adapter description.
    pub fn adapter(&self) -> String {
        let Ok(s) = self.get() else {
            return String::new();
        };
        let info = &s.ctx.gpu().info;
        if info.name.is_empty() {
            // Browsers hide the adapter's details by default.
            format!("browser WebGPU adapter ({:?})", info.device_type)
        } else {
            s.ctx.adapter()
        }
    }

    pub fn vertices(&self) -> usize {
        self.get().map_or(0, |s| s.wave.mesh.nvertices())
    }

    pub fn triangles(&self) -> usize {
        self.get().map_or(0, |s| s.wave.mesh.ncells())
    }

    /// Steps recorded so far.
    pub fn steps(&self) -> f64 {
        self.get().map_or(0.0, |s| s.wave.steps as f64)
    }

    /// Steps whose GPU work has completed (what steps/s should count: submitting is not
    /// computing).
    pub fn completed_steps(&self) -> f64 {
        self.get().map_or(0.0, |s| {
            s.completed.load(std::sync::atomic::Ordering::Relaxed) as f64
        })
    }

    /// What the last frame's dispatches were, per step: par_loops, the fused groups they ran
    /// in, and the dispatches (a group whose increments race is coloured: one dispatch per
    /// colour where the adapter has no float atomics).
    pub fn dispatch_note(&self) -> String {
        let Ok(s) = self.get() else {
            return String::new();
        };
        let [steps, loops, groups, dispatches] = s.last;
        if steps == 0 {
            return String::new();
        }
        let per = |v: u64| v as f64 / steps as f64;
        format!(
            "per step: {:.0} par_loops in {:.0} fused groups, {:.0} dispatches ({})",
            per(loops),
            per(groups),
            per(dispatches),
            if s.ctx.gpu().float_atomics() {
                "increments by atomics"
            } else {
                "racing increments by colour: one dispatch per colour"
            }
        )
    }

    /// Colour scale: p in [-range, range] spans the colour map.
    pub fn set_range(&self, range: f32) -> Result<(), JsValue> {
        self.get_mut()?.range = range.max(1e-6);
        Ok(())
    }

    /// Records `steps` time steps, submits them, and draws p. Returns the dispatches it took.
    pub fn frame(&self, steps: u32) -> Result<u32, JsValue> {
        let dispatches = self.advance(steps)?;
        self.draw()?;
        Ok(dispatches)
    }

    /// Records `steps` time steps and submits them, without drawing. Returns the dispatches.
    pub fn advance(&self, steps: u32) -> Result<u32, JsValue> {
        let mut guard = self.get_mut()?;
        let s = &mut *guard;
        let before = s.ctx.stats();
        for _ in 0..steps {
            s.wave.step().map_err(js)?;
        }
        s.ctx.flush().map_err(js)?;
        let after = s.ctx.stats();
        if steps > 0 {
            s.last = [
                steps as u64,
                after.loops - before.loops,
                after.groups - before.groups,
                after.dispatches - before.dispatches,
            ];
            let done = s.completed.clone();
            let n = steps as u64;
            s.ctx.gpu().queue.on_submitted_work_done(move || {
                done.fetch_add(n, std::sync::atomic::Ordering::Relaxed);
            });
        }
        Ok((after.dispatches - before.dispatches) as u32)
    }

    /// Draws p as the simulation left it (submitted work first: call `advance` before).
    pub fn draw(&self) -> Result<(), JsValue> {
        draw(&mut *self.get_mut()?)
    }

    /// Adds a pulse of p at (x, y) in [0, 1]^2 of the picture (the mesh's bounding box).
    pub fn pulse(&self, x: f32, y: f32, amplitude: f32) -> Result<(), JsValue> {
        let mut s = self.get_mut()?;
        let (mx, my) = View::of(&s.wave.mesh).to_mesh(x, y);
        s.wave.pulse(mx, my, amplitude).map_err(js)
    }

    /// Runs the wave on a Gmsh mesh of triangles (the bytes of a `.msh` file, 4.1 or 2.2),
    /// drawn at its initial state. A file that is not such a mesh is an error saying why (the
    /// page draws triangles: a mesh of other cells is refused, naming them).
    pub fn load_mesh(&self, bytes: &[u8]) -> Result<(), JsValue> {
        let mesh = parloop::mesh::gmsh::read(bytes).map_err(js)?;
        if mesh.cell_type != parloop::mesh::CellType::Triangle {
            return Err(js(format!(
                "this mesh has {} cells: the browser demo draws triangles (P1)",
                mesh.cell_type.name()
            )));
        }
        let mut guard = self.get_mut()?;
        replace_wave(&mut guard, |ctx| Wave::on_mesh(ctx, mesh, 0.001))
    }

    /// A new n x n simulation on the same device, drawn at its initial state.
    pub fn reset(&self, n: usize) -> Result<(), JsValue> {
        let mut guard = self.get_mut()?;
        replace_wave(&mut guard, |ctx| Wave::new(ctx, n, 0.001))
    }

    /// The last offscreen frame as RGBA bytes, row by row (offscreen mode only).
    pub fn snapshot(&self) -> js_sys::Promise {
        let state = self.state.clone();
        wasm_bindgen_futures::future_to_promise(async move {
            let (buffer, width, height, row) = {
                let s = state.try_borrow().map_err(|_| busy())?;
                let Target::Offscreen {
                    texture,
                    width,
                    height,
                } = &s.renderer.target
                else {
                    return Err(js("snapshot needs an offscreen App"));
                };
                let gpu = s.ctx.gpu();
                let row = (4 * width).div_ceil(256) * 256;
                let buffer = gpu.device.create_buffer(&wgpu::BufferDescriptor {
                    label: Some("snapshot"),
                    size: (row * height) as u64,
                    usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
                    mapped_at_creation: false,
                });
                let mut enc = gpu.device.create_command_encoder(&Default::default());
                enc.copy_texture_to_buffer(
                    texture.as_image_copy(),
                    wgpu::TexelCopyBufferInfo {
                        buffer: &buffer,
                        layout: wgpu::TexelCopyBufferLayout {
                            offset: 0,
                            bytes_per_row: Some(row),
                            rows_per_image: None,
                        },
                    },
                    texture.size(),
                );
                gpu.queue.submit([enc.finish()]);
                (buffer, *width, *height, row)
            };
            let (tx, rx) = futures::channel::oneshot::channel();
            buffer.map_async(wgpu::MapMode::Read, .., move |r| {
                let _ = tx.send(r);
            });
            rx.await.map_err(js)?.map_err(js)?;
            let view = buffer.get_mapped_range(..).map_err(js)?;
            let mut rgba = Vec::with_capacity((4 * width * height) as usize);
            for y in 0..height as usize {
                let start = y * row as usize;
                rgba.extend_from_slice(&view[start..start + 4 * width as usize]);
            }
            Ok(js_sys::Uint8Array::from(&rgba[..]).into())
        })
    }

    /// The sum of |p| over the vertices (read back from the GPU): the test's checksum.
    // The borrow is held across the readback on purpose: the other entry points see BUSY.
    #[allow(clippy::await_holding_refcell_ref)]
    pub fn checksum(&self) -> js_sys::Promise {
        let state = self.state.clone();
        wasm_bindgen_futures::future_to_promise(async move {
            let s = state.try_borrow().map_err(|_| busy())?;
            let p = s.wave.p.data_ro_async().await.map_err(js)?;
            let sum: f64 = p.iter().map(|v| v.abs() as f64).sum();
            Ok(JsValue::from_f64(sum))
        })
    }
}

/// Replaces the simulation with a new one on the same device (after the pending work of the
/// old), takes its mesh into the renderer and draws its initial state (p is still on the host:
/// the setup runs and p is uploaded first).
fn replace_wave(
    s: &mut State,
    make: impl FnOnce(&Context) -> parloop::Result<Wave>,
) -> Result<(), JsValue> {
    s.ctx.flush().map_err(js)?;
    // Both made before either replaces the old: a failure leaves the page as it was.
    let wave = make(&s.ctx).map_err(js)?;
    // The implicit mode follows the new mesh, without sources.
    let heat = match s.heat {
        Some(_) => Some(heat::Heat::new(&s.ctx, &wave.mesh).map_err(js)?),
        None => None,
    };
    s.wave = wave;
    if let Some(h) = heat {
        s.ctx.flush().map_err(js)?;
        s.ctx.upload(&h.u).map_err(js)?;
        s.heat = Some(h);
    }
    let (v, i, c) = mesh_buffers(&s.ctx, &s.wave);
    s.renderer.vertices = v;
    s.renderer.indices = i;
    s.renderer.count = c;
    s.ctx.flush().map_err(js)?;
    s.ctx.upload(&s.wave.p).map_err(js)?;
    draw(s)
}
