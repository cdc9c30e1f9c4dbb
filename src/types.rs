//! The vocabulary every stage shares: scalar types and access modes.

use std::fmt;

/// The scalar type of a Dat, Global or Const.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum DType {
    /// 32-bit float.
    F32,
    /// 64-bit float: only on adapters with `SHADER_F64` (Vulkan and DX12 natively; not Metal,
    /// not browsers). WGSL has no f64 atomics, so its increments through maps are coloured.
    F64,
    /// 32-bit unsigned integer.
    U32,
    /// 32-bit signed integer.
    I32,
}

impl DType {
    /// The WGSL name of the type.
    pub fn wgsl(self) -> &'static str {
        match self {
            DType::F32 => "f32",
            DType::F64 => "f64",
            DType::U32 => "u32",
            DType::I32 => "i32",
        }
    }
    /// The WGSL literal of the identity of a reduction with this access (INC: 0, MIN: the largest
    /// value, MAX: the smallest).
    pub fn identity(self, access: Access) -> &'static str {
        match (self, access) {
            (DType::F32, Access::Min) => "bitcast<f32>(0x7f800000u)",
            (DType::F32, Access::Max) => "bitcast<f32>(0xff800000u)",
            (DType::F32, _) => "0.0",
            // WGSL cannot bitcast to f64: the f32 infinities, converted (exactly).
            (DType::F64, Access::Min) => "f64(bitcast<f32>(0x7f800000u))",
            (DType::F64, Access::Max) => "f64(bitcast<f32>(0xff800000u))",
            (DType::F64, _) => "0.0lf",
            (DType::U32, Access::Min) => "0xffffffffu",
            (DType::U32, _) => "0u",
            (DType::I32, Access::Min) => "2147483647i",
            (DType::I32, Access::Max) => "(-2147483647i - 1i)",
            (DType::I32, _) => "0i",
        }
    }
    /// The identity as raw words (one value), for host-side reductions.
    pub fn identity_words(self, access: Access) -> Vec<u32> {
        let one = |w: u32| vec![w];
        let two = |v: f64| bytemuck::cast::<f64, [u32; 2]>(v).to_vec();
        match (self, access) {
            (DType::F32, Access::Min) => one(f32::INFINITY.to_bits()),
            (DType::F32, Access::Max) => one(f32::NEG_INFINITY.to_bits()),
            (DType::F64, Access::Min) => two(f64::INFINITY),
            (DType::F64, Access::Max) => two(f64::NEG_INFINITY),
            (DType::F64, _) => two(0.0),
            (DType::U32, Access::Min) => one(u32::MAX),
            (DType::I32, Access::Min) => one(i32::MAX as u32),
            (DType::I32, Access::Max) => one(i32::MIN as u32),
            _ => one(0),
        }
    }
    /// 4-byte words per value: 2 for f64, else 1. Host copies, messages and Const slots hold
    /// values as words.
    pub fn words(self) -> usize {
        if self == DType::F64 { 2 } else { 1 }
    }
    /// Bytes per value.
    pub fn bytes(self) -> usize {
        4 * self.words()
    }
}

impl fmt::Display for DType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.wgsl())
    }
}

/// A scalar type parloop can store: plain old data of 4 bytes, or f64.
pub trait Scalar: bytemuck::Pod + Default + PartialOrd + fmt::Debug + 'static {
    /// The type's tag.
    const DTYPE: DType;
}
impl Scalar for f32 {
    const DTYPE: DType = DType::F32;
}
impl Scalar for f64 {
    const DTYPE: DType = DType::F64;
}
impl Scalar for u32 {
    const DTYPE: DType = DType::U32;
}
impl Scalar for i32 {
    const DTYPE: DType = DType::I32;
}

/// How a par_loop argument uses its data (PyOP2/OP2's access descriptors).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Access {
    /// Read only.
    Read,
    /// Written; the old values are not read.
    Write,
    /// Read and written.
    Rw,
    /// Incremented (summed).
    Inc,
    /// Reduced by minimum.
    Min,
    /// Reduced by maximum.
    Max,
}

impl Access {
    /// Every access mode.
    pub const ALL: [Access; 6] = [
        Access::Read,
        Access::Write,
        Access::Rw,
        Access::Inc,
        Access::Min,
        Access::Max,
    ];

    /// In the read set of the dependency rule (INC counts as read and write).
    pub fn reads(self) -> bool {
        matches!(self, Access::Read | Access::Rw | Access::Inc)
    }
    /// In the write set.
    pub fn writes(self) -> bool {
        !matches!(self, Access::Read)
    }
    /// A reduction: the kernel sees an identity-initialised local that is combined afterwards.
    pub fn is_reduction(self) -> bool {
        matches!(self, Access::Inc | Access::Min | Access::Max)
    }
    /// The kernel sees the current value before it runs.
    pub fn loads(self) -> bool {
        matches!(self, Access::Read | Access::Rw)
    }
    /// The value the kernel leaves is stored as is.
    pub fn stores(self) -> bool {
        matches!(self, Access::Write | Access::Rw)
    }
    /// OP2's name of the mode (`READ`, `INC`, ...).
    pub fn name(self) -> &'static str {
        match self {
            Access::Read => "READ",
            Access::Write => "WRITE",
            Access::Rw => "RW",
            Access::Inc => "INC",
            Access::Min => "MIN",
            Access::Max => "MAX",
        }
    }
}

impl fmt::Display for Access {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}
