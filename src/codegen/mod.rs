//! Codegen: a loop group (one or more loops over one iteration space, fused) becomes one WGSL
//! compute shader. Per element the wrapper gathers each argument into a local array, calls the
//! user's kernel with pointers to them, and scatters or reduces the results; direct values pass
//! from loop to loop in registers. How racing increments are applied depends on the schedule:
//! per colour (global colouring), per thread colour inside a mini-partition staged in workgroup
//! memory (hierarchical), or with atomics.
//!
//! Owns: the WGSL text and its validation with naga. Must never: touch buffers or the device
//! (bindings are described by [`BindingIr`]; the runtime binds them in this order).

pub mod check;
pub mod consts;
mod ir;
mod kernel_check;
pub mod reduce;
pub mod strategy;
pub mod wgsl;

pub use ir::*;
use reduce::reduction_epilogue;
pub use strategy::Schedule;

use crate::config::Staging;
use crate::plan::{PLAN_HEADER_FIXED, PLAN_HEADER_PER_MAP};
use crate::types::{Access, DType, ReduceOp};
use std::fmt::Write;

/// Generates the WGSL module of a group.
#[cfg(test)]
pub fn generate(g: &GroupIr) -> String {
    generate_checked(g).0
}

/// The shader and, in checking mode, the index sites it guards (numbered as the records
/// name them).
pub fn generate_checked(g: &GroupIr) -> (String, Vec<check::CheckSite>) {
    let mut w = String::new();
    header(g, &mut w);
    let sites = declarations(g, &mut w);
    main_fn(g, &mut w);
    (crate::types::with_infinity(w), sites)
}

fn header(g: &GroupIr, w: &mut String) {
    let _ = writeln!(
        w,
        "// parloop loop group ({} loop{}):",
        g.loops.len(),
        if g.loops.len() == 1 { "" } else { "s" }
    );
    for c in &g.comments {
        let _ = writeln!(w, "//   {c}");
    }
    let _ = writeln!(w, "// schedule: {:?}\n", g.schedule);
}

fn declarations(g: &GroupIr, w: &mut String) -> Vec<check::CheckSite> {
    let params = consts::params_decl(&g.consts);
    w.push_str(&params);
    for (b, bind) in g.bindings.iter().enumerate() {
        let elem = match (&bind.kind, bind.atomic) {
            (BindingKind::Dat { dtype, .. } | BindingKind::Global { dtype, .. }, Atomic::No) => {
                dtype.wgsl().to_string()
            }
            (
                BindingKind::Dat { dtype, .. } | BindingKind::Global { dtype, .. },
                Atomic::Native,
            ) => {
                format!("atomic<{dtype}>")
            }
            (
                BindingKind::Dat {
                    dtype: DType::F64, ..
                },
                Atomic::Bits,
            ) => "atomic<u64>".to_string(),
            (_, Atomic::Bits) => "atomic<u32>".to_string(),
            _ => "u32".to_string(),
        };
        let mode = if bind.writable { "read_write" } else { "read" };
        let _ = writeln!(
            w,
            "@group(0) @binding({}) var<storage, {mode}> {}: array<{elem}>; // {}",
            b + 1,
            g.var(b),
            bind.name
        );
    }
    w.push('\n');
    let mut sites = Vec::new();
    if let Some(b) = g.check {
        let _ = writeln!(w, "{}", check::helpers(&g.var(b)));
    }
    for (name, src) in &g.kernels {
        let mut src = consts::inject(src, &g.consts);
        if g.check.is_some() {
            // Kernels were validated with the same prelude before lowering, so this cannot
            // fail in practice; if it does, the kernel runs unguarded and the log says so.
            match check::instrument(name, &src, &params, sites.len()) {
                Ok((guarded, s)) => {
                    src = guarded;
                    sites.extend(s);
                }
                Err(e) => log::warn!("checking mode: kernel `{name}` runs unchecked: {e}"),
            }
        }
        let _ = writeln!(w, "// ---- kernel `{name}` ----\n{}\n", src.trim_end());
    }
    let wg = g.workgroup_size;
    for dt in g.reduction_dtypes() {
        let _ = writeln!(w, "var<workgroup> pl_red_{dt}: array<{dt}, {wg}>;");
    }
    if g.hierarchical().is_some() {
        w.push_str(
            "struct PlBlock {\n    id: u32,\n    first: u32,\n    count: u32,\n    ncol: u32,\n}\n\
             var<workgroup> pl_blk: PlBlock;\n",
        );
        if !g.staged_atomics() {
            w.push_str("var<workgroup> pl_span: vec2<u32>;\n");
        }
        for (s, dat, dim) in g.staged_dats() {
            let BindingKind::Dat { dtype, .. } = g.bindings[dat].kind else {
                continue;
            };
            let n = (g.staged[s].maxu * dim).max(1);
            let elem = if g.staged_atomics() {
                strategy::staged::staged_atomic_type(dtype)
            } else {
                dtype.wgsl()
            };
            let _ = writeln!(
                w,
                "var<workgroup> {}: array<{elem}, {n}>;",
                g.staged_var(s, dat)
            );
        }
    }
    w.push('\n');
    sites
}

