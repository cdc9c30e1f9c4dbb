//! What a distributed set carries (built by `dist`): its elements' global numbers and, per
//! neighbouring rank, the elements exchanged when a Dat's halo is brought up to date.

/// The elements one rank exchanges with one neighbour for one set, as local indices: `send`
/// are owned elements the neighbour holds in its halo, `recv` are this rank's halo elements the
/// neighbour owns. Rank r's `send` to q and q's `recv` from r list the same global elements in
/// the same order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Exchange {
    /// The neighbouring rank.
    pub rank: u32,
    /// Owned elements sent to it (local indices).
    pub send: Vec<u32>,
    /// Halo elements received from it (local indices).
    pub recv: Vec<u32>,
}

/// One rank's view of a distributed set beyond its sections.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Halo {
    /// Global number of each local element, in local order.
    pub global: Vec<u32>,
    /// Elements of the whole set, on all ranks.
    pub global_size: usize,
    /// The neighbours this set exchanges with, ascending rank.
    pub exchanges: Vec<Exchange>,
    /// Whether any rank has a halo element of this set (the same on every rank, agreed when
    /// the mesh was distributed): exchanges are recorded by every rank, or by none.
    pub shared: bool,
}
