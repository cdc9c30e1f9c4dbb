//! Adapter and device: a hardware adapter when present, else the software ones (Vulkan lavapipe,
//! then OpenGL llvmpipe); `PARLOOP_ADAPTER=hardware|software|<name substring>` and
//! `PARLOOP_BACKEND=vulkan|gl|dx12|metal|webgpu` override the choice. The device gets the
//! adapter's own limits natively (WebGPU's defaults in the browser) and f32 atomics and
//! timestamp queries when the adapter has them.

use crate::config::AdapterChoice;
use crate::error::{Error, Result};
use std::sync::{Arc, Mutex};

/// The device and what it can do.
pub struct Gpu {
    /// The instance the adapter came from (surfaces for rendering are made from it).
    pub instance: wgpu::Instance,
    /// The adapter opened.
    pub adapter: wgpu::Adapter,
    /// The device parloop runs on.
    pub device: wgpu::Device,
    /// Its queue (one for everything parloop submits).
    pub queue: wgpu::Queue,
    /// The adapter's name, backend and driver.
    pub info: wgpu::AdapterInfo,
    /// The device's limits (workgroup memory, storage buffers, dispatch size).
    pub limits: wgpu::Limits,
    /// The device's features (float atomics, timestamps).
    pub features: wgpu::Features,
    /// The first device error nobody captured (reported by the next force).
    pub uncaptured: Arc<Mutex<Option<String>>>,
}

impl Gpu {
    /// Whether the adapter runs shaders on the CPU (lavapipe, llvmpipe, SwiftShader, WARP):
    /// the host's work then competes with the device's for the same cores.
    pub fn software(&self) -> bool {
        is_software(&self.info)
    }
    /// Whether increments of f32 can use native atomics (`SHADER_FLOAT32_ATOMIC`).
    pub fn float_atomics(&self) -> bool {
        self.features
            .contains(wgpu::Features::SHADER_FLOAT32_ATOMIC)
    }
    /// Whether kernels may use f64: `SHADER_F64` (Vulkan and DX12 natively; not Metal, not
    /// browsers), with `SHADER_INT64`, which parloop's generated code uses to move an f64's
    /// bits (WGSL cannot bitcast f64 to 32-bit words).
    pub fn f64(&self) -> bool {
        self.features
            .contains(wgpu::Features::SHADER_F64 | wgpu::Features::SHADER_INT64)
    }
    /// Whether f64 increments through maps can race in global (and workgroup) memory:
    /// compare-and-swap loops on their bits as `atomic<u64>` need
    /// `SHADER_INT64_ATOMIC_ALL_OPS` (64-bit atomics in storage and workgroup memory:
    /// lavapipe and many Vulkan GPUs; not GL, Metal or browsers).
    pub fn int64_atomics(&self) -> bool {
        self.f64()
            && self
                .features
                .contains(wgpu::Features::SHADER_INT64_ATOMIC_ALL_OPS)
    }
    /// Whether the device can time compute passes (`TIMESTAMP_QUERY`).
    pub fn timestamps(&self) -> bool {
        self.features.contains(wgpu::Features::TIMESTAMP_QUERY)
    }
    /// The naga capabilities matching the device (for validating kernels before use).
    pub fn capabilities(&self) -> naga::valid::Capabilities {
        let mut caps = naga::valid::Capabilities::empty();
        if self.float_atomics() {
            caps |= naga::valid::Capabilities::SHADER_FLOAT32_ATOMIC;
        }
        if self.f64() {
            caps |= naga::valid::Capabilities::FLOAT64 | naga::valid::Capabilities::SHADER_INT64;
        }
        if self.int64_atomics() {
            caps |= naga::valid::Capabilities::SHADER_INT64_ATOMIC_ALL_OPS;
        }
        caps
    }
    /// "llvmpipe (LLVM 15.0.6, 256 bits) (Gl)".
    pub fn describe(&self) -> String {
        format!("{} ({:?})", self.info.name, self.info.backend)
    }
}

/// Backends to look at: the configuration's, else every native backend (WebGPU in the
/// browser).
pub fn backends(chosen: Option<wgpu::Backends>) -> wgpu::Backends {
    match chosen {
        Some(b) => b,
        None if cfg!(target_arch = "wasm32") => wgpu::Backends::BROWSER_WEBGPU,
        None => wgpu::Backends::all() - wgpu::Backends::BROWSER_WEBGPU - wgpu::Backends::NOOP,
    }
}

fn is_software(info: &wgpu::AdapterInfo) -> bool {
    let name = info.name.to_ascii_lowercase();
    info.device_type == wgpu::DeviceType::Cpu
        || ["llvmpipe", "lavapipe", "swiftshader", "softpipe", "warp"]
            .iter()
            .any(|s| name.contains(s))
}

