//! The hierarchy's construction: the matrix read back (this rank's rows), the host setup,
//! and the levels created on the device (on N ranks, each level's set distributed as the
//! setup's parts say).

use super::ranks::{self, Part};
use super::setup::{Hierarchy, Params, SetupError};
use super::{AmgOptions, AmgReport, Coarse, Level, MAX_COARSE, Restriction};
use crate::data::Sections;
use crate::linalg::chebyshev::Smoother;
use crate::linalg::{Mat, Sparsity};
use crate::{Context, Error, Real, Result, Set};
use sprs::CsMat;
use std::rc::Rc;
use web_time::Instant;

/// The matrix on the host, in f64 CSR of scalar entries (a block matrix's blocks expanded:
/// row r b + i is component i of row r): this rank's owned rows, its columns local (owned,
/// then halo).
async fn read<T: Real>(a: &Mat<T>) -> Result<CsMat<f64>> {
    let s = a.sparsity();
    let name = a.values.name();
    let rows = s.rows();
    if rows.id() != s.cols().id() {
        return Err(Error::Usage(format!(
            "AMG of Mat `{name}`: rows `{}` and columns `{}` are different sets; AMG needs a \
             square matrix on one set",
            rows.name(),
            s.cols().name()
        )));
    }
    let values = a.values.data_ro_async().await?;
    let (n, m, w, b) = (rows.size(), s.cols().total(), s.width(), a.block());
    let mut indptr = Vec::with_capacity(n * b + 1);
    let (mut indices, mut data) = (Vec::new(), Vec::new());
    indptr.push(0);
    for r in 0..n {
        for i in 0..b {
            for (k, &c) in s.row(r).iter().enumerate() {
                for j in 0..b {
                    indices.push(c as usize * b + j);
                    data.push(values[(r * w + k) * b * b + i * b + j].to_f64());
                }
            }
            indptr.push(indices.len());
        }
    }
    CsMat::try_new((n * b, m * b), indptr, indices, data)
        .map_err(|e| Error::Data(format!("AMG of Mat `{name}`: {}", e.3)))
}

pub(super) type Built<T> = (Vec<Level<T>>, Coarse<T>, AmgReport, Vec<(Vec<u32>, usize)>);

