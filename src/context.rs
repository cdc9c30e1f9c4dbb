//! The context: one device, its lazy trace, and the user-facing operations (make data, record
//! par_loops, force results). Every host access forces the trace with its intent (seed 004):
//! `data()` read-write, `data_ro()` read-only, `Global::value()` read-only, host writes
//! write-only.

pub use crate::config::Config;
use crate::data::{Arg, ConstValue, Dat, DataInner, Global, IterSpace, Via, section};
use crate::error::{Error, Result};
use crate::fuse::{self, Group};
use crate::kernel::{Kernel, KernelProblem, consts_used, expected_type};
use crate::runtime::lower::{Choice, Strategy};
use crate::runtime::{self, Gpu, Stats};
use crate::trace::{AccessSet, LoopRecord, Reason, Trace};
use crate::types::{Access, DType, Scalar};
use std::cell::{Ref, RefCell, RefMut};
use std::future::Future;
use std::marker::PhantomData;
use std::panic::Location;
use std::rc::Rc;

pub(crate) struct Inner {
    pub gpu: Gpu,
    pub config: Config,
    pub trace: RefCell<Trace>,
    pub rt: RefCell<runtime::State>,
    pub consts: RefCell<Vec<(String, ConstValue)>>,
    pub explain: RefCell<String>,
    pub fuse_cache: RefCell<std::collections::HashMap<String, fuse::Cached>>,
    /// The WGSL of the groups the last force ran.
    pub shaders: RefCell<Vec<String>>,
}

impl Inner {
    pub fn choice(&self) -> Choice {
        Choice {
            strategy: self.config.strategy,
            staging: self.config.staging,
            block_size: self.config.block_size,
            balance: self.config.balance_colours,
            workgroup_size: self.config.workgroup_size,
            float_atomics: self.gpu.float_atomics(),
            workgroup_memory: self.gpu.limits.max_compute_workgroup_storage_size as usize,
            check: self.config.check,
        }
    }
}

/// A GPU device with a lazy trace of par_loops. Cheap to clone (shared).
#[derive(Clone)]
pub struct Context(pub(crate) Rc<Inner>);

/// Runs a future to completion: blocking natively; in the browser only when it needs no wait.
fn block<T>(f: impl Future<Output = Result<T>>) -> Result<T> {
    #[cfg(not(target_arch = "wasm32"))]
    {
        pollster::block_on(f)
    }
    #[cfg(target_arch = "wasm32")]
    {
        use futures::FutureExt;
        f.now_or_never().unwrap_or_else(|| {
            Err(Error::Usage(
                "this needs a GPU readback, which the browser cannot wait for synchronously: \
                 use the _async variant"
                    .into(),
            ))
        })
    }
}

