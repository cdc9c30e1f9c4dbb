//! The nonzero pattern of a sparse matrix, built from (row map, column map) pairs as PyOP2's
//! `Sparsity` is: element e of a pair's iteration set couples row `rows[e, i]` with column
//! `cols[e, j]` for every i and j.
//!
//! Storage is CSR padded to one width (sliced ELLPACK with one slice): row r's columns, sorted
//! and unique, fill slots `r * width ..` of the nonzero set, and the rest of its slots repeat
//! its last column with a value that stays 0. A fixed width is what makes the matrix parloop
//! data: the slots are a Set, the values a Dat on it, and a row's slots and columns are Maps of
//! arity `width`, so assembly (an INC through the element -> slot map) and y = A x (a loop over
//! the rows reading through the row maps) are par_loops planned, fused and checked like any
//! other. Meshes give rows of similar length (a P1 triangle mesh: 7 on average, rarely over
//! 12); `Sparsity::fill` says how much of the padded storage holds entries.

//!
//! On N ranks (sets from one `dist::Distribution`) each rank holds the rows of its part,
//! owned and halo, in local numbering, with columns in local numbering too (halo columns
//! included). A row's pattern comes from the elements its loops run (core, owned, exec halo),
//! so an owned row is whole: assembly needs no off-rank contribution, and a halo row's partial
//! entries are never read. Columns sort owned before halo (local numbering puts them first),
//! so `mult` first runs the owned columns, which need no exchange (the overlap), then adds
//! the halo columns once x's halo has arrived. The width is the longest row over all ranks.

use crate::data::halo::Halo;
use crate::data::{Reach, Sections};
use crate::{Context, Error, Map, Result, Set};

/// A sparsity pattern over `rows` x `cols`, with the maps assembly and products use.
pub struct Sparsity {
    pub(super) name: String,
    pub(super) rows: Set,
    pub(super) cols: Set,
    pub(super) width: usize,
    /// The nonzero slots: `rows.total() * width` (on N ranks a distributed set whose sections
    /// are the rows' times the width, never exchanged).
    pub(super) slots: Set,
    /// Row -> its slots (arity `width`).
    pub(super) row_slots: Map,
    /// Row -> the column of each of its slots (arity `width`; padding repeats the last).
    pub(super) row_cols: Map,
    /// Entries (not padding) per row.
    pub(super) counts: Vec<u32>,
    /// On N ranks: per row, its entries in owned columns (the first ones), and the row ->
    /// columns map with every halo column replaced by an owned one, for the part of y = A x
    /// that needs no exchange.
    pub(super) owned: Option<(Vec<u32>, Map)>,
    /// Each row's slot holding its diagonal (`u32::MAX`: none).
    pub(super) diagonal: Vec<u32>,
    /// Per pair: the row map's and column map's ids, and element -> slots of its local matrix
    /// (arity rows' arity x columns' arity, row-major).
    pub(super) pairs: Vec<(u64, u64, Map)>,
}

/// The elements of `set` whose loops run (core, owned and exec halo): their map rows are this
/// rank's to read; the non-exec halo's may point off the rank.
fn run(set: &Set) -> usize {
    match set.halo() {
        Some(_) => set.size() + set.sections().exec_halo,
        None => set.total(),
    }
}

impl Sparsity {
    /// The pattern of `rows` x `cols` from `pairs` of (row map into `rows`, column map into
    /// `cols`) over one iteration set each; a square pattern (rows and columns one set) holds
    /// every diagonal entry too. On N ranks every rank calls it with its part of the same
    /// sets and maps (a collective call). A map into another set, a pair over two iteration
    /// sets, sets of which one is distributed and the other not, empty sets and a row so long
    /// that padding every row to it would take over 16 times the entries (and 256 wide) are
    /// errors naming them, on every rank.
    pub fn new(
        ctx: &Context,
        name: &str,
        rows: &Set,
        cols: &Set,
        pairs: &[(&Map, &Map)],
    ) -> Result<Sparsity> {
        let pattern = Pattern::new(name, rows, cols, pairs);
        if rows.halo().is_none() {
            // Sets of this process: nothing collective, whatever the other ranks do.
            let p = pattern?;
            let width = p.width;
            return p.build(name, rows, cols, pairs, width);
        }
        let what = format!("Sparsity `{name}`");
        let width = pattern.as_ref().map_or(1, |p| p.width);
        // One width on every rank: the slots' global numbering and the kernels agree.
        let (_, width) = ctx.comm().min_max(width as u64, &what)?;
        let p = ctx.comm().agree(pattern, &what)?;
        let built = p.build(name, rows, cols, pairs, width as usize);
        ctx.comm().agree(built, &what)
    }

