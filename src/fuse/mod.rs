//! Fusion: the loops a force runs become loop groups. Without fusion each loop is a group of
//! its own; with fusion (see `partition`) the partitioner decides.
//!
//! Owns: the mapping from forced loops to the partitioner's model and back. Must never: touch
//! the device.

use crate::trace::LoopRecord;
use std::rc::Rc;

/// Loops that run together: one shader on the GPU, or one host pass.
pub(crate) struct Group {
    pub loops: Vec<Rc<LoopRecord>>,
    /// Runs on the host (its kernels have no WGSL).
    pub host: bool,
    /// Data ids that live only in registers inside this group (no buffer).
    pub ephemeral: Vec<u64>,
}

impl Group {
    pub fn single(rec: Rc<LoopRecord>) -> Group {
        Group {
            host: rec.kernel.wgsl().is_none(),
            loops: vec![rec],
            ephemeral: Vec::new(),
        }
    }
    /// "`a` + `b`" for messages.
    pub fn names(&self) -> String {
        self.loops
            .iter()
            .map(|l| l.name())
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// Groups the loops of a force (in program order) and describes the grouping for `explain()`.
pub(crate) fn groups(
    loops: &[Rc<LoopRecord>],
    ctx: &crate::context::Context,
) -> (Vec<Group>, String) {
    let _ = ctx;
    let groups: Vec<Group> = loops.iter().cloned().map(Group::single).collect();
    let mut text = format!(
        "{} loops in {} groups (fusion off)\n",
        loops.len(),
        groups.len()
    );
    for (i, g) in groups.iter().enumerate() {
        text += &format!("  group {}: {}\n", i + 1, g.names());
    }
    (groups, text)
}
