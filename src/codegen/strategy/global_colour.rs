//! `global-colour`: a one-level greedy colouring of the elements (no two elements of a colour
//! share a racing target); the plan lists the positions sorted by colour, and each colour is
//! one dispatch whose invocations take its positions through that permutation and apply
//! increments straight to global memory. No barriers, no atomics; deterministic
//! (bit-reproducible). Legal everywhere, f64 included.

use super::super::{GroupIr, flat_main};

pub(super) fn legal() -> Result<(), super::Illegal> {
    Ok(())
}

pub(super) fn main(g: &GroupIr, w: &mut String) {
    // The plan's array is the permutation of positions, sorted by colour.
    flat_main(g, w, g.plan);
}
