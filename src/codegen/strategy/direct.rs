//! `Direct`: nothing races (no increment through a map). One invocation per position, in
//! order (or through the subset's element list); no plan. Legal for every group without racing
//! arguments, whatever the strategy asked for.

use super::super::{GroupIr, flat_main};
use crate::types::DType;

pub(super) fn legal(racing: &[DType]) -> Result<(), String> {
    if racing.is_empty() {
        Ok(())
    } else {
        Err("internal: the direct schedule for a group with racing increments".into())
    }
}

pub(super) fn main(g: &GroupIr, w: &mut String) {
    flat_main(g, w, None);
}
