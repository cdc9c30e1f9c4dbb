//! Consts at run time: their values travel in the dispatch's uniform parameters (`pl.c`, after
//! the fixed fields), so a Const that changes every step reuses one pipeline. Each function of a
//! kernel that mentions a Const gets a local copy at the top of its body, on the same line as
//! its `{` (kernel line numbers in error messages stay right):
//! `let dt = bitcast<f32>(pl.c[0][1]);`, or a `var` array for array Consts.
//!
//! What this gives up: a Const is a run-time value, not a WGSL `const`, so it cannot size an
//! array or appear in a module-scope declaration (write a WGSL `const` in the kernel for that).

use crate::data::ConstValue;
use crate::types::DType;
use std::collections::HashSet;

/// The most Const words one loop group may carry (16 KiB of uniform data).
pub const MAX_WORDS: usize = 4096;

/// Where each Const's values sit: 32-bit Consts at a word of `pl.c`, f64 Consts at a value
/// of `pl.d` (WGSL cannot bitcast words to f64, so they have their own `vec2<f64>` array).
/// Returns the offsets and the words of `pl.c` and values of `pl.d` in use.
fn layout(consts: &[(String, ConstValue)]) -> (Vec<usize>, usize, usize) {
    let (mut words, mut doubles) = (0, 0);
    let offsets = consts
        .iter()
        .map(|(_, v)| {
            let slot = if v.dtype == DType::F64 {
                &mut doubles
            } else {
                &mut words
            };
            let at = *slot;
            *slot += v.words.len() / v.dtype.words();
            at
        })
        .collect();
    (offsets, words, doubles)
}

/// The Consts' values packed as the params struct holds them: the 32-bit ones in order,
/// padded to whole vec4s, then the f64 ones, padded to whole vec2<f64>s.
pub fn words(consts: &[(String, ConstValue)]) -> Vec<u32> {
    let single = |v: &&ConstValue| v.dtype != DType::F64;
    let values = || consts.iter().map(|(_, v)| v);
    let mut w: Vec<u32> = values()
        .filter(single)
        .flat_map(|v| v.words.iter().copied())
        .collect();
    w.resize(w.len().div_ceil(4) * 4, 0);
    w.extend(
        values()
            .filter(|v| !single(v))
            .flat_map(|v| v.words.iter().copied()),
    );
    w.resize(w.len().div_ceil(4) * 4, 0);
    w
}

/// The `PlParams` struct and its uniform binding, with `c` holding the 32-bit Consts' words
/// (vec4s of u32) and `d` the f64 Consts (vec2s of f64).
pub fn params_decl(consts: &[(String, ConstValue)]) -> String {
    let (_, words, doubles) = layout(consts);
    let mut fields = String::new();
    if words > 0 {
        fields += &format!("    c: array<vec4<u32>, {}>,\n", words.div_ceil(4));
    }
    if doubles > 0 {
        fields += &format!("    d: array<vec2<f64>, {}>,\n", doubles.div_ceil(2));
    }
    format!(
        "struct PlParams {{\n    n: u32,\n    base: u32,\n    wg_base: u32,\n    slots: u32,\n    \
         nwg: u32,\n    check: u32,\n    owned: u32,\n    pad2: u32,\n{fields}}}\n\n\
         @group(0) @binding(0) var<uniform> pl: PlParams;\n"
    )
}

/// The expression of value `at` of a Const of `dtype` (a word of `c`, or a value of `d`).
fn load(dtype: DType, at: usize) -> String {
    let raw = format!("pl.c[{}][{}]", at / 4, at % 4);
    match dtype {
        DType::U32 => raw,
        DType::F32 => format!("bitcast<f32>({raw})"),
        DType::I32 => format!("bitcast<i32>({raw})"),
        DType::F64 => format!("pl.d[{}][{}]", at / 2, at % 2),
    }
}

