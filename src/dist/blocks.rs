//! A mesh that no rank holds whole: every rank declares the global sizes of the sets and its
//! block of each (the rows of the maps and the values of the Dats for elements
//! `range(set)`), as a parallel reader or generator produces them; `distribute` partitions the
//! blocks' dual graph in parallel (PT-Scotch) and moves every element to the ranks that hold
//! it by rendezvous over global ids (`part::rendezvous`). Memory per rank is proportional to
//! its block and its part.

use super::distribute::{
    GlobalDat, GlobalMap, GlobalSet, LocalDat, MapDecl, assemble, scotch_part,
};
use super::{Distributed, Partitioner};
use crate::context::Context;
use crate::error::{Error, Result};
use crate::part::rendezvous::{BlockMap, Blocks, block_start};
use crate::types::{DType, Scalar};
use std::marker::PhantomData;

/// A Dat known in blocks: this rank's block of its set's values.
pub(crate) struct BlockDat {
    pub name: String,
    pub set: usize,
    pub dim: usize,
    pub dtype: DType,
    pub words: Vec<u32>,
}

/// Global declarations of which each rank gives only its block.
///
/// Rank r's block of a set of n elements is `range(set)`: elements `ceil(r n / ranks)` up to
/// `ceil((r + 1) n / ranks)`. Every rank declares the same sets, maps and Dats in the same
/// order, each with the rows or values of its block; [`BlockMesh::distribute`] gives each
/// rank its part, the same [`Distributed`] as [`super::Distribution`] gives for the same
/// partition. On one process the block is the whole set.
pub struct BlockMesh {
    ctx: Context,
    sets: Vec<(String, usize)>,
    maps: Vec<(String, BlockMap)>,
    dats: Vec<BlockDat>,
}

impl BlockMesh {
    /// Starts declaring a mesh in blocks on `ctx`'s ranks.
    pub fn new(ctx: &Context) -> BlockMesh {
        BlockMesh {
            ctx: ctx.clone(),
            sets: Vec::new(),
            maps: Vec::new(),
            dats: Vec::new(),
        }
    }
    /// A set of `size` elements over all ranks.
    pub fn set(&mut self, name: &str, size: usize) -> GlobalSet {
        self.sets.push((name.to_string(), size));
        GlobalSet(self.sets.len() - 1)
    }
    /// The global indices of this rank's block of `set`.
    pub fn range(&self, set: GlobalSet) -> std::ops::Range<usize> {
        let (n, p, r) = (self.sets[set.0].1, self.ctx.ranks(), self.ctx.rank());
        block_start(n, p, r)..block_start(n, p, r + 1)
    }
    /// A map: `rows` holds `arity` global targets in `to` for each element of this rank's
    /// block of `from`, row-major.
    pub fn map(
        &mut self,
        name: &str,
        from: GlobalSet,
        to: GlobalSet,
        arity: usize,
        rows: Vec<u32>,
    ) -> Result<GlobalMap> {
        let checked = self.check_map(name, from, to, arity, &rows);
        self.ctx
            .agree(checked, &format!("declaring Map `{name}`"))?;
        Ok(self.push_map(name, from, to, arity, rows))
    }
    /// `map` without the ranks' agreement (a reader agrees once, at its end).
    #[cfg_attr(not(feature = "hdf5"), allow(dead_code))]
    pub(crate) fn map_here(
        &mut self,
        name: &str,
        from: GlobalSet,
        to: GlobalSet,
        arity: usize,
        rows: Vec<u32>,
    ) -> Result<GlobalMap> {
        self.check_map(name, from, to, arity, &rows)?;
        Ok(self.push_map(name, from, to, arity, rows))
    }
    fn check_map(
        &self,
        name: &str,
        from: GlobalSet,
        to: GlobalSet,
        arity: usize,
        rows: &[u32],
    ) -> Result<()> {
        let (fname, _) = &self.sets[from.0];
        let (tname, tsize) = &self.sets[to.0];
        let block = self.range(from);
        let bad = if arity == 0 || rows.len() != block.len() * arity {
            Some(format!(
                "got {} values on rank {}, expected {} (its block of `{fname}`, elements {}..{}, \
                 x arity {arity}, arity at least 1)",
                rows.len(),
                self.ctx.rank(),
                block.len() * arity,
                block.start,
                block.end
            ))
        } else {
            rows.iter()
                .enumerate()
                .find(|(_, v)| **v as usize >= *tsize)
                .map(|(k, v)| {
                    format!(
                        "value {v} at element {}, index {} is outside `{tname}` (size {tsize})",
                        block.start + k / arity,
                        k % arity
                    )
                })
        };
        match bad {
            Some(why) => Err(Error::Data(format!("Map `{name}`: {why}"))),
            None => Ok(()),
        }
    }
    fn push_map(
        &mut self,
        name: &str,
        from: GlobalSet,
        to: GlobalSet,
        arity: usize,
        rows: Vec<u32>,
    ) -> GlobalMap {
        let m = BlockMap {
            from: from.0,
            to: to.0,
            arity,
            rows,
        };
        self.maps.push((name.to_string(), m));
        GlobalMap(self.maps.len() - 1)
    }
    /// A Dat: `dim` values per element of this rank's block of `set`.
    pub fn dat<T: Scalar>(
        &mut self,
        name: &str,
        set: GlobalSet,
        dim: usize,
        values: &[T],
    ) -> Result<GlobalDat<T>> {
        let block = self.range(set);
        let checked = if dim == 0 || values.len() != block.len() * dim {
            Err(Error::Data(format!(
                "Dat `{name}`: got {} values on rank {}, expected {} (its block of `{}`, \
                 elements {}..{}, x dim {dim}, dim at least 1)",
                values.len(),
                self.ctx.rank(),
                block.len() * dim,
                self.sets[set.0].0,
                block.start,
                block.end
            )))
        } else {
            Ok(())
        };
        self.ctx
            .agree(checked, &format!("declaring Dat `{name}`"))?;
        self.dats.push(BlockDat {
            name: name.to_string(),
            set: set.0,
            dim,
            dtype: T::DTYPE,
            words: bytemuck::cast_slice(values).to_vec(),
        });
        Ok(GlobalDat(self.dats.len() - 1, PhantomData))
    }

