//! The user's data model: sets, subsets, maps, data on sets (Dat), globals, constants, and the
//! arguments a par_loop takes. Values are checked when objects are made; host access (which
//! forces the lazy trace) lives in `context`.
//!
//! Owns: host copies and their validity flags. Must never: talk to the device (the runtime
//! keeps device buffers, keyed by these objects' ids).

mod arg;
pub mod halo;
mod host;
mod map;
mod residency;

pub(crate) use arg::Via;
pub use arg::{Arg, Indirect};
pub(crate) use host::{Intent, Owner};
pub use map::Map;
pub(crate) use map::{MapInner, Reach, injectivity};
pub(crate) use residency::Residency;

use crate::error::{Error, Result};
use crate::types::{Access, DType, Scalar};
use std::cell::RefCell;
use std::marker::PhantomData;
use std::rc::{Rc, Weak};
use std::sync::atomic::{AtomicU64, Ordering};

static NEXT_ID: AtomicU64 = AtomicU64::new(1);

/// A process-wide unique id for sets, maps, data, kernels.
pub(crate) fn next_id() -> u64 {
    NEXT_ID.fetch_add(1, Ordering::Relaxed)
}

/// Section bits, as seed 001 refines dependencies.
pub mod section {
    pub const CORE: u8 = 1;
    pub const OWNED: u8 = 2;
    pub const EXEC_HALO: u8 = 4;
    pub const NONEXEC_HALO: u8 = 8;
    pub const ALL: u8 = 15;
    /// Seed 001's NET(d): the messages of a halo exchange in flight (orders a HaloRecv after
    /// its HaloSend, and a reduction's end after its begin). Not storage.
    pub const NET: u8 = 16;
    pub const NAMES: [&str; 5] = ["core", "owned", "exec halo", "non-exec halo", "net"];
}

/// Element counts of a set's sections, in storage order: core elements touch no halo data,
/// owned elements may; exec-halo elements are computed redundantly; non-exec-halo elements are
/// only read. On one process everything is owned.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct Sections {
    /// Elements whose every map target is owned by this rank (a loop's core part reads no halo).
    pub core: usize,
    /// Owned elements that reach halo data through some map.
    pub owned: usize,
    /// Other ranks' elements this rank computes redundantly (they reach its owned elements).
    pub exec_halo: usize,
    /// Other ranks' elements this rank only reads.
    pub nonexec_halo: usize,
}

impl Sections {
    /// The four counts in storage order: core, owned, exec halo, non-exec halo.
    pub fn counts(&self) -> [usize; 4] {
        [self.core, self.owned, self.exec_halo, self.nonexec_halo]
    }
    /// Start offsets of the four sections and the end, in storage order.
    pub fn bounds(&self) -> [usize; 5] {
        // Saturating: a set too large for memory is refused by whatever allocates for it.
        let c = self.counts();
        let mut b = [0usize; 5];
        for i in 0..4 {
            b[i + 1] = b[i].saturating_add(c[i]);
        }
        b
    }
}

pub(crate) struct SetInner {
    pub id: u64,
    pub name: String,
    pub sections: Sections,
    /// On a distributed run: the global numbering and the exchange lists.
    pub halo: Option<Rc<halo::Halo>>,
}

/// An iteration space: cells, edges, nodes.
#[derive(Clone)]
pub struct Set(pub(crate) Rc<SetInner>);

impl Set {
    /// A set of `size` elements, all owned by this process.
    pub fn new(name: impl Into<String>, size: usize) -> Set {
        Set::with_sections(
            name,
            Sections {
                owned: size,
                ..Default::default()
            },
        )
    }
    /// A set with explicit core/owned/halo sections (what a distributed run needs).
    pub fn with_sections(name: impl Into<String>, sections: Sections) -> Set {
        Set(Rc::new(SetInner {
            id: next_id(),
            name: name.into(),
            sections,
            halo: None,
        }))
    }
    /// One rank's part of a distributed set (made by [`crate::dist::Distribution`]).
    pub(crate) fn distributed(name: &str, sections: Sections, halo: halo::Halo) -> Set {
        Set(Rc::new(SetInner {
            id: next_id(),
            name: name.to_string(),
            sections,
            halo: Some(Rc::new(halo)),
        }))
    }
    /// The global numbering and exchange lists, on a distributed run.
    pub(crate) fn halo(&self) -> Option<&Rc<halo::Halo>> {
        self.0.halo.as_ref()
    }
    /// The set's name, as given (used in messages).
    pub fn name(&self) -> &str {
        &self.0.name
    }
    /// Elements a par_loop over this set computes (core and owned): on N ranks, this rank's
    /// owned elements ([`Set::global_size`] counts them over the ranks, [`Set::total`] adds
    /// the halos).
    pub fn size(&self) -> usize {
        self.0.sections.core + self.0.sections.owned
    }
    /// On a distributed run, the global number of each local element in local order (core,
    /// owned, exec halo, non-exec halo): what a rank needs to compute its owned values for
    /// [`crate::Dat::set_data`]. None for a set that was not distributed.
    pub fn global_ids(&self) -> Option<&[u32]> {
        self.0.halo.as_ref().map(|h| &h.global[..])
    }
    /// On a distributed run, the neighbours this set exchanges halo elements with, ascending
    /// rank, with the local elements sent to and received from each (empty otherwise).
    pub fn exchanges(&self) -> &[halo::Exchange] {
        self.0.halo.as_ref().map_or(&[], |h| &h.exchanges[..])
    }
    /// Elements of the whole set: on a distributed run, over all ranks; else `size()`.
    pub fn global_size(&self) -> usize {
        self.0.halo.as_ref().map_or(self.size(), |h| h.global_size)
    }
    /// Elements stored, halos included.
    pub fn total(&self) -> usize {
        self.0.sections.bounds()[4]
    }
    /// The element counts of the set's sections (everything owned on one process).
    pub fn sections(&self) -> Sections {
        self.0.sections
    }
    /// A process-wide unique id.
    pub fn id(&self) -> u64 {
        self.0.id
    }
    pub(crate) fn same(&self, other: &Set) -> bool {
        Rc::ptr_eq(&self.0, &other.0)
    }
}

