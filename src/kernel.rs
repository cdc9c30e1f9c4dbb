//! Kernels: a WGSL function (and/or a Rust closure for the host target) named by the user.
//! Each argument arrives as `ptr<function, array<T, N>>` with N = dim, or arity * dim when the
//! argument takes all indices of a map.
//!
//! Owns: parsing a kernel with naga (with the Consts it uses) and checking its signature against
//! a par_loop's arguments, reporting errors by the kernel's own line numbers.

use crate::codegen::consts;
use crate::data::ConstValue;
use crate::types::{DType, Scalar};
use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;

/// The arguments a host kernel sees for one element: one array per par_loop argument, in order.
pub struct HostArgs<'a> {
    pub(crate) element: usize,
    pub(crate) values: &'a mut [Vec<u32>],
}

impl HostArgs<'_> {
    /// The iteration element (the set element, also when iterating a subset).
    pub fn element(&self) -> usize {
        self.element
    }
    /// Argument `i` as a slice of T (its dim, or arity x dim through all indices of a map).
    pub fn get<T: Scalar>(&self, i: usize) -> &[T] {
        bytemuck::cast_slice(&self.values[i])
    }
    /// Argument `i` as a mutable slice of T: what the host kernel leaves there is the argument's result.
    pub fn get_mut<T: Scalar>(&mut self, i: usize) -> &mut [T] {
        bytemuck::cast_slice_mut(&mut self.values[i])
    }
}

/// A Rust version of a kernel, run per element on the host target.
pub type HostFn = Rc<dyn Fn(&mut HostArgs)>;

pub(crate) struct KernelInner {
    /// Process-unique: caches key on it (an address can be reused once a kernel is dropped).
    pub id: u64,
    pub name: String,
    pub wgsl: Option<String>,
    pub host: Option<HostFn>,
    /// Signature checks already done: (signature, consts) -> result.
    checked: RefCell<HashMap<String, Result<(), KernelProblem>>>,
}

/// A kernel: a WGSL function given as source text plus its name, optionally with a host
/// closure. Cheap to clone.
///
/// The WGSL is checked against each loop's arguments when the loop is recorded (types and
/// array lengths, through naga); errors name the kernel's line.
///
/// ```
/// use parloop::{Context, Kernel, Set};
/// # fn main() -> parloop::Result<()> {
/// let ctx = Context::new()?;
/// let s = Set::new("s", 2);
/// let v = ctx.dat("v", &s, 2, &[1.0f32, 2.0, 3.0, 4.0])?;
/// let norm = ctx.dat_zeros::<f32>("norm", &s, 1)?;
/// // Helper functions may sit beside the kernel; Consts are read by name.
/// ctx.constant("scale", 10.0f32)?;
/// let k = Kernel::new("norm1", "
///     fn sq(a: f32) -> f32 { return a * a; }
///     fn norm1(v: ptr<function, array<f32, 2>>, n: ptr<function, array<f32, 1>>) {
///         (*n)[0] = scale * sqrt(sq((*v)[0]) + sq((*v)[1]));
///     }");
/// ctx.par_loop(&k, &s, &[v.read(), norm.write()])?;
/// assert!((norm.data_ro()?[0] - 22.36068).abs() < 1e-4);
/// // A signature that does not fit the arguments is refused when the loop is recorded.
/// assert!(ctx.par_loop(&k, &s, &[norm.read(), v.write()]).is_err());
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
pub struct Kernel(pub(crate) Rc<KernelInner>);

impl Kernel {
    /// A GPU kernel: `wgsl` must define `fn name(...)`; it may define helper functions too.
    /// Identifiers starting with `pl_` are reserved for the generated wrapper.
    pub fn new(name: impl Into<String>, wgsl: impl Into<String>) -> Kernel {
        Kernel::build(name.into(), Some(wgsl.into()), None)
    }
    /// A host-only kernel: loops with it run on the CPU, between GPU regions.
    pub fn host(name: impl Into<String>, f: impl Fn(&mut HostArgs) + 'static) -> Kernel {
        Kernel::build(name.into(), None, Some(Rc::new(f)))
    }
    /// Adds a host closure to a GPU kernel (used when its loop is placed on the host).
    pub fn with_host(self, f: impl Fn(&mut HostArgs) + 'static) -> Kernel {
        Kernel::build(self.0.name.clone(), self.0.wgsl.clone(), Some(Rc::new(f)))
    }
    fn build(name: String, wgsl: Option<String>, host: Option<HostFn>) -> Kernel {
        Kernel(Rc::new(KernelInner {
            id: crate::data::next_id(),
            name,
            wgsl,
            host,
            checked: RefCell::new(HashMap::new()),
        }))
    }
    /// The kernel's name: the WGSL function called per element (and the name in messages).
    pub fn name(&self) -> &str {
        &self.0.name
    }
    /// The WGSL source (the kernel function and its helpers), if the kernel has one.
    pub fn wgsl(&self) -> Option<&str> {
        self.0.wgsl.as_deref()
    }
    /// Whether the kernel has a Rust version for the host target.
    pub fn has_host(&self) -> bool {
        self.0.host.is_some()
    }
}

/// What is wrong with a kernel, before it is tied to a par_loop for the message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum KernelProblem {
    /// WGSL that does not parse or validate; line and column are in the kernel's own source.
    Wgsl {
        line: u32,
        column: u32,
        message: String,
    },
    NotFound {
        functions: Vec<String>,
    },
    ArgCount {
        declared: usize,
    },
    ArgType {
        index: usize,
        declared: String,
    },
}

/// The type an argument needs: `ptr<function, array<T, N>>`.
pub(crate) fn expected_type(dtype: DType, n: usize) -> String {
    format!("ptr<function, array<{dtype}, {n}>>")
}

/// Names of the functions a WGSL source defines (`fn name`).
pub(crate) fn functions_defined(source: &str) -> Vec<&str> {
    let mut words = source
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .filter(|s| !s.is_empty());
    let mut out = Vec::new();
    while let Some(w) = words.next() {
        if w == "fn" {
            if let Some(name) = words.next() {
                out.push(name);
            }
        }
    }
    out
}

/// Names of the Consts the source mentions (whole identifiers).
pub(crate) fn consts_used<'a>(
    source: &str,
    consts: &'a [(String, ConstValue)],
) -> Vec<&'a (String, ConstValue)> {
    let idents: std::collections::HashSet<&str> = source
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .filter(|s| !s.is_empty())
        .collect();
    consts
        .iter()
        .filter(|(name, _)| idents.contains(name.as_str()))
        .collect()
}

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
        let used = consts_used(src, consts);
        // Const values do not change what compiles: the key has their names and types only.
        let shapes: Vec<(&str, DType, usize, bool)> = used
            .iter()
            .map(|(n, v)| (n.as_str(), v.dtype, v.words.len(), v.array))
            .collect();
        let key = format!("{args:?}|{shapes:?}|{caps:?}");
        if let Some(r) = self.0.checked.borrow().get(&key) {
            return r.clone();
        }
        let r = check_source(&self.0.name, src, &used, args, caps);
        self.0.checked.borrow_mut().insert(key, r.clone());
        r
    }
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
    validator.validate(&module).map_err(|e| {
        let mut msg = e.as_inner().to_string();
        let mut source = std::error::Error::source(e.as_inner());
        while let Some(s) = source {
            msg = format!("{msg}: {s}");
            source = s.source();
        }
        wgsl_error(e.location(&full), msg)
    })?;
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
