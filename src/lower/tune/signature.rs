//! What identifies a group to the tuner (its signature: the cache's key and the instance's),
//! and which candidates it has: the caps a reducing group tries, and which schedules are the
//! same code.

use super::super::{Choice, racing_types};
use crate::codegen::strategy::{self, PlanKind, Schedule};
use crate::data::{IterSpace, Via};
use crate::fuse::Group;
use crate::types::{Access, DType};
use std::fmt::Write;

/// The caps a reducing group of `positions` tries at workgroup size `wg`: `default` first,
/// then 16 and 4 times fewer and 4 times more, each only if it gives another number of
/// workgroups (a group of a few thousand positions needs few, whatever the cap).
pub(super) fn caps(default: u32, positions: usize, wg: u32) -> Vec<u32> {
    // The workgroups of the group's dispatch under `cap`, as the runtime dispatches it.
    let workgroups = |cap: u32| {
        strategy::dispatches(PlanKind::None, None, None, (positions, 0), wg, Some(cap))
            .first()
            .map_or(0, |d| d.2)
    };
    let mut out: Vec<u32> = Vec::new();
    let mut counts: Vec<u32> = Vec::new();
    for cap in [
        default,
        default / 16,
        default / 4,
        default.saturating_mul(4),
    ] {
        let count = workgroups(cap);
        if cap > 0 && !counts.contains(&count) {
            counts.push(count);
            out.push(cap);
        }
    }
    out
}

/// Whether two schedules generate the same code for these racing types (for f64 alone,
/// `atomics` and `cas` are both compare-and-swap loops): only the first is tried.
pub(super) fn same_code(a: &Schedule, b: &Schedule, racing: &[DType]) -> bool {
    a == b
        || (a.plan() == b.plan()
            && a.staging() == b.staging()
            && a.workgroup_atomics() == b.workgroup_atomics()
            && racing.iter().all(|&t| {
                [Access::Inc, Access::Min, Access::Max]
                    .into_iter()
                    .all(|x| a.racing_atomic(t, x) == b.racing_atomic(t, x))
            }))
}

/// A group's keys: `file` (its kernels' sources, arguments, layout, checking and size class:
/// what the cache keeps a choice under) and `instance` (with its Sets, Maps and positions:
/// one tuning per group instance in a run), its racing types and whether it reduces into
/// Globals.
pub(super) struct Signature {
    pub file: String,
    pub instance: String,
    pub racing: Vec<DType>,
    pub reduces: bool,
}

impl Signature {
    pub fn races_floats(&self) -> bool {
        self.racing
            .iter()
            .any(|t| matches!(t, DType::F32 | DType::F64))
    }
}

/// The group's signature, or None when nothing would be tuned (no positions; no float races,
/// and no reduction into Globals whose caps would give different numbers of workgroups).
pub(super) fn signature(g: &Group, base: &Choice) -> Option<Signature> {
    let racing = racing_types(g);
    let positions = g.loops[0].space.len();
    let reduces = g.loops.iter().any(|l| {
        l.args
            .iter()
            .any(|a| matches!(a.via, Via::Global) && a.access.is_reduction())
    });
    let races_floats = racing.iter().any(|t| matches!(t, DType::F32 | DType::F64));
    let caps_differ =
        reduces && caps(base.reduction_workgroups, positions, base.workgroup_size).len() > 1;
    if positions == 0 || !(races_floats || caps_differ) {
        return None;
    }
    let mut s = format!(
        "soa {} check {} block {:?} balance {}\n",
        base.soa, base.check, base.block_size, base.balance
    );
    let mut ids = String::new();
    // Every argument of the group in order: an argument's alias is the first with its data.
    let data: Vec<u64> = g
        .loops
        .iter()
        .flat_map(|l| l.args.iter().map(|a| a.data.id))
        .collect();
    let mut k = 0;
    for lp in &g.loops {
        let _ = writeln!(
            s,
            "{}\n{}",
            lp.kernel.name(),
            lp.kernel.wgsl().unwrap_or("")
        );
        let space = match &lp.space {
            IterSpace::Set(_) => "set",
            IterSpace::Subset(_) => "subset",
            IterSpace::WithExecHalo(_) => "exec halo",
            IterSpace::Core(_) => "core",
            IterSpace::Owned(_, _) => "owned",
        };
        let _ = writeln!(s, "{space}");
        let _ = write!(ids, "{} {}:", lp.space.set().id(), lp.space.len());
        for a in &lp.args {
            let via = match &a.via {
                Via::Direct => "direct".to_string(),
                Via::Map(m, j) => format!("map {} [{j}]", m.arity()),
                Via::MapAll(m) => format!("map {} all", m.arity()),
                Via::Global => "global".to_string(),
            };
            // Maps make plans differ; Dats only by aliasing, across the group's loops (a Dat
            // made anew each step must not restart the tuning), which the cache's key keeps
            // too: `x . x` reads half the memory of `x . y`, and their choices differ.
            let map = a.map().map_or(0, |m| m.id());
            let alias = data.iter().position(|&d| d == a.data.id).unwrap_or(k);
            k += 1;
            let _ = writeln!(
                s,
                "{:?} {:?} {} {via} as {alias}",
                a.access, a.data.dtype, a.data.dim
            );
            let _ = write!(ids, " {alias}/{map}");
        }
    }
    let class = positions.next_power_of_two().trailing_zeros();
    let file = format!("{:016x}-{class}", fnv1a(s.as_bytes()));
    Some(Signature {
        instance: format!("{file} {ids}"),
        file,
        racing,
        reduces,
    })
}

/// FNV-1a, 64 bits: a hash that stays the same across builds (the cache file keeps it).
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}
