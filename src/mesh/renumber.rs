//! Locality renumbering, as OP2's renumbering step: a permutation of a Set's elements (a
//! Z-order curve through their coordinates, or any order the user gives) applied to the Set
//! and to every Map and Dat that refers to it, so that what a loop reads through a map sits
//! close in memory. Meshes from Gmsh come numbered in the order the mesher made them:
//! [`Mesh::renumbered`] renumbers a whole [`Mesh`] before it becomes parloop data (vertices in
//! the order of a Z-order curve through their coordinates, cells in the order of the curve
//! through their centroids).
//!
//! ```
//! use parloop::mesh::renumber::Renumbering;
//! use parloop::{Context, Map, Set};
//! # fn main() -> parloop::Result<()> {
//! let ctx = Context::new()?;
//! let nodes = Set::new("nodes", 3);
//! let edges = Set::new("edges", 2);
//! let e2n = Map::new("e2n", &edges, &nodes, 2, &[2, 0, 0, 1])?;
//! let x = ctx.dat("x", &nodes, 1, &[2.0f32, 0.0, 1.0])?;
//! // Order the nodes by x.
//! let r = Renumbering::z_order(&[[2.0, 0.0, 0.0], [0.0, 0.0, 0.0], [1.0, 0.0, 0.0]]);
//! let nodes2 = r.apply(&nodes)?;
//! let e2n2 = nodes2.map(&e2n)?;
//! let x2 = nodes2.dat(&ctx, &x)?;
//! assert_eq!(&*x2.data_ro()?, &[0.0, 1.0, 2.0]);
//! // Old node 0 is new node 2, old 1 is new 0, old 2 is new 1.
//! assert_eq!(e2n2.values(), &[1, 2, 2, 0]);
//! # Ok(())
//! # }
//! ```

use super::Mesh;
#[cfg(not(target_arch = "wasm32"))]
use crate::{Context, Dat, Scalar};
use crate::{Error, Map, Result, Set};

/// A permutation of a set's elements: new element k is old element `order()[k]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Renumbering {
    order: Vec<u32>,
    new_of_old: Vec<u32>,
}

/// Morton codes of points: coordinates scaled to the bounding box, 21 bits per axis,
/// interleaved.
fn morton(points: &[[f64; 3]]) -> Vec<u64> {
    let mut lo = [f64::INFINITY; 3];
    let mut hi = [f64::NEG_INFINITY; 3];
    for p in points {
        for a in 0..3 {
            lo[a] = lo[a].min(p[a]);
            hi[a] = hi[a].max(p[a]);
        }
    }
    let spread = |mut v: u64| {
        // Spread 21 bits so that two zeros follow each.
        v &= 0x1f_ffff;
        v = (v | v << 32) & 0x1f_0000_0000_ffff;
        v = (v | v << 16) & 0x1f_0000_ff00_00ff;
        v = (v | v << 8) & 0x100f_00f0_0f00_f00f;
        v = (v | v << 4) & 0x10c3_0c30_c30c_30c3;
        (v | v << 2) & 0x1249_2492_4924_9249
    };
    points
        .iter()
        .map(|p| {
            let q = |a: usize| {
                let w = hi[a] - lo[a];
                if w > 0.0 {
                    ((p[a] - lo[a]) / w * ((1 << 21) - 1) as f64) as u64
                } else {
                    0
                }
            };
            spread(q(0)) | spread(q(1)) << 1 | spread(q(2)) << 2
        })
        .collect()
}

impl Renumbering {
    /// Elements in the order of a Z-order (Morton) curve through their points (one point per
    /// element: a vertex's coordinates, a cell's centroid; z = 0 in 2-D). Ties keep their order.
    pub fn z_order(points: &[[f64; 3]]) -> Renumbering {
        let codes = morton(points);
        let mut order: Vec<u32> = (0..codes.len() as u32).collect();
        order.sort_by_key(|&i| codes[i as usize]);
        Renumbering::checked(order)
    }

