//! The runtime: the wgpu device, device buffers (created at first use, pooled when their Dat is
//! gone), the pipeline and bind-group caches, plan buffers, and the executor that turns loop
//! groups into one command encoder and one submission per force.
//!
//! Owns: every wgpu object. Must never: decide what runs (the trace and the fusion pass do) or
//! what the shader says (codegen does).

mod cache;
mod check;
pub mod device;
mod encode;
pub(crate) mod exec;
mod host;
pub(crate) mod readback;
pub(crate) mod timing;

use crate::config::Config;
use crate::data::{DataInner, MapInner, SubsetInner};
use crate::plan::{BlockPlan, ColourPlan};
use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap};
use std::rc::{Rc, Weak};

pub use crate::lower::tune::{Tried, TuneReport};
pub use device::Gpu;

/// The device side of a Context: the device, everything held on it, the shaders of the last
/// force, and the settings that decide how work is encoded. Every runtime function takes it;
/// nothing outside the runtime calls wgpu.
pub(crate) struct Engine {
    pub gpu: Gpu,
    pub rt: RefCell<State>,
    /// The WGSL of the groups the last force ran.
    pub shaders: RefCell<Vec<Rc<str>>>,
    /// How each group the last force ran was scheduled: "global-colour (4 colours)".
    pub schedules: RefCell<Vec<String>>,
    /// The execution knobs lowering needs (from the configuration and the adapter).
    pub choice: crate::lower::Choice,
    /// Time each group (`Config::times_groups`): with timestamp queries where the adapter has
    /// them, else each group submitted alone and waited for.
    pub profile: bool,
    /// Groups are timed with timestamp queries (the adapter has them and
    /// `Config::gpu_timestamps`); otherwise with a synchronised wall clock.
    pub timestamps: bool,
    /// The timeline and the per-group table (`Config::trace`, `Config::profile_table`).
    pub profiler: crate::profile::Profiler,
    /// Without timestamps, time groups with the wall clock for the table or the timeline
    /// (`PARLOOP_PROFILE=1` alone times only with timestamps: it adds no submissions).
    pub wall_profile: bool,
    /// Submissions whose timestamps are still to be read (`timing::collect`).
    pub pending_times: RefCell<Vec<timing::PendingTimes>>,
    /// `Strategy::Tune`'s measurements and choices (None under any other strategy).
    pub tuner: RefCell<Option<crate::lower::tune::Tuner>>,
    /// `Config::grid_limit`.
    pub grid_limit: Option<u32>,
}

impl Engine {
    pub fn new(gpu: Gpu, config: &Config) -> Engine {
        let choice = crate::lower::Choice {
            strategy: config.strategy,
            staging: config.staging,
            block_size: config.block_size,
            balance: config.balance_colours,
            workgroup_size: config.workgroup_size,
            float_atomics: gpu.float_atomics(),
            int64_atomics: gpu.int64_atomics(),
            cpu_adapter: gpu.info.device_type == wgpu::DeviceType::Cpu,
            soa: config.soa,
            workgroup_memory: gpu.limits.max_compute_workgroup_storage_size as usize,
            check: config.check,
            reduction_workgroups: config
                .reduction_workgroups
                .unwrap_or(if gpu.info.device_type == wgpu::DeviceType::Cpu {
                    64
                } else {
                    4096
                })
                .max(1),
            min_colour_size: config.min_colour_size,
        };
        let timestamps = gpu.timestamps() && config.gpu_timestamps;
        // In the browser a force cannot wait for a wall clock: without timestamps `tune` runs
        // `auto`'s choice there, and the table and timeline get no GPU times.
        let wall_clock = !cfg!(target_arch = "wasm32");
        let tune = config.strategy == crate::config::Strategy::Tune;
        let tuner = (tune && (timestamps || wall_clock)).then(|| {
            let i = &gpu.info;
            crate::lower::tune::Tuner::new(
                format!(
                    "{} | {} {} | {:?}",
                    i.name, i.driver, i.driver_info, i.backend
                ),
                &config.tune_cache,
                config.tune_reps,
                gpu.limits
                    .max_compute_workgroup_size_x
                    .min(gpu.limits.max_compute_invocations_per_workgroup),
                timestamps,
            )
        });
        Engine {
            profiler: crate::profile::Profiler::new(config.trace.is_some()),
            tuner: RefCell::new(tuner),
            pending_times: RefCell::new(Vec::new()),
            rt: RefCell::new(State::with_soa(config.soa)),
            shaders: RefCell::new(Vec::new()),
            schedules: RefCell::new(Vec::new()),
            choice,
            profile: config.times_groups(),
            wall_profile: wall_clock && (config.profile_table || config.trace.is_some()),
            timestamps,
            grid_limit: config.grid_limit,
            gpu,
        }
    }

