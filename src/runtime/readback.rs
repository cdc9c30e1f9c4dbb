//! Reading device memory back after a force's submission: Dats and Globals into their host
//! copies, the timestamps (read by `timing`), checking mode's records.

use super::Buf;
use super::Engine;
use crate::data::DataInner;
use crate::error::{Error, Result};
use crate::profile::Track;
use std::rc::{Rc, Weak};

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

/// A readback started and not waited for (a prefetch): the data's values land in `buf` when
/// the submission `index` completes; [`complete`] copies them into the host copy. A later
/// device write of the data cancels it ([`cancel_written`]); so does dropping the data
/// ([`super::State::purge`]): the entry does not keep it alive.
pub(crate) struct Inflight {
    id: u64,
    data: Weak<DataInner>,
    buf: Buf,
    rx: futures::channel::oneshot::Receiver<std::result::Result<(), wgpu::BufferAsyncError>>,
    #[cfg_attr(target_arch = "wasm32", allow(dead_code))]
    index: wgpu::SubmissionIndex,
}

impl Inflight {
    /// Gives the entry up. Its staging buffer is dropped rather than pooled: its mapping
    /// belongs to a submission that may not have completed.
    pub(super) fn cancel(self) {
        self.buf.buffer.unmap();
    }
    /// The staging buffer's bytes (held on the device while in flight).
    pub(super) fn bytes(&self) -> u64 {
        self.buf.size
    }
    /// Whether its data was dropped.
    pub(super) fn orphaned(&self) -> bool {
        self.data.strong_count() == 0
    }
}

/// Prefetches kept at most: the oldest beyond are cancelled (their data is read back again
/// when read).
const MAX_INFLIGHT: usize = 64;

/// Whether `id` has a readback in flight.
pub(super) fn inflight(st: &super::State, id: u64) -> bool {
    st.inflight.iter().any(|f| f.id == id)
}

/// Maps the readback buffers of a submission (`index`) without waiting: [`complete`] finishes
/// each when its data is read.
pub(super) fn defer_staging(
    ctx: &Engine,
    staging: Vec<(Rc<DataInner>, Buf)>,
    index: &wgpu::SubmissionIndex,
) {
    let mut st = ctx.rt.borrow_mut();
    for (data, buf) in staging {
        let (tx, rx) = futures::channel::oneshot::channel();
        buf.buffer
            .map_async(wgpu::MapMode::Read, 0..data.bytes(), move |r| {
                let _ = tx.send(r);
            });
        st.inflight.push(Inflight {
            id: data.id,
            data: Rc::downgrade(&data),
            buf,
            rx,
            index: index.clone(),
        });
    }
    while st.inflight.len() > MAX_INFLIGHT {
        st.inflight.remove(0).cancel();
    }
}

/// Drops the readbacks in flight of data that `written` says is written again: they would be
/// stale (the data stays current on the device only, read back when read).
pub(crate) fn cancel_written(ctx: &Engine, written: impl Fn(u64) -> bool) {
    let mut st = ctx.rt.borrow_mut();
    if st.inflight.is_empty() {
        return;
    }
    let (gone, kept): (Vec<Inflight>, Vec<Inflight>) = std::mem::take(&mut st.inflight)
        .into_iter()
        .partition(|f| written(f.id));
    st.inflight = kept;
    gone.into_iter().for_each(Inflight::cancel);
}

/// Finishes the readback in flight of data `id`, if there is one: waits for its submission
/// alone (not for work submitted after it) and copies the values into the host copy.
pub(crate) async fn complete(ctx: &Engine, id: u64) -> Result<()> {
    let f = {
        let mut st = ctx.rt.borrow_mut();
        match st.inflight.iter().position(|f| f.id == id) {
            Some(k) => st.inflight.remove(k),
            None => return Ok(()),
        }
    };
    let Some(data) = f.data.upgrade() else {
        f.cancel();
        return Ok(());
    };
    let _s = ctx.profiler.span("readback", Track::Host, || {
        format!("wait for the prefetch of {}", data.name)
    });
    #[cfg(not(target_arch = "wasm32"))]
    ctx.gpu
        .device
        .poll(wgpu::PollType::Wait {
            submission_index: Some(f.index.clone()),
            timeout: None,
        })
        .map_err(|e| Error::Device(format!("waiting for the GPU failed: {e}")))?;
    mapped(&data, f.rx.await)?;
    fill_host(ctx, &data, f.buf)
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
        mapped(&d, rx.await)?;
        fill_host(ctx, &d, buf)?;
    }
    Ok(())
}

/// The outcome of mapping `d`'s readback buffer, as an error naming it.
fn mapped(
    d: &DataInner,
    r: std::result::Result<
        std::result::Result<(), wgpu::BufferAsyncError>,
        futures::channel::oneshot::Canceled,
    >,
) -> Result<()> {
    match r {
        Ok(Ok(())) => Ok(()),
        Ok(Err(e)) => Err(Error::Device(format!(
            "reading back `{}` failed: {e}",
            d.name
        ))),
        Err(_) => Err(Error::Device(format!(
            "reading back `{}` was cancelled",
            d.name
        ))),
    }
}

/// Copies a mapped readback buffer into `d`'s host copy (in host order) and returns the
/// buffer to the pool.
fn fill_host(ctx: &Engine, d: &Rc<DataInner>, buf: Buf) -> Result<()> {
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
        if ctx.rt.borrow().is_soa(d) {
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
    Ok(())
}