impl Context {
    /// Opens the adapter chosen by the environment (see [`Config::from_env`]).
    #[cfg(not(target_arch = "wasm32"))]
    pub fn new() -> Result<Context> {
        Context::with_config(Config::from_env()?)
    }
    #[cfg(not(target_arch = "wasm32"))]
    pub fn with_config(config: Config) -> Result<Context> {
        pollster::block_on(Context::new_async(config))
    }
    pub async fn new_async(config: Config) -> Result<Context> {
        let gpu = runtime::device::open(&config.adapter).await?;
        let max = gpu
            .limits
            .max_compute_invocations_per_workgroup
            .min(gpu.limits.max_compute_workgroup_size_x);
        if config.workgroup_size == 0 || config.workgroup_size > max {
            return Err(Error::Usage(format!(
                "Config::workgroup_size is {}, but adapter {} runs 1 to {max} invocations per \
                 workgroup: choose a size in that range (64 is the default)",
                config.workgroup_size,
                gpu.describe()
            )));
        }
        Ok(Context(Rc::new(Inner {
            gpu,
            config,
            trace: RefCell::new(Trace::default()),
            rt: RefCell::new(runtime::State::default()),
            consts: RefCell::new(Vec::new()),
            explain: RefCell::new(String::new()),
            fuse_cache: RefCell::new(std::collections::HashMap::new()),
            shaders: RefCell::new(Vec::new()),
        })))
    }
    pub fn config(&self) -> &Config {
        &self.0.config
    }
    /// The adapter's name and backend.
    pub fn adapter(&self) -> String {
        self.0.gpu.describe()
    }
    pub fn gpu(&self) -> &Gpu {
        &self.0.gpu
    }
    /// Counters since the Context was made, and the caches' sizes and device memory now.
    pub fn stats(&self) -> Stats {
        let st = self.0.rt.borrow();
        Stats {
            pipelines_cached: st.pipelines.len(),
            plans_cached: st.plans.len(),
            bind_groups_cached: st.bind_groups.len(),
            device_bytes: st.device_bytes(),
            ..st.stats.clone()
        }
    }
    /// Pending (recorded, not yet run) loops.
    pub fn pending(&self) -> usize {
        self.0.trace.borrow().len()
    }
    /// The pending trace as Graphviz dot.
    pub fn trace_dot(&self) -> String {
        self.0.trace.borrow().to_dot()
    }
    /// The direct dependencies of pending loops, as (kernel, kernel) name pairs in program order.
    pub fn trace_edges(&self) -> Vec<(String, String)> {
        let t = self.0.trace.borrow();
        let name = |seq: u64| {
            t.pending()
                .iter()
                .find(|c| c.seq == seq)
                .map(|c| c.kernel.name().to_string())
                .unwrap_or_default()
        };
        t.edges()
            .into_iter()
            .map(|(a, b)| (name(a), name(b)))
            .collect()
    }
    /// The device buffer holding a Dat's current values (`dim` values of 4 bytes per element),
    /// for rendering straight from simulation data. None until a loop has run on it, or while
    /// the host holds newer values. Pending loops that write the Dat have not run yet: flush
    /// first.
    pub fn device_buffer<T: Scalar>(&self, dat: &Dat<T>) -> Option<wgpu::Buffer> {
        if !dat.inner.device_valid.get() {
            return None;
        }
        self.0
            .rt
            .borrow()
            .data
            .get(&dat.inner.id)
            .map(|(_, b)| b.buffer.clone())
    }

    /// The WGSL modules of the loop groups the last force ran on the GPU.
    pub fn shaders(&self) -> Vec<String> {
        self.0.shaders.borrow().clone()
    }
    /// What the last force ran: its groups, their loops, the cuts and ephemeral Dats.
    pub fn explain(&self) -> String {
        self.0.explain.borrow().clone()
    }

    /// Declares (or changes) a Const. Loops recorded afterwards see the new value.
    pub fn constant(&self, name: &str, value: impl Into<ConstValue>) -> Result<()> {
        if !crate::codegen::wgsl::is_valid_const_name(name) {
            return Err(Error::Data(format!(
                "Const name {name:?} is not a WGSL identifier (letters, digits, `_`; not \
                 starting with a digit or `pl_`)"
            )));
        }
        let value = value.into();
        if value.words.is_empty() {
            return Err(Error::Data(format!("Const `{name}` has no values")));
        }
        let mut consts = self.0.consts.borrow_mut();
        match consts.iter_mut().find(|(n, _)| n == name) {
            Some(slot) => slot.1 = value,
            None => consts.push((name.to_string(), value)),
        }
        Ok(())
    }

    fn data_inner(
        &self,
        name: &str,
        set: Option<&crate::data::Set>,
        dim: usize,
        dtype: DType,
    ) -> Rc<DataInner> {
        Rc::new(DataInner {
            id: crate::data::next_id(),
            name: name.to_string(),
            set: set.cloned(),
            dim,
            dtype,
            ctx: Rc::downgrade(&self.0),
            host: RefCell::new(Vec::new()),
            host_valid: std::cell::Cell::new(false),
            device_valid: std::cell::Cell::new(false),
            alive: std::cell::Cell::new(true),
        })
    }

