//! Airfoil's mesh: the NACA0012 C-grid generator (parameters I, J), OP2's
//! `new_grid.dat` ASCII format (reader and writer), and consistency checks. [`AirfoilMesh`] is
//! its own structure, not a [`super::Mesh`]: OP2's edges come with their cells, in the file's
//! order, which Airfoil's published rms history depends on. Its errors are [`MeshError`]s.

use super::MeshError;
use std::fmt::Write as _;

/// Airfoil's unstructured quad mesh: nodes, cells, edges (with their two cells), and boundary
/// edges (with their cell and type: 1 = airfoil wall, 2 = far field). Ids are 0-based.
#[derive(Clone, Debug, PartialEq)]
pub struct AirfoilMesh {
    /// Node coordinates.
    pub x: Vec<[f64; 2]>,
    /// Each cell's four nodes.
    pub cells: Vec<[u32; 4]>,
    /// Each edge's two nodes.
    pub edges: Vec<[u32; 2]>,
    /// Each edge's two cells.
    pub ecells: Vec<[u32; 2]>,
    /// Each boundary edge's two nodes.
    pub bedges: Vec<[u32; 2]>,
    /// Each boundary edge's cell.
    pub becells: Vec<u32>,
    /// Each boundary edge's type (1: airfoil wall, 2: far field).
    pub bound: Vec<u32>,
}

/// (nodes, cells, edges, boundary edges) of the I x J C-grid.
pub fn counts(i: usize, j: usize) -> (usize, usize, usize, usize) {
    (
        (3 * i + 1) * (j + 1),
        3 * i * j,
        (3 * i - 1) * j + 3 * i * (j - 1) + i,
        4 * i + 2 * j,
    )
}

/// a + k (b - a) / (n - 1), k = 0..n-1, both ends exact.
fn linspace(a: f64, b: f64, n: usize) -> Vec<f64> {
    (0..n)
        .map(|k| {
            if k + 1 == n {
                b
            } else {
                a + k as f64 * (b - a) / (n - 1) as f64
            }
        })
        .collect()
}

/// The principal square root of x + i y.
fn csqrt(x: f64, y: f64) -> (f64, f64) {
    let r = x.hypot(y);
    let re = ((r + x) / 2.0).sqrt();
    let im = ((r - x) / 2.0).sqrt();
    (re, if y < 0.0 { -im } else { im })
}

/// The airfoil surface mapped to the square-root plane: 199 points (x increasing).
fn surface() -> (Vec<f64>, Vec<f64>) {
    let t = linspace(0.0, std::f64::consts::FRAC_PI_2, 100);
    let mut pts = Vec::with_capacity(100);
    for (k, &tk) in t.iter().enumerate() {
        let x = tk.sin().powi(2);
        let y = if k == 99 {
            0.0
        } else {
            0.594689181
                * (0.298222773 * x.sqrt() - 0.127125232 * x - 0.357907906 * x.powi(2)
                    + 0.291984971 * x.powi(3)
                    - 0.105174696 * x.powi(4))
        };
        pts.push(csqrt(x - 0.0077, y));
    }
    // [-conj(z) reversed, then z without its first point]
    let mut xs: Vec<f64> = pts.iter().rev().map(|&(a, _)| -a).collect();
    let mut ys: Vec<f64> = pts.iter().rev().map(|&(_, b)| b).collect();
    xs.extend(pts[1..].iter().map(|&(a, _)| a));
    ys.extend(pts[1..].iter().map(|&(_, b)| b));
    (xs, ys)
}

