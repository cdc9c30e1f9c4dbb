//! Host access to Dats and Globals: every access forces the trace with its intent (seed 004,
//! docs/background.md) through the [`Owner`] that made the data, and reads back what the host
//! does not hold yet.

use super::{Dat, DataInner, Global};
use crate::error::{Error, Result};
use crate::types::Scalar;
use crate::util::block;
use futures::future::LocalBoxFuture;
use std::cell::{Ref, RefMut};
use std::rc::Rc;

/// What a host access means to the lazy trace (seed 004's forcing rule).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Intent {
    /// `data_ro()`, `Global::value()`: the pending writers run, the value is read back.
    Read,
    /// `data()`: the pending readers and writers run, the value is read back.
    ReadWrite,
    /// A host write: the pending readers and writers run, nothing is read back.
    Write,
    /// A prefetch: the pending writers run and the readback starts; a later read waits
    /// for it alone.
    Prefetch,
}

/// What data needs from the Context that made it; the context implements it (`data` never
/// names the context): forcing the trace for a host access, and, on N ranks, the collective
/// steps of `set_data`, `scatter` and `gather`.
pub(crate) trait Owner {
    /// Runs what an access to `d` with `intent` needs; a read leaves `d`'s host copy current.
    fn force(
        self: Rc<Self>,
        d: Rc<DataInner>,
        intent: Intent,
    ) -> LocalBoxFuture<'static, Result<()>>;
    /// An error on one rank becomes an error on every rank (`dist::Comm::agree`).
    fn agree(&self, result: Result<()>, what: &str) -> Result<()>;
    /// This process's rank.
    fn rank(&self) -> usize;
    /// Rank 0's `words` on every rank.
    fn broadcast(&self, words: &mut [u32], what: &str);
    /// Every rank's `words`, on rank 0 (None elsewhere).
    fn gather(&self, words: &[u32], what: &str) -> Option<Vec<Vec<u32>>>;
}

fn owner_of(d: &DataInner) -> Result<Rc<dyn Owner>> {
    d.owner.upgrade().ok_or_else(|| {
        Error::Usage(format!(
            "the Context of {} `{}` was dropped",
            d.kind(),
            d.name
        ))
    })
}

impl DataInner {
    /// Forces what reading (and, with `write`, writing) this data needs and reads it back.
    pub(crate) async fn sync_host(self: &Rc<Self>, write: bool) -> Result<()> {
        let intent = if write {
            Intent::ReadWrite
        } else {
            Intent::Read
        };
        owner_of(self)?.force(self.clone(), intent).await?;
        self.ensure_host_zeros();
        Ok(())
    }

    /// Runs what reading this data needs and starts reading it back, without waiting: the
    /// next read waits only for that submission, not for work recorded and run meanwhile.
    pub(crate) async fn prefetch(self: &Rc<Self>) -> Result<()> {
        owner_of(self)?.force(self.clone(), Intent::Prefetch).await
    }

    /// Runs pending readers and writers, then replaces the host copy.
    pub(crate) fn write_host(self: &Rc<Self>, words: &[u32]) -> Result<()> {
        block(owner_of(self)?.force(self.clone(), Intent::Write))?;
        let mut h = self.host.try_borrow_mut().map_err(|_| {
            Error::Usage(format!(
                "{} `{}` is borrowed by a data guard: drop it before writing",
                self.kind(),
                self.name
            ))
        })?;
        h.clear();
        h.extend_from_slice(words);
        self.state.written_on_host();
        Ok(())
    }

    /// After the host wrote owned values: a distributed Dat's halo is stale on every rank,
    /// including ranks that hold no halo element of its set (the next exchange is one every
    /// rank records).
    fn halo_stale_after_write(&self) {
        if self.set.as_ref().is_some_and(|s| s.halo().is_some()) {
            self.state.halo_written_over();
        }
    }

    /// Words the host sees: a distributed Dat's owned elements, else everything.
    fn visible(&self) -> usize {
        match &self.set {
            Some(s) if s.halo().is_some() => s.size() * self.wdim(),
            _ => self.words(),
        }
    }

