//! par_loop arguments: how each reaches its data (directly, through a map at one index or all,
//! as a Global) and with which access; the builders on Dat and Global that make them.

use super::*;

/// How an argument reaches its data.
#[derive(Clone)]
pub(crate) enum Via {
    Direct,
    /// Through a map at one index.
    Map(Map, usize),
    /// Through a map at all its indices (the kernel sees arity * dim values).
    MapAll(Map),
    Global,
}

/// One argument of a par_loop.
#[derive(Clone)]
pub struct Arg {
    pub(crate) data: Rc<DataInner>,
    pub(crate) via: Via,
    pub(crate) access: Access,
}

impl std::fmt::Debug for Arg {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.describe())
    }
}

impl Arg {
    pub(crate) fn map(&self) -> Option<&Map> {
        match &self.via {
            Via::Map(m, _) | Via::MapAll(m) => Some(m),
            _ => None,
        }
    }
    /// Values the kernel sees for this argument.
    pub(crate) fn width(&self) -> usize {
        match &self.via {
            Via::MapAll(m) => m.arity() * self.data.dim,
            _ => self.data.dim,
        }
    }
    /// An increment or min/max through a map: elements can collide.
    pub(crate) fn races(&self) -> bool {
        self.map().is_some() && self.access.is_reduction()
    }
    /// "`q` through `pecell`[1], READ".
    pub(crate) fn describe(&self) -> String {
        let via = match &self.via {
            Via::Direct => "directly".to_string(),
            Via::Map(m, j) => format!("through `{}`[{j}]", m.name()),
            Via::MapAll(m) => format!("through all of `{}`", m.name()),
            Via::Global => "as a Global".to_string(),
        };
        format!("`{}` {via}, {}", self.data.name, self.access)
    }
}

macro_rules! access_builders {
    () => {
        /// The argument read-only: the kernel sees the current values.
        pub fn read(&self) -> Arg {
            self.arg(Access::Read)
        }
        /// The argument written: the kernel sees zeros and its values replace the old ones.
        pub fn write(&self) -> Arg {
            self.arg(Access::Write)
        }
        /// The argument read and written: the kernel sees the current values and may change them.
        pub fn rw(&self) -> Arg {
            self.arg(Access::Rw)
        }
        /// The argument incremented: the kernel sees zeros and what it leaves is added (increments through a map are made race-free by the strategy).
        pub fn inc(&self) -> Arg {
            self.arg(Access::Inc)
        }
        /// The argument reduced by minimum: the kernel sees the type's largest value and the least of what it leaves and the old value is kept.
        pub fn min(&self) -> Arg {
            self.arg(Access::Min)
        }
        /// The argument reduced by maximum: the kernel sees the type's least value and the greatest of what it leaves and the old value is kept.
        pub fn max(&self) -> Arg {
            self.arg(Access::Max)
        }
    };
}

impl<T: Scalar> Dat<T> {
    /// The Dat's name, as given.
    pub fn name(&self) -> &str {
        &self.inner.name
    }
    /// The set the Dat holds values on.
    pub fn set(&self) -> &Set {
        self.inner.set.as_ref().expect("a Dat has a set")
    }
    /// Values per element.
    pub fn dim(&self) -> usize {
        self.inner.dim
    }
    /// Number of scalar values (elements x dim, halos included).
    pub fn len(&self) -> usize {
        self.inner.len()
    }
    /// Whether the Dat holds no values (an empty set).
    pub fn is_empty(&self) -> bool {
        self.inner.len() == 0
    }
    /// A direct argument with the given access.
    pub fn arg(&self, access: Access) -> Arg {
        Arg {
            data: self.inner.clone(),
            via: Via::Direct,
            access,
        }
    }
    access_builders!();
    /// Access through `map` at index `idx`.
    pub fn at(&self, map: &Map, idx: usize) -> Indirect {
        Indirect {
            data: self.inner.clone(),
            via: Via::Map(map.clone(), idx),
        }
    }
    /// Access through every index of `map` (the kernel sees arity x dim values).
    ///
    /// ```
    /// use parloop::{Context, Kernel, Map, Set};
    /// # fn main() -> parloop::Result<()> {
    /// let ctx = Context::new()?;
    /// let (nodes, cells) = (Set::new("nodes", 3), Set::new("cells", 1));
    /// let c2n = Map::new("c2n", &cells, &nodes, 3, &[0, 1, 2])?;
    /// let x = ctx.dat("x", &nodes, 1, &[1.0f32, 2.0, 6.0])?;
    /// let mean = ctx.dat_zeros::<f32>("mean", &cells, 1)?;
    /// let k = Kernel::new("avg", "fn avg(x: ptr<function, array<f32, 3>>, m: ptr<function, array<f32, 1>>) {
    ///     (*m)[0] = ((*x)[0] + (*x)[1] + (*x)[2]) / 3.0;
    /// }");
    /// // x.at(&c2n, 1) would give the kernel the second node only (an array of dim values).
    /// ctx.par_loop(&k, &cells, &[x.all(&c2n).read(), mean.write()])?;
    /// assert_eq!(&*mean.data_ro()?, &[3.0]);
    /// # Ok(())
    /// # }
    /// ```
    pub fn all(&self, map: &Map) -> Indirect {
        Indirect {
            data: self.inner.clone(),
            via: Via::MapAll(map.clone()),
        }
    }
}

impl<T: Scalar> Global<T> {
    /// The Global's name, as given.
    pub fn name(&self) -> &str {
        &self.inner.name
    }
    /// Number of values.
    pub fn dim(&self) -> usize {
        self.inner.dim
    }
    /// The Global as a par_loop argument with `access`.
    pub fn arg(&self, access: Access) -> Arg {
        Arg {
            data: self.inner.clone(),
            via: Via::Global,
            access,
        }
    }
    access_builders!();
}

/// A Dat seen through a map, waiting for its access mode.
pub struct Indirect {
    data: Rc<DataInner>,
    via: Via,
}

impl Indirect {
    /// The indirect Dat as a par_loop argument with `access`.
    pub fn arg(&self, access: Access) -> Arg {
        Arg {
            data: self.data.clone(),
            via: self.via.clone(),
            access,
        }
    }
    access_builders!();
}
