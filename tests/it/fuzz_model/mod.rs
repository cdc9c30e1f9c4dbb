//! The fuzzer's program generator, the plain-Rust model it is compared with, and the runner.
//! The model keeps its own copy of every value and map and applies each loop element by
//! element: gather (READ and RW the values, WRITE zeros, reductions their identity), run the
//! template, scatter (store WRITE and RW, combine INC, MIN and MAX). It never calls parloop.

pub mod any;
pub mod program;
pub mod template;

use crate::common::ctx_with;
use any::{AnyDat, AnyGlobal};
use parloop::util::Rng;
use parloop::*;
use program::{DatT, GlobalT, MapT, Objects};

/// One fuzz case: the seed of its program and the configuration it runs under.
#[derive(Clone, Debug)]
pub struct Case {
    pub seed: u64,
    pub strategy: Strategy,
    pub staging: Staging,
    pub lazy: bool,
    pub fusion: bool,
    pub block_size: Option<usize>,
    pub workgroup_size: u32,
    pub grid_limit: Option<u32>,
    /// Checking mode: every kernel index is guarded, and none may be reported.
    pub check: bool,
    /// `Config::reduction_workgroups`: small caps make each invocation of a reducing loop
    /// stride over many elements.
    pub reduction_workgroups: Option<u32>,
}

impl Case {
    /// The configuration cycles through the strategies with the seed (those FUZZ_STRATEGIES
    /// names, when `filtered`); the rest is random.
    pub fn new(seed: u64, float_atomics: bool, filtered: bool) -> Case {
        // `parloop::Variant::ALL`'s order (fixed, so that a seed keeps its strategy).
        // Regression seeds (unfiltered) were recorded before `staged` and `tune` existed: they keep the
        // list they were found with, so that each still runs its strategy.
        let mut strategies: Vec<(Strategy, Staging)> = Variant::available(float_atomics)
            .filter(|v| filtered || !matches!(v.strategy, Strategy::Staged | Strategy::Tune))
            .map(|v| (v.strategy, v.staging))
            .collect();
        // FUZZ_STRATEGIES=global-colour,cas,hierarchical-none,... narrows the list (CI's OpenGL
        // pass leaves out hierarchical staging, which llvmpipe runs for minutes per case).
        if filtered {
            strategies.retain(|&(s, st)| allowed(s, st));
            assert!(!strategies.is_empty(), "FUZZ_STRATEGIES names no strategy");
        }
        let (strategy, staging) = strategies[(seed % strategies.len() as u64) as usize];
        let mut rng = Rng::new(seed ^ 0xC0FF_EE00);
        Case {
            seed,
            strategy,
            staging,
            lazy: rng.chance(0.6),
            fusion: rng.chance(0.7),
            block_size: rng
                .chance(0.5)
                .then(|| [16, 32, 64, 128, 256][rng.below(5)]),
            workgroup_size: [64, 64, 32, 128, 16, 48, 96][rng.below(7)],
            grid_limit: rng.chance(0.6).then(|| 1 + rng.below(4) as u32),
            check: rng.chance(0.25),
            // Drawn last: the fields above keep the values a seed had before it existed.
            reduction_workgroups: rng.chance(0.5).then(|| 1 + rng.below(3) as u32),
        }
    }

    pub fn describe(&self) -> String {
        format!(
            "strategy {} staging {:?}, {}, fusion {}, block size {:?}, workgroup size {}, grid \
             limit {:?}, checking {}, reduction workgroups {:?}",
            self.strategy.name(),
            self.staging,
            if self.lazy { "lazy" } else { "eager" },
            if self.fusion { "on" } else { "off" },
            self.block_size,
            self.workgroup_size,
            self.grid_limit,
            if self.check { "on" } else { "off" },
            self.reduction_workgroups
        )
    }
    pub fn config(&self) -> Config {
        Config {
            strategy: self.strategy,
            staging: self.staging,
            lazy: self.lazy,
            fusion: self.fusion,
            block_size: self.block_size,
            workgroup_size: self.workgroup_size,
            grid_limit: self.grid_limit,
            check: self.check,
            reduction_workgroups: self.reduction_workgroups,
            // `tune` switches candidate at every execution of a group, and starts afresh.
            tune_cache: parloop::TuneCache::Off,
            tune_reps: 1,
            ..Config::from_env().unwrap()
        }
    }
}