    /// A pattern given row by row (each row's columns sorted and unique; on N ranks every
    /// local row, halo rows included, in local numbering): the matrices the library builds
    /// itself (AMG's levels). Collective on distributed sets.
    pub(crate) fn from_rows(
        ctx: &Context,
        name: &str,
        rows: &Set,
        cols: &Set,
        lists: Vec<Vec<u32>>,
    ) -> Result<Sparsity> {
        let width = lists[..rows.size()]
            .iter()
            .map(Vec::len)
            .max()
            .unwrap_or(1)
            .max(1);
        if rows.halo().is_none() {
            return Pattern { lists, width }.build(name, rows, cols, &[], width);
        }
        let what = format!("Sparsity `{name}`");
        let (_, width) = ctx.comm().min_max(width as u64, &what)?;
        let built = Pattern {
            lists,
            width: width as usize,
        }
        .build(name, rows, cols, &[], width as usize);
        ctx.comm().agree(built, &what)
    }

    /// Entries in the pattern (not counting padding); on N ranks, in this rank's owned rows.
    pub fn nnz(&self) -> usize {
        self.counts[..self.rows.size()]
            .iter()
            .map(|&c| c as usize)
            .sum()
    }
    /// The padded width: the longest row's entries (on N ranks, over all ranks).
    pub fn width(&self) -> usize {
        self.width
    }
    /// The share of the padded storage that holds entries (1: no padding); on N ranks, of
    /// this rank's owned rows.
    pub fn fill(&self) -> f64 {
        self.nnz() as f64 / (self.rows.size().max(1) * self.width) as f64
    }
    /// The rows.
    pub fn rows(&self) -> &Set {
        &self.rows
    }
    /// The columns.
    pub fn cols(&self) -> &Set {
        &self.cols
    }
    /// Row `r`'s columns, sorted (on N ranks, in local numbering; a halo row's list holds
    /// only what this rank's elements give it).
    pub fn row(&self, r: usize) -> &[u32] {
        let v = &self.row_cols.values()[r * self.width..(r + 1) * self.width];
        &v[..self.counts[r] as usize]
    }
}

/// The sorted, unique columns of each local row, before storage.
struct Pattern {
    lists: Vec<Vec<u32>>,
    /// The longest row here (at least 1).
    width: usize,
}

