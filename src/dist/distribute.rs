//! The user's entry point to a distributed run, as OP2's `op_partition`: declare the global
//! Sets, Maps and Dats (every rank declares the same ones, with the same values), then
//! `distribute` gives each rank its part: local Sets numbered core | owned | exec halo |
//! non-exec halo, local Maps and Dats, and the exchange lists the runtime uses.
//!
//! Where the global data lives: every rank holds the declared global arrays until
//! `distribute` returns (the partition and the neighbours' halos are computed from them on
//! every rank, in O(neighbours x mesh) time); then only the local part is kept, so memory per
//! rank for Dats and Maps shrinks with the number of ranks after distribution.

use crate::context::Context;
use crate::data::{Dat, Map, Set, halo::Halo};
use crate::error::{Error, Result};
use crate::part::{MapSpec, block_owners, derive_owners, local_part};
use crate::types::Scalar;
use std::marker::PhantomData;

/// A global set declared for distribution.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GlobalSet(pub(crate) usize);
/// A global map declared for distribution.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GlobalMap(pub(crate) usize);
/// A global Dat declared for distribution.
#[derive(Debug)]
pub struct GlobalDat<T>(pub(crate) usize, pub(crate) PhantomData<T>);
impl<T> Clone for GlobalDat<T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T> Copy for GlobalDat<T> {}

/// How the primary set's elements are given to ranks.
#[derive(Clone, Debug)]
pub enum Partitioner {
    /// Contiguous blocks of the global numbering (simple; fine for structured numberings).
    Block,
    /// The owner rank of every element of the primary set, as the user computed it.
    Owners(Vec<u32>),
    /// METIS's multilevel k-way partitioning of the primary set's dual graph (elements joined
    /// when they share a map target), computed on rank 0 from the global graph; needs the
    /// `mpi` feature on more than one rank. Not for a mesh read in blocks (no rank holds the
    /// graph): use `Scotch`.
    KWay,
    /// PT-Scotch's parallel partitioning of the same dual graph, which stays distributed in
    /// blocks over the ranks; needs the `ptscotch` feature on more than one rank.
    Scotch,
}

struct DatDecl {
    name: String,
    set: usize,
    dim: usize,
    dtype: crate::types::DType,
    words: Vec<u32>,
}

/// Global declarations waiting to be distributed.
///
/// Declare the whole mesh (on every rank), then [`Distribution::distribute`] gives each rank
/// its part. On one process (a Context not made `with_comm`) the part is the whole mesh, so a
/// distributed program also runs without MPI.
///
/// ```
/// use parloop::dist::{Distribution, Partitioner};
/// use parloop::{Context, Kernel};
/// # fn main() -> parloop::Result<()> {
/// let ctx = Context::new()?;
/// let mut d = Distribution::new(&ctx);
/// let cells = d.set("cells", 2);
/// let nodes = d.set("nodes", 3);
/// let c2n = d.map("c2n", cells, nodes, 2, &[0, 1, 1, 2])?;
/// let x = d.dat("x", nodes, 1, &[0.0f32, 1.0, 3.0])?;
/// let mut part = d.distribute(cells, Partitioner::Block)?;
/// let (cells, c2n, x) = (part.set(cells), part.map(c2n), part.dat(x)?);
/// let h = ctx.dat_zeros::<f32>("h", &cells, 1)?;
/// let k = Kernel::new("width", "fn width(x: ptr<function, array<f32, 2>>, h: ptr<function, array<f32, 1>>) {
///     (*h)[0] = (*x)[1] - (*x)[0];
/// }");
/// ctx.par_loop(&k, &cells, &[x.all(&c2n).read(), h.write()])?;
/// // Rank 0 gathers the owned values of every rank, in global order.
/// assert_eq!(h.gather()?, Some(vec![1.0, 2.0]));
/// # Ok(())
/// # }
/// ```
pub struct Distribution {
    ctx: Context,
    sets: Vec<(String, usize)>,
    maps: Vec<(String, usize, usize, usize, Vec<u32>)>,
    dats: Vec<DatDecl>,
}