    /// The host copy, for reading.
    fn borrow_host(&self) -> Result<Ref<'_, Vec<u32>>> {
        self.host.try_borrow().map_err(|_| {
            Error::Usage(format!(
                "{} `{}` is mutably borrowed by a data() guard",
                self.kind(),
                self.name
            ))
        })
    }

    /// A copy of the visible values (any alignment).
    fn values<T: Scalar>(&self) -> Result<Vec<T>> {
        Ok(bytemuck::pod_collect_to_vec(
            &self.borrow_host()?[..self.visible()],
        ))
    }

    fn read_guard<T: Scalar>(&self) -> Result<Ref<'_, [T]>> {
        let r = self.borrow_host()?;
        let n = self.visible();
        // Nothing visible (a rank that owns no element): an empty slice, whatever the
        // address of an empty host copy (a dangling one is only 4-byte aligned).
        Ref::filter_map(r, |v| match n {
            0 => Some(&[][..]),
            _ => bytemuck::try_cast_slice(&v[..n]).ok(),
        })
        .map_err(|_| misaligned(self))
    }

    fn write_guard<T: Scalar>(&self) -> Result<RefMut<'_, [T]>> {
        let r = self.host.try_borrow_mut().map_err(|_| {
            Error::Usage(format!(
                "{} `{}` is already borrowed by a data guard",
                self.kind(),
                self.name
            ))
        })?;
        let n = self.visible();
        let guard = RefMut::filter_map(r, |v| match n {
            0 => Some(&mut [][..]),
            _ => bytemuck::try_cast_slice_mut(&mut v[..n]).ok(),
        })
        .map_err(|_| misaligned(self))?;
        self.state.written_on_host();
        self.halo_stale_after_write();
        Ok(guard)
    }
}

/// The host copy is a `Vec<u32>`: every allocator Rust ships aligns it for f64, but a global
/// allocator that gives 4-byte alignment would not.
fn misaligned(d: &DataInner) -> Error {
    Error::Usage(format!(
        "{} `{}`: its host copy is not 8-byte aligned for {} (the global allocator gave 4-byte          alignment): read it with value()/gather(), which copy",
        d.kind(),
        d.name,
        d.dtype
    ))
}

