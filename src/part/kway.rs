//! k-way graph partitioning of the primary set with METIS (feature `mpi`; the metis crate
//! builds METIS from source). METIS rather than a pure-Rust partitioner: the distribution
//! knows the mesh's connectivity but not its coordinates, which the geometric partitioners
//! (coupe's recursive bisections, space-filling curves) need; METIS's multilevel k-way on the
//! dual graph is what OP2 uses too.

use crate::error::{Error, Result};

/// Owners of the `xadj.len() - 1` vertices of a CSR graph in `parts` parts, balanced, with a
/// small edge cut. Deterministic for a given graph (fixed seed).
pub(crate) fn kway(xadj: &[u32], adjncy: &[u32], parts: usize) -> Result<Vec<u32>> {
    let n = xadj.len() - 1;
    if parts <= 1 || n == 0 {
        return Ok(vec![0; n]);
    }
    let to_idx = |v: &[u32]| -> Result<Vec<metis::Idx>> {
        v.iter()
            .map(|&x| metis::Idx::try_from(x))
            .collect::<std::result::Result<_, _>>()
            .map_err(|_| Error::Data("the mesh is too large for METIS's 32-bit indices".into()))
    };
    let (xadj, adjncy) = (to_idx(xadj)?, to_idx(adjncy)?);
    let mut part = vec![0 as metis::Idx; n];
    metis::Graph::new(1, parts as metis::Idx, &xadj, &adjncy)
        .map_err(|e| Error::Data(format!("METIS refused the mesh's dual graph: {e}")))?
        .set_option(metis::option::Seed(1))
        .part_kway(&mut part)
        .map_err(|e| Error::Data(format!("METIS failed to partition the mesh: {e:?}")))?;
    Ok(part.into_iter().map(|p| p as u32).collect())
}