    /// The renumbering whose new element k is old element `order[k]`; `order` must be a
    /// permutation of 0..order.len().
    pub fn from_order(order: Vec<u32>) -> Result<Renumbering> {
        let mut seen = vec![false; order.len()];
        for (k, &o) in order.iter().enumerate() {
            match seen.get_mut(o as usize) {
                Some(s) if !*s => *s = true,
                Some(_) => {
                    return Err(Error::Data(format!(
                        "renumbering: old element {o} appears twice (again at new position {k})"
                    )));
                }
                None => {
                    return Err(Error::Data(format!(
                        "renumbering: old element {o} at new position {k} is out of range \
                         0..{}",
                        order.len()
                    )));
                }
            }
        }
        Ok(Renumbering::checked(order))
    }

    fn checked(order: Vec<u32>) -> Renumbering {
        let mut new_of_old = vec![0u32; order.len()];
        for (k, &o) in order.iter().enumerate() {
            new_of_old[o as usize] = k as u32;
        }
        Renumbering { order, new_of_old }
    }

    /// The old index of each new element.
    pub fn order(&self) -> &[u32] {
        &self.order
    }
    /// The new index of old element `old`.
    pub fn new_index(&self, old: u32) -> u32 {
        self.new_of_old[old as usize]
    }
    /// Number of elements.
    pub fn len(&self) -> usize {
        self.order.len()
    }
    /// Whether it renumbers no element.
    pub fn is_empty(&self) -> bool {
        self.order.is_empty()
    }

    /// Values with `dim` per old element, in the new order.
    pub fn values<T: Copy>(&self, values: &[T], dim: usize) -> Vec<T> {
        self.order
            .iter()
            .flat_map(|&o| &values[o as usize * dim..(o as usize + 1) * dim])
            .copied()
            .collect()
    }

    /// `set` renumbered: a new Set of the same name and size, through which the Maps and Dats
    /// that refer to `set` are renumbered. On one process only (a distributed Set is
    /// partitioned, not renumbered: renumber before distributing).
    pub fn apply(&self, set: &Set) -> Result<Renumbered> {
        if set.halo().is_some() || set.total() != set.size() {
            return Err(Error::Data(format!(
                "renumbering `{}`: a distributed set (or one with halo sections) cannot be \
                 renumbered; renumber the global mesh before distributing it",
                set.name()
            )));
        }
        if set.size() != self.len() {
            return Err(Error::Data(format!(
                "renumbering `{}`: the set has {} elements, the renumbering {}",
                set.name(),
                set.size(),
                self.len()
            )));
        }
        Ok(Renumbered {
            old: set.clone(),
            new: Set::new(set.name(), set.size()),
            r: self.clone(),
        })
    }
}

/// A Set renumbered, and how to carry its Maps and Dats over.
pub struct Renumbered {
    old: Set,
    new: Set,
    r: Renumbering,
}

impl Renumbered {
    /// The renumbered set (same name and size).
    pub fn set(&self) -> &Set {
        &self.new
    }

    /// `map` with the renumbered set in place of the old one: its rows reordered when it
    /// starts on the set, its values renumbered when it ends there (both for a map from the
    /// set to itself). The other end stays as it is.
    pub fn map(&self, map: &Map) -> Result<Map> {
        let (from_here, to_here) = (
            map.from_set().id() == self.old.id(),
            map.to_set().id() == self.old.id(),
        );
        if !from_here && !to_here {
            return Err(Error::Data(format!(
                "renumbering `{}`: map `{}` goes from `{}` to `{}`, not from or to it",
                self.old.name(),
                map.name(),
                map.from_set().name(),
                map.to_set().name()
            )));
        }
        let mut values = map.values().to_vec();
        if from_here {
            values = self.r.values(&values, map.arity());
        }
        if to_here {
            values.iter_mut().for_each(|v| *v = self.r.new_index(*v));
        }
        let from = if from_here { &self.new } else { map.from_set() };
        let to = if to_here { &self.new } else { map.to_set() };
        Map::new(map.name(), from, to, map.arity(), &values)
    }