/// How a reduction argument combines values (`types::ReduceOp`, the one table).
fn reduce_op(access: Access) -> ReduceOp {
    access
        .reduction()
        .unwrap_or_else(|| panic!("internal: {access} is not a reduction"))
}

/// The op that combines two values for a reduction access.
fn combine(access: Access, a: &str, b: &str) -> String {
    reduce_op(access).wgsl(a, b)
}

fn main_fn(g: &GroupIr, w: &mut String) {
    let wg = g.workgroup_size;
    let _ = writeln!(
        w,
        "@compute @workgroup_size({wg})\nfn pl_main(@builtin(workgroup_id) pl_wid: vec3<u32>, \
         @builtin(num_workgroups) pl_nwgs: vec3<u32>, @builtin(local_invocation_index) pl_lid: u32) {{\n    \
         let pl_wg = pl_wid.y * pl_nwgs.x + pl_wid.x;"
    );
    // Per-thread reduction accumulators, and Global READ values.
    for (r, red) in g.reductions.iter().enumerate() {
        let _ = writeln!(
            w,
            "    var pl_acc{r}: array<{}, {}>;\n    for (var pl_k = 0u; pl_k < {}u; pl_k++) {{ pl_acc{r}[pl_k] = {}; }}",
            red.dtype,
            red.dim,
            red.dim,
            reduce_op(red.access).identity_wgsl(red.dtype)
        );
    }
    g.schedule.main(g, w);
    reduction_epilogue(g, w);
    w.push_str("}\n");
}

/// Positions an invocation of a reducing group takes per turn of its loop (see [`flat_main`]).
pub const STRIDE_UNROLL: u32 = 4;

