//! What `par_loop` checks before it records a loop: the iteration space, every argument's set,
//! map, dim and access against the kernel's signature, and the sizes the device allows. Each
//! problem is an error naming the par_loop (kernel and caller's file:line), the argument and
//! what to do.

use super::*;

impl Context {
    /// Checks a par_loop before it is recorded, in phases: each argument (its Context, set,
    /// map, index and access), arguments passing the same data, each one's size, what the
    /// loop needs of the adapter, and the kernel against the arguments.
    pub(super) fn check_loop(
        &self,
        kernel: &Kernel,
        space: &IterSpace,
        args: &[Arg],
        site: &'static Location<'static>,
    ) -> Result<()> {
        let site = LoopSite::new(kernel.name(), site);
        let max = self.0.engine.gpu.limits.max_storage_buffer_binding_size;
        for (i, a) in args.iter().enumerate() {
            let problem = self
                .arg_problem(space.set(), a)
                .or_else(|| alias_problem(i, args))
                .or_else(|| size_problem(a, max));
            if let Some(msg) = problem {
                return Err(arg_err(&site, i, a, msg));
            }
        }
        // A kernel without WGSL runs on the host: no schedule to refuse.
        self.check_adapter(&site, space, args, kernel.wgsl().is_some())?;
        self.check_kernel(&site, kernel, args)
    }

    /// What is wrong with argument `a` of a loop over `set`: another Context's data, a Dat on
    /// another set, a map from or to the wrong set, an index past the arity, a store through a
    /// map that is not injective, a Global written.
    fn arg_problem(&self, set: &crate::data::Set, a: &Arg) -> Option<String> {
        if !std::ptr::addr_eq(a.data.owner.as_ptr(), Rc::as_ptr(&self.0)) {
            return Some(format!(
                "{} `{}` belongs to another Context",
                a.data.kind(),
                a.data.name
            ));
        }
        match &a.via {
            Via::Direct => {
                let ds = a.data.set.as_ref().expect("Dat");
                if !ds.same(set) {
                    return Some(format!(
                        "Dat `{}` lives on set `{}`, but the par_loop iterates over `{}`: pass it \
                             through a map from `{}` to `{}`",
                        a.data.name,
                        ds.name(),
                        set.name(),
                        set.name(),
                        ds.name()
                    ));
                }
            }
            Via::Map(m, _) | Via::MapAll(m) => {
                let ds = a.data.set.as_ref().expect("Dat");
                if !m.from_set().same(set) {
                    return Some(format!(
                        "map `{}` goes from `{}`, but the par_loop iterates over `{}`",
                        m.name(),
                        m.from_set().name(),
                        set.name()
                    ));
                }
                if !m.to_set().same(ds) {
                    return Some(format!(
                        "map `{}` leads to `{}`, but Dat `{}` lives on `{}`",
                        m.name(),
                        m.to_set().name(),
                        a.data.name,
                        ds.name()
                    ));
                }
                if let Via::Map(_, j) = a.via {
                    if j >= m.arity() {
                        return Some(format!(
                            "index {j} is out of range for map `{}` of arity {} (valid 0..={})",
                            m.name(),
                            m.arity(),
                            m.arity() - 1
                        ));
                    }
                }
                if a.access.stores() {
                    let idx = match a.via {
                        Via::Map(_, j) => Some(j),
                        _ => None,
                    };
                    if !m.injective(idx) {
                        return Some(format!(
                            "{} through map `{}` is not allowed because the map is not injective \
                                 ({}): two elements would write the same entry; use INC, or a map that \
                                 sends each element to distinct entries",
                            a.access,
                            m.name(),
                            collision(m, idx)
                        ));
                    }
                }
            }
            Via::Global => {
                if matches!(a.access, Access::Write | Access::Rw) {
                    return Some("a Global is READ or reduced (INC, MIN, MAX) by a par_loop; elements writing \
                         it directly would race"
                            .into());
                }
            }
        }
        None
    }

