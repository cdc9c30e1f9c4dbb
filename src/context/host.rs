//! Host access to Dats and Globals: every access forces the trace with its intent (seed 004,
//! docs/background.md) and reads back what the host does not hold yet.

use super::*;

fn context_of(d: &DataInner) -> Result<Context> {
    d.ctx.upgrade().map(Context).ok_or_else(|| {
        Error::Usage(format!(
            "the Context of {} `{}` was dropped",
            d.kind(),
            d.name
        ))
    })
}

fn all_sections(d: &DataInner) -> AccessSet {
    AccessSet::of(d.id, section::ALL)
}

impl DataInner {
    /// Forces what reading (and, with `write`, writing) this data needs and reads it back.
    async fn sync_host(self: &Rc<Self>, write: bool) -> Result<()> {
        let ctx = context_of(self)?;
        let r = all_sections(self);
        let w = if write { r.clone() } else { AccessSet::new() };
        ctx.force_async(
            &r,
            &w,
            std::slice::from_ref(self),
            if write { "data()" } else { "data_ro()" },
        )
        .await?;
        self.ensure_host_zeros();
        Ok(())
    }

    /// Runs pending readers and writers, then replaces the host copy.
    fn write_host(self: &Rc<Self>, words: &[u32]) -> Result<()> {
        let ctx = context_of(self)?;
        ctx.force(&AccessSet::new(), &all_sections(self), &[], "host write")?;
        let mut h = self.host.try_borrow_mut().map_err(|_| {
            Error::Usage(format!(
                "{} `{}` is borrowed by a data guard: drop it before writing",
                self.kind(),
                self.name
            ))
        })?;
        h.clear();
        h.extend_from_slice(words);
        self.host_valid.set(true);
        self.device_valid.set(false);
        Ok(())
    }

    fn read_guard<T: Scalar>(&self) -> Result<Ref<'_, [T]>> {
        let r = self.host.try_borrow().map_err(|_| {
            Error::Usage(format!(
                "{} `{}` is mutably borrowed by a data() guard",
                self.kind(),
                self.name
            ))
        })?;
        Ok(Ref::map(r, |v| bytemuck::cast_slice(v.as_slice())))
    }

    fn write_guard<T: Scalar>(&self) -> Result<RefMut<'_, [T]>> {
        let r = self.host.try_borrow_mut().map_err(|_| {
            Error::Usage(format!(
                "{} `{}` is already borrowed by a data guard",
                self.kind(),
                self.name
            ))
        })?;
        self.device_valid.set(false);
        self.host_valid.set(true);
        Ok(RefMut::map(r, |v| {
            bytemuck::cast_slice_mut(v.as_mut_slice())
        }))
    }
}

impl<T: Scalar> Dat<T> {
    /// Current values for reading: runs the pending loops that write this Dat, reads it back.
    #[cfg(not(target_arch = "wasm32"))]
    pub fn data_ro(&self) -> Result<Ref<'_, [T]>> {
        pollster::block_on(self.inner.sync_host(false))?;
        self.inner.read_guard()
    }
    pub async fn data_ro_async(&self) -> Result<Ref<'_, [T]>> {
        self.inner.sync_host(false).await?;
        self.inner.read_guard()
    }
    /// Current values for reading and writing: also runs pending loops that read this Dat;
    /// later loops see what the host changes.
    #[cfg(not(target_arch = "wasm32"))]
    pub fn data(&mut self) -> Result<RefMut<'_, [T]>> {
        pollster::block_on(self.inner.sync_host(true))?;
        self.inner.write_guard()
    }
    pub async fn data_async(&mut self) -> Result<RefMut<'_, [T]>> {
        self.inner.sync_host(true).await?;
        self.inner.write_guard()
    }
    /// Replaces the values from the host (after pending loops that read or write them).
    pub fn set_data(&mut self, values: &[T]) -> Result<()> {
        if values.len() != self.inner.len() {
            return Err(Error::Data(format!(
                "Dat `{}`: got {} values, expected {}",
                self.inner.name,
                values.len(),
                self.inner.len()
            )));
        }
        self.inner.write_host(bytemuck::cast_slice(values))
    }
}

impl<T: Scalar> Global<T> {
    /// The current value: runs the pending loops that reduce into it.
    #[cfg(not(target_arch = "wasm32"))]
    pub fn value(&self) -> Result<Vec<T>> {
        pollster::block_on(self.value_async())
    }
    pub async fn value_async(&self) -> Result<Vec<T>> {
        self.inner.sync_host(false).await?;
        Ok(self.inner.read_guard::<T>()?.to_vec())
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
