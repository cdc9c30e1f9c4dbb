//! The racing-increment strategies, one file each: what each generates, when it is legal, the
//! plan it needs and how it is dispatched. A user picks a [`crate::config::Strategy`]
//! (`config::Variant::ALL` lists them for tests, fuzzers and benchmarks); [`choose`] turns it
//! into a [`Schedule`] for one loop group, given what races in the group and what the adapter
//! has.
//!
//! | schedule | file | plan | racing increments |
//! |---|---|---|---|
//! | `Direct` | `direct.rs` | none | none race |
//! | `Atomics` | `atomics.rs` | none | native atomics |
//! | `Cas` | `cas.rs` | none | compare-and-swap on bit patterns (u32, u64) |
//! | `GlobalColour` | `global_colour.rs` | element colouring | plain, one dispatch per colour |
//! | `Hierarchical` | `hierarchical.rs` (+ `blocks.rs`) | blocks | workgroup memory, thread colours |
//! | `Staged` | `staged.rs` (+ `blocks.rs`) | blocks | workgroup memory, workgroup atomics |
//!
//! A new strategy is a variant of `config::Strategy` and of [`Schedule`], a file here, and the
//! arms the compiler then asks for: every match over either enum is exhaustive (`tests/it/tidy.rs`
//! refuses a catch-all arm).

mod atomics;
mod blocks;
mod cas;
mod direct;
mod global_colour;
mod hierarchical;
pub(super) mod staged;

pub(super) use staged::staged_load;

use super::{Atomic, GroupIr};
use crate::config::{AUTO_FEW_COLOURS, Staging, Strategy};
use crate::types::{Access, DType};

/// How a group's iteration positions are scheduled.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Schedule {
    /// One invocation per position; nothing races.
    Direct,
    /// Racing arguments applied with native atomics (f32 add needs SHADER_FLOAT32_ATOMIC;
    /// f32 min/max use a compare-and-swap loop; integers are native).
    Atomics,
    /// Racing f32 arguments applied with compare-and-swap loops on u32 bit patterns.
    Cas,
    /// Positions sorted by colour (plan array), one dispatch per colour.
    GlobalColour,
    /// One workgroup per mini-partition; thread colours inside; block colours across dispatches.
    Hierarchical(Staging),
    /// One workgroup per mini-partition; its racing increments combined in workgroup memory
    /// with workgroup atomics (no thread colours); block colours across dispatches.
    Staged,
}

/// The plan a schedule needs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PlanKind {
    /// No plan: positions run in order.
    None,
    /// One-level element colouring: positions sorted by colour.
    Colouring,
    /// Mini-partitions with block and thread colours.
    Blocks,
}

/// What decides a group's schedule besides the group: the user's choice and the adapter.
#[derive(Clone, Copy, Debug)]
pub struct Request {
    pub strategy: Strategy,
    pub staging: Staging,
    /// The adapter has native f32 atomics.
    pub float_atomics: bool,
    /// The adapter has 64-bit integer atomics (f64 increments by compare-and-swap).
    pub int64_atomics: bool,
    /// The adapter runs on the CPU (lavapipe, llvmpipe, SwiftShader).
    pub cpu_adapter: bool,
    /// Invocations per workgroup.
    pub workgroup_size: u32,
}

/// Why `atomics`, `cas` and `staged` cannot take f64 increments through maps on an adapter
/// without 64-bit integer atomics.
const F64_RACES: &str = "f64 increments (or min/max) through a map under `atomics`, \
     `cas` or `staged` are compare-and-swap loops on 64-bit atomics in storage and workgroup \
     memory (SHADER_INT64_ATOMIC_ALL_OPS: lavapipe and many Vulkan GPUs have them; GL, Metal and \
     browsers do not), which this adapter lacks; use `auto`, `global-colour` or `hierarchical`";

/// Why a strategy cannot run a group's racing increments; its `Display` is the reason an
/// error gives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Illegal {
    /// f64 increments through a map under `atomics`, `cas` or `staged`, on an adapter without
    /// 64-bit integer atomics.
    F64Races,
    /// f32 increments under `atomics` on an adapter without native f32 atomics.
    NoFloatAtomics,
    /// `hierarchical` with a workgroup size (the field) that is not a multiple of 8.
    WorkgroupSize(u32),
}

impl std::fmt::Display for Illegal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Illegal::F64Races => f.write_str(F64_RACES),
            Illegal::NoFloatAtomics => f.write_str(atomics::NO_FLOAT_ATOMICS),
            Illegal::WorkgroupSize(size) => write!(
                f,
                "`hierarchical` needs a workgroup size that is a multiple of 8, and \
                 Config::workgroup_size is {size}: the barriers between its thread colours \
                 gave wrong increments on llvmpipe (which runs a workgroup in chunks of 8 \
                 invocations) at other sizes; use a multiple of 8 (64 is the default) or \
                 another strategy"
            ),
        }
    }
}

