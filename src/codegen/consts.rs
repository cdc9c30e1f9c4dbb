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

/// The Consts' values packed in order, padded to whole vec4s.
pub fn words(consts: &[(String, ConstValue)]) -> Vec<u32> {
    let mut w: Vec<u32> = consts
        .iter()
        .flat_map(|(_, v)| v.words.iter().copied())
        .collect();
    w.resize(w.len().div_ceil(4) * 4, 0);
    w
}

/// The `PlParams` struct and its uniform binding, with `c` holding `vec4s` vec4s of Const words.
pub fn params_decl(vec4s: usize) -> String {
    let c = if vec4s > 0 {
        format!("    c: array<vec4<u32>, {vec4s}>,\n")
    } else {
        String::new()
    };
    format!(
        "struct PlParams {{\n    n: u32,\n    base: u32,\n    wg_base: u32,\n    slots: u32,\n    \
         nwg: u32,\n    check: u32,\n    owned: u32,\n    pad2: u32,\n{c}}}\n\n\
         @group(0) @binding(0) var<uniform> pl: PlParams;\n"
    )
}

fn load(dtype: DType, word: usize) -> String {
    let raw = format!("pl.c[{}][{}]", word / 4, word % 4);
    match dtype {
        DType::U32 => raw,
        DType::F32 => format!("bitcast<f32>({raw})"),
        DType::I32 => format!("bitcast<i32>({raw})"),
    }
}

/// The statement that gives a function its local copy of one Const (words from `at`).
fn local(name: &str, v: &ConstValue, at: usize) -> String {
    let t = v.dtype.wgsl();
    if v.array {
        let items: Vec<String> = (0..v.words.len()).map(|k| load(v.dtype, at + k)).collect();
        let n = v.words.len();
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
    let mut offsets = Vec::with_capacity(consts.len());
    let mut at = 0;
    for (_, v) in consts {
        offsets.push(at);
        at += v.words.len();
    }
    let toks = idents(src);
    let mut inserts: Vec<(usize, String)> = Vec::new();
    for (k, &(pos, word)) in toks.iter().enumerate() {
        if word != "fn" {
            continue;
        }
        let Some((start, end, params)) = function_body(src, pos + 2) else {
            continue;
        };
        let used: HashSet<&str> = toks[k + 1..]
            .iter()
            .take_while(|(p, _)| *p < end)
            .filter(|(p, _)| *p >= start)
            .map(|(_, w)| *w)
            .collect();
        let mut text = String::new();
        for ((name, v), &off) in consts.iter().zip(&offsets) {
            if used.contains(name.as_str()) && !params.iter().any(|p| p == name) {
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
        let module = format!("{}\n{out}", params_decl(1));
        naga::front::wgsl::parse_str(&module)
            .unwrap_or_else(|e| panic!("{}", e.emit_to_string(&module)));
    }
}
