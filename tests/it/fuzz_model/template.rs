//! Kernel templates: one random kernel shape, as WGSL for the GPU and as plain Rust for the
//! model (and for host kernels). Every operation is exact: an i32 accumulator `s` sums each
//! visible value (f32 scaled by 4, integers as they are) times a weight; every output is a
//! clamped or masked function of `s`, its position and the argument.

#![allow(clippy::needless_range_loop)] // one index runs over several arrays, as the kernels do
use parloop::{Access, DType};

/// One argument of a template.
#[derive(Clone, Debug)]
pub struct TArg {
    pub dtype: DType,
    /// Values the kernel sees (dim, or arity x dim).
    pub width: usize,
    pub access: Access,
    /// Weight of this argument's values in the accumulator.
    pub c: i32,
    /// Multiplier and offset of this argument's outputs.
    pub m: i32,
    pub d: i32,
}

#[derive(Clone, Debug)]
pub struct Template {
    pub k: i32,
    /// Adds the i32 Const `fzk` to the accumulator.
    pub uses_const: bool,
    pub args: Vec<TArg>,
}

/// The value the kernel works with: f32 x 4 (exact: values are multiples of 1/4), integers as
/// their i32 bit pattern.
pub fn level(dtype: DType, bits: u32) -> i32 {
    match dtype {
        DType::F64 => unreachable!("the fuzzer draws f32, u32 and i32"),
        DType::F32 => (f32::from_bits(bits) * 4.0) as i32,
        _ => bits as i32,
    }
}

/// An output value of the given type from the accumulator's function `h`.
pub fn output(dtype: DType, h: i32) -> u32 {
    match dtype {
        DType::F64 => unreachable!("the fuzzer draws f32, u32 and i32"),
        DType::F32 => (h.clamp(-32, 32) as f32 * 0.25).to_bits(),
        DType::U32 => (h as u32) & 63,
        DType::I32 => h.clamp(-50, 50) as u32,
    }
}

/// Whether the kernel adds this argument's values to the accumulator: what it sees is defined
/// for READ and RW (the values), WRITE (zeros) and INC (zeros).
fn summed(a: Access) -> bool {
    matches!(a, Access::Read | Access::Rw | Access::Write | Access::Inc)
}

impl Template {
    /// Runs the template on the values the kernel sees (bit patterns), in place. READ
    /// arguments are overwritten too: the runtime must not store them.
    pub fn eval(&self, fzk: i32, vals: &mut [Vec<u32>]) {
        let mut s = self.k.wrapping_add(if self.uses_const { fzk } else { 0 });
        for (a, v) in self.args.iter().zip(vals.iter()) {
            if summed(a.access) {
                for k in 0..a.width {
                    let x = level(a.dtype, v[k]);
                    s = s.wrapping_add(a.c.wrapping_mul(x).wrapping_mul(k as i32 + 1));
                }
            }
        }
        for (a, v) in self.args.iter().zip(vals.iter_mut()) {
            for k in 0..a.width {
                let h = s
                    .wrapping_mul(a.m)
                    .wrapping_add(k as i32 * 7)
                    .wrapping_add(a.d);
                v[k] = output(a.dtype, h);
            }
        }
    }

    /// The same template as a WGSL kernel named `name`.
    pub fn wgsl(&self, name: &str) -> String {
        let params: Vec<String> = self
            .args
            .iter()
            .enumerate()
            .map(|(i, a)| format!("a{i}: ptr<function, array<{}, {}>>", a.dtype, a.width))
            .collect();
        let mut body = format!("    var s: i32 = ({});\n", self.k);
        if self.uses_const {
            body += "    s = s + fzk;\n";
        }
        for (i, a) in self.args.iter().enumerate() {
            if !summed(a.access) {
                continue;
            }
            let x = match a.dtype {
                DType::F64 => unreachable!("the fuzzer draws f32, u32 and i32"),
                DType::F32 => format!("i32((*a{i})[k] * 4.0)"),
                DType::U32 => format!("bitcast<i32>((*a{i})[k])"),
                DType::I32 => format!("(*a{i})[k]"),
            };
            body += &format!(
                "    for (var k = 0; k < {}; k++) {{ s = s + ({}) * {x} * (k + 1); }}\n",
                a.width, a.c
            );
        }
        for (i, a) in self.args.iter().enumerate() {
            let out = match a.dtype {
                DType::F64 => unreachable!("the fuzzer draws f32, u32 and i32"),
                DType::F32 => "f32(clamp(h, -32, 32)) * 0.25",
                DType::U32 => "bitcast<u32>(h) & 63u",
                DType::I32 => "clamp(h, -50, 50)",
            };
            body += &format!(
                "    for (var k = 0; k < {}; k++) {{ let h = s * ({}) + k * 7 + ({}); (*a{i})[k] = {out}; }}\n",
                a.width, a.m, a.d
            );
        }
        format!("fn {name}({}) {{\n{body}}}\n", params.join(", "))
    }
}