    /// A Dat with initial values (`dim` per element of `set`, halos included).
    pub fn dat<T: Scalar>(
        &self,
        name: &str,
        set: &crate::data::Set,
        dim: usize,
        values: &[T],
    ) -> Result<Dat<T>> {
        if dim == 0 {
            return Err(Error::Data(format!("Dat `{name}`: dim must be at least 1")));
        }
        let n = values_for(name, set, dim)?;
        if values.len() != n {
            return Err(Error::Data(format!(
                "Dat `{name}`: got {} values, expected {} ({} elements of `{}` x dim {dim})",
                values.len(),
                n,
                set.total(),
                set.name()
            )));
        }
        let inner = self.data_inner(name, Some(set), dim, T::DTYPE);
        *inner.host.borrow_mut() = bytemuck::cast_slice(values).to_vec();
        inner.host_valid.set(true);
        Ok(Dat {
            inner,
            _t: PhantomData,
        })
    }

    /// A Dat of zeros (no host memory until the host asks).
    pub fn dat_zeros<T: Scalar>(
        &self,
        name: &str,
        set: &crate::data::Set,
        dim: usize,
    ) -> Result<Dat<T>> {
        if dim == 0 {
            return Err(Error::Data(format!("Dat `{name}`: dim must be at least 1")));
        }
        values_for(name, set, dim)?;
        Ok(Dat {
            inner: self.data_inner(name, Some(set), dim, T::DTYPE),
            _t: PhantomData,
        })
    }

    /// A Global holding `values` (its dim is their number).
    pub fn global<T: Scalar>(&self, name: &str, values: &[T]) -> Result<Global<T>> {
        if values.is_empty() {
            return Err(Error::Data(format!(
                "Global `{name}` needs at least one value"
            )));
        }
        let inner = self.data_inner(name, None, values.len(), T::DTYPE);
        *inner.host.borrow_mut() = bytemuck::cast_slice(values).to_vec();
        inner.host_valid.set(true);
        Ok(Global {
            inner,
            _t: PhantomData,
        })
    }

    /// Records a loop of `kernel` over `space` (a Set or Subset) with `args`. Lazy by default:
    /// it runs when a result it affects is needed. Input errors are reported here, naming the
    /// par_loop (kernel, caller's file:line) and the argument.
    #[track_caller]
    pub fn par_loop(
        &self,
        kernel: &Kernel,
        space: impl Into<IterSpace>,
        args: &[Arg],
    ) -> Result<()> {
        let site = Location::caller();
        let space = space.into();
        self.check_loop(kernel, &space, args, site)?;
        let consts = {
            let all = self.0.consts.borrow();
            kernel
                .wgsl()
                .map(|src| consts_used(src, &all).into_iter().cloned().collect())
                .unwrap_or_default()
        };
        let (reads, writes) = LoopRecord::access_sets(&space, args);
        let rec = {
            let mut t = self.0.trace.borrow_mut();
            let rec = Rc::new(LoopRecord {
                seq: t.next_seq(),
                kernel: kernel.clone(),
                space,
                args: args.to_vec(),
                site,
                consts,
                reads,
                writes,
            });
            t.record(rec.clone());
            rec
        };
        if !self.0.config.lazy {
            let _ = rec;
            let all = self.0.trace.borrow_mut().take_all();
            return block(self.run(all, &[], "eager"));
        }
        let (len, bound) = (
            self.0.trace.borrow().len(),
            self.0.config.trace_bound.max(1),
        );
        if len > bound {
            let oldest = self.0.trace.borrow_mut().take_prefix(len - bound / 2);
            return block(self.run(oldest, &[], "trace bound"));
        }
        Ok(())
    }

    /// Runs everything pending.
    pub fn flush(&self) -> Result<()> {
        let all = self.0.trace.borrow_mut().take_all();
        block(self.run(all, &[], "flush"))
    }
    pub async fn flush_async(&self) -> Result<()> {
        let all = self.0.trace.borrow_mut().take_all();
        self.run(all, &[], "flush").await
    }

    /// Forces what `reads` (for reading) and `writes` (for writing) need, then reads back
    /// `readback`.
    pub(crate) fn force(
        &self,
        reads: &AccessSet,
        writes: &AccessSet,
        readback: &[Rc<DataInner>],
        why: &str,
    ) -> Result<()> {
        block(self.force_async(reads, writes, readback, why))
    }