/// Whether FUZZ_STRATEGIES (if set) names this strategy: `hierarchical-inc`, `cas`, ...
pub fn allowed(s: Strategy, st: Staging) -> bool {
    let name = Variant::new(s, st).name();
    std::env::var("FUZZ_STRATEGIES").map_or(true, |only| only.split(',').any(|o| o.trim() == name))
}

struct World {
    ctx: Context,
    rng: Rng,
    sets: [Set; 2],
    subsets: [(Subset, Vec<u32>); 2],
    /// Maps, Dats (0 cells, 1 nodes), Globals, parloop's and the model's.
    obj: Objects,
    kernels: usize,
}

pub fn random_values(rng: &mut Rng, dtype: DType, n: usize) -> Vec<u32> {
    (0..n)
        .map(|_| match dtype {
            DType::F64 => unreachable!("the fuzzer draws f32, u32 and i32"),
            DType::F32 => ((rng.below(65) as f32 - 32.0) * 0.25).to_bits(),
            DType::U32 => rng.below(64) as u32,
            DType::I32 => (rng.below(101) as i32 - 50) as u32,
        })
        .collect()
}

pub fn identity(dtype: DType, access: Access) -> u32 {
    match (dtype, access) {
        (DType::F64, _) => unreachable!("the fuzzer draws f32, u32 and i32"),
        (DType::F32, Access::Min) => f32::INFINITY.to_bits(),
        (DType::F32, Access::Max) => f32::NEG_INFINITY.to_bits(),
        (DType::U32, Access::Min) => u32::MAX,
        (DType::I32, Access::Min) => i32::MAX as u32,
        (DType::I32, Access::Max) => i32::MIN as u32,
        _ => 0,
    }
}

pub fn combine(dtype: DType, access: Access, a: u32, b: u32) -> u32 {
    match (dtype, access) {
        (DType::F64, _) => unreachable!("the fuzzer draws f32, u32 and i32"),
        (DType::F32, Access::Min) => f32::from_bits(a).min(f32::from_bits(b)).to_bits(),
        (DType::F32, Access::Max) => f32::from_bits(a).max(f32::from_bits(b)).to_bits(),
        (DType::F32, _) => (f32::from_bits(a) + f32::from_bits(b)).to_bits(),
        (DType::U32, Access::Min) => a.min(b),
        (DType::U32, Access::Max) => a.max(b),
        (DType::U32, _) => a.wrapping_add(b),
        (DType::I32, Access::Min) => (a as i32).min(b as i32) as u32,
        (DType::I32, Access::Max) => (a as i32).max(b as i32) as u32,
        (DType::I32, _) => (a as i32).wrapping_add(b as i32) as u32,
    }
}

pub const DTYPES: [DType; 3] = [DType::F32, DType::U32, DType::I32];

