//! The fuzzer's program generator, the plain-Rust model it is compared with, and the runner.
//! The model keeps its own copy of every value and map and applies each loop element by
//! element: gather (READ and RW the values, WRITE zeros, reductions their identity), run the
//! template, scatter (store WRITE and RW, combine INC, MIN and MAX). It never calls parloop.

pub mod template;

use crate::common::ctx_with;
use parloop::util::Rng;
use parloop::*;
use template::Template;

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
}

impl Case {
    /// The configuration cycles through the strategies with the seed (those FUZZ_STRATEGIES
    /// names, when `filtered`); the rest is random.
    pub fn new(seed: u64, float_atomics: bool, filtered: bool) -> Case {
        let mut strategies = vec![
            (Strategy::Hierarchical, Staging::Inc),
            (Strategy::Hierarchical, Staging::All),
            (Strategy::Hierarchical, Staging::None),
            (Strategy::GlobalColour, Staging::Inc),
            (Strategy::Cas, Staging::Inc),
        ];
        if float_atomics {
            strategies.push((Strategy::Atomics, Staging::Inc));
        }
        // Regression seeds (unfiltered) were recorded before `staged` existed: they keep the
        // list they were found with, so that each still runs its strategy.
        if filtered {
            strategies.push((Strategy::Staged, Staging::Inc));
        }
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
        }
    }

    pub fn describe(&self) -> String {
        format!(
            "strategy {} staging {:?}, {}, fusion {}, block size {:?}, workgroup size {}, grid \
             limit {:?}, checking {}",
            self.strategy.name(),
            self.staging,
            if self.lazy { "lazy" } else { "eager" },
            if self.fusion { "on" } else { "off" },
            self.block_size,
            self.workgroup_size,
            self.grid_limit,
            if self.check { "on" } else { "off" }
        )
    }
    fn config(&self) -> Config {
        Config {
            strategy: self.strategy,
            staging: self.staging,
            lazy: self.lazy,
            fusion: self.fusion,
            block_size: self.block_size,
            workgroup_size: self.workgroup_size,
            grid_limit: self.grid_limit,
            check: self.check,
            ..Config::from_env().unwrap()
        }
    }
}

/// Whether FUZZ_STRATEGIES (if set) names this strategy: `hierarchical-inc`, `cas`, ...
pub fn allowed(s: Strategy, st: Staging) -> bool {
    let name = match s {
        Strategy::Hierarchical => format!("hierarchical-{st:?}").to_lowercase(),
        s => s.name().to_string(),
    };
    std::env::var("FUZZ_STRATEGIES").map_or(true, |only| only.split(',').any(|o| o.trim() == name))
}

/// A Dat of any type.
enum AnyDat {
    F(Dat<f32>),
    U(Dat<u32>),
    I(Dat<i32>),
}

macro_rules! each {
    ($s:expr, $d:ident => $e:expr) => {
        match $s {
            AnyDat::F($d) => $e,
            AnyDat::U($d) => $e,
            AnyDat::I($d) => $e,
        }
    };
}

/// A Global of any type.
enum AnyGlobal {
    F(Global<f32>),
    U(Global<u32>),
    I(Global<i32>),
}

/// How an argument reaches its data (map indices refer to `World::maps`).
#[derive(Clone, Copy, Debug, PartialEq)]
enum ViaT {
    Direct,
    At(usize, usize),
    All(usize),
    Global,
}

#[derive(Clone, Copy, Debug)]
struct ArgT {
    /// Index into `World::dats` or `World::globals`.
    data: usize,
    via: ViaT,
    access: Access,
}

struct DatT {
    handle: Option<AnyDat>,
    /// 0 cells, 1 nodes.
    set: usize,
    dim: usize,
    dtype: DType,
    /// The model's values (bit patterns).
    vals: Vec<u32>,
}

struct GlobalT {
    handle: AnyGlobal,
    dtype: DType,
    vals: Vec<u32>,
}

struct MapT {
    map: Option<Map>,
    from: usize,
    to: usize,
    arity: usize,
    values: Vec<u32>,
    /// Each column injective (WRITE and RW allowed at one index).
    columns_injective: bool,
    /// All columns together injective (WRITE and RW allowed through all indices).
    all_injective: bool,
}

struct World {
    ctx: Context,
    rng: Rng,
    sets: [Set; 2],
    subsets: [(Subset, Vec<u32>); 2],
    maps: Vec<MapT>,
    dats: Vec<DatT>,
    globals: Vec<GlobalT>,
    fzk: i32,
    kernels: usize,
}

