//! Errors: what went wrong, in fields a caller can match, and a message for people.
//!
//! Every message says what the user did (which par_loop: kernel name and the caller's
//! file:line; which argument; which index, rank or limit) and what to do about it. The fields
//! carry the same facts for programs: the par_loop, the argument, the element, the rank.

/// Where a par_loop was called: its kernel and the caller's file and line.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct LoopSite {
    /// The kernel's name.
    pub kernel: String,
    /// The file of the `par_loop` call.
    pub file: &'static str,
    /// The line of the `par_loop` call.
    pub line: u32,
}

impl LoopSite {
    /// The site of a par_loop of `kernel` called at `at`.
    pub(crate) fn new(kernel: &str, at: &'static std::panic::Location<'static>) -> LoopSite {
        LoopSite {
            kernel: kernel.to_string(),
            file: at.file(),
            line: at.line(),
        }
    }
}

impl std::fmt::Display for LoopSite {
    /// "par_loop `res_calc` at src/main.rs:42".
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "par_loop `{}` at {}:{}",
            self.kernel, self.file, self.line
        )
    }
}

/// What went wrong. The message (`Display`) is the whole story; the fields say which par_loop,
/// argument, element or rank for a program that handles the error.
#[derive(Debug, Clone, thiserror::Error, PartialEq)]
#[non_exhaustive]
pub enum Error {
    /// A par_loop's arguments do not fit its kernel, its set or the device; or a Dat operation
    /// (`copy`, `axpy`, ...) was given Dats that do not fit each other.
    #[error("{message}")]
    ParLoop {
        /// The par_loops concerned: one, the loops of a fused group, or none for a Dat
        /// operation.
        par_loops: Vec<LoopSite>,
        /// The argument at fault (0-based), when one is.
        arg: Option<usize>,
        /// The message.
        message: String,
    },
    /// A kernel's WGSL does not compile or does not declare what the par_loop passes.
    #[error("{message}")]
    Kernel {
        /// The par_loop whose kernel it is, when the kernel was checked for one.
        par_loop: Option<LoopSite>,
        /// The message.
        message: String,
    },
    /// Data given to a constructor is inconsistent (sizes, map values out of range).
    #[error("{0}")]
    Data(String),
    /// No usable GPU adapter or device.
    #[error("{0}")]
    Adapter(String),
    /// The device reported an error while running recorded work.
    #[error("{0}")]
    Device(String),
    /// Checking mode found a kernel indexing one of its arguments out of range.
    #[error("{message}")]
    Check {
        /// The par_loop whose kernel indexed out of range.
        par_loop: LoopSite,
        /// The kernel argument indexed (0-based), when the index was into one (None: into a
        /// parameter of a function the kernel calls).
        arg: Option<usize>,
        /// The element of the iteration space (local index) where it happened first.
        element: usize,
        /// The index used.
        index: i64,
        /// The array's size: valid indices are 0..bound.
        bound: u32,
        /// The message.
        message: String,
    },
    /// On N ranks: another rank failed (its message is included), or the ranks' programs
    /// diverged, so this rank stops too.
    #[error("{message}")]
    Rank {
        /// The rank where the error arose (for diverged programs: the first of the two ranks
        /// named).
        rank: usize,
        /// The message.
        message: String,
    },
    /// The host used an object in a way that cannot work (e.g. a live borrow during a readback).
    #[error("{0}")]
    Usage(String),
    /// A Krylov solver stopped without a solution: it reached its iteration limit, broke down
    /// or diverged (an inexact Newton step may go on from the iterate it left).
    #[error("{message}")]
    Solver {
        /// The solver (`cg`, `bicgstab`).
        solver: &'static str,
        /// Why it stopped.
        failure: SolverFailure,
        /// The iterations it ran.
        iterations: usize,
        /// The last relative residual it read (NaN or infinite after a breakdown; a NaN makes
        /// two such errors unequal, as it makes two f64s).
        residual: f64,
        /// The message.
        message: String,
    },
    /// A file could not be read or written, or does not hold what it should.
    #[error("{message}")]
    File {
        /// The file.
        path: std::path::PathBuf,
        /// The message, naming the file.
        message: String,
    },
}

/// Why a Krylov solver stopped without a solution.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum SolverFailure {
    /// The iteration limit came with the residual above the tolerance (or, for pipelined CG,
    /// the true residual stopped falling above it).
    NotConverged,
    /// A division by zero or a value that is not finite (A singular, or not what the solver
    /// needs: CG needs a symmetric positive definite A).
    BrokeDown,
    /// The residual grew 1e10-fold.
    Diverged,
    /// The updated residual met the tolerance but the true residual b - A x, computed at the
    /// end, is far above it (or, for pipelined CG, a residual replacement found it far above
    /// what rounding explains, and not falling).
    Inaccurate,
}

impl Error {
    /// An error about the file `path`.
    pub(crate) fn file(path: &std::path::Path, message: String) -> Error {
        Error::File {
            path: path.to_path_buf(),
            message,
        }
    }
    /// A par_loop's error: its site, the argument at fault, the message.
    pub(crate) fn par_loop(site: &LoopSite, arg: Option<usize>, message: String) -> Error {
        Error::ParLoop {
            par_loops: vec![site.clone()],
            arg,
            message,
        }
    }
}

/// parloop's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;
