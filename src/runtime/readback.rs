//! Reading device memory back after a force's submission: Dats and Globals into their host
//! copies, the profiler's timestamps, checking mode's records.

use super::Buf;
use super::Engine;
use crate::data::DataInner;
use crate::error::{Error, Result};
use crate::fuse::Group;
use std::rc::Rc;

/// Adds each group's GPU time (from its pass's timestamps) to the per-group totals.
pub(super) async fn record_times(
    ctx: &Engine,
    groups: &[Group],
    buf: Buf,
    used: &[bool],
) -> Result<()> {
    let words = read_words(ctx, buf, 16 * groups.len() as u64, "GPU timestamps").await?;
    let tick = |k: usize| u64::from(words[2 * k]) | u64::from(words[2 * k + 1]) << 32;
    let period = ctx.gpu.queue.get_timestamp_period() as f64;
    let mut st = ctx.rt.borrow_mut();
    for (g, group) in groups.iter().enumerate().filter(|&(g, _)| used[g]) {
        let ns = tick(2 * g + 1).saturating_sub(tick(2 * g)) as f64 * period;
        let label = group
            .loops
            .iter()
            .map(|l| l.kernel.name())
            .collect::<Vec<_>>()
            .join("+");
        let t = st.stats.kernel_times.entry(label).or_default();
        t.calls += 1;
        t.ns += ns as u64;
    }
    Ok(())
}

/// Maps one readback buffer and returns its first `bytes` as words (`what` names it in
/// errors).
pub(super) async fn read_words(ctx: &Engine, buf: Buf, bytes: u64, what: &str) -> Result<Vec<u32>> {
    let (tx, rx) = futures::channel::oneshot::channel();
    buf.buffer
        .map_async(wgpu::MapMode::Read, 0..bytes, move |r| {
            let _ = tx.send(r);
        });
    #[cfg(not(target_arch = "wasm32"))]
    let _ = ctx.gpu.device.poll(wgpu::PollType::wait_indefinitely());
    if !matches!(rx.await, Ok(Ok(()))) {
        return Err(Error::Device(format!("reading the {what} failed")));
    }
    let words = {
        let view = buf
            .buffer
            .get_mapped_range(0..bytes)
            .map_err(|e| Error::Device(format!("mapping the {what} failed: {e}")))?;
        bytemuck::cast_slice(&view).to_vec()
    };
    buf.buffer.unmap();
    ctx.rt.borrow_mut().release_staging(buf);
    Ok(words)
}

/// Maps the readback buffers and copies them into the host copies.
pub(super) async fn read_staging(ctx: &Engine, staging: Vec<(Rc<DataInner>, Buf)>) -> Result<()> {
    if staging.is_empty() {
        return Ok(());
    }
    let mut waits = Vec::new();
    for (d, buf) in &staging {
        let (tx, rx) = futures::channel::oneshot::channel();
        buf.buffer
            .map_async(wgpu::MapMode::Read, 0..d.bytes(), move |r| {
                let _ = tx.send(r);
            });
        waits.push(rx);
    }
    #[cfg(not(target_arch = "wasm32"))]
    ctx.gpu
        .device
        .poll(wgpu::PollType::wait_indefinitely())
        .map_err(|e| Error::Device(format!("waiting for the GPU failed: {e}")))?;
    for ((d, buf), rx) in staging.into_iter().zip(waits) {
        match rx.await {
            Ok(Ok(())) => {}
            Ok(Err(e)) => {
                return Err(Error::Device(format!(
                    "reading back `{}` failed: {e}",
                    d.name
                )));
            }
            Err(_) => {
                return Err(Error::Device(format!(
                    "reading back `{}` was cancelled",
                    d.name
                )));
            }
        }
        {
            let view = buf
                .buffer
                .get_mapped_range(0..d.bytes())
                .map_err(|e| Error::Device(format!("mapping `{}` failed: {e}", d.name)))?;
            let mut host = d.host.try_borrow_mut().map_err(|_| {
                Error::Usage(format!(
                    "{} `{}` is still borrowed by the host (a data_ro() guard is alive) while its \
                     new values are read back: drop the guard first",
                    d.kind(),
                    d.name
                ))
            })?;
            host.clear();
            if ctx.rt.borrow().is_soa(&d) {
                let words: &[u32] = bytemuck::cast_slice(&view);
                host.extend(crate::runtime::transpose(
                    words,
                    d.dim,
                    d.dtype.words(),
                    true,
                ));
            } else {
                host.extend_from_slice(bytemuck::cast_slice(&view));
            }
        }
        buf.buffer.unmap();
        d.state.copied_to_host();
        ctx.rt.borrow_mut().release_staging(buf);
    }
    Ok(())
}
