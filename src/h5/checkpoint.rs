//! Checkpoints: the sets, maps, Dats and Globals of a running program, each element written
//! once, at its global number (every rank sends its owned elements to the ranks whose blocks
//! hold them, and each rank writes its blocks), with the step. A checkpoint is a mesh file:
//! a restart reads it with [`super::MeshFile::read`] on any number of ranks and distributes it
//! again. On the same ranks with the same partitioner (PT-Scotch is deterministic, blocks are
//! blocks), the parts are the same, so the run continues bit for bit.

use super::GlobalWords;
use crate::context::Context;
use crate::data::{Dat, Global, Map, Set};
use crate::dist::BlockMesh;
use crate::error::{Error, Result};
use crate::types::{DType, Scalar};
use std::path::Path;

/// What a checkpoint holds, gathered from the running program.
///
/// ```no_run
/// # fn main() -> parloop::Result<()> {
/// # let ctx = parloop::Context::new()?;
/// # let cells = parloop::Set::new("cells", 1);
/// # let nodes = parloop::Set::new("nodes", 2);
/// # let c2n = parloop::Map::new("c2n", &cells, &nodes, 2, &[0, 1])?;
/// # let u = ctx.dat("u", &nodes, 1, &[0.0f32, 1.0])?;
/// # let t = ctx.global("t", &[0.5f32])?;
/// let mut c = parloop::h5::Checkpoint::new(&ctx);
/// c.map(&c2n).dat(&u)?.global(&t)?.step(100);
/// c.write("checkpoint.h5")?;
/// # Ok(())
/// # }
/// ```
pub struct Checkpoint {
    ctx: Context,
    sets: Vec<Set>,
    maps: Vec<Map>,
    /// name, set, dim, type, this rank's owned values as words
    dats: Vec<(String, Set, usize, DType, Vec<u32>)>,
    globals: Vec<GlobalWords>,
    step: Option<u64>,
    keep: usize,
}

impl Checkpoint {
    /// An empty checkpoint of `ctx`'s program.
    pub fn new(ctx: &Context) -> Checkpoint {
        Checkpoint {
            ctx: ctx.clone(),
            sets: Vec::new(),
            maps: Vec::new(),
            dats: Vec::new(),
            globals: Vec::new(),
            step: None,
            keep: 1,
        }
    }
    /// Adds a set (sets of the maps and Dats added come with them).
    pub fn set(&mut self, s: &Set) -> &mut Self {
        if !self.sets.iter().any(|x| x.same(s)) {
            self.sets.push(s.clone());
        }
        self
    }
    /// Adds a map and its two sets.
    pub fn map(&mut self, m: &Map) -> &mut Self {
        self.set(m.from_set());
        self.set(m.to_set());
        if !self.maps.iter().any(|x| x.id() == m.id()) {
            self.maps.push(m.clone());
        }
        self
    }
    /// Adds a Dat's current values (the loops that write it run now).
    pub fn dat<T: Scalar>(&mut self, d: &Dat<T>) -> Result<&mut Self> {
        let words: Vec<u32> = bytemuck::cast_slice(&d.data_ro()?).to_vec();
        self.set(d.set());
        let set = d.set().clone();
        self.dats
            .push((d.name().to_string(), set, d.dim(), T::DTYPE, words));
        Ok(self)
    }
    /// Adds a Global's current value.
    pub fn global<T: Scalar>(&mut self, g: &Global<T>) -> Result<&mut Self> {
        let words = bytemuck::cast_slice(&g.value()?).to_vec();
        self.globals.push((g.name().to_string(), T::DTYPE, words));
        Ok(self)
    }
    /// The step (or iteration) the checkpoint is taken at.
    pub fn step(&mut self, step: u64) -> &mut Self {
        self.step = Some(step);
        self
    }

    /// Keeps the last `k` checkpoints written to the same path (default 1): before a new one
    /// replaces `ck.h5`, the current one is kept as `ck.1.h5`, the one before as `ck.2.h5`,
    /// up to `ck.{k-1}.h5` ([`super::older`]). A restart whose newest file is unreadable falls
    /// back to them ([`super::MeshFile::read_newest`]).
    pub fn keep(&mut self, k: usize) -> &mut Self {
        self.keep = k.max(1);
        self
    }

