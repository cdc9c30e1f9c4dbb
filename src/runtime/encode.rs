//! Encoding one loop group: its lowering (with the knobs `tune` gives), plan, pipeline,
//! buffers and dispatches, ready for the executor's command encoder.

use super::cache::{PlanDeps, data_buffer, ensure_pipeline, ensure_plan, with_plan_input};
use super::check::CHECK;
use super::{Cmd, Engine, PlanEntry, State, bound};
use crate::codegen::strategy::{self, Schedule};
use crate::codegen::{self, Atomic, BindingKind, Params, reduce};
use crate::config::Strategy;
use crate::error::{Error, Result};
use crate::fuse::Group;
use crate::lower::{Choice, Lowered, PlanSpec, Resource, lower};
use crate::plan;
use crate::profile::Track;
use std::rc::Rc;

/// Lowers `g` with the knobs the tuner gives (under `tune`), dropping a candidate that cannot
/// run the group and asking for the next; what the tuner picked (and whether to time it).
pub(super) fn lower_tuned(
    ctx: &Engine,
    g: &Group,
    choice: &crate::lower::Choice,
) -> Result<(Lowered, Option<(crate::lower::tune::Trial, bool)>)> {
    let _s = ctx
        .profiler
        .span("lower", Track::Host, || format!("lower {}", g.label()));
    loop {
        let picked = ctx.tuner.borrow_mut().as_mut().map(|t| t.choice(g, choice));
        let (c, trial) = picked.unwrap_or((*choice, None));
        match lower(g, &c) {
            Ok(lw) => return Ok((lw, trial)),
            Err(m) => {
                let retry = trial.as_ref().is_some_and(|(k, _)| {
                    ctx.tuner
                        .borrow_mut()
                        .as_mut()
                        .is_some_and(|t| t.reject(k, &m.to_string()))
                });
                if !retry {
                    return Err(Error::ParLoop {
                        par_loops: g.sites(),
                        arg: None,
                        message: format!("{}: {m}", g.names()),
                    });
                }
            }
        }
    }
}

/// The plan `spec` describes, built once.
fn plan_of(
    ctx: &Engine,
    st: &mut State,
    g: &Group,
    lw: &Lowered,
    spec: &PlanSpec,
) -> Result<Rc<PlanEntry>> {
    let _s = (!st.plans.contains_key(&spec.key)).then(|| {
        ctx.profiler
            .span("plan", Track::Host, || format!("build plan {}", g.label()))
    });
    ensure_plan(st, &ctx.gpu, lw, spec).map_err(|m| Error::ParLoop {
        par_loops: g.sites(),
        arg: None,
        message: format!("{}: {m}", g.names()),
    })
}

/// What `auto` knows of a colouring's size (by plan key): the most increments one target
/// takes (a lower bound on the colours, one pass over the map) and, once counted, the colours.
/// Only sizes: what a group can run instead depends on its types, which the key does not hold.
pub(crate) struct AutoColours {
    most: usize,
    colours: Option<usize>,
    pub deps: PlanDeps,
}