    pub(crate) async fn force_async(
        &self,
        reads: &AccessSet,
        writes: &AccessSet,
        readback: &[Rc<DataInner>],
        why: &str,
    ) -> Result<()> {
        let selected = {
            let mut t = self.0.trace.borrow_mut();
            t.prune_dead();
            t.evaluate(reads, writes)
        };
        self.run(selected, readback, why).await
    }

    async fn run(
        &self,
        selected: Vec<(Rc<LoopRecord>, Reason)>,
        readback: &[Rc<DataInner>],
        why: &str,
    ) -> Result<()> {
        if !selected.is_empty() {
            for (c, r) in &selected {
                log::debug!(
                    "force ({why}): runs {} because of {} on data #{} ({})",
                    c.name(),
                    r.kind,
                    r.data,
                    describe_mask(r.mask)
                );
            }
            let mut st = self.0.rt.borrow_mut();
            st.stats.forces += 1;
            st.stats.last_dispatches = 0;
            self.0.shaders.borrow_mut().clear();
        }
        // Loops whose effect nobody can observe do not run (reads of loops still pending count).
        let still_pending: std::collections::BTreeSet<u64> = self
            .0
            .trace
            .borrow()
            .pending()
            .iter()
            .flat_map(|c| c.reads.ids().collect::<Vec<_>>())
            .collect();
        let all: Vec<Rc<LoopRecord>> = selected.into_iter().map(|(c, _)| c).collect();
        let live = crate::trace::live_mask(&all, still_pending.clone());
        let loops: Vec<Rc<LoopRecord>> = all
            .into_iter()
            .zip(live)
            .filter_map(|(l, k)| k.then_some(l))
            .collect();
        let env = fuse::FuseEnv {
            fusion: self.0.config.fusion,
            max_storage: self.0.gpu.limits.max_storage_buffers_per_shader_stage as usize,
            pending_reads: still_pending,
        };
        let (groups, explain): (Vec<Group>, String) =
            fuse::groups(&loops, &env, &mut self.0.fuse_cache.borrow_mut());
        let result = runtime::exec::run(&self.0, &groups, readback).await;
        if !groups.is_empty() {
            let dispatches = self.0.rt.borrow().stats.last_dispatches;
            *self.0.explain.borrow_mut() = format!("{explain}  dispatches: {dispatches}\n");
        }
        result
    }

