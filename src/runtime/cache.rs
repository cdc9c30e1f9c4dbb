//! The runtime's resources made current and cached: device buffers of Dats and Globals
//! (created or reused from the pool, uploaded or cleared), plans and their buffers, pipelines
//! (validated with naga first) and bind groups. The executor (`exec`) asks for them while it
//! encodes a force.

use super::{Buf, Cmd, Gpu, Pipeline, PlanEntry, State, bound};
use crate::codegen;
use crate::data::{DataInner, IterSpace, MapInner, SubsetInner};
use crate::error::{Error, Result};
use crate::lower::{Lowered, PlanSpec};
use crate::plan::{self, PlanInput, RaceArg, StagedMap};
use std::num::NonZeroU64;
use std::rc::{Rc, Weak};

/// A storage buffer holding `words`. Written through the queue rather than mapped at
/// creation: browsers refuse large `mappedAtCreation` buffers (an exception, not an error the
/// device reports).
pub(super) fn init_buf(gpu: &Gpu, words: &[u32], label: &str) -> Buf {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1 << 40);
    let contents: &[u8] = if words.is_empty() {
        &[0; 4]
    } else {
        bytemuck::cast_slice(words)
    };
    let buffer = gpu.device.create_buffer(&wgpu::BufferDescriptor {
        label: Some(label),
        size: contents.len() as u64,
        usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_DST,
        mapped_at_creation: false,
    });
    gpu.queue.write_buffer(&buffer, 0, contents);
    Buf {
        id: NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
        size: contents.len() as u64,
        buffer,
    }
}

/// The device buffer of a Dat or Global, made current: created (or reused from the pool) at
/// first use, uploaded when the host copy is newer, cleared when it was never written.
pub(super) fn data_buffer(
    st: &mut State,
    gpu: &Gpu,
    encoder: &mut wgpu::CommandEncoder,
    d: &Rc<DataInner>,
) -> Result<(u64, u64)> {
    let bytes = d.bytes();
    let max = gpu.limits.max_storage_buffer_binding_size;
    if bytes > max {
        return Err(Error::ParLoop {
            par_loops: Vec::new(),
            arg: None,
            message: format!(
                "{} `{}` needs {bytes} bytes, over the adapter's max_storage_buffer_binding_size of \
             {max} bytes: split it into several Dats (or use an adapter with larger bindings)",
                d.kind(),
                d.name
            ),
        });
    }
    let fresh = !st.data.contains_key(&d.id);
    if fresh {
        let (buf, zeroed) = st.storage(gpu, bytes, &d.name);
        if zeroed {
            st.stats.data_bytes += buf.size;
        }
        if d.state.zeros() {
            if !zeroed {
                encoder.clear_buffer(&buf.buffer, 0, None);
            }
            d.state.copied_to_device();
        }
        st.data.insert(d.id, (Rc::downgrade(d), buf));
    }
    if d.state.host_valid() && !d.state.device_valid() {
        let host = d.host.borrow();
        if !host.is_empty() {
            let soa = st
                .is_soa(d)
                .then(|| super::transpose(&host, d.dim, d.dtype.words(), false));
            let words = soa.as_deref().unwrap_or(&host);
            gpu.queue
                .write_buffer(&st.data[&d.id].1.buffer, 0, bytemuck::cast_slice(words));
        }
        d.state.copied_to_device();
        st.stats.uploads += 1;
    }
    Ok((st.data[&d.id].1.id, bound(bytes)))
}

/// The Maps and the Subset something built from a plan's input depends on.
pub(crate) struct PlanDeps {
    maps: Vec<Weak<MapInner>>,
    subset: Option<Weak<SubsetInner>>,
}

impl PlanDeps {
    /// Those of the plan `spec` describes for `lw`.
    pub fn of(lw: &Lowered, spec: &PlanSpec) -> PlanDeps {
        PlanDeps {
            maps: spec
                .races
                .iter()
                .map(|(_, m, _, _)| m)
                .chain(spec.staged.iter().map(|(m, _, _)| m))
                .map(|m| Rc::downgrade(&m.0))
                .collect(),
            subset: lw.space.subset().map(|s| Rc::downgrade(&s.0)),
        }
    }
    /// Whether every one of them is still held.
    pub fn alive(&self) -> bool {
        self.maps.iter().all(|m| m.strong_count() > 0)
            && self.subset.as_ref().is_none_or(|s| s.strong_count() > 0)
    }
}

