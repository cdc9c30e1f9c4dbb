//! The distributed fuzzer's programs: a random global mesh (2 or 3 sets, maps of arity 1-4,
//! one of six partitions, some leaving a rank with no exec halo, no halo or no element of a
//! set), distributed with `dist::Distribution`, then random par_loops (every access mode,
//! directly and through maps, Globals INC/MIN/MAX, host kernels, Consts) and host accesses
//! (`set_data`, `data()`, `scatter`, `Global::set`, Dats made and dropped) issued by every
//! rank alike; and what users do at the distribution's seams: values given with the owned
//! elements only or with something else than the owners' values in the halo, maps made with
//! `Map::new` on each rank's part after the distribution (columns of a declared map, read,
//! written and incremented through), errors injected on one rank at a public entry point
//! (every rank must return one), Dats dropped on some ranks only, loops over subsets of the
//! distributed sets; sparse matrices and CG
//! with host writes between solves, in f32 or f64 (`linalg`). The model is the
//! single-process fuzzer's (`tests/it/fuzz_model`): plain Rust on the global mesh, element by
//! element, that never calls parloop. Rank 0 compares every gathered Dat with it and every
//! rank every Global, exactly (all values are exact in any order).

mod linalg;

use crate::fuzz_model::any::{AnyDat, AnyGlobal, declare};
use crate::fuzz_model::program::{DatT, GlobalT, MapT, Objects};
use crate::fuzz_model::template::{level, output};
use crate::fuzz_model::{DTYPES, perm, random_values};
use parloop::dist::{Distribution, Partitioner};
use parloop::util::Rng;
use parloop::*;

/// How the cells are given to ranks.
#[derive(Clone, Copy, Debug)]
pub enum Part {
    Block,
    RoundRobin,
    KWay,
    /// Every cell on rank 0: the other ranks own no cell (and few or no nodes).
    AllOnZero,
    /// Blocks over all ranks but the last, which owns no cell (and so has no exec halo).
    LastEmpty,
    Random,
}

const PARTS: [Part; 6] = [
    Part::Block,
    Part::RoundRobin,
    Part::KWay,
    Part::AllOnZero,
    Part::LastEmpty,
    Part::Random,
];

pub struct World {
    ctx: Context,
    rng: Rng,
    /// Global sizes and this rank's parts of the sets.
    sizes: Vec<usize>,
    sets: Vec<Set>,
    obj: Objects,
    /// What this rank found different from the model.
    failures: Vec<String>,
    /// Dats other ranks dropped: alive here, never used again.
    kept: Vec<AnyDat>,
    pub describe: String,
    /// A subset of each set (`Distributed::subset`) and its members' global numbers, and the
    /// generator that decides which loops run over them (apart from `rng`, so that the
    /// programs of the seeds recorded before subsets were drawn stay what they were).
    subsets: Vec<(Subset, Vec<usize>)>,
    sub_rng: Rng,
}

