//! Lowering: a loop group (one loop, or several fused over one iteration space) becomes the
//! codegen IR, the list of resources to bind in binding order, and the plan its schedule needs.
//! The schedule comes from `codegen::strategy::choose` (direct when nothing races; native
//! atomics when only integers race; otherwise the configured strategy, if legal).

use crate::codegen::strategy::{self, PlanKind};
use crate::codegen::{
    ArgIr, ArgSource, Atomic, BindingIr, BindingKind, GroupIr, LoopIr, ReductionIr, RegisterIr,
    StagedMapIr,
};
use crate::config::{Staging, Strategy};
use crate::data::{DataInner, IterSpace, Map, Subset, Via};
use crate::fuse::Group;
use crate::plan::PlanConfig;
use crate::types::{Access, DType};
use std::fmt::Write;
use std::rc::Rc;

pub(crate) mod tune;

/// The execution knobs lowering needs.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Choice {
    pub strategy: Strategy,
    pub staging: Staging,
    pub block_size: Option<usize>,
    pub balance: bool,
    pub workgroup_size: u32,
    pub float_atomics: bool,
    /// The adapter has 64-bit integer atomics (f64 increments by compare-and-swap).
    pub int64_atomics: bool,
    /// The adapter runs on the CPU (lavapipe, llvmpipe, SwiftShader).
    pub cpu_adapter: bool,
    pub workgroup_memory: usize,
    /// Checking mode: guard the kernels' dynamic argument indices.
    pub check: bool,
    /// Struct-of-arrays Dats (`Config::soa`).
    pub soa: bool,
    /// The most workgroups a group reducing into Globals runs (`Config::reduction_workgroups`,
    /// at least 1, or the adapter's default; `tune` may pick another).
    pub reduction_workgroups: u32,
    /// `Config::min_colour_size`.
    pub min_colour_size: usize,
}

/// What a binding refers to.
#[derive(Clone)]
pub(crate) enum Resource {
    Data(Rc<DataInner>),
    Map(Map),
    Subset(Subset),
    Plan,
    Scratch,
    /// Checking mode's records (the runtime places each group's part).
    Check,
}

/// The plan a schedule needs.
pub(crate) struct PlanSpec {
    pub key: String,
    pub colour: bool,
    pub space_sizes: Vec<usize>,
    /// (space, map, index, staged map slot) of each racing argument.
    pub races: Vec<(usize, Map, Option<usize>, Option<usize>)>,
    /// (map, bytes per target, map indices staged (None: all)) of each staged map.
    pub staged: Vec<(Map, usize, Option<Vec<usize>>)>,
    pub config: PlanConfig,
}

pub(crate) struct Lowered {
    pub ir: GroupIr,
    pub resources: Vec<Resource>,
    pub plan: Option<PlanSpec>,
    pub space: IterSpace,
    /// The cap on a reducing group's workgroups it runs with (`Choice::reduction_workgroups`).
    pub reduction_workgroups: u32,
    /// Why the runtime lowered the group again (`explain()` shows it beside the schedule).
    pub note: Option<String>,
}

impl Lowered {
    pub fn positions(&self) -> usize {
        self.space.len()
    }
}

/// Builds the IR of a group (the staged `maxu` sizes are filled in once the plan exists), in
/// phases: choose the schedule, bind the subset, stage maps, number the race spaces, lower the
/// arguments, bind the plan, scratch and checking records, key the plan, assemble.
pub(crate) fn lower(group: &Group, choice: &Choice) -> Result<Lowered, strategy::Illegal> {
    let space = group.loops[0].space.clone();
    let mut b = Builder {
        soa: choice.soa,
        ..Default::default()
    };
    let racing = racing_args(group);
    let schedule = strategy::choose(&request(choice), &racing_types(group))?;
    if schedule.plan() == PlanKind::None {
        bind_subset(&mut b, &space);
    }
    let staged = schedule
        .staging()
        .map_or_else(Vec::new, |st| staged_maps(group, st));
    let (races, space_sizes) = race_spaces(group, &racing, &staged);
    let loops = lower_loops(&mut b, group, &racing, &schedule, &staged);
    let planned = schedule.plan() != PlanKind::None;
    let plan_binding = planned.then(|| {
        let ir = internal("plan", BindingKind::Plan, false, Atomic::No);
        b.bind(Key::Plan, Resource::Plan, ir)
    });
    let scratch = (!b.reductions.is_empty()).then(|| {
        let ir = internal("scratch", BindingKind::Scratch, true, Atomic::No);
        b.bind(Key::Scratch, Resource::Scratch, ir)
    });
    let check = choice.check.then(|| {
        let ir = internal("check", BindingKind::Check, true, Atomic::Bits);
        b.bind(Key::Check, Resource::Check, ir)
    });
    let plan = planned.then(|| {
        let config = PlanConfig {
            workgroup_memory: choice
                .workgroup_memory
                .saturating_sub(reserved_bytes(&b, choice)),
            block_size: choice.block_size,
            balance: choice.balance,
        };
        plan_spec(&space, &schedule, races, space_sizes, &staged, config)
    });
    let (kernels, consts) = kernels_and_consts(group);
    let ir = GroupIr {
        comments: comments(group),
        loops,
        bindings: b.bindings,
        registers: b.registers,
        reductions: b.reductions,
        staged: staged
            .iter()
            .map(|(m, _, _)| StagedMapIr {
                map: b
                    .keys
                    .iter()
                    .position(|k| *k == Key::Map(m.id()))
                    .unwrap_or(0),
                arity: m.arity(),
                maxu: 0,
            })
            .collect(),
        kernels,
        consts,
        schedule,
        subset: b.subset,
        plan: plan_binding,
        scratch,
        check,
        exec_halo: space.runs_exec_halo(),
        workgroup_size: choice.workgroup_size,
    };
    Ok(Lowered {
        ir,
        resources: b.resources,
        plan,
        space,
        reduction_workgroups: choice.reduction_workgroups.max(1),
        note: None,
    })
}