    /// A flag that turns true once the work submitted so far has completed (checked with
    /// [`Engine::poll_done`]).
    pub fn done_flag(&self) -> std::sync::Arc<std::sync::atomic::AtomicBool> {
        let flag = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let f = flag.clone();
        self.gpu
            .queue
            .on_submitted_work_done(move || f.store(true, std::sync::atomic::Ordering::SeqCst));
        flag
    }

    /// Waits until the work submitted so far has completed.
    pub async fn wait_done(&self) {
        let (tx, rx) = futures::channel::oneshot::channel();
        self.gpu.queue.on_submitted_work_done(move || {
            let _ = tx.send(());
        });
        #[cfg(not(target_arch = "wasm32"))]
        let _ = self.gpu.device.poll(wgpu::PollType::wait_indefinitely());
        let _ = rx.await;
    }

    /// The device buffer of `d`, when it has one.
    pub fn buffer(&self, d: &DataInner) -> Option<wgpu::Buffer> {
        self.rt
            .borrow()
            .data
            .get(&d.id)
            .map(|(_, b)| b.buffer.clone())
    }

    /// Whether the work behind `flag` has completed, without waiting for it.
    pub fn poll_done(&self, flag: &std::sync::atomic::AtomicBool) -> bool {
        #[cfg(not(target_arch = "wasm32"))]
        let _ = self.gpu.device.poll(wgpu::PollType::Poll);
        flag.load(std::sync::atomic::Ordering::SeqCst)
    }
}

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
    /// Dispatches timed.
    pub calls: u64,
    /// GPU nanoseconds, summed over them.
    pub ns: u64,
    /// Bytes moved, summed over them, by the profile's model: each value a loop reads or
    /// writes counted once (twice when it is read and written), Dats reached through a map
    /// at most once per element of the target set, plus the map indices read.
    pub bytes: u64,
}