impl World {
    /// The global mesh of `seed`, distributed over `ctx`'s ranks.
    pub fn new(ctx: Context, seed: u64) -> Result<World, String> {
        let mut rng = Rng::new(seed ^ 0xD157);
        let ranks = ctx.ranks();
        let n0 = 20 + rng.below(300);
        let n1 = (n0 / (2 + rng.below(3))).max(4);
        let three = rng.chance(0.5);
        let mut sizes = vec![n0, n1];
        if three {
            sizes.push(n0 + rng.below(n0));
        }
        // (from, to, arity, values)
        let mut specs: Vec<(usize, usize, usize, Vec<u32>)> = Vec::new();
        let hub = rng.chance(0.3);
        let arity = 1 + rng.below(4);
        let c2n = (0..n0 * arity)
            .map(|i| {
                if hub && i % arity == 0 {
                    rng.below(3)
                } else {
                    rng.below(n1)
                }
            })
            .map(|v| v as u32)
            .collect();
        specs.push((0, 1, arity, c2n));
        if rng.chance(0.5) {
            specs.push((0, 1, 2, (0..n0 * 2).map(|_| rng.below(n1) as u32).collect()));
        }
        let p = perm(&mut rng, n0);
        specs.push((1, 0, 1, p[..n1].to_vec()));
        if rng.chance(0.5) {
            let (p1, p2) = (perm(&mut rng, n0), perm(&mut rng, n0));
            specs.push((0, 0, 2, (0..n0).flat_map(|e| [p1[e], p2[e]]).collect()));
        }
        if three {
            let n2 = sizes[2];
            specs.push((2, 0, 2, (0..n2 * 2).map(|_| rng.below(n0) as u32).collect()));
            if rng.chance(0.5) {
                let a = 1 + rng.below(3);
                specs.push((2, 1, a, (0..n2 * a).map(|_| rng.below(n1) as u32).collect()));
            }
        }
        let part = PARTS[rng.below(PARTS.len())];
        let partitioner = match part {
            Part::Block => Partitioner::Block,
            Part::KWay => Partitioner::KWay,
            Part::RoundRobin => Partitioner::Owners((0..n0).map(|c| (c % ranks) as u32).collect()),
            Part::AllOnZero => Partitioner::Owners(vec![0; n0]),
            Part::LastEmpty => {
                let r = ranks.saturating_sub(1).max(1);
                Partitioner::Owners((0..n0).map(|c| (c * r / n0) as u32).collect())
            }
            Part::Random => Partitioner::Owners((0..n0).map(|_| rng.below(ranks) as u32).collect()),
        };
        let names = ["cells", "nodes", "edges"];
        let mut d = Distribution::new(&ctx);
        let gsets: Vec<_> = sizes
            .iter()
            .enumerate()
            .map(|(k, &n)| d.set(names[k], n))
            .collect();
        let mut gmaps = Vec::new();
        for (k, (from, to, arity, values)) in specs.iter().enumerate() {
            let m = d.map(&format!("m{k}"), gsets[*from], gsets[*to], *arity, values);
            gmaps.push(m.map_err(|e| e.to_string())?);
        }
        let mut decls = Vec::new();
        for i in 0..3 + rng.below(4) {
            let set = rng.below(sizes.len());
            let dtype = DTYPES[rng.below(3)];
            let dim = 1 + rng.below(3);
            let n = sizes[set] * dim;
            let vals = if rng.chance(0.2) {
                vec![0; n]
            } else {
                random_values(&mut rng, dtype, n)
            };
            let g = declare(&mut d, &format!("d{i}"), gsets[set], dtype, dim, &vals)?;
            decls.push((g, set, dim, dtype, vals));
        }
        let mut part_of = d
            .distribute(gsets[0], partitioner)
            .map_err(|e| e.to_string())?;
        let sets: Vec<Set> = gsets.iter().map(|&s| part_of.set(s)).collect();
        let mut sub_rng = Rng::new(seed ^ 0x5B5E7);
        let mut subsets = Vec::new();
        for (k, &g) in gsets.iter().enumerate() {
            let keep = 0.1 + 0.8 * sub_rng.below(100) as f64 / 100.0;
            let members: Vec<usize> = (0..sizes[k]).filter(|_| sub_rng.chance(keep)).collect();
            let global: Vec<u32> = members.iter().map(|&m| m as u32).collect();
            let sub = part_of
                .subset(&format!("sub{k}"), g, &global)
                .map_err(|e| e.to_string())?;
            subsets.push((sub, members));
        }
        let maps: Vec<MapT> = specs
            .into_iter()
            .zip(gmaps)
            .map(|((from, to, arity, values), g)| {
                MapT::new(part_of.map(g), from, to, arity, values, sizes[to])
            })
            .collect();
        let mut dats = Vec::new();
        for (g, set, dim, dtype, vals) in decls {
            dats.push(DatT {
                handle: Some(g.take(&mut part_of)?),
                set,
                dim,
                dtype,
                vals,
            });
        }
        let mut globals = Vec::new();
        for i in 0..1 + rng.below(3) {
            let dtype = DTYPES[rng.below(3)];
            let n = 1 + rng.below(2);
            let vals = random_values(&mut rng, dtype, n);
            let handle = AnyGlobal::new(&ctx, &format!("g{i}"), dtype, &vals)?;
            globals.push(GlobalT {
                handle,
                dtype,
                vals,
            });
        }
        ctx.constant("fzk", 0i32).map_err(|e| e.to_string())?;
        let describe = format!(
            "sets {sizes:?}, maps {:?}, partition {part:?}",
            maps.iter()
                .map(|m: &MapT| (m.from, m.to, m.arity))
                .collect::<Vec<_>>()
        );
        Ok(World {
            ctx,
            rng,
            sizes,
            sets,
            obj: Objects {
                maps,
                dats,
                globals,
                fzk: 0,
            },
            failures: Vec::new(),
            kept: Vec::new(),
            describe,
            subsets,
            sub_rng,
        })
    }