/// `f` of the plan builder's view of `lw`'s positions and races (`spec`).
pub(super) fn with_plan_input<R>(
    lw: &Lowered,
    spec: &PlanSpec,
    f: impl FnOnce(&PlanInput) -> R,
) -> R {
    let sections = lw.space.set().sections();
    let whole = matches!(lw.space, IterSpace::Set(_) | IterSpace::WithExecHalo(_));
    let section_ends = if whole {
        vec![sections.core]
    } else {
        Vec::new()
    };
    // A set's part (core, or owned and exec halo) lists its elements like a subset.
    let range: Option<Vec<u32>> = matches!(lw.space, IterSpace::Core(_) | IterSpace::Owned(..))
        .then(|| {
            (0..lw.positions())
                .map(|p| lw.space.element(p) as u32)
                .collect()
        });
    let input = PlanInput {
        positions: lw.positions(),
        elements: range
            .as_deref()
            .or_else(|| lw.space.subset().map(|s| s.indices())),
        section_ends,
        space_sizes: spec.space_sizes.clone(),
        races: spec
            .races
            .iter()
            .map(|(s, m, idx, slot)| RaceArg {
                space: *s,
                map: m.values(),
                arity: m.arity(),
                idx: *idx,
                staged: *slot,
            })
            .collect(),
        staged: spec
            .staged
            .iter()
            .map(|(m, bytes, slots)| StagedMap {
                map: m.values(),
                arity: m.arity(),
                bytes_per_target: *bytes,
                slots: slots.as_deref(),
            })
            .collect(),
    };
    f(&input)
}

pub(super) fn ensure_plan(
    st: &mut State,
    gpu: &Gpu,
    lw: &Lowered,
    spec: &PlanSpec,
) -> std::result::Result<Rc<PlanEntry>, String> {
    if let Some(p) = st.plans.get(&spec.key) {
        return Ok(p.clone());
    }
    let t0 = crate::util::now_ms();
    let deps = PlanDeps::of(lw, spec);
    let entry = with_plan_input(lw, spec, |input| build(gpu, input, spec, deps))?;
    let us = ((crate::util::now_ms() - t0) * 1e3) as u64;
    log::debug!("plan built in {us} us: {}", spec.key);
    st.stats.plans_built += 1;
    st.stats.plan_build_us += us;
    let entry = Rc::new(entry);
    st.plans.insert(spec.key.clone(), entry.clone());
    Ok(entry)
}

/// The plan `spec` describes, over `input`, with its buffer.
fn build(
    gpu: &Gpu,
    input: &PlanInput,
    spec: &PlanSpec,
    deps: PlanDeps,
) -> std::result::Result<PlanEntry, String> {
    Ok(if spec.colour {
        let c = plan::colour_elements(input, spec.config.balance);
        let buffer = init_buf(gpu, &c.elem, "parloop plan");
        PlanEntry {
            colour: Some(c),
            blocks: None,
            buffer,
            maxu: Vec::new(),
            deps,
        }
    } else {
        let b = plan::build_blocks(input, &spec.config).map_err(|e| match e {
            plan::PlanError::ElementTooLarge { bytes, limit } => format!(
                "one element stages {bytes} bytes of workgroup memory, over the {limit} bytes \
                 available: use staging `none`, or the `atomics` or `global-colour` strategy"
            ),
        })?;
        let buffer = init_buf(gpu, &b.pack(), "parloop plan");
        PlanEntry {
            maxu: b.staged.iter().map(|s| s.maxu).collect(),
            colour: None,
            blocks: Some(b),
            buffer,
            deps,
        }
    })
}

