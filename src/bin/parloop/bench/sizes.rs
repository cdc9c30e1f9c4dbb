//! The sizes of a `parloop bench` run: `tiny` (what CI runs), `small` and `full`.

/// The sizes of one run.
pub struct Sizes {
    pub(super) name: String,
    pub(super) copy_bytes: u64,
    /// Squares per side of the strategy tables' triangle mesh.
    pub(super) tri_n: usize,
    /// Cubes per side of the contention section's tetrahedra.
    pub(super) tet_n: usize,
    /// Elements of the contention section's scatters into bins.
    pub(super) hub_n: usize,
    /// The strategy table's Airfoil mesh.
    pub(super) res_mesh: (usize, usize),
    /// The wave for fusion and lazy vs eager.
    pub(super) mode_n: usize,
    pub(super) wave_ns: [usize; 3],
    pub(super) airfoil_meshes: [(usize, usize); 2],
    pub(super) iterations: usize,
    /// Squares per side of the CG section's unit square.
    pub(super) solver_n: usize,
    /// Element counts of the vector section.
    pub(super) vector_ns: Vec<usize>,
    /// The CG section's types (empty: f32 and, where the adapter has it, f64).
    pub(super) solver_types: Vec<String>,
}

impl Sizes {
    /// `tiny`, `small` or `full`, with the Airfoil iterations and the CG square if given.
    pub fn named(name: &str, iterations: Option<usize>, solver_n: Option<usize>) -> Sizes {
        let s = match name {
            "tiny" => Sizes {
                name: name.into(),
                copy_bytes: 1 << 20,
                tri_n: 20,
                tet_n: 4,
                hub_n: 10_000,
                res_mesh: (20, 30),
                mode_n: 20,
                wave_ns: [10, 20, 30],
                airfoil_meshes: [(20, 30), (40, 60)],
                iterations: 5,
                solver_n: 30,
                vector_ns: vec![10_000, 100_000],
                solver_types: Vec::new(),
            },
            "small" => Sizes {
                name: name.into(),
                copy_bytes: 64 << 20,
                tri_n: 280,
                tet_n: 24,
                hub_n: 1_000_000,
                res_mesh: (200, 300),
                mode_n: 200,
                wave_ns: [100, 200, 400],
                airfoil_meshes: [(200, 300), (400, 600)],
                iterations: 20,
                solver_n: 316,
                vector_ns: vec![1_000_000, 10_000_000],
                solver_types: Vec::new(),
            },
            _ => Sizes {
                name: "full".into(),
                copy_bytes: 256 << 20,
                tri_n: 840,
                tet_n: 48,
                hub_n: 10_000_000,
                res_mesh: (400, 600),
                mode_n: 1000,
                wave_ns: [100, 400, 1000],
                airfoil_meshes: [(400, 600), (800, 1200)],
                iterations: 1000,
                solver_n: 1000,
                vector_ns: vec![1_000_000, 10_000_000],
                solver_types: Vec::new(),
            },
        };
        Sizes {
            iterations: iterations.unwrap_or(s.iterations).max(1),
            solver_n: solver_n.unwrap_or(s.solver_n).max(1),
            ..s
        }
    }

    /// Only these types in the CG section (empty: every type).
    pub fn solver_types(self, types: Vec<String>) -> Sizes {
        Sizes {
            solver_types: types,
            ..self
        }
    }
}
