//! Distribution of a mesh over ranks: what a user declares.
//!
//! [`Distribution`] (global arrays on every rank) and [`BlockMesh`] (each rank its blocks, as a
//! parallel reader gives them) declare the mesh; [`Comm`] is the communicator. Each rank then
//! holds its part: its sets numbered core | owned | exec halo | non-exec halo, its local maps,
//! and per neighbouring rank the lists of elements to send and to receive ([`Exchange`]).
//!
//! - owned: the elements the rank owns. Core elements are the owned ones whose map targets are
//!   all owned: a loop over them touches no halo data.
//! - exec halo: elements owned elsewhere that reach an element this rank owns through a map.
//!   They are executed redundantly, so an increment through a map into owned data is complete
//!   without reverse communication.
//! - non-exec halo: the other elements that owned or exec-halo elements reach through a map;
//!   they are only read.

pub(crate) mod blocks;
mod distribute;

pub use crate::data::halo::Exchange;
pub use crate::part::Comm;
pub use blocks::BlockMesh;
pub use distribute::{Distributed, Distribution, GlobalDat, GlobalMap, GlobalSet, Partitioner};
