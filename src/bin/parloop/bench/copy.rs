//! `parloop bench`'s reference bandwidth: a buffer copied on the device, by the copy command
//! (`copy_buffer_to_buffer`) and by a compute shader that reads and writes 16 bytes per
//! invocation, as parloop's kernels do. The two can differ by several times on a GPU; the
//! report gives both and measures every kernel against the faster. A third copy moves 4 bytes
//! per invocation, as a loop over one f32 per element does: what such a loop can reach.

use parloop::Context;
use std::time::Instant;

/// The two copy rates (bytes read + written per second, in GB/s): the copy command's and the
/// compute shader's.
pub struct Copy {
    pub command: f64,
    pub shader: f64,
    /// The shader that moves 4 bytes per invocation.
    pub scalar: f64,
}

impl Copy {
    /// The reference the report's fractions use: the faster of the two.
    pub fn best(&self) -> f64 {
        self.command.max(self.shader)
    }
}

/// The copy shader, moving `T` per invocation.
const SHADER: &str = "
@group(0) @binding(0) var<storage, read> src: array<T>;
@group(0) @binding(1) var<storage, read_write> dst: array<T>;

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) id: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>) {
    let n = arrayLength(&src);
    let stride = nwg.x * 256u;
    for (var i = id.x; i < n; i += stride) {
        dst[i] = src[i];
    }
}
";

/// Copies a `bytes` buffer (at most what one binding holds) ten times each way after one
/// warm-up, timed by the wall clock around one submission of the ten. The buffers hold zeros,
/// and the submission and wait count in the time: on a GPU copying hundreds of GB/s the
/// figures are lower bounds.
pub fn measure(ctx: &Context, bytes: u64) -> Copy {
    let gpu = ctx.gpu();
    let device = &gpu.device;
    // What one binding may hold, in whole 16-byte elements.
    let bytes = bytes.min(gpu.limits.max_storage_buffer_binding_size as u64) / 16 * 16;
    let buffer = |usage| {
        device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("parloop bench copy"),
            size: bytes,
            usage,
            mapped_at_creation: false,
        })
    };
    let src = buffer(wgpu::BufferUsages::COPY_SRC | wgpu::BufferUsages::STORAGE);
    let dst = buffer(wgpu::BufferUsages::COPY_DST | wgpu::BufferUsages::STORAGE);
    // A pipeline, its bind group and its workgroups for each element type.
    let shader = |ty: &str, size: u64| {
        let module = device.create_shader_module(wgpu::ShaderModuleDescriptor {
            label: Some("parloop bench copy"),
            source: wgpu::ShaderSource::Wgsl(SHADER.replace("<T>", &format!("<{ty}>")).into()),
        });
        let pipeline = device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
            label: Some("parloop bench copy"),
            layout: None,
            module: &module,
            entry_point: Some("main"),
            compilation_options: Default::default(),
            cache: None,
        });
        let bind = device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: Some("parloop bench copy"),
            layout: &pipeline.get_bind_group_layout(0),
            entries: &[
                wgpu::BindGroupEntry {
                    binding: 0,
                    resource: src.as_entire_binding(),
                },
                wgpu::BindGroupEntry {
                    binding: 1,
                    resource: dst.as_entire_binding(),
                },
            ],
        });
        let groups = ((bytes / size).div_ceil(256) as u32).clamp(1, 65535);
        (pipeline, bind, groups)
    };
    let shaders = [shader("vec4<u32>", 16), shader("u32", 4)];
    // `with`: None, the copy command; Some(k), shader k.
    let run = |k: usize, with: Option<usize>| {
        let mut enc = device.create_command_encoder(&Default::default());
        for _ in 0..k {
            match with {
                Some(s) => {
                    let (pipeline, bind, groups) = &shaders[s];
                    let mut pass = enc.begin_compute_pass(&Default::default());
                    pass.set_pipeline(pipeline);
                    pass.set_bind_group(0, bind, &[]);
                    pass.dispatch_workgroups(*groups, 1, 1);
                }
                None => enc.copy_buffer_to_buffer(&src, 0, &dst, 0, bytes),
            }
        }
        gpu.queue.submit([enc.finish()]);
        let _ = device.poll(wgpu::PollType::wait_indefinitely());
    };
    let rate = |with: Option<usize>| {
        run(1, with);
        let reps = 10;
        let t = Instant::now();
        run(reps, with);
        2.0 * (bytes * reps as u64) as f64 / t.elapsed().as_secs_f64() / 1e9
    };
    Copy {
        command: rate(None),
        shader: rate(Some(0)),
        scalar: rate(Some(1)),
    }
}
