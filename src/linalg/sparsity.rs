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

use crate::{Error, Map, Result, Set};

/// A sparsity pattern over `rows` x `cols`, with the maps assembly and products use.
pub struct Sparsity {
    pub(super) name: String,
    pub(super) rows: Set,
    pub(super) cols: Set,
    pub(super) width: usize,
    /// The nonzero slots: `rows.size() * width`.
    pub(super) slots: Set,
    /// Row -> its slots (arity `width`).
    pub(super) row_slots: Map,
    /// Row -> the column of each of its slots (arity `width`; padding repeats the last).
    pub(super) row_cols: Map,
    /// Entries (not padding) per row.
    pub(super) counts: Vec<u32>,
    /// Each row's slot holding its diagonal (`u32::MAX`: none).
    pub(super) diagonal: Vec<u32>,
    /// Per pair: the row map's and column map's ids, and element -> slots of its local matrix
    /// (arity rows' arity x columns' arity, row-major).
    pub(super) pairs: Vec<(u64, u64, Map)>,
}

impl Sparsity {
    /// The pattern of `rows` x `cols` from `pairs` of (row map into `rows`, column map into
    /// `cols`) over one iteration set each; a square pattern (rows and columns one set) holds
    /// every diagonal entry too. A map into another set, a pair over two iteration sets, a
    /// distributed set (not supported yet), empty sets and a row so long that padding every row
    /// to it would take over 16 times the entries (and 256 wide) are errors naming them.
    pub fn new(name: &str, rows: &Set, cols: &Set, pairs: &[(&Map, &Map)]) -> Result<Sparsity> {
        let wrong = |why: String| Err(Error::Data(format!("Sparsity `{name}`: {why}")));
        if rows.size() == 0 || cols.size() == 0 {
            return wrong(format!(
                "rows `{}` ({}) and columns `{}` ({}) must not be empty",
                rows.name(),
                rows.size(),
                cols.name(),
                cols.size()
            ));
        }
        for s in [rows, cols] {
            if s.global_ids().is_some() || s.total() != s.size() {
                return wrong(format!(
                    "set `{}` is distributed or has halo sections; matrices on N ranks are not \
                     supported yet",
                    s.name()
                ));
            }
        }
        if pairs.is_empty() {
            return wrong("give at least one (row map, column map) pair".into());
        }
        let mut lists: Vec<Vec<u32>> = vec![Vec::new(); rows.size()];
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
            let (ra, ca) = (rm.arity(), cm.arity());
            for (re, ce) in rm
                .values()
                .chunks_exact(ra)
                .zip(cm.values().chunks_exact(ca))
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
        let nrows = rows.size();
        let (longest, width) = lists
            .iter()
            .enumerate()
            .map(|(r, l)| (r, l.len()))
            .max_by_key(|&(_, n)| n)
            .map_or((0, 1), |(r, n)| (r, n.max(1)));
        let nnz: usize = lists.iter().map(Vec::len).sum();
        // Padded storage: every row as long as the longest. One dense row (a Lagrange
        // multiplier's) would make it quadratic.
        let padded = nrows.checked_mul(width).filter(|&p| p < u32::MAX as usize);
        if padded.is_none_or(|p| width > 256 && p > 16 * nnz) {
            return wrong(format!(
                "row {longest} has {width} entries against {:.1} on average: padded to that \
                 width, the {nrows} rows would take {} slots for {nnz} entries; parloop's \
                 matrices store every row at the longest row's width, so one long row (a \
                 Lagrange multiplier, a mesh pole) does not fit: eliminate it or split the \
                 operator",
                nnz as f64 / nrows as f64,
                nrows as u128 * width as u128
            ));
        }
        let slots = Set::new(format!("{name} nonzeros"), nrows * width);
        let mut slot_values = Vec::with_capacity(nrows * width);
        let mut col_values = Vec::with_capacity(nrows * width);
        let mut diagonal = vec![u32::MAX; nrows];
        for (r, l) in lists.iter().enumerate() {
            let pad = l.last().copied().unwrap_or(0);
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
        let row_slots = Map::new(
            format!("{name} row slots"),
            rows,
            &slots,
            width,
            &slot_values,
        )?;
        let row_cols = Map::new(
            format!("{name} row columns"),
            rows,
            cols,
            width,
            &col_values,
        )?;
        let mut maps = Vec::new();
        for (rm, cm) in pairs {
            let (ra, ca) = (rm.arity(), cm.arity());
            let mut v = Vec::with_capacity(rm.from_set().size() * ra * ca);
            for (re, ce) in rm
                .values()
                .chunks_exact(ra)
                .zip(cm.values().chunks_exact(ca))
            {
                for &r in re {
                    let l = &lists[r as usize];
                    for c in ce {
                        let s = l
                            .binary_search(c)
                            .expect("every pair's entry is in the pattern");
                        v.push((r as usize * width + s) as u32);
                    }
                }
            }
            let m = Map::new(
                format!("{name} slots of ({}, {})", rm.name(), cm.name()),
                rm.from_set(),
                &slots,
                ra * ca,
                &v,
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
            diagonal,
            pairs: maps,
        })
    }

    /// Entries in the pattern (not counting padding).
    pub fn nnz(&self) -> usize {
        self.counts.iter().map(|&c| c as usize).sum()
    }
    /// The padded width: the longest row's entries.
    pub fn width(&self) -> usize {
        self.width
    }
    /// The share of the padded storage that holds entries (1: no padding).
    pub fn fill(&self) -> f64 {
        self.nnz() as f64 / (self.rows.size() * self.width) as f64
    }
    /// The rows.
    pub fn rows(&self) -> &Set {
        &self.rows
    }
    /// The columns.
    pub fn cols(&self) -> &Set {
        &self.cols
    }
    /// Row `r`'s columns, sorted.
    pub fn row(&self, r: usize) -> &[u32] {
        let v = &self.row_cols.values()[r * self.width..(r + 1) * self.width];
        &v[..self.counts[r] as usize]
    }
}
