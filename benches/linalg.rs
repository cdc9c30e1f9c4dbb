//! Sparse matrices and Krylov solvers (issue 26): on the P1 Laplacian of a jittered unit square
//! (Dirichlet rows on the boundary, b = 1 inside) at about 10^4 and 10^5 unknowns, on the
//! adapter PARLOOP_ADAPTER chooses:
//! - assembly (one par_loop of element matrices and loads, racing increments) and y = A x, in ms and in
//!   GB/s of the bytes they must move, beside a plain copy (`ctx.copy`) of the matrix's values;
//! - Jacobi-CG to a relative residual of 1e-8 in f32 and (with the adapter's f64) f64, against
//!   the same CG in plain Rust (f64, one core, CSR from the assembled matrix), then again with
//!   one reduction per iteration (`SolveOptions::single_reduction`).
//!
//! `cargo bench --bench linalg`; `LINALG_SIZES=1000 LINALG_TYPES=f32` for 10^6 unknowns;
//! `scripts/scipy-cg.sh` runs SciPy's CG on the matrices it exports (`LINALG_EXPORT=DIR`).

use parloop::apps::poisson::element_kernel;
use parloop::linalg::{Mat, SolveOptions, Sparsity, cg};
use parloop::mesh::unit_square;
use parloop::util::Rng;
use parloop::{Config, Context, Dat, Map, Real, Set};
use std::rc::Rc;
use std::time::Instant;

struct System<T: Real> {
    a: Mat<T>,
    b: Dat<T>,
    diag: Dat<T>,
    vertices: Set,
    assembly_ms: f64,
    cells: usize,
}

fn ms(t: Instant) -> f64 {
    t.elapsed().as_secs_f64() * 1e3
}

fn system<T: Real>(ctx: &Context, n: usize) -> System<T> {
    let mut m = unit_square(n);
    let mut rng = Rng::new(1);
    let h = 1.0 / n as f64;
    let boundary = |c: [f64; 3]| c[0] == 0.0 || c[0] == 1.0 || c[1] == 0.0 || c[1] == 1.0;
    for c in &mut m.coords {
        if !boundary(*c) {
            c[0] += 0.4 * h * (rng.unit() - 0.5);
            c[1] += 0.4 * h * (rng.unit() - 0.5);
        }
    }
    let vertices = Set::new("vertices", m.nvertices());
    let cells = Set::new("cells", m.ncells());
    let cv = Map::new("cv", &cells, &vertices, 3, &m.cells).unwrap();
    let xs: Vec<T> = m
        .coords
        .iter()
        .flat_map(|c| [T::from_f64(c[0]), T::from_f64(c[1])])
        .collect();
    let x = ctx.dat("x", &vertices, 2, &xs).unwrap();
    let f = ctx.dat_zeros::<T>("f", &vertices, 1).unwrap();
    let load = ctx.dat_zeros::<T>("load", &vertices, 1).unwrap();
    let sp = Rc::new(Sparsity::new(ctx, "A", &vertices, &vertices, &[(&cv, &cv)]).unwrap());
    let a = Mat::<T>::new(ctx, "A", &sp).unwrap();
    ctx.flush().unwrap();
    // The Poisson example's assembly loop: the element matrices and a load vector (of f = 0;
    // b is set below).
    let c = ctx
        .global("coefficients", &[T::from_f64(0.0), T::from_f64(1.0)])
        .unwrap();
    let args = [
        c.read(),
        x.all(&cv).read(),
        f.all(&cv).read(),
        a.inc(&cv, &cv).unwrap(),
        load.all(&cv).inc(),
    ];
    // Once to compile the pipeline and build the plan, then zeroed and timed: a
    // re-assembly, as a time step or a Newton iteration does.
    ctx.par_loop(&element_kernel::<T>(), &cells, &args).unwrap();
    ctx.zero(&a.values).unwrap();
    ctx.flush().unwrap();
    let t = Instant::now();
    ctx.par_loop(&element_kernel::<T>(), &cells, &args).unwrap();
    ctx.flush().unwrap();
    let assembly_ms = ms(t);
    let fixed: Vec<u32> = (0..m.nvertices() as u32)
        .filter(|&v| boundary(m.coords[v as usize]))
        .collect();
    a.zero_rows(ctx, &fixed, T::from_f64(1.0)).unwrap();
    let bv: Vec<T> = (0..m.nvertices())
        .map(|v| T::from_f64(if boundary(m.coords[v]) { 0.0 } else { 1.0 }))
        .collect();
    let b = ctx.dat("b", &vertices, 1, &bv).unwrap();
    let diag = a.diagonal(ctx).unwrap();
    ctx.flush().unwrap();
    System {
        a,
        b,
        diag,
        vertices,
        assembly_ms,
        cells: m.ncells(),
    }
}

