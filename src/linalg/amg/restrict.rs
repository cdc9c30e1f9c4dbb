//! Multigrid's restriction R = P^T, as a product of short rows: R's rows are long in 3-D
//! (hundreds of entries) and a sparse product's kernel is as wide as its longest row.

use super::build::upload;
use crate::data::Reach;
use crate::data::Sections;
use crate::data::halo::Halo;
use crate::linalg::Mat;
use crate::{Context, Dat, Kernel, Map, Real, Result, Set};
use sprs::CsMat;

/// Restriction R = P^T, in chunks. R's rows (one per coarse unknown) are long in 3-D (hundreds
/// of entries), and a product's kernel is as wide as the longest row (which lavapipe took
/// minutes to compile at 200): each row is split into chunks of at most `CHUNK` entries,
/// multiplied as the rows of `chunks`, and the chunks summed per coarse unknown through `of`.
/// Where no row is longer than a chunk, `chunks` is R itself and there is nothing to sum.
pub(super) struct Restriction<T: Real> {
    chunks: Mat<T>,
    sum: Option<Sum<T>>,
}

/// The sum of a split R's chunks per coarse unknown.
struct Sum<T: Real> {
    /// Coarse unknown -> its chunks (arity: the most chunks of a row; padding repeats).
    of: Map,
    /// Chunks per coarse unknown.
    count: Dat<u32>,
    /// Each chunk's sum.
    sums: Dat<T>,
}

/// The most entries of a chunk of R's rows (4 in the unit tests, so that their small
/// hierarchies split rows and the cycle's comparison with the host model covers the sum).
#[cfg(not(test))]
const CHUNK: usize = 32;
#[cfg(test)]
const CHUNK: usize = 4;

impl<T: Real> Restriction<T> {
    /// R from this level (`fine`) to the next (`coarse`), on the host (scalar entries, `b`
    /// unknowns per node; the coarse level's owned rows, the fine level's local columns):
    /// node rows split into chunks of node columns.
    pub(super) fn new(
        ctx: &Context,
        label: &str,
        (fine, coarse): (&Set, &Set),
        r: &CsMat<f64>,
        b: usize,
    ) -> Result<Self> {
        let (mut indptr, mut indices, mut data) = (vec![0usize], Vec::new(), Vec::new());
        let mut of: Vec<Vec<u32>> = Vec::with_capacity(coarse.size());
        for node in 0..coarse.size() {
            let rows: Vec<_> = (0..b)
                .map(|i| r.outer_view(node * b + i).unwrap())
                .collect();
            let mut cols: Vec<usize> = rows
                .iter()
                .flat_map(|row| row.indices().iter().map(|&c| c / b))
                .collect();
            cols.sort_unstable();
            cols.dedup();
            let mut mine = Vec::new();
            // A chunk's kernel holds its node columns' blocks: CHUNK values at most.
            for chunk in cols.chunks((CHUNK / (b * b)).max(1)) {
                mine.push(((indptr.len() - 1) / b) as u32);
                let (lo, hi) = (chunk[0] * b, (chunk[chunk.len() - 1] + 1) * b);
                for row in &rows {
                    for (c, &v) in row.iter().filter(|&(c, _)| c >= lo && c < hi) {
                        indices.push(c);
                        data.push(v);
                    }
                    indptr.push(indices.len());
                }
            }
            if cols.is_empty() {
                mine.push(((indptr.len() - 1) / b) as u32);
                (0..b).for_each(|_| indptr.push(indices.len()));
            }
            of.push(mine);
        }
        if of.is_empty() && coarse.total() > 0 {
            // A rank that owns no coarse unknown but holds some in its halo (the coarsest
            // level's): one empty chunk, so that the halo rows' map has a target.
            (0..b).for_each(|_| indptr.push(0));
        }
        let n = (indptr.len() - 1) / b;
        let m = CsMat::new((n * b, fine.total() * b), indptr, indices, data);
        let g = of.iter().map(Vec::len).max().unwrap_or(1).max(1);
        // Every rank records the same loops: the widest split over the ranks decides.
        let g = match coarse.halo() {
            Some(_) => ctx.comm().min_max(g as u64, &format!("{label}: chunks"))?.1 as usize,
            None => g,
        };
        if g == 1 {
            // One chunk per row: R itself.
            let chunks = upload(ctx, label, (coarse, fine), &m, b)?;
            return Ok(Restriction { chunks, sum: None });
        }
        let set = chunk_set(ctx, &format!("{label} chunks"), coarse, n);
        let chunks = upload(ctx, label, (&set, fine), &m, b)?;
        let flat: Vec<u32> = of
            .iter()
            .flat_map(|c| {
                let last = c.last().copied().unwrap_or(0);
                c.iter().copied().chain(std::iter::repeat(last)).take(g)
            })
            .collect();
        let counts: Vec<u32> = of.iter().map(|c| c.len() as u32).collect();
        let name = format!("{label} chunks of");
        let of = match coarse.halo() {
            None => Map::new(name, coarse, &set, g, &flat)?,
            Some(_) => {
                // Halo rows are never run: any chunk.
                let mut flat = flat;
                flat.resize(coarse.total() * g, 0);
                let built = Map::derived(name, coarse, &set, g, &flat, Reach::Owned);
                ctx.comm()
                    .agree(built, &format!("{label}: the chunks' map"))?
            }
        };
        let sum = Sum {
            of,
            count: ctx.dat(&format!("{label} chunk counts"), coarse, 1, &counts)?,
            sums: ctx.dat_zeros::<T>(&format!("{label} chunk sums"), &set, b)?,
        };
        Ok(Restriction {
            chunks,
            sum: Some(sum),
        })
    }