    /// A Dat on the renumbered set holding `dat`'s current values in the new order (reading
    /// them runs the loops that write `dat`).
    #[cfg(not(target_arch = "wasm32"))]
    pub fn dat<T: Scalar>(&self, ctx: &Context, dat: &Dat<T>) -> Result<Dat<T>> {
        if dat.set().id() != self.old.id() {
            return Err(Error::Data(format!(
                "renumbering `{}`: Dat `{}` is on `{}`",
                self.old.name(),
                dat.name(),
                dat.set().name()
            )));
        }
        let values = self.r.values(&dat.data_ro()?, dat.dim());
        ctx.dat(dat.name(), &self.new, dat.dim(), &values)
    }
}

impl Mesh {
    /// The mesh renumbered for locality: vertices along a Z-order curve, cells along the curve
    /// of their centroids. Returns it and, for each new vertex, its index in `self` (to map
    /// results back). Groups and facets follow their cells and vertices.
    pub fn renumbered(&self) -> (Mesh, Vec<u32>) {
        let vertex_order = Renumbering::z_order(&self.coords).order().to_vec();
        let n = self.cell_type.vertices() as f64;
        let centroids: Vec<[f64; 3]> = (0..self.ncells())
            .map(|c| {
                let mut s = [0.0; 3];
                for &v in self.cell(c) {
                    for a in 0..3 {
                        s[a] += self.coords[v as usize][a] / n;
                    }
                }
                s
            })
            .collect();
        let cell_order = Renumbering::z_order(&centroids).order().to_vec();
        (self.permuted(&vertex_order, &cell_order), vertex_order)
    }

    /// The mesh with vertices and cells in a random order (seeded): what a badly numbered mesh
    /// looks like, for measuring what renumbering buys. Returns it and each new vertex's index
    /// in `self`.
    pub fn shuffled(&self, seed: u64) -> (Mesh, Vec<u32>) {
        let mut rng = crate::util::Rng::new(seed);
        let mut shuffle = |n: usize| {
            let mut p: Vec<u32> = (0..n as u32).collect();
            for i in (1..n).rev() {
                p.swap(i, rng.below(i + 1));
            }
            p
        };
        let vertex_order = shuffle(self.nvertices());
        let cell_order = shuffle(self.ncells());
        (self.permuted(&vertex_order, &cell_order), vertex_order)
    }

    /// Vertex k of the result is `self`'s vertex `vertex_order[k]`, cell k its cell
    /// `cell_order[k]`.
    fn permuted(&self, vertex_order: &[u32], cell_order: &[u32]) -> Mesh {
        let mut new_vertex = vec![0u32; vertex_order.len()];
        for (k, &v) in vertex_order.iter().enumerate() {
            new_vertex[v as usize] = k as u32;
        }
        let mut new_cell = vec![0u32; cell_order.len()];
        for (k, &c) in cell_order.iter().enumerate() {
            new_cell[c as usize] = k as u32;
        }
        let cells = cell_order
            .iter()
            .flat_map(|&c| {
                self.cell(c as usize)
                    .iter()
                    .map(|&v| new_vertex[v as usize])
            })
            .collect();
        let facets = self
            .facets
            .iter()
            .map(|f| f.iter().map(|&v| new_vertex[v as usize]).collect())
            .collect();
        let groups = self
            .groups
            .iter()
            .map(|g| {
                let mut g = g.clone();
                if g.dim == self.dim() {
                    g.members = g.members.iter().map(|&c| new_cell[c as usize]).collect();
                    g.members.sort_unstable();
                }
                g
            })
            .collect();
        Mesh {
            coords: vertex_order
                .iter()
                .map(|&v| self.coords[v as usize])
                .collect(),
            cell_type: self.cell_type,
            cells,
            facets,
            groups,
        }
    }
}