/// The schedule of a group whose racing arguments have the types `racing`, or why the
/// requested strategy cannot run it.
pub fn choose(req: &Request, racing: &[DType]) -> Result<Schedule, Illegal> {
    if racing.is_empty() {
        return Ok(Schedule::Direct);
    }
    // Integers always take native atomics, whatever the strategy.
    if racing.iter().all(|t| matches!(t, DType::U32 | DType::I32)) {
        return Ok(Schedule::Atomics);
    }
    let schedule = match req.strategy {
        // The runtime's tuner gives lowering a measured strategy; `auto`'s table otherwise.
        Strategy::Auto | Strategy::Tune => auto(req, racing),
        Strategy::Hierarchical => Schedule::Hierarchical(req.staging),
        Strategy::GlobalColour => Schedule::GlobalColour,
        Strategy::Atomics => Schedule::Atomics,
        Strategy::Cas => Schedule::Cas,
        Strategy::Staged => Schedule::Staged,
    };
    schedule.legal(req, racing)?;
    Ok(schedule)
}

/// `auto`: the table in ARCHITECTURE.md ("Racing increments"). On GPUs with f32 atomics,
/// native atomics (OP2's modern default); on CPU adapters (lavapipe, llvmpipe, SwiftShader),
/// without float atomics and for f64, one-level colouring, which measured fastest there
/// (BENCHMARKS.md) and is deterministic. (f64 compare-and-swap is not measured on a GPU yet:
/// `tune` tries it.) Where the colouring turns out to need many small colours, the runtime
/// lowers the group again with atomics (`Config::min_colour_size`).
fn auto(req: &Request, racing: &[DType]) -> Schedule {
    if req.float_atomics && !req.cpu_adapter && !has_f64(racing) {
        Schedule::Atomics
    } else {
        Schedule::GlobalColour
    }
}

/// How many times smaller than `Config::min_colour_size` colours must be for `auto` to run
/// them by compare-and-swap (f64, f32 min/max, f32 on adapters without f32 atomics): a
/// compare-and-swap loop costs more per increment than a native add. On GL llvmpipe f32
/// compare-and-swap ran 1.9 to 2.2x slower than colouring at 2,765 positions per colour and
/// 1.1x faster at 1,000 (BENCHMARKS.md, "Contention").
pub const CAS_SHARE: usize = 4;

/// `auto`'s second look, once a colouring's size is known (the runtime asks): whether a
/// colouring of `colours` colours over `positions` positions runs better with atomics, each
/// colour being a dispatch. More than [`AUTO_FEW_COLOURS`] colours holding fewer than
/// `min_colour_size` positions on average (`Config::min_colour_size` for native atomics, a
/// [`CAS_SHARE`]th of it for compare-and-swap). Monotone in `colours`: true of a lower bound
/// on the colours is true of the colouring.
pub fn colours_too_small(colours: usize, positions: usize, min_colour_size: usize) -> bool {
    colours > AUTO_FEW_COLOURS && positions < colours.saturating_mul(min_colour_size)
}

/// Whether some racing argument is f64 (no atomic f64 type in WGSL: its increments are
/// compare-and-swap loops on `atomic<u64>`, which not every adapter has).
fn has_f64(racing: &[DType]) -> bool {
    racing.contains(&DType::F64)
}

/// Whether the adapter can apply the racing arguments' f64 increments with atomics.
fn f64_atomics(req: &Request, racing: &[DType]) -> Result<(), Illegal> {
    if has_f64(racing) && !req.int64_atomics {
        Err(Illegal::F64Races)
    } else {
        Ok(())
    }
}

