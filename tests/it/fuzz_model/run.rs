//! Runs one fuzz case: the random program on parloop and on the model side by side, comparing
//! every value the program reads (mid-program forces and, at the end, every live object).

use super::program::{ArgT, ViaT};
use super::template::{TArg, Template};
use super::*;

/// Runs the case's program; Err describes the first difference or parloop's error.
pub fn run_case(case: &Case) -> Result<(), String> {
    let ctx = ctx_with(case.config());
    let mut w = World::new(ctx, case.seed);
    w.ctx.constant("fzk", 0i32).map_err(|e| e.to_string())?;
    let nloops = 3 + w.rng.below(12);
    let names = ["fz_a", "fz_b", "fz_c"];
    // Prefetches from a stream of their own: a seed's program stays the one it was.
    let mut prefetches = Rng::new(case.seed ^ 0x5eed_f00d);
    for l in 0..nloops {
        // Consts that change between loops.
        if w.rng.chance(0.4) {
            w.obj.fzk = w.rng.below(21) as i32 - 10;
            w.ctx
                .constant("fzk", w.obj.fzk)
                .map_err(|e| e.to_string())?;
        }
        // A temporary: made now, dropped a few loops later (maybe before it is ever forced).
        if w.rng.chance(0.2) {
            w.add_dat(&format!("tmp{l}"));
        }
        let space = w.rng.below(4);
        let set = space % 2;
        let args = w.obj.pick_args(&mut w.rng, set);
        if args.is_empty() {
            continue;
        }
        let template = w.obj.template(&mut w.rng, &args);
        // Kernel names from a small pool: one name with two sources in one force must split.
        let name = names[w.rng.below(3)];
        w.kernels += 1;
        let kernel = w.obj.kernel(&mut w.rng, name, &template);
        let elements: Vec<u32> = if space < 2 {
            (0..w.sets[set].size() as u32).collect()
        } else {
            w.subsets[set].1.clone()
        };
        let pargs: Vec<Arg> = args.iter().map(|a| w.obj.arg(a)).collect();
        let result = if space < 2 {
            w.ctx.par_loop(&kernel, &w.sets[set], &pargs)
        } else {
            w.ctx.par_loop(&kernel, &w.subsets[set].0, &pargs)
        };
        if std::env::var_os("FUZZ_TRACE").is_some() {
            eprintln!(
                "loop {l} over space {space} ({} elements), host {}: {pargs:?}\n{}",
                elements.len(),
                kernel.wgsl().is_none(),
                template.wgsl(name)
            );
        }
        result.map_err(|e| format!("loop {l}: {e}"))?;
        w.obj
            .apply(&template, elements.iter().map(|&e| e as usize), &args);
        drop(kernel);
        // A prefetch of one object, read (or written, or dropped) later: never a change in
        // what any read gives.
        if prefetches.chance(0.3) {
            prefetch_one(&w, &mut prefetches)
                .map_err(|e| format!("prefetch after loop {l}: {e}"))?;
        }
        // A mid-program read of one object.
        if w.rng.chance(0.25) {
            check_one(&w, l)?;
        }
        // Drop a temporary (its buffer returns to the pool at the next force).
        if w.rng.chance(0.15) {
            let live: Vec<usize> = (0..w.obj.dats.len())
                .filter(|&d| w.obj.dats[d].handle.is_some())
                .collect();
            if live.len() > 2 {
                let d = live[w.rng.below(live.len())];
                w.obj.dats[d].handle = None;
            }
        }
        // A Map and a Dat made, used, read and dropped between forces; then a Dat whose
        // buffer may come from the dropped Map's.
        if w.rng.chance(0.2) {
            transient_map_and_dat(&mut w, l)?;
        }
    }
    for d in 0..w.obj.dats.len() {
        check_dat(&w, d, "at the end")?;
    }
    for g in 0..w.obj.globals.len() {
        check_global(&w, g, "at the end")?;
    }
    Ok(())
}

fn prefetch_one(w: &World, rng: &mut Rng) -> Result<(), Error> {
    let n = w.obj.dats.len() + w.obj.globals.len();
    let i = rng.below(n);
    if i < w.obj.dats.len() {
        match &w.obj.dats[i].handle {
            Some(h) => h.prefetch(),
            None => Ok(()),
        }
    } else {
        w.obj.globals[i - w.obj.dats.len()].handle.prefetch()
    }
}

