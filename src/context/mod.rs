//! The context: one device, its lazy trace, and the user-facing operations (make data, record
//! par_loops, force results). Every host access forces the trace with its intent (seed 004):
//! `data()` read-write, `data_ro()` read-only, `Global::value()` read-only, host writes
//! write-only.

pub use crate::config::Config;
use crate::data::{Arg, ConstValue, Dat, DataInner, Global, IterSpace, Via, section};
use crate::error::{Error, LoopSite, Result};
use crate::fuse::{self, Explain, Group};
use crate::kernel::{Kernel, KernelProblem, expected_type};
use crate::profile::Track;
use crate::runtime::{self, Gpu, Stats};
use crate::trace::{AccessSet, Computation, Footprint, LoopRecord, Reason, Trace};
use crate::types::{Access, DType, Scalar};
use crate::util::block;
use std::cell::RefCell;
use std::collections::BTreeSet;
use std::marker::PhantomData;
use std::panic::Location;
use std::rc::Rc;
use validate::{describe_mask, values_for};

mod arith;
mod declare;
mod dist;
mod force;
mod profile;
mod rounds;
mod validate;

pub(crate) struct Inner {
    pub config: Config,
    /// The device and everything on it.
    pub engine: runtime::Engine,
    /// What decides what runs: the trace, the Consts, fusion.
    pub sched: Scheduler,
    /// On N ranks (None on one): exchanges and reductions in flight. Declared before `comm`:
    /// dropped (its reductions waited for) before MPI can be finalized.
    pub dist: Option<DistState>,
    /// The ranks this Context shares its mesh with (one process unless made `with_comm`).
    pub comm: crate::part::Comm,
}

/// The lazy trace and what fuses and explains its forces.
pub(crate) struct Scheduler {
    pub trace: RefCell<Trace>,
    pub consts: RefCell<Vec<(String, ConstValue)>>,
    pub explain: RefCell<Explain>,
    pub fuse_cache: RefCell<std::collections::HashMap<String, fuse::Cached>>,
}

/// What only a run on N ranks holds.
pub(crate) struct DistState {
    /// Lazy mode: Global reductions begun and not yet ended (by the partial value's id), each
    /// with `device_runs` at its begin.
    pub reductions: RefCell<std::collections::HashMap<u64, (crate::part::Reduction, u64)>>,
    /// Lazy mode: the rounds' submissions of device work (a reduction that ends after more of
    /// them than at its begin was in flight while they ran).
    pub device_runs: std::cell::Cell<u64>,
    /// Per (distributed set, type, dim): the send-list set, map and kernel that pack a halo
    /// exchange on the device.
    pub packers: RefCell<std::collections::HashMap<(u64, DType, usize), Packer>>,
    /// Lazy mode: values received for HaloSends whose HaloRecv has not run yet (by the
    /// HaloSend's seq).
    pub received: RefCell<std::collections::HashMap<u64, Vec<u32>>>,
    /// Maps made with `Map::new` on a rank's part that loops wrote through: whether every
    /// write reaches its owners (see `MapChecks`).
    pub maps_checked: RefCell<MapChecks>,
    /// Test hook: milliseconds to wait before completing each round's receives.
    pub recv_delay_ms: std::cell::Cell<u64>,
    /// The halo skip counters at the last force (explain() reports what changed since).
    pub halo_counts: std::cell::Cell<(u64, u64)>,
}

impl Inner {
    /// The distributed state; only computations on N ranks (exchanges, reductions, checking
    /// mode's loop comparison) reach it.
    pub fn dist(&self) -> &DistState {
        self.dist
            .as_ref()
            .expect("internal: distributed work on a Context of one rank")
    }
}

/// Per (map id, column written, or all): whether every write through a map made after the
/// distribution reaches its owners (checked once, agreed).
pub(crate) type MapChecks = std::collections::HashMap<(u64, Option<usize>), Result<()>>;

/// A send-list set, its map into the distributed set, and the kernel that copies through it.
pub(crate) type Packer = (crate::data::Set, crate::data::Map, Kernel);

