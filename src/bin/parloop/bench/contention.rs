//! `parloop bench`'s contention section: increments through a map onto targets that each take
//! many of them, where a colouring needs many colours (a dispatch each), under
//! `global-colour`, `atomics`, `cas` and `auto`, in f32 and f64. The triangles and tetrahedra
//! need a handful and a few dozen colours; elements scattered into fewer and fewer bins need
//! hundreds to thousands (a hub vertex, a histogram). What `auto`'s colour limit
//! is measured from.

use super::vectors::Spread;
use super::{REPEATS, Res, base, context, ms_per_call, sig};
use parloop::mesh::{unit_cube_tets, unit_square};
use parloop::{Config, Context, Kernel, Map, Real, Set, Strategy};
use std::fmt::Write;
use std::time::Instant;

/// Loops per timed sample (one force).
const CALLS: usize = 5;

/// One scatter: its label, the source set's size, the targets' count, the arity and the map.
struct Scatter {
    label: String,
    from: usize,
    to: usize,
    arity: usize,
    map: Vec<u32>,
}

/// The scatters at these sizes: triangles (squares per side), tetrahedra (cubes per side),
/// and `hub` elements into 10, 100, 300 and 1000 times fewer bins (a multiplicative hash spreads
/// each bin's elements over the set).
fn scatters(tri_n: usize, tet_n: usize, hub: usize) -> Vec<Scatter> {
    let tri = unit_square(tri_n);
    let tet = unit_cube_tets(tet_n);
    let mut v = vec![
        Scatter {
            label: format!("{} triangles onto their vertices", tri.ncells()),
            from: tri.ncells(),
            to: tri.nvertices(),
            arity: 3,
            map: tri.cell_vertices().to_vec(),
        },
        Scatter {
            label: format!("{} tetrahedra onto their vertices", tet.ncells()),
            from: tet.ncells(),
            to: tet.nvertices(),
            arity: 4,
            map: tet.cell_vertices().to_vec(),
        },
    ];
    for per in [10, 100, 300, 1000] {
        let bins = (hub / per).max(1);
        v.push(Scatter {
            label: format!("{hub} elements into {bins} bins"),
            from: hub,
            to: bins,
            arity: 1,
            map: (0..hub as u64)
                .map(|i| (i.wrapping_mul(2_654_435_761) % bins as u64) as u32)
                .collect(),
        });
    }
    v
}

/// The section: every scatter in f32 and, where the adapter has it, f64.
pub fn contention(r: &mut String, tri_n: usize, tet_n: usize, hub: usize) -> Res<()> {
    let ctx = context(base()?)?;
    let gpu = ctx.gpu();
    let (f64, float_atomics, int64) = (gpu.f64(), gpu.float_atomics(), gpu.int64_atomics());
    drop(ctx);
    let _ = writeln!(
        r,
        "## Contention: increments onto few targets\n\nEach source element adds its value to \
         the targets its map names (a loop over the sources, the targets' Dat INC through the \
         map), under each strategy that can run it; ms per loop ({CALLS} loops per force, GPU \
         time from timestamps where the adapter has them, else wall time), median of \
         {REPEATS} interleaved repeats (range in brackets), `-` where the adapter cannot run \
         it. Colours: the dispatches of a loop under `global-colour`. The first column says \
         what `auto` ran.\n\n\
         | increments, type (what `auto` ran) | colours | global-colour | atomics | cas | auto |\n\
         |---|---:|---:|---:|---:|---:|"
    );
    for s in scatters(tri_n, tet_n, hub) {
        rows::<f32>(r, &s, float_atomics, true)?;
        if f64 {
            rows::<f64>(r, &s, int64, int64)?;
        }
    }
    r.push('\n');
    Ok(())
}

/// One row: the scatter under each strategy (`-` where the adapter cannot run it).
fn rows<T: Real>(r: &mut String, s: &Scatter, atomics: bool, cas: bool) -> Res<()> {
    let err = |e: parloop::Error| e.to_string();
    let t = T::DTYPE;
    let (a, name) = (s.arity, format!("scatter_{t}_{}", s.arity));
    let kernel = Kernel::new(
        &name,
        format!(
            "fn {name}(w: ptr<function, array<{t}, 1>>, v: ptr<function, array<{t}, {a}>>) {{ \
             for (var k = 0; k < {a}; k++) {{ (*v)[k] += (*w)[0]; }} }}"
        ),
    );
    let strategies = [
        Some(Strategy::GlobalColour),
        atomics.then_some(Strategy::Atomics),
        cas.then_some(Strategy::Cas),
        Some(Strategy::Auto),
    ];
    let mut runs = Vec::new();
    for strategy in strategies.iter().flatten() {
        // Unfused: the loops of a force are timed one by one.
        let ctx = context(Config {
            strategy: *strategy,
            fusion: false,
            ..base()?
        })?;
        let from = Set::new("sources", s.from);
        let to = Set::new("targets", s.to);
        let map = Map::new("m", &from, &to, a, &s.map).map_err(err)?;
        let w = ctx
            .dat("w", &from, 1, &vec![T::from_f64(1.0); s.from])
            .map_err(err)?;
        let v = ctx.dat_zeros::<T>("v", &to, 1).map_err(err)?;
        let run = Run {
            ctx,
            kernel: kernel.clone(),
            from,
            map,
            w,
            v,
        };
        run.sample()?; // plans and pipelines built
        runs.push(run);
    }
    let mut ms = vec![Vec::new(); runs.len()];
    for _ in 0..REPEATS {
        for (k, run) in runs.iter().enumerate() {
            ms[k].push(run.sample()?);
        }
    }
    // Colours from the global-colour run; what auto ran from its explain line.
    let before = runs[0].ctx.stats().dispatches;
    runs[0].sample()?;
    let colours = (runs[0].ctx.stats().dispatches - before) as f64 / CALLS as f64;
    let auto = runs.last().expect("auto runs").ctx.explain();
    // "atomics (auto: ...)" or "global-colour (N colours)", and " x N" for N groups.
    let ran = auto
        .lines()
        .find_map(|l| l.trim().strip_prefix("schedules: "))
        .and_then(|s| s.split([' ', ',']).next())
        .unwrap_or("?")
        .to_string();
    let mut cells = Vec::new();
    let mut k = 0;
    for st in strategies {
        if st.is_some() {
            cells.push(Spread::of(&ms[k]).show());
            k += 1;
        } else {
            cells.push("-".into());
        }
    }
    let _ = writeln!(
        r,
        "| {}, {t} ({ran}) | {} | {} | {} | {} | {} |",
        s.label,
        sig(colours),
        cells[0],
        cells[1],
        cells[2],
        cells[3]
    );
    Ok(())
}

/// One strategy's context and data.
struct Run<T: Real> {
    ctx: Context,
    kernel: Kernel,
    from: Set,
    map: Map,
    w: parloop::Dat<T>,
    v: parloop::Dat<T>,
}

impl<T: Real> Run<T> {
    /// ms per loop of `CALLS` loops and a read of the result.
    fn sample(&self) -> Res<f64> {
        let err = |e: parloop::Error| e.to_string();
        let before = self.ctx.stats();
        let t = Instant::now();
        for _ in 0..CALLS {
            self.ctx
                .par_loop(
                    &self.kernel,
                    &self.from,
                    &[self.w.read(), self.v.all(&self.map).inc()],
                )
                .map_err(err)?;
        }
        let _ = self.v.data_ro().map_err(err)?;
        let wall = t.elapsed().as_secs_f64() * 1e3 / CALLS as f64;
        Ok(ms_per_call(&self.ctx, &before, self.kernel.name(), wall))
    }
}