impl World {
    fn new(ctx: Context, seed: u64) -> World {
        let mut rng = Rng::new(seed);
        let ncells = 200 + rng.below(2800);
        let nnodes = (ncells / (2 + rng.below(4))).max(4);
        let sets = [Set::new("cells", ncells), Set::new("nodes", nnodes)];
        let subset = |rng: &mut Rng, set: &Set, name: &str, p: f64| {
            let idx: Vec<u32> = (0..set.size() as u32).filter(|_| rng.chance(p)).collect();
            (Subset::new(name, set, &idx).unwrap(), idx)
        };
        let subsets = [
            subset(&mut rng, &sets[0], "some_cells", 0.5),
            subset(&mut rng, &sets[1], "some_nodes", 0.3),
        ];
        let mut w = World {
            ctx,
            rng,
            sets,
            subsets,
            obj: Objects::default(),
            kernels: 0,
        };
        // cells -> nodes, arity 3, sometimes with index 0 on three hub nodes (thread colours
        // beyond 32 in a block); cells -> nodes, arity 2 (a second map into the same Dats);
        // nodes -> cells, injective; cells -> cells, two permutations (column-injective).
        let hub = w.rng.chance(0.4);
        let c2n: Vec<u32> = (0..ncells * 3)
            .map(|i| {
                if hub && i % 3 == 0 {
                    w.rng.below(3) as u32
                } else {
                    w.rng.below(nnodes) as u32
                }
            })
            .collect();
        w.add_map("c2n", 0, 1, 3, c2n);
        let c2n2: Vec<u32> = (0..ncells * 2)
            .map(|_| w.rng.below(nnodes) as u32)
            .collect();
        w.add_map("c2n_b", 0, 1, 2, c2n2);
        let p = perm(&mut w.rng, ncells);
        w.add_map("n2c", 1, 0, 1, p[..nnodes].to_vec());
        let (p1, p2) = (perm(&mut w.rng, ncells), perm(&mut w.rng, ncells));
        let c2c: Vec<u32> = (0..ncells).flat_map(|e| [p1[e], p2[e]]).collect();
        w.add_map("c2c", 0, 0, 2, c2c);
        for i in 0..3 + w.rng.below(4) {
            w.add_dat(&format!("d{i}"));
        }
        for i in 0..1 + w.rng.below(3) {
            let dtype = DTYPES[w.rng.below(3)];
            let dim = 1 + w.rng.below(2);
            let vals = random_values(&mut w.rng, dtype, dim);
            let handle = AnyGlobal::new(&w.ctx, &format!("g{i}"), dtype, &vals).unwrap();
            w.obj.globals.push(GlobalT {
                handle,
                dtype,
                vals,
            });
        }
        w
    }

    fn add_map(&mut self, name: &str, from: usize, to: usize, arity: usize, values: Vec<u32>) {
        let map = Map::new(name, &self.sets[from], &self.sets[to], arity, &values).unwrap();
        let n = self.sets[to].total();
        self.obj
            .maps
            .push(MapT::new(map, from, to, arity, values, n));
    }

    /// A new Dat on a random set, of a random type and dim; random values or zeros.
    fn add_dat(&mut self, name: &str) -> usize {
        let set = self.rng.below(2);
        let dtype = DTYPES[self.rng.below(3)];
        let dim = 1 + self.rng.below(3);
        self.add_dat_on(name, set, dtype, dim)
    }

    fn add_dat_on(&mut self, name: &str, set: usize, dtype: DType, dim: usize) -> usize {
        let n = self.sets[set].total() * dim;
        let zeros = self.rng.chance(0.25);
        let vals = if zeros {
            vec![0; n]
        } else {
            random_values(&mut self.rng, dtype, n)
        };
        let local = (!zeros).then(|| vals.clone());
        let handle = AnyDat::new(&self.ctx, name, &self.sets[set], dtype, dim, local).unwrap();
        self.obj.dats.push(DatT {
            handle: Some(handle),
            set,
            dim,
            dtype,
            vals,
        });
        self.obj.dats.len() - 1
    }
}

/// A random permutation of 0..n.
pub fn perm(rng: &mut Rng, n: usize) -> Vec<u32> {
    let mut p: Vec<u32> = (0..n as u32).collect();
    for i in (1..n).rev() {
        p.swap(i, rng.below(i + 1));
    }
    p
}

mod run;
#[allow(unused_imports)] // the distributed fuzzer uses the model, not this runner
pub use run::run_case;
