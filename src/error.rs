//! Errors. Every message says what the user did (which par_loop: kernel name and the caller's
//! file:line; which argument; which index or limit) and what to do about it.

/// What went wrong. Each variant carries the full message.
#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
pub enum Error {
    /// A par_loop's arguments do not fit its kernel, its set or the device.
    #[error("{0}")]
    ParLoop(String),
    /// A kernel's WGSL does not compile or does not declare what the par_loop passes.
    #[error("{0}")]
    Kernel(String),
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
    #[error("{0}")]
    Check(String),
    /// On N ranks: another rank failed (its message is included), so this rank stops too.
    #[error("{0}")]
    Rank(String),
    /// The host used an object in a way that cannot work (e.g. a live borrow during a readback).
    #[error("{0}")]
    Usage(String),
}

/// parloop's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;