fn check_one(w: &World, l: usize) -> Result<(), String> {
    let at = format!("after loop {l}");
    let n = w.obj.dats.len() + w.obj.globals.len();
    let mut rng = Rng::new(l as u64 ^ (w.obj.dats.len() as u64 * 31));
    let i = rng.below(n);
    if i < w.obj.dats.len() {
        check_dat(w, i, &at)
    } else {
        check_global(w, i - w.obj.dats.len(), &at)
    }
}

fn transient_map_and_dat(w: &mut World, l: usize) -> Result<(), String> {
    let ncells = w.sets[0].size();
    let nnodes = w.sets[1].size();
    let values: Vec<u32> = (0..ncells * 2)
        .map(|_| w.rng.below(nnodes) as u32)
        .collect();
    w.add_map(&format!("tm{l}"), 0, 1, 2, values);
    let m = w.obj.maps.len() - 1;
    let d = w.add_dat_on(&format!("td{l}"), 1, DType::F32, 1);
    let args = [ArgT {
        data: d,
        via: ViaT::All(m),
        access: Access::Inc,
    }];
    let template = Template {
        k: 1,
        uses_const: false,
        args: vec![TArg {
            dtype: DType::F32,
            width: 2,
            access: Access::Inc,
            c: 0,
            m: 1,
            d: 0,
        }],
    };
    let kernel = Kernel::new("fz_t", template.wgsl("fz_t"));
    let pargs: Vec<Arg> = args.iter().map(|a| w.obj.arg(a)).collect();
    w.ctx
        .par_loop(&kernel, &w.sets[0], &pargs)
        .map_err(|e| format!("transient loop {l}: {e}"))?;
    let all = 0..ncells;
    w.obj.apply(&template, all, &args);
    check_dat(w, d, &format!("transient Dat after loop {l}"))?;
    w.obj.maps[m].map = None;
    w.obj.dats[d].handle = None;
    // Same size class as the dropped Map's buffer (2 words per cell), uploaded from the host.
    w.add_dat_on(&format!("tc{l}"), 0, DType::F32, 2);
    Ok(())
}

/// Reads a live Dat (forcing the trace) and compares it with the model, exactly.
fn check_dat(w: &World, d: usize, at: &str) -> Result<(), String> {
    let dt = &w.obj.dats[d];
    let Some(h) = &dt.handle else { return Ok(()) };
    let name = h.name();
    let got = h.values().map_err(|e| e.to_string())?;
    compare(
        &format!("Dat `{name}` ({:?}, dim {}) {at}", dt.dtype, dt.dim),
        dt.dtype,
        &got,
        &dt.vals,
        w,
    )
}

fn check_global(w: &World, g: usize, at: &str) -> Result<(), String> {
    let gt = &w.obj.globals[g];
    let got = gt.handle.value().map_err(|e| e.to_string())?;
    compare(
        &format!("Global g{g} ({:?}) {at}", gt.dtype),
        gt.dtype,
        &got,
        &gt.vals,
        w,
    )
}

fn compare(what: &str, dtype: DType, got: &[u32], want: &[u32], w: &World) -> Result<(), String> {
    let same = |a: u32, b: u32| match dtype {
        DType::F64 => unreachable!("the fuzzer draws f32, u32 and i32"),
        DType::F32 => f32::from_bits(a) == f32::from_bits(b),
        _ => a == b,
    };
    if got.len() != want.len() {
        return Err(format!(
            "{what}: {} values, the model has {}",
            got.len(),
            want.len()
        ));
    }
    let bad: Vec<usize> = (0..got.len()).filter(|&i| !same(got[i], want[i])).collect();
    if bad.is_empty() {
        return Ok(());
    }
    let show = |v: u32| match dtype {
        DType::F64 => unreachable!("the fuzzer draws f32, u32 and i32"),
        DType::F32 => format!("{}", f32::from_bits(v)),
        DType::U32 => format!("{v}"),
        DType::I32 => format!("{}", v as i32),
    };
    let first: Vec<String> = bad
        .iter()
        .take(5)
        .map(|&i| format!("[{i}] parloop {} model {}", show(got[i]), show(want[i])))
        .collect();
    Err(format!(
        "{what}: {} of {} values differ: {}\nlast force:\n{}",
        bad.len(),
        got.len(),
        first.join(", "),
        w.ctx
            .explain()
            .lines()
            .take(12)
            .collect::<Vec<_>>()
            .join("\n")
    ))
}