    /// Runs the program; Err: parloop's first error or the first difference from the model.
    pub fn run(&mut self) -> Result<(), String> {
        let nloops = 3 + self.rng.below(12);
        for l in 0..nloops {
            if self.rng.chance(0.4) {
                self.obj.fzk = self.rng.below(21) as i32 - 10;
                self.ctx
                    .constant("fzk", self.obj.fzk)
                    .map_err(|e| e.to_string())?;
            }
            self.host_access(l)?;
            let set = self.rng.below(self.sizes.len());
            let args = self.obj.pick_args(&mut self.rng, set);
            if args.is_empty() {
                continue;
            }
            let template = self.obj.template(&mut self.rng, &args);
            let name = ["fz_a", "fz_b", "fz_c"][self.rng.below(3)];
            let kernel = self.obj.kernel(&mut self.rng, name, &template);
            let pargs: Vec<Arg> = args.iter().map(|a| self.obj.arg(a)).collect();
            if self.sub_rng.chance(0.3) {
                // Over the set's subset: its members alone, on every rank alike.
                let (sub, members) = &self.subsets[set];
                self.ctx
                    .par_loop(&kernel, sub, &pargs)
                    .map_err(|e| format!("loop {l} over subset {set}: {e}"))?;
                let members = members.clone();
                self.obj.apply(&template, members, &args);
            } else {
                self.ctx
                    .par_loop(&kernel, &self.sets[set], &pargs)
                    .map_err(|e| format!("loop {l} over set {set}: {e}"))?;
                self.obj.apply(&template, 0..self.sizes[set], &args);
            }
            if self.rng.chance(0.25) {
                let n = self.obj.dats.len() + self.obj.globals.len();
                let i = self.rng.below(n);
                self.check(i, &format!("after loop {l}"))?;
            }
        }
        // Sparse matrices and solvers on a third of the programs, in f64 on half of those
        // where the adapter has it.
        if self.rng.chance(0.3) {
            // f64 increments under `atomics`, `cas` or `staged` need 64-bit integer atomics.
            let gpu = self.ctx.gpu();
            let f64 = gpu.f64() && self.ctx.config().strategy.takes_f64(gpu.int64_atomics());
            if self.rng.chance(0.5) && f64 {
                self.linear_algebra::<f64>()?;
            } else {
                self.linear_algebra::<f32>()?;
            }
        }
        for i in 0..self.obj.dats.len() + self.obj.globals.len() {
            self.check(i, "at the end")?;
        }
        match self.failures.first() {
            Some(f) => Err(f.clone()),
            None => Ok(()),
        }
    }