impl Schedule {
    /// Every schedule (each staging of `Hierarchical`), for tests.
    #[cfg(test)]
    pub fn all() -> Vec<Schedule> {
        vec![
            Schedule::Direct,
            Schedule::Atomics,
            Schedule::Cas,
            Schedule::GlobalColour,
            Schedule::Hierarchical(Staging::None),
            Schedule::Hierarchical(Staging::Inc),
            Schedule::Hierarchical(Staging::All),
            Schedule::Staged,
        ]
    }
    /// Whether the schedule can run racing arguments of types `racing` on this adapter.
    fn legal(&self, req: &Request, racing: &[DType]) -> Result<(), Illegal> {
        match self {
            // Only groups where nothing races get it (`choose`).
            Schedule::Direct => Ok(()),
            Schedule::Atomics => atomics::legal(req, racing),
            Schedule::Cas => f64_atomics(req, racing),
            Schedule::GlobalColour => global_colour::legal(),
            Schedule::Hierarchical(_) => hierarchical::legal(req),
            Schedule::Staged => f64_atomics(req, racing),
        }
    }
    /// Its name in `explain()`: the strategy's ("direct" where nothing races).
    pub fn name(&self) -> &'static str {
        match self {
            Schedule::Direct => "direct",
            Schedule::Atomics => "atomics",
            Schedule::Cas => "cas",
            Schedule::GlobalColour => "global-colour",
            Schedule::Hierarchical(Staging::Inc) => "hierarchical-inc",
            Schedule::Hierarchical(Staging::All) => "hierarchical-all",
            Schedule::Hierarchical(Staging::None) => "hierarchical-none",
            Schedule::Staged => "staged",
        }
    }
    /// The plan the schedule needs.
    pub fn plan(&self) -> PlanKind {
        match self {
            Schedule::Direct | Schedule::Atomics | Schedule::Cas => PlanKind::None,
            Schedule::GlobalColour => PlanKind::Colouring,
            Schedule::Hierarchical(_) | Schedule::Staged => PlanKind::Blocks,
        }
    }
    /// What a mini-partition schedule stages in workgroup memory (None: not one).
    pub fn staging(&self) -> Option<Staging> {
        match self {
            Schedule::Hierarchical(s) => Some(*s),
            Schedule::Staged => Some(Staging::Inc),
            Schedule::Direct | Schedule::Atomics | Schedule::Cas | Schedule::GlobalColour => None,
        }
    }
    /// How a racing argument (`dtype`, `access`) is applied to global memory.
    pub fn racing_atomic(&self, dtype: DType, access: Access) -> Atomic {
        match self {
            Schedule::Atomics => atomics::atomic(dtype, access),
            Schedule::Cas => cas::atomic(dtype),
            // Colouring and staging made the increments safe: plain read-modify-write.
            Schedule::Direct
            | Schedule::GlobalColour
            | Schedule::Hierarchical(_)
            | Schedule::Staged => Atomic::No,
        }
    }
    /// Whether racing increments are combined in workgroup memory with workgroup atomics.
    pub fn workgroup_atomics(&self) -> bool {
        match self {
            Schedule::Staged => true,
            Schedule::Direct
            | Schedule::Atomics
            | Schedule::Cas
            | Schedule::GlobalColour
            | Schedule::Hierarchical(_) => false,
        }
    }
    /// Writes the body of the shader's main function (after the reduction accumulators).
    pub(super) fn main(&self, g: &GroupIr, w: &mut String) {
        match self {
            Schedule::Direct => direct::main(g, w),
            Schedule::Atomics => atomics::main(g, w),
            Schedule::Cas => cas::main(g, w),
            Schedule::GlobalColour => global_colour::main(g, w),
            Schedule::Hierarchical(staging) => hierarchical::main(g, *staging, w),
            Schedule::Staged => staged::main(g, w),
        }
    }
}

/// The dispatches of a group: (positions, first position, workgroups) each. `colour_offsets`
/// are the colouring's (a `Colouring` plan), `block_offsets` the block colours' (a `Blocks`
/// plan); `positions` start at `first` when there is no plan. `stride_cap` caps the
/// workgroups of one-invocation-per-position dispatches of a reducing group, whose workgroups
/// then take chunks of the positions (see [`crate::codegen::flat_main`]).
pub fn dispatches(
    plan: PlanKind,
    colour_offsets: Option<&[usize]>,
    block_offsets: Option<&[usize]>,
    (positions, first): (usize, usize),
    workgroup_size: u32,
    stride_cap: Option<u32>,
) -> Vec<(u32, u32, u32)> {
    let flat = |n: u32| match stride_cap {
        Some(cap) => n
            .div_ceil(crate::codegen::STRIDE_UNROLL * workgroup_size)
            .min(cap),
        None => n.div_ceil(workgroup_size),
    };
    let each = |offsets: &[usize], per: &dyn Fn(u32) -> u32| -> Vec<(u32, u32, u32)> {
        offsets
            .windows(2)
            .map(|o| {
                let n = (o[1] - o[0]) as u32;
                (n, o[0] as u32, per(n))
            })
            .collect()
    };
    match (plan, colour_offsets, block_offsets) {
        (PlanKind::Colouring, Some(c), _) => each(c, &flat),
        // One workgroup per block.
        (PlanKind::Blocks, _, Some(b)) => each(b, &|n| n),
        (PlanKind::None | PlanKind::Colouring, _, _) => {
            let n = positions as u32;
            vec![(n, first as u32, flat(n))]
        }
        (PlanKind::Blocks, _, None) => {
            let n = positions as u32;
            vec![(n, first as u32, n.div_ceil(workgroup_size))]
        }
    }
}
