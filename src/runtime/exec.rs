//! The executor: runs the loop groups of one force. Consecutive GPU groups form a region that is
//! encoded into one command encoder (one compute pass) and submitted once, with the uploads it
//! needs before and the readbacks the host asked for after; host groups run between regions,
//! with data copied only where it crosses.

use super::cache::{bind_group, data_buffer, ensure_pipeline, ensure_plan};
use super::check::{CHECK, Checks};
use super::lower::{Lowered, Resource, lower};
use super::readback::{read_staging, read_words, record_times};
use super::{Engine, Pipeline, State, host};
use crate::codegen::{self, Params, reduce};
use crate::data::DataInner;
use crate::error::{Error, Result};
use crate::fuse::Group;
use std::collections::HashSet;
use std::rc::Rc;

/// One dispatch: the pipeline, the bind group (by cache key), the params slot, the grid.
pub(super) struct Cmd {
    pub pipeline: Rc<Pipeline>,
    /// Buffers in binding order after the params arena: (buffer id, bound bytes).
    pub bufs: Vec<(u64, u64)>,
    params: usize,
    /// Bytes of the params binding (fixed fields plus the group's Const words).
    pub params_bytes: u64,
    grid: (u32, u32),
    /// Index of the group in the force (for per-group timing).
    group: usize,
}

/// Runs `groups` in order and leaves `readback` valid on the host.
pub(crate) async fn run(ctx: &Engine, groups: &[Group], readback: &[Rc<DataInner>]) -> Result<()> {
    let mut i = 0;
    while i < groups.len() {
        if groups[i].host {
            let need = host_data(&groups[i]);
            fetch(ctx, &[], &need).await?;
            let copied = host::run_group(&groups[i])?;
            let mut st = ctx.rt.borrow_mut();
            st.stats.host_loops += groups[i].loops.len() as u64;
            st.stats.loops += groups[i].loops.len() as u64;
            st.stats.groups += 1;
            st.stats.host_copies += copied;
            i += 1;
            continue;
        }
        let j = (i..groups.len())
            .find(|&k| groups[k].host)
            .unwrap_or(groups.len());
        let want: Vec<Rc<DataInner>> = if j < groups.len() {
            host_data(&groups[j])
        } else {
            readback.to_vec()
        };
        fetch(ctx, &groups[i..j], &want).await?;
        i = j;
    }
    fetch(ctx, &[], readback).await
}

/// Makes `d`'s device copy current (created, uploaded or cleared as at a loop's first use) and
/// submits that.
pub(crate) fn upload(ctx: &Engine, d: &Rc<DataInner>) -> Result<()> {
    let gpu = &ctx.gpu;
    let mut encoder = gpu
        .device
        .create_command_encoder(&wgpu::CommandEncoderDescriptor {
            label: Some("parloop upload"),
        });
    {
        let mut st = ctx.rt.borrow_mut();
        st.purge();
        data_buffer(&mut st, gpu, &mut encoder, d)?;
        st.stats.submissions += 1;
    }
    gpu.queue.submit([encoder.finish()]);
    Ok(())
}

/// Writes `words` at word `start` of `d`'s device copy now (a received halo), component by
/// component for struct-of-arrays Dats. A device copy without a buffer is lost: the host
/// copy then holds the value.
pub(crate) fn write_device(ctx: &Engine, d: &Rc<DataInner>, start: usize, words: &[u32]) {
    let st = ctx.rt.borrow();
    let Some((_, buf)) = st.data.get(&d.id) else {
        d.state.device_lost();
        return;
    };
    if st.is_soa(d) {
        // Component by component: each is a contiguous range on the device.
        let (w, dim) = (d.dtype.words(), d.dim);
        let n = d.set.as_ref().map_or(1, crate::data::Set::total);
        let (e0, m) = (start / (dim * w), words.len() / (dim * w));
        for k in 0..dim {
            let comp: Vec<u32> = (0..m)
                .flat_map(|i| &words[(i * dim + k) * w..(i * dim + k + 1) * w])
                .copied()
                .collect();
            let at = 4 * ((k * n + e0) * w) as u64;
            ctx.gpu
                .queue
                .write_buffer(&buf.buffer, at, bytemuck::cast_slice(&comp));
        }
    } else {
        ctx.gpu
            .queue
            .write_buffer(&buf.buffer, 4 * start as u64, bytemuck::cast_slice(words));
    }
}

