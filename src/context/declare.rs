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

    /// A Dat with initial values (`dim` per element of `set`, halos included).
    pub fn dat<T: Scalar>(
        &self,
        name: &str,
        set: &crate::data::Set,
        dim: usize,
        values: &[T],
    ) -> Result<Dat<T>> {
        if dim == 0 {
            return Err(Error::Data(format!("Dat `{name}`: dim must be at least 1")));
        }
        self.check_dtype("Dat", name, T::DTYPE)?;
        let n = values_for(name, set, dim)?;
        if values.len() != n {
            return Err(Error::Data(format!(
                "Dat `{name}`: got {} values, expected {} ({} elements of `{}` x dim {dim})",
                values.len(),
                n,
                set.total(),
                set.name()
            )));
        }
        let inner = self.data_inner(name, Some(set), dim, T::DTYPE);
        *inner.host.borrow_mut() = bytemuck::cast_slice(values).to_vec();
        inner.state.written_on_host();
        Ok(Dat {
            inner,
            _t: PhantomData,
        })
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

    /// A Dat of zeros (no host memory until the host asks).
    pub fn dat_zeros<T: Scalar>(
        &self,
        name: &str,
        set: &crate::data::Set,
        dim: usize,
    ) -> Result<Dat<T>> {
        if dim == 0 {
            return Err(Error::Data(format!("Dat `{name}`: dim must be at least 1")));
        }
        self.check_dtype("Dat", name, T::DTYPE)?;
        values_for(name, set, dim)?;
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
        *inner.host.borrow_mut() = bytemuck::cast_slice(values).to_vec();
        inner.state.written_on_host();
        Ok(Global {
            inner,
            _t: PhantomData,
        })
    }
}