/// Under `auto`, a colouring of many colours holding few positions each runs with atomics
/// instead, where the adapter can run them for the group's types: native (native f32 adds),
/// else compare-and-swap, which needs colours [`strategy::CAS_SHARE`] times smaller to gain
/// ([`strategy::colours_too_small`]). Each colour is a dispatch. The sizes are learnt once per
/// plan key, the colouring counted only where the bound does not decide.
pub(super) fn auto_colours(
    ctx: &Engine,
    st: &mut State,
    g: &Group,
    lw: Lowered,
) -> Result<Lowered> {
    let choice = ctx.choice;
    // `tune` without a tuner (a browser without timestamps) runs `auto`'s choice.
    let auto = match choice.strategy {
        Strategy::Auto => true,
        Strategy::Tune => ctx.tuner.borrow().is_none(),
        Strategy::Hierarchical
        | Strategy::GlobalColour
        | Strategy::Atomics
        | Strategy::Cas
        | Strategy::Staged => false,
    };
    if !auto || lw.ir.schedule != Schedule::GlobalColour {
        return Ok(lw);
    }
    let Some(spec) = &lw.plan else {
        return Ok(lw);
    };
    if !st.auto_colours.contains_key(&spec.key) {
        let most = with_plan_input(&lw, spec, plan::most_increments);
        let deps = PlanDeps::of(&lw, spec);
        let facts = AutoColours {
            most,
            colours: None,
            deps,
        };
        st.auto_colours.insert(spec.key.clone(), facts);
    }
    let min = choice.min_colour_size;
    let built_before = st.plans.contains_key(&spec.key);
    // The loosest test first (native atomics): most colourings stop here, unchanged.
    let Some(_) = too_small(ctx, st, g, &lw, spec, min)? else {
        return Ok(lw);
    };
    let Some(mut other) = [Strategy::Atomics, Strategy::Cas]
        .into_iter()
        .find_map(|strategy| lower(g, &Choice { strategy, ..choice }).ok())
    else {
        return Ok(lw);
    };
    // Compare-and-swap on a racing Dat (checking mode's records are atomic bits too).
    let cas = (other.ir.bindings.iter())
        .any(|b| matches!(b.kind, BindingKind::Dat { .. }) && b.atomic == Atomic::Bits);
    let min = if cas { min / strategy::CAS_SHARE } else { min };
    let Some(why) = too_small(ctx, st, g, &lw, spec, min)? else {
        return Ok(lw);
    };
    if !built_before {
        // Built here only to be counted, so no group has bound it: its buffer goes. A later
        // group of this key that keeps its colouring builds it again. (One built before may
        // be bound by a group of this force.)
        st.plans.remove(&spec.key);
    }
    other.note = Some(why);
    Ok(other)
}

/// Why `lw`'s colouring is too small against `min_colour_size` (None: it is not): from the
/// bound where it decides, else from the colouring, counted once.
fn too_small(
    ctx: &Engine,
    st: &mut State,
    g: &Group,
    lw: &Lowered,
    spec: &PlanSpec,
    min_colour_size: usize,
) -> Result<Option<String>> {
    let positions = lw.positions();
    let most = st.auto_colours[&spec.key].most;
    if strategy::colours_too_small(most, positions, min_colour_size) {
        return Ok(Some(format!(
            "auto: a colouring needs at least {most} colours of at most {} positions",
            positions / most
        )));
    }
    let colours = match st.auto_colours[&spec.key].colours {
        Some(c) => c,
        None => {
            let plan = plan_of(ctx, st, g, lw, spec)?;
            let c = plan.colour.as_ref().map_or(0, |c| c.colours());
            if let Some(facts) = st.auto_colours.get_mut(&spec.key) {
                facts.colours = Some(c);
            }
            c
        }
    };
    Ok(
        strategy::colours_too_small(colours, positions, min_colour_size).then(|| {
            format!(
                "auto: a colouring needs {colours} colours of {} positions",
                positions / colours
            )
        }),
    )
}

/// Bytes of the fixed dispatch parameters (the Const words follow them).
pub(super) const PARAMS_BYTES: u64 = std::mem::size_of::<Params>() as u64;

/// Placeholder buffer id for the scratch buffer until its size is known.
pub(super) const SCRATCH: u64 = u64::MAX;

