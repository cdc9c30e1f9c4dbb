//! Declaring data on a Context: Consts, Dats and Globals, checked when made (the adapter's
//! types included).

use super::*;

impl Context {
    /// Declares (or changes) a Const. Loops recorded afterwards see the new value.
    pub fn constant(&self, name: &str, value: impl Into<ConstValue>) -> Result<()> {
        if !crate::codegen::wgsl::is_valid_const_name(name) {
            return Err(Error::Data(format!(
                "Const name {name:?} is not a WGSL identifier (letters, digits, `_`; not \
                 starting with a digit or `pl_`)"
            )));
        }
        let value = value.into();
        self.check_dtype("Const", name, value.dtype)?;
        if value.words.is_empty() {
            return Err(Error::Data(format!("Const `{name}` has no values")));
        }
        let mut consts = self.0.sched.consts.borrow_mut();
        match consts.iter_mut().find(|(n, _)| n == name) {
            Some(slot) => slot.1 = value,
            None => consts.push((name.to_string(), value)),
        }
        Ok(())
    }

    /// Refuses f64 data on an adapter without `SHADER_F64`, naming the data and the adapter.
    pub(crate) fn check_dtype(&self, kind: &str, name: &str, dtype: DType) -> Result<()> {
        if dtype == DType::F64 && !self.0.engine.gpu.f64() {
            return Err(Error::Data(format!(
                "{kind} `{name}` is f64, but adapter {} has no SHADER_F64 with SHADER_INT64 \
                 (WGSL f64 needs Vulkan or DX12 on a GPU that has it; Metal, OpenGL and \
                 browsers have none): use f32, or choose an adapter with f64 \
                 (PARLOOP_BACKEND=vulkan; `parloop info` lists the adapters' features)",
                self.0.engine.gpu.describe()
            )));
        }
        Ok(())
    }

    pub(super) fn data_inner(
        &self,
        name: &str,
        set: Option<&crate::data::Set>,
        dim: usize,
        dtype: DType,
    ) -> Rc<DataInner> {
        Rc::new(DataInner {
            id: crate::data::next_id(),
            name: name.to_string(),
            set: set.cloned(),
            dim,
            dtype,
            owner: Rc::downgrade(&(self.0.clone() as Rc<dyn crate::data::Owner>)),
            host: RefCell::new(Vec::new()),
            state: crate::data::Residency::default(),
        })
    }

    /// A Dat with initial values, `dim` per element of `set`.
    ///
    /// On a rank's part of a distributed set, `values` holds either this rank's owned
    /// elements (`set.size() * dim` values) or every local element (`set.total() * dim`,
    /// halos included, in local order: [`crate::Set::global_ids`] gives each element's global
    /// number). The halo part is never trusted: the owners' values replace it at the first
    /// loop that reads the halo. Collective there: every rank makes the Dat, and a wrong
    /// length or type on one rank is an error on all.
    pub fn dat<T: Scalar>(
        &self,
        name: &str,
        set: &crate::data::Set,
        dim: usize,
        values: &[T],
    ) -> Result<Dat<T>> {
        let checked = self.check_dat::<T>(name, set, dim).and_then(|n| {
            let owned = set.size() * dim;
            // Two forms only where the rank holds a halo (else both are the same count).
            let distributed = set.halo().is_some() && owned != n;
            if values.len() == n || (distributed && values.len() == owned) {
                return Ok(n);
            }
            Err(Error::Data(format!(
                "Dat `{name}`: got {} values, expected {}{} ({} x dim {dim})",
                values.len(),
                n,
                if distributed {
                    format!(" (every local element: owned and halo) or {owned} (owned only)")
                } else {
                    String::new()
                },
                if distributed {
                    format!(
                        "{} local elements of `{}` on rank {}, {} owned",
                        set.total(),
                        set.name(),
                        self.rank(),
                        set.size()
                    )
                } else {
                    format!("{} elements of `{}`", set.total(), set.name())
                },
            )))
        });
        let n = self.agree_on_set(set, checked, &format!("making Dat `{name}`"))?;
        let mut words: Vec<u32> = bytemuck::cast_slice(values).to_vec();
        words.resize(n * T::DTYPE.words(), 0);
        let inner = self.dat_words(name, set, dim, T::DTYPE, words);
        if set.halo().is_some() {
            // The halo holds what the user gave or zeros: stale until the owners' values come.
            inner.state.halo_written_over();
        }
        Ok(Dat {
            inner,
            _t: PhantomData,
        })
    }