/// One rank's part of what was declared.
pub struct Distributed {
    sets: Vec<Set>,
    maps: Vec<Map>,
    dats: Vec<Option<std::rc::Rc<crate::data::DataInner>>>,
    map_names: Vec<String>,
    dat_names: Vec<(String, crate::types::DType)>,
    /// Per set: (name, global size, [core, owned, exec halo, non-exec halo] on this rank).
    pub sizes: Vec<(String, usize, [usize; 4])>,
    /// Edges of the primary set's dual graph cut by the partition (all ranks together).
    pub edge_cut: usize,
    /// Time spent partitioning and building this rank's part, in milliseconds.
    pub partition_ms: f64,
    /// The steps of the distribution and their times in milliseconds on this rank (a mesh in
    /// blocks: the dual graph, the partition, the owners, the part, the maps and Dats).
    pub phase_ms: Vec<(&'static str, f64)>,
}

impl Distribution {
    /// Starts declaring the global mesh of a run on `ctx`'s ranks.
    pub fn new(ctx: &Context) -> Distribution {
        Distribution {
            ctx: ctx.clone(),
            sets: Vec::new(),
            maps: Vec::new(),
            dats: Vec::new(),
        }
    }
    /// A global set of `size` elements.
    pub fn set(&mut self, name: &str, size: usize) -> GlobalSet {
        self.sets.push((name.to_string(), size));
        GlobalSet(self.sets.len() - 1)
    }
    /// A global map: `arity` targets in `to` per element of `from`, row-major.
    pub fn map(
        &mut self,
        name: &str,
        from: GlobalSet,
        to: GlobalSet,
        arity: usize,
        values: &[u32],
    ) -> Result<GlobalMap> {
        let (fname, fsize) = self.sets[from.0].clone();
        let (tname, tsize) = self.sets[to.0].clone();
        if arity == 0 || values.len() != fsize * arity {
            return Err(Error::Data(format!(
                "Map `{name}`: got {} values, expected {} ({fsize} elements of `{fname}` x \
                 arity {arity}, arity at least 1)",
                values.len(),
                fsize * arity
            )));
        }
        if let Some((k, &v)) = values
            .iter()
            .enumerate()
            .find(|(_, v)| **v as usize >= tsize)
        {
            return Err(Error::Data(format!(
                "Map `{name}`: value {v} at element {}, index {} is outside `{tname}` (size \
                 {tsize})",
                k / arity,
                k % arity
            )));
        }
        self.maps
            .push((name.to_string(), from.0, to.0, arity, values.to_vec()));
        Ok(GlobalMap(self.maps.len() - 1))
    }
    /// A global Dat: `dim` values per element of `set`.
    pub fn dat<T: Scalar>(
        &mut self,
        name: &str,
        set: GlobalSet,
        dim: usize,
        values: &[T],
    ) -> Result<GlobalDat<T>> {
        self.ctx.check_dtype("Dat", name, T::DTYPE)?;
        let (sname, size) = &self.sets[set.0];
        if dim == 0 || values.len() != size * dim {
            return Err(Error::Data(format!(
                "Dat `{name}`: got {} values, expected {} ({size} elements of `{sname}` x dim \
                 {dim}, dim at least 1)",
                values.len(),
                size * dim
            )));
        }
        self.dats.push(DatDecl {
            name: name.to_string(),
            set: set.0,
            dim,
            dtype: T::DTYPE,
            words: bytemuck::cast_slice(values).to_vec(),
        });
        Ok(GlobalDat(self.dats.len() - 1, PhantomData))
    }