/// Data a host group touches (it needs current host copies of all of it).
fn host_data(g: &Group) -> Vec<Rc<DataInner>> {
    let mut seen = HashSet::new();
    g.loops
        .iter()
        .flat_map(|l| l.args.iter())
        .filter(|a| seen.insert(a.data.id))
        .map(|a| a.data.clone())
        .collect()
}

/// Encodes and submits `groups`, then reads back whichever of `want` the host lacks.
async fn fetch(ctx: &Engine, groups: &[Group], want: &[Rc<DataInner>]) -> Result<()> {
    let gpu = &ctx.gpu;
    // What needs a readback is known only after the groups are encoded (they mark what they
    // write as current on the device).
    let needs_readback = |d: &Rc<DataInner>| d.state.device_only() && d.len() > 0;
    if groups.is_empty() && !want.iter().any(needs_readback) {
        return Ok(());
    }
    if let Some(e) = gpu.uncaptured.lock().ok().and_then(|mut s| s.take()) {
        return Err(Error::Device(format!(
            "the device reported an earlier error: {e}"
        )));
    }
    #[cfg(not(target_arch = "wasm32"))]
    let scope = gpu.device.push_error_scope(wgpu::ErrorFilter::Validation);
    let mut encoder = gpu
        .device
        .create_command_encoder(&wgpu::CommandEncoderDescriptor {
            label: Some("parloop force"),
        });
    let staging = {
        let mut st = ctx.rt.borrow_mut();
        st.purge();
        let choice = ctx.choice;
        let mut params: Vec<(Params, Rc<[u32]>)> = Vec::new();
        let mut cmds: Vec<Cmd> = Vec::new();
        let mut scratch_words = 0u64;
        let mut checks = Checks::default();
        let mut loops = 0u64;
        for (gi, g) in groups.iter().enumerate() {
            let lw =
                lower(g, &choice).map_err(|m| Error::ParLoop(format!("{}: {m}", g.names())))?;
            loops += g.loops.len() as u64;
            if lw.positions() == 0 {
                continue;
            }
            let first = cmds.len();
            let (words, sites) = encode_group(
                ctx,
                &mut st,
                &mut encoder,
                g,
                lw,
                checks.words,
                &mut params,
                &mut cmds,
            )?;
            scratch_words = scratch_words.max(words);
            if let Some(sites) = sites {
                checks.add(gi, g.loops.len(), sites);
            }
            cmds[first..].iter_mut().for_each(|c| c.group = gi);
        }
        // The params arena and scratch must exist before bind groups refer to them.
        let slot_bytes = params
            .iter()
            .map(|(_, c)| PARAMS_BYTES + 4 * c.len() as u64)
            .max()
            .unwrap_or(PARAMS_BYTES);
        let stride = wgpu::util::align_to(
            slot_bytes,
            gpu.limits.min_uniform_buffer_offset_alignment as u64,
        );
        if !params.is_empty() {
            let bytes = stride * params.len() as u64;
            if st.params.as_ref().is_none_or(|b| b.size < bytes) {
                let b = st.new_buf(
                    gpu,
                    bytes,
                    wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST,
                    "parloop params",
                );
                st.params = Some(b);
                st.prune_bind_groups();
            }
            let mut raw = vec![0u8; bytes as usize];
            for (k, (p, c)) in params.iter().enumerate() {
                let at = k * stride as usize;
                let consts: &[u8] = bytemuck::cast_slice(c);
                let fixed = PARAMS_BYTES as usize;
                raw[at..at + fixed].copy_from_slice(bytemuck::bytes_of(p));
                raw[at + fixed..at + fixed + consts.len()].copy_from_slice(consts);
            }
            if let Some(b) = &st.params {
                gpu.queue.write_buffer(&b.buffer, 0, &raw);
            }
        }
        if scratch_words > 0
            && st
                .scratch
                .as_ref()
                .is_none_or(|b| b.size < scratch_words * 4)
        {
            let (b, _) = st.storage(gpu, scratch_words * 4, "parloop scratch");
            if let Some(old) = st.scratch.replace(b) {
                st.pool.entry(old.size).or_default().push(old);
                st.prune_bind_groups();
            }
        }
        let scratch_id = st.scratch.as_ref().map(|b| (b.id, b.size));
        let check_id = checks.prepare(&mut st, gpu, &mut encoder);
        for c in &mut cmds {
            for slot in c.bufs.iter_mut() {
                if slot.0 == SCRATCH {
                    *slot = scratch_id.unwrap_or((0, 4));
                } else if slot.0 == CHECK {
                    *slot = check_id.unwrap_or((0, 4));
                }
            }
        }
        // One compute pass for the whole region; when profiling with timestamp queries, one
        // pass per group with its start and end written to a query set.
        let profiling = ctx.profile && gpu.timestamps() && !cmds.is_empty();
        let queries = profiling.then(|| {
            gpu.device.create_query_set(&wgpu::QuerySetDescriptor {
                label: Some("parloop profile"),
                ty: wgpu::QueryType::Timestamp,
                count: 2 * groups.len() as u32,
            })
        });
        let mut k = 0;
        while k < cmds.len() {
            let end = if profiling {
                (k..cmds.len())
                    .find(|&e| cmds[e].group != cmds[k].group)
                    .unwrap_or(cmds.len())
            } else {
                cmds.len()
            };
            let timestamp_writes = queries.as_ref().map(|q| wgpu::ComputePassTimestampWrites {
                query_set: q,
                beginning_of_pass_write_index: Some(2 * cmds[k].group as u32),
                end_of_pass_write_index: Some(2 * cmds[k].group as u32 + 1),
            });
            let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
                label: Some("parloop"),
                timestamp_writes,
            });
            for c in &cmds[k..end] {
                let bg = bind_group(&mut st, gpu, c)?;
                pass.set_pipeline(&c.pipeline.pipeline);
                pass.set_bind_group(0, &bg, &[(c.params as u64 * stride) as u32]);
                pass.dispatch_workgroups(c.grid.0, c.grid.1, 1);
            }
            k = end;
        }
        let timing = queries.map(|q| {
            let bytes = 16 * groups.len() as u64;
            let resolve = gpu.device.create_buffer(&wgpu::BufferDescriptor {
                label: Some("parloop timestamps"),
                size: bytes,
                usage: wgpu::BufferUsages::QUERY_RESOLVE | wgpu::BufferUsages::COPY_SRC,
                mapped_at_creation: false,
            });
            encoder.resolve_query_set(&q, 0..2 * groups.len() as u32, &resolve, 0);
            let out = st.staging_buf(gpu, bytes);
            encoder.copy_buffer_to_buffer(&resolve, 0, &out.buffer, 0, bytes);
            let used: Vec<bool> = (0..groups.len())
                .map(|g| cmds.iter().any(|c| c.group == g))
                .collect();
            (out, used)
        });
        st.stats.dispatches += cmds.len() as u64;
        st.stats.last_dispatches += cmds.len() as u64;
        st.stats.loops += loops;
        st.stats.groups += groups.len() as u64;
        // Readbacks ride in the same submission.
        let mut staging = Vec::new();
        for d in want.iter().filter(|d| needs_readback(d)) {
            if !st.data.contains_key(&d.id) {
                continue;
            }
            let bytes = d.bytes();
            let buf = st.staging_buf(gpu, bytes);
            let src = &st.data[&d.id].1;
            encoder.copy_buffer_to_buffer(&src.buffer, 0, &buf.buffer, 0, bytes);
            staging.push((d.clone(), buf));
        }
        let check_out = check_id
            .and_then(|_| checks.copy_out(&mut st, gpu, &mut encoder))
            .map(|b| (b, checks));
        st.stats.submissions += 1;
        st.stats.readbacks += staging.len() as u64;
        (staging, timing, check_out)
    };
    let (staging, timing, check_out) = staging;
    gpu.queue.submit([encoder.finish()]);
    #[cfg(not(target_arch = "wasm32"))]
    if let Some(e) = scope.pop().await {
        let names: Vec<String> = groups.iter().map(Group::names).collect();
        return Err(Error::Device(format!(
            "the device rejected the work of {}: {e}",
            if names.is_empty() {
                "a readback".to_string()
            } else {
                names.join("; ")
            }
        )));
    }
    read_staging(ctx, staging).await?;
    if let Some((buf, used)) = timing {
        record_times(ctx, groups, buf, &used).await?;
    }
    if let Some((buf, checks)) = check_out {
        let words = read_words(ctx, buf, 4 * checks.words as u64, "check records").await?;
        checks.verdict(groups, &words)?;
    }
    Ok(())
}

