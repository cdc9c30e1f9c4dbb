//! Airfoil in plain Rust, sequential: the independent check of the GPU results, and the CPU
//! side of the benchmark.

use super::{AirfoilMesh, Constants};
use std::ops::{Add, Div, Mul, Neg, Sub};

/// f32 or f64.
pub trait Real:
    Copy
    + PartialOrd
    + Add<Output = Self>
    + Sub<Output = Self>
    + Mul<Output = Self>
    + Div<Output = Self>
    + Neg<Output = Self>
{
    /// The value of an f64 constant in this type.
    fn of(v: f64) -> Self;
    /// Square root.
    fn sqrt(self) -> Self;
    /// Absolute value.
    fn abs(self) -> Self;
    /// The value as f64.
    fn to_f64(self) -> f64;
}
impl Real for f32 {
    fn of(v: f64) -> Self {
        v as f32
    }
    fn sqrt(self) -> Self {
        f32::sqrt(self)
    }
    fn abs(self) -> Self {
        f32::abs(self)
    }
    fn to_f64(self) -> f64 {
        self as f64
    }
}
impl Real for f64 {
    fn of(v: f64) -> Self {
        v
    }
    fn sqrt(self) -> Self {
        f64::sqrt(self)
    }
    fn abs(self) -> Self {
        f64::abs(self)
    }
    fn to_f64(self) -> f64 {
        self
    }
}

/// The solver state: q, qold, adt, res per cell.
pub struct State<T> {
    /// The flow state per cell.
    pub q: Vec<[T; 4]>,
    /// The state at the start of the iteration.
    pub qold: Vec<[T; 4]>,
    /// The local time step per cell.
    pub adt: Vec<T>,
    /// The residual per cell.
    pub res: Vec<[T; 4]>,
    c: Constants<T>,
    x: Vec<[T; 2]>,
}

impl<T: Real> State<T> {
    /// The far-field state on every cell of `m`, as the GPU solver starts.
    pub fn new(m: &AirfoilMesh, c: Constants<T>) -> State<T> {
        let nc = m.cells.len();
        let zero = T::of(0.0);
        State {
            q: vec![c.qinf; nc],
            qold: vec![[zero; 4]; nc],
            adt: vec![zero; nc],
            res: vec![[zero; 4]; nc],
            x: m.x.iter().map(|p| [T::of(p[0]), T::of(p[1])]).collect(),
            c,
        }
    }

    /// One iteration; returns sqrt(rms / ncells) of its second update.
    pub fn iteration(&mut self, m: &AirfoilMesh) -> f64 {
        self.qold.copy_from_slice(&self.q);
        let mut rms = 0.0;
        for _ in 0..2 {
            self.adt_calc(m);
            self.res_calc(m);
            self.bres_calc(m);
            rms = self.update();
        }
        (rms / m.cells.len() as f64).sqrt()
    }

    fn adt_calc(&mut self, m: &AirfoilMesh) {
        let c = &self.c;
        let half = T::of(0.5);
        for (k, cell) in m.cells.iter().enumerate() {
            let q = self.q[k];
            let ri = T::of(1.0) / q[0];
            let (u, v) = (ri * q[1], ri * q[2]);
            let snd = (c.gam * c.gm1 * (ri * q[3] - half * (u * u + v * v))).sqrt();
            let mut a = T::of(0.0);
            for s in 0..4 {
                let (p0, p1) = (self.x[cell[s] as usize], self.x[cell[(s + 1) % 4] as usize]);
                let (dx, dy) = (p1[0] - p0[0], p1[1] - p0[1]);
                a = a + (u * dy - v * dx).abs() + snd * (dx * dx + dy * dy).sqrt();
            }
            self.adt[k] = a / c.cfl;
        }
    }