    fn check_loop(
        &self,
        kernel: &Kernel,
        space: &IterSpace,
        args: &[Arg],
        site: &'static Location<'static>,
    ) -> Result<()> {
        let name = format!(
            "par_loop `{}` at {}:{}",
            kernel.name(),
            site.file(),
            site.line()
        );
        let arg_err = |i: usize, a: &Arg, msg: String| {
            Error::ParLoop(format!(
                "{name}: argument {} ({}): {msg}",
                i + 1,
                a.describe()
            ))
        };
        let set = space.set();
        for (i, a) in args.iter().enumerate() {
            if !std::ptr::eq(a.data.ctx.as_ptr(), Rc::as_ptr(&self.0)) {
                return Err(arg_err(
                    i,
                    a,
                    format!(
                        "{} `{}` belongs to another Context",
                        a.data.kind(),
                        a.data.name
                    ),
                ));
            }
            match &a.via {
                Via::Direct => {
                    let ds = a.data.set.as_ref().expect("Dat");
                    if !ds.same(set) {
                        return Err(arg_err(
                            i,
                            a,
                            format!(
                                "Dat `{}` lives on set `{}`, but the par_loop iterates over `{}`: pass it \
                                 through a map from `{}` to `{}`",
                                a.data.name,
                                ds.name(),
                                set.name(),
                                set.name(),
                                ds.name()
                            ),
                        ));
                    }
                }
                Via::Map(m, _) | Via::MapAll(m) => {
                    let ds = a.data.set.as_ref().expect("Dat");
                    if !m.from_set().same(set) {
                        return Err(arg_err(
                            i,
                            a,
                            format!(
                                "map `{}` goes from `{}`, but the par_loop iterates over `{}`",
                                m.name(),
                                m.from_set().name(),
                                set.name()
                            ),
                        ));
                    }
                    if !m.to_set().same(ds) {
                        return Err(arg_err(
                            i,
                            a,
                            format!(
                                "map `{}` leads to `{}`, but Dat `{}` lives on `{}`",
                                m.name(),
                                m.to_set().name(),
                                a.data.name,
                                ds.name()
                            ),
                        ));
                    }
                    if let Via::Map(_, j) = a.via {
                        if j >= m.arity() {
                            return Err(arg_err(
                                i,
                                a,
                                format!(
                                    "index {j} is out of range for map `{}` of arity {} (valid 0..={})",
                                    m.name(),
                                    m.arity(),
                                    m.arity() - 1
                                ),
                            ));
                        }
                    }
                    if a.access.stores() {
                        let idx = match a.via {
                            Via::Map(_, j) => Some(j),
                            _ => None,
                        };
                        if !m.injective(idx) {
                            return Err(arg_err(
                                i,
                                a,
                                format!(
                                    "{} through map `{}` is not allowed because the map is not injective \
                                     ({}): two elements would write the same entry; use INC, or a map that \
                                     sends each element to distinct entries",
                                    a.access,
                                    m.name(),
                                    collision(m, idx)
                                ),
                            ));
                        }
                    }
                }
                Via::Global => {
                    if matches!(a.access, Access::Write | Access::Rw) {
                        return Err(arg_err(
                            i,
                            a,
                            "a Global is READ or reduced (INC, MIN, MAX) by a par_loop; elements writing \
                             it directly would race"
                                .into(),
                        ));
                    }
                }
            }
            for (j, b) in args[..i].iter().enumerate() {
                if b.data.id != a.data.id {
                    continue;
                }
                let both_read = a.access == Access::Read && b.access == Access::Read;
                let both_racing_same = a.access == b.access
                    && a.access.is_reduction()
                    && !matches!(a.via, Via::Direct);
                if !(both_read || both_racing_same) {
                    return Err(arg_err(
                        i,
                        a,
                        format!(
                            "argument {} ({}) uses the same {}: one par_loop may pass a Dat several \
                             times only to READ it, or to reduce it through maps with one mode; merge \
                             them into one argument or split the loop",
                            j + 1,
                            b.describe(),
                            a.data.kind()
                        ),
                    ));
                }
            }
            let max = self.0.gpu.limits.max_storage_buffer_binding_size;
            if a.data.bytes() > max {
                return Err(arg_err(
                    i,
                    a,
                    format!(
                        "{} `{}` needs {} bytes, over the adapter's max_storage_buffer_binding_size of {max} \
                         bytes: split it into several Dats",
                        a.data.kind(),
                        a.data.name,
                        a.data.bytes()
                    ),
                ));
            }
        }
        // Storage buffers this loop needs on its own.
        let mut ids: Vec<u64> = args.iter().map(|a| a.data.id).collect();
        ids.extend(
            args.iter()
                .filter_map(|a| a.map().map(|m| m.id() | 1 << 63)),
        );
        ids.sort_unstable();
        ids.dedup();
        let racing_f32 = args.iter().any(|a| a.races() && a.data.dtype == DType::F32);
        let extra = usize::from(space.subset().is_some() || racing_f32)
            + usize::from(
                args.iter()
                    .any(|a| matches!(a.via, Via::Global) && a.access.is_reduction()),
            );
        let need = ids.len() + extra;
        let limit = self.0.gpu.limits.max_storage_buffers_per_shader_stage as usize;
        if need > limit {
            return Err(Error::ParLoop(format!(
                "{name}: needs {need} storage buffers (Dats, Globals, Maps and plan arrays), the adapter \
                 allows {limit} per shader stage: split the loop"
            )));
        }
        if racing_f32 && self.0.config.strategy == Strategy::Atomics && !self.0.gpu.float_atomics()
        {
            return Err(Error::ParLoop(format!(
                "{name}: strategy `atomics` needs native f32 atomics (SHADER_FLOAT32_ATOMIC), which \
                 adapter {} lacks: use `hierarchical`, `global-colour` or `cas`",
                self.adapter()
            )));
        }
        // The kernel itself.
        if kernel.wgsl().is_none() && !kernel.has_host() {
            return Err(Error::Kernel(format!(
                "{name}: the kernel has neither WGSL nor a host closure"
            )));
        }
        let expected: Vec<(DType, usize)> =
            args.iter().map(|a| (a.data.dtype, a.width())).collect();
        let consts = self.0.consts.borrow();
        kernel
            .check(&consts, &expected, self.0.gpu.capabilities())
            .map_err(|p| match p {
                KernelProblem::Wgsl { line, column, message } => Error::Kernel(format!(
                    "{name}: kernel `{}` does not compile: line {line}, column {column} of the kernel: {message}",
                    kernel.name()
                )),
                KernelProblem::NotFound { functions } => Error::Kernel(format!(
                    "{name}: no function named `{}` in the kernel's WGSL (functions found: {}); the \
                     kernel's name must be the name of its WGSL function",
                    kernel.name(),
                    if functions.is_empty() { "none".to_string() } else { functions.join(", ") }
                )),
                KernelProblem::ArgCount { declared } => Error::ParLoop(format!(
                    "{name}: the kernel declares {declared} arguments, the par_loop passes {}",
                    args.len()
                )),
                KernelProblem::ArgType { index, declared } => arg_err(
                    index,
                    &args[index],
                    format!(
                        "the kernel declares `{declared}`, but this argument needs `{}` ({})",
                        expected_type(expected[index].0, expected[index].1),
                        match &args[index].via {
                            Via::MapAll(m) => format!("arity {} x dim {}", m.arity(), args[index].data.dim),
                            _ => format!("dim {}", args[index].data.dim),
                        }
                    ),
                ),
            })
    }
}