    /// Whether every rank declared the same sets, maps and Dats: each declaration's hash
    /// against rank 0's, the first that differs named with the lowest rank where it does.
    fn same_declarations(&self, ctx: &Context) -> Result<()> {
        use std::hash::{Hash, Hasher};
        let hash = |x: &dyn Fn(&mut std::collections::hash_map::DefaultHasher)| {
            let mut h = std::collections::hash_map::DefaultHasher::new();
            x(&mut h);
            h.finish()
        };
        let mut decls: Vec<(String, u64)> = Vec::new();
        for s in &self.sets {
            decls.push((format!("Set `{}`", s.0), hash(&|h| s.hash(h))));
        }
        for m in &self.maps {
            decls.push((format!("Map `{}`", m.0), hash(&|h| m.hash(h))));
        }
        for d in &self.dats {
            let h = hash(&|h| (&d.name, d.set, d.dim, &d.words).hash(h));
            decls.push((format!("Dat `{}`", d.name), h));
        }
        let what = "comparing the ranks' declarations";
        // Rank 0's count, then its hashes.
        let mut count = [decls.len() as u32];
        ctx.comm().broadcast(&mut count, what);
        let root_len = count[0] as usize;
        let me = ctx.rank() as u64;
        let lowest = |here: bool| ctx.comm().min_max(if here { me } else { u64::MAX }, what);
        let (mut rank, _) = lowest(decls.len() != root_len)?;
        let which = if rank != u64::MAX {
            format!(
                "rank {rank} declared a different number of sets, maps and Dats than rank 0 \
                 ({root_len})"
            )
        } else {
            let mut root: Vec<u32> = match ctx.rank() {
                0 => decls
                    .iter()
                    .flat_map(|d| [d.1 as u32, (d.1 >> 32) as u32])
                    .collect(),
                _ => vec![0; 2 * root_len],
            };
            ctx.comm().broadcast(&mut root, what);
            let theirs = |k: usize| u64::from(root[2 * k]) | (u64::from(root[2 * k + 1]) << 32);
            // This rank's first declaration unlike rank 0's.
            let differs = (0..root_len).find(|&k| decls[k].1 != theirs(k));
            let (k, _) = ctx
                .comm()
                .min_max(differs.map_or(u64::MAX, |k| k as u64), what)?;
            if k == u64::MAX {
                return Ok(());
            }
            let k = k as usize;
            let (r, _) = lowest(differs == Some(k))?;
            rank = r;
            format!(
                "{} on rank {rank} differs from rank 0's (its name, size, shape or values)",
                decls[k].0
            )
        };
        let rank = rank as usize;
        let message = format!(
            "distributing the mesh: {which}: every rank must declare the same global mesh with \
             the same values (read or generate it the same way on each)"
        );
        Err(if ctx.rank() == rank {
            Error::Data(message)
        } else {
            Error::Rank { rank, message }
        })
    }

    /// Partitions `primary` with `partitioner`, derives the owners of the other sets through
    /// the maps, and builds this rank's part. Every rank must call it with the same
    /// declarations.
    ///
    /// Collective: an error on any rank (a bad partition, METIS failing on rank 0) is an
    /// error on every rank, naming the rank where it arose.
    pub fn distribute(self, primary: GlobalSet, partitioner: Partitioner) -> Result<Distributed> {
        let ctx = self.ctx.clone();
        // Tagged before the distribution's own collectives.
        ctx.agree(Ok(()), "distributing the mesh (Distribution::distribute)")?;
        // Every rank must declare the same mesh, and give the same owners (hashes compared
        // over the ranks): rank 0 partitions for all, and the parts must fit together.
        if ctx.ranks() > 1 {
            use std::hash::{Hash, Hasher};
            self.same_declarations(&ctx)?;
            if let Partitioner::Owners(o) = &partitioner {
                let mut h = std::collections::hash_map::DefaultHasher::new();
                o.hash(&mut h);
                let what = "comparing the ranks' partitions";
                let (lo, hi) = ctx.comm().min_max(h.finish(), what)?;
                if lo != hi {
                    return Err(Error::Data(format!(
                        "distributing the mesh: rank {} of {} was given owners that differ from \
                         another rank's: Partitioner::Owners must hold the same partition on \
                         every rank",
                        ctx.rank(),
                        ctx.ranks()
                    )));
                }
            }
        }
        let part = self.distribute_here(primary, partitioner);
        ctx.agree(part, "distributing the mesh")
    }

