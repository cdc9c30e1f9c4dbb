//! Checking mode (`Config::check`): every dynamic index a kernel applies to one of its array
//! parameters goes through a guard that records the first out-of-range index of each par_loop
//! in a small storage buffer (`pl_check`, four words per loop of the group: violations, site,
//! element, index) and reads element 0 instead. The runtime reads the buffer back at the force
//! and turns a record into an error that names the par_loop, the argument, the element, the
//! index and the bound.
//!
//! Which indices: `(*a)[i]` where `a` is a `ptr<function, array<T, N>>` parameter of any
//! function of the kernel's source and `i` is not a literal (a literal out of range does not
//! compile). Indices into local copies (`let v = *a; v[i]`) are not checked.
//!
//! The guard is a call wrapped around the index text (`(*a)[pl_ck_i32(i, 2u, 0u)]`), so the
//! kernel's line numbers do not move.

use std::fmt::Write;

/// One guarded index in the generated shader.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct CheckSite {
    /// The kernel whose source holds it.
    pub kernel: String,
    /// The function the index is in (the kernel or one of its helpers).
    pub function: String,
    /// The parameter indexed, and its position (the par_loop argument, in the kernel function).
    pub param: String,
    pub position: usize,
    /// The array length the index must stay below.
    pub bound: u32,
    /// The index is an i32 (else a u32).
    pub signed: bool,
    /// Line in the kernel's source (1-based), and the indexing expression's text.
    pub line: usize,
    pub text: String,
}

/// The guard functions and their private state; `buffer` is the check binding's variable.
pub fn helpers(buffer: &str) -> String {
    let mut w = String::new();
    let _ = writeln!(
        w,
        "// checking mode: the first out-of-range index of each loop is recorded\n\
         var<private> pl_loop: u32;\nvar<private> pl_elem: u32;\n\
         fn pl_violation(site: u32, index: u32) {{\n    \
         let at = pl.check + 4u * pl_loop;\n    \
         if (atomicAdd(&{buffer}[at], 1u) == 0u) {{\n        \
         atomicStore(&{buffer}[at + 1u], site);\n        \
         atomicStore(&{buffer}[at + 2u], pl_elem);\n        \
         atomicStore(&{buffer}[at + 3u], index);\n    }}\n}}\n\
         fn pl_ck_u32(i: u32, n: u32, site: u32) -> u32 {{\n    \
         if (i >= n) {{ pl_violation(site, i); return 0u; }}\n    return i;\n}}\n\
         fn pl_ck_i32(i: i32, n: u32, site: u32) -> i32 {{\n    \
         if (i < 0 || u32(i) >= n) {{ pl_violation(site, bitcast<u32>(i)); return 0; }}\n    \
         return i;\n}}"
    );
    w
}

/// An instrumented kernel source and its sites, or why it could not be instrumented.
type Instrumented = Result<(String, Vec<CheckSite>), String>;

thread_local! {
    /// Shaders are generated at every force: the naga parse and validation behind each
    /// instrumented kernel is done once per (kernel, source, prelude, first site).
    static CACHE: std::cell::RefCell<std::collections::HashMap<(String, String, String, usize), Instrumented>> =
        Default::default();
}

/// Entries kept before the cache starts over (a program has few kernels; Const layouts and
/// site numbering multiply them a little).
const CACHE_LIMIT: usize = 256;

/// Rewrites a kernel's source (as the shader holds it, after Const injection) so that its
/// dynamic argument indices are guarded; `prelude` is what precedes it for parsing (the
/// parameters' declaration). Sites are numbered from `first`.
pub fn instrument(kernel: &str, src: &str, prelude: &str, first: usize) -> Instrumented {
    let key = (
        kernel.to_string(),
        src.to_string(),
        prelude.to_string(),
        first,
    );
    if let Some(hit) = CACHE.with(|c| c.borrow().get(&key).cloned()) {
        return hit;
    }
    let result = instrument_uncached(kernel, src, prelude, first);
    CACHE.with(|c| {
        let mut c = c.borrow_mut();
        if c.len() >= CACHE_LIMIT {
            c.clear();
        }
        c.insert(key, result.clone());
    });
    result
}

