//! What both fuzzers share: the program's objects as the model sees them (values as bit
//! patterns, with parloop's handle beside them), how a random loop's arguments, template and
//! kernel are drawn, and the model itself, which applies a loop element by element: gather
//! (READ and RW the values, WRITE zeros, reductions their identity), run the template,
//! scatter (store WRITE and RW, combine INC, MIN and MAX). The model never calls parloop.

use super::template::{TArg, Template};
use super::{combine, identity};
use parloop::util::Rng;
use parloop::{Access, Arg, DType, HostArgs, Kernel, Map};

use super::any::{AnyDat, AnyGlobal};

/// How an argument reaches its data (map indices refer to the program's maps).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum ViaT {
    Direct,
    At(usize, usize),
    All(usize),
    Global,
}

#[derive(Clone, Copy, Debug)]
pub struct ArgT {
    /// Index into the program's Dats or Globals.
    pub data: usize,
    pub via: ViaT,
    pub access: Access,
}

pub struct MapT {
    /// parloop's map (this rank's part on a distributed run); None once dropped.
    pub map: Option<Map>,
    pub from: usize,
    pub to: usize,
    pub arity: usize,
    /// The global targets, row by row.
    pub values: Vec<u32>,
    /// Each column injective (WRITE and RW allowed at one index).
    pub columns_injective: bool,
    /// All columns together injective (WRITE and RW allowed through all indices).
    pub all_injective: bool,
}

impl MapT {
    pub fn new(map: Map, from: usize, to: usize, arity: usize, values: Vec<u32>, n: usize) -> MapT {
        let injective = |cols: Vec<u32>| {
            let mut seen = vec![false; n];
            cols.into_iter()
                .all(|t| !std::mem::replace(&mut seen[t as usize], true))
        };
        let columns_injective =
            (0..arity).all(|j| injective(values.iter().skip(j).step_by(arity).copied().collect()));
        let all_injective = injective(values.clone());
        MapT {
            map: Some(map),
            from,
            to,
            arity,
            values,
            columns_injective,
            all_injective,
        }
    }
}

pub struct DatT {
    /// parloop's Dat; None once dropped.
    pub handle: Option<AnyDat>,
    pub set: usize,
    pub dim: usize,
    pub dtype: DType,
    /// The model's values (bit patterns), on the whole (global) set.
    pub vals: Vec<u32>,
}

pub struct GlobalT {
    pub handle: AnyGlobal,
    pub dtype: DType,
    pub vals: Vec<u32>,
}

/// A program's objects, parloop's and the model's side by side.
#[derive(Default)]
pub struct Objects {
    pub maps: Vec<MapT>,
    pub dats: Vec<DatT>,
    pub globals: Vec<GlobalT>,
    /// The value of the i32 Const `fzk` the next loop sees.
    pub fzk: i32,
}

impl Objects {
    pub fn width(&self, a: &ArgT) -> usize {
        match a.via {
            ViaT::Global => self.globals[a.data].vals.len(),
            ViaT::All(m) => self.maps[m].arity * self.dats[a.data].dim,
            _ => self.dats[a.data].dim,
        }
    }

    pub fn dtype(&self, a: &ArgT) -> DType {
        match a.via {
            ViaT::Global => self.globals[a.data].dtype,
            _ => self.dats[a.data].dtype,
        }
    }

    /// The arguments of a random legal loop over `set`: each live Dat at most once (but
    /// reduced through a second map), through at most two distinct maps; WRITE and RW through
    /// a map only where it is injective; Globals read or reduced.
    pub fn pick_args(&self, rng: &mut Rng, set: usize) -> Vec<ArgT> {
        const REDUCE: [Access; 4] = [Access::Read, Access::Inc, Access::Min, Access::Max];
        let mut args: Vec<ArgT> = Vec::new();
        let mut maps_used: Vec<usize> = Vec::new();
        for d in 0..self.dats.len() {
            if self.dats[d].handle.is_none() || !rng.chance(0.5) || args.len() >= 4 {
                continue;
            }
            let to = self.dats[d].set;
            let maps: Vec<usize> = (0..self.maps.len())
                .filter(|&m| self.maps[m].map.is_some())
                .filter(|&m| self.maps[m].from == set && self.maps[m].to == to)
                .filter(|&m| maps_used.contains(&m) || maps_used.len() < 2)
                .collect();
            if to == set && (maps.is_empty() || rng.chance(0.5)) {
                let access = Access::ALL[rng.below(6)];
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
            let m = maps[rng.below(maps.len())];
            let mt = &self.maps[m];
            let (via, injective) = if rng.chance(0.4) {
                (ViaT::All(m), mt.all_injective)
            } else {
                (ViaT::At(m, rng.below(mt.arity)), mt.columns_injective)
            };
            let access = if injective {
                Access::ALL[rng.below(6)]
            } else {
                REDUCE[rng.below(4)]
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
            if access.is_reduction() && rng.chance(0.3) {
                if let Some(&m2) = maps.iter().find(|&&m2| m2 != m) {
                    if !maps_used.contains(&m2) && maps_used.len() < 2 {
                        maps_used.push(m2);
                    }
                    if maps_used.contains(&m2) {
                        let via = ViaT::At(m2, rng.below(self.maps[m2].arity));
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
            if rng.chance(0.3) {
                args.push(ArgT {
                    data: g,
                    via: ViaT::Global,
                    access: REDUCE[rng.below(4)],
                });
            }
        }
        args
    }

    /// A random template for `args`.
    pub fn template(&self, rng: &mut Rng, args: &[ArgT]) -> Template {
        Template {
            k: rng.below(11) as i32 - 5,
            uses_const: rng.chance(0.5),
            args: args
                .iter()
                .map(|a| TArg {
                    dtype: self.dtype(a),
                    width: self.width(a),
                    access: a.access,
                    c: rng.below(5) as i32 - 2,
                    m: rng.below(7) as i32 - 3,
                    d: rng.below(9) as i32 - 4,
                })
                .collect(),
        }
    }

    /// The template as a kernel named `name`: a host closure (one in eight) or WGSL.
    pub fn kernel(&self, rng: &mut Rng, name: &str, template: &Template) -> Kernel {
        if rng.chance(0.12) {
            let (t, fzk) = (template.clone(), self.fzk);
            Kernel::host(name, move |h: &mut HostArgs| {
                let mut vals: Vec<Vec<u32>> = (0..t.args.len())
                    .map(|i| h.get::<u32>(i).to_vec())
                    .collect();
                t.eval(fzk, &mut vals);
                for (i, v) in vals.iter().enumerate() {
                    h.get_mut::<u32>(i).copy_from_slice(v);
                }
            })
        } else {
            Kernel::new(name, template.wgsl(name))
        }
    }

    pub fn arg(&self, a: &ArgT) -> Arg {
        let map = |m: usize| self.maps[m].map.as_ref().expect("live map");
        if a.via == ViaT::Global {
            return self.globals[a.data].handle.arg(a.access);
        }
        let h = self.dats[a.data].handle.as_ref().expect("live dat");
        match a.via {
            ViaT::Direct => h.direct(a.access),
            ViaT::At(m, j) => h.at(map(m), j, a.access),
            ViaT::All(m) => h.all(map(m), a.access),
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

    /// The model: applies one loop to the model's values, element by element, in order.
    pub fn apply(
        &mut self,
        t: &Template,
        elements: impl IntoIterator<Item = usize>,
        args: &[ArgT],
    ) {
        for e in elements {
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
            t.eval(self.fzk, &mut vals);
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
