//! The same scheme in plain Rust, f64, one core: the independent reference, on triangles and
//! on tetrahedra.

use super::{initial_p, initial_p_3d};
use crate::mesh::{CellType, Mesh};
use crate::{Error, Result};

/// Per cell: its area (volume) and the gradients of its P1 basis functions (z = 0 in 2-D).
type Geometry = (f64, Vec<[f64; 3]>);

fn sub(a: [f64; 3], b: [f64; 3]) -> [f64; 3] {
    [a[0] - b[0], a[1] - b[1], a[2] - b[2]]
}
fn dot(a: [f64; 3], b: [f64; 3]) -> f64 {
    a[0] * b[0] + a[1] * b[1] + a[2] * b[2]
}
fn cross(a: [f64; 3], b: [f64; 3]) -> [f64; 3] {
    [
        a[1] * b[2] - a[2] * b[1],
        a[2] * b[0] - a[0] * b[2],
        a[0] * b[1] - a[1] * b[0],
    ]
}
/// The first gradient makes the sum zero (the basis functions sum to one).
fn with_first(rest: [[f64; 3]; 3], n: usize) -> Vec<[f64; 3]> {
    let mut g = vec![[0.0; 3]; n];
    for (k, r) in rest.iter().take(n - 1).enumerate() {
        g[k + 1] = *r;
        g[0] = sub(g[0], *r);
    }
    g
}

fn triangle(x: [[f64; 3]; 3]) -> Geometry {
    let (d1, d2) = (sub(x[1], x[0]), sub(x[2], x[0]));
    let det = d1[0] * d2[1] - d1[1] * d2[0];
    let rest = [
        [d2[1] / det, -d2[0] / det, 0.0],
        [-d1[1] / det, d1[0] / det, 0.0],
        [0.0; 3],
    ];
    (0.5 * det.abs(), with_first(rest, 3))
}

fn tetrahedron(x: [[f64; 3]; 4]) -> Geometry {
    let (d1, d2, d3) = (sub(x[1], x[0]), sub(x[2], x[0]), sub(x[3], x[0]));
    let det = dot(d1, cross(d2, d3));
    let scale = |v: [f64; 3]| v.map(|c| c / det);
    let rest = [
        scale(cross(d2, d3)),
        scale(cross(d3, d1)),
        scale(cross(d1, d2)),
    ];
    (det.abs() / 6.0, with_first(rest, 4))
}

/// The state of the reference solver.
pub struct State {
    /// p per vertex.
    pub p: Vec<f64>,
    /// phi per vertex.
    pub phi: Vec<f64>,
    /// The lumped mass per vertex.
    pub mass: Vec<f64>,
    geo: Vec<Geometry>,
    /// Vertices per cell.
    arity: usize,
    cells: Vec<u32>,
    t1: Vec<f64>,
}

impl State {
    /// The initial state on `m`, as [`super::Wave::on_mesh`] starts: triangles (turned
    /// counter-clockwise) or tetrahedra; other cell types are refused with the wave's error, and
    /// so is a cell naming a vertex the mesh does not have.
    pub fn new(m: &Mesh) -> Result<State> {
        super::check_cells(m.cell_type)?;
        let nv = m.cell_type.vertices();
        if !m.cells.len().is_multiple_of(nv) {
            return Err(Error::Data(format!(
                "{} cell vertices are not whole {}s",
                m.cells.len(),
                m.cell_type.name()
            )));
        }
        if let Some(v) = m.cells.iter().find(|&&v| v as usize >= m.nvertices()) {
            return Err(Error::Data(format!(
                "a cell names vertex {v}, but the mesh has {} vertices",
                m.nvertices()
            )));
        }
        Ok(if m.cell_type == CellType::Triangle {
            let mut m = m.clone();
            m.orient()?;
            let geo = m
                .cells
                .chunks_exact(3)
                .map(|c| {
                    triangle([c[0], c[1], c[2]].map(|i| {
                        let [x, y, _] = m.coords[i as usize];
                        [x, y, 0.0]
                    }))
                })
                .collect();
            let p = m.coords.iter().map(|c| initial_p(c[0], c[1])).collect();
            State::build(p, geo, 3, m.cells)
        } else {
            let geo = m
                .cells
                .chunks_exact(4)
                .map(|c| tetrahedron([0, 1, 2, 3].map(|k| m.coords[c[k] as usize])))
                .collect();
            let p = m.coords.iter().map(|&c| initial_p_3d(c)).collect();
            State::build(p, geo, 4, m.cells.clone())
        })
    }

    fn build(p: Vec<f64>, geo: Vec<Geometry>, arity: usize, cells: Vec<u32>) -> State {
        let n = p.len();
        let mut mass = vec![0.0; n];
        for (c, (vol, _)) in cells.chunks_exact(arity).zip(&geo) {
            for &v in c {
                mass[v as usize] += vol / arity as f64;
            }
        }
        State {
            p,
            phi: vec![0.0; n],
            mass,
            geo,
            arity,
            cells,
            t1: vec![0.0; n],
        }
    }

    fn cell(&self, k: usize) -> &[u32] {
        &self.cells[k * self.arity..(k + 1) * self.arity]
    }

    fn grad(&self, k: usize, phi: &[f64]) -> [f64; 3] {
        let (_, g) = &self.geo[k];
        let mut s = [0.0; 3];
        for (ga, &v) in g.iter().zip(self.cell(k)) {
            for d in 0..3 {
                s[d] += ga[d] * phi[v as usize];
            }
        }
        s
    }

    /// One time step of `dt` (the same five updates as [`super::Wave::step`]).
    pub fn step(&mut self, dt: f64) {
        for (phi, p) in self.phi.iter_mut().zip(&self.p) {
            *phi -= 0.5 * dt * p;
        }
        self.t1.iter_mut().for_each(|t| *t = 0.0);
        for k in 0..self.geo.len() {
            let gr = self.grad(k, &self.phi);
            let (vol, g) = &self.geo[k];
            for (a, &v) in self.cells[k * self.arity..(k + 1) * self.arity]
                .iter()
                .enumerate()
            {
                self.t1[v as usize] += dt * vol * dot(g[a], gr);
            }
        }
        for ((p, t), m) in self.p.iter_mut().zip(&self.t1).zip(&self.mass) {
            *p += t / m;
        }
        for (phi, p) in self.phi.iter_mut().zip(&self.p) {
            *phi -= 0.5 * dt * p;
        }
    }

    /// 1/2 p.M p + 1/2 phi.K phi.
    pub fn energy(&self) -> f64 {
        let kinetic: f64 = self
            .p
            .iter()
            .zip(&self.mass)
            .map(|(p, m)| 0.5 * m * p * p)
            .sum();
        let potential: f64 = (0..self.geo.len())
            .map(|k| {
                let g = self.grad(k, &self.phi);
                0.5 * self.geo[k].0 * dot(g, g)
            })
            .sum();
        kinetic + potential
    }
}