impl std::fmt::Debug for Set {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Set({:?}, {})", self.0.name, self.size())
    }
}

pub(crate) struct SubsetInner {
    pub id: u64,
    pub name: String,
    pub set: Set,
    pub indices: Vec<u32>,
    /// A part of a distributed subset that runs the exec halo: its loop's reductions count
    /// the owned elements only.
    pub exec_halo: bool,
    /// On a distributed set: the members a loop runs, owned ones and with the exec halo
    /// (made when first needed, then reused).
    pub parts: std::cell::RefCell<[Option<Subset>; 2]>,
    /// Made from global numbers on every rank (`Distributed::subset`): its exec-halo members
    /// are the ones their owners list, so a loop through a map may run them.
    pub complete: bool,
}

/// Some elements of a set (e.g. boundary nodes); a par_loop may iterate over it. Direct
/// arguments are indexed by the set element, not by the position in the subset.
#[derive(Clone)]
pub struct Subset(pub(crate) Rc<SubsetInner>);

impl Subset {
    /// Indices must be distinct elements of `set`.
    pub fn new(name: impl Into<String>, set: &Set, indices: &[u32]) -> Result<Subset> {
        let name = name.into();
        let mut seen = vec![false; set.total()];
        for (i, &e) in indices.iter().enumerate() {
            let Some(slot) = seen.get_mut(e as usize) else {
                return Err(Error::Data(format!(
                    "Subset `{name}` of `{}`: index {e} at position {i} is out of range: the set \
                     has {} elements (valid 0..={})",
                    set.name(),
                    set.total(),
                    set.total().saturating_sub(1)
                )));
            };
            if std::mem::replace(slot, true) {
                return Err(Error::Data(format!(
                    "Subset `{name}` of `{}`: element {e} appears twice (again at position {i}): \
                     subset indices must be distinct",
                    set.name()
                )));
            }
        }
        Ok(Subset::from_checked(name, set, indices.to_vec(), false))
    }
    fn from_checked(name: String, set: &Set, indices: Vec<u32>, exec_halo: bool) -> Subset {
        Subset(Rc::new(SubsetInner {
            id: next_id(),
            name,
            set: set.clone(),
            indices,
            exec_halo,
            parts: Default::default(),
            complete: false,
        }))
    }
    /// On a distributed set: the members a loop runs, in ascending order: the owned ones, and
    /// with `exec` the exec-halo ones too (as a loop over the set runs them).
    pub(crate) fn part(&self, exec: bool) -> Subset {
        if let Some(p) = &self.0.parts.borrow()[exec as usize] {
            return p.clone();
        }
        let set = &self.0.set;
        let end = set.size() + if exec { set.sections().exec_halo } else { 0 };
        let mut members: Vec<u32> = self
            .0
            .indices
            .iter()
            .copied()
            .filter(|&i| (i as usize) < end)
            .collect();
        members.sort_unstable();
        // Marked by the program's decision, not by whether this rank holds exec-halo
        // members: every rank's loop then reads and writes the same sections, and so makes
        // the same exchanges.
        let p = Subset::from_checked(self.0.name.clone(), set, members, exec);
        self.0.parts.borrow_mut()[exec as usize] = Some(p.clone());
        p
    }
    /// The subset's name, as given.
    pub fn name(&self) -> &str {
        &self.0.name
    }
    /// The set the subset selects from.
    pub fn set(&self) -> &Set {
        &self.0.set
    }
    /// The selected elements of the parent set (distinct, in iteration order). On a
    /// distributed set they are local elements in any section; a loop runs the owned ones
    /// (and the exec-halo ones when it writes through a map), in ascending order.
    pub fn indices(&self) -> &[u32] {
        &self.0.indices
    }
    /// Number of selected elements (on a distributed set, this rank's, halo ones included:
    /// counts do not add up over the ranks).
    pub fn len(&self) -> usize {
        self.0.indices.len()
    }
    /// Whether the subset selects nothing.
    pub fn is_empty(&self) -> bool {
        self.0.indices.is_empty()
    }
}