/// Plain-Rust Jacobi-CG in f64 on CSR rows: (iterations, ms).
fn plain_cg(rows: &[Vec<(usize, f64)>], b: &[f64], rtol: f64) -> (usize, f64) {
    let t = Instant::now();
    let n = b.len();
    let d: Vec<f64> = rows
        .iter()
        .enumerate()
        .map(|(i, r)| r.iter().find(|e| e.0 == i).map_or(1.0, |e| e.1))
        .collect();
    let dot = |a: &[f64], b: &[f64]| a.iter().zip(b).map(|(x, y)| x * y).sum::<f64>();
    let (mut x, mut r) = (vec![0.0; n], b.to_vec());
    let mut z: Vec<f64> = r.iter().zip(&d).map(|(r, d)| r / d).collect();
    let mut p = z.clone();
    let mut q = vec![0.0; n];
    let mut rz = dot(&r, &z);
    let bn = dot(b, b).sqrt();
    let mut it = 0;
    while dot(&r, &r).sqrt() > rtol * bn {
        for (qi, row) in q.iter_mut().zip(rows) {
            *qi = row.iter().map(|&(c, v)| v * p[c]).sum();
        }
        let alpha = rz / dot(&p, &q);
        for i in 0..n {
            x[i] += alpha * p[i];
            r[i] -= alpha * q[i];
            z[i] = r[i] / d[i];
        }
        let next = dot(&r, &z);
        for i in 0..n {
            p[i] = z[i] + next / rz * p[i];
        }
        rz = next;
        it += 1;
    }
    (it, ms(t))
}

fn run<T: Real>(ctx: &Context, n: usize) -> System<T> {
    let s = system::<T>(ctx, n);
    let sp = s.a.sparsity();
    let (rows, nnz, w) = (sp.rows().size(), sp.nnz(), sp.width());
    let tb = T::DTYPE.bytes() as f64;
    // y = A x: values and slot indices of the padded rows, x through the columns, y.
    let x = ctx
        .dat("x", &s.vertices, 1, &vec![T::from_f64(1.0); rows])
        .unwrap();
    let y = ctx.dat_zeros::<T>("y", &s.vertices, 1).unwrap();
    let reps = 20;
    s.a.mult(ctx, &x, &y).unwrap();
    ctx.flush().unwrap();
    let t = Instant::now();
    for _ in 0..reps {
        s.a.mult(ctx, &x, &y).unwrap();
        ctx.flush().unwrap();
    }
    let spmv = ms(t) / reps as f64;
    let spmv_bytes = (rows * w) as f64 * (tb + 8.0) + rows as f64 * (2.0 * tb + 4.0);
    let copy_to = ctx.dat_zeros::<T>("copy", &sp_slots(&s.a), 1).unwrap();
    ctx.copy(&s.a.values, &copy_to).unwrap();
    ctx.flush().unwrap();
    let t = Instant::now();
    for _ in 0..reps {
        ctx.copy(&s.a.values, &copy_to).unwrap();
        ctx.flush().unwrap();
    }
    let copy = ms(t) / reps as f64;
    let copy_bytes = 2.0 * (rows * w) as f64 * tb;
    let gbs = |bytes: f64, ms: f64| bytes / ms / 1e6;
    // Per cell: coordinates (6) and f (3) read, the element matrix (9) and load (3) read and
    // written, the cell's 3 vertex and 9 slot indices.
    let assembly_bytes = s.cells as f64 * (33.0 * tb + 48.0);
    println!(
        "| {} | {rows} | {nnz} ({w} wide) | {:.1} ({:.2} GB/s) | {spmv:.2} ({:.2} GB/s) | {copy:.2} ({:.2} GB/s) |",
        T::DTYPE,
        s.assembly_ms,
        gbs(assembly_bytes, s.assembly_ms),
        gbs(spmv_bytes, spmv),
        gbs(copy_bytes, copy)
    );
    let u = ctx.dat_zeros::<T>("u", &s.vertices, 1).unwrap();
    let opts = SolveOptions {
        rtol: 1e-8,
        max_iterations: 20_000,
        check_every: 10,
        ..SolveOptions::default()
    };
    let t = Instant::now();
    let rep = cg(ctx, &s.a, &s.b, &u, Some(&s.diag), &opts).unwrap();
    let cg_ms = ms(t);
    // The same matrix on the host for plain Rust.
    let v = s.a.values.data_ro().unwrap();
    let csr: Vec<Vec<(usize, f64)>> = (0..rows)
        .map(|r| {
            sp.row(r)
                .iter()
                .enumerate()
                .map(|(k, &c)| (c as usize, v[r * w + k].to_f64()))
                .collect()
        })
        .collect();
    let b: Vec<f64> = s.b.data_ro().unwrap().iter().map(|v| v.to_f64()).collect();
    let (it, plain_ms) = plain_cg(&csr, &b, 1e-8);
    println!(
        "|   CG {}: {} iterations in {cg_ms:.0} ms ({:.2} ms each; true residual {:.1e}) | plain Rust f64: {it} iterations in {plain_ms:.0} ms ({:.2} ms each) |",
        T::DTYPE,
        rep.iterations,
        cg_ms / rep.iterations as f64,
        rep.true_residual,
        plain_ms / it as f64
    );
    drop(v);
    // The same solve with one reduction per iteration.
    ctx.zero(&u).unwrap();
    let opts = SolveOptions {
        single_reduction: true,
        ..opts
    };
    let before = ctx.stats();
    let t = Instant::now();
    let one = cg(ctx, &s.a, &s.b, &u, Some(&s.diag), &opts).unwrap();
    let one_ms = ms(t);
    let d = (ctx.stats().dispatches - before.dispatches) as f64 / one.iterations as f64;
    println!(
        "|   CG {}, single reduction: {} iterations in {one_ms:.0} ms ({:.2} ms each; true residual {:.1e}; {d:.2} dispatches each) |",
        T::DTYPE,
        one.iterations,
        one_ms / one.iterations as f64,
        one.true_residual,
    );
    s
}