impl crate::data::Owner for Inner {
    fn force(
        self: Rc<Self>,
        d: Rc<DataInner>,
        intent: crate::data::Intent,
    ) -> futures::future::LocalBoxFuture<'static, Result<()>> {
        use crate::data::Intent;
        Box::pin(async move {
            let all = AccessSet::of(d.id, section::ALL);
            let none = AccessSet::new();
            let ctx = Context(self);
            match intent {
                // The host replaces the values: a prefetch of them is moot.
                Intent::Write => {
                    runtime::readback::cancel_written(&ctx.0.engine, |id| id == d.id);
                }
                // A prefetch of `d` still in flight is the value to start from. Should
                // finishing it fail, `d` is still current on the device only and the force
                // below reads it back again, reporting what that gives (on N ranks inside the
                // force, whose outcome every rank shares).
                Intent::Read | Intent::ReadWrite => {
                    if let Err(e) = runtime::readback::complete(&ctx.0.engine, d.id).await {
                        log::debug!("a prefetch of `{}` failed ({e}): read back again", d.name);
                    }
                }
                Intent::Prefetch => {}
            }
            match intent {
                Intent::Read => ctx.force_async(&all, &none, &[d], "data_ro()", false).await,
                Intent::ReadWrite => ctx.force_async(&all, &all, &[d], "data()", false).await,
                Intent::Write => ctx.force_async(&none, &all, &[], "host write", false).await,
                Intent::Prefetch => ctx.force_async(&all, &none, &[d], "prefetch", true).await,
            }
        })
    }
    fn agree(&self, result: Result<()>, what: &str) -> Result<()> {
        self.comm.agree(result, what)
    }
    fn rank(&self) -> usize {
        self.comm.rank()
    }
    fn broadcast(&self, words: &mut [u32], what: &str) {
        self.comm.broadcast(words, what)
    }
    fn gather(&self, words: &[u32], what: &str) -> Option<Vec<Vec<u32>>> {
        self.comm.gather(words, what)
    }
}

/// A GPU device with a lazy trace of par_loops. Cheap to clone (shared).
///
/// Everything starts here: make data on sets, record loops, read results (which runs what
/// they need).
///
/// ```
/// use parloop::{Context, Kernel, Set};
/// # fn main() -> parloop::Result<()> {
/// let ctx = Context::new()?; // the adapter PARLOOP_ADAPTER chooses, else the best one
/// let cells = Set::new("cells", 3);
/// let u = ctx.dat("u", &cells, 1, &[1.0f32, 2.0, 3.0])?;
/// let double = Kernel::new("double", "fn double(u: ptr<function, array<f32, 1>>) { (*u)[0] *= 2.0; }");
/// ctx.par_loop(&double, &cells, &[u.rw()])?; // recorded, not run
/// assert_eq!(ctx.pending(), 1);
/// assert_eq!(&*u.data_ro()?, &[2.0, 4.0, 6.0]); // runs the loop, reads back
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
pub struct Context(pub(crate) Rc<Inner>);