impl Pattern {
    fn new(name: &str, rows: &Set, cols: &Set, pairs: &[(&Map, &Map)]) -> Result<Pattern> {
        let wrong = |why: String| Err(Error::Data(format!("Sparsity `{name}`: {why}")));
        let size = |s: &Set| s.halo().map_or(s.size(), |h| h.global_size);
        if size(rows) == 0 || size(cols) == 0 {
            return wrong(format!(
                "rows `{}` ({}) and columns `{}` ({}) must not be empty",
                rows.name(),
                size(rows),
                cols.name(),
                size(cols)
            ));
        }
        let distributed = rows.halo().is_some();
        if cols.halo().is_some() != distributed
            || (!distributed && (rows.total() != rows.size() || cols.total() != cols.size()))
        {
            return wrong(format!(
                "rows `{}` and columns `{}` must both come from one Distribution, or both be \
                 sets of one process without halo sections",
                rows.name(),
                cols.name()
            ));
        }
        if pairs.is_empty() {
            return wrong("give at least one (row map, column map) pair".into());
        }
        let mut lists: Vec<Vec<u32>> = vec![Vec::new(); rows.total()];
        for (k, (rm, cm)) in pairs.iter().enumerate() {
            if rm.to_set().id() != rows.id() || cm.to_set().id() != cols.id() {
                return wrong(format!(
                    "pair {k}: map `{}` goes to `{}` and map `{}` to `{}`, but the rows are \
                     `{}` and the columns `{}`",
                    rm.name(),
                    rm.to_set().name(),
                    cm.name(),
                    cm.to_set().name(),
                    rows.name(),
                    cols.name()
                ));
            }
            if rm.from_set().id() != cm.from_set().id() {
                return wrong(format!(
                    "pair {k}: map `{}` starts from `{}` but map `{}` from `{}`: a pair's maps \
                     share the iteration set",
                    rm.name(),
                    rm.from_set().name(),
                    cm.name(),
                    cm.from_set().name()
                ));
            }
            if distributed && rm.reach() == Reach::Any {
                // Its exec halo was computed from the Distribution's maps: an element of
                // another rank that reaches an owned row only through this map is not here.
                return wrong(format!(
                    "pair {k}: row map `{}` was made by Map::new on a rank's part, so the \
                     elements that reach this rank's rows through it may be on other ranks; \
                     declare it in the Distribution (Distribution::map)",
                    rm.name()
                ));
            }
            let (ra, ca, n) = (rm.arity(), cm.arity(), run(rm.from_set()));
            for (re, ce) in rm.values()[..n * ra]
                .chunks_exact(ra)
                .zip(cm.values()[..n * ca].chunks_exact(ca))
            {
                for &r in re {
                    lists[r as usize].extend_from_slice(ce);
                }
            }
        }
        let same = rows.id() == cols.id();
        for (r, l) in lists.iter_mut().enumerate() {
            // A square pattern holds every diagonal entry (a row no element reaches, such as a
            // vertex in no cell, then gets one for zero_rows).
            if same {
                l.push(r as u32);
            }
            l.sort_unstable();
            l.dedup();
        }
        let owned = rows.size();
        let (longest, width) = lists[..owned]
            .iter()
            .enumerate()
            .map(|(r, l)| (r, l.len()))
            .max_by_key(|&(_, n)| n)
            .map_or((0, 1), |(r, n)| (r, n.max(1)));
        let nnz: usize = lists[..owned].iter().map(Vec::len).sum();
        // Padded storage: every row as long as the longest. One dense row (a Lagrange
        // multiplier's) would make it quadratic.
        let padded = lists
            .len()
            .checked_mul(width)
            .filter(|&p| p < u32::MAX as usize);
        if padded.is_none_or(|p| width > 256 && p > 16 * nnz) {
            return wrong(format!(
                "row {longest} has {width} entries against {:.1} on average: padded to that \
                 width, the {} rows would take {} slots for {nnz} entries; parloop's \
                 matrices store every row at the longest row's width, so one long row (a \
                 Lagrange multiplier, a mesh pole) does not fit: eliminate it or split the \
                 operator",
                nnz as f64 / owned.max(1) as f64,
                lists.len(),
                lists.len() as u128 * width as u128
            ));
        }
        // Halo rows hold what this rank's elements give them, never read: only owned rows
        // decide the width.
        for l in &mut lists[owned..] {
            l.truncate(width);
        }
        Ok(Pattern { lists, width })
    }