    /// Writes the checkpoint to `path` (every rank its blocks; MPI-IO). Collective. The file
    /// is written under a temporary name and renamed into place: killed at any moment, `path`
    /// holds the last complete checkpoint.
    pub fn write(&self, path: impl AsRef<Path>) -> Result<()> {
        // Tagged before the rendezvous and HDF5's collective calls. A Dat holding NaN (a
        // run that diverged) is refused on every rank before anything is written: it would
        // replace a good checkpoint with one no restart can read.
        let finite = match self.dats.iter().find_map(|(name, set, dim, dtype, w)| {
            Some((name, set, dim, super::first_nan(*dtype, w)?))
        }) {
            Some((name, set, dim, k)) => Err(Error::Data(format!(
                "checkpoint: Dat `{name}` holds NaN at element {} (component {}; rank {} of {}): \
                 the run has diverged; nothing was written",
                set.global_ids().map_or(k / dim, |g| g[k / dim] as usize),
                k % dim,
                self.ctx.rank(),
                self.ctx.ranks()
            ))),
            None => Ok(()),
        };
        self.ctx.agree(finite, "starting to write a checkpoint")?;
        let out = self.blocks().and_then(|mesh| {
            super::write_with(path.as_ref(), &mesh, self.step, &self.globals, self.keep)
        });
        self.ctx.agree(out, "writing a checkpoint")
    }

    /// The blocks of everything added: owned elements sent to the blocks of their global ids.
    fn blocks(&self) -> Result<BlockMesh> {
        let comm = self.ctx.comm();
        if let Some(s) = self
            .sets
            .iter()
            .find(|s| comm.size() > 1 && s.global_ids().is_none())
        {
            return Err(Error::Usage(format!(
                "a checkpoint on {} ranks: set `{}` was not distributed (each rank has its own; \
                 a checkpoint holds the sets of a distribution)",
                comm.size(),
                s.name()
            )));
        }
        let mut mesh = BlockMesh::new(&self.ctx);
        let ids = |s: &Set| -> Vec<u32> {
            match s.global_ids() {
                Some(g) => g.to_vec(),
                None => (0..s.size() as u32).collect(),
            }
        };
        let handles: Vec<_> = self
            .sets
            .iter()
            .map(|s| mesh.set(s.name(), s.global_size()))
            .collect();
        let index = |s: &Set| self.sets.iter().position(|x| x.same(s)).expect("added");
        for m in &self.maps {
            let (f, t) = (index(m.from_set()), index(m.to_set()));
            let (from_ids, to_ids) = (ids(m.from_set()), ids(m.to_set()));
            let owned = m.from_set().size();
            let a = m.arity();
            let rows: Vec<u32> = m.values()[..owned * a]
                .iter()
                .map(|&l| to_ids[l as usize])
                .collect();
            let what = format!("writing map `{}`: rows to their blocks", m.name());
            let n = m.from_set().global_size();
            let block =
                crate::part::rendezvous::to_blocks(comm, n, a, &from_ids[..owned], &rows, &what);
            mesh.map_here(m.name(), handles[f], handles[t], a, block)?;
        }
        for (name, set, dim, dtype, words) in &self.dats {
            let s = index(set);
            let w = dim * dtype.words();
            let what = format!("writing Dat `{name}`: values to their blocks");
            let owned = set.size();
            let set_ids = ids(set);
            if words.len() != owned * w {
                return Err(Error::Data(format!(
                    "Dat `{name}`: {} words for {owned} owned elements",
                    words.len()
                )));
            }
            let block = crate::part::rendezvous::to_blocks(
                comm,
                set.global_size(),
                w,
                &set_ids[..owned],
                words,
                &what,
            );
            mesh.dat_words(name, handles[s], *dim, *dtype, block)?;
        }
        Ok(mesh)
    }
}
