//! The host target: loops whose kernel has no WGSL run here, element by element, with the same
//! gather / call / scatter semantics as the generated shaders (reductions start from their
//! identity and are combined afterwards).

use crate::data::{DataInner, Via};
use crate::error::{Error, Result};
use crate::fuse::Group;
use crate::kernel::HostArgs;
use crate::types::Access;
use std::cell::RefMut;
use std::rc::Rc;

/// Runs a host group on host copies that are current (the executor read them back). Returns
/// the number of values the group touched that came from, or go to, the device.
pub(crate) fn run_group(g: &Group) -> Result<u64> {
    let mut copied = 0u64;
    for lp in &g.loops {
        let f = lp.kernel.0.host.clone().ok_or_else(|| Error::Kernel {
            par_loop: Some(lp.site()),
            message: format!(
                "{}: the kernel has neither WGSL nor a host closure",
                lp.name()
            ),
        })?;
        // Distinct data of the loop, with host copies made current.
        let mut data: Vec<Rc<DataInner>> = Vec::new();
        for a in &lp.args {
            if !data.iter().any(|d| d.id == a.data.id) {
                data.push(a.data.clone());
            }
        }
        for d in &data {
            d.ensure_host_zeros();
            if !d.state.host_valid() {
                return Err(Error::Device(format!(
                    "internal: host copy of `{}` is stale for {}",
                    d.name,
                    lp.name()
                )));
            }
            copied += u64::from(d.state.device_valid()) * d.len() as u64;
        }
        let mut hosts: Vec<RefMut<Vec<u32>>> = Vec::with_capacity(data.len());
        for d in &data {
            hosts.push(d.host.try_borrow_mut().map_err(|_| {
                Error::Usage(format!(
                    "{}: `{}` is borrowed by the host (a data guard is alive): drop it first",
                    lp.name(),
                    d.name
                ))
            })?);
        }
        let slot: Vec<usize> = lp
            .args
            .iter()
            .map(|a| data.iter().position(|d| d.id == a.data.id).unwrap_or(0))
            .collect();
        let mut values: Vec<Vec<u32>> = lp
            .args
            .iter()
            .map(|a| vec![0; a.width() * a.data.dtype.words()])
            .collect();
        let positions = lp.space.len();
        // Elements past the owned ones (a distributed set's exec halo) run for the Dats they
        // increment, but add nothing to Globals: their owner counts them (as the shaders'
        // `pl_e < pl.owned` guard).
        let owned = lp.space.set().size();
        for p in 0..positions {
            let e = lp.space.element(p);
            // Gather.
            for (i, a) in lp.args.iter().enumerate() {
                let dim = a.data.wdim();
                let src = &hosts[slot[i]];
                let v = &mut values[i];
                // What a GPU kernel sees: reductions their identity, WRITE zeros.
                if let Some(op) = a.access.reduction() {
                    let id = op.identity_words(a.data.dtype);
                    v.chunks_exact_mut(id.len())
                        .for_each(|c| c.copy_from_slice(&id));
                    continue;
                }
                if a.access == Access::Write {
                    v.fill(0);
                    continue;
                }
                for (k, t) in targets(&a.via, e).into_iter().enumerate() {
                    v[k * dim..(k + 1) * dim].copy_from_slice(&src[t * dim..(t + 1) * dim]);
                }
            }
            f(&mut HostArgs {
                element: e,
                values: &mut values,
            });
            // Scatter.
            for (i, a) in lp.args.iter().enumerate() {
                if !a.access.writes() || (matches!(a.via, Via::Global) && e >= owned) {
                    continue;
                }
                let dim = a.data.wdim();
                let dst = &mut hosts[slot[i]];
                let v = &values[i];
                for (k, t) in targets(&a.via, e).into_iter().enumerate() {
                    let (cell, x) = (&mut dst[t * dim..(t + 1) * dim], &v[k * dim..(k + 1) * dim]);
                    if let Some(op) = a.access.reduction() {
                        op.combine_words(a.data.dtype, cell, x);
                    } else {
                        cell.copy_from_slice(x);
                    }
                }
            }
        }
        drop(hosts);
        for (a, d) in lp.args.iter().map(|a| (a, &a.data)) {
            if a.access.writes() {
                d.state.written_on_host();
            }
        }
    }
    Ok(copied)
}

/// Element indices an argument reaches from element e.
fn targets(via: &Via, e: usize) -> Vec<usize> {
    match via {
        Via::Direct => vec![e],
        Via::Global => vec![0],
        Via::Map(m, j) => vec![m.values()[e * m.arity() + j] as usize],
        Via::MapAll(m) => m.values()[e * m.arity()..(e + 1) * m.arity()]
            .iter()
            .map(|&t| t as usize)
            .collect(),
    }
}
