//! PT-Scotch's parallel graph partitioning (Debian's `libptscotch-dev`, 32-bit `SCOTCH_Num`):
//! the graph stays distributed (each rank gives the adjacency of its block of vertices, with
//! global neighbour ids), and each rank gets the part of each of its vertices. The few
//! functions parloop calls are declared here; the library checks the sizes at run time.

use super::Comm;
use crate::error::{Error, Result};
use std::ffi::{c_int, c_void};

#[link(name = "ptscotch")]
#[link(name = "scotch")]
#[link(name = "ptscotcherr")]
unsafe extern "C" {
    fn SCOTCH_numSizeof() -> c_int;
    fn SCOTCH_randomReset();
    fn SCOTCH_contextAlloc() -> *mut c_void;
    fn SCOTCH_contextInit(context: *mut c_void) -> c_int;
    fn SCOTCH_contextOptionSetNum(context: *mut c_void, option: c_int, value: i32) -> c_int;
    fn SCOTCH_contextBindDgraph(
        context: *mut c_void,
        graph: *const c_void,
        bound: *mut c_void,
    ) -> c_int;
    fn SCOTCH_contextExit(context: *mut c_void);
    fn SCOTCH_contextThreadSpawn(context: *mut c_void, n: c_int, cores: *const c_int) -> c_int;
    fn SCOTCH_dgraphAlloc() -> *mut c_void;
    fn SCOTCH_dgraphInit(graph: *mut c_void, comm: mpi::ffi::MPI_Comm) -> c_int;
    #[allow(clippy::too_many_arguments)]
    fn SCOTCH_dgraphBuild(
        graph: *mut c_void,
        baseval: i32,
        vertlocnbr: i32,
        vertlocmax: i32,
        vertloctab: *mut i32,
        vendloctab: *mut i32,
        veloloctab: *mut i32,
        vlblloctab: *mut i32,
        edgelocnbr: i32,
        edgelocsiz: i32,
        edgeloctab: *mut i32,
        edgegsttab: *mut i32,
        edloloctab: *mut i32,
    ) -> c_int;
    fn SCOTCH_dgraphPart(
        graph: *mut c_void,
        partnbr: i32,
        strat: *mut c_void,
        parttab: *mut i32,
    ) -> c_int;
    fn SCOTCH_dgraphExit(graph: *mut c_void);
    fn SCOTCH_stratAlloc() -> *mut c_void;
    fn SCOTCH_stratInit(strat: *mut c_void) -> c_int;
    fn SCOTCH_stratExit(strat: *mut c_void);
    fn SCOTCH_memFree(p: *mut c_void);
}

/// Partitions `graph` (built) into `nparts` through a context that makes PT-Scotch
/// deterministic (its threads and random seed fixed: the same graph always gets the same
/// partition, so a restart on the same ranks rebuilds the same parts).
///
/// SAFETY: `graph` and `strat` are initialised; `parts` has one entry per local vertex.
unsafe fn deterministic_part(
    graph: *mut c_void,
    nparts: i32,
    strat: *mut c_void,
    parts: &mut [i32],
    fail: &dyn Fn(&str) -> Error,
) -> Result<()> {
    const DETERMINISTIC: c_int = 0;
    const RANDOM_FIXED_SEED: c_int = 1;
    // SAFETY: the context and the bound graph are allocated here, initialised before use,
    // exited (bound graph first) and freed on every path.
    unsafe {
        let context = SCOTCH_contextAlloc();
        let bound = SCOTCH_dgraphAlloc();
        let mut out = Err(fail("setting up a deterministic context"));
        if !context.is_null() && !bound.is_null() && SCOTCH_contextInit(context) == 0 {
            // One thread per rank: MPI runs single-threaded here (one rank per core).
            if SCOTCH_contextThreadSpawn(context, 1, std::ptr::null()) == 0
                && SCOTCH_contextOptionSetNum(context, DETERMINISTIC, 1) == 0
                && SCOTCH_contextOptionSetNum(context, RANDOM_FIXED_SEED, 1) == 0
                && SCOTCH_contextBindDgraph(context, graph, bound) == 0
            {
                // The process-wide generator too (sequential Scotch on folded graphs).
                SCOTCH_randomReset();
                out = if SCOTCH_dgraphPart(bound, nparts, strat, parts.as_mut_ptr()) == 0 {
                    Ok(())
                } else {
                    Err(fail("partitioning the graph"))
                };
                SCOTCH_dgraphExit(bound);
            }
            SCOTCH_contextExit(context);
        }
        SCOTCH_memFree(bound);
        SCOTCH_memFree(context);
        out
    }
}

