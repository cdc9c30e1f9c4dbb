//! Checking a user's kernel before a par_loop records it: parsed and validated by naga as the
//! generated module will hold it (the Consts it uses read from the uniform parameters, see
//! `codegen::consts`), and its signature compared with the par_loop's arguments; problems are
//! reported by the kernel's own line numbers. Results are cached on the kernel.

use super::consts;
use crate::data::ConstValue;
use crate::kernel::{Kernel, KernelProblem};
use crate::types::DType;

impl Kernel {
    /// Checks that the kernel's WGSL compiles (with the Consts it uses) and declares exactly the
    /// given arguments. Results are cached per signature.
    pub(crate) fn check(
        &self,
        consts: &[(String, ConstValue)],
        args: &[(DType, usize)],
        caps: naga::valid::Capabilities,
    ) -> Result<(), KernelProblem> {
        let Some(src) = self.0.wgsl.as_deref() else {
            return Ok(());
        };
        let used = self.consts_used(consts);
        // Const values do not change what compiles: the key has their names and types only.
        let shapes: Vec<(&str, DType, usize, bool)> = used
            .iter()
            .map(|(n, v)| (n.as_str(), v.dtype, v.words.len(), v.array))
            .collect();
        let key = format!("{args:?}|{shapes:?}|{caps:?}");
        if let Some(r) = self.0.checked.borrow().get(&key) {
            return r.clone();
        }
        // A kernel made again from the same source (the library's own, made per call) is
        // checked once per thread: naga's parse and validation cost more than the loop's
        // recording.
        let shared = (self.0.name.clone(), src.to_string(), key.clone());
        let known = CHECKED.with(|c| c.borrow().get(&shared).cloned());
        let r = known.unwrap_or_else(|| check_source(&self.0.name, src, &used, args, caps));
        CHECKED.with(|c| {
            let mut c = c.borrow_mut();
            // Programs that make a new source per loop would grow it without end.
            if c.len() >= 4096 {
                c.clear();
            }
            c.insert(shared, r.clone());
        });
        self.0.checked.borrow_mut().insert(key, r.clone());
        r
    }
}

type Checked = std::collections::HashMap<(String, String, String), Result<(), KernelProblem>>;

thread_local! {
    /// Checks by (kernel name, source, signature), for kernels made again from one source.
    static CHECKED: std::cell::RefCell<Checked> = std::cell::RefCell::new(Checked::new());
}

fn check_source(
    name: &str,
    src: &str,
    consts: &[&(String, ConstValue)],
    args: &[(DType, usize)],
    caps: naga::valid::Capabilities,
) -> Result<(), KernelProblem> {
    // Checked as the generated module will hold it: Consts read from the uniform parameters.
    let consts: Vec<(String, ConstValue)> = consts.iter().map(|&c| c.clone()).collect();
    let prelude = consts::params_decl(&consts);
    let offset = prelude.lines().count() as u32;
    let full = format!("{prelude}{}", consts::inject(src, &consts));
    let wgsl_error = |loc: Option<naga::SourceLocation>, message: String| {
        let (line, column) = loc.map_or((0, 0), |l| (l.line_number, l.line_position));
        KernelProblem::Wgsl {
            line: line.saturating_sub(offset),
            column,
            message,
        }
    };
    let module = naga::front::wgsl::parse_str(&full).map_err(|e| {
        let labels: Vec<String> = e.labels().map(|(_, l)| l.to_string()).collect();
        let mut msg = e.message().to_string();
        if let Some(l) = labels.iter().find(|l| !l.is_empty()) {
            msg = format!("{msg} ({l})");
        }
        wgsl_error(e.location(&full), msg)
    })?;
    let mut validator = naga::valid::Validator::new(naga::valid::ValidationFlags::all(), caps);
    let info = validator.validate(&module).map_err(|e| {
        let mut msg = e.as_inner().to_string();
        let mut source = std::error::Error::source(e.as_inner());
        while let Some(s) = source {
            msg = format!("{msg}: {s}");
            source = s.source();
        }
        wgsl_error(e.location(&full), msg)
    })?;
    if let Some((builtin, span)) = f64_builtin(&module, &info) {
        let line = span.location(&full).line_number.saturating_sub(offset);
        return Err(KernelProblem::F64Builtin { builtin, line });
    }
    let Some((_, f)) = module
        .functions
        .iter()
        .find(|(_, f)| f.name.as_deref() == Some(name))
    else {
        return Err(KernelProblem::NotFound {
            functions: module
                .functions
                .iter()
                .filter_map(|(_, f)| f.name.clone())
                .collect(),
        });
    };
    if f.arguments.len() != args.len() {
        return Err(KernelProblem::ArgCount {
            declared: f.arguments.len(),
        });
    }
    for (i, (a, &(dtype, n))) in f.arguments.iter().zip(args).enumerate() {
        if !is_array_ptr(&module, a.ty, dtype, n) {
            return Err(KernelProblem::ArgType {
                index: i,
                declared: type_name(&module, a.ty),
            });
        }
    }
    Ok(())
}

