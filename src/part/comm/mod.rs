//! The communicator a Context runs on: one process (always available), or MPI's world with the
//! `mpi` cargo feature. The rest of parloop only sees the operations it needs: rank and size,
//! a neighbour exchange of u32 words, reductions of a Global's words, and a gather to rank 0.

mod alltoall;
mod world;

use crate::error::{Error, Result};
use crate::types::{DType, ReduceOp};
use std::rc::Rc;

/// Which processes a [`crate::Context`] shares its mesh with. Cheap to clone.
#[derive(Clone)]
// The timeout is read by MPI's waits only (not in the browser).
#[cfg_attr(target_arch = "wasm32", allow(dead_code))]
pub struct Comm(Rc<Inner>, Rc<std::cell::Cell<f64>>);

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
        Comm(
            Rc::new(Inner::Single),
            Rc::new(std::cell::Cell::new(crate::config::DEFAULT_COMM_TIMEOUT_S)),
        )
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

    /// How long a wait for other ranks may last before the job is aborted with a message
    /// naming this rank and what it waits in (`Config::comm_timeout_s`).
    #[cfg_attr(target_arch = "wasm32", allow(dead_code))]
    pub(crate) fn set_timeout(&self, secs: f64) {
        self.1.set(secs);
    }

    #[cfg_attr(
        not(all(feature = "mpi", not(target_arch = "wasm32"))),
        allow(dead_code)
    )]
    fn poller<'a>(&self, what: &'a dyn Fn() -> String) -> Poller<'a> {
        Poller {
            rank: self.rank(),
            ranks: self.size(),
            timeout: self.1.get(),
            what,
        }
    }

    /// Sends `sends[k].1` to rank `sends[k].0` and receives `recvs[k].1` words from rank
    /// `recvs[k].0`, all at once, with message tag `tag` (non-blocking sends; each receive is
    /// probed, its length checked, then received). `what` names the exchange in errors: a
    /// message of the wrong length is an error naming both ranks; a neighbour that never sends
    /// aborts the job after the timeout, naming this rank and `what`.
    #[cfg_attr(not(feature = "mpi"), allow(unused_mut, unused_variables))]
    pub(crate) fn exchange(
        &self,
        tag: u16,
        what: &dyn Fn() -> String,
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
                use mpi::traits::{Communicator, Destination, Equivalence, Source};
                let poll = self.poller(what);
                let tag = mpi::Tag::from(TAG_HALO) + mpi::Tag::from(tag);
                let mut bad = None;
                mpi::request::scope(|scope| {
                    let mut requests = Vec::new();
                    for (q, data) in sends {
                        requests.push(world.process_at_rank(*q as i32).immediate_send_with_tag(
                            scope,
                            &data[..],
                            tag,
                        ));
                    }
                    for (buf, &(q, n)) in out.iter_mut().zip(recvs) {
                        let from = world.process_at_rank(q as i32);
                        let (msg, status) = poll.until(&format!("a message from rank {q}"), || {
                            from.immediate_matched_probe_with_tag(tag)
                        });
                        let count = status.count(u32::equivalent_datatype()) as usize;
                        if count == n {
                            msg.matched_receive_into(&mut buf[..]);
                        } else {
                            // Drained, so that the sender completes; reported below.
                            let mut sink = vec![0u32; count];
                            msg.matched_receive_into(&mut sink[..]);
                            bad.get_or_insert((q, count, n));
                        }
                    }
                    for r in requests {
                        poll.request(&format!("the send to a neighbour"), r);
                    }
                });
                if let Some((q, count, n)) = bad {
                    return Err(Error::Usage(format!(
                        "{}: rank {} expected {n} words from rank {q} and got {count}: the two \
                         ranks disagree about the exchange (their programs diverged)",
                        what(),
                        self.rank()
                    )));
                }
            }
        }
        Ok(out)
    }

    /// Starts combining a Global's words over all ranks without waiting: the sum (INC), least
    /// (MIN) or greatest (MAX) of each value, for the Global's type, by MPI's non-blocking
    /// allreduce. [`Reduction::finish`] waits and gives the result.
    #[cfg_attr(not(feature = "mpi"), allow(unused_variables))]
    pub(crate) fn start_all_reduce(
        &self,
        dtype: DType,
        op: ReduceOp,
        words: &[u32],
        what: &str,
    ) -> Reduction {
        match &*self.0 {
            Inner::Single => Reduction(Some(Box::new({
                let words = words.to_vec();
                move || words
            }))),
            #[cfg(all(feature = "mpi", not(target_arch = "wasm32")))]
            Inner::Mpi { world, .. } => {
                use mpi::collective::SystemOperation;
                let op = match op {
                    ReduceOp::Min => SystemOperation::min(),
                    ReduceOp::Max => SystemOperation::max(),
                    ReduceOp::Sum => SystemOperation::sum(),
                };
                let what = what.to_string();
                let p = (self.rank(), self.size(), self.1.get());
                Reduction(Some(match dtype {
                    DType::F32 => start_typed::<f32>(world, words, op, p, what),
                    DType::F64 => start_typed::<f64>(world, words, op, p, what),
                    DType::I32 => start_typed::<i32>(world, words, op, p, what),
                    DType::U32 => start_typed::<u32>(world, words, op, p, what),
                }))
            }
        }
    }

    /// Every rank's words on rank 0 (in rank order); None on the other ranks. Every rank must
    /// call it; `what` names it if a rank never does.
    #[cfg_attr(not(feature = "mpi"), allow(unused_variables))]
    pub(crate) fn gather(&self, words: &[u32], what: &str) -> Option<Vec<Vec<u32>>> {
        match &*self.0 {
            Inner::Single => Some(vec![words.to_vec()]),
            #[cfg(all(feature = "mpi", not(target_arch = "wasm32")))]
            Inner::Mpi { world, .. } => {
                use mpi::traits::{Communicator, Destination, Equivalence, Source};
                let name = || what.to_string();
                let poll = self.poller(&name);
                let tag = mpi::Tag::from(TAG_GATHER);
                // One message per rank: its length, then its words (never an empty message).
                if world.rank() == 0 {
                    let mut all = vec![words.to_vec()];
                    for r in 1..world.size() {
                        let from = world.process_at_rank(r);
                        let (msg, status) = poll.until(&format!("rank {r}'s part"), || {
                            from.immediate_matched_probe_with_tag(tag)
                        });
                        let n = status.count(u32::equivalent_datatype()) as usize;
                        let mut buf = vec![0u32; n];
                        msg.matched_receive_into(&mut buf[..]);
                        if buf.first().map(|&l| l as usize + 1) != Some(n) {
                            abort_job(&format!(
                                "rank 0 of {}: {what}: rank {r} sent {n} words, not a length \
                                 and its values (the ranks' programs diverged)",
                                world.size()
                            ));
                        }
                        buf.remove(0);
                        all.push(buf);
                    }
                    Some(all)
                } else {
                    let mut msg = Vec::with_capacity(words.len() + 1);
                    msg.push(words.len() as u32);
                    msg.extend_from_slice(words);
                    mpi::request::scope(|scope| {
                        let r =
                            world
                                .process_at_rank(0)
                                .immediate_send_with_tag(scope, &msg[..], tag);
                        poll.request("rank 0 to take this rank's part", r);
                    });
                    None
                }
            }
        }
    }

    /// Rank 0's words in `words` on every rank (all ranks pass the same length).
    pub(crate) fn broadcast(&self, words: &mut [u32], what: &str) {
        self.broadcast_from(0, words, what);
    }

    /// The least and greatest of `v` over the ranks (a collective check). The call is tagged
    /// by `what`: when another rank is in a different collective call at this point (the
    /// ranks' programs diverged), every rank gets an error naming both calls instead of a
    /// result that pairs calls that do not belong together.
    pub(crate) fn min_max(&self, v: u64, what: &str) -> Result<(u64, u64)> {
        if self.size() == 1 {
            return Ok((v, v));
        }
        let p = purpose(what);
        let lo = self.all_min(&[v, u64::MAX - v, p, u64::MAX - p], what);
        let (lo_p, hi_p) = (lo[2], u64::MAX - lo[3]);
        if lo_p != hi_p {
            return Err(self.diverged(what, p, lo_p, hi_p));
        }
        Ok((lo[0], u64::MAX - lo[1]))
    }

    /// [`Comm::min_max`] inside the library's own sequence of collectives (a distribution's
    /// steps), which every rank runs alike once the call that started it was agreed: a
    /// divergence there ends the job with both calls named.
    pub(crate) fn min_max_within(&self, v: u64, what: &str) -> (u64, u64) {
        self.min_max(v, what)
            .unwrap_or_else(|e| abort_job(&format!("rank {}: {e}", self.rank())))
    }

    /// The element-wise least of `words` over the ranks (untagged: callers tag).
    #[cfg_attr(not(feature = "mpi"), allow(unused_variables))]
    fn all_min(&self, words: &[u64], what: &str) -> Vec<u64> {
        match &*self.0 {
            Inner::Single => words.to_vec(),
            #[cfg(all(feature = "mpi", not(target_arch = "wasm32")))]
            Inner::Mpi { world, .. } => {
                use mpi::collective::SystemOperation;
                use mpi::traits::CommunicatorCollectives;
                let name = || what.to_string();
                let poll = self.poller(&name);
                let mut lo = vec![0u64; words.len()];
                mpi::request::scope(|scope| {
                    let r = world.immediate_all_reduce_into(
                        scope,
                        words,
                        &mut lo[..],
                        SystemOperation::min(),
                    );
                    poll.request("the reduction", r);
                });
                lo
            }
        }
    }

    /// Every rank found that the ranks are in different collective calls (tags `lo` and `hi`;
    /// this rank's is `mine`): the error, on every rank, names a rank in each call and the
    /// call's text.
    fn diverged(&self, what: &str, mine: u64, lo: u64, hi: u64) -> Error {
        let n = self.size() as u64;
        let me = self.rank() as u64;
        let at = self.all_min(
            &[
                if mine == lo { me } else { n },
                if mine == hi { me } else { n },
            ],
            "naming the calls of diverged ranks",
        );
        let (a, b) = (at[0] as usize, at[1] as usize);
        let text_a = self.broadcast_text(a, (a == self.rank()).then_some(what), what);
        let text_b = self.broadcast_text(b, (b == self.rank()).then_some(what), what);
        Error::Rank {
            rank: a,
            message: format!(
                "the ranks' programs diverged: rank {a} of {n} is in {text_a} while rank {b} is \
                 in {text_b}. Every rank must make the same collective calls in the same order \
                 (see README.md, \"Which calls are collective\")"
            ),
        }
    }

    /// Makes a local outcome collective: on N ranks, an error on any rank becomes an error on
    /// every rank (`Error::Rank` on the others, naming the rank where it arose), so that no
    /// rank goes on into a collective the others never join. Every rank must call it at the
    /// same point of the program (`what` tags the call: ranks in different calls get an error
    /// naming both).
    pub(crate) fn agree<T>(&self, result: Result<T>, what: &str) -> Result<T> {
        if self.size() == 1 {
            return result;
        }
        let mine = result.as_ref().err().map(ToString::to_string);
        match (self.first_failure(mine.as_deref(), what)?, result) {
            (None, r) | (Some(_), r @ Err(_)) => r,
            (Some((rank, message)), Ok(_)) => Err(Error::Rank {
                rank,
                message: format!(
                    "{what}: rank {rank} of {} failed, so every rank stops here. On rank \
                     {rank}: {message}",
                    self.size()
                ),
            }),
        }
    }

    /// Every rank passes what went wrong here (None: nothing); every rank gets the first
    /// failing rank and its message, or None.
    fn first_failure(&self, failure: Option<&str>, what: &str) -> Result<Option<(usize, String)>> {
        let n = self.size() as u64;
        let mine = if failure.is_some() {
            self.rank() as u64
        } else {
            n
        };
        let (first, _) = self.min_max(mine, what)?;
        if first == n {
            return Ok(None);
        }
        let text = self.broadcast_text(first as usize, failure, what);
        Ok(Some((first as usize, text)))
    }

    /// `root`'s text (`text` there, ignored elsewhere) on every rank.
    fn broadcast_text(&self, root: usize, text: Option<&str>, what: &str) -> String {
        let text = text.unwrap_or("").as_bytes();
        let mut len = [if root == self.rank() {
            text.len() as u32
        } else {
            0
        }];
        self.broadcast_from(root, &mut len, what);
        let mut words = vec![0u32; (len[0] as usize).div_ceil(4)];
        if root == self.rank() {
            let mut padded = text.to_vec();
            padded.resize(words.len() * 4, 0);
            words.copy_from_slice(&bytemuck::pod_collect_to_vec::<u8, u32>(&padded));
        }
        self.broadcast_from(root, &mut words, what);
        let bytes: Vec<u8> = bytemuck::cast_slice(&words)[..len[0] as usize].to_vec();
        String::from_utf8_lossy(&bytes).into_owned()
    }

    /// `root`'s words in `words` on every rank.
    #[cfg_attr(not(feature = "mpi"), allow(unused_variables))]
    fn broadcast_from(&self, root: usize, words: &mut [u32], what: &str) {
        match &*self.0 {
            Inner::Single => {}
            #[cfg(all(feature = "mpi", not(target_arch = "wasm32")))]
            Inner::Mpi { world, .. } => {
                use mpi::traits::{Communicator, Root};
                let name = || what.to_string();
                let poll = self.poller(&name);
                mpi::request::scope(|scope| {
                    let r = world
                        .process_at_rank(root as i32)
                        .immediate_broadcast_into(scope, words);
                    poll.request("the broadcast of an error", r);
                });
            }
        }
    }
}