/// The statement that gives a function its local copy of one Const (values from `at`).
fn local(name: &str, v: &ConstValue, at: usize) -> String {
    let t = v.dtype.wgsl();
    let n = v.words.len() / v.dtype.words();
    if v.array {
        let items: Vec<String> = (0..n).map(|k| load(v.dtype, at + k)).collect();
        format!("var {name} = array<{t}, {n}>({}); ", items.join(", "))
    } else {
        format!("let {name} = {}; ", load(v.dtype, at))
    }
}

/// Identifiers of `text` outside comments (a small WGSL tokenizer: enough for names).
fn idents(text: &str) -> Vec<(usize, &str)> {
    let b = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if b[i..].starts_with(b"//") {
            while i < b.len() && b[i] != b'\n' {
                i += 1;
            }
        } else if b[i..].starts_with(b"/*") {
            let mut depth = 0;
            while i < b.len() {
                if b[i..].starts_with(b"/*") {
                    depth += 1;
                    i += 2;
                } else if b[i..].starts_with(b"*/") {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    i += 1;
                }
            }
        } else if b[i].is_ascii_alphabetic() || b[i] == b'_' {
            let start = i;
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
                i += 1;
            }
            out.push((start, &text[start..i]));
        } else if b[i].is_ascii_digit() {
            // A number (with its suffix): not an identifier.
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_' || b[i] == b'.') {
                i += 1;
            }
        } else {
            i += 1;
        }
    }
    out
}

/// Offset just past the `{` that opens the body of the function whose `fn` keyword ends at
/// `from`, and the body's end; with the parameter names.
fn function_body(src: &str, from: usize) -> Option<(usize, usize, Vec<String>)> {
    let b = src.as_bytes();
    let open = from + src[from..].find('(')?;
    let mut depth = 0;
    let mut close = open;
    for (k, &c) in b.iter().enumerate().skip(open) {
        match c {
            b'(' => depth += 1,
            b')' => {
                depth -= 1;
                if depth == 0 {
                    close = k;
                    break;
                }
            }
            _ => {}
        }
    }
    let params_text = &src[open + 1..close];
    let params: Vec<String> = params_text
        .split(',')
        .filter_map(|p| p.split(':').next())
        .map(|n| n.trim().rsplit(' ').next().unwrap_or("").to_string())
        .collect();
    let body = close + src[close..].find('{')?;
    let mut depth = 0;
    for (k, &c) in b.iter().enumerate().skip(body) {
        match c {
            b'{' => depth += 1,
            b'}' => {
                depth -= 1;
                if depth == 0 {
                    return Some((body + 1, k, params));
                }
            }
            _ => {}
        }
    }
    None
}