impl Context {
    /// Opens a context configured by the `PARLOOP_*` environment variables: the same as
    /// `Context::with_config(Config::from_env()?)`. A program that must not depend on the
    /// environment passes its own [`Config`] (for instance `Config::default()`) to
    /// [`Context::with_config`]. Started by
    /// `mpirun` (with the `mpi` feature), this process is one rank of MPI's world: meshes made
    /// with [`crate::mesh::topology::MeshData::new`] are then distributed, and the same program
    /// runs on every rank's part.
    #[cfg(not(target_arch = "wasm32"))]
    pub fn new() -> Result<Context> {
        Context::with_config(Config::from_env()?)
    }
    #[cfg(not(target_arch = "wasm32"))]
    /// Opens the adapter `config` chooses (natively; in the browser use
    /// [`Context::new_async`]), on MPI's world when started by `mpirun` as [`Context::new`].
    pub fn with_config(config: Config) -> Result<Context> {
        let comm = crate::part::Comm::from_launcher()?;
        if comm.size() > 1 {
            return Context::with_comm(config, &comm);
        }
        pollster::block_on(Context::open(config, comm))
    }
    /// This process alone, even when started by `mpirun` (a one-process reference beside a
    /// distributed run, for instance).
    #[cfg(not(target_arch = "wasm32"))]
    pub fn single(config: Config) -> Result<Context> {
        pollster::block_on(Context::new_async(config))
    }
    /// One rank of a distributed run on `comm` (see [`crate::dist::Distribution`]).
    #[cfg(not(target_arch = "wasm32"))]
    pub fn with_comm(config: Config, comm: &crate::part::Comm) -> Result<Context> {
        comm.set_timeout(config.comm_timeout_s);
        // What decides collective calls must be the same on every rank (each reads its own
        // environment): lazy or eager, checking mode, the trace bound.
        let decides = {
            let mut h = std::collections::hash_map::DefaultHasher::new();
            std::hash::Hash::hash(&(config.lazy, config.check, config.trace_bound), &mut h);
            std::hash::Hasher::finish(&h)
        };
        let (lo, hi) = comm.min_max(decides, "comparing the ranks' configurations")?;
        if lo != hi {
            return Err(Error::Usage(format!(
                "rank {} of {}: the ranks' configurations differ in lazy ({}), check ({}) or \
                 trace_bound ({}); they decide when ranks exchange, so every rank needs the same \
                 (pass PARLOOP_* to every rank: `mpirun -x PARLOOP_LAZY ...`)",
                comm.rank(),
                comm.size(),
                config.lazy,
                config.check,
                config.trace_bound
            )));
        }
        let opened = pollster::block_on(Context::open(config, comm.clone()));
        // A rank without a device must not leave the others waiting in their first exchange.
        comm.agree(opened, "opening the device")
    }
    /// Opens the adapter `config` chooses, without blocking (what the browser needs).
    pub async fn new_async(config: Config) -> Result<Context> {
        Context::open(config, crate::part::Comm::single()).await
    }
    async fn open(config: Config, comm: crate::part::Comm) -> Result<Context> {
        let local_rank = (comm.size() > 1).then(|| comm.local_rank());
        let gpu = runtime::device::open(&config.adapter, config.backends, local_rank).await?;
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
        let dist = (comm.size() > 1).then(|| DistState {
            packers: RefCell::new(std::collections::HashMap::new()),
            received: RefCell::new(std::collections::HashMap::new()),
            reductions: RefCell::new(std::collections::HashMap::new()),
            device_runs: std::cell::Cell::new(0),
            maps_checked: RefCell::new(std::collections::HashMap::new()),
            recv_delay_ms: std::cell::Cell::new(0),
            halo_counts: std::cell::Cell::new((0, 0)),
        });
        Ok(Context(Rc::new(Inner {
            engine: runtime::Engine::new(gpu, &config),
            config,
            sched: Scheduler {
                trace: RefCell::new(Trace::default()),
                consts: RefCell::new(Vec::new()),
                explain: RefCell::new(Explain::default()),
                fuse_cache: RefCell::new(std::collections::HashMap::new()),
            },
            dist,
            comm,
        })))
    }
    /// The communicator this Context runs on.
    pub fn comm(&self) -> &crate::part::Comm {
        &self.0.comm
    }
    /// This process's rank (0 on one process).
    pub fn rank(&self) -> usize {
        self.0.comm.rank()
    }
    /// The number of ranks sharing the mesh (1 on one process).
    pub fn ranks(&self) -> usize {
        self.0.comm.size()
    }
    /// The configuration this Context was opened with.
    pub fn config(&self) -> &Config {
        &self.0.config
    }
    /// The adapter's name and backend.
    pub fn adapter(&self) -> String {
        self.0.engine.gpu.describe()
    }
    /// The device, its queue and its limits (for rendering from Dats, as the browser demo does).
    pub fn gpu(&self) -> &Gpu {
        &self.0.engine.gpu
    }
    /// Counters since the Context was made, and the caches' sizes and device memory now.
    pub fn stats(&self) -> Stats {
        runtime::timing::collect(&self.0.engine, true);
        let st = self.0.engine.rt.borrow();
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
        self.0.sched.trace.borrow().len()
    }
    /// The pending trace as Graphviz dot.
    pub fn trace_dot(&self) -> String {
        self.0.sched.trace.borrow().to_dot()
    }
    /// The direct dependencies of pending computations, as name pairs in program order: a
    /// loop's kernel name, or, on a distributed set, the halo schedule's label (`res_calc[core]`,
    /// `res_calc[owned]`, `HaloSend(q)`, `HaloRecv(q)`, `ReductionBegin(rms)`, ...).
    pub fn trace_edges(&self) -> Vec<(String, String)> {
        let t = self.0.sched.trace.borrow();
        let name = |seq: u64| {
            t.pending()
                .iter()
                .find(|c| c.seq() == seq)
                .map(|c| match &**c {
                    Computation::Loop(l) if l.space.set().halo().is_none() => {
                        l.kernel.name().to_string()
                    }
                    Computation::Loop(_)
                    | Computation::HaloSend { .. }
                    | Computation::HaloRecv { .. }
                    | Computation::ReduceBegin { .. }
                    | Computation::ReduceEnd { .. } => c.label(),
                })
                .unwrap_or_default()
        };
        t.edges()
            .into_iter()
            .map(|(a, b)| (name(a), name(b)))
            .collect()
    }
    /// Test hook (distributed runs): wait `ms` milliseconds before completing each round's
    /// halo receives, as a slow network would.
    #[doc(hidden)]
    pub fn test_delay_receives(&self, ms: u64) {
        if let Some(d) = &self.0.dist {
            d.recv_delay_ms.set(ms);
        }
    }
    /// The device buffer holding a Dat's current values (`dim` values per element, element by
    /// element; component by component with `Config::soa` and dim > 1),
    /// for rendering straight from simulation data. None until a loop has run on it, or while
    /// the host holds newer values. Pending loops that write the Dat have not run yet: flush
    /// first.
    pub fn device_buffer<T: Scalar>(&self, dat: &Dat<T>) -> Option<wgpu::Buffer> {
        if !dat.inner.state.device_valid() {
            return None;
        }
        self.0.engine.buffer(&dat.inner)
    }

