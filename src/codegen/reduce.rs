//! The finalize pass of a Global reduction: one workgroup folds the per-workgroup partials left
//! in scratch by a loop group and combines the result into the Global (INC adds to its value,
//! MIN/MAX keep the extreme), so successive loops reducing into one Global accumulate.

use crate::types::{Access, DType};

pub const WORKGROUP: u32 = 64;

/// WGSL of the finalize pass for one dtype and access. Parameters (binding 0, the same
/// `PlParams` layout as loop groups): `n` = partial slots, `base` = first scratch word,
/// `nwg` = dim of the Global.
pub fn finalize_wgsl(dtype: DType, access: Access) -> String {
    let t = dtype.wgsl();
    let id = dtype.identity(access);
    let op = |a: &str, b: &str| match access {
        Access::Min => format!("min({a}, {b})"),
        Access::Max => format!("max({a}, {b})"),
        _ => format!("{a} + {b}"),
    };
    format!(
        "// parloop: finalize a Global {access} reduction ({t})\n\
struct PlParams {{\n    n: u32,\n    base: u32,\n    wg_base: u32,\n    slots: u32,\n    nwg: u32,\n    pad0: u32,\n    pad1: u32,\n    pad2: u32,\n}}\n\
@group(0) @binding(0) var<uniform> pl: PlParams;\n\
@group(0) @binding(1) var<storage, read> pl_scratch: array<u32>;\n\
@group(0) @binding(2) var<storage, read_write> pl_global: array<{t}>;\n\
var<workgroup> pl_red: array<{t}, {wg}>;\n\n\
@compute @workgroup_size({wg})\n\
fn pl_main(@builtin(local_invocation_index) pl_lid: u32) {{\n\
    for (var pl_d = 0u; pl_d < pl.nwg; pl_d++) {{\n\
        var pl_acc: {t} = {id};\n\
        for (var pl_s = pl_lid; pl_s < pl.n; pl_s += {wg}u) {{\n\
            pl_acc = {acc};\n\
        }}\n\
        workgroupBarrier();\n\
        pl_red[pl_lid] = pl_acc;\n\
        workgroupBarrier();\n\
        for (var pl_h = {half}u; pl_h > 0u; pl_h >>= 1u) {{\n\
            if (pl_lid < pl_h) {{ pl_red[pl_lid] = {tree}; }}\n\
            workgroupBarrier();\n\
        }}\n\
        if (pl_lid == 0u) {{ pl_global[pl_d] = {fin}; }}\n\
    }}\n\
}}\n",
        wg = WORKGROUP,
        half = WORKGROUP / 2,
        acc = op(
            "pl_acc",
            &format!("bitcast<{t}>(pl_scratch[pl.base + pl_s * pl.nwg + pl_d])")
        ),
        tree = op("pl_red[pl_lid]", "pl_red[pl_lid + pl_h]"),
        fin = op("pl_global[pl_d]", "pl_red[0]"),
    )
}