/// One invocation per position (`pl.base` + its index), taking its element through the
/// `permutation` binding (global colouring's plan), else the subset's list, else the position
/// itself. In a group that reduces into Globals each workgroup instead takes a contiguous
/// chunk of the positions (whole turns of [`STRIDE_UNROLL`] x workgroup size, the last chunk
/// shorter), each turn's positions a workgroup apart per invocation: the runtime caps the
/// workgroups of such a dispatch (`Config::reduction_workgroups`), so that a few workgroup
/// trees fold many elements, neighbouring invocations still take neighbouring positions, and a
/// CPU adapter's threads each stream through memory. Workgroups past `pl.nwg` (a 2-D grid's
/// last row) take none.
pub(crate) fn flat_main(g: &GroupIr, w: &mut String, permutation: Option<usize>) {
    let wg = g.workgroup_size;
    let strided = g.strided();
    if strided {
        let (turn, u) = (wg * STRIDE_UNROLL, STRIDE_UNROLL);
        // Workgroup pl_wg takes turns [pl_t0, pl_t1): the turns split as evenly as they go,
        // and no product reaches past n (nothing wraps, whatever n, the cap or the size).
        let _ = writeln!(
            w,
            "    if (pl_wg < pl.nwg) {{\n    \
             let pl_turns = pl.n / {turn}u + select(0u, 1u, pl.n % {turn}u != 0u);\n    \
             let pl_q = pl_turns / pl.nwg;\n    \
             let pl_r = pl_turns % pl.nwg;\n    \
             let pl_t0 = pl_wg * pl_q + min(pl_wg, pl_r);\n    \
             let pl_t1 = pl_t0 + pl_q + select(0u, 1u, pl_wg < pl_r);\n    \
             for (var pl_t = pl_t0; pl_t < pl_t1; pl_t++) {{\n    \
             for (var pl_u = 0u; pl_u < {u}u; pl_u++) {{\n    \
             let pl_o = pl_lid + pl_u * {wg}u;\n    \
             if (pl_o < pl.n - pl_t * {turn}u) {{\n        \
             let pl_i = pl_t * {turn}u + pl_o;\n        let pl_p = pl.base + pl_i;"
        );
    } else {
        let _ = writeln!(
            w,
            "    let pl_i = pl_wg * {wg}u + pl_lid;\n    if (pl_i < pl.n) {{\n        let pl_p = pl.base + pl_i;"
        );
    }
    let e = match (permutation, g.subset) {
        (Some(plan), _) => format!("{}[pl_p]", g.var(plan)),
        (None, Some(sub)) => format!("{}[pl_p]", g.var(sub)),
        (None, None) => "pl_p".to_string(),
    };
    let _ = writeln!(w, "        let pl_e = {e};");
    element_body(g, w, "        ", None);
    w.push_str(if strided {
        "    }\n    }\n    }\n    }\n"
    } else {
        "    }\n"
    });
}

/// Racing arguments of the group, numbered in order: (loop, arg).
fn racing_args(g: &GroupIr) -> Vec<(usize, usize)> {
    let mut v = Vec::new();
    for (l, lp) in g.loops.iter().enumerate() {
        for (a, arg) in lp.args.iter().enumerate() {
            if matches!(arg.source, ArgSource::Indirect { .. }) && arg.access.is_reduction() {
                v.push((l, a));
            }
        }
    }
    v
}