/// The tag of a collective call: FNV-1a of the text that names it (the same on every rank
/// that makes the same call).
fn purpose(what: &str) -> u64 {
    what.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// Message tags by purpose (MPI guarantees tags up to 32767): the gather, and halo exchanges
/// from `TAG_HALO` up (the exchange's sequence number modulo 30000 is added).
#[cfg(all(feature = "mpi", not(target_arch = "wasm32")))]
const TAG_GATHER: u16 = 1;
#[cfg(all(feature = "mpi", not(target_arch = "wasm32")))]
const TAG_HALO: u16 = 1000;

/// Waits for other ranks by polling, up to a deadline; past it, the job is aborted with a
/// message naming this rank and what it waited in (MPI has no way to cancel a collective, and
/// the other ranks are stuck too).
#[cfg_attr(not(feature = "mpi"), allow(dead_code))]
struct Poller<'a> {
    rank: usize,
    ranks: usize,
    timeout: f64,
    what: &'a dyn Fn() -> String,
}

#[cfg_attr(not(feature = "mpi"), allow(dead_code))]
impl Poller<'_> {
    fn until<T>(&self, detail: &str, mut step: impl FnMut() -> Option<T>) -> T {
        let t0 = std::time::Instant::now();
        let mut spins = 0u32;
        loop {
            if let Some(v) = step() {
                return v;
            }
            spins += 1;
            if spins < 2000 {
                std::thread::yield_now();
            } else {
                std::thread::sleep(std::time::Duration::from_micros(100));
            }
            if t0.elapsed().as_secs_f64() > self.timeout {
                abort_job(&format!(
                    "rank {} of {} waited {:.0} s in {} for {detail}; the other ranks did not \
                     join it: a rank failed or stopped, or the ranks issued different \
                     collective calls (every rank must make the same par_loops and host \
                     accesses in the same order; see README.md, \"Distributed runs\"). \
                     PARLOOP_COMM_TIMEOUT sets the limit",
                    self.rank,
                    self.ranks,
                    self.timeout,
                    (self.what)()
                ));
            }
        }
    }

    #[cfg(all(feature = "mpi", not(target_arch = "wasm32")))]
    fn request<'a, D: ?Sized, S: mpi::request::Scope<'a>>(
        &self,
        detail: &str,
        r: mpi::request::Request<'a, D, S>,
    ) {
        let mut r = Some(r);
        self.until(detail, || {
            match r.take().expect("polled until done").test() {
                Ok(_) => Some(()),
                Err(back) => {
                    r = Some(back);
                    None
                }
            }
        });
    }
}

