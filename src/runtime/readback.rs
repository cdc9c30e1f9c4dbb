//! Reading device memory back after a force's submission: Dats and Globals into their host
//! copies, the timestamps (read by `timing`), checking mode's records.

use super::Buf;
use super::Engine;
use crate::data::DataInner;
use crate::error::{Error, Result};
use crate::profile::Track;
use std::rc::Rc;

/// Maps one readback buffer and returns its first `bytes` as words (`what` names it in
/// errors).
pub(super) async fn read_words(ctx: &Engine, buf: Buf, bytes: u64, what: &str) -> Result<Vec<u32>> {
    let _s = ctx
        .profiler
        .span("wait", Track::Host, || format!("wait for the {what}"));
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
    let _s = ctx.profiler.span("readback", Track::Host, || {
        let names: Vec<&str> = staging.iter().map(|(d, _)| d.name.as_str()).collect();
        format!("wait + read back {}", names.join(", "))
    });
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
