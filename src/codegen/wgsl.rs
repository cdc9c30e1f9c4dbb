//! WGSL text helpers: exact literals for Consts, identifiers from user names.

use crate::data::ConstValue;
use crate::types::DType;

/// An exact WGSL literal for a 32-bit value of the given type. Floats are written in hex so the
/// kernel sees exactly the bits the host gave (a decimal literal goes through an abstract float
/// and could round differently).
pub fn literal(dtype: DType, bits: u32) -> String {
    match dtype {
        DType::U32 => format!("{bits}u"),
        DType::I32 => format!("{}i", bits as i32),
        DType::F32 => f32_literal(f32::from_bits(bits)),
    }
}

fn f32_literal(v: f32) -> String {
    if !v.is_finite() {
        // WGSL has no literal for these; a bitcast is exact.
        return format!("bitcast<f32>({}u)", v.to_bits());
    }
    let bits = v.to_bits();
    let sign = if bits >> 31 == 1 { "-" } else { "" };
    let exp = ((bits >> 23) & 0xff) as i32;
    let mant = bits & 0x7f_ffff;
    if exp == 0 && mant == 0 {
        return format!("{sign}0.0f");
    }
    // 23 mantissa bits, shifted to 24 so they print as 6 hex digits.
    let (lead, e) = if exp == 0 { (0, -126) } else { (1, exp - 127) };
    format!("{sign}0x{lead}.{:06x}p{e}f", mant << 1)
}

/// `const name: T = ...;` or `const name: array<T, N> = array<T, N>(...);`
pub fn const_decl(name: &str, v: &ConstValue) -> String {
    let t = v.dtype.wgsl();
    if v.array {
        let items: Vec<String> = v.words.iter().map(|&w| literal(v.dtype, w)).collect();
        let n = v.words.len();
        format!(
            "const {name}: array<{t}, {n}> = array<{t}, {n}>({});",
            items.join(", ")
        )
    } else {
        format!("const {name}: {t} = {};", literal(v.dtype, v.words[0]))
    }
}

/// A WGSL identifier fragment from a user name (letters, digits, underscores).
pub fn ident(name: &str) -> String {
    let s: String = name
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    s.trim_matches('_').chars().take(24).collect()
}

/// Whether `name` can be a Const's name: a WGSL identifier not reserved by parloop.
pub fn is_valid_const_name(name: &str) -> bool {
    let mut chars = name.chars();
    let first_ok = chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_');
    first_ok
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        && !name.starts_with("pl_")
        && name != "_"
        && !name.starts_with("__")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every literal parses in naga and evaluates to the same bits.
    #[test]
    fn float_literals_are_exact() {
        let values = [
            1.4f32,
            0.4,
            -0.05,
            1e-30,
            3.0e38,
            f32::MIN_POSITIVE,
            1.0e-40, // subnormal
            0.0,
            -0.0,
            f32::MAX,
            0.9,
        ];
        let mut src = String::new();
        for (i, v) in values.iter().enumerate() {
            src += &format!("const c{i}: f32 = {};\n", f32_literal(*v));
        }
        let module = naga::front::wgsl::parse_str(&src).unwrap_or_else(|e| panic!("{e:?}\n{src}"));
        for (i, v) in values.iter().enumerate() {
            let (_, c) = module
                .constants
                .iter()
                .find(|(_, c)| c.name.as_deref() == Some(&format!("c{i}")))
                .unwrap();
            match module.global_expressions[c.init] {
                naga::Expression::Literal(naga::Literal::F32(x)) => {
                    assert_eq!(x.to_bits(), v.to_bits(), "{v}: {}", f32_literal(*v))
                }
                ref other => panic!("{other:?}"),
            }
        }
    }

    #[test]
    fn const_names() {
        assert!(is_valid_const_name("gam"));
        assert!(is_valid_const_name("_x1"));
        assert!(!is_valid_const_name("pl_n"));
        assert!(!is_valid_const_name("1x"));
        assert!(!is_valid_const_name("a-b"));
    }
}