/// The kernel source with local copies of the Consts each of its functions mentions.
pub fn inject(src: &str, consts: &[(String, ConstValue)]) -> String {
    if consts.is_empty() {
        return src.to_string();
    }
    let (offsets, _, _) = layout(consts);
    let toks = idents(src);
    let mut inserts: Vec<(usize, String)> = Vec::new();
    for (k, &(pos, word)) in toks.iter().enumerate() {
        if word != "fn" {
            continue;
        }
        let Some((start, end, params)) = function_body(src, pos + 2) else {
            continue;
        };
        let body: Vec<&str> = toks[k + 1..]
            .iter()
            .take_while(|(p, _)| *p < end)
            .filter(|(p, _)| *p >= start)
            .map(|(_, w)| *w)
            .collect();
        let used: HashSet<&str> = body.iter().copied().collect();
        // A name the function declares itself is its own, not the Const (a local copy would
        // be a second declaration of it).
        let declared: HashSet<&str> = body
            .windows(2)
            .filter(|w| matches!(w[0], "let" | "var" | "const"))
            .map(|w| w[1])
            .collect();
        let mut text = String::new();
        for ((name, v), &off) in consts.iter().zip(&offsets) {
            let own = params.iter().any(|p| p == name) || declared.contains(name.as_str());
            if used.contains(name.as_str()) && !own {
                text += &local(name, v, off);
            }
        }
        if !text.is_empty() {
            inserts.push((start, format!(" {}", text.trim_end())));
        }
    }
    let mut out = src.to_string();
    for (pos, text) in inserts.into_iter().rev() {
        out.insert_str(pos, &text);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_function_that_declares_the_name_keeps_its_own() {
        let consts = vec![("dx".to_string(), ConstValue::scalar(0.5f32))];
        let src = "fn a(o: ptr<function, array<f32, 1>>) { (*o)[0] = dx; }\n\
                   fn b(o: ptr<function, array<f32, 1>>) { let dx = 2.0; (*o)[0] = dx; }\n";
        let out = inject(src, &consts);
        assert_eq!(out.matches("let dx").count(), 2, "{out}");
        assert!(
            out.lines()
                .nth(1)
                .unwrap()
                .starts_with("fn b(o: ptr<function, array<f32, 1>>) { let dx = 2.0;"),
            "{out}"
        );
    }

    #[test]
    fn functions_that_mention_a_const_get_a_local_copy_on_their_first_line() {
        let consts = vec![
            ("dt".to_string(), ConstValue::scalar(0.5f32)),
            ("q".to_string(), ConstValue::array(&[1u32, 2, 3])),
        ];
        let src = "// dt in a comment\nfn helper(x: f32) -> f32 { return x * dt; }\n\
                   fn k(dt: ptr<function, array<f32, 1>>) {\n  (*dt)[0] = f32(q[2]) + helper(1.0);\n}\n";
        let out = inject(src, &consts);
        assert_eq!(out.lines().count(), src.lines().count());
        let lines: Vec<&str> = out.lines().collect();
        assert!(
            lines[1].contains("{ let dt = bitcast<f32>(pl.c[0][0]); return"),
            "{out}"
        );
        // `k` has a parameter named dt: only q is copied there.
        assert!(
            lines[2].contains("{ var q = array<u32, 3>(pl.c[0][1], pl.c[0][2], pl.c[0][3]);"),
            "{out}"
        );
        assert!(!lines[2].contains("let dt"), "{out}");
        assert_eq!(words(&consts), vec![0.5f32.to_bits(), 1, 2, 3]);
        let module = format!("{}\n{out}", params_decl(&consts));
        naga::front::wgsl::parse_str(&module)
            .unwrap_or_else(|e| panic!("{}", e.emit_to_string(&module)));
    }

    #[test]
    fn f64_consts_sit_in_their_own_vec2_array_after_the_words() {
        let consts = vec![
            ("a".to_string(), ConstValue::scalar(2.5f64)),
            ("n".to_string(), ConstValue::scalar(7u32)),
            ("w".to_string(), ConstValue::array(&[0.25f64, 0.5, 0.75])),
        ];
        let src = "fn k(o: ptr<function, array<f64, 1>>) { (*o)[0] = a * w[2] + f64(n); }\n";
        let out = inject(src, &consts);
        assert!(out.contains("let a = pl.d[0][0];"), "{out}");
        assert!(out.contains("let n = pl.c[0][0];"), "{out}");
        assert!(
            out.contains("var w = array<f64, 3>(pl.d[0][1], pl.d[1][0], pl.d[1][1]);"),
            "{out}"
        );
        // One vec4 of words (n, padded), then four f64 slots (a, w) as eight words.
        let bits = |v: f64| bytemuck::cast::<f64, [u32; 2]>(v);
        let mut expect = vec![7, 0, 0, 0];
        for v in [2.5, 0.25, 0.5, 0.75] {
            expect.extend(bits(v));
        }
        assert_eq!(words(&consts), expect);
        let decl = params_decl(&consts);
        assert!(decl.contains("c: array<vec4<u32>, 1>") && decl.contains("d: array<vec2<f64>, 2>"));
        let module = format!("{decl}\n{out}");
        let m = naga::front::wgsl::parse_str(&module)
            .unwrap_or_else(|e| panic!("{}", e.emit_to_string(&module)));
        naga::valid::Validator::new(
            naga::valid::ValidationFlags::all(),
            naga::valid::Capabilities::FLOAT64,
        )
        .validate(&m)
        .unwrap_or_else(|e| panic!("{}", e.emit_to_string(&module)));
    }
}
