//! `atomics`: one invocation per position, in order; racing increments go straight to global
//! memory with native atomics (`atomicAdd` on `atomic<f32>` needs SHADER_FLOAT32_ATOMIC:
//! Vulkan and Metal, lavapipe too; not GL, DX12 or browsers). f32 min/max use a
//! compare-and-swap loop on the value; integers use their native atomics (which every strategy
//! does when only integers race). f64 has no atomic type: its increments are compare-and-swap
//! loops on `atomic<u64>`, on adapters with 64-bit integer atomics. No plan. Not
//! bit-reproducible: the order of additions varies. Illegal on adapters without f32 atomics.

use super::super::{Atomic, GroupIr, flat_main};
use super::{Illegal, Request, f64_atomics};
use crate::types::{Access, DType, ReduceOp};

pub(super) fn legal(req: &Request, racing: &[DType]) -> Result<(), Illegal> {
    f64_atomics(req, racing)?;
    if !req.float_atomics && racing.contains(&DType::F32) {
        return Err(Illegal::NoFloatAtomics);
    }
    Ok(())
}

/// Why `atomics` cannot run f32 increments on an adapter without native f32 atomics.
pub(super) const NO_FLOAT_ATOMICS: &str = "f32 increments through a map under `atomics` need \
     native f32 atomics (SHADER_FLOAT32_ATOMIC), which this adapter lacks: use `hierarchical`, \
     `global-colour` or `cas`";

/// Integers and f32 sums natively, f32 min/max and all of f64 by compare-and-swap on the bit
/// patterns.
pub(super) fn atomic(dtype: DType, access: Access) -> Atomic {
    match (dtype, access.reduction()) {
        (DType::U32 | DType::I32, _) => Atomic::Native,
        (DType::F32, Some(ReduceOp::Sum)) => Atomic::Native,
        (DType::F32 | DType::F64, Some(ReduceOp::Sum | ReduceOp::Min | ReduceOp::Max) | None) => {
            Atomic::Bits
        }
    }
}

pub(super) fn main(g: &GroupIr, w: &mut String) {
    flat_main(g, w, None);
}