/// Preference order: discrete, integrated, virtual, other hardware; then software, Vulkan first.
fn rank(info: &wgpu::AdapterInfo) -> u32 {
    let hw = match info.device_type {
        wgpu::DeviceType::DiscreteGpu => 0,
        wgpu::DeviceType::IntegratedGpu => 1,
        wgpu::DeviceType::VirtualGpu => 2,
        _ => 3,
    };
    let backend = match info.backend {
        wgpu::Backend::Vulkan | wgpu::Backend::Metal | wgpu::Backend::Dx12 => 0,
        wgpu::Backend::BrowserWebGpu => 0,
        _ => 1,
    };
    if is_software(info) {
        10 + backend
    } else {
        hw * 2 + backend
    }
}

/// Every adapter that can run compute shaders, best first.
pub async fn adapters(instance: &wgpu::Instance, backends: wgpu::Backends) -> Vec<wgpu::Adapter> {
    #[cfg(not(target_arch = "wasm32"))]
    let mut list = instance.enumerate_adapters(backends).await;
    #[cfg(target_arch = "wasm32")]
    let mut list: Vec<wgpu::Adapter> = {
        let _ = backends;
        instance
            .request_adapter(&wgpu::RequestAdapterOptions {
                power_preference: wgpu::PowerPreference::HighPerformance,
                ..Default::default()
            })
            .await
            .into_iter()
            .collect()
    };
    list.retain(|a| {
        a.get_downlevel_capabilities()
            .flags
            .contains(wgpu::DownlevelFlags::COMPUTE_SHADERS)
    });
    list.sort_by_key(|a| rank(&a.get_info()));
    list
}

pub fn instance(backends: wgpu::Backends) -> wgpu::Instance {
    let mut desc = wgpu::InstanceDescriptor::new_without_display_handle();
    desc.backends = backends;
    wgpu::Instance::new(desc)
}

/// Opens the chosen adapter's device. `local_rank` (a distributed run's rank among the
/// processes of its node) spreads the ranks of a node over its hardware adapters when the
/// choice is `auto`: rank r takes adapter r modulo their number (`PARLOOP_ADAPTER` overrides).
pub async fn open(
    choice: &AdapterChoice,
    backends: Option<wgpu::Backends>,
    local_rank: Option<usize>,
) -> Result<Gpu> {
    let backends = self::backends(backends);
    let instance = instance(backends);
    let all = adapters(&instance, backends).await;
    let names: Vec<String> = all
        .iter()
        .map(|a| {
            let i = a.get_info();
            format!("{} ({:?})", i.name, i.backend)
        })
        .collect();
    // Several hardware adapters of one backend (a node with several GPUs) and a local rank:
    // take the rank's share.
    let hardware: Vec<usize> = all
        .iter()
        .enumerate()
        .filter(|(_, a)| !is_software(&a.get_info()))
        .map(|(k, _)| k)
        .collect();
    let same_backend: Vec<usize> = hardware
        .iter()
        .copied()
        .filter(|&k| all[k].get_info().backend == all[hardware[0]].get_info().backend)
        .collect();
    if let (AdapterChoice::Auto, Some(r), true) = (choice, local_rank, same_backend.len() > 1) {
        let k = same_backend[r % same_backend.len()];
        let mut all = all;
        let adapter = all.swap_remove(k);
        return device(instance, adapter).await;
    }
    let pick = all.into_iter().find(|a| {
        let info = a.get_info();
        match choice {
            AdapterChoice::Auto => true,
            AdapterChoice::Hardware => !is_software(&info),
            AdapterChoice::Software => is_software(&info),
            AdapterChoice::Name(n) => info.name.to_ascii_lowercase().contains(n),
        }
    });
    let Some(adapter) = pick else {
        return Err(no_adapter(choice, backends, &names));
    };
    device(instance, adapter).await
}

