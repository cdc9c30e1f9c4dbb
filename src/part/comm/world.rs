//! MPI's world communicator, made once per process and shared by every Context on it.

use super::Comm;
#[cfg(all(feature = "mpi", not(target_arch = "wasm32")))]
use super::Inner;
#[cfg(all(feature = "mpi", not(target_arch = "wasm32")))]
use crate::error::Error;
use crate::error::Result;
#[cfg(all(feature = "mpi", not(target_arch = "wasm32")))]
use std::rc::{Rc, Weak};

#[cfg(all(feature = "mpi", not(target_arch = "wasm32")))]
thread_local! {
    /// The world while some Comm holds it: a second `Comm::world()` shares it (MPI cannot be
    /// initialized twice). Weak, so that MPI is finalized when the program drops the last one.
    static WORLD: std::cell::RefCell<(Weak<Inner>, Weak<std::cell::Cell<f64>>)> =
        const { std::cell::RefCell::new((Weak::new(), Weak::new())) };
}

impl Comm {
    /// MPI's world communicator. The first call initializes MPI; later calls on the same
    /// thread, while any Comm or Context on it is alive, return the same communicator. MPI is finalized when the
    /// last of them is dropped, and cannot be initialized again in this process (an error).
    #[cfg(all(feature = "mpi", not(target_arch = "wasm32")))]
    pub fn world() -> Result<Comm> {
        use mpi::traits::Communicator;
        let alive = WORLD.with_borrow(|(w, t)| Some(Comm(w.upgrade()?, t.upgrade()?)));
        if let Some(c) = alive {
            return Ok(c);
        }
        let universe = mpi::initialize().ok_or_else(|| {
            Error::Usage(
                "MPI was initialized before in this process: by a Comm or Context on MPI's \
                 world that was since dropped, by one on another thread, or by another library. \
                 Keep one Context alive for the whole program, on the thread that made it"
                    .into(),
            )
        })?;
        let world = universe.world();
        let _ = world.rank();
        let comm = Comm(
            Rc::new(Inner::Mpi {
                world,
                _universe: universe,
            }),
            Rc::new(std::cell::Cell::new(crate::config::DEFAULT_COMM_TIMEOUT_S)),
        );
        WORLD.with_borrow_mut(|w| *w = (Rc::downgrade(&comm.0), Rc::downgrade(&comm.1)));
        Ok(comm)
    }

    /// MPI's world ([`Comm::world`]) when this process was started by an MPI launcher
    /// (`mpirun`, `srun`: Open MPI's, MPICH's or PMIx's variables are set) and parloop has the
    /// `mpi` feature; else this process alone. What [`crate::Context::new`] runs on.
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
            // Several copies of a one-process program would write the same files.
            let size = ["OMPI_COMM_WORLD_SIZE", "PMI_SIZE"]
                .iter()
                .find_map(|v| std::env::var(v).ok()?.parse::<usize>().ok());
            match size {
                Some(n) if n > 1 => {
                    return Err(crate::error::Error::Usage(format!(
                        "started by an MPI launcher on {n} processes, but parloop was built \
                         without the `mpi` feature: build with `--features mpi` (or run one \
                         process)"
                    )));
                }
                Some(_) => {}
                None => log::warn!(
                    "started by an MPI launcher, but parloop was built without `mpi`: this \
                     process runs alone"
                ),
            }
        }
        Ok(Comm::single())
    }
}
