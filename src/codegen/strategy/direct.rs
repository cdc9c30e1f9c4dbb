//! `Direct`: nothing races (no increment through a map). One invocation per position, in
//! order (or through the subset's element list); no plan. `strategy::choose` gives it to every
//! group without racing arguments, whatever the strategy asked for, and to no other.

use super::super::{GroupIr, flat_main};

pub(super) fn main(g: &GroupIr, w: &mut String) {
    flat_main(g, w, None);
}