/// What the schedule of a group lowered with `choice` depends on, besides the group.
pub(crate) fn request(choice: &Choice) -> strategy::Request {
    strategy::Request {
        strategy: choice.strategy,
        staging: choice.staging,
        float_atomics: choice.float_atomics,
        int64_atomics: choice.int64_atomics,
        cpu_adapter: choice.cpu_adapter,
        workgroup_size: choice.workgroup_size,
    }
}

/// A binding of the runtime's own (the plan, the reductions' scratch, checking's records).
fn internal(name: &str, kind: BindingKind, writable: bool, atomic: Atomic) -> BindingIr {
    BindingIr {
        name: name.into(),
        kind,
        writable,
        atomic,
    }
}

/// (loop, argument) of each racing argument of the group, in order.
fn racing_args(group: &Group) -> Vec<(usize, usize)> {
    group
        .loops
        .iter()
        .enumerate()
        .flat_map(|(l, lp)| {
            lp.args
                .iter()
                .enumerate()
                .filter(|(_, a)| a.races())
                .map(move |(a, _)| (l, a))
        })
        .collect()
}

/// A loop over a subset without a plan reads the subset's indices from a binding of its own
/// (a plan already lists the elements it runs).
fn bind_subset(b: &mut Builder, space: &IterSpace) {
    if let Some(sub) = space.subset() {
        b.subset = Some(b.bind(
            Key::Subset(sub.0.id),
            Resource::Subset(sub.clone()),
            BindingIr {
                name: sub.name().to_string(),
                kind: BindingKind::Subset,
                writable: false,
                atomic: Atomic::No,
            },
        ));
    }
}

/// A map staged in workgroup memory (hierarchical schedules): the map, (data id, bytes per
/// element) of each Dat staged through it, and the map indices used (None: all).
type StagedUse = (Map, Vec<(u64, usize)>, Vec<Option<usize>>);

/// The maps of racing arguments, and of indirect reads when staging all.
fn staged_maps(group: &Group, st: Staging) -> Vec<StagedUse> {
    let mut staged: Vec<StagedUse> = Vec::new();
    for lp in &group.loops {
        for a in &lp.args {
            let Some(map) = a.map() else { continue };
            let stage = match st {
                Staging::None => false,
                Staging::Inc => a.races(),
                Staging::All => a.races() || a.access == Access::Read,
            };
            if !stage {
                continue;
            }
            let slot = match staged.iter().position(|(m, _, _)| m.id() == map.id()) {
                Some(s) => s,
                None => {
                    staged.push((map.clone(), Vec::new(), Vec::new()));
                    staged.len() - 1
                }
            };
            let (_, dats, idxs) = &mut staged[slot];
            if !dats.iter().any(|&(id, _)| id == a.data.id) {
                dats.push((a.data.id, a.data.dim * a.data.dtype.bytes()));
            }
            let idx = match a.via {
                Via::Map(_, j) => Some(j),
                _ => None,
            };
            if !idxs.contains(&idx) {
                idxs.push(idx);
            }
        }
    }
    staged
}

/// A race for the plan: (space, map, map index, staged map slot).
type Race = (usize, Map, Option<usize>, Option<usize>);