/// Reads `a`, builds the hierarchy on the host, and creates its levels on the device.
pub(super) async fn build<T: Real>(
    ctx: &Context,
    a: &Mat<T>,
    o: &AmgOptions,
    reuse: Option<&[(Vec<u32>, usize)]>,
) -> Result<Built<T>> {
    let name = a.values.name().to_string();
    let wrong = [
        (o.degree == 0, "degree must be at least 1"),
        (o.max_levels == 0, "max_levels must be at least 1"),
        (
            !(o.lower > 0.0 && o.lower < 1.0),
            "lower must lie in (0, 1)",
        ),
        (
            !(o.theta >= 0.0 && o.theta <= 1.0),
            "theta must lie in [0, 1]",
        ),
        (o.max_coarse == 0, "max_coarse must be at least 1"),
        (
            o.max_coarse > MAX_COARSE,
            "max_coarse must be at most 256 (the coarsest level is inverted densely)",
        ),
    ];
    if let Some((_, why)) = wrong.iter().find(|w| w.0) {
        return Err(Error::Usage(format!(
            "AMG of Mat `{name}`: {why}; got {o:?}"
        )));
    }
    let t0 = Instant::now();
    let host = read(a).await?;
    let read_s = t0.elapsed().as_secs_f64();
    let t1 = Instant::now();
    let nb = a.block();
    let params = Params {
        theta: o.theta,
        max_coarse: o.max_coarse,
        max_levels: o.max_levels,
        // The coarsest inverse's rows are as wide as its unknowns, in values: at most
        // MAX_COARSE of them whatever the block.
        max_dense: MAX_COARSE / nb,
        ..Params::default()
    };
    let fine = a.sparsity().rows().clone();
    // A matrix on sets of one process is this process's alone, whatever the other ranks do.
    let (part, comm) = match fine.halo() {
        Some(h) => (Part::of(fine.size(), h), ctx.comm().clone()),
        None => (Part::single(fine.size()), crate::part::Comm::single()),
    };
    let word = |e: SetupError| {
        let at = |i: usize| match nb {
            1 => format!("AMG of Mat `{name}`: row {i}"),
            _ => format!("AMG of Mat `{name}`: row {}, component {}", i / nb, i % nb),
        };
        Error::Data(match e {
            SetupError::ZeroDiagonal(i) => format!(
                "{} has no nonzero diagonal entry: smoothing divides by it (a row of zeros, or \
                 a node no element reaches, needs a 1 on its diagonal: Mat::zero_rows)",
                at(i)
            ),
            SetupError::NotFinite(i) => format!("{} has an entry that is not finite", at(i)),
            SetupError::NotSquare(r, c) => {
                format!("AMG of Mat `{name}`: {r} rows and {c} columns; AMG needs a square matrix")
            }
            SetupError::Indefinite(lo, hi) => format!(
                "AMG of Mat `{name}`: D^-1 A has eigenvalues of both signs (about {lo:.3e} to \
                 {hi:.3e}), which smoothing cannot damp: AMG needs a definite matrix (BiCGStab \
                 with Jacobi for this one)"
            ),
            SetupError::CoarseTooLarge {
                unknowns,
                levels,
                stalled,
            } => {
                let why = if stalled && comm.size() > 1 {
                    format!(
                        "on {} ranks aggregates stay within a rank, and this partition leaves \
                         too few of a rank's unknowns strongly connected to each other: \
                         partition the mesh into compact parts (METIS, PT-Scotch) or \
                         precondition by Chebyshev",
                        comm.size()
                    )
                } else if stalled {
                    format!(
                        "too few of its unknowns are strongly connected both ways (a_ij and \
                         a_ji nonzero) to aggregate: AMG does not apply to a diagonal or \
                         one-sided matrix (precondition it by Jacobi){}",
                        if o.theta > 0.0 {
                            ", or lower theta"
                        } else {
                            ""
                        }
                    )
                } else {
                    "raise max_levels".to_string()
                };
                format!(
                    "AMG of Mat `{name}`: coarsening stopped at {unknowns} unknowns after \
                     {levels} levels, too many for the coarsest level's dense inverse (at most \
                     {}): {why}",
                    MAX_COARSE / nb
                )
            }
            SetupError::Unsymmetric(i) => format!(
                "AMG of Mat `{name}`: row {i} of a restriction reaches an unknown its rank \
                 does not hold: on N ranks AMG needs a matrix whose pattern is symmetric (a_ij \
                 stored where a_ji is) across the ranks' interfaces"
            ),
            SetupError::SingularCoarse(n) => format!(
                "AMG of Mat `{name}`: the coarsest level ({n} unknowns) is singular and not \
                 symmetric, so it has no inverse"
            ),
        })
    };
    let h = Hierarchy::new(host, part, nb, &params, reuse, (&comm, &word))?;
    let setup_s = t1.elapsed().as_secs_f64();
    let t2 = Instant::now();
    let sizes = h.sizes.clone();
    // The finest, each coarser level's, and the coarsest (the finest itself when there is
    // no other level: one process only).
    let mut sets = vec![fine.clone()];
    let parts = h.levels.iter().skip(1).map(|l| &l.part);
    let coarsest = (!h.levels.is_empty()).then_some(&h.coarse);
    for (k, part) in parts.chain(coarsest).enumerate() {
        let label = format!("{name} AMG level {}", k + 1);
        sets.push(level_set(ctx, &fine, &label, part));
    }
    let mut levels = Vec::with_capacity(h.levels.len());
    for (k, l) in h.levels.iter().enumerate() {
        let (set, next) = (&sets[k], &sets[k + 1]);
        let label = |what: &str| format!("{name} AMG level {k} {what}");
        let tv = |v: &[f64]| v.iter().map(|&x| T::from_f64(x)).collect::<Vec<T>>();
        let vector = |what: &str| ctx.dat_zeros::<T>(&label(what), set, nb);
        let interval = (o.lower * l.rho, l.rho);
        let dinv = ctx.dat(&label("1/diagonal"), set, nb, &tv(&l.dinv))?;
        levels.push(Level {
            a: (k > 0)
                .then(|| upload(ctx, &label("A"), (set, set), &l.a, nb))
                .transpose()?,
            p: upload(ctx, &label("P"), (set, next), &l.p, nb)?,
            r: Restriction::new(ctx, &label("R"), (set, next), &l.r, nb)?,
            smoother: Smoother::new(ctx, &label("level"), set, dinv, o.degree, interval)?,
            b: (k > 0).then(|| vector("b")).transpose()?,
            x: (k > 0).then(|| vector("x")).transpose()?,
            q: vector("q")?,
            res: vector("r")?,
        });
    }
    let last = sets.last().expect("at least the finest");
    let (n, m) = (h.coarse.owned * nb, h.coarse.total() * nb);
    let dense = CsMat::new(
        (n, m),
        (0..=n).map(|i| i * m).collect(),
        (0..n * m).map(|j| j % m).collect(),
        h.inverse.clone(),
    );
    let coarse = Coarse {
        inverse: upload(
            ctx,
            &format!("{name} AMG coarsest inverse"),
            (last, last),
            &dense,
            nb,
        )?,
        b: ctx.dat_zeros::<T>(&format!("{name} AMG coarsest b"), last, nb)?,
        x: ctx.dat_zeros::<T>(&format!("{name} AMG coarsest x"), last, nb)?,
    };
    let nnz: usize = sizes.iter().map(|s| s.1).sum();
    let report = AmgReport {
        operator_complexity: nnz as f64 / sizes[0].1.max(1) as f64,
        levels: sizes,
        read_s,
        setup_s,
        upload_s: t2.elapsed().as_secs_f64(),
        reused: reuse.is_some(),
    };
    Ok((levels, coarse, report, h.aggregates))
}