    fn res_calc(&mut self, m: &AirfoilMesh) {
        let c = &self.c;
        let (half, one) = (T::of(0.5), T::of(1.0));
        for (e, n) in m.edges.iter().enumerate() {
            let (x1, x2) = (self.x[n[0] as usize], self.x[n[1] as usize]);
            let (dx, dy) = (x1[0] - x2[0], x1[1] - x2[1]);
            let [c1, c2] = m.ecells[e].map(|v| v as usize);
            let (q1, q2) = (self.q[c1], self.q[c2]);
            let ri1 = one / q1[0];
            let p1 = c.gm1 * (q1[3] - half * ri1 * (q1[1] * q1[1] + q1[2] * q1[2]));
            let vol1 = ri1 * (q1[1] * dy - q1[2] * dx);
            let ri2 = one / q2[0];
            let p2 = c.gm1 * (q2[3] - half * ri2 * (q2[1] * q2[1] + q2[2] * q2[2]));
            let vol2 = ri2 * (q2[1] * dy - q2[2] * dx);
            let mu = half * (self.adt[c1] + self.adt[c2]) * c.eps;
            let f = [
                half * (vol1 * q1[0] + vol2 * q2[0]) + mu * (q1[0] - q2[0]),
                half * (vol1 * q1[1] + p1 * dy + vol2 * q2[1] + p2 * dy) + mu * (q1[1] - q2[1]),
                half * (vol1 * q1[2] - p1 * dx + vol2 * q2[2] - p2 * dx) + mu * (q1[2] - q2[2]),
                half * (vol1 * (q1[3] + p1) + vol2 * (q2[3] + p2)) + mu * (q1[3] - q2[3]),
            ];
            for n in 0..4 {
                self.res[c1][n] = self.res[c1][n] + f[n];
                self.res[c2][n] = self.res[c2][n] - f[n];
            }
        }
    }

    fn bres_calc(&mut self, m: &AirfoilMesh) {
        let c = &self.c;
        let (half, one) = (T::of(0.5), T::of(1.0));
        for (b, n) in m.bedges.iter().enumerate() {
            let (x1, x2) = (self.x[n[0] as usize], self.x[n[1] as usize]);
            let (dx, dy) = (x1[0] - x2[0], x1[1] - x2[1]);
            let k = m.becells[b] as usize;
            let q1 = self.q[k];
            let ri = one / q1[0];
            let p1 = c.gm1 * (q1[3] - half * ri * (q1[1] * q1[1] + q1[2] * q1[2]));
            let r = &mut self.res[k];
            if m.bound[b] == 1 {
                r[1] = r[1] + p1 * dy;
                r[2] = r[2] + -p1 * dx;
            } else {
                let q2 = c.qinf;
                let vol1 = ri * (q1[1] * dy - q1[2] * dx);
                let ri2 = one / q2[0];
                let p2 = c.gm1 * (q2[3] - half * ri2 * (q2[1] * q2[1] + q2[2] * q2[2]));
                let vol2 = ri2 * (q2[1] * dy - q2[2] * dx);
                let mu = self.adt[k] * c.eps;
                r[0] = r[0] + half * (vol1 * q1[0] + vol2 * q2[0]) + mu * (q1[0] - q2[0]);
                r[1] = r[1]
                    + half * (vol1 * q1[1] + p1 * dy + vol2 * q2[1] + p2 * dy)
                    + mu * (q1[1] - q2[1]);
                r[2] = r[2]
                    + half * (vol1 * q1[2] - p1 * dx + vol2 * q2[2] - p2 * dx)
                    + mu * (q1[2] - q2[2]);
                r[3] = r[3]
                    + half * (vol1 * (q1[3] + p1) + vol2 * (q2[3] + p2))
                    + mu * (q1[3] - q2[3]);
            }
        }
    }

    /// Returns the sum of squared changes.
    fn update(&mut self) -> f64 {
        let mut rms = 0.0f64;
        for k in 0..self.q.len() {
            let adti = T::of(1.0) / self.adt[k];
            for n in 0..4 {
                let del = adti * self.res[k][n];
                self.q[k][n] = self.qold[k][n] - del;
                self.res[k][n] = T::of(0.0);
                rms += (del * del).to_f64();
            }
        }
        rms
    }
}