    /// Makes a Dat's device copy current without running anything else: the pending loops
    /// that write it run, then host values newer than the device's are uploaded. For
    /// rendering from [`Context::device_buffer`] before any loop has used the Dat (a fresh
    /// simulation's initial state).
    pub fn upload<T: Scalar>(&self, dat: &Dat<T>) -> Result<()> {
        let all = AccessSet::of(dat.inner.id, section::ALL);
        self.force(&all, &AccessSet::new(), &[], "upload")?;
        runtime::exec::upload(&self.0.engine, &dat.inner)
    }

    /// The WGSL modules of the loop groups the last force ran on the GPU.
    pub fn shaders(&self) -> Vec<String> {
        self.0
            .engine
            .shaders
            .borrow()
            .iter()
            .map(|s| s.to_string())
            .collect()
    }
    /// What the last force ran, in a summary that fits on a screen: its groups with their
    /// loops (a run of groups that repeats, such as a time loop's, once with its count), the
    /// Dats kept in registers, each distinct reason for a cut once with the number of cuts it
    /// caused, dispatches and memory; on N ranks its rounds and halo exchanges.
    pub fn explain(&self) -> String {
        let mut s = self.0.sched.explain.borrow().summary.clone();
        s.push_str(&crate::lower::tune::describe(&self.tuning()));
        s
    }
    /// [`Context::explain`] in full: every group and every cut between two groups.
    pub fn explain_detail(&self) -> String {
        self.0.sched.explain.borrow().detail.clone()
    }

    /// Records a loop of `kernel` over `space` (a Set or Subset) with `args`. Lazy by default:
    /// it runs when a result it affects is needed. Input errors are reported here, naming the
    /// par_loop (kernel, caller's file:line) and the argument.
    ///
    /// The kernel is called once per element with one `ptr<function, array<T, N>>` per
    /// argument, in order (N: the Dat's dim, or arity x dim through all indices of a map).
    ///
    /// ```
    /// use parloop::{Context, Kernel, Map, Set};
    /// # fn main() -> parloop::Result<()> {
    /// let ctx = Context::new()?;
    /// let nodes = Set::new("nodes", 3);
    /// let edges = Set::new("edges", 2);
    /// let e2n = Map::new("e2n", &edges, &nodes, 2, &[0, 1, 1, 2])?;
    /// let len = ctx.dat("len", &edges, 1, &[0.5f32, 1.5])?;
    /// let mass = ctx.dat_zeros::<f32>("mass", &nodes, 1)?;
    /// // Each edge gives half its length to each of its nodes; increments through a map are
    /// // made race-free by the strategy.
    /// let lump = Kernel::new("lump", "fn lump(l: ptr<function, array<f32, 1>>, m: ptr<function, array<f32, 2>>) {
    ///     (*m)[0] += 0.5 * (*l)[0];
    ///     (*m)[1] += 0.5 * (*l)[0];
    /// }");
    /// ctx.par_loop(&lump, &edges, &[len.read(), mass.all(&e2n).inc()])?;
    /// assert_eq!(&*mass.data_ro()?, &[0.25, 1.0, 0.75]);
    /// // A wrong argument is an error naming the loop and the argument.
    /// let e = ctx.par_loop(&lump, &edges, &[len.read(), len.inc()]).unwrap_err();
    /// assert!(e.to_string().contains("par_loop `lump`"), "{e}");
    /// # Ok(())
    /// # }
    /// ```
    #[track_caller]
    pub fn par_loop(
        &self,
        kernel: &Kernel,
        space: impl Into<IterSpace>,
        args: &[Arg],
    ) -> Result<()> {
        let site = Location::caller();
        let space = space.into();
        {
            let prof = &self.0.engine.profiler;
            let _s = prof.span("record", Track::Host, || {
                format!("record {}", kernel.name())
            });
            let checked = self
                .check_loop(kernel, &space, args, site)
                .and_then(|()| self.distributed_space(kernel, &space, args, site));
            // On N ranks a loop over a distributed set is checked on every rank before any
            // records it: an argument, a kernel or a limit that fails on one rank fails all,
            // and a rank issuing another call here is an error naming both.
            let part = if self.ranks() > 1 && space.set().halo().is_some() {
                let what = format!(
                    "par_loop `{}` at {}:{} over `{}`",
                    kernel.name(),
                    site.file(),
                    site.line(),
                    space.set().name()
                );
                let part = self.agree(checked, &what)?;
                self.check_maps_made_here(args, &LoopSite::new(kernel.name(), site), &what)?;
                part
            } else {
                checked?
            };
            match part {
                Some(part) => self.record_distributed(kernel, part, args, site)?,
                None => self.record(kernel, space, args, site),
            }
        }
        if self.0.engine.profiler.trace {
            self.0
                .engine
                .profiler
                .counter("pending loops", self.pending() as f64);
        }
        self.run_due()
    }

