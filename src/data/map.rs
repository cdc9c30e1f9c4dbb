//! Maps between sets: values checked when made, injectivity computed once (or given, for a
//! rank's part of a distributed map).

use super::{Set, next_id};
use crate::error::{Error, Result};
use std::cell::OnceCell;
use std::rc::Rc;

pub(crate) struct MapInner {
    pub id: u64,
    pub name: String,
    pub from: Set,
    pub to: Set,
    pub arity: usize,
    pub values: Vec<u32>,
    /// Per index j: whether column j is injective; then whether all columns together are.
    injective: OnceCell<(Vec<bool>, bool)>,
    /// What the rows of a distributed `from` set reach (see [`Reach`]).
    pub reach: Reach,
}

/// What a map's rows reach on a distributed run, which decides whether a loop reading through
/// it may be split into `loop[core]` (before the exchange) and `loop[owned]` (seed 001).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Reach {
    /// Core rows reach core and owned targets only: the distribution defined the core with
    /// this map among its maps (or the map was derived from such maps, as a matrix's slots).
    CoreClean,
    /// Every owned row (core and owned) reaches core and owned targets only: a loop over the
    /// owned elements reading through it needs no halo (a matrix's owned columns).
    Owned,
    /// Unknown: a map made by [`Map::new`] on a part of a distributed set after the
    /// distribution, whose core rows may reach halo targets; a loop reading through it waits
    /// for its exchanges whole.
    Any,
}

/// A map from one set to another: `arity` target indices per element.
#[derive(Clone)]
pub struct Map(pub(crate) Rc<MapInner>);

impl Map {
    /// `values` holds `arity` indices into `to` for each of the `from.total()` elements of
    /// `from` (halos included); every value is checked against `to.total()`.
    ///
    /// On a rank's part of a distributed set the indices are local, and the rows of the
    /// non-exec halo (after `from.size() + from.sections().exec_halo`) are never run: any valid
    /// index will do there. Making the map is local: an error on one rank is that rank's
    /// alone, and a rank that returns it while the others go on leaves them waiting; make it
    /// every rank's with [`crate::Context::agree`].
    pub fn new(
        name: impl Into<String>,
        from: &Set,
        to: &Set,
        arity: usize,
        values: &[u32],
    ) -> Result<Map> {
        let reach = if from.halo().is_some() {
            Reach::Any
        } else {
            Reach::CoreClean
        };
        Map::checked(name.into(), from, to, arity, values, reach)
    }