    /// This rank's part, before the ranks agree that every part was built.
    fn distribute_here(self, primary: GlobalSet, partitioner: Partitioner) -> Result<Distributed> {
        let ranks = self.ctx.ranks();
        let rank = self.ctx.rank() as u32;
        let sizes: Vec<(&str, usize)> = self.sets.iter().map(|(n, s)| (n.as_str(), *s)).collect();
        let specs: Vec<MapSpec> = self
            .maps
            .iter()
            .map(|(_, from, to, arity, values)| MapSpec {
                from: *from,
                to: *to,
                arity: *arity,
                values,
            })
            .collect();
        let t0 = crate::util::now_ms();
        let (xadj, adjncy) = crate::part::dual_graph(&sizes, &specs, primary.0);
        let owners0 = match partitioner {
            Partitioner::Block => block_owners(sizes[primary.0].1, ranks),
            Partitioner::Owners(o) => o,
            Partitioner::KWay if ranks == 1 => vec![0; sizes[primary.0].1],
            #[cfg(all(feature = "mpi", not(target_arch = "wasm32")))]
            Partitioner::KWay => {
                // Computed on rank 0 and sent to all, so every rank has the same partition; a
                // failure on rank 0 reaches every rank first.
                let owners = if rank == 0 {
                    crate::part::kway::kway(&xadj, &adjncy, ranks)
                } else {
                    Ok(vec![0; sizes[primary.0].1])
                };
                let mut owners = self.ctx.agree(owners, "partitioning with METIS")?;
                self.ctx
                    .comm()
                    .broadcast(&mut owners, "the broadcast of METIS's partition");
                owners
            }
            #[cfg(not(all(feature = "mpi", not(target_arch = "wasm32"))))]
            Partitioner::KWay => {
                return Err(Error::Usage(
                    "Partitioner::KWay needs parloop's `mpi` feature (METIS)".into(),
                ));
            }
            Partitioner::Scotch => {
                // The global graph cut into the ranks' blocks, partitioned by PT-Scotch, and
                // every block's parts sent to every rank.
                let n = sizes[primary.0].1;
                let r = crate::part::rendezvous::block_start(n, ranks, rank as usize)
                    ..crate::part::rendezvous::block_start(n, ranks, rank as usize + 1);
                let (a, b) = (xadj[r.start] as usize, xadj[r.end] as usize);
                let local_xadj: Vec<u32> = xadj[r.clone()]
                    .iter()
                    .chain(std::iter::once(&xadj[r.end]))
                    .map(|&x| x - a as u32)
                    .collect();
                let mine = scotch_part(&self.ctx, &local_xadj, &adjncy[a..b])?;
                let what = "sending PT-Scotch's partition to every rank";
                let all = self.ctx.comm().all_to_all(&vec![mine; ranks], what);
                all.concat()
            }
        };
        let edge_cut = if owners0.len() == xadj.len() - 1 {
            crate::part::edge_cut(&xadj, &adjncy, &owners0)
        } else {
            0
        };
        let owners = derive_owners(&sizes, &specs, primary.0, owners0, ranks)
            .map_err(|e| Error::Data(format!("distributing the mesh: {e}")))?;
        let part = local_part(&sizes, &specs, &owners, rank);
        let shared = crate::part::shared_sets(sizes.len(), &specs, &owners);
        let maps = self
            .maps
            .iter()
            .map(|(name, from, to, arity, values)| MapDecl {
                name: name.clone(),
                from: *from,
                to: *to,
                arity: *arity,
                injective: crate::data::injectivity(values, *arity, sizes[*to].1),
            })
            .collect();
        let dats = self
            .dats
            .iter()
            .map(|d| {
                let g = &part.sets[d.set].global;
                let w = d.dim * d.dtype.words();
                let mut words = Vec::with_capacity(g.len() * w);
                for &e in g {
                    words.extend_from_slice(&d.words[e as usize * w..(e as usize + 1) * w]);
                }
                (d.name.clone(), d.set, d.dim, d.dtype, words)
            })
            .collect();
        let mut out = assemble(&self.ctx, &self.sets, maps, part, shared, dats)?;
        out.edge_cut = edge_cut;
        out.partition_ms = crate::util::now_ms() - t0;
        Ok(out)
    }
}

/// PT-Scotch's parts of this rank's block of a distributed graph, made collective (an error on
/// one rank is an error on all).
pub(crate) fn scotch_part(ctx: &Context, xadj: &[u32], adjncy: &[u32]) -> Result<Vec<u32>> {
    #[cfg(all(feature = "ptscotch", not(target_arch = "wasm32")))]
    let parts = crate::part::scotch::part(ctx.comm(), xadj, adjncy);
    #[cfg(not(all(feature = "ptscotch", not(target_arch = "wasm32"))))]
    let parts = if ctx.ranks() == 1 {
        Ok(vec![0; xadj.len() - 1])
    } else {
        let _ = adjncy;
        Err(Error::Usage(
            "Partitioner::Scotch needs parloop's `ptscotch` feature (PT-Scotch)".into(),
        ))
    };
    ctx.agree(parts, "partitioning with PT-Scotch")
}

/// A declared map, for the assembly of a rank's part.
pub(crate) struct MapDecl {
    pub name: String,
    pub from: usize,
    pub to: usize,
    pub arity: usize,
    /// Per column and whole (see `data::injectivity`), of the global map.
    pub injective: (Vec<bool>, bool),
}

/// A Dat's values on this rank's elements, in local order: (name, set, dim, type, words).
pub(crate) type LocalDat = (String, usize, usize, crate::types::DType, Vec<u32>);

/// This rank's Sets, Maps and Dats from its part (both paths end here).
pub(crate) fn assemble(
    ctx: &Context,
    set_decls: &[(String, usize)],
    maps: Vec<MapDecl>,
    part: crate::part::LocalPart,
    shared: Vec<bool>,
    dats: Vec<LocalDat>,
) -> Result<Distributed> {
    let sets: Vec<Set> = part
        .sets
        .iter()
        .zip(&part.exchanges)
        .zip(set_decls)
        .enumerate()
        .map(|(k, ((ls, ex), (name, global_size)))| {
            Set::distributed(
                name,
                ls.sections,
                Halo {
                    global: ls.global.clone(),
                    global_size: *global_size,
                    exchanges: ex.clone(),
                    shared: shared[k],
                },
            )
        })
        .collect();
    let map_names = maps.iter().map(|m| m.name.clone()).collect();
    let maps = maps
        .into_iter()
        .zip(part.maps)
        .map(|(m, local)| {
            Map::distributed(
                &m.name,
                &sets[m.from],
                &sets[m.to],
                m.arity,
                local,
                m.injective,
            )
        })
        .collect::<Result<Vec<Map>>>()?;
    for d in &dats {
        ctx.check_dtype("Dat", &d.0, d.3)?;
    }
    let dat_names = dats.iter().map(|d| (d.0.clone(), d.3)).collect();
    let dats = dats
        .into_iter()
        .map(|(name, set, dim, dtype, words)| {
            Some(ctx.dat_words(&name, &sets[set], dim, dtype, words))
        })
        .collect();
    let sizes = sets
        .iter()
        .zip(set_decls)
        .map(|(s, (n, g))| (n.clone(), *g, s.sections().counts()))
        .collect();
    Ok(Distributed {
        sets,
        maps,
        dats,
        map_names,
        dat_names,
        sizes,
        edge_cut: 0,
        partition_ms: 0.0,
        phase_ms: Vec::new(),
    })
}

impl Distributed {
    /// This rank's part of the set named `name` (a mesh read from a file).
    pub fn set_named(&self, name: &str) -> Result<Set> {
        let k = self.sizes.iter().position(|s| s.0 == name);
        k.map(|k| self.sets[k].clone())
            .ok_or_else(|| self.missing("set", name, self.sizes.iter().map(|s| &s.0)))
    }
    /// This rank's part of the map named `name`.
    pub fn map_named(&self, name: &str) -> Result<Map> {
        let k = self.map_names.iter().position(|m| m == name);
        k.map(|k| self.maps[k].clone())
            .ok_or_else(|| self.missing("map", name, self.map_names.iter()))
    }
    /// The type of the Dat named `name`, if the distribution has one (not yet taken).
    pub fn dat_type(&self, name: &str) -> Option<crate::types::DType> {
        let k = self.dat_names.iter().position(|d| d.0 == name)?;
        self.dats[k].as_ref().map(|_| self.dat_names[k].1)
    }
    /// Whether the distribution has a Dat named `name` (not yet taken).
    pub fn has_dat(&self, name: &str) -> bool {
        self.dat_names
            .iter()
            .zip(&self.dats)
            .any(|(d, v)| d.0 == name && v.is_some())
    }
    /// This rank's part of the Dat named `name`, of type `T`. Each Dat is handed out once.
    pub fn dat_named<T: Scalar>(&mut self, name: &str) -> Result<Dat<T>> {
        let k = self
            .dat_names
            .iter()
            .position(|d| d.0 == name)
            .ok_or_else(|| self.missing("Dat", name, self.dat_names.iter().map(|d| &d.0)))?;
        if self.dat_names[k].1 != T::DTYPE {
            return Err(Error::Usage(format!(
                "Dat `{name}` holds {} values, not {}",
                self.dat_names[k].1.wgsl(),
                T::DTYPE.wgsl()
            )));
        }
        self.dat(GlobalDat(k, PhantomData))
    }
    fn missing<'a>(&self, what: &str, name: &str, have: impl Iterator<Item = &'a String>) -> Error {
        let have: Vec<&str> = have.map(String::as_str).collect();
        Error::Usage(format!(
            "there is no {what} named `{name}` in this distribution (it has: {})",
            have.join(", ")
        ))
    }
    /// This rank's part of a declared set.
    pub fn set(&self, s: GlobalSet) -> Set {
        self.sets[s.0].clone()
    }
    /// A subset of a declared set, from its members' global numbers (the same list on every
    /// rank): this rank's elements among them, in any section. A par_loop over it runs its
    /// owned members, and when it writes through a map its exec-halo members too, as a loop
    /// over the set does: on N ranks it gives the one-process result.
    pub fn subset(&self, name: &str, s: GlobalSet, members: &[u32]) -> Result<crate::Subset> {
        let (set, global) = (&self.sets[s.0], self.sizes[s.0].1);
        let mut member = vec![false; global];
        for (k, &m) in members.iter().enumerate() {
            let slot = member.get_mut(m as usize).ok_or_else(|| {
                Error::Data(format!(
                    "Subset `{name}` of `{}`: member {m} at position {k} is out of range: the \
                     set has {global} elements",
                    set.name()
                ))
            })?;
            if std::mem::replace(slot, true) {
                return Err(Error::Data(format!(
                    "Subset `{name}` of `{}`: member {m} appears twice (again at position {k}): \
                     members must be distinct",
                    set.name()
                )));
            }
        }
        let ids = set.global_ids().unwrap_or_default();
        let local: Vec<u32> = (0..ids.len() as u32)
            .filter(|&l| member[ids[l as usize] as usize])
            .collect();
        let mut s = crate::Subset::new(name, set, &local)?;
        std::rc::Rc::get_mut(&mut s.0)
            .expect("a subset just made has one owner")
            .complete = true;
        Ok(s)
    }
    /// This rank's part of a declared map (targets in local numbering).
    pub fn map(&self, m: GlobalMap) -> Map {
        self.maps[m.0].clone()
    }
    /// This rank's part of a declared Dat (owned and halo values). Each Dat is handed out
    /// once (a Dat has one owner).
    pub fn dat<T: Scalar>(&mut self, d: GlobalDat<T>) -> Result<Dat<T>> {
        let inner = self.dats[d.0].take().ok_or_else(|| {
            Error::Usage("this Dat was already taken from the distribution".into())
        })?;
        Ok(Dat {
            inner,
            _t: PhantomData,
        })
    }
}
