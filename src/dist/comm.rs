//! The communicator a Context runs on: one process (always available), or MPI's world with the
//! `mpi` cargo feature. The rest of parloop only sees the operations it needs: rank and size,
//! a neighbour exchange of u32 words, reductions of a Global's words, and a gather to rank 0.

use crate::error::{Error, Result};
use crate::types::{Access, DType};
use std::rc::Rc;

/// Which processes a [`crate::Context`] shares its mesh with. Cheap to clone.
#[derive(Clone)]
pub struct Comm(Rc<Inner>);

enum Inner {
    Single,
    #[cfg(all(feature = "mpi", not(target_arch = "wasm32")))]
    Mpi {
        world: mpi::topology::SimpleCommunicator,
        // Finalizes MPI when the last clone of this Comm (and of every Context on it) is gone.
        _universe: mpi::environment::Universe,
    },
}

impl Comm {
    /// This process alone: rank 0 of 1 (what a Context uses unless given another).
    pub fn single() -> Comm {
        Comm(Rc::new(Inner::Single))
    }

    /// MPI's world communicator; initializes MPI, which is finalized when the last clone of
    /// this Comm and of every Context on it is dropped (keep one alive until the program
    /// ends: MPI cannot be initialized twice in one process).
    #[cfg(all(feature = "mpi", not(target_arch = "wasm32")))]
    pub fn world() -> Result<Comm> {
        use mpi::traits::Communicator;
        let universe = mpi::initialize().ok_or_else(|| {
            Error::Usage(
                "MPI is already initialized in this process (a Comm::world() was made and \
                 dropped, or another library initialized it): make one Comm::world() and keep \
                 it for the whole program"
                    .into(),
            )
        })?;
        let world = universe.world();
        let _ = world.rank();
        Ok(Comm(Rc::new(Inner::Mpi {
            world,
            _universe: universe,
        })))
    }

    /// MPI's world when this process was started by an MPI launcher (`mpirun`, `srun`) and
    /// parloop has the `mpi` feature; else this process alone.
    pub fn from_launcher() -> Result<Comm> {
        let launched = ["OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK"]
            .iter()
            .any(|v| std::env::var_os(v).is_some());
        #[cfg(all(feature = "mpi", not(target_arch = "wasm32")))]
        if launched {
            return Comm::world();
        }
        #[cfg(not(all(feature = "mpi", not(target_arch = "wasm32"))))]
        if launched {
            log::warn!("started by an MPI launcher, but parloop was built without `mpi`");
        }
        Ok(Comm::single())
    }

    /// This process's rank, 0-based.
    pub fn rank(&self) -> usize {
        match &*self.0 {
            Inner::Single => 0,
            #[cfg(all(feature = "mpi", not(target_arch = "wasm32")))]
            Inner::Mpi { world, .. } => {
                use mpi::traits::Communicator;
                world.rank() as usize
            }
        }
    }

    /// This process's rank among the processes on its node (Open MPI's
    /// `OMPI_COMM_WORLD_LOCAL_RANK`, MPICH's `MPI_LOCALRANKID`; else the rank).
    pub fn local_rank(&self) -> usize {
        ["OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID"]
            .iter()
            .find_map(|v| std::env::var(v).ok()?.parse().ok())
            .unwrap_or_else(|| self.rank())
    }

    /// The number of processes.
    pub fn size(&self) -> usize {
        match &*self.0 {
            Inner::Single => 1,
            #[cfg(all(feature = "mpi", not(target_arch = "wasm32")))]
            Inner::Mpi { world, .. } => {
                use mpi::traits::Communicator;
                world.size() as usize
            }
        }
    }

    /// Sends `sends[k].1` to rank `sends[k].0` and receives `recvs[k].1` words from rank
    /// `recvs[k].0`, all at once (non-blocking sends and receives, then a wait for all).
    #[cfg_attr(not(feature = "mpi"), allow(unused_mut))]
    pub(crate) fn exchange(
        &self,
        sends: &[(u32, Vec<u32>)],
        recvs: &[(u32, usize)],
    ) -> Result<Vec<Vec<u32>>> {
        let mut out: Vec<Vec<u32>> = recvs.iter().map(|&(_, n)| vec![0u32; n]).collect();
        match &*self.0 {
            Inner::Single => {
                if sends.iter().any(|s| !s.1.is_empty()) || recvs.iter().any(|r| r.1 > 0) {
                    return Err(Error::Usage(
                        "a halo exchange on one process: this Context has no other ranks".into(),
                    ));
                }
            }
            #[cfg(all(feature = "mpi", not(target_arch = "wasm32")))]
            Inner::Mpi { world, .. } => {
                use mpi::request::WaitGuard;
                use mpi::traits::{Communicator, Destination, Source};
                mpi::request::scope(|scope| {
                    let mut guards = Vec::new();
                    for (buf, &(q, _)) in out.iter_mut().zip(recvs) {
                        guards.push(WaitGuard::from(
                            world
                                .process_at_rank(q as i32)
                                .immediate_receive_into(scope, &mut buf[..]),
                        ));
                    }
                    for (q, data) in sends {
                        guards.push(WaitGuard::from(
                            world
                                .process_at_rank(*q as i32)
                                .immediate_send(scope, &data[..]),
                        ));
                    }
                    drop(guards);
                });
            }
        }
        Ok(out)
    }

    /// Combines a Global's words over all ranks: the sum (INC), least (MIN) or greatest (MAX)
    /// of each value, for the Global's type (the non-blocking reduction, waited for at once).
    pub(crate) fn all_reduce(&self, dtype: DType, access: Access, words: &mut [u32]) {
        let reduced = self.start_all_reduce(dtype, access, words).finish();
        words.copy_from_slice(&reduced);
    }