    /// Storage buffers, f64 races and float atomics: what the loop needs of the adapter and the
    /// configured strategy.
    fn check_adapter(
        &self,
        site: &LoopSite,
        space: &IterSpace,
        args: &[Arg],
        on_device: bool,
    ) -> Result<()> {
        let mut ids: Vec<u64> = args.iter().map(|a| a.data.id).collect();
        ids.extend(
            args.iter()
                .filter_map(|a| a.map().map(|m| m.id() | 1 << 63)),
        );
        ids.sort_unstable();
        ids.dedup();
        // The schedule the loop gets on its own (under `tune`, `auto`'s: a candidate that
        // needs more is left out when it is lowered), or why the strategy cannot run it.
        let racing: Vec<DType> = args
            .iter()
            .filter(|a| a.races())
            .map(|a| a.data.dtype)
            .collect();
        let schedule = crate::codegen::strategy::choose(
            &crate::lower::request(&self.0.engine.choice),
            &racing,
        );
        // One more buffer: the plan of a schedule that has one (it lists the elements, a
        // subset's too), else a subset's indices.
        let planned = schedule
            .as_ref()
            .is_ok_and(|s| s.plan() != crate::codegen::strategy::PlanKind::None);
        let extra = usize::from(space.subset().is_some() || planned)
            + usize::from(
                args.iter()
                    .any(|a| matches!(a.via, Via::Global) && a.access.is_reduction()),
            );
        // Checking mode binds its record buffer too.
        let need = ids.len() + extra + usize::from(self.0.config.check);
        let limit = self
            .0
            .engine
            .gpu
            .limits
            .max_storage_buffers_per_shader_stage as usize;
        if need > limit {
            return Err(Error::par_loop(
                site,
                None,
                format!(
                    "{site}: needs {need} storage buffers (Dats, Globals, Maps and plan arrays{}), the adapter \
                 allows {limit} per shader stage: split the loop",
                    if self.0.config.check {
                        ", checking mode's records"
                    } else {
                        ""
                    }
                ),
            ));
        }
        if let (Err(illegal), true) = (schedule, on_device) {
            return Err(Error::par_loop(
                site,
                None,
                format!(
                    "{site}: strategy `{}` on adapter {}: {illegal}",
                    self.0.config.strategy.name(),
                    self.adapter()
                ),
            ));
        }
        Ok(())
    }

    /// The kernel: it has a body, compiles, and declares what the arguments pass.
    fn check_kernel(&self, site: &LoopSite, kernel: &Kernel, args: &[Arg]) -> Result<()> {
        if kernel.wgsl().is_none() && !kernel.has_host() {
            return Err(Error::Kernel {
                par_loop: Some(site.clone()),
                message: format!("{site}: the kernel has neither WGSL nor a host closure"),
            });
        }
        let expected: Vec<(DType, usize)> =
            args.iter().map(|a| (a.data.dtype, a.width())).collect();
        let consts = self.0.sched.consts.borrow();
        kernel
            .check(&consts, &expected, self.0.engine.gpu.capabilities())
            .map_err(|p| match p {
                KernelProblem::Wgsl { line, column, message } => Error::Kernel { par_loop: Some(site.clone()), message: format!(
                    "{site}: kernel `{}` does not compile: line {line}, column {column} of the kernel: {message}{}",
                    kernel.name(),
                    undefined_hint(kernel.wgsl().unwrap_or(""), line as usize, &message, kernel.name())
                ) },
                KernelProblem::NotFound { functions } => Error::Kernel { par_loop: Some(site.clone()), message: format!(
                    "{site}: no function named `{}` in the kernel's WGSL (functions found: {}); the \
                     kernel's name must be the name of its WGSL function",
                    kernel.name(),
                    if functions.is_empty() { "none".to_string() } else { functions.join(", ") }
                ) },
                KernelProblem::F64Builtin { builtin, line } => Error::Kernel { par_loop: Some(site.clone()), message: format!(
                    "{site}: kernel `{}`, line {line}: `{builtin}` of an f64 value: the GPU's \
                     shading languages (SPIR-V's GLSL.std.450, GLSL) define `{builtin}` for \
                     32-bit floats only, and drivers compute garbage for f64; call it on f32 \
                     (`f64({builtin}(f32(x)))`, single precision) or write the function from \
                     f64 arithmetic (sqrt, fma, floor and the operators are f64)",
                    kernel.name()
                ) },
                KernelProblem::ArgCount { declared } => Error::par_loop(site, None, format!(
                    "{site}: the kernel declares {declared} arguments, the par_loop passes {}",
                    args.len()
                )),
                KernelProblem::ArgType { index, declared } => arg_err(
                    site,
                    index,
                    &args[index],
                    format!(
                        "the kernel declares `{declared}`, but this argument needs `{}` ({})",
                        expected_type(expected[index].0, expected[index].1),
                        match &args[index].via {
                            Via::MapAll(m) => format!("arity {} x dim {}", m.arity(), args[index].data.dim),
                            _ => format!("dim {}", args[index].data.dim),
                        }
                    ),
                ),
            })
    }
}

/// An error naming the par_loop and its argument `i`.
fn arg_err(site: &LoopSite, i: usize, a: &Arg, msg: String) -> Error {
    let message = format!("{site}: argument {} ({}): {msg}", i + 1, a.describe());
    Error::par_loop(site, Some(i), message)
}

