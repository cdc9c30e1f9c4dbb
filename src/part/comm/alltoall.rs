//! The collectives of a distribution that never holds the global mesh: every rank sends a
//! list of words to every other (MPI_Alltoallv, the rendezvous by global id of
//! `part::rendezvous`), and every rank's value on every rank (MPI_Allgather: offsets).

use super::{Comm, Inner};

impl Comm {
    /// Sends `sends[q]` to rank q and returns what every rank sent here, by rank (one entry
    /// per rank; `sends` has one per rank). Collective; `what` names it if a rank never joins.
    #[cfg_attr(not(feature = "mpi"), allow(unused_variables))]
    pub(crate) fn all_to_all(&self, sends: &[Vec<u32>], what: &str) -> Vec<Vec<u32>> {
        assert_eq!(sends.len(), self.size(), "one list per rank");
        match &*self.0 {
            Inner::Single => sends.to_vec(),
            #[cfg(all(feature = "mpi", not(target_arch = "wasm32")))]
            Inner::Mpi { world, .. } => {
                use mpi::datatype::{Partition, PartitionMut};
                use mpi::traits::CommunicatorCollectives;
                let name = || what.to_string();
                let poll = self.poller(&name);
                let count = |n: usize| {
                    i32::try_from(n).unwrap_or_else(|_| {
                        super::abort_job(&format!(
                            "rank {} of {}: {what}: {n} words in one message, over MPI's \
                             limit of 2^31 (use more ranks)",
                            self.rank(),
                            self.size()
                        ))
                    })
                };
                let send_counts: Vec<i32> = sends.iter().map(|s| count(s.len())).collect();
                let mut recv_counts = vec![0i32; sends.len()];
                mpi::request::scope(|scope| {
                    let r = world.immediate_all_to_all_into(
                        scope,
                        &send_counts[..],
                        &mut recv_counts[..],
                    );
                    poll.request("the message sizes of every rank", r);
                });
                let displs = |c: &[i32]| -> Vec<i32> {
                    let mut at = 0usize;
                    c.iter()
                        .map(|&n| {
                            let d = count(at);
                            at += n as usize;
                            d
                        })
                        .collect()
                };
                // Both buffers are allocations of their own, one word longer than their
                // messages: two empty Vecs share one dangling address, and Open MPI takes a
                // send buffer equal to the receive buffer for MPI_IN_PLACE, which then runs
                // another schedule than the other ranks' (a hang on 3 ranks).
                let mut flat: Vec<u32> = sends.concat();
                flat.push(0);
                let send_displs = displs(&send_counts);
                let recv_displs = displs(&recv_counts);
                let total: usize = recv_counts.iter().map(|&n| n as usize).sum();
                let mut recv = vec![0u32; total + 1];
                {
                    let sp = Partition::new(&flat[..], &send_counts[..], &send_displs[..]);
                    let mut rp =
                        PartitionMut::new(&mut recv[..], &recv_counts[..], &recv_displs[..]);
                    mpi::request::scope(|scope| {
                        let r = world.immediate_all_to_all_varcount_into(scope, &sp, &mut rp);
                        poll.request("every rank's messages", r);
                    });
                }
                recv_counts
                    .iter()
                    .zip(&recv_displs)
                    .map(|(&n, &d)| recv[d as usize..(d + n) as usize].to_vec())
                    .collect()
            }
        }
    }

    /// Every rank's `v`, by rank. Collective.
    pub(crate) fn all_gather(&self, v: u64, what: &str) -> Vec<u64> {
        let words = [v as u32, (v >> 32) as u32];
        let sends = vec![words.to_vec(); self.size()];
        self.all_to_all(&sends, what)
            .iter()
            .map(|w| u64::from(w[0]) | (u64::from(w[1]) << 32))
            .collect()
    }

    /// MPI's handle of this communicator (for PT-Scotch and MPI-IO), None on one process.
    #[cfg(all(feature = "mpi", not(target_arch = "wasm32")))]
    #[cfg_attr(not(any(feature = "ptscotch", feature = "hdf5")), allow(dead_code))]
    pub(crate) fn raw(&self) -> Option<mpi::ffi::MPI_Comm> {
        match &*self.0 {
            Inner::Single => None,
            Inner::Mpi { world, .. } => {
                use mpi::raw::AsRaw;
                Some(world.as_raw())
            }
        }
    }
}