/// The part (0..ranks) of each vertex of this rank's block of a distributed graph: `xadj`
/// (block-local CSR offsets) and `adjncy` (global vertex ids; symmetric, no self loops).
/// Collective over `comm`; one process gets part 0 everywhere without calling PT-Scotch.
pub(crate) fn part(comm: &Comm, xadj: &[u32], adjncy: &[u32]) -> Result<Vec<u32>> {
    let n = xadj.len() - 1;
    let ranks = comm.size();
    let Some(raw) = comm.raw() else {
        return Ok(vec![0; n]);
    };
    let fail = |what: &str| {
        Error::Data(format!(
            "partitioning with PT-Scotch: {what} failed on rank {} of {ranks} (PT-Scotch printed \
             why above)",
            comm.rank()
        ))
    };
    // SAFETY: a plain query of the library's build.
    if unsafe { SCOTCH_numSizeof() } != 4 {
        return Err(Error::Usage(
            "PT-Scotch was built with 64-bit integers; parloop binds the 32-bit build \
             (Debian's libptscotch-dev)"
                .into(),
        ));
    }
    let too_big = || fail("the graph is too large for 32-bit PT-Scotch and so it");
    // Decided together: a rank that stopped here alone would leave the others in PT-Scotch.
    let fits = i32::try_from(n).is_ok()
        && i32::try_from(adjncy.len()).is_ok()
        && adjncy.iter().chain(xadj).all(|&v| v <= i32::MAX as u32);
    if comm
        .min_max(u64::from(!fits), "checking the graph's size")?
        .1
        == 1
    {
        return Err(too_big());
    }
    let mut vert: Vec<i32> = xadj
        .iter()
        .map(|&v| i32::try_from(v).map_err(|_| too_big()))
        .collect::<Result<_>>()?;
    let mut edges: Vec<i32> = adjncy
        .iter()
        .map(|&v| i32::try_from(v).map_err(|_| too_big()))
        .collect::<Result<_>>()?;
    let nv = i32::try_from(n).map_err(|_| too_big())?;
    let ne = i32::try_from(edges.len()).map_err(|_| too_big())?;
    let mut parts = vec![0i32; n.max(1)];
    // SAFETY: the graph and strategy are allocated and initialised by PT-Scotch, used only
    // here, and exited and freed on every path; the arrays outlive the graph (dgraphBuild
    // keeps pointers to them until dgraphExit) and have the lengths declared (vertloctab n + 1,
    // edgeloctab ne, parttab n); MPI is initialised (a Comm with an MPI handle exists).
    unsafe {
        let graph = SCOTCH_dgraphAlloc();
        let strat = SCOTCH_stratAlloc();
        if graph.is_null() || strat.is_null() {
            SCOTCH_memFree(graph);
            SCOTCH_memFree(strat);
            return Err(fail("allocating the graph"));
        }
        // PT-Scotch gets a communicator of its own: its messages and collectives never meet
        // parloop's.
        let mut own: mpi::ffi::MPI_Comm = std::mem::zeroed();
        if mpi::ffi::MPI_Comm_dup(raw, &mut own) != 0 {
            SCOTCH_memFree(graph);
            SCOTCH_memFree(strat);
            return Err(fail("duplicating the communicator"));
        }
        let out = if SCOTCH_dgraphInit(graph, own) != 0 {
            Err(fail("initialising the graph"))
        } else {
            let out = if SCOTCH_stratInit(strat) != 0 {
                Err(fail("initialising the strategy"))
            } else {
                let null = std::ptr::null_mut();
                let built = SCOTCH_dgraphBuild(
                    graph,
                    0,
                    nv,
                    nv,
                    vert.as_mut_ptr(),
                    null,
                    null,
                    null,
                    ne,
                    ne,
                    edges.as_mut_ptr(),
                    null,
                    null,
                );
                let out = if built != 0 {
                    Err(fail("building the distributed graph"))
                } else {
                    deterministic_part(graph, ranks as i32, strat, &mut parts, &fail)
                };
                SCOTCH_stratExit(strat);
                out
            };
            SCOTCH_dgraphExit(graph);
            out
        };
        SCOTCH_memFree(graph);
        SCOTCH_memFree(strat);
        mpi::ffi::MPI_Comm_free(&mut own);
        out?;
    }
    parts.truncate(n);
    Ok(parts.into_iter().map(|p| p as u32).collect())
}