    /// A random host access (or none) before loop `l`, the same on every rank.
    fn host_access(&mut self, l: usize) -> Result<(), String> {
        let live: Vec<usize> = (0..self.obj.dats.len())
            .filter(|&d| self.obj.dats[d].handle.is_some())
            .collect();
        let d = live[self.rng.below(live.len())];
        let err = |e: Error| format!("host access before loop {l}: {e}");
        match self.rng.below(26) {
            // set_data: each rank passes its owned values.
            0 | 1 => {
                let dt = &self.obj.dats[d];
                let vals = random_values(&mut self.rng, dt.dtype, dt.vals.len());
                let owned = self.local(dt.set, dt.dim, &vals, false);
                self.obj.dats[d]
                    .handle
                    .as_mut()
                    .unwrap()
                    .set_data(&owned)
                    .map_err(err)?;
                self.obj.dats[d].vals = vals;
            }
            // data(): every owned value changed in place, as a function of its global id.
            2 | 3 => {
                let dt = &mut self.obj.dats[d];
                let (dim, dtype) = (dt.dim, dt.dtype);
                let ids = self.sets[dt.set].global_ids().unwrap().to_vec();
                let f =
                    |v: u32, gid: u32| output(dtype, level(dtype, v) * 3 + (gid % 7) as i32 - 3);
                dt.handle
                    .as_mut()
                    .unwrap()
                    .update(|i, v| f(v, ids[i / dim]))
                    .map_err(err)?;
                for (i, v) in dt.vals.iter_mut().enumerate() {
                    *v = f(*v, (i / dim) as u32);
                }
            }
            // scatter from rank 0.
            4 => {
                let dt = &self.obj.dats[d];
                let vals = random_values(&mut self.rng, dt.dtype, dt.vals.len());
                let root = (self.ctx.rank() == 0).then_some(&vals[..]);
                self.obj.dats[d]
                    .handle
                    .as_mut()
                    .unwrap()
                    .scatter(root)
                    .map_err(err)?;
                self.obj.dats[d].vals = vals;
            }
            // A Global set on every rank.
            5 => {
                let g = self.rng.below(self.obj.globals.len());
                let gt = &mut self.obj.globals[g];
                gt.vals = random_values(&mut self.rng, gt.dtype, gt.vals.len());
                gt.handle.set(&gt.vals).map_err(err)?;
            }
            // A new Dat with values on every local element (owned and halo).
            6 => {
                let (set, dtype, dim) = (
                    self.rng.below(self.sizes.len()),
                    DTYPES[self.rng.below(3)],
                    1 + self.rng.below(3),
                );
                let zeros = self.rng.chance(0.3);
                let vals = if zeros {
                    vec![0; self.sizes[set] * dim]
                } else {
                    random_values(&mut self.rng, dtype, self.sizes[set] * dim)
                };
                let local = (!zeros).then(|| self.local(set, dim, &vals, true));
                self.new_dat(&format!("t{l}"), (set, dtype, dim), vals, local)?;
            }
            // A Dat dropped.
            7 if live.len() > 2 => self.obj.dats[d].handle = None,
            // A new Dat given this rank's owned values only, or every local value with
            // something else than the owners' values in its halo.
            8 => {
                let (set, dtype, dim) = (
                    self.rng.below(self.sizes.len()),
                    DTYPES[self.rng.below(3)],
                    1 + self.rng.below(3),
                );
                let vals = random_values(&mut self.rng, dtype, self.sizes[set] * dim);
                let local = if self.rng.chance(0.5) {
                    self.local_untrusted(set, dim, &vals)
                } else {
                    self.local(set, dim, &vals, false)
                };
                self.new_dat(&format!("v{l}"), (set, dtype, dim), vals, Some(local))?;
            }
            // set_data with every local value, the halo's wrong.
            9 => {
                let dt = &self.obj.dats[d];
                let vals = random_values(&mut self.rng, dt.dtype, dt.vals.len());
                let all = self.local_untrusted(dt.set, dt.dim, &vals);
                let h = self.obj.dats[d].handle.as_mut().unwrap();
                h.set_data(&all).map_err(err)?;
                self.obj.dats[d].vals = vals;
            }
            10 => self.map_after_distribution(l)?,
            11 => self.error_on_one_rank(l, d)?,
            // A Dat dropped on some ranks only (a loop writing it may be pending); the others
            // keep it alive and never use it again.
            12 if live.len() > 2 => {
                let ranks = self.ctx.ranks();
                let mask = 1 + self.rng.below((1 << ranks) - 1);
                let h = self.obj.dats[d].handle.take();
                if mask >> self.ctx.rank() & 1 == 0 {
                    self.kept.extend(h);
                }
            }
            _ => {}
        }
        Ok(())
    }