    /// Records a checked loop.
    fn record(
        &self,
        kernel: &Kernel,
        space: IterSpace,
        args: &[Arg],
        site: &'static Location<'static>,
    ) {
        let (reads, writes) = LoopRecord::access_sets(&space, args);
        self.push(|seq| {
            let at = Footprint {
                seq,
                site,
                reads,
                writes,
            };
            Computation::Loop(self.loop_record(at, kernel, space, args))
        });
    }

    /// A loop to record: the kernel with the Consts it uses as they are now.
    fn loop_record(
        &self,
        at: Footprint,
        kernel: &Kernel,
        space: IterSpace,
        args: &[Arg],
    ) -> Rc<LoopRecord> {
        let consts = {
            let all = self.0.sched.consts.borrow();
            kernel.consts_used(&all).into_iter().cloned().collect()
        };
        Rc::new(LoopRecord {
            at,
            kernel: kernel.clone(),
            space,
            args: args.to_vec(),
            consts,
        })
    }

    /// Appends the computation `make` gives for the next seq to the trace; returns its seq.
    /// Nothing runs until the par_loop has recorded all its computations ([`Self::run_due`]).
    fn push(&self, make: impl FnOnce(u64) -> Computation) -> u64 {
        let mut t = self.0.sched.trace.borrow_mut();
        let seq = t.next_seq();
        t.record(Rc::new(make(seq)));
        seq
    }

    /// After a par_loop's computations are recorded (the loop or its parts, with the
    /// exchanges and reductions it needs): eager mode runs them all now, lazy mode the oldest
    /// half of the trace once it holds more than the trace bound.
    fn run_due(&self) -> Result<()> {
        if !self.0.config.lazy {
            let all = self.0.sched.trace.borrow_mut().take_all();
            return block(self.run(all, &[], "eager", false));
        }
        // On N ranks only what every rank records counts (a rank's own loops do not), so
        // every rank forces at the same loop.
        let collective = self.ranks() > 1;
        let (len, bound) = (
            self.0.sched.trace.borrow().bound_len(collective),
            self.0.config.trace_bound.max(1),
        );
        if len > bound {
            let oldest = self
                .0
                .sched
                .trace
                .borrow_mut()
                .take_prefix(len - bound / 2, collective);
            block(self.run(oldest, &[], "trace bound", false))?;
        }
        // A rank's own loops, uncounted above, are bounded on their own (run here alone).
        let own = {
            let t = self.0.sched.trace.borrow();
            t.len() - t.bound_len(collective)
        };
        if own > bound {
            let local = self.0.sched.trace.borrow_mut().take_local();
            block(self.run(local, &[], "trace bound (this rank's loops)", false))?;
        }
        Ok(())
    }

    /// Runs everything pending.
    pub fn flush(&self) -> Result<()> {
        let all = self.0.sched.trace.borrow_mut().take_all();
        block(self.run(all, &[], "flush", false))
    }
    /// Runs everything pending, without blocking (the browser's [`Context::flush`]).
    pub async fn flush_async(&self) -> Result<()> {
        let all = self.0.sched.trace.borrow_mut().take_all();
        self.run(all, &[], "flush", false).await
    }
}