/// Counters a user (and the benchmarks) can read.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    /// GPU time per group (kernel names joined by `+`), with `Config::profile` on an adapter
    /// with timestamp queries.
    pub kernel_times: BTreeMap<String, KernelTime>,
    /// Forces that ran any work.
    pub forces: u64,
    /// Command buffers submitted to the device queue.
    pub submissions: u64,
    /// Compute dispatches encoded.
    pub dispatches: u64,
    /// Workgroups those dispatches ran (a 2-D grid counts all its rows).
    pub workgroups: u64,
    /// par_loops executed (on either target).
    pub loops: u64,
    /// Loop groups executed (a fused group counts once).
    pub groups: u64,
    /// Compute pipelines compiled (a cache miss).
    pub pipelines_compiled: u64,
    /// Execution plans built (a cache miss).
    pub plans_built: u64,
    /// Forces whose loops fusion partitioned into groups (a miss of its cache: a force of the
    /// same loops, kernels, spaces and accesses as an earlier one reuses that grouping).
    pub groupings: u64,
    /// Microseconds spent building plans.
    pub plan_build_us: u64,
    /// Dats and Globals read back to the host.
    pub readbacks: u64,
    /// Host copies uploaded to the device.
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
    /// Pipelines cached now (at most 256; Consts do not multiply them).
    pub pipelines_cached: usize,
    /// Plans cached now (a plan goes with the Maps and Subset it was built from).
    pub plans_cached: usize,
    /// Bind groups cached now.
    pub bind_groups_cached: usize,
    /// Bytes of device memory held now (data, maps, plans, pooled and readback buffers).
    pub device_bytes: u64,
    /// Distributed runs: halo exchanges done, and those skipped because the halo was current
    /// when the loop was recorded (seed 001's early halo skip).
    pub halo_exchanges: u64,
    /// Exchanges not recorded (lazy) or not run (eager) because the halo was current.
    pub halo_exchanges_skipped: u64,
    /// Lazy mode: exchanges not recorded because an exchange of the same Dat, with no write
    /// since, was still in the trace (seed 001's successive exchanges: the second is removed).
    pub halo_exchanges_merged: u64,
    /// Lazy mode: rounds of a force that exchanged halos with core work on the device
    /// meanwhile, and of those, the rounds whose core work had completed on the device when
    /// the last receive completed (the exchange was hidden behind it).
    pub halo_overlap_rounds: u64,
    /// Of the overlapped rounds, those whose core work had completed on the device when the last receive completed (the test of the overlap uses it with a delayed receive).
    pub halo_core_first: u64,
    /// Lazy mode: time of the exchanges (messages sent and received) during which the device
    /// was still running the round's core work, ns: a lower bound of the exchange time hidden
    /// (an exchange whose core work finished first counts as not hidden at all).
    pub halo_hidden_ns: u64,
    /// Messages sent and bytes sent by halo exchanges.
    pub halo_messages: u64,
    /// Bytes sent by halo exchanges.
    pub halo_bytes: u64,
    /// Global reductions combined across ranks.
    pub global_reductions: u64,
    /// Lazy mode: of those, the reductions in flight over the ranks while work that does not
    /// need them was submitted to the device (begun as soon as the rank's value was computed,
    /// ended when a loop or the host needed the result).
    pub reductions_hidden: u64,
    /// Wall time spent in halo exchanges (pack, readback, messages, halo write), ns.
    pub halo_ns: u64,
}

impl Stats {
    /// A distributed run's exchanges between `since` and `self`, per `per` iterations (or
    /// steps), for a report line: exchanges done and not recorded (halo current, or merged
    /// with an exchange still in the trace), messages and bytes sent (and the messages without
    /// the simplifications), time in exchanges (share of `wall_s`), rounds that overlapped
    /// exchanges with core work and the share of exchange time hidden, device memory held.
    pub fn halo_report(&self, since: &Stats, per: f64, wall_s: f64) -> String {
        let d = |a: u64, b: u64| (a - b) as f64;
        let done = d(self.halo_exchanges, since.halo_exchanges);
        let skipped = d(self.halo_exchanges_skipped, since.halo_exchanges_skipped);
        let merged = d(self.halo_exchanges_merged, since.halo_exchanges_merged);
        let messages = d(self.halo_messages, since.halo_messages);
        let per_exchange = if done > 0.0 { messages / done } else { 0.0 };
        let ns = d(self.halo_ns, since.halo_ns);
        let rounds = d(self.halo_overlap_rounds, since.halo_overlap_rounds);
        let hidden = d(self.halo_hidden_ns, since.halo_hidden_ns);
        format!(
            "{:.2} exchanges ({:.2} skipped as current, {:.2} merged), {:.2} messages and {:.0} \
             bytes sent ({:.2} messages without the simplifications), {:.2} ms in exchanges \
             ({:.1}% of the time), {:.2} rounds overlapping exchanges with core work (at least \
             {:.0}% of the exchange time hidden behind it), {:.1} MB of device memory held",
            done / per,
            skipped / per,
            merged / per,
            messages / per,
            d(self.halo_bytes, since.halo_bytes) / per,
            (done + skipped + merged) * per_exchange / per,
            ns / 1e6 / per,
            ns / 1e9 / wall_s.max(1e-9) * 100.0,
            rounds / per,
            if ns > 0.0 { hidden / ns * 100.0 } else { 0.0 },
            self.device_bytes as f64 / 1e6
        )
    }
}