    /// The set declared as `name`.
    pub fn find_set(&self, name: &str) -> Option<GlobalSet> {
        self.sets.iter().position(|s| s.0 == name).map(GlobalSet)
    }
    /// The map declared as `name`.
    pub fn find_map(&self, name: &str) -> Option<GlobalMap> {
        self.maps.iter().position(|m| m.0 == name).map(GlobalMap)
    }
    /// The Dat declared as `name`, if it holds `T` values.
    pub fn find_dat<T: Scalar>(&self, name: &str) -> Option<GlobalDat<T>> {
        let k = self
            .dats
            .iter()
            .position(|d| d.name == name && d.dtype == T::DTYPE)?;
        Some(GlobalDat(k, PhantomData))
    }
    /// The set, dim and type of the Dat named `name`, if there is one.
    #[cfg_attr(not(feature = "hdf5"), allow(dead_code))]
    pub(crate) fn dat_shape(&self, name: &str) -> Option<(GlobalSet, usize, DType)> {
        let d = self.dats.iter().find(|d| d.name == name)?;
        Some((GlobalSet(d.set), d.dim, d.dtype))
    }
    /// This rank's block of a map's rows (global targets).
    #[cfg_attr(not(feature = "hdf5"), allow(dead_code))]
    pub(crate) fn map_rows(&self, m: GlobalMap) -> &[u32] {
        &self.maps[m.0].1.rows
    }
    /// This rank's block of the values of the Dat named `name`, as words.
    #[cfg_attr(not(feature = "hdf5"), allow(dead_code))]
    pub(crate) fn dat_block(&self, name: &str) -> Option<&[u32]> {
        self.dats
            .iter()
            .find(|d| d.name == name)
            .map(|d| &d.words[..])
    }
    /// A set's name.
    #[cfg_attr(not(feature = "hdf5"), allow(dead_code))]
    pub(crate) fn set_name(&self, s: GlobalSet) -> &str {
        &self.sets[s.0].0
    }
    /// A map's source, target and arity.
    #[cfg_attr(not(feature = "hdf5"), allow(dead_code))]
    pub(crate) fn map_shape(&self, m: GlobalMap) -> (GlobalSet, GlobalSet, usize) {
        let b = &self.maps[m.0].1;
        (GlobalSet(b.from), GlobalSet(b.to), b.arity)
    }
    /// Keeps the Dats named in `names` only, each as u32 words (dim times its type's words):
    /// what a reader that needs their host values moves, on any adapter (f64 included).
    #[cfg_attr(not(feature = "hdf5"), allow(dead_code))]
    pub(crate) fn keep_dats_as_words(&mut self, names: &[&str]) {
        self.dats.retain(|d| names.contains(&d.name.as_str()));
        for d in &mut self.dats {
            d.dim *= d.dtype.words();
            d.dtype = DType::U32;
        }
    }
    /// The names and global sizes of the sets, in declaration order.
    pub fn sets(&self) -> impl Iterator<Item = (&str, usize)> {
        self.sets.iter().map(|(n, s)| (n.as_str(), *s))
    }
    #[cfg_attr(not(feature = "hdf5"), allow(dead_code))]
    pub(crate) fn context(&self) -> &Context {
        &self.ctx
    }
    #[cfg_attr(not(feature = "hdf5"), allow(dead_code))]
    pub(crate) fn block_maps(&self) -> impl Iterator<Item = (&str, &BlockMap)> {
        self.maps.iter().map(|(n, m)| (n.as_str(), m))
    }
    #[cfg_attr(not(feature = "hdf5"), allow(dead_code))]
    pub(crate) fn block_dats(&self) -> &[BlockDat] {
        &self.dats
    }
    /// A Dat of a type known at run time (a file's), `words` its block's values.
    #[cfg_attr(not(feature = "hdf5"), allow(dead_code))]
    pub(crate) fn dat_words(
        &mut self,
        name: &str,
        set: GlobalSet,
        dim: usize,
        dtype: DType,
        words: Vec<u32>,
    ) -> Result<()> {
        let expected = self.range(set).len() * dim * dtype.words();
        if dim == 0 || words.len() != expected {
            return Err(Error::Data(format!(
                "Dat `{name}`: got {} words on rank {}, expected {expected}",
                words.len(),
                self.ctx.rank()
            )));
        }
        self.dats.push(BlockDat {
            name: name.to_string(),
            set: set.0,
            dim,
            dtype,
            words,
        });
        Ok(())
    }

