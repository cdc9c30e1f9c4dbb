//! The main function of a hierarchical loop group (seed 002's plan, docs/background.md): each
//! workgroup takes one block of the current block colour, stages the block's targets in
//! workgroup memory, computes all its elements at once (increments held in registers), applies
//! the increments one thread colour after another with a barrier between them (OP2's CUDA
//! plan), and writes the staged increments back.

use super::{
    Access, ArgSource, BindingKind, DType, GroupIr, Staging, combine, dat_index, declare_racing,
    element_body, racing_args, reduce_op, staged_load,
};
use crate::plan::{PLAN_HEADER_FIXED, PLAN_HEADER_PER_MAP};
use std::fmt::Write;

pub(super) fn hierarchical_main(g: &GroupIr, staging: Staging, w: &mut String) {
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
                    let bits = if dtype == DType::F32 {
                        format!("bitcast<u32>({src})")
                    } else {
                        src
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
    if g.staged_atomics() {
        // The `staged` strategy: every thread takes its positions of the block and combines
        // its increments into the staged targets with workgroup atomics, in any order.
        let colours = format!("{plan}[{plan}[5u] + pl_cbase");
        let _ = writeln!(
            w,
            "    let pl_cbase = {plan}[{plan}[2u] + pl_block.id];\n    \
             let pl_end = select({colours}], {colours} + pl_block.ncol], pl_block.ncol > 0u);\n    \
             for (var pl_p = {colours}] + pl_lid; pl_p < pl_end; pl_p += {wg}u) {{\n        \
             let pl_e = {plan}[{plan}[1u] + pl_p];"
        );
        element_body(g, w, "        ", None);
        w.push_str("    }\n");
    } else {
        colour_by_colour(g, staging, w);
    }

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

/// OP2's plan: every thread computes its elements of the block at once, keeping the
/// increments in registers (its locals), then the thread colours take turns applying them, a
/// barrier between colours.
fn colour_by_colour(g: &GroupIr, staging: Staging, w: &mut String) {
    let wg = g.workgroup_size;
    let plan = g.var(g.plan.unwrap_or(0));
    // Positions of one colour are contiguous: a position's colour is found among the block's
    // colour offsets. Rounds of one position per thread; each round's colour phases cover
    // only the colours its positions have (thread 0 finds them; a uniform load shares them),
    // so a block of R rounds and C colours has about R + C phases, not R x C. Every bound a
    // barrier depends on is uniform (the block from `pl_blk`, the span from `pl_span`).
    let barrier = if staging == Staging::None {
        "storageBarrier"
    } else {
        "workgroupBarrier"
    };
    let colours = format!("{plan}[{plan}[5u] + pl_cbase");
    let colour_of = |p: &str, out: &str| {
        format!("var {out} = 0u; while ({colours} + {out} + 1u] <= {p}) {{ {out}++; }}")
    };
    let _ = writeln!(
        w,
        "    let pl_cbase = {plan}[{plan}[2u] + pl_block.id];\n    \
         let pl_first = {colours}];\n    \
         for (var pl_q = 0u; pl_q < pl_block.count; pl_q += {wg}u) {{\n        \
         if (pl_lid == 0u) {{\n            \
         let pl_lo = pl_first + pl_q;\n            \
         let pl_hi = pl_first + min(pl_q + {wg}u, pl_block.count) - 1u;\n            \
         {}\n            {}\n            \
         pl_span = vec2<u32>(pl_clo, pl_chi + 1u);\n        }}\n        \
         let pl_cs = workgroupUniformLoad(&pl_span);\n        \
         var pl_p = 0u;\n        var pl_e = 0u;\n        var pl_col = 0xffffffffu;",
        colour_of("pl_lo", "pl_clo"),
        colour_of("pl_hi", "pl_chi")
    );
    declare_racing(g, w, "        ");
    let _ = writeln!(
        w,
        "        if (pl_q + pl_lid < pl_block.count) {{\n            \
         pl_p = pl_first + pl_q + pl_lid;\n            \
         pl_e = {plan}[{plan}[1u] + pl_p];\n            \
         {}\n            pl_col = pl_c0;",
        colour_of("pl_p", "pl_c0")
    );
    let mut apply = String::new();
    element_body(g, w, "            ", Some(&mut apply));
    let _ = writeln!(
        w,
        "        }}\n        for (var pl_c = pl_cs.x; pl_c < pl_cs.y; pl_c++) {{\n            \
         if (pl_col == pl_c) {{\n{apply}            }}\n            {barrier}();\n        }}\n    }}"
    );
}

/// A staged value of `dat` as its type (atomics are loaded).
fn staged_value(g: &GroupIr, dat: usize, place: &str) -> String {
    match g.bindings[dat].kind {
        BindingKind::Dat { dtype, .. } if g.staged_atomics() => staged_load(dtype, place),
        _ => place.to_string(),
    }
}