    /// The storage at `width` (the longest row over the ranks): the slots, the row maps and
    /// each pair's element -> slots map.
    fn build(
        self,
        name: &str,
        rows: &Set,
        cols: &Set,
        pairs: &[(&Map, &Map)],
        width: usize,
    ) -> Result<Sparsity> {
        let lists = self.lists;
        let total = lists.len();
        let wrong = |why: String| Error::Data(format!("Sparsity `{name}`: {why}"));
        let slots = match rows.halo() {
            None => Set::new(format!("{name} nonzeros"), total * width),
            Some(h) => {
                let sections = rows.sections();
                let global_size = h
                    .global_size
                    .checked_mul(width)
                    .filter(|&n| n < u32::MAX as usize)
                    .ok_or_else(|| {
                        wrong(format!(
                            "{} rows of width {width} take over 2^32 slots",
                            h.global_size
                        ))
                    })?;
                let scale = |n: usize| n * width;
                Set::distributed(
                    &format!("{name} nonzeros"),
                    Sections {
                        core: scale(sections.core),
                        owned: scale(sections.owned),
                        exec_halo: scale(sections.exec_halo),
                        nonexec_halo: scale(sections.nonexec_halo),
                    },
                    Halo {
                        global: h
                            .global
                            .iter()
                            .flat_map(|&g| (0..width as u32).map(move |s| g * width as u32 + s))
                            .collect(),
                        global_size,
                        exchanges: Vec::new(),
                        // Never exchanged: every slot a loop reads is of a row it runs.
                        shared: false,
                    },
                )
            }
        };
        let same = rows.id() == cols.id();
        let mut slot_values = Vec::with_capacity(total * width);
        let mut col_values = Vec::with_capacity(total * width);
        let mut diagonal = vec![u32::MAX; total];
        for (r, l) in lists.iter().enumerate() {
            // An empty row's padding points at a column of its own number (modulo the
            // columns): a plan colouring increments through the columns (A^T x) would put
            // empty rows all on column 0 in colours of their own.
            let ncols = cols.total().max(1);
            let pad = l.last().copied().unwrap_or((r % ncols) as u32);
            for s in 0..width {
                slot_values.push((r * width + s) as u32);
                col_values.push(l.get(s).copied().unwrap_or(pad));
            }
            if same {
                if let Ok(s) = l.binary_search(&(r as u32)) {
                    diagonal[r] = (r * width + s) as u32;
                }
            }
        }
        let row_slots = Map::derived(
            format!("{name} row slots"),
            rows,
            &slots,
            width,
            &slot_values,
            Reach::CoreClean,
        )?;
        let owned = match rows.halo() {
            None => None,
            Some(_) => {
                // A rank may own rows but no column (rows on cells, columns on vertices):
                // its rows' owned counts are 0, and the map is never read.
                let ncols = cols.size() as u32;
                let counts: Vec<u32> = lists
                    .iter()
                    .map(|l| l.partition_point(|&c| c < ncols) as u32)
                    .collect();
                // Halo columns (and padding) point at column 0 or the row's first: read, never
                // used (the kernel stops at the row's owned count).
                let values: Vec<u32> = col_values
                    .chunks_exact(width)
                    .map(|row| if row[0] < ncols { row[0] } else { 0 })
                    .zip(col_values.chunks_exact(width))
                    .flat_map(|(first, row)| {
                        row.iter().map(move |&c| if c < ncols { c } else { first })
                    })
                    .collect();
                let m = Map::derived(
                    format!("{name} owned columns"),
                    rows,
                    cols,
                    width,
                    &values,
                    Reach::Owned,
                )?;
                Some((counts, m))
            }
        };
        let row_cols = Map::derived(
            format!("{name} row columns"),
            rows,
            cols,
            width,
            &col_values,
            Reach::Any,
        )?;
        let mut maps = Vec::new();
        for (rm, cm) in pairs {
            let (ra, ca, n) = (rm.arity(), cm.arity(), run(rm.from_set()));
            let mut v = Vec::with_capacity(rm.from_set().total() * ra * ca);
            for (re, ce) in rm.values()[..n * ra]
                .chunks_exact(ra)
                .zip(cm.values()[..n * ca].chunks_exact(ca))
            {
                for &r in re {
                    let l = &lists[r as usize];
                    for c in ce {
                        // A halo row keeps at most `width` entries: the rest go to its last
                        // slot, never read.
                        let s = l.binary_search(c).unwrap_or(width - 1).min(width - 1);
                        v.push((r as usize * width + s) as u32);
                    }
                }
            }
            // The non-exec halo's elements never run: their slots are never touched.
            v.resize(rm.from_set().total() * ra * ca, 0);
            let reach = if rm.reach() == Reach::Any {
                Reach::Any
            } else {
                Reach::CoreClean
            };
            let m = Map::derived(
                format!("{name} slots of ({}, {})", rm.name(), cm.name()),
                rm.from_set(),
                &slots,
                ra * ca,
                &v,
                reach,
            )?;
            maps.push((rm.id(), cm.id(), m));
        }
        Ok(Sparsity {
            name: name.to_string(),
            rows: rows.clone(),
            cols: cols.clone(),
            width,
            slots,
            row_slots,
            row_cols,
            counts: lists.iter().map(|l| l.len() as u32).collect(),
            owned,
            diagonal,
            pairs: maps,
        })
    }
}