/// A built plan and its packed device buffer.
pub(crate) struct PlanEntry {
    pub colour: Option<ColourPlan>,
    pub blocks: Option<BlockPlan>,
    pub buffer: Buf,
    /// Largest staged target count per staged map (hierarchical).
    pub maxu: Vec<usize>,
    /// Once one of the Maps or the Subset it was built from is dropped, so is the plan.
    pub deps: cache::PlanDeps,
}

/// Pipelines kept at most; the least recently used goes first (a program that keeps making
/// new kernels must not keep every shader it ever compiled).
pub(crate) const MAX_PIPELINES: usize = 256;

/// One dispatch: the pipeline, the bind group (by cache key), the params slot, the grid.
pub(crate) struct Cmd {
    pub pipeline: Rc<Pipeline>,
    /// Buffers in binding order after the params arena: (buffer id, bound bytes).
    pub bufs: Vec<(u64, u64)>,
    pub params: usize,
    /// Bytes of the params binding (fixed fields plus the group's Const words).
    pub params_bytes: u64,
    pub grid: (u32, u32),
    /// Index of the group in the force (for per-group timing).
    pub group: usize,
}

/// Bytes a storage binding covers (at least 4).
pub(crate) fn bound(bytes: u64) -> u64 {
    bytes.max(4)
}

pub(crate) struct Pipeline {
    pub id: u64,
    /// The force that last used it (for the least-recently-used bound).
    pub last_used: std::cell::Cell<u64>,
    pub pipeline: wgpu::ComputePipeline,
    pub layout: wgpu::BindGroupLayout,
}

/// A generated shader: the IR it came from (Const values aside, see
/// [`crate::codegen::GroupIr::same_shader`]), its WGSL and checking mode's guarded sites.
pub(crate) struct Generated {
    pub ir: crate::codegen::GroupIr,
    pub wgsl: Rc<str>,
    pub sites: Vec<crate::codegen::check::CheckSite>,
}

/// Runtime state of a context.
#[derive(Default)]
pub(crate) struct State {
    pub data: HashMap<u64, (Weak<DataInner>, Buf)>,
    pub maps: HashMap<u64, (Weak<MapInner>, Buf)>,
    pub subsets: HashMap<u64, (Weak<SubsetInner>, Buf)>,
    pub plans: HashMap<String, Rc<PlanEntry>>,
    /// `auto`'s look at colourings, by plan key ([`encode::auto_colours`]).
    pub auto_colours: HashMap<String, encode::AutoColours>,
    pub pipelines: HashMap<String, Rc<Pipeline>>,
    /// The shaders generated so far, by [`crate::codegen::GroupIr::shader_hash`]: a group
    /// that recurs is not generated again at every force.
    pub shaders: HashMap<u64, Vec<Generated>>,
    pub bind_groups: HashMap<(u64, Vec<(u64, u64)>), wgpu::BindGroup>,
    /// Free storage buffers by size class.
    pub pool: BTreeMap<u64, Vec<Buf>>,
    /// Free readback buffers by size class.
    pub staging: BTreeMap<u64, Vec<Buf>>,
    pub params: Option<Buf>,
    pub scratch: Option<Buf>,
    /// Checking mode's records.
    pub check: Option<Buf>,
    /// Readbacks started and not waited for (prefetches).
    pub inflight: Vec<readback::Inflight>,
    pub stats: Stats,
    next_buf: u64,
    /// Forces so far (the clock of the pipeline cache).
    pub tick: u64,
    /// Dats of dim > 1 are struct-of-arrays on the device (`Config::soa`).
    pub soa: bool,
}

impl State {
    /// A fresh runtime state; `soa`: Dats of dim > 1 are struct-of-arrays.
    pub fn with_soa(soa: bool) -> State {
        State {
            soa,
            ..Default::default()
        }
    }
    /// Whether `d` is struct-of-arrays on the device.
    pub fn is_soa(&self, d: &DataInner) -> bool {
        self.soa && d.dim > 1 && !d.is_global()
    }
}

