//! `staged`: the mini-partitions and block colours of the hierarchical plan (`blocks.rs`), but
//! each thread takes its positions of the block and combines its increments into the staged
//! targets with workgroup atomics, in any order: no thread colours and no barrier between
//! them. Staged float targets are bit patterns updated by compare-and-swap (f32 as
//! `atomic<u32>`, f64 as `atomic<u64>` where the adapter has 64-bit integer atomics), integers
//! native atomics. For adapters without float atomics (browsers, GL, DX12). Not
//! bit-reproducible (the order of additions within a block varies).

use super::super::{DType, GroupIr, element_body};
use super::blocks;
use std::fmt::Write;

pub(super) fn main(g: &GroupIr, w: &mut String) {
    blocks::main(g, w, |g, w| {
        let wg = g.workgroup_size;
        let plan = g.var(g.plan.unwrap_or(0));
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
    });
}

/// The element type of a staged array combined with workgroup atomics: floats as their bits
/// (compare-and-swap), integers natively.
pub(in crate::codegen) fn staged_atomic_type(dtype: DType) -> &'static str {
    match dtype {
        DType::I32 => "atomic<i32>",
        DType::U32 | DType::F32 => "atomic<u32>",
        DType::F64 => "atomic<u64>",
    }
}

/// A value of a staged atomic array as its type.
pub(in crate::codegen) fn staged_load(dtype: DType, place: &str) -> String {
    match dtype {
        DType::F32 => format!("bitcast<f32>(atomicLoad(&{place}))"),
        DType::F64 => format!("bitcast<f64>(atomicLoad(&{place}))"),
        DType::U32 | DType::I32 => format!("atomicLoad(&{place})"),
    }
}