/// The gathered/scattered body for one element `pl_e` (position `pl_p`). Racing values are
/// applied right away (colouring or atomics made that safe; staged targets live in workgroup
/// memory), or, with `deferred`, their locals are the caller's (see [`declare_racing`]) and the
/// statements that apply them go to `deferred`, for the caller to run in its thread colour.
fn element_body(g: &GroupIr, w: &mut String, ind: &str, mut deferred: Option<&mut String>) {
    for (r, reg) in g.registers.iter().enumerate() {
        let _ = writeln!(w, "{ind}var pl_v{r}: array<{}, {}>;", reg.dtype, reg.dim);
        if let (true, Some(b)) = (reg.load, reg.binding) {
            let _ = writeln!(
                w,
                "{ind}for (var pl_k = 0u; pl_k < {d}u; pl_k++) {{ pl_v{r}[pl_k] = {}[{}]; }}",
                g.var(b),
                dat_index(g, b, "pl_e", reg.dim),
                d = reg.dim
            );
        }
    }
    for (l, lp) in g.loops.iter().enumerate() {
        let _ = writeln!(w, "{ind}// loop {}: `{}`\n{ind}{{", l + 1, lp.kernel);
        let inner = format!("{ind}    ");
        let mut call_args = Vec::new();
        let mut after = String::new();
        for (a, arg) in lp.args.iter().enumerate() {
            let local = format!("pl_a{l}_{a}");
            let name = local.clone();
            let _ = writeln!(w, "{inner}// arg {}: {}", a + 1, arg.what);
            match &arg.source {
                ArgSource::Direct { reg } => {
                    // The kernel sees exactly what it would see in a loop of its own: READ a
                    // copy, WRITE zeros, reductions their identity, RW the value itself.
                    let reused = lp.args[..a]
                        .iter()
                        .any(|o| matches!(o.source, ArgSource::Direct { reg: r2 } if r2 == *reg));
                    match arg.access {
                        Access::Rw if !reused => call_args.push(format!("&pl_v{reg}")),
                        Access::Read | Access::Rw => {
                            let _ = writeln!(w, "{inner}var {local} = pl_v{reg};");
                            call_args.push(format!("&{local}"));
                        }
                        Access::Write => {
                            let _ = writeln!(
                                w,
                                "{inner}var {local}: array<{}, {}>;",
                                arg.dtype, arg.dim
                            );
                            let _ = writeln!(&mut after, "{inner}pl_v{reg} = {local};");
                            call_args.push(format!("&{local}"));
                        }
                        Access::Inc | Access::Min | Access::Max => {
                            declare_identity(w, &inner, &local, arg);
                            let _ = writeln!(
                                &mut after,
                                "{inner}for (var pl_k = 0u; pl_k < {d}u; pl_k++) {{ pl_v{reg}[pl_k] = {}; }}",
                                combine(
                                    arg.access,
                                    &format!("pl_v{reg}[pl_k]"),
                                    &format!("{local}[pl_k]")
                                ),
                                d = arg.dim
                            );
                            call_args.push(format!("&{local}"));
                        }
                    }
                }
                ArgSource::Global { binding, red } => {
                    match red {
                        Some(r) => {
                            declare_identity(w, &inner, &local, arg);
                            if g.exec_halo {
                                let _ = writeln!(&mut after, "{inner}if (pl_e < pl.owned) {{");
                            }
                            let _ = writeln!(
                                &mut after,
                                "{inner}for (var pl_k = 0u; pl_k < {d}u; pl_k++) {{ pl_acc{r}[pl_k] = {}; }}",
                                combine(
                                    arg.access,
                                    &format!("pl_acc{r}[pl_k]"),
                                    &format!("{local}[pl_k]")
                                ),
                                d = arg.dim
                            );
                            if g.exec_halo {
                                let _ = writeln!(&mut after, "{inner}}}");
                            }
                        }
                        None => {
                            let _ = writeln!(
                                w,
                                "{inner}var {local}: array<{}, {d}>;\n{inner}for (var pl_k = 0u; pl_k < {d}u; pl_k++) {{ {local}[pl_k] = {}[pl_k]; }}",
                                arg.dtype,
                                g.var(*binding),
                                d = arg.dim
                            );
                        }
                    }
                    call_args.push(format!("&{local}"));
                }
                ArgSource::Indirect {
                    dat,
                    map,
                    arity,
                    idx,
                    staged,
                } => {
                    let idxs: Vec<usize> = match idx {
                        Some(j) => vec![*j],
                        None => (0..*arity).collect(),
                    };
                    if arg.access.is_reduction() {
                        if deferred.is_none() {
                            declare_identity(w, &inner, &local, arg);
                        }
                    } else {
                        let _ = writeln!(
                            w,
                            "{inner}var {local}: array<{}, {}>;",
                            arg.dtype, arg.width
                        );
                    }
                    let map_index = |j: usize| format!("{}[pl_e * {arity}u + {j}u]", g.var(*map));
                    if arg.access.loads() {
                        for (slot, &j) in idxs.iter().enumerate() {
                            // Staged copies are element-major; global memory as the Dat is.
                            let (index, src) = match staged {
                                Some(s) => (
                                    g2l(g, *s, j),
                                    format!(
                                        "{}[pl_t * {}u + pl_k]",
                                        g.staged_var(*s, *dat),
                                        arg.dim
                                    ),
                                ),
                                None => (
                                    map_index(j),
                                    format!(
                                        "{}[{}]",
                                        g.var(*dat),
                                        dat_index(g, *dat, "pl_t", arg.dim)
                                    ),
                                ),
                            };
                            let _ = writeln!(
                                w,
                                "{inner}{{ let pl_t = {index}; for (var pl_k = 0u; pl_k < {d}u; pl_k++) {{ {local}[{off}u + pl_k] = {src}; }} }}",
                                d = arg.dim,
                                off = slot * arg.dim
                            );
                        }
                    }
                    for (slot, &j) in idxs.iter().enumerate() {
                        let target = format!("pl_t * {}u + pl_k", arg.dim);
                        let global = dat_index(g, *dat, "pl_t", arg.dim);
                        let value = format!("{name}[{}u + pl_k]", slot * arg.dim);
                        if arg.access.stores() {
                            let _ = writeln!(
                                &mut after,
                                "{inner}{{ let pl_t = {}; for (var pl_k = 0u; pl_k < {d}u; pl_k++) {{ {}[{global}] = {value}; }} }}",
                                map_index(j),
                                g.var(*dat),
                                d = arg.dim
                            );
                        } else if arg.access.is_reduction() {
                            let (index, apply) = match staged {
                                Some(s) => {
                                    let sv = g.staged_var(*s, *dat);
                                    let stmt = if g.staged_atomics() {
                                        let kind = match arg.dtype {
                                            DType::F32 | DType::F64 => Atomic::Bits,
                                            DType::U32 | DType::I32 => Atomic::Native,
                                        };
                                        atomic_apply(&sv, kind, arg, &target, &value, &inner)
                                    } else {
                                        format!(
                                            "{inner}    {sv}[{target}] = {};\n",
                                            combine(arg.access, &format!("{sv}[{target}]"), &value)
                                        )
                                    };
                                    (g2l(g, *s, j), stmt)
                                }
                                None => (
                                    map_index(j),
                                    apply_racing(g, *dat, arg, &global, &value, &inner),
                                ),
                            };
                            let out = match deferred.as_deref_mut() {
                                Some(d) => d,
                                None => &mut after,
                            };
                            let _ = write!(
                                out,
                                "{inner}{{\n{inner}let pl_t = {index};\n{inner}for (var pl_k = 0u; pl_k < {d}u; pl_k++) {{\n{apply}{inner}}}\n{inner}}}\n",
                                d = arg.dim
                            );
                        }
                    }
                    call_args.push(format!("&{name}"));
                }
            }
        }
        if g.check.is_some() {
            let _ = writeln!(w, "{inner}pl_loop = {l}u;\n{inner}pl_elem = pl_e;");
        }
        let _ = writeln!(w, "{inner}{}({});", lp.kernel, call_args.join(", "));
        w.push_str(&after);
        let _ = writeln!(w, "{ind}}}");
    }
    for (r, reg) in g.registers.iter().enumerate() {
        if let (true, Some(b)) = (reg.store, reg.binding) {
            let _ = writeln!(
                w,
                "{ind}for (var pl_k = 0u; pl_k < {d}u; pl_k++) {{ {}[{}] = pl_v{r}[pl_k]; }}",
                g.var(b),
                dat_index(g, b, "pl_e", reg.dim),
                d = reg.dim
            );
        }
    }
}

