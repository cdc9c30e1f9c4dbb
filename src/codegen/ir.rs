//! The codegen IR: everything the code generator needs about one loop group (bindings, loops
//! and their arguments, registers, reductions, staged maps), built by `lower`.

use super::Schedule;
use super::wgsl::ident;
use crate::config::Staging;
use crate::data::ConstValue;
use crate::types::{Access, DType};

/// What a storage binding holds.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum BindingKind {
    Dat {
        dtype: DType,
        dim: usize,
        /// Struct-of-arrays on the device: value k of element e at k x n + e.
        soa: bool,
    },
    Global {
        dtype: DType,
        dim: usize,
    },
    Map {
        arity: usize,
    },
    /// The subset's element list.
    Subset,
    /// The packed plan arrays.
    Plan,
    /// Reduction partials (u32 words).
    Scratch,
    /// Checking mode's records (four `atomic<u32>` words per loop of the group).
    Check,
}

/// How the shader sees a binding's elements.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Atomic {
    No,
    /// `atomic<T>` of the data's own type (f32 needs SHADER_FLOAT32_ATOMIC).
    Native,
    /// `atomic<u32>` over the bit patterns (compare-and-swap).
    Bits,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct BindingIr {
    /// A readable name for comments and the WGSL identifier.
    pub name: String,
    pub kind: BindingKind,
    pub writable: bool,
    pub atomic: Atomic,
}

/// A direct Dat's per-element value, held in a register across the group's loops.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct RegisterIr {
    /// None: ephemeral (no buffer; lives only in the register).
    pub binding: Option<usize>,
    pub dtype: DType,
    pub dim: usize,
    /// Read from memory before the first loop.
    pub load: bool,
    /// Written back after the last loop.
    pub store: bool,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum ArgSource {
    /// A direct Dat through register `reg`.
    Direct { reg: usize },
    /// A Dat through a map; `idx` None means all indices. `staged` is the staged-map slot
    /// (hierarchical schedules), when the data lives in workgroup memory.
    Indirect {
        dat: usize,
        map: usize,
        arity: usize,
        idx: Option<usize>,
        staged: Option<usize>,
    },
    /// A Global; reductions accumulate into reduction `red`.
    Global { binding: usize, red: Option<usize> },
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ArgIr {
    pub dtype: DType,
    /// Values the kernel sees (dim, or arity x dim).
    pub width: usize,
    pub dim: usize,
    pub access: Access,
    pub source: ArgSource,
    /// A comment for the generated code ("`q` through `pecell`[0], READ").
    pub what: String,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct LoopIr {
    pub kernel: String,
    pub args: Vec<ArgIr>,
}

/// A Global reduction of the group: per-workgroup partials go to scratch, then a finalize pass.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ReductionIr {
    pub binding: usize,
    pub dtype: DType,
    pub dim: usize,
    pub access: Access,
}

/// A staged map (hierarchical): `maxu` is the most distinct targets any block touches.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct StagedMapIr {
    pub map: usize,
    pub arity: usize,
    pub maxu: usize,
}

/// Everything codegen needs about one loop group.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct GroupIr {
    /// One line per loop, for the header comment.
    pub comments: Vec<String>,
    pub loops: Vec<LoopIr>,
    pub bindings: Vec<BindingIr>,
    pub registers: Vec<RegisterIr>,
    pub reductions: Vec<ReductionIr>,
    pub staged: Vec<StagedMapIr>,
    /// (name, WGSL source) of each distinct kernel.
    pub kernels: Vec<(String, String)>,
    pub consts: Vec<(String, ConstValue)>,
    pub schedule: Schedule,
    pub subset: Option<usize>,
    pub plan: Option<usize>,
    pub scratch: Option<usize>,
    /// Checking mode: the binding of the check records; kernels' dynamic indices are guarded.
    pub check: Option<usize>,
    /// The group runs a distributed set's exec halo too: Global reductions take only elements
    /// below `pl.owned` (each element counts on the rank that owns it).
    pub exec_halo: bool,
    pub workgroup_size: u32,
}

impl GroupIr {
    /// Whether `self` and `other` generate the same shader: equal but for the Consts' values,
    /// which travel in the dispatch parameters, not in the text.
    pub fn same_shader(&self, other: &GroupIr) -> bool {
        self.shader_key() == other.shader_key()
    }

    /// A hash of what the shader depends on: everything but the Consts' values.
    pub fn shader_hash(&self) -> u64 {
        use std::hash::{Hash, Hasher};
        let mut h = std::collections::hash_map::DefaultHasher::new();
        self.shader_key().hash(&mut h);
        h.finish()
    }