/// The builtins that SPIR-V's GLSL.std.450 (Vulkan) and GLSL (OpenGL) define for 16- and 32-bit
/// floats only: given f64 they compile, and compute garbage (lavapipe: `log(2.0)` = -88.03).
/// Metal has no f64 at all. `sqrt`, `inverseSqrt`, `abs`, `floor`, `ceil`, `round`, `trunc`,
/// `fract`, `fma`, `min`, `max`, `clamp`, `mix`, `step`, `sign`, `length`, `dot` and the like
/// are defined for f64 and allowed.
const F32_ONLY: [(naga::MathFunction, &str); 21] = {
    use naga::MathFunction as M;
    [
        (M::Sin, "sin"),
        (M::Cos, "cos"),
        (M::Tan, "tan"),
        (M::Asin, "asin"),
        (M::Acos, "acos"),
        (M::Atan, "atan"),
        (M::Atan2, "atan2"),
        (M::Sinh, "sinh"),
        (M::Cosh, "cosh"),
        (M::Tanh, "tanh"),
        (M::Asinh, "asinh"),
        (M::Acosh, "acosh"),
        (M::Atanh, "atanh"),
        (M::Radians, "radians"),
        (M::Degrees, "degrees"),
        (M::Pow, "pow"),
        (M::Exp, "exp"),
        (M::Exp2, "exp2"),
        (M::Log, "log"),
        (M::Log2, "log2"),
        // GLSL.std.450's Refract takes a 16- or 32-bit eta.
        (M::Refract, "refract"),
    ]
};

/// The first call in the module of a builtin of [`F32_ONLY`] on f64 values, and where it is.
fn f64_builtin(
    module: &naga::Module,
    info: &naga::valid::ModuleInfo,
) -> Option<(&'static str, naga::Span)> {
    for (h, f) in module.functions.iter() {
        let fi = &info[h];
        for (e, expr) in f.expressions.iter() {
            let naga::Expression::Math { fun, .. } = *expr else {
                continue;
            };
            let Some(&(_, name)) = F32_ONLY.iter().find(|(m, _)| *m == fun) else {
                continue;
            };
            if fi[e].ty.inner_with(&module.types).scalar() == Some(naga::Scalar::F64) {
                return Some((name, f.expressions.get_span(e)));
            }
        }
    }
    None
}

fn scalar_of(dtype: DType) -> naga::Scalar {
    match dtype {
        DType::F32 => naga::Scalar::F32,
        DType::F64 => naga::Scalar::F64,
        DType::U32 => naga::Scalar::U32,
        DType::I32 => naga::Scalar::I32,
    }
}

fn is_array_ptr(m: &naga::Module, ty: naga::Handle<naga::Type>, dtype: DType, n: usize) -> bool {
    let naga::TypeInner::Pointer { base, space } = m.types[ty].inner else {
        return false;
    };
    if space != naga::AddressSpace::Function {
        return false;
    }
    let naga::TypeInner::Array {
        base: elem, size, ..
    } = m.types[base].inner
    else {
        return false;
    };
    let len_ok = matches!(size, naga::ArraySize::Constant(c) if c.get() as usize == n);
    len_ok && m.types[elem].inner == naga::TypeInner::Scalar(scalar_of(dtype))
}

fn type_name(m: &naga::Module, ty: naga::Handle<naga::Type>) -> String {
    use naga::TypeInner as T;
    match &m.types[ty].inner {
        T::Pointer { base, space } => {
            let space = match space {
                naga::AddressSpace::Function => "function".to_string(),
                other => format!("{other:?}").to_lowercase(),
            };
            format!("ptr<{space}, {}>", type_name(m, *base))
        }
        T::Array { base, size, .. } => match size {
            naga::ArraySize::Constant(c) => format!("array<{}, {c}>", type_name(m, *base)),
            _ => format!("array<{}>", type_name(m, *base)),
        },
        T::Scalar(s) => scalar_name(*s),
        T::Vector { size, scalar } => format!("vec{}<{}>", *size as u8, scalar_name(*scalar)),
        other => format!("{other:?}"),
    }
}

fn scalar_name(s: naga::Scalar) -> String {
    let kind = match s.kind {
        naga::ScalarKind::Float => "f",
        naga::ScalarKind::Uint => "u",
        naga::ScalarKind::Sint => "i",
        naga::ScalarKind::Bool => return "bool".into(),
        _ => "?",
    };
    format!("{kind}{}", s.width * 8)
}

#[cfg(test)]
mod tests {
    use super::*;

    const CAPS: naga::valid::Capabilities = naga::valid::Capabilities::empty();

    #[test]
    fn signature_and_errors_use_kernel_lines() {
        let k = Kernel::new(
            "axpy",
            "fn axpy(x: ptr<function, array<f32, 2>>, y: ptr<function, array<f32, 2>>) {\n\
             \x20 (*y)[0] += a * (*x)[0];\n}\n",
        );
        let consts = vec![
            ("a".to_string(), ConstValue::scalar(2.0f32)),
            ("unused".to_string(), ConstValue::scalar(1u32)),
        ];
        assert_eq!(
            k.check(&consts, &[(DType::F32, 2), (DType::F32, 2)], CAPS),
            Ok(())
        );
        assert_eq!(
            k.check(&consts, &[(DType::F32, 2)], CAPS),
            Err(KernelProblem::ArgCount { declared: 2 })
        );
        assert_eq!(
            k.check(&consts, &[(DType::F32, 2), (DType::F32, 3)], CAPS),
            Err(KernelProblem::ArgType {
                index: 1,
                declared: "ptr<function, array<f32, 2>>".into()
            })
        );
        // Without the Const, `a` is unknown: reported on line 2 of the kernel.
        match k.check(&[], &[(DType::F32, 2), (DType::F32, 2)], CAPS) {
            Err(KernelProblem::Wgsl { line, .. }) => assert_eq!(line, 2),
            other => panic!("{other:?}"),
        }
        let bad = Kernel::new("f", "fn g() {}\n");
        assert_eq!(
            bad.check(&[], &[], CAPS),
            Err(KernelProblem::NotFound {
                functions: vec!["g".into()]
            })
        );
    }
}