/// The pipeline of a WGSL module, compiled once (cached by the WGSL text, which fixes the
/// layout too). The module is validated with naga first.
pub(super) fn ensure_pipeline(
    st: &mut State,
    gpu: &Gpu,
    wgsl: &str,
    names: &str,
) -> Result<Rc<Pipeline>> {
    if let Some(p) = st.pipelines.get(wgsl) {
        p.last_used.set(st.tick);
        return Ok(p.clone());
    }
    let module = codegen::validate(wgsl, gpu.capabilities()).map_err(|e| Error::Kernel {
        par_loop: None,
        message: format!(
            "{names}: the generated shader does not validate (a parloop bug; please report it \
             with this message):\n{}",
            e.render(wgsl)
        ),
    })?;
    let entries = layout_entries(&module);
    let device = &gpu.device;
    #[cfg(not(target_arch = "wasm32"))]
    let scope = device.push_error_scope(wgpu::ErrorFilter::Validation);
    let layout = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
        label: Some("parloop"),
        entries: &entries,
    });
    let pl_layout = device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
        label: Some("parloop"),
        bind_group_layouts: &[Some(&layout)],
        immediate_size: 0,
    });
    let shader = device.create_shader_module(wgpu::ShaderModuleDescriptor {
        label: Some("parloop group"),
        source: wgpu::ShaderSource::Wgsl(wgsl.into()),
    });
    let pipeline = device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
        label: Some("parloop group"),
        layout: Some(&pl_layout),
        module: &shader,
        entry_point: Some("pl_main"),
        compilation_options: Default::default(),
        cache: None,
    });
    #[cfg(not(target_arch = "wasm32"))]
    if let Some(e) = pollster::block_on(scope.pop()) {
        return Err(Error::Device(format!(
            "{names}: the device could not compile the loop's shader: {e}"
        )));
    }
    st.stats.pipelines_compiled += 1;
    let p = Rc::new(Pipeline {
        id: st.stats.pipelines_compiled,
        last_used: std::cell::Cell::new(st.tick),
        pipeline,
        layout,
    });
    st.pipelines.insert(wgsl.to_string(), p.clone());
    st.bound_pipelines();
    Ok(p)
}

/// Bind group layout entries from the module's globals: binding 0 the params (uniform, dynamic
/// offset), the others storage buffers, read-only or not as declared.
pub(super) fn layout_entries(m: &naga::Module) -> Vec<wgpu::BindGroupLayoutEntry> {
    let mut entries: Vec<wgpu::BindGroupLayoutEntry> = m
        .global_variables
        .iter()
        .filter_map(|(_, v)| {
            let b = v.binding.as_ref()?;
            let ty = match v.space {
                naga::AddressSpace::Uniform => wgpu::BufferBindingType::Uniform,
                naga::AddressSpace::Storage { access } => wgpu::BufferBindingType::Storage {
                    read_only: !access.contains(naga::StorageAccess::STORE),
                },
                _ => return None,
            };
            Some(wgpu::BindGroupLayoutEntry {
                binding: b.binding,
                visibility: wgpu::ShaderStages::COMPUTE,
                ty: wgpu::BindingType::Buffer {
                    ty,
                    has_dynamic_offset: ty == wgpu::BufferBindingType::Uniform,
                    min_binding_size: None,
                },
                count: None,
            })
        })
        .collect();
    entries.sort_by_key(|e| e.binding);
    entries
}

pub(super) fn bind_group(st: &mut State, gpu: &Gpu, c: &Cmd) -> Result<wgpu::BindGroup> {
    let params = st.params.as_ref().map_or(0, |b| b.id);
    let mut key_bufs = vec![(params, 0)];
    key_bufs.extend_from_slice(&c.bufs);
    let key = (c.pipeline.id, key_bufs);
    if let Some(bg) = st.bind_groups.get(&key) {
        return Ok(bg.clone());
    }
    let lookup = |id: u64| -> Option<&wgpu::Buffer> {
        st.data
            .values()
            .map(|(_, b)| b)
            .chain(st.maps.values().map(|(_, b)| b))
            .chain(st.subsets.values().map(|(_, b)| b))
            .chain(st.scratch.iter())
            .chain(st.check.iter())
            .chain(st.plans.values().map(|p| &p.buffer))
            .find(|b| b.id == id)
            .map(|b| &b.buffer)
    };
    let params_buf = st
        .params
        .as_ref()
        .ok_or_else(|| Error::Device("internal: no params buffer".into()))?;
    let mut entries = vec![wgpu::BindGroupEntry {
        binding: 0,
        resource: wgpu::BindingResource::Buffer(wgpu::BufferBinding {
            buffer: &params_buf.buffer,
            offset: 0,
            size: NonZeroU64::new(c.params_bytes),
        }),
    }];
    for (k, &(id, bytes)) in c.bufs.iter().enumerate() {
        let buffer =
            lookup(id).ok_or_else(|| Error::Device(format!("internal: buffer {id} is gone")))?;
        entries.push(wgpu::BindGroupEntry {
            binding: k as u32 + 1,
            resource: wgpu::BindingResource::Buffer(wgpu::BufferBinding {
                buffer,
                offset: 0,
                size: NonZeroU64::new(bytes.max(4)),
            }),
        });
    }
    let bg = gpu.device.create_bind_group(&wgpu::BindGroupDescriptor {
        label: Some("parloop"),
        layout: &c.pipeline.layout,
        entries: &entries,
    });
    st.bind_groups.insert(key, bg.clone());
    Ok(bg)
}
