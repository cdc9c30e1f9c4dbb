//! `cas`: one invocation per position, in order; racing f32 increments go straight to global
//! memory through compare-and-swap loops on their u32 bit patterns, integers through native
//! atomics. Works on every adapter; no plan. Not bit-reproducible. Illegal for f64 (WGSL has
//! no 64-bit atomics).

use super::super::{Atomic, GroupIr, flat_main};
use super::{Illegal, has_f64};
use crate::types::DType;

pub(super) fn legal(racing: &[DType]) -> Result<(), Illegal> {
    if has_f64(racing) {
        Err(Illegal::F64Races)
    } else {
        Ok(())
    }
}

/// Integers natively, floats by compare-and-swap on the bit patterns.
pub(super) fn atomic(dtype: DType) -> Atomic {
    match dtype {
        DType::U32 | DType::I32 => Atomic::Native,
        DType::F32 | DType::F64 => Atomic::Bits,
    }
}

pub(super) fn main(g: &GroupIr, w: &mut String) {
    flat_main(g, w, None);
}
