//! The executor: runs the loop groups of one force. Consecutive GPU groups form a region that is
//! encoded into one command encoder (one compute pass) and submitted once, with the uploads it
//! needs before and the readbacks the host asked for after; host groups run between regions,
//! with data copied only where it crosses.

use super::Cmd;
use super::cache::{bind_group, data_buffer};
use super::check::{CHECK, Checks};
use super::encode::{PARAMS_BYTES, SCRATCH, auto_colours, encode_group, lower_tuned};
use super::readback::{self, read_staging, read_words};
use super::timing;
use super::{Engine, Gpu, State, host};
use crate::codegen::Params;
use crate::data::DataInner;
use crate::error::{Error, Result};
use crate::fuse::Group;
use crate::lower::tune::Trial;
use crate::profile::Track;
use std::collections::HashSet;
use std::rc::Rc;

/// Runs `groups` in order and leaves `readback` valid on the host; `defer`: only starts
/// reading `readback` back (a prefetch: `readback::complete` waits for it when it is read).
pub(crate) async fn run(
    ctx: &Engine,
    groups: &[Group],
    readback: &[Rc<DataInner>],
    defer: bool,
) -> Result<()> {
    // Earlier submissions' timestamps first: the tuner decides from them.
    timing::collect(ctx, false);
    let mut i = 0;
    while i < groups.len() {
        if groups[i].host {
            let need = host_data(&groups[i]);
            encode_submit_read(ctx, &[], &need, false).await?;
            let copied = {
                let _s = ctx.profiler.span("host", Track::Host, || {
                    format!("host {}", groups[i].label())
                });
                host::run_group(&groups[i])?
            };
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
        // Without timestamps, a group is timed (profiling, or a tuning trial) by submitting
        // it alone and waiting for it: a synchronised wall clock.
        let trying = || {
            let tuner = ctx.tuner.borrow();
            let t = tuner.as_ref();
            groups[i..j]
                .iter()
                .any(|g| t.is_some_and(|t| t.trying(g, &ctx.choice)))
        };
        if !ctx.timestamps && (ctx.wall_profile || trying()) {
            // Work submitted before (an earlier region or force) would be timed with the
            // first group: the device starts idle.
            ctx.wait_done().await;
            for g in &groups[i..j] {
                let out = encode_submit_read(ctx, std::slice::from_ref(g), &[], false).await?;
                if let Some(t0) = out.submitted.filter(|_| out.encoded) {
                    ctx.wait_done().await;
                    let ns = t0.elapsed().as_nanos() as f64;
                    if ctx.wall_profile {
                        let (label, bytes) = (g.label(), timing::group_bytes(g));
                        timing::add_time(ctx, &mut ctx.rt.borrow_mut(), &label, bytes, t0, ns);
                    }
                    if let Some(t) = ctx.tuner.borrow_mut().as_mut() {
                        out.trials.iter().flatten().for_each(|k| t.record(k, ns));
                    }
                }
            }
            encode_submit_read(ctx, &[], &want, defer && j == groups.len()).await?;
        } else {
            encode_submit_read(ctx, &groups[i..j], &want, defer && j == groups.len()).await?;
        }
        i = j;
    }
    encode_submit_read(ctx, &[], readback, defer)
        .await
        .map(|_| ())
}

/// What a submission of groups did.
#[derive(Default)]
struct Fetched {
    /// When its command buffer was submitted.
    submitted: Option<web_time::Instant>,
    /// Some group had work (positions).
    encoded: bool,
    /// Per group, the tuner's key when its execution was a timed trial.
    trials: Vec<Option<Trial>>,
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

/// Encodes `groups` into one command buffer with the readbacks of whichever of `want` the
/// host lacks, submits it and reads back: lower and encode each group, write the params arena,
/// size the scratch, record the compute passes, resolve the timestamps, copy the readbacks.
async fn encode_submit_read(
    ctx: &Engine,
    groups: &[Group],
    want: &[Rc<DataInner>],
    defer: bool,
) -> Result<Fetched> {
    timing::collect(ctx, false);
    if !defer {
        // What must be current on the host after this call: a prefetch in flight is it.
        for d in want {
            readback::complete(ctx, d.id).await?;
        }
    }
    let gpu = &ctx.gpu;
    // What needs a readback is known only after the groups are encoded (they mark what they
    // write as current on the device); a readback already in flight is not started again.
    let needs_readback = |st: &super::State, d: &Rc<DataInner>| {
        d.state.device_only() && d.len() > 0 && !readback::inflight(st, d.id)
    };
    if groups.is_empty() && !want.iter().any(|d| needs_readback(&ctx.rt.borrow(), d)) {
        return Ok(Fetched::default());
    }
    let mut trials: Vec<Option<Trial>> = vec![None; groups.len()];
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
    let encoding = ctx.profiler.span("encode", Track::Host, || {
        format!("encode {} groups, {} readbacks", groups.len(), want.len())
    });
    let staging = {
        let mut st = ctx.rt.borrow_mut();
        st.purge();
        let mut enc = match encode_groups(ctx, &mut st, &mut encoder, groups, &mut trials) {
            Ok(enc) => enc,
            Err(e) => {
                // The encoder holds only the clears of never-written Dats and Globals that
                // encoding marked current on the device: submitted, they hold the zeros they
                // are marked with for the loops after this error.
                gpu.queue.submit(Some(encoder.finish()));
                return Err(e);
            }
        };
        // The params arena and scratch must exist before bind groups refer to them.
        let stride = write_params(&mut st, gpu, &enc.params);
        ensure_scratch(&mut st, gpu, enc.scratch_words);
        let scratch_id = st.scratch.as_ref().map(|b| (b.id, b.size));
        let check_id = enc.checks.prepare(&mut st, gpu, &mut encoder);
        let cmds = &mut enc.cmds;
        for c in cmds.iter_mut() {
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
        let profiling = (ctx.profile || trials.iter().any(Option::is_some))
            && ctx.timestamps
            && !cmds.is_empty();
        let queries = profiling.then(|| {
            gpu.device.create_query_set(&wgpu::QuerySetDescriptor {
                label: Some("parloop profile"),
                ty: wgpu::QueryType::Timestamp,
                count: 2 * groups.len() as u32,
            })
        });
        record_passes(&mut st, gpu, &mut encoder, cmds, stride, queries.as_ref())?;
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
        st.stats.workgroups += cmds
            .iter()
            .map(|c| u64::from(c.grid.0) * u64::from(c.grid.1))
            .sum::<u64>();
        st.stats.last_dispatches += cmds.len() as u64;
        ctx.schedules
            .borrow_mut()
            .extend(std::mem::take(&mut enc.schedules));
        st.stats.loops += enc.loops;
        st.stats.groups += groups.len() as u64;
        // Readbacks ride in the same submission.
        let mut staging = Vec::new();
        let read: Vec<&Rc<DataInner>> = want.iter().filter(|d| needs_readback(&st, d)).collect();
        for d in read {
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
            .and_then(|_| enc.checks.copy_out(&mut st, gpu, &mut encoder))
            .map(|b| (b, enc.checks));
        st.stats.submissions += 1;
        st.stats.readbacks += staging.len() as u64;
        (staging, timing, check_out, !enc.cmds.is_empty())
    };
    let (staging, timing, check_out, encoded) = staging;
    drop(encoding);
    let submitted = Some(web_time::Instant::now());
    let index = {
        let _s = ctx.profiler.span("submit", Track::Host, || "submit".into());
        gpu.queue.submit([encoder.finish()])
    };
    if ctx.profiler.trace {
        let bytes = ctx.rt.borrow().device_bytes();
        ctx.profiler.counter("device MB", bytes as f64 / 1e6);
    }
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
    if defer {
        readback::defer_staging(ctx, staging, &index);
    } else {
        read_staging(ctx, staging).await?;
    }
    if let (Some(timing), Some(at)) = (timing, submitted) {
        timing::start(ctx, groups, timing, &trials, at);
    }
    if let Some((buf, checks)) = check_out {
        let words = read_words(ctx, buf, 4 * checks.words as u64, "check records").await?;
        checks.verdict(groups, &words)?;
    }
    Ok(Fetched {
        submitted,
        encoded,
        trials,
    })
}

/// A force's groups encoded: their dispatches, their params slots, the scratch words the
/// largest needs, checking's records, the loops.
struct Encoded {
    params: Vec<(Params, Rc<[u32]>)>,
    cmds: Vec<Cmd>,
    scratch_words: u64,
    checks: Checks,
    loops: u64,
    /// How each group was scheduled (`explain()`'s line), once it is encoded.
    schedules: Vec<String>,
}

/// Lowers and encodes each group (plan, pipeline, buffers, dispatches). Under `tune`, a
/// candidate that cannot run the group (workgroup memory, storage buffers) is dropped and the
/// next one encoded; the timed trials are noted in `trials`.
fn encode_groups(
    ctx: &Engine,
    st: &mut State,
    encoder: &mut wgpu::CommandEncoder,
    groups: &[Group],
    trials: &mut [Option<Trial>],
) -> Result<Encoded> {
    let choice = ctx.choice;
    let mut params: Vec<(Params, Rc<[u32]>)> = Vec::new();
    let mut cmds: Vec<Cmd> = Vec::new();
    let mut scratch_words = 0u64;
    let mut checks = Checks::default();
    let mut loops = 0u64;
    let mut schedules = Vec::new();
    for (gi, g) in groups.iter().enumerate() {
        loops += g.loops.len() as u64;
        let (first, first_params) = (cmds.len(), params.len());
        // Under `tune`, a candidate that cannot run the group (workgroup memory, storage
        // buffers) is dropped and the next one encoded.
        let (words, sites) = loop {
            let (lw, trial) = lower_tuned(ctx, g, &choice)?;
            if lw.positions() == 0 {
                break (0, None);
            }
            let lw = auto_colours(ctx, st, g, lw)?;
            let encoded = encode_group(
                ctx,
                st,
                encoder,
                g,
                lw,
                checks.words,
                &mut params,
                &mut cmds,
            );
            match encoded {
                Ok((words, sites, label)) => {
                    trials[gi] = trial.filter(|(_, timed)| *timed).map(|(k, _)| k);
                    schedules.push(label);
                    break (words, sites);
                }
                Err(e) => {
                    let retry = trial.as_ref().is_some_and(|(k, _)| {
                        let mut t = ctx.tuner.borrow_mut();
                        t.as_mut().is_some_and(|t| t.reject(k, &e.to_string()))
                    });
                    if !retry {
                        return Err(e);
                    }
                    cmds.truncate(first);
                    params.truncate(first_params);
                }
            }
        };
        scratch_words = scratch_words.max(words);
        if let Some(sites) = sites {
            checks.add(gi, g.loops.len(), sites);
        }
        cmds[first..].iter_mut().for_each(|c| c.group = gi);
    }
    Ok(Encoded {
        params,
        cmds,
        scratch_words,
        checks,
        loops,
        schedules,
    })
}

/// Writes every dispatch's params (fixed fields, then its group's Const words) into the
/// uniform arena, one aligned slot each; the slots' stride.
fn write_params(st: &mut State, gpu: &Gpu, params: &[(Params, Rc<[u32]>)]) -> u64 {
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
    stride
}

/// The reductions' scratch buffer, grown to `scratch_words` when smaller.
fn ensure_scratch(st: &mut State, gpu: &Gpu, scratch_words: u64) {
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
}

/// The dispatches in compute passes: one pass, or one per group with its timestamps.
fn record_passes(
    st: &mut State,
    gpu: &Gpu,
    encoder: &mut wgpu::CommandEncoder,
    cmds: &[Cmd],
    stride: u64,
    queries: Option<&wgpu::QuerySet>,
) -> Result<()> {
    let profiling = queries.is_some();
    let mut k = 0;
    while k < cmds.len() {
        let end = if profiling {
            (k..cmds.len())
                .find(|&e| cmds[e].group != cmds[k].group)
                .unwrap_or(cmds.len())
        } else {
            cmds.len()
        };
        let timestamp_writes = queries.map(|q| wgpu::ComputePassTimestampWrites {
            query_set: q,
            beginning_of_pass_write_index: Some(2 * cmds[k].group as u32),
            end_of_pass_write_index: Some(2 * cmds[k].group as u32 + 1),
        });
        let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
            label: Some("parloop"),
            timestamp_writes,
        });
        for c in &cmds[k..end] {
            let bg = bind_group(st, gpu, c)?;
            pass.set_pipeline(&c.pipeline.pipeline);
            pass.set_bind_group(0, &bg, &[(c.params as u64 * stride) as u32]);
            pass.dispatch_workgroups(c.grid.0, c.grid.1, 1);
        }
        k = end;
    }
    Ok(())
}