/// Where a par_loop iterates: a whole set or a subset of it.
#[derive(Clone)]
pub enum IterSpace {
    /// Every element of a set.
    Set(Set),
    /// The elements a subset lists.
    Subset(Subset),
    /// A distributed set's owned elements and its exec halo: what a loop that increments or
    /// writes through a map runs (made by `par_loop`, not by users).
    WithExecHalo(Set),
    /// A distributed set's core elements: the part of a loop that runs while its halo
    /// exchanges are in flight (made by `par_loop`).
    Core(Set),
    /// A distributed set's owned elements that are not core, and with `true` its exec halo:
    /// the part of a loop that runs after its halo exchanges (made by `par_loop`).
    Owned(Set, bool),
}

impl IterSpace {
    /// The set the loop's elements belong to.
    pub fn set(&self) -> &Set {
        match self {
            IterSpace::Set(s)
            | IterSpace::WithExecHalo(s)
            | IterSpace::Core(s)
            | IterSpace::Owned(s, _) => s,
            IterSpace::Subset(s) => &s.0.set,
        }
    }
    /// The element of the first position (positions of a set's part are a range of its
    /// elements; a subset's are listed).
    pub fn first(&self) -> usize {
        match self {
            IterSpace::Owned(s, _) => s.sections().core,
            _ => 0,
        }
    }
    /// The element at position `p`.
    pub fn element(&self, p: usize) -> usize {
        match self {
            IterSpace::Subset(s) => s.indices()[p] as usize,
            _ => self.first() + p,
        }
    }
    /// Whether the loop runs exec-halo elements (their reductions do not count).
    pub fn runs_exec_halo(&self) -> bool {
        match self {
            IterSpace::WithExecHalo(_) | IterSpace::Owned(_, true) => true,
            IterSpace::Subset(s) => s.0.exec_halo,
            _ => false,
        }
    }
    /// Number of elements the loop runs.
    pub fn len(&self) -> usize {
        match self {
            IterSpace::Set(s) => s.size(),
            IterSpace::Subset(s) => s.len(),
            IterSpace::WithExecHalo(s) => s.size() + s.sections().exec_halo,
            IterSpace::Core(s) => s.sections().core,
            IterSpace::Owned(s, exec) => {
                s.sections().owned + if *exec { s.sections().exec_halo } else { 0 }
            }
        }
    }
    /// Whether the loop runs no element.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// The subset, when the space is one.
    pub fn subset(&self) -> Option<&Subset> {
        match self {
            IterSpace::Subset(s) => Some(s),
            _ => None,
        }
    }
    /// A description for messages: the set's name, and the subset or part.
    pub fn name(&self) -> String {
        match self {
            IterSpace::Set(s) => s.name().to_string(),
            IterSpace::Subset(s) => format!("{} (subset of {})", s.name(), s.set().name()),
            IterSpace::WithExecHalo(s) => format!("{} (owned and exec halo)", s.name()),
            IterSpace::Core(s) => format!("{} (core)", s.name()),
            IterSpace::Owned(s, false) => format!("{} (owned, not core)", s.name()),
            IterSpace::Owned(s, true) => format!("{} (owned not core, and exec halo)", s.name()),
        }
    }
    /// Identifies the location: the set, and the subset if any.
    pub fn key(&self) -> (u64, u64) {
        match self {
            IterSpace::Set(s) => (s.id(), 0),
            IterSpace::Subset(s) => (s.set().id(), s.0.id),
            IterSpace::WithExecHalo(s) => (s.id(), u64::MAX),
            IterSpace::Core(s) => (s.id(), u64::MAX - 1),
            IterSpace::Owned(s, exec) => (s.id(), u64::MAX - 2 - u64::from(*exec)),
        }
    }
}

impl From<&Set> for IterSpace {
    fn from(s: &Set) -> Self {
        IterSpace::Set(s.clone())
    }
}
impl From<&Subset> for IterSpace {
    fn from(s: &Subset) -> Self {
        IterSpace::Subset(s.clone())
    }
}