fn instrument_uncached(kernel: &str, src: &str, prelude: &str, first: usize) -> Instrumented {
    let full = format!("{prelude}{src}");
    let module = naga::front::wgsl::parse_str(&full).map_err(|e| e.message().to_string())?;
    let info = naga::valid::Validator::new(
        naga::valid::ValidationFlags::all(),
        naga::valid::Capabilities::all(),
    )
    .validate(&module)
    .map_err(|e| e.as_inner().to_string())?;
    // (offset in src, order, text): ends sort before starts at one offset; among starts the
    // longer span first, among ends the shorter first, so nested guards nest.
    let mut edits: Vec<(usize, (u8, isize), String)> = Vec::new();
    let mut seen: Vec<(usize, usize)> = Vec::new();
    let mut sites = Vec::new();
    for (fh, f) in module.functions.iter() {
        for (h, e) in f.expressions.iter() {
            let naga::Expression::Access { base, index } = *e else {
                continue;
            };
            let naga::Expression::FunctionArgument(k) = f.expressions[base] else {
                continue;
            };
            let arg = &f.arguments[k as usize];
            let Some(bound) = array_len(&module, arg.ty) else {
                continue;
            };
            if matches!(
                f.expressions[index],
                naga::Expression::Literal(_)
                    | naga::Expression::Constant(_)
                    | naga::Expression::ZeroValue(_)
                    | naga::Expression::Override(_)
            ) {
                continue;
            }
            let scalar = match info[fh][index].ty.inner_with(&module.types) {
                naga::TypeInner::Scalar(s) => s,
                _ => continue,
            };
            let guard = match scalar.kind {
                naga::ScalarKind::Sint => "pl_ck_i32",
                naga::ScalarKind::Uint => "pl_ck_u32",
                _ => continue,
            };
            // The index's own span is empty for loads of local variables: take the text
            // inside the access's final brackets instead.
            let Some(whole) = f.expressions.get_span(h).to_range() else {
                continue;
            };
            if whole.start < prelude.len() {
                continue;
            }
            let (ws, we) = (whole.start - prelude.len(), whole.end - prelude.len());
            let Some((s, t)) = index_text(src, ws, we) else {
                continue;
            };
            if seen.contains(&(s, t)) {
                continue;
            }
            seen.push((s, t));
            let site = first + sites.len();
            let len = (t - s) as isize;
            edits.push((s, (1, -len), format!("{guard}(")));
            edits.push((t, (0, len), format!(", {bound}u, {site}u)")));
            let text = src[ws..we].to_string();
            sites.push(CheckSite {
                kernel: kernel.to_string(),
                function: f.name.clone().unwrap_or_default(),
                param: arg.name.clone().unwrap_or_default(),
                position: k as usize,
                bound,
                signed: guard == "pl_ck_i32",
                line: src[..s].matches('\n').count() + 1,
                text,
            });
        }
    }
    edits.sort_by_key(|e| (e.0, e.1));
    let mut out = String::with_capacity(src.len() + edits.len() * 16);
    let mut at = 0;
    for (pos, _, text) in &edits {
        out.push_str(&src[at..*pos]);
        out.push_str(text);
        at = *pos;
    }
    out.push_str(&src[at..]);
    Ok((out, sites))
}

/// The range of the index inside `src[start..end]`, an access ending in `[index]`.
fn index_text(src: &str, start: usize, end: usize) -> Option<(usize, usize)> {
    let b = src.as_bytes().get(start..end)?;
    if b.last() != Some(&b']') {
        return None;
    }
    let mut depth = 0;
    for k in (0..b.len()).rev() {
        match b[k] {
            b']' => depth += 1,
            b'[' => {
                depth -= 1;
                if depth == 0 {
                    return Some((start + k + 1, end - 1));
                }
            }
            _ => {}
        }
    }
    None
}

/// N when `ty` is `ptr<function, array<T, N>>`.
fn array_len(m: &naga::Module, ty: naga::Handle<naga::Type>) -> Option<u32> {
    let naga::TypeInner::Pointer { base, .. } = m.types[ty].inner else {
        return None;
    };
    match m.types[base].inner {
        naga::TypeInner::Array {
            size: naga::ArraySize::Constant(n),
            ..
        } => Some(n.get()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PRELUDE: &str = "struct P { check: u32 }\n@group(0) @binding(0) var<uniform> pl: P;\n";

    #[test]
    fn dynamic_indices_are_guarded_and_literals_are_not() {
        let src = "fn k(a: ptr<function, array<f32, 2>>, b: ptr<function, array<u32, 3>>) {\n    \
                   var i = 5;\n    (*a)[i] = 7.0;\n    (*a)[1] = (*a)[(*b)[i + 1]];\n}\n";
        let (out, sites) = instrument("k", src, PRELUDE, 10).unwrap();
        assert_eq!(
            out,
            "fn k(a: ptr<function, array<f32, 2>>, b: ptr<function, array<u32, 3>>) {\n    \
             var i = 5;\n    (*a)[pl_ck_i32(i, 2u, 10u)] = 7.0;\n    \
             (*a)[1] = (*a)[pl_ck_u32((*b)[pl_ck_i32(i + 1, 3u, 11u)], 2u, 12u)];\n}\n"
        );
        let got: Vec<(&str, usize, u32, usize)> = sites
            .iter()
            .map(|s| (s.param.as_str(), s.position, s.bound, s.line))
            .collect();
        assert_eq!(got, [("a", 0, 2, 3), ("b", 1, 3, 4), ("a", 0, 2, 4)]);
        assert_eq!(sites[0].text, "(*a)[i]");
        // The guarded source still compiles with the helpers.
        let full = format!(
            "{PRELUDE}@group(0) @binding(1) var<storage, read_write> c: array<atomic<u32>>;\n{}{out}",
            helpers("c")
        );
        let m = naga::front::wgsl::parse_str(&full).unwrap();
        naga::valid::Validator::new(
            naga::valid::ValidationFlags::all(),
            naga::valid::Capabilities::all(),
        )
        .validate(&m)
        .unwrap();
    }
}