/// Bytes of the fixed dispatch parameters (the Const words follow them).
pub(super) const PARAMS_BYTES: u64 = std::mem::size_of::<Params>() as u64;

/// Placeholder buffer id for the scratch buffer until its size is known.
const SCRATCH: u64 = u64::MAX;

/// Prepares one group: plan, pipeline, buffers, dispatches. Returns the scratch words it needs
/// and, in checking mode, the index sites its shader guards (its records start at word
/// `check_base` of the check buffer).
#[allow(clippy::too_many_arguments)]
fn encode_group(
    ctx: &Engine,
    st: &mut State,
    encoder: &mut wgpu::CommandEncoder,
    g: &Group,
    mut lw: Lowered,
    check_base: u32,
    params: &mut Vec<(Params, Rc<[u32]>)>,
    cmds: &mut Vec<Cmd>,
) -> Result<(u64, Option<Vec<codegen::check::CheckSite>>)> {
    let gpu = &ctx.gpu;
    let names = || g.names();
    let plan = match &lw.plan {
        Some(spec) => Some(
            ensure_plan(st, gpu, &lw, spec)
                .map_err(|m| Error::ParLoop(format!("{}: {m}", names())))?,
        ),
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
        return Err(Error::ParLoop(format!(
            "{}: needs {storage} storage buffers, the adapter allows {} per shader stage: split \
             the loop or pass fewer Dats and Maps",
            names(),
            limits.max_storage_buffers_per_shader_stage
        )));
    }
    let wg_bytes = lw.ir.workgroup_bytes() as u32;
    if wg_bytes > limits.max_compute_workgroup_storage_size {
        return Err(Error::ParLoop(format!(
            "{}: needs {wg_bytes} bytes of workgroup memory, the adapter allows {}: use the \
             `atomics` or `global-colour` strategy, or staging `none`",
            names(),
            limits.max_compute_workgroup_storage_size
        )));
    }
    let (wgsl, sites) = codegen::generate_checked(&lw.ir);
    let sites = lw.ir.check.map(|_| sites);
    let pipeline = ensure_pipeline(st, gpu, &wgsl, &names())?;
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
    );
    let slots: u32 = ranges.iter().map(|r| r.2).sum();
    let const_words: Rc<[u32]> = Rc::from(codegen::consts::words(&lw.ir.consts));
    if const_words.len() > codegen::consts::MAX_WORDS {
        return Err(Error::ParLoop(format!(
            "{}: its Consts hold {} values, over the {} one loop group can carry: pass large \
             tables as a Global or a Dat",
            names(),
            const_words.len(),
            codegen::consts::MAX_WORDS
        )));
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
    // Reductions: one finalize dispatch each.
    let mut off = 0u32;
    for red in &lw.ir.reductions {
        let fin = ensure_pipeline(
            st,
            gpu,
            &reduce::finalize_wgsl(red.dtype, red.access),
            &names(),
        )?;
        let global = bufs[red.binding];
        params.push((
            Params {
                n: slots,
                base: off * slots,
                nwg: red.dim as u32,
                ..Default::default()
            },
            Rc::from(Vec::new()),
        ));
        cmds.push(Cmd {
            pipeline: fin,
            bufs: vec![(SCRATCH, 0), global],
            params: params.len() - 1,
            params_bytes: PARAMS_BYTES,
            grid: (1, 1),
            group: 0,
        });
        off += (red.dim * red.dtype.words()) as u32;
    }
    // What this group writes is now current on the device only.
    for (res, b) in lw.resources.iter().zip(&lw.ir.bindings) {
        if let Resource::Data(d) = res {
            if b.writable {
                d.state.written_on_device();
            }
        }
    }
    Ok((off as u64 * slots as u64, sites))
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

/// Bytes a storage binding covers (at least 4).
pub(super) fn bound(bytes: u64) -> u64 {
    bytes.max(4)
}