/// Storage shared by Dats and Globals: a host copy, validity flags, and identity.
pub(crate) struct DataInner {
    pub id: u64,
    pub name: String,
    /// The set for a Dat, None for a Global.
    pub set: Option<Set>,
    pub dim: usize,
    pub dtype: DType,
    /// The Context that made it (forces the trace for host access).
    pub owner: Weak<dyn Owner>,
    /// Host copy as 4-byte words, two per f64 (empty until first needed).
    pub host: RefCell<Vec<u32>>,
    /// Which copy is current, whether the halo is (changed only through its transitions).
    pub state: Residency,
}

impl DataInner {
    /// Number of scalar values.
    pub fn len(&self) -> usize {
        self.set.as_ref().map_or(1, Set::total) * self.dim
    }
    /// 4-byte words per element (the host copy and messages hold words): dim, twice for f64.
    pub fn wdim(&self) -> usize {
        self.dim * self.dtype.words()
    }
    /// Words of the host copy.
    pub fn words(&self) -> usize {
        self.len() * self.dtype.words()
    }
    pub fn bytes(&self) -> u64 {
        self.words() as u64 * 4
    }
    pub fn is_global(&self) -> bool {
        self.set.is_none()
    }
    pub fn kind(&self) -> &'static str {
        if self.is_global() { "Global" } else { "Dat" }
    }
    /// Makes the host copy hold the current value when neither copy is valid (never written:
    /// zeros).
    pub fn ensure_host_zeros(&self) {
        if self.state.zeros() {
            let mut h = self.host.borrow_mut();
            h.clear();
            h.resize(self.words(), 0);
            self.state.copied_to_host();
        }
    }
}

/// Data on a set: `dim` values of type T per element.
pub struct Dat<T: Scalar> {
    pub(crate) inner: Rc<DataInner>,
    pub(crate) _t: PhantomData<T>,
}

/// A small array not attached to a set: read as a parameter, or reduced (INC, MIN, MAX).
pub struct Global<T: Scalar> {
    pub(crate) inner: Rc<DataInner>,
    pub(crate) _t: PhantomData<T>,
}

impl<T: Scalar> Drop for Dat<T> {
    fn drop(&mut self) {
        self.inner.state.dropped();
    }
}
impl<T: Scalar> Drop for Global<T> {
    fn drop(&mut self) {
        self.inner.state.dropped();
    }
}

/// A named value compiled into kernels (Airfoil's `gam`, `cfl`, `qinf`).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ConstValue {
    /// The type of the values.
    pub dtype: DType,
    /// The values as 4-byte words (bit patterns; two per f64, low word first).
    pub words: Vec<u32>,
    /// Declared as an array (even of length 1) rather than a scalar.
    pub array: bool,
}

impl ConstValue {
    /// A scalar Const.
    pub fn scalar<T: Scalar>(v: T) -> ConstValue {
        ConstValue {
            dtype: T::DTYPE,
            words: bytemuck::cast_slice(&[v]).to_vec(),
            array: false,
        }
    }
    /// An array Const (indexed in kernels as `name[i]`).
    pub fn array<T: Scalar>(v: &[T]) -> ConstValue {
        ConstValue {
            dtype: T::DTYPE,
            words: bytemuck::cast_slice(v).to_vec(),
            array: true,
        }
    }
}

impl<T: Scalar> From<T> for ConstValue {
    fn from(v: T) -> Self {
        ConstValue::scalar(v)
    }
}
impl<T: Scalar> From<&[T]> for ConstValue {
    fn from(v: &[T]) -> Self {
        ConstValue::array(v)
    }
}
impl<T: Scalar, const N: usize> From<[T; N]> for ConstValue {
    fn from(v: [T; N]) -> Self {
        ConstValue::array(&v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn map_values_are_checked_and_injectivity_is_per_column() {
        let a = Set::new("a", 3);
        let b = Set::new("b", 4);
        let e = Map::new("m", &a, &b, 2, &[0, 1, 1, 2, 2, 4]).unwrap_err();
        let msg = e.to_string();
        assert!(
            msg.contains("value 4 at element 2, index 1") && msg.contains("0..=3"),
            "{msg}"
        );
        let m = Map::new("m", &a, &b, 2, &[0, 1, 1, 2, 2, 3]).unwrap();
        assert!(m.injective(Some(0)) && m.injective(Some(1)));
        assert!(!m.injective(None));
        let m = Map::new("m", &a, &b, 1, &[0, 0, 3]).unwrap();
        assert!(!m.injective(Some(0)));
    }

    #[test]
    fn subset_rejects_duplicates_and_out_of_range() {
        let s = Set::new("s", 5);
        assert!(Subset::new("b", &s, &[0, 4]).is_ok());
        let err = |i: &[u32]| Subset::new("b", &s, i).err().unwrap().to_string();
        assert!(err(&[1, 1]).contains("twice"));
        assert!(err(&[5]).contains("position 0"));
    }
}