/// The NACA0012 C-grid with parameters I (around) and J (outwards). I = 400, J = 600 is OP2's
/// standard 720,000-cell mesh.
pub fn naca0012(ni: usize, nj: usize) -> AirfoilMesh {
    let (ni, nj) = (ni.max(1), nj.max(1));
    let (xs, ys) = surface();
    let spline = super::spline::NotAKnot::new(&xs, &ys);
    let xb = linspace(-3.0, 3.0, 3 * ni + 1);
    // 1-based indices as in the specification.
    let yb = |i: usize| {
        if (ni + 2..=2 * ni).contains(&i) {
            spline.eval(xb[i - 1])
        } else {
            0.0
        }
    };
    let columns: Vec<Vec<f64>> = (1..=3 * ni + 1)
        .map(|i| linspace(yb(i), 3.0, nj + 1))
        .collect();
    let node = |i: usize, j: usize| ((i - 1) + (j - 1) * (3 * ni + 1)) as u32;
    let cell = |i: usize, j: usize| ((i - 1) + (j - 1) * 3 * ni) as u32;
    let mut x = vec![[0.0; 2]; (3 * ni + 1) * (nj + 1)];
    for j in 1..=nj + 1 {
        for i in 1..=3 * ni + 1 {
            let (a, b) = (xb[i - 1], columns[i - 1][j - 1]);
            x[node(i, j) as usize] = [a * a - b * b, 2.0 * a * b];
        }
    }
    let mut cells = Vec::with_capacity(3 * ni * nj);
    for j in 1..=nj {
        for i in 1..=3 * ni {
            cells.push([
                node(i, j),
                node(i + 1, j),
                node(i + 1, j + 1),
                node(i, j + 1),
            ]);
        }
    }
    let (mut edges, mut ecells) = (Vec::new(), Vec::new());
    for j in 1..=nj {
        for i in 1..=3 * ni {
            if j == 1 && i <= ni {
                edges.push([node(i, 1), node(i + 1, 1)]);
                ecells.push([cell(3 * ni + 1 - i, 1), cell(i, 1)]);
            }
            if j < nj {
                edges.push([node(i, j + 1), node(i + 1, j + 1)]);
                ecells.push([cell(i, j), cell(i, j + 1)]);
            }
            if i < 3 * ni {
                edges.push([node(i + 1, j), node(i + 1, j + 1)]);
                ecells.push([cell(i + 1, j), cell(i, j)]);
            }
        }
    }
    let (mut bedges, mut becells, mut bound) = (Vec::new(), Vec::new(), Vec::new());
    let mut b = |n: [u32; 2], c: u32, t: u32| {
        bedges.push(n);
        becells.push(c);
        bound.push(t);
    };
    for i in ni + 1..=2 * ni {
        b([node(i + 1, 1), node(i, 1)], cell(i, 1), 1);
    }
    for j in 1..=nj {
        b(
            [node(3 * ni + 1, j + 1), node(3 * ni + 1, j)],
            cell(3 * ni, j),
            2,
        );
    }
    for i in (1..=3 * ni).rev() {
        b([node(i, nj + 1), node(i + 1, nj + 1)], cell(i, nj), 2);
    }
    for j in (1..=nj).rev() {
        b([node(1, j), node(1, j + 1)], cell(1, j), 2);
    }
    AirfoilMesh {
        x,
        cells,
        edges,
        ecells,
        bedges,
        becells,
        bound,
    }
}

impl AirfoilMesh {
    /// Numbers of nodes, cells, edges and boundary edges.
    pub fn counts(&self) -> (usize, usize, usize, usize) {
        (
            self.x.len(),
            self.cells.len(),
            self.edges.len(),
            self.bedges.len(),
        )
    }

    /// Rounds coordinates to 6 decimals, as OP2's standard `new_grid.dat` stores them.
    pub fn round6(&mut self) {
        for p in &mut self.x {
            for c in p.iter_mut() {
                *c = format!("{c:.6}").parse().unwrap_or(*c);
            }
        }
    }

    /// The `new_grid.dat` text (coordinates with 6 decimals).
    pub fn to_grid_dat(&self) -> String {
        let (nn, nc, ne, nb) = self.counts();
        let mut s = String::with_capacity(nn * 24 + (nc + ne + nb) * 28);
        let _ = writeln!(s, "{nn} {nc} {ne} {nb}");
        for p in &self.x {
            let _ = writeln!(s, "{:.6} {:.6}", p[0], p[1]);
        }
        for c in &self.cells {
            let _ = writeln!(s, "{} {} {} {}", c[0], c[1], c[2], c[3]);
        }
        for (n, c) in self.edges.iter().zip(&self.ecells) {
            let _ = writeln!(s, "{} {} {} {}", n[0], n[1], c[0], c[1]);
        }
        for ((n, c), t) in self.bedges.iter().zip(&self.becells).zip(&self.bound) {
            let _ = writeln!(s, "{} {} {c} {t}", n[0], n[1]);
        }
        s
    }

    /// Parses `new_grid.dat`; errors name the line and what was expected there.
    pub fn from_grid_dat(text: &str) -> Result<AirfoilMesh, MeshError> {
        AirfoilMesh::parse_grid_dat(text)
    }

