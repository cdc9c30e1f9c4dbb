//! The main function of a mini-partition schedule (`hierarchical` and `staged`; seed 002's
//! plan, docs/background.md): each workgroup takes one block of the current block colour,
//! stages the block's targets in workgroup memory (racing ones at their identity, read ones
//! gathered), lets the schedule compute and combine its elements (`middle`), and adds the
//! staged increments back to global memory.

use super::super::{
    Access, ArgSource, BindingKind, DType, GroupIr, combine, dat_index, racing_args, reduce_op,
};
use super::staged_load;
use crate::plan::{PLAN_HEADER_FIXED, PLAN_HEADER_PER_MAP};
use std::fmt::Write;

/// The block's header, stage-in, `middle` (which computes the block's elements and combines
/// their increments into the staged targets) and stage-out.
pub(super) fn main(g: &GroupIr, w: &mut String, middle: impl FnOnce(&GroupIr, &mut String)) {
    let wg = g.workgroup_size;
    let plan = g.var(g.plan.unwrap_or(0));
    let _ = writeln!(
        w,
        "    if (pl_lid == 0u) {{\n        var pl_b = PlBlock(0u, 0u, 0u, 0u);\n        if (pl_wg < pl.n) {{\n            \
         let pl_id = {plan}[{plan}[4u] + pl.base + pl_wg];\n            \
         let pl_first = {plan}[{plan}[0u] + pl_id];\n            \
         pl_b = PlBlock(pl_id, pl_first, {plan}[{plan}[0u] + pl_id + 1u] - pl_first, {plan}[{plan}[3u] + pl_id]);\n        \
         }}\n        pl_blk = pl_b;\n    }}\n    let pl_block = workgroupUniformLoad(&pl_blk);"
    );
    // Stage in: zero (identity) the racing targets, gather the staged reads.
    let staged = g.staged_dats();
    let racers = racing_args(g);
    let racing_dat = |dat: usize| {
        racers
            .iter()
            .any(|&(l, a)| matches!(g.loops[l].args[a].source, ArgSource::Indirect { dat: d, .. } if d == dat))
    };
    let access_of = |dat: usize| {
        racers
            .iter()
            .map(|&(l, a)| &g.loops[l].args[a])
            .find(|a| matches!(a.source, ArgSource::Indirect { dat: d, .. } if d == dat))
            .map_or(Access::Read, |a| a.access)
    };
    for (s, sm) in g.staged.iter().enumerate() {
        let _ = writeln!(
            w,
            "    let pl_l2g_first{s} = {plan}[{plan}[{o}u] + pl_block.id];\n    \
             let pl_nu{s} = select(0u, {plan}[{plan}[{o}u] + pl_block.id + 1u] - pl_l2g_first{s}, pl_block.count > 0u);\n    \
             for (var pl_u = pl_lid; pl_u < pl_nu{s}; pl_u += {wg}u) {{\n        \
             let pl_t = {plan}[{plan}[{o1}u] + pl_l2g_first{s} + pl_u];",
            o = PLAN_HEADER_FIXED + PLAN_HEADER_PER_MAP * s,
            o1 = PLAN_HEADER_FIXED + PLAN_HEADER_PER_MAP * s + 1
        );
        let _ = sm;
        for &(s2, dat, dim) in &staged {
            if s2 != s {
                continue;
            }
            let sv = g.staged_var(s, dat);
            let src = if racing_dat(dat) {
                let BindingKind::Dat { dtype, .. } = g.bindings[dat].kind else {
                    continue;
                };
                reduce_op(access_of(dat)).identity_wgsl(dtype)
            } else {
                format!("{}[{}]", g.var(dat), dat_index(g, dat, "pl_t", dim))
            };
            let place = format!("{sv}[pl_u * {dim}u + pl_k]");
            let store = match g.bindings[dat].kind {
                BindingKind::Dat { dtype, .. } if g.staged_atomics() && racing_dat(dat) => {
                    let bits = match dtype {
                        DType::F32 => format!("bitcast<u32>({src})"),
                        DType::F64 => format!("bitcast<u64>({src})"),
                        DType::U32 | DType::I32 => src,
                    };
                    format!("atomicStore(&{place}, {bits});")
                }
                _ => format!("{place} = {src};"),
            };
            let _ = writeln!(
                w,
                "        for (var pl_k = 0u; pl_k < {dim}u; pl_k++) {{ {store} }}"
            );
        }
        w.push_str("    }\n");
    }
    if !g.staged.is_empty() {
        w.push_str("    workgroupBarrier();\n");
    }
    middle(g, w);

    // Stage out: add the staged increments to global memory.
    // Idle workgroups of a rounded-up grid (count 0) stage nothing, so they write nothing.
    // One Dat staged through two maps has two copies whose targets can coincide: their
    // stage-out loops are separated by a storage barrier.
    let mut wrote_barrier = false;
    let mut written: Vec<usize> = Vec::new();
    for &(s, dat, dim) in &staged {
        if !racing_dat(dat) {
            continue;
        }
        if !wrote_barrier {
            w.push_str("    workgroupBarrier();\n");
            wrote_barrier = true;
        }
        if written.contains(&dat) {
            w.push_str("    storageBarrier();\n");
        }
        written.push(dat);
        let sv = g.staged_var(s, dat);
        let var = g.var(dat);
        let at = dat_index(g, dat, "pl_t", dim);
        let _ = writeln!(
            w,
            "    for (var pl_u = pl_lid; pl_u < pl_nu{s}; pl_u += {wg}u) {{\n        \
             let pl_t = {plan}[{plan}[{o1}u] + pl_l2g_first{s} + pl_u];\n        \
             for (var pl_k = 0u; pl_k < {dim}u; pl_k++) {{ {var}[{at}] = {}; }}\n    }}",
            combine(
                access_of(dat),
                &format!("{var}[{at}]"),
                &staged_value(g, dat, &format!("{sv}[pl_u * {dim}u + pl_k]"))
            ),
            o1 = PLAN_HEADER_FIXED + PLAN_HEADER_PER_MAP * s + 1
        );
    }
}

/// A staged value of `dat` as its type (atomics are loaded).
fn staged_value(g: &GroupIr, dat: usize, place: &str) -> String {
    match g.bindings[dat].kind {
        BindingKind::Dat { dtype, .. } if g.staged_atomics() => staged_load(dtype, place),
        _ => place.to_string(),
    }
}