    /// The checks of a new Dat of `dim` on `set`: its values' count.
    fn check_dat<T: Scalar>(
        &self,
        name: &str,
        set: &crate::data::Set,
        dim: usize,
    ) -> Result<usize> {
        if dim == 0 {
            return Err(Error::Data(format!("Dat `{name}`: dim must be at least 1")));
        }
        self.check_dtype("Dat", name, T::DTYPE)?;
        values_for(name, set, dim)
    }

    /// On N ranks, `result` agreed over the ranks when `set` is distributed (what every rank
    /// does alike); else as it is.
    fn agree_on_set<R>(&self, set: &crate::data::Set, result: Result<R>, what: &str) -> Result<R> {
        if self.ranks() > 1 && set.halo().is_some() {
            self.agree(result, what)
        } else {
            result
        }
    }

    /// A Dat holding `words` (already checked: `dim` values per stored element of `set`).
    pub(crate) fn dat_words(
        &self,
        name: &str,
        set: &crate::data::Set,
        dim: usize,
        dtype: DType,
        words: Vec<u32>,
    ) -> Rc<DataInner> {
        let inner = self.data_inner(name, Some(set), dim, dtype);
        *inner.host.borrow_mut() = words;
        inner.state.written_on_host();
        inner
    }

    /// A Dat holding this rank's own `values` on every local element, halo included: layout
    /// data the library derives per rank (a matrix's slot positions), whose halo is this
    /// rank's and never exchanged before a write. Neither checked nor agreed (internal).
    pub(crate) fn dat_local<T: Scalar>(
        &self,
        name: &str,
        set: &crate::data::Set,
        dim: usize,
        values: &[T],
    ) -> Dat<T> {
        debug_assert_eq!(values.len(), set.total() * dim, "internal: {name}");
        Dat {
            inner: self.dat_words(
                name,
                set,
                dim,
                T::DTYPE,
                bytemuck::cast_slice(values).to_vec(),
            ),
            _t: PhantomData,
        }
    }

    /// A Dat of zeros (no host memory until the host asks). Collective on a distributed set,
    /// as [`Context::dat`].
    pub fn dat_zeros<T: Scalar>(
        &self,
        name: &str,
        set: &crate::data::Set,
        dim: usize,
    ) -> Result<Dat<T>> {
        let checked = self.check_dat::<T>(name, set, dim);
        self.agree_on_set(set, checked, &format!("making Dat `{name}`"))?;
        Ok(Dat {
            inner: self.data_inner(name, Some(set), dim, T::DTYPE),
            _t: PhantomData,
        })
    }

    /// A Global holding `values` (its dim is their number).
    pub fn global<T: Scalar>(&self, name: &str, values: &[T]) -> Result<Global<T>> {
        if values.is_empty() {
            return Err(Error::Data(format!(
                "Global `{name}` needs at least one value"
            )));
        }
        self.check_dtype("Global", name, T::DTYPE)?;
        let inner = self.data_inner(name, None, values.len(), T::DTYPE);
        // Zeros (what a sum reduction starts from) stay unwritten: the device clears the
        // buffer instead of an upload.
        let words: &[u32] = bytemuck::cast_slice(values);
        if words.iter().any(|&w| w != 0) {
            *inner.host.borrow_mut() = words.to_vec();
            inner.state.written_on_host();
        }
        Ok(Global {
            inner,
            _t: PhantomData,
        })
    }
}