/// The set of a level above the finest: of one process, or (when the finest is distributed)
/// distributed as `part` says. Collective on N ranks.
fn level_set(ctx: &Context, fine: &Set, name: &str, part: &Part) -> Set {
    if fine.halo().is_none() {
        return Set::new(name, part.owned);
    }
    let halo = part.total() - part.owned;
    let shared = ranks::count(ctx.comm(), halo) > 0;
    // No core section: every owned element counts as one that may read the halo.
    let sections = Sections {
        core: 0,
        owned: part.owned,
        exec_halo: 0,
        nonexec_halo: halo,
    };
    Set::distributed(name, sections, part.halo(shared))
}

/// A host CSR matrix of scalar entries as a [`Mat`] of `b` x `b` blocks on `rows` x `cols`
/// (scalar row r is component r % b of node r / b, and so for columns).
pub(super) fn upload<T: Real>(
    ctx: &Context,
    name: &str,
    (rows, cols): (&Set, &Set),
    m: &CsMat<f64>,
    b: usize,
) -> Result<Mat<T>> {
    // Halo rows (on N ranks) stay empty: their values are never read.
    let mut lists: Vec<Vec<u32>> = vec![Vec::new(); rows.total()];
    for (r, row) in m.outer_iterator().enumerate() {
        lists[r / b].extend(row.indices().iter().map(|&c| (c / b) as u32));
    }
    for l in &mut lists {
        l.sort_unstable();
        l.dedup();
    }
    let s = Rc::new(Sparsity::from_rows(ctx, name, rows, cols, lists.clone())?);
    let (w, bb) = (s.width(), b * b);
    let mut values = vec![T::from_f64(0.0); rows.size() * w * bb];
    for (r, row) in m.outer_iterator().enumerate() {
        let (node, i) = (r / b, r % b);
        for (c, &v) in row.iter() {
            let k = lists[node]
                .binary_search(&((c / b) as u32))
                .expect("the node's columns include each of its rows'");
            values[(node * w + k) * bb + i * b + c % b] = T::from_f64(v);
        }
    }
    let mut mat = Mat::blocked(ctx, name, &s, b)?;
    mat.values.set_data(&values)?;
    Ok(mat)
}