    /// Records y = R x.
    pub(super) fn apply(&self, ctx: &Context, x: &Dat<T>, y: &Dat<T>) -> Result<()> {
        let Some(sum) = &self.sum else {
            return self.chunks.mult(ctx, x, y);
        };
        self.chunks.mult(ctx, x, &sum.sums)?;
        let (t, g, b) = (T::DTYPE, sum.of.arity(), y.dim());
        let (name, gb) = (format!("pl_amg_gather_{t}_{g}_{b}"), g * b);
        let k = Kernel::new(
            &name,
            format!(
                "fn {name}(s: ptr<function, array<{t}, {gb}>>, n: ptr<function, array<u32, 1>>, \
                 y: ptr<function, array<{t}, {b}>>) {{
    for (var c = 0u; c < {b}u; c++) {{
        var sum = {t}();
        for (var k = 0u; k < {g}u; k++) {{ if (k < (*n)[0]) {{ sum += (*s)[k * {b}u + c]; }} }}
        (*y)[c] = sum;
    }}
}}
"
            ),
        );
        let args = [sum.sums.all(&sum.of).read(), sum.count.read(), y.write()];
        ctx.par_loop(&k, sum.of.from_set(), &args)
    }
}

/// The chunks' set: of one process, or on N ranks each rank's own chunks (owned, no halo),
/// numbered after the lower ranks'. Collective on N ranks.
fn chunk_set(ctx: &Context, name: &str, coarse: &Set, n: usize) -> Set {
    if coarse.halo().is_none() {
        return Set::new(name, n);
    }
    let comm = ctx.comm();
    let counts = comm.all_gather(n as u64, &format!("{name}: counts"));
    let first: u64 = counts[..comm.rank()].iter().sum();
    let halo = Halo {
        global: (first as u32..(first as usize + n) as u32).collect(),
        global_size: counts.iter().sum::<u64>() as usize,
        exchanges: Vec::new(),
        // Never exchanged: a chunk is read only by the rank that owns it.
        shared: false,
    };
    let sections = Sections {
        owned: n,
        ..Sections::default()
    };
    Set::distributed(name, sections, halo)
}