/// Prints why and aborts every rank of the job.
#[cfg_attr(not(feature = "mpi"), allow(dead_code))]
fn abort_job(why: &str) -> ! {
    eprintln!("parloop: {why}; aborting the job");
    #[cfg(all(feature = "mpi", not(target_arch = "wasm32")))]
    // SAFETY: MPI is initialised (a Comm::world exists to poll on); MPI_Abort does not return.
    unsafe {
        mpi::ffi::MPI_Abort(mpi::ffi::RSMPI_COMM_WORLD, 3);
    }
    std::process::abort()
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
/// waits (polling, up to the timeout in `p`: rank, ranks, seconds), frees them and converts the
/// result to words.
#[cfg(all(feature = "mpi", not(target_arch = "wasm32")))]
fn start_typed<T>(
    world: &mpi::topology::SimpleCommunicator,
    words: &[u32],
    op: mpi::collective::SystemOperation,
    (rank, ranks, timeout): (usize, usize, f64),
    what: String,
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
        let name = || what.clone();
        let poll = Poller {
            rank,
            ranks,
            timeout,
            what: &name,
        };
        poll.request("the other ranks' values", request);
        // SAFETY: the request has completed and was consumed by `test`: MPI no longer uses
        // the buffers and no reference to them remains.
        let (send, recv) = unsafe { (Box::from_raw(send), Box::from_raw(recv)) };
        drop(send);
        bytemuck::cast_slice(&recv).to_vec()
    })
}