    /// Starts combining a Global's words over all ranks (as [`Comm::all_reduce`]) without
    /// waiting: MPI's non-blocking allreduce. [`Reduction::finish`] waits and gives the result.
    #[cfg_attr(not(feature = "mpi"), allow(unused_variables))]
    pub(crate) fn start_all_reduce(
        &self,
        dtype: DType,
        access: Access,
        words: &[u32],
    ) -> Reduction {
        match &*self.0 {
            Inner::Single => Reduction(Some(Box::new({
                let words = words.to_vec();
                move || words
            }))),
            #[cfg(all(feature = "mpi", not(target_arch = "wasm32")))]
            Inner::Mpi { world, .. } => {
                use mpi::collective::SystemOperation;
                let op = match access {
                    Access::Min => SystemOperation::min(),
                    Access::Max => SystemOperation::max(),
                    _ => SystemOperation::sum(),
                };
                Reduction(Some(match dtype {
                    DType::F32 => start_typed::<f32>(world, words, op),
                    DType::F64 => start_typed::<f64>(world, words, op),
                    DType::I32 => start_typed::<i32>(world, words, op),
                    DType::U32 => start_typed::<u32>(world, words, op),
                }))
            }
        }
    }

    /// Every rank's words on rank 0 (in rank order); None on the other ranks.
    pub(crate) fn gather(&self, words: &[u32]) -> Option<Vec<Vec<u32>>> {
        match &*self.0 {
            Inner::Single => Some(vec![words.to_vec()]),
            #[cfg(all(feature = "mpi", not(target_arch = "wasm32")))]
            Inner::Mpi { world, .. } => {
                use mpi::traits::{Communicator, Destination, Source};
                if world.rank() == 0 {
                    let mut all = vec![words.to_vec()];
                    for r in 1..world.size() {
                        all.push(world.process_at_rank(r).receive_vec::<u32>().0);
                    }
                    Some(all)
                } else {
                    world.process_at_rank(0).send(words);
                    None
                }
            }
        }
    }

    /// Rank 0's words in `words` on every rank (all ranks pass the same length).
    #[cfg_attr(not(feature = "mpi"), allow(unused_variables))]
    pub(crate) fn broadcast(&self, words: &mut [u32]) {
        match &*self.0 {
            Inner::Single => {}
            #[cfg(all(feature = "mpi", not(target_arch = "wasm32")))]
            Inner::Mpi { world, .. } => {
                use mpi::traits::{Communicator, Root};
                world.process_at_rank(0).broadcast_into(words);
            }
        }
    }

    /// The same value on every rank (a collective check): the least and greatest over ranks.
    pub(crate) fn min_max(&self, v: u64) -> (u64, u64) {
        match &*self.0 {
            Inner::Single => (v, v),
            #[cfg(all(feature = "mpi", not(target_arch = "wasm32")))]
            Inner::Mpi { world, .. } => {
                use mpi::collective::SystemOperation;
                use mpi::traits::CommunicatorCollectives;
                let (mut lo, mut hi) = (0u64, 0u64);
                world.all_reduce_into(&v, &mut lo, SystemOperation::min());
                world.all_reduce_into(&v, &mut hi, SystemOperation::max());
                (lo, hi)
            }
        }
    }
}

impl std::fmt::Debug for Comm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Comm(rank {} of {})", self.rank(), self.size())
    }
}

/// A Global's reduction over the ranks in flight (see [`Comm::start_all_reduce`]). Dropped
/// unfinished, it still waits for the other ranks (an MPI request must complete).
pub(crate) struct Reduction(Option<Box<dyn FnOnce() -> Vec<u32>>>);

impl Reduction {
    /// Waits for the combined words.
    pub(crate) fn finish(mut self) -> Vec<u32> {
        self.0.take().map_or_else(Vec::new, |f| f())
    }
}

impl Drop for Reduction {
    fn drop(&mut self) {
        if let Some(f) = self.0.take() {
            f();
        }
    }
}

/// MPI_Iallreduce on buffers that live until the request completes; the returned closure
/// waits, frees them and converts the result to words.
#[cfg(all(feature = "mpi", not(target_arch = "wasm32")))]
fn start_typed<T>(
    world: &mpi::topology::SimpleCommunicator,
    words: &[u32],
    op: mpi::collective::SystemOperation,
) -> Box<dyn FnOnce() -> Vec<u32>>
where
    T: mpi::datatype::Equivalence + bytemuck::Pod + Default + 'static,
{
    let send: Vec<T> = bytemuck::pod_collect_to_vec(words);
    use mpi::traits::CommunicatorCollectives;
    let n = send.len();
    let send: *mut [T] = Box::into_raw(send.into_boxed_slice());
    let recv: *mut [T] = Box::into_raw(vec![T::default(); n].into_boxed_slice());
    // SAFETY: both buffers are heap allocations owned by this function and then by the
    // closure, which frees them only after the request has completed; nothing else refers to
    // them while MPI may use them.
    let request = unsafe {
        world.immediate_all_reduce_into(mpi::request::StaticScope, &*send, &mut *recv, op)
    };
    Box::new(move || {
        request.wait();
        // SAFETY: the request has completed and was consumed by `wait`: MPI no longer uses
        // the buffers and no reference to them remains.
        let (send, recv) = unsafe { (Box::from_raw(send), Box::from_raw(recv)) };
        drop(send);
        bytemuck::cast_slice(&recv).to_vec()
    })
}