    /// A new Dat of the program, on set `set`, holding the model's global `vals`; parloop's
    /// made from this rank's `local` values (None: zeros).
    fn new_dat(
        &mut self,
        name: &str,
        (set, dtype, dim): (usize, DType, usize),
        vals: Vec<u32>,
        local: Option<Vec<u32>>,
    ) -> Result<(), String> {
        let h = AnyDat::new(&self.ctx, name, &self.sets[set], dtype, dim, local)?;
        self.obj.dats.push(DatT {
            handle: Some(h),
            set,
            dim,
            dtype,
            vals,
        });
        Ok(())
    }

    /// A map made with `Map::new` on this rank's part: columns of a declared map (so its rows
    /// reach what the distribution gave this rank), in the rows a loop can run; placeholders in
    /// the non-exec-halo rows, whose targets need not be here.
    fn map_after_distribution(&mut self, l: usize) -> Result<(), String> {
        let m = self.rng.below(self.obj.maps.len());
        let (from, to, arity) = {
            let mt = &self.obj.maps[m];
            (mt.from, mt.to, mt.arity)
        };
        let cols: Vec<usize> = (0..1 + self.rng.below(arity.min(3)))
            .map(|_| self.rng.below(arity))
            .collect();
        let mt = &self.obj.maps[m];
        let Some(declared) = &mt.map else {
            return Ok(());
        };
        let s = &self.sets[from];
        let run = s.size() + s.sections().exec_halo;
        let targets = self.sets[to].total().max(1) as u32;
        let local: Vec<u32> = (0..s.total())
            .flat_map(|r| {
                cols.iter().map(move |&c| {
                    if r < run {
                        declared.values()[r * arity + c]
                    } else {
                        (r as u32 * 7 + c as u32) % targets
                    }
                })
            })
            .collect();
        let global: Vec<u32> = (0..self.sizes[from])
            .flat_map(|g| cols.iter().map(move |&c| mt.values[g * arity + c]))
            .collect();
        // A rank holding non-exec-halo rows but no target cannot make it: skipped on all.
        let name = format!("n{l}");
        let made = Map::new(&name, s, &self.sets[to], cols.len(), &local);
        let Ok(map) = self.ctx.agree(made, &format!("making Map `{name}`")) else {
            return Ok(());
        };
        let mt = MapT::new(map, from, to, cols.len(), global, self.sizes[to]);
        self.obj.maps.push(mt);
        Ok(())
    }

