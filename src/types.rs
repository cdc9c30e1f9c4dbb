//! The vocabulary every stage shares: scalar types and access modes.

use std::fmt;

/// The scalar type of a Dat, Global or Const.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum DType {
    /// 32-bit float.
    F32,
    /// 64-bit float: only on adapters with `SHADER_F64` (Vulkan and DX12 natively; not Metal,
    /// not browsers). WGSL has no f64 atomics: its increments through maps are coloured, or
    /// compare-and-swap loops on 64-bit integer atomics where the adapter has them.
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
mod sealed {
    /// Only f32 and f64 are [`super::Real`].
    pub trait Sealed {}
    impl Sealed for f32 {}
    impl Sealed for f64 {}
}

/// A floating-point [`Scalar`]: f32 or f64 (sealed), the type of mesh geometry.
pub trait Real: Scalar + sealed::Sealed {
    /// The nearest value of this type.
    fn from_f64(x: f64) -> Self;
    /// The value as f64 (exact).
    fn to_f64(self) -> f64;
}
impl Real for f32 {
    fn from_f64(x: f64) -> f32 {
        x as f32
    }
    fn to_f64(self) -> f64 {
        self as f64
    }
}
impl Real for f64 {
    fn from_f64(x: f64) -> f64 {
        x
    }
    fn to_f64(self) -> f64 {
        self
    }
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

    /// What the mode does, in one table: every question below reads it, so a new mode is
    /// decided here (the match is exhaustive) and nowhere else.
    const fn semantics(self) -> Semantics {
        let (reads, writes, loads, stores, reduction) = match self {
            Access::Read => (true, false, true, false, None),
            Access::Write => (false, true, false, true, None),
            Access::Rw => (true, true, true, true, None),
            Access::Inc => (true, true, false, false, Some(ReduceOp::Sum)),
            Access::Min => (false, true, false, false, Some(ReduceOp::Min)),
            Access::Max => (false, true, false, false, Some(ReduceOp::Max)),
        };
        Semantics {
            reads,
            writes,
            loads,
            stores,
            reduction,
        }
    }
    /// In the read set of the dependency rule (INC counts as read and write).
    pub fn reads(self) -> bool {
        self.semantics().reads
    }
    /// In the write set.
    pub fn writes(self) -> bool {
        self.semantics().writes
    }
    /// A reduction: the kernel sees an identity-initialised local that is combined afterwards.
    pub fn is_reduction(self) -> bool {
        self.semantics().reduction.is_some()
    }
    /// How a reduction combines values (None for READ, WRITE, RW).
    pub fn reduction(self) -> Option<ReduceOp> {
        self.semantics().reduction
    }
    /// The kernel sees the current value before it runs.
    pub fn loads(self) -> bool {
        self.semantics().loads
    }
    /// The value the kernel leaves is stored as is.
    pub fn stores(self) -> bool {
        self.semantics().stores
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

/// What an access mode means (`Access::semantics`).
struct Semantics {
    reads: bool,
    writes: bool,
    loads: bool,
    stores: bool,
    reduction: Option<ReduceOp>,
}

/// How a reduction (INC, MIN, MAX) combines values: its identity and its operation, the one
/// table that the generated shaders, the finalize pass, host kernels, the host's combination of
/// ranks' values and MPI's reductions all use.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ReduceOp {
    /// INC: the sum (integers wrap).
    Sum,
    /// MIN: the smallest value.
    Min,
    /// MAX: the largest value.
    Max,
}

impl ReduceOp {
    /// The identity in `dtype`, as an f64 (exact for every type: f32 and f64 infinities, the
    /// 32-bit integers' extremes).
    fn identity(self, dtype: DType) -> f64 {
        match (self, dtype) {
            (ReduceOp::Sum, DType::F32 | DType::F64 | DType::U32 | DType::I32) => 0.0,
            (ReduceOp::Min, DType::F32 | DType::F64) => f64::INFINITY,
            (ReduceOp::Max, DType::F32 | DType::F64) => f64::NEG_INFINITY,
            (ReduceOp::Min, DType::U32) => u32::MAX as f64,
            (ReduceOp::Max, DType::U32) => 0.0,
            (ReduceOp::Min, DType::I32) => i32::MAX as f64,
            (ReduceOp::Max, DType::I32) => i32::MIN as f64,
        }
    }
    /// The identity as a WGSL expression of type `dtype`.
    pub fn identity_wgsl(self, dtype: DType) -> String {
        let v = self.identity(dtype);
        // WGSL has no infinity literal and cannot bitcast to f64: the f32 infinity's bits,
        // converted (exactly) for f64. Tint (Chromium's WebGPU) refuses a constant
        // expression that evaluates to an infinity, so the bits come from a module-scope
        // variable (`with_infinity` declares it), which no compiler folds at creation.
        let inf = |v: f64| {
            if v > 0.0 {
                "bitcast<f32>(pl_infinity)"
            } else {
                "(-bitcast<f32>(pl_infinity))"
            }
        };
        match dtype {
            DType::F32 if v.is_infinite() => inf(v).to_string(),
            DType::F32 => format!("{:?}", v as f32),
            DType::F64 if v.is_infinite() => format!("f64({})", inf(v)),
            DType::F64 => format!("{v:?}lf"),
            DType::U32 => format!("{}u", v as u32),
            // The smallest i32 has no literal: -(2^31 - 1) - 1.
            DType::I32 if v == i32::MIN as f64 => "(-2147483647i - 1i)".to_string(),
            DType::I32 => format!("{}i", v as i32),
        }
    }
    /// The identity as raw words (one value: two words for f64).
    pub fn identity_words(self, dtype: DType) -> Vec<u32> {
        let v = self.identity(dtype);
        match dtype {
            DType::F32 => vec![(v as f32).to_bits()],
            DType::F64 => bytemuck::cast::<f64, [u32; 2]>(v).to_vec(),
            DType::U32 => vec![v as u32],
            DType::I32 => vec![v as i32 as u32],
        }
    }
    /// The WGSL expression combining `a` and `b`.
    pub fn wgsl(self, a: &str, b: &str) -> String {
        match self {
            ReduceOp::Sum => format!("{a} + {b}"),
            ReduceOp::Min => format!("min({a}, {b})"),
            ReduceOp::Max => format!("max({a}, {b})"),
        }
    }
    /// The WGSL atomic function that applies it (integers; f32 sums with float atomics).
    pub fn atomic(self) -> &'static str {
        match self {
            ReduceOp::Sum => "atomicAdd",
            ReduceOp::Min => "atomicMin",
            ReduceOp::Max => "atomicMax",
        }
    }
    /// Combines on the host: `acc[i] = acc[i] op x[i]` for each value (words of `dtype`, so
    /// two per f64).
    pub fn combine_words(self, dtype: DType, acc: &mut [u32], x: &[u32]) {
        fn each<T: bytemuck::Pod>(acc: &mut [u32], x: &[u32], f: impl Fn(T, T) -> T) {
            let n = std::mem::size_of::<T>() / 4;
            for (a, b) in acc.chunks_exact_mut(n).zip(x.chunks_exact(n)) {
                let v = f(
                    bytemuck::pod_read_unaligned(bytemuck::cast_slice(a)),
                    bytemuck::pod_read_unaligned(bytemuck::cast_slice(b)),
                );
                a.copy_from_slice(bytemuck::cast_slice(&[v]));
            }
        }
        match (dtype, self) {
            (DType::F32, ReduceOp::Sum) => each(acc, x, |a: f32, b| a + b),
            (DType::F32, ReduceOp::Min) => each(acc, x, f32::min),
            (DType::F32, ReduceOp::Max) => each(acc, x, f32::max),
            (DType::F64, ReduceOp::Sum) => each(acc, x, |a: f64, b| a + b),
            (DType::F64, ReduceOp::Min) => each(acc, x, f64::min),
            (DType::F64, ReduceOp::Max) => each(acc, x, f64::max),
            (DType::U32, ReduceOp::Sum) => each(acc, x, u32::wrapping_add),
            (DType::U32, ReduceOp::Min) => each(acc, x, u32::min),
            (DType::U32, ReduceOp::Max) => each(acc, x, u32::max),
            (DType::I32, ReduceOp::Sum) => each(acc, x, i32::wrapping_add),
            (DType::I32, ReduceOp::Min) => each(acc, x, i32::min),
            (DType::I32, ReduceOp::Max) => each(acc, x, i32::max),
        }
    }
}

