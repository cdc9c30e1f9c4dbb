//! The finalize pass of a Global reduction (`shaders/finalize.wgsl`): one workgroup folds the
//! per-workgroup partials left in scratch by a loop group and combines the result into the
//! Global (INC adds to its value, MIN/MAX keep the extreme), so successive loops reducing into
//! one Global accumulate.

use super::{GroupIr, combine};
use crate::types::{Access, DType};
use std::fmt::Write;

const TEMPLATE: &str = include_str!("../../shaders/finalize.wgsl");

/// WGSL of the finalize pass for one dtype and access.
pub fn finalize_wgsl(dtype: DType, access: Access) -> String {
    let op = access
        .reduction()
        .unwrap_or_else(|| panic!("internal: a finalize pass for {access}, not a reduction"));
    // The partial of slot i: its bits, or two words for f64 (joined through a u64).
    let load = if dtype == DType::F64 {
        "bitcast<f64>(u64(pl_scratch[pl.base + 2u * i]) | (u64(pl_scratch[pl.base + 2u * i + 1u]) << 32u))"
    } else {
        "bitcast<TYPE>(pl_scratch[pl.base + i])"
    };
    crate::types::with_infinity(
        TEMPLATE
            .replace("LOAD", load)
            .replace("TYPE", dtype.wgsl())
            .replace("IDENTITY", &op.identity_wgsl(dtype))
            .replace("COMBINE", &op.wgsl("a", "b")),
    )
}

/// The end of a group that reduces into Globals: each workgroup folds its invocations'
/// accumulators (a tree in workgroup memory) and stores its partial in the scratch words, which
/// the finalize pass then combines.
pub(super) fn reduction_epilogue(g: &GroupIr, w: &mut String) {
    let wg = g.workgroup_size;
    let scratch = match g.scratch {
        Some(s) => g.var(s),
        None => return,
    };
    let mut off = 0usize;
    for (r, red) in g.reductions.iter().enumerate() {
        let dt = red.dtype;
        let _ = writeln!(
            w,
            "    for (var pl_d = 0u; pl_d < {dim}u; pl_d++) {{\n        \
             workgroupBarrier();\n        \
             pl_red_{dt}[pl_lid] = pl_acc{r}[pl_d];\n        \
             workgroupBarrier();\n        \
             for (var pl_s = {half}u; pl_s > 0u; pl_s >>= 1u) {{\n            \
             if (pl_lid < pl_s && pl_lid + pl_s < {wg}u) {{ pl_red_{dt}[pl_lid] = {}; }}\n            \
             workgroupBarrier();\n        }}\n        \
             if (pl_lid == 0u && pl_wg < pl.nwg) {{ {store} }}\n    }}",
            combine(
                red.access,
                &format!("pl_red_{dt}[pl_lid]"),
                &format!("pl_red_{dt}[pl_lid + pl_s]")
            ),
            dim = red.dim,
            // Any workgroup size: the tree starts at the power of two below it and skips
            // partners past the end.
            half = wg.next_power_of_two() / 2,
            store = store_partial(
                &scratch,
                &format!(
                    "{off}u * pl.slots + ((pl.wg_base + pl_wg) * {}u + pl_d)",
                    red.dim
                ),
                dt,
                &format!("pl_red_{dt}[0]"),
            ),
        );
        off += red.dim * dt.words();
    }
}

/// Stores a workgroup's partial `value` at slot `slot` of the scratch words: as its bits, and
/// for f64 as two words (low first, through a u64: WGSL cannot bitcast f64 to u32s).
fn store_partial(scratch: &str, slot: &str, dtype: DType, value: &str) -> String {
    if dtype == DType::F64 {
        format!(
            "let pl_bits = bitcast<u64>({value}); {scratch}[{slot} * 2u] = u32(pl_bits & 0xfffffffflu); \
             {scratch}[{slot} * 2u + 1u] = u32(pl_bits >> 32u);"
        )
    } else {
        format!("{scratch}[{slot}] = bitcast<u32>({value});")
    }
}