impl<T: Scalar> Dat<T> {
    /// Current values for reading: runs the pending loops that write this Dat, reads it back.
    /// On a distributed set, this rank's owned values only (`set().size() * dim` of them; a
    /// total over the ranks is a Global reduction, or [`Dat::gather`] on rank 0).
    ///
    /// ```
    /// use parloop::{Context, Kernel, Set};
    /// # fn main() -> parloop::Result<()> {
    /// let ctx = Context::new()?;
    /// let s = Set::new("s", 3);
    /// let mut a = ctx.dat("a", &s, 1, &[1i32, 2, 3])?;
    /// let sum = ctx.global("sum", &[0i32])?;
    /// let k = Kernel::new("add", "fn add(a: ptr<function, array<i32, 1>>, t: ptr<function, array<i32, 1>>) { (*t)[0] = (*a)[0]; }");
    /// ctx.par_loop(&k, &s, &[a.read(), sum.inc()])?;
    /// assert_eq!(sum.value()?, [6]); // forces the loop
    /// a.data()?[0] = 10; // host writes: later loops see them
    /// ctx.par_loop(&k, &s, &[a.read(), sum.inc()])?;
    /// assert_eq!(sum.value()?, [21]);
    /// assert_eq!(&*a.data_ro()?, &[10, 2, 3]);
    /// # Ok(())
    /// # }
    /// ```
    #[cfg(not(target_arch = "wasm32"))]
    pub fn data_ro(&self) -> Result<Ref<'_, [T]>> {
        pollster::block_on(self.inner.sync_host(false))?;
        self.inner.read_guard()
    }
    /// [`Dat::data_ro`] without blocking (what the browser needs).
    pub async fn data_ro_async(&self) -> Result<Ref<'_, [T]>> {
        self.inner.sync_host(false).await?;
        self.inner.read_guard()
    }
    /// Runs the pending loops that write this Dat and starts reading it back without waiting
    /// for the device, as [`Global::prefetch`] does: a later [`Dat::data_ro`] gives these
    /// values and waits only for that submission (output every so many steps, the next steps
    /// recorded while the device works). A loop that writes the Dat, recorded before the read,
    /// makes the read run it and read the Dat again; a host write drops the prefetch.
    #[cfg(not(target_arch = "wasm32"))]
    pub fn prefetch(&self) -> Result<()> {
        pollster::block_on(self.inner.prefetch())
    }
    /// [`Dat::prefetch`] without blocking (what the browser needs).
    pub async fn prefetch_async(&self) -> Result<()> {
        self.inner.prefetch().await
    }
    /// Current values for reading and writing: also runs pending loops that read this Dat;
    /// later loops see what the host changes.
    #[cfg(not(target_arch = "wasm32"))]
    pub fn data(&mut self) -> Result<RefMut<'_, [T]>> {
        pollster::block_on(self.inner.sync_host(true))?;
        self.inner.write_guard()
    }
    /// [`Dat::data`] without blocking (what the browser needs).
    pub async fn data_async(&mut self) -> Result<RefMut<'_, [T]>> {
        self.inner.sync_host(true).await?;
        self.inner.write_guard()
    }
    /// Replaces the values from the host (after pending loops that read or write them).
    ///
    /// On a rank's part of a distributed set, `values` holds this rank's owned elements, or
    /// every local element (halos included, in local order) as [`crate::Context::dat`] takes
    /// them; the halo part is not trusted (the owners' values replace it at the next loop that
    /// reads the halo). Collective there: a wrong length on one rank is an error on all.
    pub fn set_data(&mut self, values: &[T]) -> Result<()> {
        let per = self.inner.dtype.words();
        let n = self.inner.visible() / per;
        let all = self.inner.len();
        let distributed = self.inner.set.as_ref().is_some_and(|s| s.halo().is_some());
        let checked = if values.len() == n || (distributed && values.len() == all) {
            Ok(())
        } else {
            Err(Error::Data(format!(
                "Dat `{}`: set_data got {} values, expected {n}{}",
                self.inner.name,
                values.len(),
                if distributed {
                    format!(
                        " (this rank's owned elements x dim) or {all} (every local element, \
                         halo included)"
                    )
                } else {
                    String::new()
                }
            )))
        };
        // On N ranks a wrong length on one rank fails every rank before the collective force.
        if distributed {
            let what = format!("set_data of Dat `{}`", self.inner.name);
            owner_of(&self.inner)?.agree(checked, &what)?;
        } else {
            checked?;
        }
        // The same force on every rank, whether or not its values cover a halo: the halo part
        // (given, or zeros) is stale until the next exchange, so nothing is read back.
        let mut words: Vec<u32> = bytemuck::cast_slice(values).to_vec();
        words.resize(all * per, 0);
        self.inner.write_host(&words)?;
        self.inner.halo_stale_after_write();
        Ok(())
    }

    /// The inverse of [`Dat::gather`]: rank 0's `values` (every element of the whole set, in
    /// global order) become every rank's owned and halo values. Every rank must call it; the
    /// other ranks' `values` are ignored (pass None). On one process, the same as `set_data`.
    pub fn scatter(&mut self, values: Option<&[T]>) -> Result<()> {
        let d = self.inner.clone();
        let comm = owner_of(&d)?;
        let Some(halo) = d.set.as_ref().and_then(|s| s.halo()).cloned() else {
            let v = values.ok_or_else(|| {
                Error::Usage(format!(
                    "Dat `{}`: scatter on one process needs values",
                    d.name
                ))
            })?;
            return self.set_data(v);
        };
        let n = halo.global_size * d.dim;
        let mut words = vec![0u32; halo.global_size * d.wdim()];
        // Rank 0 checks the length; every rank learns the outcome (a tagged agreement).
        let what = format!("scatter of Dat `{}`", d.name);
        let checked = match values {
            Some(v) if v.len() == n => {
                if comm.rank() == 0 {
                    words.copy_from_slice(bytemuck::cast_slice(v));
                }
                Ok(())
            }
            _ if comm.rank() != 0 => Ok(()),
            _ => Err(Error::Data(format!(
                "Dat `{}`: scatter needs {n} values on rank 0 ({} elements x dim {}), got {}",
                d.name,
                halo.global_size,
                d.dim,
                values.map_or("none".to_string(), |v| v.len().to_string())
            ))),
        };
        comm.agree(checked, &what)?;
        comm.broadcast(&mut words, &what);
        let w = d.wdim();
        let local: Vec<u32> = halo
            .global
            .iter()
            .flat_map(|&g| &words[g as usize * w..(g as usize + 1) * w])
            .copied()
            .collect();
        d.write_host(&local)?;
        d.state.halo_exchanged();
        Ok(())
    }

    /// On a distributed run, the owned values of every rank in global order, on rank 0 (None
    /// on the other ranks; every rank must call it). On one process, the values.
    pub fn gather(&self) -> Result<Option<Vec<T>>> {
        let d = &self.inner;
        let read = block(d.sync_host(false));
        let Some(halo) = d.set.as_ref().and_then(|s| s.halo()).cloned() else {
            read?;
            return d.values().map(Some);
        };
        let comm = owner_of(d)?;
        // A readback that failed on one rank only fails every rank before the gather.
        comm.agree(read, &format!("gather of Dat `{}`", d.name))?;
        let n = d.visible();
        let w = d.wdim();
        let owned = n / w;
        let values: Vec<u32> = d.host.borrow()[..n].to_vec();
        let what = format!("gather of Dat `{}`", d.name);
        let index = comm.gather(&halo.global[..owned], &what);
        let values = comm.gather(&values, &what);
        let (Some(index), Some(values)) = (index, values) else {
            return Ok(None);
        };
        let mut out = vec![0u32; halo.global_size * w];
        for (idx, vals) in index.iter().zip(&values) {
            for (k, &g) in idx.iter().enumerate() {
                out[g as usize * w..(g as usize + 1) * w]
                    .copy_from_slice(&vals[k * w..(k + 1) * w]);
            }
        }
        Ok(Some(bytemuck::pod_collect_to_vec(&out)))
    }
}