/// The colouring spaces (one per racing Dat) with their sizes, and each racing argument's race.
fn race_spaces(
    group: &Group,
    racing: &[(usize, usize)],
    staged: &[StagedUse],
) -> (Vec<Race>, Vec<usize>) {
    let mut spaces: Vec<u64> = Vec::new();
    let mut races = Vec::new();
    for &(l, a) in racing {
        let arg = &group.loops[l].args[a];
        let s = match spaces.iter().position(|&id| id == arg.data.id) {
            Some(s) => s,
            None => {
                spaces.push(arg.data.id);
                spaces.len() - 1
            }
        };
        let idx = match arg.via {
            Via::Map(_, j) => Some(j),
            _ => None,
        };
        let map = arg.map().cloned().expect("racing args have maps");
        let slot = staged.iter().position(|(m, dats, _)| {
            m.id() == map.id() && dats.iter().any(|&(id, _)| id == arg.data.id)
        });
        races.push((s, map, idx, slot));
    }
    let space_sizes: Vec<usize> = spaces
        .iter()
        .map(|&id| {
            racing
                .iter()
                .map(|&(l, a)| &group.loops[l].args[a])
                .find(|a| a.data.id == id)
                .and_then(|a| a.map().map(|m| m.to_set().total()))
                .unwrap_or(0)
        })
        .collect();
    (races, space_sizes)
}

/// Each loop's arguments as the IR's: a register, a Global binding (with its reduction), or a
/// Dat read through a map binding (atomic where the schedule makes its race atomic).
fn lower_loops(
    b: &mut Builder,
    group: &Group,
    racing: &[(usize, usize)],
    schedule: &strategy::Schedule,
    staged: &[StagedUse],
) -> Vec<LoopIr> {
    let mut loops = Vec::new();
    for (l, lp) in group.loops.iter().enumerate() {
        let mut args = Vec::new();
        for (ai, a) in lp.args.iter().enumerate() {
            let d = &a.data;
            let source = match &a.via {
                Via::Direct => {
                    let reg = b.register(d, group.ephemeral.contains(&d.id), a.access);
                    ArgSource::Direct { reg }
                }
                Via::Global => {
                    let binding = b.data(d, a.access.writes(), Atomic::No);
                    let red = a.access.is_reduction().then(|| {
                        b.reductions.push(ReductionIr {
                            binding,
                            dtype: d.dtype,
                            dim: d.dim,
                            access: a.access,
                        });
                        b.reductions.len() - 1
                    });
                    ArgSource::Global { binding, red }
                }
                Via::Map(m, _) | Via::MapAll(m) => {
                    let atomic = if racing.contains(&(l, ai)) {
                        schedule.racing_atomic(d.dtype, a.access)
                    } else {
                        Atomic::No
                    };
                    let dat = b.data(d, a.access.writes(), atomic);
                    let map = b.map(m);
                    let idx = match a.via {
                        Via::Map(_, j) => Some(j),
                        _ => None,
                    };
                    let staged = staged.iter().position(|(sm, dats, _)| {
                        sm.id() == m.id() && dats.iter().any(|&(id, _)| id == d.id)
                    });
                    ArgSource::Indirect {
                        dat,
                        map,
                        arity: m.arity(),
                        idx,
                        staged,
                    }
                }
            };
            args.push(ArgIr {
                dtype: d.dtype,
                width: a.width(),
                dim: d.dim,
                access: a.access,
                source,
                what: a.describe(),
            });
        }
        loops.push(LoopIr {
            kernel: lp.kernel.name().to_string(),
            args,
        });
    }
    loops
}

/// The plan the schedule needs, with the key it is cached under (the space, its sections, the
/// races, the staged maps and the configuration: what the plan depends on).
fn plan_spec(
    space: &IterSpace,
    schedule: &strategy::Schedule,
    races: Vec<Race>,
    space_sizes: Vec<usize>,
    staged: &[StagedUse],
    config: PlanConfig,
) -> PlanSpec {
    let staged_spec: Vec<(Map, usize, Option<Vec<usize>>)> = staged
        .iter()
        .map(|(m, dats, idxs)| {
            let bytes: usize = dats.iter().map(|&(_, b)| b).sum();
            let slots = (!idxs.contains(&None)).then(|| {
                let mut s: Vec<usize> = idxs.iter().flatten().copied().collect();
                s.sort_unstable();
                s
            });
            (m.clone(), bytes, slots)
        })
        .collect();
    let mut key = format!(
        "{:?}|{}|{:?}|",
        space.key(),
        schedule.plan() == PlanKind::Colouring,
        space.set().sections()
    );
    for (s, m, idx, slot) in &races {
        let _ = write!(key, "r{s}:{}:{idx:?}:{slot:?},", m.id());
    }
    for (m, bytes, slots) in &staged_spec {
        let _ = write!(key, "s{}:{bytes}:{slots:?},", m.id());
    }
    let _ = write!(key, "|{config:?}");
    PlanSpec {
        key,
        colour: schedule.plan() == PlanKind::Colouring,
        space_sizes,
        races,
        staged: staged_spec,
        config,
    }
}

