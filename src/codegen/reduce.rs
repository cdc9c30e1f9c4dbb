//! The finalize pass of a Global reduction (`shaders/finalize.wgsl`): one workgroup folds the
//! per-workgroup partials left in scratch by a loop group and combines the result into the
//! Global (INC adds to its value, MIN/MAX keep the extreme), so successive loops reducing into
//! one Global accumulate.

use crate::types::{Access, DType};

const TEMPLATE: &str = include_str!("../../shaders/finalize.wgsl");

/// WGSL of the finalize pass for one dtype and access.
pub fn finalize_wgsl(dtype: DType, access: Access) -> String {
    let combine = match access {
        Access::Min => "min(a, b)",
        Access::Max => "max(a, b)",
        _ => "a + b",
    };
    // The partial of slot i: its bits, or two words for f64 (joined through a u64).
    let load = if dtype == DType::F64 {
        "bitcast<f64>(u64(pl_scratch[pl.base + 2u * i]) | (u64(pl_scratch[pl.base + 2u * i + 1u]) << 32u))"
    } else {
        "bitcast<TYPE>(pl_scratch[pl.base + i])"
    };
    TEMPLATE
        .replace("LOAD", load)
        .replace("TYPE", dtype.wgsl())
        .replace("IDENTITY", dtype.identity(access))
        .replace("COMBINE", combine)
}