impl<T: Scalar> Global<T> {
    /// The current value: runs the pending loops that reduce into it.
    #[cfg(not(target_arch = "wasm32"))]
    pub fn value(&self) -> Result<Vec<T>> {
        pollster::block_on(self.value_async())
    }
    /// [`Global::value`] without blocking (what the browser needs).
    pub async fn value_async(&self) -> Result<Vec<T>> {
        self.inner.sync_host(false).await?;
        self.inner.values()
    }
    /// Runs the pending loops that reduce into this Global and starts reading it back,
    /// without waiting for the device: a later [`Global::value`] waits only for that
    /// submission, not for loops recorded and run meanwhile. A program that looks at a value
    /// every so many steps (a residual, a convergence test) prefetches it and records the
    /// next steps first, so the host records while the device computes (a reduction adds to
    /// the Global's value: a new Global for each check keeps them apart). A loop that reduces
    /// into the Global again, recorded before the read, makes the read run it and read the
    /// Global again; a host write drops the prefetch. On N ranks the reduction over the ranks
    /// makes the value current at once.
    ///
    /// ```
    /// use parloop::{Context, Kernel, Set};
    /// # fn main() -> parloop::Result<()> {
    /// let ctx = Context::new()?;
    /// let s = Set::new("s", 3);
    /// let a = ctx.dat("a", &s, 1, &[1i32, 2, 3])?;
    /// let sum = ctx.global("sum", &[0i32])?;
    /// let k = Kernel::new("add", "fn add(a: ptr<function, array<i32, 1>>, t: ptr<function, array<i32, 1>>) { (*t)[0] += (*a)[0]; }");
    /// ctx.par_loop(&k, &s, &[a.read(), sum.inc()])?;
    /// sum.prefetch()?; // submitted, not waited for
    /// let twice = Kernel::new("twice", "fn twice(a: ptr<function, array<i32, 1>>) { (*a)[0] *= 2; }");
    /// ctx.par_loop(&twice, &s, &[a.rw()])?; // recorded meanwhile
    /// assert_eq!(sum.value()?, [6]);
    /// # Ok(())
    /// # }
    /// ```
    #[cfg(not(target_arch = "wasm32"))]
    pub fn prefetch(&self) -> Result<()> {
        pollster::block_on(self.inner.prefetch())
    }
    /// [`Global::prefetch`] without blocking (what the browser needs).
    pub async fn prefetch_async(&self) -> Result<()> {
        self.inner.prefetch().await
    }
    /// Sets the value from the host (after pending loops that use it).
    pub fn set(&self, values: &[T]) -> Result<()> {
        if values.len() != self.inner.dim {
            return Err(Error::Data(format!(
                "Global `{}` has dim {}, got {} values",
                self.inner.name,
                self.inner.dim,
                values.len()
            )));
        }
        self.inner.write_host(bytemuck::cast_slice(values))
    }
}