    fn parse_grid_dat(text: &str) -> Result<AirfoilMesh, MeshError> {
        let mut lines = text
            .lines()
            .enumerate()
            .filter(|(_, l)| !l.trim().is_empty());
        let mut next = |what: &str, n: usize| -> Result<(usize, Vec<String>), MeshError> {
            let (no, line) = lines.next().ok_or_else(|| {
                MeshError::new(format!("the file ends where {what} was expected"))
            })?;
            let fields: Vec<String> = line.split_whitespace().map(str::to_string).collect();
            if fields.len() < n {
                return Err(MeshError::new(format!(
                    "line {}: expected {n} fields for {what}, found {}",
                    no + 1,
                    fields.len()
                )));
            }
            Ok((no + 1, fields))
        };
        fn num<T: std::str::FromStr>(line: usize, s: &str, what: &str) -> Result<T, MeshError> {
            s.parse()
                .map_err(|_| MeshError::new(format!("line {line}: {s:?} is not a valid {what}")))
        }
        let (l0, h) = next("the header `nnode ncell nedge nbedge`", 4)?;
        let [nn, nc, ne, nb]: [usize; 4] = [
            num(l0, &h[0], "count")?,
            num(l0, &h[1], "count")?,
            num(l0, &h[2], "count")?,
            num(l0, &h[3], "count")?,
        ];
        // The header's counts must fit the lines the file has (a damaged header must not make
        // us reserve memory for billions of entries).
        let lines_left = text
            .lines()
            .skip(l0)
            .filter(|l| !l.trim().is_empty())
            .count();
        let needed = [nn, nc, ne, nb]
            .iter()
            .try_fold(0usize, |a, &b| a.checked_add(b));
        if needed.is_none_or(|n| n > lines_left) {
            return Err(MeshError::new(format!(
                "line {l0}: the header announces {nn} nodes, {nc} cells, {ne} edges and {nb} \
                 boundary edges, one line each, but only {lines_left} lines follow"
            )));
        }
        let mut m = AirfoilMesh {
            x: Vec::with_capacity(nn),
            cells: Vec::with_capacity(nc),
            edges: Vec::with_capacity(ne),
            ecells: Vec::with_capacity(ne),
            bedges: Vec::with_capacity(nb),
            becells: Vec::with_capacity(nb),
            bound: Vec::with_capacity(nb),
        };
        for _ in 0..nn {
            let (l, f) = next("a node `x y`", 2)?;
            m.x.push([num(l, &f[0], "coordinate")?, num(l, &f[1], "coordinate")?]);
        }
        let id = |l: usize, s: &str, limit: usize, what: &str| -> Result<u32, MeshError> {
            let v: u32 = num(l, s, "id")?;
            if v as usize >= limit {
                return Err(MeshError::new(format!(
                    "line {l}: {what} id {v} is out of range (there are {limit})"
                )));
            }
            Ok(v)
        };
        for _ in 0..nc {
            let (l, f) = next("a cell (4 node ids)", 4)?;
            let mut c = [0u32; 4];
            for k in 0..4 {
                c[k] = id(l, &f[k], nn, "node")?;
            }
            m.cells.push(c);
        }
        for _ in 0..ne {
            let (l, f) = next("an edge `n1 n2 c1 c2`", 4)?;
            m.edges
                .push([id(l, &f[0], nn, "node")?, id(l, &f[1], nn, "node")?]);
            m.ecells
                .push([id(l, &f[2], nc, "cell")?, id(l, &f[3], nc, "cell")?]);
        }
        for _ in 0..nb {
            let (l, f) = next("a boundary edge `n1 n2 c bound`", 4)?;
            m.bedges
                .push([id(l, &f[0], nn, "node")?, id(l, &f[1], nn, "node")?]);
            m.becells.push(id(l, &f[2], nc, "cell")?);
            m.bound.push(num(l, &f[3], "boundary type")?);
        }
        Ok(m)
    }

    /// Maps in range, and every interior edge's two cells share its two nodes. Across the wake
    /// cut of the C-grid the two sides have distinct nodes at the same places: there a cell
    /// shares the edge's node positions.
    pub fn check(&self) -> Result<(), MeshError> {
        self.consistency()
    }

    fn consistency(&self) -> Result<(), MeshError> {
        let (nn, nc, _, _) = self.counts();
        let node_ok = |v: u32| (v as usize) < nn;
        if let Some(c) = self
            .cells
            .iter()
            .position(|c| !c.iter().all(|&v| node_ok(v)))
        {
            return Err(MeshError::new(format!(
                "cell {c} has a node id out of range"
            )));
        }
        for (e, (n, c)) in self.edges.iter().zip(&self.ecells).enumerate() {
            if !n.iter().all(|&v| node_ok(v)) || !c.iter().all(|&v| (v as usize) < nc) {
                return Err(MeshError::new(format!("edge {e} has an id out of range")));
            }
            for &k in c {
                let cell = &self.cells[k as usize];
                let at = |w: u32, v: u32| {
                    let (a, b) = (self.x[w as usize], self.x[v as usize]);
                    (a[0] - b[0]).abs() + (a[1] - b[1]).abs() <= 1e-9
                };
                let has = |v: &u32| cell.contains(v) || cell.iter().any(|&w| at(w, *v));
                if !n.iter().all(has) {
                    return Err(MeshError::new(format!(
                        "edge {e} ({n:?}) is not a side of its cell {k} ({cell:?})"
                    )));
                }
            }
        }
        for (b, (n, &c)) in self.bedges.iter().zip(&self.becells).enumerate() {
            if (c as usize) >= nc || !n.iter().all(|v| self.cells[c as usize].contains(v)) {
                return Err(MeshError::new(format!(
                    "boundary edge {b} is not a side of its cell {c}"
                )));
            }
        }
        Ok(())
    }
}