/// The index of value `pl_k` of element `e` in Dat binding `b` (`dim` values per element):
/// element-major, or component-major when the Dat is struct-of-arrays (the stride, the set's
/// stored elements, is the binding's length over dim: bindings are bound at their exact size).
pub(super) fn dat_index(g: &GroupIr, b: usize, e: &str, dim: usize) -> String {
    match g.bindings[b].kind {
        BindingKind::Dat { soa: true, .. } => {
            format!("pl_k * (arrayLength(&{}) / {dim}u) + {e}", g.var(b))
        }
        _ => format!("{e} * {dim}u + pl_k"),
    }
}

/// Declares the racing arguments' locals (identity-initialised) for [`element_body`]'s
/// deferred mode.
fn declare_racing(g: &GroupIr, w: &mut String, ind: &str) {
    for (l, a) in racing_args(g) {
        declare_identity(w, ind, &format!("pl_a{l}_{a}"), &g.loops[l].args[a]);
    }
}

fn declare_identity(w: &mut String, ind: &str, local: &str, arg: &ArgIr) {
    let _ = writeln!(
        w,
        "{ind}var {local}: array<{t}, {n}>;\n{ind}for (var pl_k = 0u; pl_k < {n}u; pl_k++) {{ {local}[pl_k] = {}; }}",
        reduce_op(arg.access).identity_wgsl(arg.dtype),
        t = arg.dtype,
        n = arg.width
    );
}