/// `wgsl` with the module-scope variable the infinities of [`ReduceOp::identity_wgsl`] read,
/// declared when it uses one.
pub fn with_infinity(mut wgsl: String) -> String {
    if wgsl.contains("pl_infinity") {
        wgsl.push_str("\nvar<private> pl_infinity: u32 = 0x7f800000u;\n");
    }
    wgsl
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identities_agree_between_wgsl_and_words() {
        assert_eq!(
            ReduceOp::Min.identity_wgsl(DType::F64),
            "f64(bitcast<f32>(pl_infinity))"
        );
        assert_eq!(ReduceOp::Sum.identity_wgsl(DType::F64), "0.0lf");
        assert_eq!(ReduceOp::Sum.identity_wgsl(DType::F32), "0.0");
        assert_eq!(ReduceOp::Min.identity_wgsl(DType::U32), "4294967295u");
        assert_eq!(
            ReduceOp::Max.identity_wgsl(DType::I32),
            "(-2147483647i - 1i)"
        );
        assert_eq!(ReduceOp::Min.identity_wgsl(DType::I32), "2147483647i");
        assert_eq!(
            ReduceOp::Min.identity_words(DType::F64),
            bytemuck::cast::<f64, [u32; 2]>(f64::INFINITY).to_vec()
        );
        assert_eq!(
            ReduceOp::Max.identity_words(DType::I32),
            vec![i32::MIN as u32]
        );
        // Every identity leaves any value unchanged on the host.
        for op in [ReduceOp::Sum, ReduceOp::Min, ReduceOp::Max] {
            for (dtype, x) in [
                (DType::F32, (-3.5f32).to_bits()),
                (DType::U32, 7u32),
                (DType::I32, (-7i32) as u32),
            ] {
                let mut acc = op.identity_words(dtype);
                op.combine_words(dtype, &mut acc, &[x]);
                assert_eq!(acc, vec![x], "{op:?} {dtype}");
            }
        }
    }
}
