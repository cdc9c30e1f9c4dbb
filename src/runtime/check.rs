//! Checking mode at run time: each checked group gets four words per loop in one check buffer
//! (violations, site, element, index; see `codegen::check`), cleared before the force's passes
//! and read back after them. The first record found becomes an error naming the par_loop (with
//! its caller's file:line), the argument, the element, the index and the bound.

use super::{Buf, State};
use crate::codegen::check::CheckSite;
use crate::error::{Error, Result};
use crate::fuse::Group;
use crate::runtime::Gpu;

/// Placeholder buffer id for the check buffer until the force's size is known.
pub(super) const CHECK: u64 = u64::MAX - 1;

/// The checked groups of one force.
#[derive(Default)]
pub(super) struct Checks {
    /// (group index in the force, first word, the sites its shader guards).
    groups: Vec<(usize, u32, Vec<CheckSite>)>,
    /// Words used so far.
    pub words: u32,
}

impl Checks {
    /// Registers a checked group of `loops` loops; returns its first word.
    pub fn add(&mut self, group: usize, loops: usize, sites: Vec<CheckSite>) -> u32 {
        let base = self.words;
        self.words += 4 * loops as u32;
        self.groups.push((group, base, sites));
        base
    }

    /// The check buffer, large enough for this force, cleared in `encoder` (before the passes).
    pub fn prepare(
        &self,
        st: &mut State,
        gpu: &Gpu,
        encoder: &mut wgpu::CommandEncoder,
    ) -> Option<(u64, u64)> {
        if self.words == 0 {
            return None;
        }
        let bytes = 4 * self.words as u64;
        if st.check.as_ref().is_none_or(|b| b.size < bytes) {
            let (b, _) = st.storage(gpu, bytes, "parloop check");
            if let Some(old) = st.check.replace(b) {
                st.pool.entry(old.size).or_default().push(old);
                st.prune_bind_groups();
            }
        }
        let b = st.check.as_ref()?;
        encoder.clear_buffer(&b.buffer, 0, Some(bytes));
        Some((b.id, b.size))
    }

    /// Copies the records into a readback buffer (after the passes).
    pub fn copy_out(
        &self,
        st: &mut State,
        gpu: &Gpu,
        encoder: &mut wgpu::CommandEncoder,
    ) -> Option<Buf> {
        let bytes = 4 * self.words as u64;
        let src = st.check.as_ref()?.buffer.clone();
        let out = st.staging_buf(gpu, bytes);
        encoder.copy_buffer_to_buffer(&src, 0, &out.buffer, 0, bytes);
        Some(out)
    }

    /// Every checked loop with its count of violations.
    fn records<'a>(
        &'a self,
        groups: &'a [Group],
        words: &'a [u32],
    ) -> impl Iterator<Item = (&'a crate::trace::LoopRecord, u32)> + 'a {
        self.groups.iter().flat_map(move |(g, base, _)| {
            groups[*g].loops.iter().enumerate().map(move |(l, lp)| {
                let at = *base as usize + 4 * l;
                (&**lp, words.get(at).copied().unwrap_or(0))
            })
        })
    }

    /// The error for the first violation recorded, if any.
    pub fn verdict(&self, groups: &[Group], words: &[u32]) -> Result<()> {
        for (g, base, sites) in &self.groups {
            let group = &groups[*g];
            for (l, lp) in group.loops.iter().enumerate() {
                let at = *base as usize + 4 * l;
                let Some(&[count, site, element, index]) = words
                    .get(at..at + 4)
                    .map(|w| <&[u32; 4]>::try_from(w).expect("four words"))
                else {
                    continue;
                };
                if count == 0 {
                    continue;
                }
                let Some(s) = sites.get(site as usize) else {
                    continue;
                };
                let what = if s.function == lp.kernel.name() {
                    let arg = lp
                        .args
                        .get(s.position)
                        .map_or(String::new(), |a| format!(" ({})", a.describe()));
                    format!("argument {}{arg}", s.position + 1)
                } else {
                    format!("parameter `{}` of fn `{}`", s.param, s.function)
                };
                let expr = if s.text.is_empty() {
                    String::new()
                } else {
                    format!(" in `{}`", s.text)
                };
                // On N ranks a loop runs in parts (core, then owned): each part counts its own.
                let count: u64 = self
                    .records(groups, words)
                    .filter(|(other, _)| {
                        other.at.site == lp.at.site && other.kernel.name() == lp.kernel.name()
                    })
                    .map(|(_, n)| u64::from(n))
                    .sum::<u64>()
                    .max(u64::from(count));
                let more = match count {
                    1 => String::new(),
                    n => format!(
                        " ({} more out-of-range indices from this par_loop in this batch)",
                        n - 1
                    ),
                };
                let index = if s.signed {
                    i64::from(index as i32)
                } else {
                    i64::from(index)
                };
                let message = format!(
                    "{}: at element {element}, kernel line {}{expr} indexed {what} with {index}, \
                     outside 0..{}{more}. The kernel used element 0 instead, so this force's \
                     results are wrong: fix the index, or the array size the par_loop passes",
                    lp.name(),
                    s.line,
                    s.bound
                );
                return Err(Error::Check {
                    par_loop: lp.site(),
                    arg: (s.function == lp.kernel.name()).then_some(s.position),
                    element: element as usize,
                    index,
                    bound: s.bound,
                    message,
                });
            }
        }
        Ok(())
    }
}