/// Two elements that share a target through `map` (for error messages).
fn collision(m: &crate::data::Map, idx: Option<usize>) -> String {
    let a = m.arity();
    let mut first = std::collections::HashMap::new();
    for (k, &t) in m.values().iter().enumerate() {
        if idx.is_some_and(|j| k % a != j) {
            continue;
        }
        if let Some(prev) = first.insert(t, k) {
            return format!(
                "element {} (index {}) and element {} (index {}) both map to {t}",
                prev / a,
                prev % a,
                k / a,
                k % a
            );
        }
    }
    "duplicate targets".into()
}

fn describe_mask(mask: u8) -> String {
    let names: Vec<&str> = (0..4)
        .filter(|b| mask >> b & 1 == 1)
        .map(|b| section::NAMES[b])
        .collect();
    names.join(", ")
}

/// Values a Dat of `dim` on `set` holds, or an error when that does not fit in memory.
fn values_for(name: &str, set: &crate::data::Set, dim: usize) -> Result<usize> {
    set.total()
        .checked_mul(dim)
        .filter(|&n| n.checked_mul(4).is_some())
        .ok_or_else(|| {
            Error::Data(format!(
                "Dat `{name}`: {} elements of `{}` x dim {dim} values overflow the address space",
                set.total(),
                set.name()
            ))
        })
}

fn context_of(d: &DataInner) -> Result<Context> {
    d.ctx.upgrade().map(Context).ok_or_else(|| {
        Error::Usage(format!(
            "the Context of {} `{}` was dropped",
            d.kind(),
            d.name
        ))
    })
}

fn all_sections(d: &DataInner) -> AccessSet {
    AccessSet::of(d.id, section::ALL)
}

impl DataInner {
    /// Forces what reading (and, with `write`, writing) this data needs and reads it back.
    async fn sync_host(self: &Rc<Self>, write: bool) -> Result<()> {
        let ctx = context_of(self)?;
        let r = all_sections(self);
        let w = if write { r.clone() } else { AccessSet::new() };
        ctx.force_async(
            &r,
            &w,
            std::slice::from_ref(self),
            if write { "data()" } else { "data_ro()" },
        )
        .await?;
        self.ensure_host_zeros();
        Ok(())
    }