/// The local index of map index j of position pl_p in staged map s.
fn g2l(g: &GroupIr, s: usize, j: usize) -> String {
    let plan = g.var(g.plan.unwrap_or(0));
    let arity = g.staged[s].arity;
    format!(
        "{plan}[{plan}[{}u] + pl_p * {arity}u + {j}u]",
        PLAN_HEADER_FIXED + PLAN_HEADER_PER_MAP * s + 2
    )
}

/// Statements that apply one racing value to global memory right away.
fn apply_racing(
    g: &GroupIr,
    dat: usize,
    arg: &ArgIr,
    target: &str,
    value: &str,
    ind: &str,
) -> String {
    atomic_apply(&g.var(dat), g.bindings[dat].atomic, arg, target, value, ind)
}

/// Statements that combine `value` into `var[target]` as `kind` says (plain, native atomics,
/// or compare-and-swap on a float's bits: f32 as u32, f64 as u64).
fn atomic_apply(
    var: &str,
    kind: Atomic,
    arg: &ArgIr,
    target: &str,
    value: &str,
    ind: &str,
) -> String {
    let ind2 = format!("{ind}    ");
    match kind {
        Atomic::No => format!(
            "{ind2}{var}[{target}] = {};\n",
            combine(arg.access, &format!("{var}[{target}]"), value)
        ),
        Atomic::Native if arg.dtype != DType::F32 || arg.access == Access::Inc => {
            let f = reduce_op(arg.access).atomic();
            format!("{ind2}{f}(&{var}[{target}], {value});\n")
        }
        Atomic::Native => {
            // f32 min/max on an atomic<f32>: compare-and-swap on the value itself.
            let new = combine(arg.access, "pl_old", value);
            format!(
                "{ind2}var pl_old = atomicLoad(&{var}[{target}]);\n{ind2}loop {{\n{ind2}    \
                 let pl_x = atomicCompareExchangeWeak(&{var}[{target}], pl_old, {new});\n{ind2}    \
                 if (pl_x.exchanged) {{ break; }}\n{ind2}    pl_old = pl_x.old_value;\n{ind2}}}\n"
            )
        }
        Atomic::Bits => {
            let (float, bits) = match arg.dtype {
                DType::F64 => ("f64", "u64"),
                DType::F32 | DType::U32 | DType::I32 => ("f32", "u32"),
            };
            let new = combine(arg.access, &format!("bitcast<{float}>(pl_old)"), value);
            format!(
                "{ind2}var pl_old = atomicLoad(&{var}[{target}]);\n{ind2}loop {{\n{ind2}    \
                 let pl_x = atomicCompareExchangeWeak(&{var}[{target}], pl_old, bitcast<{bits}>({new}));\n{ind2}    \
                 if (pl_x.exchanged) {{ break; }}\n{ind2}    pl_old = pl_x.old_value;\n{ind2}}}\n"
            )
        }
    }
}

/// Why WGSL did not validate: naga's parse or validation error.
#[derive(Debug)]
pub enum Invalid {
    /// The source does not parse.
    Parse(naga::front::wgsl::ParseError),
    /// The module parses but does not validate (with these capabilities).
    Validation(naga::WithSpan<naga::valid::ValidationError>),
}

impl Invalid {
    /// naga's diagnostic, with the lines of `src` it points at.
    pub fn render(&self, src: &str) -> String {
        match self {
            Invalid::Parse(e) => e.emit_to_string(src),
            Invalid::Validation(e) => e.emit_to_string(src),
        }
    }
}

impl std::fmt::Display for Invalid {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Invalid::Parse(e) => write!(f, "{e}"),
            Invalid::Validation(e) => write!(f, "{e}"),
        }
    }
}

/// Validates generated (or any) WGSL with naga.
pub fn validate(src: &str, caps: naga::valid::Capabilities) -> Result<naga::Module, Invalid> {
    let module = naga::front::wgsl::parse_str(src).map_err(Invalid::Parse)?;
    naga::valid::Validator::new(naga::valid::ValidationFlags::all(), caps)
        .validate(&module)
        .map_err(Invalid::Validation)?;
    Ok(module)
}

#[cfg(test)]
mod tests;
