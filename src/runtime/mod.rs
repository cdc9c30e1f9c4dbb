//! The runtime: the wgpu device, device buffers (created at first use, pooled when their Dat is
//! gone), the pipeline and bind-group caches, plan buffers, and the executor that turns loop
//! groups into one command encoder and one submission per force.
//!
//! Owns: every wgpu object. Must never: decide what runs (the trace and the fusion pass do) or
//! what the shader says (codegen does).

pub mod device;
pub(crate) mod exec;
mod host;
pub(crate) mod lower;

use crate::data::{DataInner, MapInner, SubsetInner};
use crate::plan::{BlockPlan, ColourPlan};
use std::collections::{BTreeMap, HashMap};
use std::rc::{Rc, Weak};

pub use device::{AdapterChoice, Gpu};

/// A device buffer with a process-unique id (bind groups are cached by buffer ids).
pub(crate) struct Buf {
    pub id: u64,
    pub buffer: wgpu::Buffer,
    /// Allocated bytes (the size class).
    pub size: u64,
}

/// GPU time of one loop group (profiling mode).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct KernelTime {
    pub calls: u64,
    pub ns: u64,
}

/// Counters a user (and the benchmarks) can read.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    /// GPU time per group (kernel names joined by `+`), with `Config::profile` on an adapter
    /// with timestamp queries.
    pub kernel_times: BTreeMap<String, KernelTime>,
    /// Forces that ran any work.
    pub forces: u64,
    pub submissions: u64,
    pub dispatches: u64,
    /// par_loops executed (on either target).
    pub loops: u64,
    /// Loop groups executed (a fused group counts once).
    pub groups: u64,
    pub pipelines_compiled: u64,
    pub plans_built: u64,
    /// Microseconds spent building plans.
    pub plan_build_us: u64,
    pub readbacks: u64,
    pub uploads: u64,
    /// Bytes of device buffers created (pool reuses are not counted again).
    pub bytes_allocated: u64,
    /// Bytes of device buffers created for Dats and Globals (pool reuses not counted again).
    pub data_bytes: u64,
    /// Device buffers reused from the pool.
    pub pool_reuses: u64,
    /// Dispatches of the last force.
    pub last_dispatches: u64,
    /// Loops run on the host target.
    pub host_loops: u64,
    /// Values copied between device and host for host-target loops.
    pub host_copies: u64,
}

/// A built plan and its packed device buffer.
pub(crate) struct PlanEntry {
    pub colour: Option<ColourPlan>,
    pub blocks: Option<BlockPlan>,
    pub buffer: Buf,
    /// Largest staged target count per staged map (hierarchical).
    pub maxu: Vec<usize>,
}

pub(crate) struct Pipeline {
    pub id: u64,
    pub pipeline: wgpu::ComputePipeline,
    pub layout: wgpu::BindGroupLayout,
}

/// Runtime state of a context.
#[derive(Default)]
pub(crate) struct State {
    pub data: HashMap<u64, (Weak<DataInner>, Buf)>,
    pub maps: HashMap<u64, (Weak<MapInner>, Buf)>,
    pub subsets: HashMap<u64, (Weak<SubsetInner>, Buf)>,
    pub plans: HashMap<String, Rc<PlanEntry>>,
    pub pipelines: HashMap<String, Rc<Pipeline>>,
    pub bind_groups: HashMap<(u64, Vec<(u64, u64)>), wgpu::BindGroup>,
    /// Free storage buffers by size class.
    pub pool: BTreeMap<u64, Vec<Buf>>,
    /// Free readback buffers by size class.
    pub staging: BTreeMap<u64, Vec<Buf>>,
    pub params: Option<Buf>,
    pub scratch: Option<Buf>,
    pub stats: Stats,
    next_buf: u64,
}

/// Bytes a buffer of `bytes` is allocated with: powers of two up to 4 MiB, then whole MiB.
fn size_class(bytes: u64) -> u64 {
    let b = bytes.max(16);
    if b <= 4 << 20 {
        b.next_power_of_two()
    } else {
        b.div_ceil(1 << 20) << 20
    }
}

pub(crate) const STORAGE: wgpu::BufferUsages = wgpu::BufferUsages::STORAGE
    .union(wgpu::BufferUsages::COPY_SRC)
    .union(wgpu::BufferUsages::COPY_DST);

impl State {
    fn new_buf(&mut self, gpu: &Gpu, bytes: u64, usage: wgpu::BufferUsages, label: &str) -> Buf {
        let size = size_class(bytes);
        self.next_buf += 1;
        self.stats.bytes_allocated += size;
        Buf {
            id: self.next_buf,
            buffer: gpu.device.create_buffer(&wgpu::BufferDescriptor {
                label: Some(label),
                size,
                usage,
                mapped_at_creation: false,
            }),
            size,
        }
    }

    /// A storage buffer of at least `bytes`, from the pool when one of the right class is free.
    /// The flag says whether it is fresh (zero-filled by wgpu) rather than reused.
    pub fn storage(&mut self, gpu: &Gpu, bytes: u64, label: &str) -> (Buf, bool) {
        let class = size_class(bytes);
        if let Some(b) = self.pool.get_mut(&class).and_then(Vec::pop) {
            self.stats.pool_reuses += 1;
            return (b, false);
        }
        (self.new_buf(gpu, bytes, STORAGE, label), true)
    }

    /// A storage buffer (pooled like any other, so with the copy usages a later Dat needs)
    /// holding `words`: a Map's values, a Subset's indices.
    pub fn upload_words(&mut self, gpu: &Gpu, words: &[u32], label: &str) -> Buf {
        let (b, _) = self.storage(gpu, words.len() as u64 * 4, label);
        if !words.is_empty() {
            gpu.queue
                .write_buffer(&b.buffer, 0, bytemuck::cast_slice(words));
        }
        b
    }

    pub fn staging_buf(&mut self, gpu: &Gpu, bytes: u64) -> Buf {
        let class = size_class(bytes);
        if let Some(b) = self.staging.get_mut(&class).and_then(Vec::pop) {
            return b;
        }
        let usage = wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST;
        self.new_buf(gpu, bytes, usage, "parloop readback")
    }

    pub fn release_staging(&mut self, b: Buf) {
        self.staging.entry(b.size).or_default().push(b);
    }

    /// Returns the buffers of dropped Dats, Globals, Maps and Subsets to the pool, and forgets
    /// bind groups that used them.
    pub fn purge(&mut self) {
        let mut freed = take_dead(&mut self.data);
        freed.extend(take_dead(&mut self.maps));
        freed.extend(take_dead(&mut self.subsets));
        if freed.is_empty() {
            return;
        }
        let ids: Vec<u64> = freed.iter().map(|b| b.id).collect();
        self.bind_groups
            .retain(|(_, bufs), _| !bufs.iter().any(|(id, _)| ids.contains(id)));
        for b in freed {
            self.pool.entry(b.size).or_default().push(b);
        }
    }
}

/// Removes the entries whose owner is gone and returns their buffers.
fn take_dead<T>(table: &mut HashMap<u64, (Weak<T>, Buf)>) -> Vec<Buf> {
    let dead: Vec<u64> = table
        .iter()
        .filter(|(_, (w, _))| w.strong_count() == 0)
        .map(|(&k, _)| k)
        .collect();
    dead.into_iter()
        .filter_map(|k| table.remove(&k).map(|(_, b)| b))
        .collect()
}
