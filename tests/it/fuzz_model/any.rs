//! Dats and Globals of any of the fuzzer's types behind one interface of bit patterns.
#![allow(dead_code)] // shared by both fuzzers: the single-process one uses part of it

use parloop::dist::{Distributed, Distribution, GlobalDat, GlobalSet};
use parloop::*;

pub enum AnyDat {
    F(Dat<f32>),
    U(Dat<u32>),
    I(Dat<i32>),
}

macro_rules! each {
    ($s:expr, $d:ident => $e:expr) => {
        match $s {
            AnyDat::F($d) => $e,
            AnyDat::U($d) => $e,
            AnyDat::I($d) => $e,
        }
    };
}

pub enum AnyGlobal {
    F(Global<f32>),
    U(Global<u32>),
    I(Global<i32>),
}

/// A Dat declared for distribution, taken from the distributed part later.
pub enum GDecl {
    F(GlobalDat<f32>),
    U(GlobalDat<u32>),
    I(GlobalDat<i32>),
}

fn typed<T: Scalar>(words: &[u32]) -> Vec<T> {
    bytemuck::pod_collect_to_vec(words)
}

fn words<T: Scalar>(values: &[T]) -> Vec<u32> {
    bytemuck::pod_collect_to_vec(values)
}

pub fn declare(
    d: &mut Distribution,
    name: &str,
    set: GlobalSet,
    dtype: DType,
    dim: usize,
    vals: &[u32],
) -> Result<GDecl, String> {
    let e = |e: Error| e.to_string();
    Ok(match dtype {
        DType::F32 => GDecl::F(d.dat(name, set, dim, &typed::<f32>(vals)).map_err(e)?),
        DType::U32 => GDecl::U(d.dat(name, set, dim, vals).map_err(e)?),
        DType::I32 => GDecl::I(d.dat(name, set, dim, &typed::<i32>(vals)).map_err(e)?),
        DType::F64 => unreachable!("the fuzzer draws f32, u32 and i32"),
    })
}

impl GDecl {
    pub fn take(self, part: &mut Distributed) -> Result<AnyDat, String> {
        let e = |e: Error| e.to_string();
        Ok(match self {
            GDecl::F(g) => AnyDat::F(part.dat(g).map_err(e)?),
            GDecl::U(g) => AnyDat::U(part.dat(g).map_err(e)?),
            GDecl::I(g) => AnyDat::I(part.dat(g).map_err(e)?),
        })
    }
}

impl AnyDat {
    /// A Dat on a local set: zeros (None), or every local element's values.
    pub fn new(
        ctx: &Context,
        name: &str,
        set: &Set,
        dtype: DType,
        dim: usize,
        local: Option<Vec<u32>>,
    ) -> Result<AnyDat, String> {
        let e = |e: Error| format!("a new Dat `{name}`: {e}");
        Ok(match (dtype, local) {
            (DType::F32, None) => AnyDat::F(ctx.dat_zeros(name, set, dim).map_err(e)?),
            (DType::U32, None) => AnyDat::U(ctx.dat_zeros(name, set, dim).map_err(e)?),
            (DType::I32, None) => AnyDat::I(ctx.dat_zeros(name, set, dim).map_err(e)?),
            (DType::F32, Some(v)) => {
                AnyDat::F(ctx.dat(name, set, dim, &typed::<f32>(&v)).map_err(e)?)
            }
            (DType::U32, Some(v)) => AnyDat::U(ctx.dat(name, set, dim, &v).map_err(e)?),
            (DType::I32, Some(v)) => {
                AnyDat::I(ctx.dat(name, set, dim, &typed::<i32>(&v)).map_err(e)?)
            }
            (DType::F64, _) => unreachable!("the fuzzer draws f32, u32 and i32"),
        })
    }

    pub fn set_data(&mut self, owned: &[u32]) -> Result<()> {
        each!(self, d => d.set_data(&typed(owned)))
    }

    /// Changes every owned value in place through a `data()` guard: value k becomes f(k, v).
    pub fn update(&mut self, f: impl Fn(usize, u32) -> u32) -> Result<()> {
        each!(self, d => {
            let mut g = d.data()?;
            for (k, v) in g.iter_mut().enumerate() {
                let w: u32 = bytemuck::cast(*v);
                *v = bytemuck::cast(f(k, w));
            }
            Ok(())
        })
    }

    pub fn scatter(&mut self, all: Option<&[u32]>) -> Result<()> {
        each!(self, d => {
            let v = all.map(typed);
            d.scatter(v.as_deref())
        })
    }

    pub fn name(&self) -> String {
        each!(self, d => d.name().to_string())
    }

    /// The values the host sees (forces the trace).
    pub fn values(&self) -> Result<Vec<u32>> {
        each!(self, d => Ok(words(&d.data_ro()?)))
    }

    /// Starts reading the values back (forces what they need, waits for nothing).
    pub fn prefetch(&self) -> Result<()> {
        each!(self, d => d.prefetch())
    }

    pub fn gather(&self) -> Result<Option<Vec<u32>>> {
        each!(self, d => Ok(d.gather()?.map(|v| words(&v))))
    }

    pub fn direct(&self, access: Access) -> Arg {
        each!(self, d => d.arg(access))
    }
    pub fn at(&self, map: &Map, j: usize, access: Access) -> Arg {
        each!(self, d => d.at(map, j).arg(access))
    }
    pub fn all(&self, map: &Map, access: Access) -> Arg {
        each!(self, d => d.all(map).arg(access))
    }
}

impl AnyGlobal {
    pub fn new(ctx: &Context, name: &str, dtype: DType, vals: &[u32]) -> Result<AnyGlobal, String> {
        let e = |e: Error| e.to_string();
        Ok(match dtype {
            DType::F32 => AnyGlobal::F(ctx.global(name, &typed::<f32>(vals)).map_err(e)?),
            DType::U32 => AnyGlobal::U(ctx.global(name, vals).map_err(e)?),
            DType::I32 => AnyGlobal::I(ctx.global(name, &typed::<i32>(vals)).map_err(e)?),
            DType::F64 => unreachable!("the fuzzer draws f32, u32 and i32"),
        })
    }
    pub fn set(&self, vals: &[u32]) -> Result<()> {
        match self {
            AnyGlobal::F(g) => g.set(&typed(vals)),
            AnyGlobal::U(g) => g.set(vals),
            AnyGlobal::I(g) => g.set(&typed(vals)),
        }
    }
    pub fn value(&self) -> Result<Vec<u32>> {
        Ok(match self {
            AnyGlobal::F(g) => words(&g.value()?),
            AnyGlobal::U(g) => g.value()?,
            AnyGlobal::I(g) => words(&g.value()?),
        })
    }
    /// Starts reading the value back (forces what it needs, waits for nothing).
    pub fn prefetch(&self) -> Result<()> {
        match self {
            AnyGlobal::F(g) => g.prefetch(),
            AnyGlobal::U(g) => g.prefetch(),
            AnyGlobal::I(g) => g.prefetch(),
        }
    }
    pub fn arg(&self, access: Access) -> Arg {
        match self {
            AnyGlobal::F(g) => g.arg(access),
            AnyGlobal::U(g) => g.arg(access),
            AnyGlobal::I(g) => g.arg(access),
        }
    }
}
