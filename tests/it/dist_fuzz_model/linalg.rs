//! The linear algebra of a distributed program: a matrix assembled through the program's
//! first cells -> nodes map (a weighted clique Laplacian per cell plus one on the diagonal per
//! incidence: symmetric positive definite on the nodes the cells reach), y = A x compared
//! exactly with the model (integer values), then, when every node is reached, Jacobi-CG for
//! b = A x from zero and, after a host write of b, again from the last solution; each solution's
//! residual is computed by the model on the global matrix (f32 rounds b and u: within 100
//! rtol; f64: 2 rtol). f32, or f64 on adapters with it.

use super::World;
use parloop::linalg::{Mat, SolveOptions, Sparsity, cg};
use parloop::*;
use std::rc::Rc;

impl World {
    /// Runs the linear algebra with values of `T` (same draws on every rank).
    pub(super) fn linear_algebra<T: Real>(&mut self) -> Result<(), String> {
        let e = |what: &'static str| move |err: Error| format!("linear algebra, {what}: {err}");
        let mt = &self.obj.maps[0];
        let (Some(c2n), 0, 1) = (mt.map.clone(), mt.from, mt.to) else {
            return Ok(());
        };
        let (arity, global_map) = (mt.arity, mt.values.clone());
        let (n0, n1) = (self.sizes[0], self.sizes[1]);
        let (cells, nodes) = (self.sets[0].clone(), self.sets[1].clone());
        let ctx = self.ctx.clone();
        // The model's matrix, by global node numbers (dense: the fuzzer's sets are small).
        let w: Vec<u32> = (0..n0).map(|_| 1 + self.rng.below(3) as u32).collect();
        let mut a = vec![0.0f64; n1 * n1];
        for c in 0..n0 {
            let row = &global_map[c * arity..(c + 1) * arity];
            for (i, &p) in row.iter().enumerate() {
                for (j, &q) in row.iter().enumerate() {
                    let v = element(w[c] as f64, arity, i, j);
                    a[p as usize * n1 + q as usize] += v;
                }
            }
        }
        let s = Sparsity::new(&ctx, "fz_sparsity", &nodes, &nodes, &[(&c2n, &c2n)])
            .map_err(e("Sparsity::new"))?;
        let m = Mat::<T>::new(&ctx, "fz_A", &Rc::new(s)).map_err(e("Mat::new"))?;
        // The weights given as this rank's owned values.
        let ids = cells.global_ids().unwrap();
        let wl: Vec<T> = ids[..cells.size()]
            .iter()
            .map(|&g| T::from_f64(w[g as usize] as f64))
            .collect();
        let wd = ctx.dat("fz_w", &cells, 1, &wl).map_err(e("weights"))?;
        let t = T::DTYPE;
        let name = format!("fz_element_{t}_{arity}");
        let kernel = Kernel::new(
            &name,
            format!(
                "fn {name}(w: ptr<function, array<{t}, 1>>, a: ptr<function, array<{t}, {aa}>>) {{
    for (var i = 0u; i < {arity}u; i++) {{
        for (var j = 0u; j < {arity}u; j++) {{
            let lap = select(-1.0, f32({arity}u - 1u), i == j);
            (*a)[{arity}u * i + j] += (*w)[0] * {t}(lap) + select({t}(0.0), {t}(1.0), i == j);
        }}
    }}
}}",
                aa = arity * arity
            ),
        );
        let inc = m.inc(&c2n, &c2n).map_err(e("Mat::inc"))?;
        ctx.par_loop(&kernel, &cells, &[wd.read(), inc])
            .map_err(e("assembly"))?;
        // y = A x, x integers given on every local node with an untrusted halo.
        let x: Vec<i32> = (0..n1).map(|_| self.rng.below(5) as i32 - 2).collect();
        let xd = self.nodes_dat::<T>("fz_x", &x, true)?;
        let y = ctx.dat_zeros::<T>("fz_y", &nodes, 1).map_err(e("y"))?;
        m.mult(&ctx, &xd, &y).map_err(e("mult"))?;
        let want = product(&a, n1, &x.iter().map(|&v| v as f64).collect::<Vec<_>>());
        if let Some(got) = y.gather().map_err(e("gather y"))? {
            let got: Vec<f64> = got.iter().map(|v| v.to_f64()).collect();
            if got != want {
                let k = (0..n1).find(|&k| got[k] != want[k]).unwrap_or(0);
                self.failures.push(format!(
                    "linear algebra ({t}): y = A x differs from the model at node {k}: parloop \
                     {} model {}",
                    got[k], want[k]
                ));
            }
        }
        // CG needs every node reached (else a row is empty): decided from the global map.
        let mut reached = vec![false; n1];
        global_map.iter().for_each(|&n| reached[n as usize] = true);
        if !reached.iter().all(|&r| r) {
            return Ok(());
        }
        let opts = SolveOptions {
            rtol: 1e-5,
            max_iterations: 5000,
            check_every: 1 + self.rng.below(10),
            ..SolveOptions::default()
        };
        let u = ctx.dat_zeros::<T>("fz_u", &nodes, 1).map_err(e("u"))?;
        let diagonal = m.diagonal(&ctx).map_err(e("diagonal"))?;
        let mut b = self.nodes_dat::<T>(
            "fz_b",
            &want.iter().map(|&v| v as i32).collect::<Vec<_>>(),
            false,
        )?;
        for solve in 0..2 {
            let rhs = if solve == 0 {
                want.clone()
            } else {
                // A host write of b between the solves; the next starts from the last u.
                let x2: Vec<f64> = (0..n1).map(|_| self.rng.below(7) as f64 - 3.0).collect();
                let b2 = product(&a, n1, &x2);
                let owned: Vec<T> = nodes.global_ids().unwrap()[..nodes.size()]
                    .iter()
                    .map(|&g| T::from_f64(b2[g as usize]))
                    .collect();
                b.set_data(&owned).map_err(e("set_data of b"))?;
                b2
            };
            cg(&ctx, &m, &b, &u, Some(&diagonal), &opts).map_err(e("cg"))?;
            if let Some(got) = u.gather().map_err(e("gather u"))? {
                let got: Vec<f64> = got.iter().map(|v| v.to_f64()).collect();
                let r = product(&a, n1, &got);
                let norm = |v: &mut dyn Iterator<Item = f64>| v.map(|x| x * x).sum::<f64>().sqrt();
                let res = norm(&mut r.iter().zip(&rhs).map(|(p, q)| p - q));
                let bn = norm(&mut rhs.iter().copied()).max(1e-300);
                // f32 rounds b and u: the true residual stays within a few rtol.
                let tol = if t == DType::F64 { 2.0 } else { 100.0 } * opts.rtol;
                if res / bn > tol {
                    self.failures.push(format!(
                        "linear algebra ({t}): solve {solve}: cg returned u with a true \
                         residual {:e} relative (the model's matrix), over {tol:e}",
                        res / bn
                    ));
                }
            }
        }
        Ok(())
    }

    /// A Dat on the nodes from global integer values: every local value with something else
    /// than the owners' in the halo, or (`all` false) the owned values.
    fn nodes_dat<T: Real>(&self, name: &str, vals: &[i32], all: bool) -> Result<Dat<T>, String> {
        let nodes = &self.sets[1];
        let ids = nodes.global_ids().unwrap();
        let n = if all { nodes.total() } else { nodes.size() };
        let local: Vec<T> = (0..n)
            .map(|k| match k < nodes.size() {
                true => T::from_f64(vals[ids[k] as usize] as f64),
                false => T::from_f64(1e4),
            })
            .collect();
        self.ctx
            .dat(name, nodes, 1, &local)
            .map_err(|err| format!("linear algebra, Dat `{name}`: {err}"))
    }
}

/// Entry (i, j) of a cell's element matrix: its weight times the clique Laplacian, plus one on
/// the diagonal.
fn element(w: f64, arity: usize, i: usize, j: usize) -> f64 {
    if i == j {
        w * (arity as f64 - 1.0) + 1.0
    } else {
        -w
    }
}

/// A dense n x n matrix times x.
fn product(a: &[f64], n: usize, x: &[f64]) -> Vec<f64> {
    (0..n)
        .map(|r| (0..n).map(|c| a[r * n + c] * x[c]).sum())
        .collect()
}