    /// An error at a public entry point on one rank only (a kernel that does not compile
    /// there, a wrong number of values there): every rank must return an error, and none may
    /// record or change anything.
    fn error_on_one_rank(&mut self, l: usize, d: usize) -> Result<(), String> {
        let r = self.rng.below(self.ctx.ranks());
        let me = self.ctx.rank() == r;
        let before = self.ctx.pending();
        let dt = &mut self.obj.dats[d];
        let (set, dim) = (&self.sets[dt.set], dt.dim);
        let h = dt.handle.as_mut().unwrap();
        let (what, failed) = match self.rng.below(3) {
            0 => {
                let ty = match dt.dtype {
                    DType::F32 => "f32",
                    DType::U32 => "u32",
                    DType::I32 | DType::F64 => "i32",
                };
                let body = if me { "let x: i32 = ;" } else { "" };
                let k = Kernel::new(
                    "fz_bad",
                    format!("fn fz_bad(a: ptr<function, array<{ty}, {dim}>>) {{ {body} }}"),
                );
                let failed = self.ctx.par_loop(&k, set, &[h.direct(Access::Read)]);
                ("a kernel that does not compile", failed.is_err())
            }
            1 => {
                let n = if me {
                    set.total() * dim + 1
                } else {
                    set.size() * dim
                };
                let made = AnyDat::new(&self.ctx, "bad", set, dt.dtype, dim, Some(vec![0; n]));
                ("a new Dat with a wrong length", made.is_err())
            }
            _ => {
                let n = if me {
                    set.total() * dim + 1
                } else {
                    set.size() * dim
                };
                (
                    "set_data with a wrong length",
                    h.set_data(&vec![0; n]).is_err(),
                )
            }
        };
        if !failed {
            return Err(format!(
                "host access before loop {l}: {what} on rank {r} was accepted on rank {}",
                self.ctx.rank()
            ));
        }
        if self.ctx.pending() != before {
            return Err(format!(
                "host access before loop {l}: {what} on rank {r} was refused, but the trace \
                 changed on rank {}",
                self.ctx.rank()
            ));
        }
        Ok(())
    }

    /// Every local value of a global array, with something else than the owners' values in
    /// the halo (which parloop must not trust).
    fn local_untrusted(&self, set: usize, dim: usize, vals: &[u32]) -> Vec<u32> {
        let owned = self.sets[set].size() * dim;
        let mut all = self.local(set, dim, vals, true);
        for (k, v) in all[owned..].iter_mut().enumerate() {
            *v = 0x4b00_0000 ^ k as u32;
        }
        all
    }

    /// This rank's values of a global array: owned elements, or (`all`) every local one.
    fn local(&self, set: usize, dim: usize, vals: &[u32], all: bool) -> Vec<u32> {
        let s = &self.sets[set];
        let ids = s.global_ids().expect("a distributed set");
        let n = if all { s.total() } else { s.size() };
        ids[..n]
            .iter()
            .flat_map(|&g| &vals[g as usize * dim..(g as usize + 1) * dim])
            .copied()
            .collect()
    }

    /// Compares Dat `i` (gathered on rank 0) or Global `i - dats` (on every rank).
    fn check(&mut self, i: usize, at: &str) -> Result<(), String> {
        let (what, got, want, dtype) = if i < self.obj.dats.len() {
            let dt = &self.obj.dats[i];
            let Some(h) = &dt.handle else { return Ok(()) };
            let got = h.gather().map_err(|e| format!("gather {at}: {e}"))?;
            let Some(got) = got else { return Ok(()) };
            let what = format!(
                "Dat d{i} ({:?}, dim {}, on set {})",
                dt.dtype, dt.dim, dt.set
            );
            (what, got, dt.vals.clone(), dt.dtype)
        } else {
            let g = i - self.obj.dats.len();
            let gt = &self.obj.globals[g];
            let got = gt.handle.value().map_err(|e| format!("value {at}: {e}"))?;
            let what = format!("Global g{g} ({:?}) on rank {}", gt.dtype, self.ctx.rank());
            (what, got, gt.vals.clone(), gt.dtype)
        };
        let same = |a: u32, b: u32| match dtype {
            DType::F32 => f32::from_bits(a) == f32::from_bits(b),
            _ => a == b,
        };
        let bad: Vec<usize> = (0..got.len().min(want.len()))
            .filter(|&k| !same(got[k], want[k]))
            .collect();
        if got.len() != want.len() || !bad.is_empty() {
            let first: Vec<String> = bad
                .iter()
                .take(4)
                .map(|&k| format!("[{k}] parloop {} model {}", got[k] as i32, want[k] as i32))
                .collect();
            self.failures.push(format!(
                "{what} {at}: {} of {} values differ (bit patterns as i32): {}",
                bad.len() + got.len().abs_diff(want.len()),
                want.len(),
                first.join(", ")
            ));
        }
        Ok(())
    }
}