    /// Every field, the Consts by their shape only (destructured: a new field must be placed).
    fn shader_key(&self) -> impl Eq + std::hash::Hash + '_ {
        let GroupIr {
            comments,
            loops,
            bindings,
            registers,
            reductions,
            staged,
            kernels,
            consts,
            schedule,
            subset,
            plan,
            scratch,
            check,
            exec_halo,
            workgroup_size,
        } = self;
        (
            (
                comments, loops, bindings, registers, reductions, staged, kernels,
            ),
            consts.iter().map(const_shape).collect::<Vec<_>>(),
            (
                schedule,
                subset,
                plan,
                scratch,
                check,
                exec_halo,
                workgroup_size,
            ),
        )
    }
}

/// What a Const contributes to the shader text: its name, type, length and form.
fn const_shape((name, v): &(String, ConstValue)) -> (&str, DType, usize, bool) {
    (name, v.dtype, v.words.len(), v.array)
}

/// The uniform parameters of one dispatch (binding 0, dynamic offset).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
#[repr(C)]
pub struct Params {
    /// Positions (or blocks, for hierarchical) in this dispatch.
    pub n: u32,
    /// First position (or first entry of the block order).
    pub base: u32,
    /// First reduction slot of this dispatch.
    pub wg_base: u32,
    /// Reduction slots of the whole group (the scratch stride).
    pub slots: u32,
    /// Workgroups that carry work (the rest of a 2-D grid idles).
    pub nwg: u32,
    /// Checking mode: the first word of this group's records in the check buffer.
    pub check: u32,
    /// Elements the set owns (reductions of a group that runs the exec halo stop there).
    pub owned: u32,
    pub pad: u32,
}

impl GroupIr {
    /// Whether a flat schedule's workgroups each take a share of the positions rather than
    /// one per invocation ([`super::flat_main`]): the group reduces into Globals. The runtime
    /// caps such a group's workgroups (`strategy::dispatches`).
    pub fn strided(&self) -> bool {
        !self.reductions.is_empty()
    }

    pub(super) fn var(&self, b: usize) -> String {
        let prefix = match self.bindings[b].kind {
            BindingKind::Dat { .. } => "pl_d",
            BindingKind::Global { .. } => "pl_g",
            BindingKind::Map { .. } => "pl_m",
            BindingKind::Subset => return "pl_subset".into(),
            BindingKind::Plan => return "pl_plan".into(),
            BindingKind::Scratch => return "pl_scratch".into(),
            BindingKind::Check => return "pl_check".into(),
        };
        let id = ident(&self.bindings[b].name);
        if id.is_empty() {
            format!("{prefix}{b}")
        } else {
            format!("{prefix}{b}_{id}")
        }
    }
    pub(super) fn hierarchical(&self) -> Option<Staging> {
        self.schedule.staging()
    }
    /// Staged increments are workgroup atomics (the `staged` strategy).
    pub(super) fn staged_atomics(&self) -> bool {
        self.schedule.workgroup_atomics()
    }
    /// Workgroup memory the shader declares, in bytes.
    pub fn workgroup_bytes(&self) -> usize {
        let wg = self.workgroup_size as usize;
        let red = self.reduction_dtypes().len() * wg * 4;
        let staged: usize = self
            .staged_dats()
            .iter()
            .map(|&(s, _, dim)| self.staged[s].maxu * dim * 4)
            .sum();
        red + staged + if self.hierarchical().is_some() { 16 } else { 0 }
    }
    pub(super) fn reduction_dtypes(&self) -> Vec<DType> {
        let mut v: Vec<DType> = self.reductions.iter().map(|r| r.dtype).collect();
        v.sort();
        v.dedup();
        v
    }
    /// (staged map slot, dat binding, dim) of every Dat staged in workgroup memory.
    pub(super) fn staged_dats(&self) -> Vec<(usize, usize, usize)> {
        let mut v = Vec::new();
        for lp in &self.loops {
            for a in &lp.args {
                if let ArgSource::Indirect {
                    dat,
                    staged: Some(s),
                    ..
                } = a.source
                {
                    if !v.iter().any(|&(s2, d2, _)| s2 == s && d2 == dat) {
                        v.push((s, dat, a.dim));
                    }
                }
            }
        }
        v
    }
    pub(super) fn staged_var(&self, s: usize, dat: usize) -> String {
        format!("pl_s{s}_{}", self.var(dat).trim_start_matches("pl_"))
    }
}