/// Argument `i` passing the same data as an earlier one, other than both reading it or both
/// reducing it through maps with one mode.
fn alias_problem(i: usize, args: &[Arg]) -> Option<String> {
    let a = &args[i];
    for (j, b) in args[..i].iter().enumerate() {
        if b.data.id != a.data.id {
            continue;
        }
        let both_read = a.access == Access::Read && b.access == Access::Read;
        let both_racing_same =
            a.access == b.access && a.access.is_reduction() && !matches!(a.via, Via::Direct);
        if !(both_read || both_racing_same) {
            return Some(format!(
                "argument {} ({}) uses the same {}: one par_loop may pass a Dat several \
                     times only to READ it, or to reduce it through maps with one mode; merge \
                     them into one argument or split the loop",
                j + 1,
                b.describe(),
                a.data.kind()
            ));
        }
    }
    None
}

/// Data, or a map's indices, larger than the adapter binds.
fn size_problem(a: &Arg, max: u64) -> Option<String> {
    if a.data.bytes() > max {
        return Some(format!(
            "{} `{}` needs {} bytes, over the adapter's max_storage_buffer_binding_size of {max} \
                 bytes: split it into several Dats",
            a.data.kind(),
            a.data.name,
            a.data.bytes()
        ));
    }
    if let Via::Map(m, _) | Via::MapAll(m) = &a.via {
        let (rows, arity) = (m.from_set().total(), m.arity());
        let bytes = (rows * arity * 4) as u64;
        if bytes > max {
            return Some(format!(
                "map `{}` ({rows} elements x arity {arity}) needs {bytes} bytes of indices, over \
                 the adapter's max_storage_buffer_binding_size of {max} bytes: split the set it \
                 maps from into several (or use an adapter with larger bindings)",
                m.name()
            ));
        }
    }
    None
}

/// Two elements that share a target through `map` (for error messages).
fn collision(m: &crate::data::Map, idx: Option<usize>) -> String {
    let a = m.arity();
    let mut first = std::collections::HashMap::new();
    // The rows a loop can run (a distributed map's other rows may hold placeholders).
    let from = m.from_set();
    let rows = from.size() + from.sections().exec_halo;
    for (k, &t) in m.values()[..rows * a].iter().enumerate() {
        if idx.is_some_and(|j| k % a != j) {
            continue;
        }
        if let Some(prev) = first.insert(t, k) {
            return format!(
                "element {} (index {}) and element {} (index {}) both map to {t}",
                prev / a,
                prev % a,
                k / a,
                k % a
            );
        }
    }
    "duplicate targets".into()
}

pub(super) fn describe_mask(mask: u8) -> String {
    let names: Vec<&str> = (0..5)
        .filter(|b| mask >> b & 1 == 1)
        .map(|b| section::NAMES[b])
        .collect();
    names.join(", ")
}

/// Values a Dat of `dim` on `set` holds, or an error when that does not fit in memory.
pub(super) fn values_for(name: &str, set: &crate::data::Set, dim: usize) -> Result<usize> {
    set.total()
        .checked_mul(dim)
        .filter(|&n| n.checked_mul(4).is_some())
        .ok_or_else(|| {
            Error::Data(format!(
                "Dat `{name}`: {} elements of `{}` x dim {dim} values overflow the address space",
                set.total(),
                set.name()
            ))
        })
}

/// What to do about naga's "no definition in scope for identifier: `x`": say which function of
/// the source uses `x` (the whole source is checked, whichever function the loop calls) and how
/// a Const is declared. Empty for any other message.
fn undefined_hint(src: &str, line: usize, message: &str, kernel: &str) -> String {
    let Some(ident) = message
        .split("no definition in scope for identifier: `")
        .nth(1)
        .and_then(|rest| rest.split('`').next())
    else {
        return String::new();
    };
    // The last `fn NAME` at or before the line (after attributes such as `@must_use`; line
    // comments left out).
    let function = src
        .lines()
        .take(line)
        .flat_map(|l| {
            let code = l.split("//").next().unwrap_or("");
            let words: Vec<&str> = code
                .split(|c: char| !(c.is_alphanumeric() || c == '_'))
                .filter(|w| !w.is_empty())
                .collect();
            let names: Vec<&str> = words
                .windows(2)
                .filter(|w| w[0] == "fn")
                .map(|w| w[1])
                .collect();
            names
        })
        .last();
    let used_in = match function {
        Some(f) if f != kernel => format!(
            " (it is used in function `{f}` of the same source, which is checked whole, \
             whichever function the loop calls)"
        ),
        Some(f) => format!(" (it is used in function `{f}`)"),
        None => String::new(),
    };
    format!(
        "\n`{ident}` is not defined{used_in}: if it is a Const, declare it before recording \
         the loop with `ctx.constant(\"{ident}\", value)`"
    )
}
