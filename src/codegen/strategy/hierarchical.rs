//! `hierarchical`: seed 002's plan as OP2 runs it on GPUs. The mini-partitions (`blocks.rs`):
//! one per workgroup, sized from workgroup memory and the bytes staged per element (OP2's
//! formula), block colours in successive dispatches. Inside a block every thread computes its
//! elements at once, holding the increments in registers, then the thread colours apply them
//! in turn with a barrier between colours. Staging `inc` (racing data in workgroup memory),
//! `all` (indirectly read data too) or `none` (increments straight to global memory, storage
//! barriers). Deterministic. Legal on every adapter, f64 included, at workgroup sizes that
//! are multiples of 8.

use super::super::{GroupIr, Staging, declare_racing, element_body};
use super::blocks;
use std::fmt::Write;

/// Any adapter and type, at workgroup sizes that are multiples of 8: at other sizes llvmpipe
/// (which runs a workgroup in chunks of 8 invocations) loses increments across the barriers
/// inside a block's rounds.
pub(super) fn legal(req: &super::Request) -> Result<(), super::Illegal> {
    if req.workgroup_size.is_multiple_of(8) {
        Ok(())
    } else {
        Err(super::Illegal::WorkgroupSize(req.workgroup_size))
    }
}

pub(super) fn main(g: &GroupIr, staging: Staging, w: &mut String) {
    blocks::main(g, w, |g, w| colour_by_colour(g, staging, w));
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