/// The device of an adapter, with the features and limits parloop uses.
async fn device(instance: wgpu::Instance, adapter: wgpu::Adapter) -> Result<Gpu> {
    let info = adapter.get_info();
    let wanted = wgpu::Features::SHADER_FLOAT32_ATOMIC
        | wgpu::Features::TIMESTAMP_QUERY
        | wgpu::Features::SHADER_F64
        | wgpu::Features::SHADER_INT64
        | wgpu::Features::SHADER_INT64_ATOMIC_ALL_OPS;
    let features = adapter.features() & wanted;
    let limits = if cfg!(target_arch = "wasm32") {
        wgpu::Limits::default()
    } else {
        adapter.limits()
    };
    let (device, queue) = adapter
        .request_device(&wgpu::DeviceDescriptor {
            label: Some("parloop"),
            required_features: features,
            required_limits: limits.clone(),
            ..Default::default()
        })
        .await
        .map_err(|e| {
            Error::Adapter(format!(
                "adapter {} ({:?}) refused a device: {e}",
                info.name, info.backend
            ))
        })?;
    let uncaptured: Arc<Mutex<Option<String>>> = Arc::default();
    let sink = uncaptured.clone();
    device.on_uncaptured_error(Arc::new(move |e: wgpu::Error| {
        log::error!("device error: {e}");
        if let Ok(mut slot) = sink.lock() {
            slot.get_or_insert_with(|| e.to_string());
        }
    }));
    log::info!(
        "parloop: adapter {} ({:?}, {:?}), f32 atomics: {}",
        info.name,
        info.backend,
        info.device_type,
        features.contains(wgpu::Features::SHADER_FLOAT32_ATOMIC)
    );
    Ok(Gpu {
        instance,
        adapter,
        device,
        queue,
        info,
        limits,
        features,
        uncaptured,
    })
}

fn no_adapter(choice: &AdapterChoice, backends: wgpu::Backends, found: &[String]) -> Error {
    if cfg!(target_arch = "wasm32") {
        return Error::Adapter(
            "this browser offers no WebGPU adapter (navigator.gpu.requestAdapter() found none): \
             enable WebGPU (Chromium: chrome://flags/#enable-unsafe-webgpu, or start it with \
             --enable-unsafe-webgpu) or use a browser and GPU driver that support it"
                .into(),
        );
    }
    let found = if found.is_empty() {
        "none".to_string()
    } else {
        found.join(", ")
    };
    let hint = "a software adapter comes with Mesa: `apt-get install mesa-vulkan-drivers libvulkan1` \
                (Vulkan lavapipe) or `apt-get install libgl1-mesa-dri libegl-mesa0` (OpenGL llvmpipe)";
    Error::Adapter(format!(
        "no GPU adapter matches PARLOOP_ADAPTER={choice:?} on backends {:?} (adapters with \
         compute shaders found: {found}); {hint}",
        backends
    ))
}

/// A human summary of the adapters found on `backends` (None: every native one) and the one
/// `choice` picks (for `parloop info`).
pub async fn report(choice: &AdapterChoice, backends: Option<wgpu::Backends>) -> String {
    use std::fmt::Write;
    let backends = self::backends(backends);
    let instance = instance(backends);
    let mut s =
        format!("backends searched: {backends:?}\nadapters with compute shaders, best first:\n");
    let list = adapters(&instance, backends).await;
    if list.is_empty() {
        s += "  (none)\n";
    }
    for a in &list {
        let i = a.get_info();
        let _ = writeln!(
            s,
            "  {} ({:?}, {:?}{}) driver: {} {}",
            i.name,
            i.backend,
            i.device_type,
            if is_software(&i) { ", software" } else { "" },
            i.driver,
            i.driver_info
        );
    }
    match open(choice, Some(backends), None).await {
        Err(e) => {
            let _ = writeln!(s, "chosen: none: {e}");
        }
        Ok(g) => {
            let l = &g.limits;
            let _ = writeln!(s, "chosen (PARLOOP_ADAPTER={choice:?}): {}", g.describe());
            let _ = writeln!(
                s,
                "  limits: {} storage buffers per stage, {} bytes per storage binding, {} bytes of \
                 workgroup memory, {} invocations per workgroup, {} workgroups per dimension, \
                 uniform offset alignment {}",
                l.max_storage_buffers_per_shader_stage,
                l.max_storage_buffer_binding_size,
                l.max_compute_workgroup_storage_size,
                l.max_compute_invocations_per_workgroup,
                l.max_compute_workgroups_per_dimension,
                l.min_uniform_buffer_offset_alignment
            );
            let _ = writeln!(
                s,
                "  features: f32 atomics {}, timestamp queries {}, f64 {}, f64 atomics (64-bit \
                 compare-and-swap) {}",
                if g.float_atomics() { "yes" } else { "no" },
                if g.timestamps() { "yes" } else { "no" },
                if g.f64() { "yes" } else { "no" },
                if g.int64_atomics() { "yes" } else { "no" }
            );
            // What later work could use (subgroup reductions), as the adapter offers it.
            if let Some(a) = list.iter().find(|a| a.get_info() == g.info) {
                let f = a.features();
                let yes = |x: wgpu::Features| if f.contains(x) { "yes" } else { "no" };
                let _ = writeln!(
                    s,
                    "  offered, not used: subgroup operations {}",
                    yes(wgpu::Features::SUBGROUP)
                );
            }
        }
    }
    s
}