/// The shader's header: each loop's kernel, space, call site and arguments.
fn comments(group: &Group) -> Vec<String> {
    group
        .loops
        .iter()
        .map(|lp| {
            let args: Vec<String> = lp.args.iter().map(|a| a.describe()).collect();
            format!(
                "`{}` over {} ({}:{}): {}",
                lp.kernel.name(),
                lp.space.name(),
                lp.at.site.file(),
                lp.at.site.line(),
                args.join("; ")
            )
        })
        .collect()
}

/// The kernels' sources and Consts, each once (kernels given as one WGSL source with shared
/// helpers are included once).
#[allow(clippy::type_complexity)]
fn kernels_and_consts(
    group: &Group,
) -> (
    Vec<(String, String)>,
    Vec<(String, crate::data::ConstValue)>,
) {
    let mut kernels: Vec<(String, String)> = Vec::new();
    let mut consts = Vec::new();
    for lp in &group.loops {
        let src = lp.kernel.wgsl().unwrap_or_default();
        if !kernels
            .iter()
            .any(|(n, s)| n == lp.kernel.name() || s == src)
        {
            kernels.push((lp.kernel.name().to_string(), src.to_string()));
        }
        for c in &lp.consts {
            if !consts.iter().any(|(n, _): &(String, _)| *n == c.0) {
                consts.push(c.clone());
            }
        }
    }
    (kernels, consts)
}

/// The types of a group's racing arguments (increments, MIN or MAX through a map), in order.
pub(crate) fn racing_types(group: &Group) -> Vec<DType> {
    group
        .loops
        .iter()
        .flat_map(|lp| lp.args.iter().filter(|a| a.races()))
        .map(|a| a.data.dtype)
        .collect()
}

/// Workgroup bytes the shader needs besides staging (reduction arrays, block header).
fn reserved_bytes(b: &Builder, choice: &Choice) -> usize {
    let mut dtypes: Vec<DType> = b.reductions.iter().map(|r| r.dtype).collect();
    dtypes.sort();
    dtypes.dedup();
    dtypes.iter().map(|t| t.bytes()).sum::<usize>() * choice.workgroup_size as usize + 64
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Key {
    Data(u64),
    Map(u64),
    Subset(u64),
    Plan,
    Scratch,
    Check,
}

#[derive(Default)]
struct Builder {
    keys: Vec<Key>,
    bindings: Vec<BindingIr>,
    resources: Vec<Resource>,
    registers: Vec<RegisterIr>,
    /// Data id of each register.
    register_ids: Vec<u64>,
    reductions: Vec<ReductionIr>,
    subset: Option<usize>,
    /// Dats of dim > 1 are struct-of-arrays.
    soa: bool,
}

impl Builder {
    fn bind(&mut self, key: Key, res: Resource, ir: BindingIr) -> usize {
        if let Some(i) = self.keys.iter().position(|k| *k == key) {
            let b = &mut self.bindings[i];
            b.writable |= ir.writable;
            if ir.atomic != Atomic::No {
                b.atomic = ir.atomic;
            }
            return i;
        }
        self.keys.push(key);
        self.bindings.push(ir);
        self.resources.push(res);
        self.bindings.len() - 1
    }

    fn data(&mut self, d: &Rc<DataInner>, writable: bool, atomic: Atomic) -> usize {
        let kind = if d.is_global() {
            BindingKind::Global {
                dtype: d.dtype,
                dim: d.dim,
            }
        } else {
            BindingKind::Dat {
                dtype: d.dtype,
                dim: d.dim,
                soa: self.soa && d.dim > 1,
            }
        };
        self.bind(
            Key::Data(d.id),
            Resource::Data(d.clone()),
            BindingIr {
                name: d.name.clone(),
                kind,
                writable,
                atomic,
            },
        )
    }

    fn map(&mut self, m: &Map) -> usize {
        self.bind(
            Key::Map(m.id()),
            Resource::Map(m.clone()),
            BindingIr {
                name: m.name().to_string(),
                kind: BindingKind::Map { arity: m.arity() },
                writable: false,
                atomic: Atomic::No,
            },
        )
    }

    /// The register of a direct Dat; the first access decides whether it is loaded.
    fn register(&mut self, d: &Rc<DataInner>, ephemeral: bool, access: Access) -> usize {
        if let Some(r) = self.register_ids.iter().position(|&id| id == d.id) {
            let reg = &mut self.registers[r];
            reg.store |= access.writes() && reg.binding.is_some();
            if access.writes() {
                if let Some(b) = reg.binding {
                    self.bindings[b].writable = true;
                }
            }
            return r;
        }
        let binding = (!ephemeral).then(|| self.data(d, access.writes(), Atomic::No));
        self.register_ids.push(d.id);
        self.registers.push(RegisterIr {
            binding,
            dtype: d.dtype,
            dim: d.dim,
            load: access != Access::Write && binding.is_some(),
            store: access.writes() && binding.is_some(),
        });
        self.registers.len() - 1
    }
}