fn random_values(rng: &mut Rng, dtype: DType, n: usize) -> Vec<u32> {
    (0..n)
        .map(|_| match dtype {
            DType::F64 => unreachable!("the fuzzer draws f32, u32 and i32"),
            DType::F32 => ((rng.below(65) as f32 - 32.0) * 0.25).to_bits(),
            DType::U32 => rng.below(64) as u32,
            DType::I32 => (rng.below(101) as i32 - 50) as u32,
        })
        .collect()
}

fn identity(dtype: DType, access: Access) -> u32 {
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

fn combine(dtype: DType, access: Access, a: u32, b: u32) -> u32 {
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

const DTYPES: [DType; 3] = [DType::F32, DType::U32, DType::I32];

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
            maps: Vec::new(),
            dats: Vec::new(),
            globals: Vec::new(),
            fzk: 0,
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
        let perm = |rng: &mut Rng, n: usize| {
            let mut p: Vec<u32> = (0..n as u32).collect();
            for i in (1..n).rev() {
                p.swap(i, rng.below(i + 1));
            }
            p
        };
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
            let name = format!("g{i}");
            let handle = match dtype {
                DType::F64 => unreachable!("the fuzzer draws f32, u32 and i32"),
                DType::F32 => {
                    AnyGlobal::F(w.ctx.global(&name, bytemuck::cast_slice(&vals)).unwrap())
                }
                DType::U32 => AnyGlobal::U(w.ctx.global(&name, &vals).unwrap()),
                DType::I32 => {
                    AnyGlobal::I(w.ctx.global(&name, bytemuck::cast_slice(&vals)).unwrap())
                }
            };
            w.globals.push(GlobalT {
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
        let injective = |cols: Vec<u32>| {
            let mut seen = vec![false; n];
            cols.into_iter()
                .all(|t| !std::mem::replace(&mut seen[t as usize], true))
        };
        let columns_injective =
            (0..arity).all(|j| injective(values.iter().skip(j).step_by(arity).copied().collect()));
        let all_injective = injective(values.clone());
        self.maps.push(MapT {
            map: Some(map),
            from,
            to,
            arity,
            values,
            columns_injective,
            all_injective,
        });
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
        let (ctx, s) = (&self.ctx, &self.sets[set]);
        let handle = match (dtype, zeros) {
            (DType::F64, _) => unreachable!("the fuzzer draws f32, u32 and i32"),
            (DType::F32, true) => AnyDat::F(ctx.dat_zeros(name, s, dim).unwrap()),
            (DType::U32, true) => AnyDat::U(ctx.dat_zeros(name, s, dim).unwrap()),
            (DType::I32, true) => AnyDat::I(ctx.dat_zeros(name, s, dim).unwrap()),
            (DType::F32, false) => {
                AnyDat::F(ctx.dat(name, s, dim, bytemuck::cast_slice(&vals)).unwrap())
            }
            (DType::U32, false) => AnyDat::U(ctx.dat(name, s, dim, &vals).unwrap()),
            (DType::I32, false) => {
                AnyDat::I(ctx.dat(name, s, dim, bytemuck::cast_slice(&vals)).unwrap())
            }
        };
        self.dats.push(DatT {
            handle: Some(handle),
            set,
            dim,
            dtype,
            vals,
        });
        self.dats.len() - 1
    }

    fn width(&self, a: &ArgT) -> usize {
        match a.via {
            ViaT::Global => self.globals[a.data].vals.len(),
            ViaT::All(m) => self.maps[m].arity * self.dats[a.data].dim,
            _ => self.dats[a.data].dim,
        }
    }
    fn dtype(&self, a: &ArgT) -> DType {
        match a.via {
            ViaT::Global => self.globals[a.data].dtype,
            _ => self.dats[a.data].dtype,
        }
    }

    /// The arguments of a random legal loop over `set`.
    fn pick_args(&mut self, set: usize) -> Vec<ArgT> {
        const REDUCE: [Access; 4] = [Access::Read, Access::Inc, Access::Min, Access::Max];
        let mut args: Vec<ArgT> = Vec::new();
        let mut maps_used: Vec<usize> = Vec::new();
        for d in 0..self.dats.len() {
            if self.dats[d].handle.is_none() || !self.rng.chance(0.5) || args.len() >= 4 {
                continue;
            }
            let to = self.dats[d].set;
            // Maps from the loop's set to the Dat's set, and their legal uses.
            let maps: Vec<usize> = (0..self.maps.len())
                .filter(|&m| self.maps[m].map.is_some())
                .filter(|&m| self.maps[m].from == set && self.maps[m].to == to)
                .filter(|&m| maps_used.contains(&m) || maps_used.len() < 2)
                .collect();
            let direct = to == set && (maps.is_empty() || self.rng.chance(0.5));
            if direct {
                let access = Access::ALL[self.rng.below(6)];
                args.push(ArgT {
                    data: d,
                    via: ViaT::Direct,
                    access,
                });
                continue;
            }
            if maps.is_empty() {
                continue;
            }
            let m = maps[self.rng.below(maps.len())];
            let mt = &self.maps[m];
            let all = self.rng.chance(0.4);
            let via = if all {
                ViaT::All(m)
            } else {
                ViaT::At(m, self.rng.below(mt.arity))
            };
            let injective = if all {
                mt.all_injective
            } else {
                mt.columns_injective
            };
            let access = if injective {
                Access::ALL[self.rng.below(6)]
            } else {
                REDUCE[self.rng.below(4)]
            };
            if !maps_used.contains(&m) {
                maps_used.push(m);
            }
            args.push(ArgT {
                data: d,
                via,
                access,
            });
            // The same Dat reduced through a second map (two staged copies of one Dat).
            if access.is_reduction() && self.rng.chance(0.3) {
                if let Some(&m2) = maps.iter().find(|&&m2| m2 != m) {
                    if !maps_used.contains(&m2) && maps_used.len() < 2 {
                        maps_used.push(m2);
                    }
                    if maps_used.contains(&m2) {
                        let via = ViaT::At(m2, self.rng.below(self.maps[m2].arity));
                        args.push(ArgT {
                            data: d,
                            via,
                            access,
                        });
                    }
                }
            }
        }
        for g in 0..self.globals.len() {
            if self.rng.chance(0.3) {
                args.push(ArgT {
                    data: g,
                    via: ViaT::Global,
                    access: REDUCE[self.rng.below(4)],
                });
            }
        }
        args
    }

    fn arg(&self, a: &ArgT) -> Arg {
        let map = |m: usize| self.maps[m].map.as_ref().expect("live map");
        if a.via == ViaT::Global {
            return match &self.globals[a.data].handle {
                AnyGlobal::F(g) => g.arg(a.access),
                AnyGlobal::U(g) => g.arg(a.access),
                AnyGlobal::I(g) => g.arg(a.access),
            };
        }
        let h = self.dats[a.data].handle.as_ref().expect("live dat");
        match a.via {
            ViaT::Direct => each!(h, d => d.arg(a.access)),
            ViaT::At(m, j) => each!(h, d => d.at(map(m), j).arg(a.access)),
            ViaT::All(m) => each!(h, d => d.all(map(m)).arg(a.access)),
            ViaT::Global => unreachable!(),
        }
    }

    /// Entries (element indices) an argument reaches from element e.
    fn targets(&self, a: &ArgT, e: usize) -> Vec<usize> {
        match a.via {
            ViaT::Direct => vec![e],
            ViaT::Global => vec![0],
            ViaT::At(m, j) => vec![self.maps[m].values[e * self.maps[m].arity + j] as usize],
            ViaT::All(m) => {
                let ar = self.maps[m].arity;
                self.maps[m].values[e * ar..(e + 1) * ar]
                    .iter()
                    .map(|&t| t as usize)
                    .collect()
            }
        }
    }

    /// The model: applies one loop to the model's values, element by element.
    fn apply(&mut self, t: &Template, elements: &[u32], args: &[ArgT]) {
        let fzk = self.fzk;
        for &e in elements {
            let e = e as usize;
            let mut vals: Vec<Vec<u32>> = Vec::with_capacity(args.len());
            for (a, ta) in args.iter().zip(&t.args) {
                let (src, dim) = match a.via {
                    ViaT::Global => (&self.globals[a.data].vals, self.globals[a.data].vals.len()),
                    _ => (&self.dats[a.data].vals, self.dats[a.data].dim),
                };
                let mut v = Vec::with_capacity(ta.width);
                for tgt in self.targets(a, e) {
                    for c in 0..dim {
                        v.push(match a.access {
                            Access::Read | Access::Rw => src[tgt * dim + c],
                            Access::Write => 0,
                            r => identity(ta.dtype, r),
                        });
                    }
                }
                vals.push(v);
            }
            t.eval(fzk, &mut vals);
            for ((a, ta), v) in args.iter().zip(&t.args).zip(&vals) {
                if a.access == Access::Read {
                    continue;
                }
                let targets = self.targets(a, e);
                let (dst, dim) = match a.via {
                    ViaT::Global => {
                        let n = self.globals[a.data].vals.len();
                        (&mut self.globals[a.data].vals, n)
                    }
                    _ => {
                        let dim = self.dats[a.data].dim;
                        (&mut self.dats[a.data].vals, dim)
                    }
                };
                for (k, tgt) in targets.into_iter().enumerate() {
                    for c in 0..dim {
                        let cell = &mut dst[tgt * dim + c];
                        let x = v[k * dim + c];
                        *cell = if a.access.is_reduction() {
                            combine(ta.dtype, a.access, *cell, x)
                        } else {
                            x
                        };
                    }
                }
            }
        }
    }
}

mod run;
pub use run::run_case;