    /// Partitions `primary` with `partitioner` (`Scotch`, `Block` or `Owners`; `KWay` needs
    /// the global graph) and builds this rank's part. Collective: an error on any rank is an
    /// error on every rank.
    pub fn distribute(self, primary: GlobalSet, partitioner: Partitioner) -> Result<Distributed> {
        let ctx = self.ctx.clone();
        // Tagged before the distribution's own collectives.
        ctx.agree(Ok(()), "distributing the mesh (BlockMesh::distribute)")?;
        let out = distribute_blocks(&ctx, self, primary.0, partitioner);
        ctx.agree(out, "distributing the mesh")
    }
}

/// Checks that every rank declared the same sets, maps and Dats (a hash compared over the
/// ranks: each rank's blocks are found from the global sizes, so sizes that differ would send
/// ids to the wrong ranks) and that every size fits parloop's 32-bit element ids.
fn same_declarations(ctx: &Context, mesh: &BlockMesh) -> Result<()> {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    mesh.sets.hash(&mut h);
    for (name, m) in &mesh.maps {
        (name, m.from, m.to, m.arity).hash(&mut h);
    }
    for d in &mesh.dats {
        (&d.name, d.set, d.dim, d.dtype.words()).hash(&mut h);
    }
    let what = "comparing the ranks' declarations";
    let (lo, hi) = ctx.comm().min_max(h.finish(), what)?;
    if lo != hi {
        return Err(Error::Usage(format!(
            "distributing the mesh: rank {} of {} declared other sets, maps or Dats than \
             another rank (names, global sizes, arities, dims and types must be the same on \
             every rank; only the blocks' values differ)",
            ctx.rank(),
            ctx.ranks()
        )));
    }
    if let Some((name, n)) = mesh.sets.iter().find(|s| s.1 >= u32::MAX as usize) {
        return Err(Error::Data(format!(
            "set `{name}` has {n} elements; parloop numbers elements with 32-bit ids (fewer \
             than 4294967295 per set)"
        )));
    }
    Ok(())
}

