//! Algebraic multigrid on N ranks under `mpirun`: AMG-CG on the jittered square of
//! `mpi::linalg` (its worker runs every rank's program), against one process's iterations and
//! solution; a zero diagonal entry in one rank's rows fails the setup on every rank.
//!
//! `cargo test --features mpi --test it -- mpi::amg::` (needs Open MPI's `mpirun`).

use super::linalg::{Pc, one_process, poisson_worker_path};
use crate::common;
use crate::common::mpirun::mpirun_f64;
use parloop::apps::poisson::assemble;
use parloop::linalg::{Amg, AmgOptions};
use parloop::{Context, Dat, Map, Real};

/// The vertex whose row the zero-row case empties (global number).
const ZERO_ROW: usize = 1000;

/// AMG of a matrix with a zero diagonal entry in one rank's rows: an error on every rank
/// (none waits for the others in the setup's exchanges), naming the global row.
pub(super) fn zero_row<T: Real>(
    ctx: &Context,
    cv: &Map,
    x: &Dat<T>,
    f: &Dat<T>,
    ids: &[u32],
    out: std::path::PathBuf,
) {
    let (a, _) = assemble::<T>(ctx, "A", cv, x, f).unwrap();
    let rows: Vec<u32> = (0..ids.len() as u32)
        .filter(|&r| ids[r as usize] as usize == ZERO_ROW)
        .collect();
    a.zero_rows(ctx, &rows, T::from_f64(0.0)).unwrap();
    let e = match Amg::new(ctx, &a, &AmgOptions::default()) {
        Err(e) => e.to_string(),
        Ok(_) => panic!("rank {}: AMG accepted a zero diagonal entry", ctx.rank()),
    };
    assert!(
        e.contains(&format!("row {ZERO_ROW} has no nonzero diagonal entry")),
        "rank {}: {e}",
        ctx.rank()
    );
    if ctx.rank() == 0 {
        std::fs::write(out, bytemuck::cast_slice(&[1.0f64])).unwrap();
    }
}

/// AMG-CG on 2 and 4 ranks (METIS parts): aggregates stay within a rank, so the hierarchy
/// differs from one process's, but the iterations stay within 10% of one process's and u is
/// the same solution (to the solve's tolerance). One process's AMG-CG is itself checked
/// against direct solves and a plain-Rust V-cycle (tests/it/amg.rs, `linalg::amg::tests`).
#[test]
fn amg_cg_on_2_and_4_ranks_takes_one_process_iterations_within_10_percent() {
    if !common::ctx().gpu().f64() {
        return;
    }
    let want = one_process::<f64>("amg", false, Pc::Amg);
    let (iterations, nr) = (want[0], want[1] as usize);
    // The same system by Jacobi-CG: AMG's u is that solution.
    let jacobi = one_process::<f64>("amg", false, Pc::Jacobi);
    let nj = jacobi[1] as usize;
    let gap = want[3 + nr..]
        .iter()
        .zip(&jacobi[3 + nj..])
        .map(|(a, b)| (a - b).abs())
        .fold(0.0, f64::max);
    assert!(
        gap <= 1e-4,
        "one process: AMG-CG's u is {gap:e} off Jacobi-CG's"
    );
    for np in [2, 4] {
        let env = [
            ("MPI_TEST_PARTITIONER", "kway"),
            ("PARLOOP_LAZY", "1"),
            ("MPI_TEST_MESH", "amg"),
            ("MPI_TEST_PC", "amg"),
        ];
        let got = mpirun_f64(np, &poisson_worker_path(), &env);
        let ng = got[1] as usize;
        eprintln!(
            "AMG-CG: {} iterations on {np} ranks, {iterations} on one process",
            got[0]
        );
        assert!(
            (got[0] - iterations).abs() <= (0.1 * iterations).ceil(),
            "{np} ranks: {} AMG-CG iterations against {iterations} on one process",
            got[0]
        );
        assert!(
            got[2 + ng] <= 1e-6,
            "{np} ranks: true residual {:e} for rtol 1e-7",
            got[2 + ng]
        );
        let diff = got[3 + ng..]
            .iter()
            .zip(&want[3 + nr..])
            .map(|(g, w)| (g - w).abs())
            .fold(0.0, f64::max);
        assert!(
            diff <= 1e-4,
            "{np} ranks: u differs from one process by {diff:e}"
        );
    }
    // A zero diagonal entry in one rank's rows fails the setup on every rank.
    let env = [
        ("MPI_TEST_PARTITIONER", "kway"),
        ("MPI_TEST_MESH", "amg"),
        ("MPI_TEST_PC", "amg-zero-row"),
    ];
    assert_eq!(mpirun_f64(3, &poisson_worker_path(), &env), [1.0]);
}
