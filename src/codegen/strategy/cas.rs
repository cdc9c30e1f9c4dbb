//! `cas`: one invocation per position, in order; racing float increments go straight to global
//! memory through compare-and-swap loops on their bit patterns (f32 as `atomic<u32>`, f64 as
//! `atomic<u64>`), integers through native atomics. f32 works on every adapter; f64 needs
//! 64-bit integer atomics (`strategy::f64_atomics`). No plan. Not bit-reproducible.

use super::super::{Atomic, GroupIr, flat_main};
use crate::types::DType;

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