/// This rank's part of a mesh known in blocks: the dual graph built and partitioned in
/// blocks, owners derived and the part built by rendezvous, Dats fetched by global id.
fn distribute_blocks(
    ctx: &Context,
    mesh: BlockMesh,
    primary: usize,
    partitioner: Partitioner,
) -> Result<Distributed> {
    let t0 = crate::util::now_ms();
    let (ranks, rank) = (ctx.ranks(), ctx.rank());
    same_declarations(ctx, &mesh)?;
    let (map_names, maps): (Vec<String>, Vec<BlockMap>) = mesh.maps.into_iter().unzip();
    let blocks = Blocks {
        comm: ctx.comm(),
        sizes: mesh.sets,
        maps,
    };
    let (name, n) = blocks.sizes[primary].clone();
    let range = blocks.range(primary);
    let mut phases = Vec::new();
    let mut lap = {
        let mut t = t0;
        move |name: &'static str, phases: &mut Vec<(&'static str, f64)>| {
            let now = crate::util::now_ms();
            phases.push((name, now - t));
            t = now;
        }
    };
    let (xadj, adjncy) = blocks.dual_graph(primary);
    lap("dual graph", &mut phases);
    let owners0 = match partitioner {
        Partitioner::Block => vec![rank as u32; range.len()],
        Partitioner::Owners(o) => {
            let bad = if o.len() != n {
                Some(format!(
                    "has {} owners for the {n} elements of `{name}`",
                    o.len()
                ))
            } else {
                o.iter()
                    .find(|&&r| r as usize >= ranks)
                    .map(|r| format!("names rank {r}, but there are {ranks}"))
            };
            let checked = match bad {
                Some(why) => Err(Error::Data(format!(
                    "distributing the mesh: the partition {why}"
                ))),
                None => Ok(o[range.clone()].to_vec()),
            };
            ctx.agree(checked, "checking the partition")?
        }
        Partitioner::KWay => {
            return Err(Error::Usage(
                "Partitioner::KWay partitions the global graph on rank 0, which a mesh given \
                 in blocks never has: use Partitioner::Scotch (PT-Scotch, parallel)"
                    .into(),
            ));
        }
        Partitioner::Scotch => scotch_part(ctx, &xadj, &adjncy)?,
    };
    lap("partition", &mut phases);
    let edge_cut = blocks.edge_cut(primary, &xadj, &adjncy, &owners0);
    drop((xadj, adjncy));
    lap("edge cut", &mut phases);
    let owners = blocks
        .owners(primary, owners0)
        .map_err(|e| Error::Data(format!("distributing the mesh: {e}")))?;
    lap("owners", &mut phases);
    let (part, shared) = blocks.local_part(&owners);
    drop(owners);
    lap("part", &mut phases);
    let maps = blocks
        .maps
        .iter()
        .zip(map_names)
        .map(|(m, name)| MapDecl {
            name,
            from: m.from,
            to: m.to,
            arity: m.arity,
            injective: blocks.injectivity(m),
        })
        .collect();
    let dats: Vec<LocalDat> = mesh
        .dats
        .into_iter()
        .map(|d| {
            let w = d.dim * d.dtype.words();
            let words = blocks.fetch(d.set, w, &d.words, &part.sets[d.set].global);
            (d.name, d.set, d.dim, d.dtype, words)
        })
        .collect();
    let mut out = assemble(ctx, &blocks.sizes, maps, part, shared, dats)?;
    lap("maps and Dats", &mut phases);
    out.phase_ms = phases;
    out.edge_cut = edge_cut;
    out.partition_ms = crate::util::now_ms() - t0;
    Ok(out)
}
