//! The finalize pass of a loop group's Global reductions (`shaders/finalize.wgsl`): one
//! dispatch of one workgroup folds, for every Global the group reduces, the per-workgroup
//! partials the group left in scratch and combines the result into the Global (INC adds to its
//! value, MIN/MAX keep the extreme), so successive loops reducing into one Global accumulate.

use super::{GroupIr, ReductionIr, combine};
use crate::types::DType;
use std::collections::BTreeSet;
use std::fmt::Write;

const TEMPLATE: &str = include_str!("../../shaders/finalize.wgsl");

/// The Globals a finalize pass binds, from binding 2 in this order: the group's reductions'
/// bindings, each once (two arguments reducing into one Global are folded in turn into one
/// binding: two writable bindings of one buffer in a dispatch would race).
pub fn finalize_bindings(reductions: &[ReductionIr]) -> Vec<usize> {
    let mut bindings: Vec<usize> = Vec::new();
    for r in reductions {
        if !bindings.contains(&r.binding) {
            bindings.push(r.binding);
        }
    }
    bindings
}

/// WGSL of the finalize pass of a group's reductions (in the group's order; the Globals bound
/// as [`finalize_bindings`] lists them, each reduction's partials after the earlier ones' in
/// scratch, as [`reduction_epilogue`] stores them).
pub fn finalize_wgsl(reductions: &[ReductionIr]) -> String {
    let (mut globals, mut body) = (String::new(), String::new());
    let bindings = finalize_bindings(reductions);
    for (g, &b) in bindings.iter().enumerate() {
        let red = reductions.iter().find(|r| r.binding == b).expect("listed");
        let _ = writeln!(
            globals,
            "@group(0) @binding({}) var<storage, read_write> pl_global{g}: array<{}>;",
            g + 2,
            red.dtype.wgsl()
        );
    }
    let mut off = 0usize;
    for red in reductions {
        let (t, op) = (red.dtype.wgsl(), super::reduce_op(red.access));
        let r = bindings
            .iter()
            .position(|&b| b == red.binding)
            .expect("listed");
        // Partial slot i's word: its bits, or two words for f64 (joined through a u64).
        let i = format!("pl_s * {}u + pl_d", red.dim);
        let load = if red.dtype == DType::F64 {
            let w = format!("{off}u * pl.n + 2u * ({i})");
            format!("bitcast<f64>(u64(pl_scratch[{w}]) | (u64(pl_scratch[{w} + 1u]) << 32u))")
        } else {
            format!("bitcast<{t}>(pl_scratch[{off}u * pl.n + {i}])")
        };
        let tree = format!("pl_red_{t}");
        let _ = write!(
            body,
            "    for (var pl_d = 0u; pl_d < {dim}u; pl_d++) {{\n        \
             var pl_acc: {t} = {identity};\n        \
             for (var pl_s = pl_lid; pl_s < pl.n; pl_s += 64u) {{\n            \
             let pl_v = {load};\n            \
             pl_acc = {fold};\n        }}\n        \
             workgroupBarrier();\n        \
             {tree}[pl_lid] = pl_acc;\n        \
             workgroupBarrier();\n        \
             for (var pl_h = 32u; pl_h > 0u; pl_h >>= 1u) {{\n            \
             if (pl_lid < pl_h) {{ {tree}[pl_lid] = {pair}; }}\n            \
             workgroupBarrier();\n        }}\n        \
             if (pl_lid == 0u) {{ pl_global{r}[pl_d] = {into}; }}\n    }}\n",
            dim = red.dim,
            identity = op.identity_wgsl(red.dtype),
            fold = combine(red.access, "pl_acc", "pl_v"),
            pair = combine(
                red.access,
                &format!("{tree}[pl_lid]"),
                &format!("{tree}[pl_lid + pl_h]")
            ),
            into = combine(
                red.access,
                &format!("pl_global{r}[pl_d]"),
                &format!("{tree}[0]")
            ),
        );
        off += red.dim * red.dtype.words();
    }
    let types: BTreeSet<&str> = reductions.iter().map(|r| r.dtype.wgsl()).collect();
    let workgroup: String = types
        .iter()
        .map(|t| format!("var<workgroup> pl_red_{t}: array<{t}, 64>;\n"))
        .collect();
    crate::types::with_infinity(
        TEMPLATE
            .replace("PL_GLOBALS\n", &globals)
            .replace("PL_WORKGROUP\n", &workgroup)
            .replace("PL_BODY", &body),
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