/// A Dat's words in host order (element by element) as the device holds them when SoA:
/// value k of element e at k x n + e, each value `w` words (2 for f64). `back` undoes it.
pub(crate) fn transpose(words: &[u32], dim: usize, w: usize, back: bool) -> Vec<u32> {
    let n = words.len() / (dim * w);
    let mut out = vec![0u32; words.len()];
    for e in 0..n {
        for k in 0..dim {
            let (aos, soa) = ((e * dim + k) * w, (k * n + e) * w);
            let (from, to) = if back { (soa, aos) } else { (aos, soa) };
            out[to..to + w].copy_from_slice(&words[from..from + w]);
        }
    }
    out
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

    /// Returns the buffers of dropped Dats, Globals, Maps and Subsets to the pool, drops the
    /// plans built from dropped Maps and Subsets, and forgets bind groups that used any of them.
    pub fn purge(&mut self) {
        self.tick += 1;
        // Prefetches of dropped data: nobody can read them.
        if self.inflight.iter().any(readback::Inflight::orphaned) {
            let (gone, kept) = std::mem::take(&mut self.inflight)
                .into_iter()
                .partition(readback::Inflight::orphaned);
            self.inflight = kept;
            let gone: Vec<readback::Inflight> = gone;
            gone.into_iter().for_each(readback::Inflight::cancel);
        }
        let mut freed = take_dead(&mut self.data);
        freed.extend(take_dead(&mut self.maps));
        freed.extend(take_dead(&mut self.subsets));
        let plans = self.plans.len();
        self.plans.retain(|_, p| p.deps.alive());
        self.auto_colours.retain(|_, a| a.deps.alive());
        if freed.is_empty() && plans == self.plans.len() {
            return;
        }
        for b in freed {
            self.pool.entry(b.size).or_default().push(b);
        }
        self.prune_bind_groups();
    }

    /// Forgets the bind groups that refer to a buffer or pipeline no longer in use.
    pub fn prune_bind_groups(&mut self) {
        let mut live: std::collections::HashSet<u64> = self
            .data
            .values()
            .map(|(_, b)| b.id)
            .chain(self.maps.values().map(|(_, b)| b.id))
            .chain(self.subsets.values().map(|(_, b)| b.id))
            .chain(self.plans.values().map(|p| p.buffer.id))
            .chain(self.scratch.iter().map(|b| b.id))
            .chain(self.check.iter().map(|b| b.id))
            .chain(self.params.iter().map(|b| b.id))
            .collect();
        live.insert(0);
        let pipelines: std::collections::HashSet<u64> =
            self.pipelines.values().map(|p| p.id).collect();
        self.bind_groups.retain(|(pipeline, bufs), _| {
            pipelines.contains(pipeline) && bufs.iter().all(|(id, _)| live.contains(id))
        });
    }

    /// Keeps at most [`MAX_PIPELINES`] pipelines, dropping the least recently used.
    pub fn bound_pipelines(&mut self) {
        if self.pipelines.len() <= MAX_PIPELINES {
            return;
        }
        let mut by_age: Vec<(u64, String)> = self
            .pipelines
            .iter()
            .map(|(k, p)| (p.last_used.get(), k.clone()))
            .collect();
        by_age.sort();
        for (_, k) in by_age.iter().take(self.pipelines.len() - MAX_PIPELINES) {
            self.pipelines.remove(k);
        }
        self.prune_bind_groups();
    }

    /// Bytes of device memory parloop holds now: data, maps, subsets, plans, the pool, readback
    /// buffers, parameters and scratch.
    pub fn device_bytes(&self) -> u64 {
        self.data.values().map(|(_, b)| b.size).sum::<u64>()
            + self.maps.values().map(|(_, b)| b.size).sum::<u64>()
            + self.subsets.values().map(|(_, b)| b.size).sum::<u64>()
            + self.plans.values().map(|p| p.buffer.size).sum::<u64>()
            + self.pool.values().flatten().map(|b| b.size).sum::<u64>()
            + self.staging.values().flatten().map(|b| b.size).sum::<u64>()
            + self
                .inflight
                .iter()
                .map(readback::Inflight::bytes)
                .sum::<u64>()
            + self
                .params
                .iter()
                .chain(self.scratch.iter())
                .chain(self.check.iter())
                .map(|b| b.size)
                .sum::<u64>()
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