/// Prepares one group: plan, pipeline, buffers, dispatches. Returns the scratch words it needs
/// and, in checking mode, the index sites its shader guards (its records start at word
/// `check_base` of the check buffer).
#[allow(clippy::too_many_arguments)]
pub(super) fn encode_group(
    ctx: &Engine,
    st: &mut State,
    encoder: &mut wgpu::CommandEncoder,
    g: &Group,
    mut lw: Lowered,
    check_base: u32,
    params: &mut Vec<(Params, Rc<[u32]>)>,
    cmds: &mut Vec<Cmd>,
) -> Result<(u64, Option<Vec<codegen::check::CheckSite>>, String)> {
    let gpu = &ctx.gpu;
    let names = || g.names();
    let plan = match &lw.plan {
        Some(spec) => Some(plan_of(ctx, st, g, &lw, spec)?),
        None => None,
    };
    if let Some(p) = &plan {
        for (s, m) in lw.ir.staged.iter_mut().enumerate() {
            m.maxu = p.maxu.get(s).copied().unwrap_or(0);
        }
    }
    let limits = &gpu.limits;
    let storage = lw.ir.bindings.len() as u32;
    if storage > limits.max_storage_buffers_per_shader_stage {
        return Err(Error::ParLoop {
            par_loops: g.sites(),
            arg: None,
            message: format!(
                "{}: needs {storage} storage buffers, the adapter allows {} per shader stage: split \
             the loop or pass fewer Dats and Maps",
                names(),
                limits.max_storage_buffers_per_shader_stage
            ),
        });
    }
    let wg_bytes = lw.ir.workgroup_bytes() as u32;
    if wg_bytes > limits.max_compute_workgroup_storage_size {
        return Err(Error::ParLoop {
            par_loops: g.sites(),
            arg: None,
            message: format!(
                "{}: needs {wg_bytes} bytes of workgroup memory, the adapter allows {}: use the \
             `atomics` or `global-colour` strategy, or staging `none`",
                names(),
                limits.max_compute_workgroup_storage_size
            ),
        });
    }
    let key = lw.ir.shader_hash();
    let known = st
        .shaders
        .get(&key)
        .and_then(|v| v.iter().find(|g| g.ir.same_shader(&lw.ir)));
    let (wgsl, sites) = match known {
        Some(g) => (g.wgsl.clone(), g.sites.clone()),
        None => {
            let (wgsl, sites) = codegen::generate_checked(&lw.ir);
            let wgsl: Rc<str> = wgsl.into();
            if st.shaders.values().map(Vec::len).sum::<usize>() >= super::MAX_PIPELINES {
                st.shaders.clear();
            }
            st.shaders.entry(key).or_default().push(super::Generated {
                ir: lw.ir.clone(),
                wgsl: wgsl.clone(),
                sites: sites.clone(),
            });
            (wgsl, sites)
        }
    };
    let sites = lw.ir.check.map(|_| sites);
    let pipeline = {
        let _s = (!st.pipelines.contains_key(&*wgsl)).then(|| {
            ctx.profiler.span("compile", Track::Host, || {
                format!("compile pipeline {}", g.label())
            })
        });
        ensure_pipeline(st, gpu, &wgsl, &names())?
    };
    ctx.shaders.borrow_mut().push(wgsl);
    // Buffers, in binding order.
    let mut bufs = Vec::with_capacity(lw.resources.len());
    for res in &lw.resources {
        bufs.push(match res {
            Resource::Data(d) => data_buffer(st, gpu, encoder, d)?,
            Resource::Map(m) => {
                if !st.maps.contains_key(&m.id()) {
                    let b = st.upload_words(gpu, m.values(), m.name());
                    st.maps.insert(m.id(), (Rc::downgrade(&m.0), b));
                }
                (st.maps[&m.id()].1.id, bound(m.values().len() as u64 * 4))
            }
            Resource::Subset(s) => {
                if !st.subsets.contains_key(&s.0.id) {
                    let b = st.upload_words(gpu, s.indices(), s.name());
                    st.subsets.insert(s.0.id, (Rc::downgrade(&s.0), b));
                }
                (st.subsets[&s.0.id].1.id, bound(s.len() as u64 * 4))
            }
            Resource::Plan => {
                let p = plan.as_ref().expect("planned schedules have a plan");
                (p.buffer.id, p.buffer.size)
            }
            Resource::Scratch => (SCRATCH, 0),
            Resource::Check => (CHECK, 0),
        });
    }
    // Dispatches.
    // Positions of a set's part are a range of its elements starting at `first`.
    let ranges = codegen::strategy::dispatches(
        lw.ir.schedule.plan(),
        plan.as_deref()
            .and_then(|p| p.colour.as_ref())
            .map(|c| &c.offsets[..]),
        plan.as_deref()
            .and_then(|p| p.blocks.as_ref())
            .map(|b| &b.colour_offsets[..]),
        (lw.positions(), lw.space.first()),
        lw.ir.workgroup_size,
        lw.ir.strided().then_some(lw.reduction_workgroups),
    );
    let slots: u32 = ranges.iter().map(|r| r.2).sum();
    let schedule = lw.ir.schedule.name();
    let colours = |kind: &str| match ranges.len() {
        1 => format!("{schedule} (1 {kind})"),
        n => format!("{schedule} ({n} {kind}s)"),
    };
    let mut label = match lw.ir.schedule.plan() {
        codegen::strategy::PlanKind::None => schedule.to_string(),
        codegen::strategy::PlanKind::Colouring => colours("colour"),
        codegen::strategy::PlanKind::Blocks => colours("block colour"),
    };
    if let Some(note) = &lw.note {
        label = format!("{label} ({note})");
    }
    let const_words: Rc<[u32]> = Rc::from(codegen::consts::words(&lw.ir.consts));
    if const_words.len() > codegen::consts::MAX_WORDS {
        return Err(Error::ParLoop {
            par_loops: g.sites(),
            arg: None,
            message: format!(
                "{}: its Consts hold {} values, over the {} one loop group can carry: pass large \
             tables as a Global or a Dat",
                names(),
                const_words.len(),
                codegen::consts::MAX_WORDS
            ),
        });
    }
    let grid_max = ctx
        .grid_limit
        .map_or(u32::MAX, |l| l.max(1))
        .min(gpu.limits.max_compute_workgroups_per_dimension);
    let mut wg_base = 0;
    for &(n, base, nwg) in &ranges {
        if nwg == 0 {
            continue;
        }
        params.push((
            Params {
                n,
                base,
                wg_base,
                slots,
                nwg,
                check: check_base,
                owned: lw.space.set().size() as u32,
                pad: 0,
            },
            const_words.clone(),
        ));
        cmds.push(Cmd {
            pipeline: pipeline.clone(),
            bufs: bufs.clone(),
            params: params.len() - 1,
            params_bytes: PARAMS_BYTES + 4 * const_words.len() as u64,
            grid: grid(nwg, grid_max),
            group: 0,
        });
        wg_base += nwg;
    }
    // Reductions: one finalize dispatch for all of the group's Globals.
    let reductions = &lw.ir.reductions;
    let words: usize = reductions.iter().map(|r| r.dim * r.dtype.words()).sum();
    if !reductions.is_empty() {
        let fin = ensure_pipeline(st, gpu, &reduce::finalize_wgsl(reductions), &names())?;
        params.push((
            Params {
                n: slots,
                ..Default::default()
            },
            Rc::from(Vec::new()),
        ));
        cmds.push(Cmd {
            pipeline: fin,
            bufs: std::iter::once((SCRATCH, 0))
                .chain(
                    reduce::finalize_bindings(reductions)
                        .iter()
                        .map(|&b| bufs[b]),
                )
                .collect(),
            params: params.len() - 1,
            params_bytes: PARAMS_BYTES,
            grid: (1, 1),
            group: 0,
        });
    }
    // What this group writes is now current on the device only.
    for (res, b) in lw.resources.iter().zip(&lw.ir.bindings) {
        if let Resource::Data(d) = res {
            if b.writable {
                d.state.written_on_device();
            }
        }
    }
    Ok((words as u64 * slots as u64, sites, label))
}

/// A 2-D grid when the workgroups exceed one dimension's limit.
fn grid(nwg: u32, max: u32) -> (u32, u32) {
    if nwg <= max {
        (nwg, 1)
    } else {
        let y = nwg.div_ceil(max);
        (nwg.div_ceil(y), y)
    }
}