    fn checked(
        name: String,
        from: &Set,
        to: &Set,
        arity: usize,
        values: &[u32],
        reach: Reach,
    ) -> Result<Map> {
        let what = || {
            format!(
                "Map `{name}` ({} -> {}, arity {arity})",
                from.name(),
                to.name()
            )
        };
        if arity == 0 {
            return Err(Error::Data(format!("{}: arity must be at least 1", what())));
        }
        let Some(expected) = from.total().checked_mul(arity) else {
            return Err(Error::Data(format!(
                "{}: {} elements x arity {arity} overflow the address space",
                what(),
                from.total()
            )));
        };
        // On a rank's part of a distributed set, `size()` counts only the owned elements.
        let local = |s: &Set| {
            if s.total() == s.size() {
                String::new()
            } else {
                format!(" local (owned and halo: Set::total; {} owned)", s.size())
            }
        };
        if values.len() != expected {
            return Err(Error::Data(format!(
                "{}: got {} values, expected {} ({}{} elements of `{}` x arity {arity})",
                what(),
                values.len(),
                expected,
                from.total(),
                local(from),
                from.name()
            )));
        }
        let limit = to.total();
        if let Some(i) = values.iter().position(|&v| v as usize >= limit) {
            return Err(Error::Data(format!(
                "{}: value {} at element {}, index {} is out of range: the target set `{}` has \
                 {limit}{} elements (valid values 0..={})",
                what(),
                values[i],
                i / arity,
                i % arity,
                to.name(),
                local(to),
                limit.saturating_sub(1)
            )));
        }
        Ok(Map(Rc::new(MapInner {
            id: next_id(),
            name,
            from: from.clone(),
            to: to.clone(),
            arity,
            values: values.to_vec(),
            injective: OnceCell::new(),
            reach,
        })))
    }
    /// A map derived by the library from a distribution's maps, with what its rows reach
    /// (checked here for [`Reach::Owned`]: an owned row reaching a halo target is an internal
    /// error; with no owned target there is nothing to reach, and the map is never read).
    pub(crate) fn derived(
        name: impl Into<String>,
        from: &Set,
        to: &Set,
        arity: usize,
        values: &[u32],
        reach: Reach,
    ) -> Result<Map> {
        let name = name.into();
        let owned = (from.size() * arity).min(values.len());
        if reach == Reach::Owned && to.size() > 0 {
            if let Some(i) = values[..owned]
                .iter()
                .position(|&v| v as usize >= to.size())
            {
                return Err(Error::Data(format!(
                    "Map `{name}`: owned row {} reaches halo element {} of `{}`: internal error",
                    i / arity.max(1),
                    values[i],
                    to.name()
                )));
            }
        }
        Map::checked(name, from, to, arity, values, reach)
    }
    /// One rank's part of a distributed map (built by `dist`): the rows its loops can run
    /// (core, owned and exec halo) are checked; the non-exec-halo rows, whose targets need not
    /// be on this rank, are never run and are stored as given. Injectivity is the global map's
    /// (`injective`), so every rank allows or refuses the same loops.
    pub(crate) fn distributed(
        name: &str,
        from: &Set,
        to: &Set,
        arity: usize,
        values: Vec<u32>,
        injective: (Vec<bool>, bool),
    ) -> Result<Map> {
        let run = from.size() + from.sections().exec_halo;
        let limit = to.total();
        if let Some(i) = values[..run * arity]
            .iter()
            .position(|&v| v as usize >= limit)
        {
            return Err(Error::Data(format!(
                "Map `{name}`: local value {} at local element {}, index {} is outside this \
                 rank's part of `{}` ({limit} elements): internal error in the distribution",
                values[i],
                i / arity,
                i % arity,
                to.name()
            )));
        }
        Ok(Map(Rc::new(MapInner {
            id: next_id(),
            name: name.to_string(),
            from: from.clone(),
            to: to.clone(),
            arity,
            values,
            injective: OnceCell::from(injective),
            reach: Reach::CoreClean,
        })))
    }
    /// The map's name, as given.
    pub fn name(&self) -> &str {
        &self.0.name
    }
    /// Targets per source element.
    pub fn arity(&self) -> usize {
        self.0.arity
    }
    /// The set the map goes from (one row of `arity` targets per element).
    pub fn from_set(&self) -> &Set {
        &self.0.from
    }
    /// The set the targets are elements of.
    pub fn to_set(&self) -> &Set {
        &self.0.to
    }
    /// The targets, `arity` per source element, row by row.
    pub fn values(&self) -> &[u32] {
        &self.0.values
    }
    /// A process-wide unique id.
    pub fn id(&self) -> u64 {
        self.0.id
    }
    /// What the map's rows reach on a distributed run.
    pub(crate) fn reach(&self) -> Reach {
        self.0.reach
    }
    /// Whether no two elements share a target at index `idx` (None: over all indices). On a
    /// rank's part of a distributed set, over the rows a loop can run (core, owned and exec
    /// halo; the non-exec-halo rows may hold placeholders): a par_loop writing through the
    /// map is allowed when every rank finds its rows injective.
    pub fn injective(&self, idx: Option<usize>) -> bool {
        let m = &self.0;
        let (cols, all) = m.injective.get_or_init(|| {
            let rows = match m.from.halo() {
                Some(_) => m.from.size() + m.from.sections().exec_halo,
                None => m.from.total(),
            };
            injectivity(&m.values[..rows * m.arity], m.arity, m.to.total())
        });
        match idx {
            Some(j) => cols[j],
            None => *all,
        }
    }
}

/// Per index j whether column j of a map's `values` is injective, then whether all columns
/// together are (targets below `targets`).
pub(crate) fn injectivity(values: &[u32], arity: usize, targets: usize) -> (Vec<bool>, bool) {
    let n = values.len() / arity.max(1);
    let mut seen = vec![u32::MAX; targets];
    let mut all = true;
    let cols = (0..arity)
        .map(|j| {
            let mut ok = true;
            for e in 0..n {
                let t = values[e * arity + j] as usize;
                if seen[t] == j as u32 {
                    ok = false;
                }
                if seen[t] != u32::MAX && seen[t] != j as u32 {
                    all = false;
                }
                seen[t] = j as u32;
            }
            all &= ok;
            ok
        })
        .collect();
    (cols, all)
}

impl std::fmt::Debug for Map {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Map({:?})", self.0.name)
    }
}