    /// Runs pending readers and writers, then replaces the host copy.
    fn write_host(self: &Rc<Self>, words: &[u32]) -> Result<()> {
        let ctx = context_of(self)?;
        ctx.force(&AccessSet::new(), &all_sections(self), &[], "host write")?;
        let mut h = self.host.try_borrow_mut().map_err(|_| {
            Error::Usage(format!(
                "{} `{}` is borrowed by a data guard: drop it before writing",
                self.kind(),
                self.name
            ))
        })?;
        h.clear();
        h.extend_from_slice(words);
        self.host_valid.set(true);
        self.device_valid.set(false);
        Ok(())
    }

    fn read_guard<T: Scalar>(&self) -> Result<Ref<'_, [T]>> {
        let r = self.host.try_borrow().map_err(|_| {
            Error::Usage(format!(
                "{} `{}` is mutably borrowed by a data() guard",
                self.kind(),
                self.name
            ))
        })?;
        Ok(Ref::map(r, |v| bytemuck::cast_slice(v.as_slice())))
    }

    fn write_guard<T: Scalar>(&self) -> Result<RefMut<'_, [T]>> {
        let r = self.host.try_borrow_mut().map_err(|_| {
            Error::Usage(format!(
                "{} `{}` is already borrowed by a data guard",
                self.kind(),
                self.name
            ))
        })?;
        self.device_valid.set(false);
        self.host_valid.set(true);
        Ok(RefMut::map(r, |v| {
            bytemuck::cast_slice_mut(v.as_mut_slice())
        }))
    }
}

impl<T: Scalar> Dat<T> {
    /// Current values for reading: runs the pending loops that write this Dat, reads it back.
    #[cfg(not(target_arch = "wasm32"))]
    pub fn data_ro(&self) -> Result<Ref<'_, [T]>> {
        pollster::block_on(self.inner.sync_host(false))?;
        self.inner.read_guard()
    }
    pub async fn data_ro_async(&self) -> Result<Ref<'_, [T]>> {
        self.inner.sync_host(false).await?;
        self.inner.read_guard()
    }
    /// Current values for reading and writing: also runs pending loops that read this Dat;
    /// later loops see what the host changes.
    #[cfg(not(target_arch = "wasm32"))]
    pub fn data(&mut self) -> Result<RefMut<'_, [T]>> {
        pollster::block_on(self.inner.sync_host(true))?;
        self.inner.write_guard()
    }
    pub async fn data_async(&mut self) -> Result<RefMut<'_, [T]>> {
        self.inner.sync_host(true).await?;
        self.inner.write_guard()
    }
    /// Replaces the values from the host (after pending loops that read or write them).
    pub fn set_data(&mut self, values: &[T]) -> Result<()> {
        if values.len() != self.inner.len() {
            return Err(Error::Data(format!(
                "Dat `{}`: got {} values, expected {}",
                self.inner.name,
                values.len(),
                self.inner.len()
            )));
        }
        self.inner.write_host(bytemuck::cast_slice(values))
    }
}

impl<T: Scalar> Global<T> {
    /// The current value: runs the pending loops that reduce into it.
    #[cfg(not(target_arch = "wasm32"))]
    pub fn value(&self) -> Result<Vec<T>> {
        pollster::block_on(self.value_async())
    }
    pub async fn value_async(&self) -> Result<Vec<T>> {
        self.inner.sync_host(false).await?;
        Ok(self.inner.read_guard::<T>()?.to_vec())
    }
    /// Sets the value from the host (after pending loops that use it).
    pub fn set(&self, values: &[T]) -> Result<()> {
        if values.len() != self.inner.dim {
            return Err(Error::Data(format!(
                "Global `{}` has dim {}, got {} values",
                self.inner.name,
                self.inner.dim,
                values.len()
            )));
        }
        self.inner.write_host(bytemuck::cast_slice(values))
    }
}