fn sp_slots<T: Real>(a: &Mat<T>) -> Set {
    a.values.set().clone()
}

/// Writes the assembled matrix (MatrixMarket) and b (one value per line) under `dir`, for
/// `scripts/scipy-cg.sh`.
fn export<T: Real>(s: &System<T>, n: usize, dir: &str) {
    std::fs::create_dir_all(dir).unwrap();
    let name = format!("{dir}/poisson_{n}_{}", T::DTYPE);
    s.a.write_matrix_market(format!("{name}.mtx")).unwrap();
    let b: Vec<String> =
        s.b.data_ro()
            .unwrap()
            .iter()
            .map(|v| format!("{v:?}"))
            .collect();
    std::fs::write(format!("{name}.b"), b.join("\n") + "\n").unwrap();
}

/// LINALG_SIZES (squares per side, default `100,316`), LINALG_TYPES (`f32,f64`: f64 only
/// where the adapter has it), LINALG_EXPORT (a directory: also write each f64 matrix and b).
fn main() {
    let ctx = Context::with_config(Config::from_env().unwrap()).unwrap();
    let var = |k: &str, d: &str| std::env::var(k).unwrap_or_else(|_| d.to_string());
    let sizes: Vec<usize> = var("LINALG_SIZES", "100,316")
        .split(',')
        .map(|n| {
            n.trim()
                .parse()
                .expect("LINALG_SIZES: squares per side, comma-separated")
        })
        .collect();
    let types = var("LINALG_TYPES", "f32,f64");
    let export_to = std::env::var("LINALG_EXPORT").ok();
    println!("adapter: {}", ctx.adapter());
    println!("| type | unknowns | entries | assembly ms | y = A x ms | copy of the values ms |");
    println!("|---|---:|---:|---:|---:|---:|");
    for n in sizes {
        if types.contains("f32") {
            run::<f32>(&ctx, n);
        }
        if types.contains("f64") && ctx.gpu().f64() {
            let s = run::<f64>(&ctx, n);
            if let Some(dir) = &export_to {
                export(&s, n, dir);
            }
        }
    }
}
