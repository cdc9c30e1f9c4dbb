//! The main function of a hierarchical loop group (seed 002's plan, docs/background.md): each
//! workgroup takes one block of the current block colour, stages the block's targets in
//! workgroup memory, runs the block's thread colours one after another with a barrier between
//! them, and writes the staged increments back.

use super::{
    Access, ArgSource, BindingKind, GroupIr, PLAN_HEADER_FIXED, PLAN_HEADER_PER_MAP, Staging,
    combine, element_body, racing_args,
};
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
                dtype.identity(access_of(dat)).to_string()
            } else {
                format!("{}[pl_t * {dim}u + pl_k]", g.var(dat))
            };
            let _ = writeln!(
                w,
                "        for (var pl_k = 0u; pl_k < {dim}u; pl_k++) {{ {sv}[pl_u * {dim}u + pl_k] = {src}; }}"
            );
        }
        w.push_str("    }\n");
    }
    if !g.staged.is_empty() {
        w.push_str("    workgroupBarrier();\n");
    }
    // Thread colours one after another: positions of one colour are contiguous and touch
    // distinct targets, so each thread applies its increments at once; a barrier separates
    // colours (its loop bound is uniform across the workgroup).
    let barrier = if staging == Staging::None {
        "storageBarrier"
    } else {
        "workgroupBarrier"
    };
    let _ = writeln!(
        w,
        "    let pl_cbase = {plan}[{plan}[2u] + pl_block.id];\n    \
         for (var pl_c = 0u; pl_c < pl_block.ncol; pl_c++) {{\n        \
         let pl_ce = {plan}[{plan}[5u] + pl_cbase + pl_c + 1u];\n        \
         for (var pl_p = {plan}[{plan}[5u] + pl_cbase + pl_c] + pl_lid; pl_p < pl_ce; pl_p += {wg}u) {{\n            \
         let pl_e = {plan}[{plan}[1u] + pl_p];"
    );
    element_body(g, w, "            ");
    let _ = writeln!(w, "        }}\n        {barrier}();\n    }}");
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
        let _ = writeln!(
            w,
            "    for (var pl_u = pl_lid; pl_u < pl_nu{s}; pl_u += {wg}u) {{\n        \
             let pl_t = {plan}[{plan}[{o1}u] + pl_l2g_first{s} + pl_u];\n        \
             for (var pl_k = 0u; pl_k < {dim}u; pl_k++) {{ {var}[pl_t * {dim}u + pl_k] = {}; }}\n    }}",
            combine(
                access_of(dat),
                &format!("{var}[pl_t * {dim}u + pl_k]"),
                &format!("{sv}[pl_u * {dim}u + pl_k]")
            ),
            o1 = PLAN_HEADER_FIXED + PLAN_HEADER_PER_MAP * s + 1
        );
    }
}
