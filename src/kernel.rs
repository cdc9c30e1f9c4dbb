//! Kernels: a WGSL function (and/or a Rust closure for the host target) named by the user.
//! Each argument arrives as `ptr<function, array<T, N>>` with N = dim, or arity * dim when the
//! argument takes all indices of a map.
//!
//! Owns: the kernel's source, its host closure and the cache of its checks (which
//! `codegen::kernel_check` makes: a kernel is checked as the generated module will hold it).

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
    /// Equal for kernels of equal name and source (128 bits of two hashes), whichever
    /// `Kernel::new` call made them: fusion's cache keys on it, so a kernel made again at
    /// every step (as the solvers and many programs do) finds the grouping of the step before.
    pub content: u128,
    pub name: String,
    pub wgsl: Option<String>,
    pub host: Option<HostFn>,
    /// Signature checks already done: (signature, consts) -> result.
    pub(crate) checked: RefCell<HashMap<String, Result<(), KernelProblem>>>,
    /// The source's identifiers, found once: every par_loop asks which Consts it uses.
    idents: std::collections::HashSet<String>,
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
        let idents = wgsl
            .as_deref()
            .map(|src| identifiers(src).map(str::to_string).collect())
            .unwrap_or_default();
        let content = {
            use std::hash::{Hash, Hasher};
            let half = |salt: u8| {
                let mut h = std::collections::hash_map::DefaultHasher::new();
                (salt, &name, &wgsl).hash(&mut h);
                h.finish() as u128
            };
            half(0) << 64 | half(1)
        };
        Kernel(Rc::new(KernelInner {
            content,
            name,
            wgsl,
            host,
            checked: RefCell::new(HashMap::new()),
            idents,
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
    /// The Consts of `consts` the source names (whole identifiers).
    pub(crate) fn consts_used<'a>(
        &self,
        consts: &'a [(String, ConstValue)],
    ) -> Vec<&'a (String, ConstValue)> {
        consts
            .iter()
            .filter(|(name, _)| self.0.idents.contains(name.as_str()))
            .collect()
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
    /// A builtin the GPU's shading language defines for f32 only, called on f64 values.
    F64Builtin {
        builtin: &'static str,
        line: u32,
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

/// The identifier-like words of a source (comments included: a Const named only in a comment
/// is passed but unused, which is harmless).
fn identifiers(source: &str) -> impl Iterator<Item = &str> {
    source
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .filter(|s| !s.is_empty())
}
