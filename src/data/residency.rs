//! Which copy of a Dat or Global holds its current value, and whether a distributed Dat's halo
//! holds the owners' values: the one place these flags change. Every other layer asks
//! questions (`host_valid`, `halo_current`, ...) and reports events through the named
//! transitions below; each states what it establishes, and debug builds check the invariants
//! after every transition.
//!
//! Invariants:
//! - neither copy valid means the value is zeros (never written); once written, at least one
//!   copy is valid, and a write leaves exactly one valid;
//! - an exchange still in the trace (`pending_recv != 0`) makes the halo count as current
//!   (loops recorded after it read what it brings), so `pending_recv != 0` implies
//!   `halo_current`;
//! - a dropped value stays dropped.

use std::cell::Cell;

/// The validity flags of one Dat or Global (see the module's invariants).
#[derive(Debug)]
pub(crate) struct Residency {
    host: Cell<bool>,
    device: Cell<bool>,
    alive: Cell<bool>,
    halo: Cell<bool>,
    pending_recv: Cell<u64>,
}

impl Default for Residency {
    /// Never written (zeros), held by the user, halo current (zeros everywhere agree).
    fn default() -> Self {
        Residency {
            host: Cell::new(false),
            device: Cell::new(false),
            alive: Cell::new(true),
            halo: Cell::new(true),
            pending_recv: Cell::new(0),
        }
    }
}

impl Residency {
    // Questions.

    /// The host copy holds the current value.
    pub fn host_valid(&self) -> bool {
        self.host.get()
    }
    /// The device copy holds the current value.
    pub fn device_valid(&self) -> bool {
        self.device.get()
    }
    /// Never written: the value is zeros, and no copy holds it.
    pub fn zeros(&self) -> bool {
        !self.host.get() && !self.device.get()
    }
    /// Only the device holds the current value (reading it on the host needs a readback).
    pub fn device_only(&self) -> bool {
        self.device.get() && !self.host.get()
    }
    /// The user still holds a handle: its value may be read later.
    pub fn alive(&self) -> bool {
        self.alive.get()
    }
    /// A distributed Dat's halo holds the owners' values, or will once the exchange still in
    /// the trace has run.
    pub fn halo_current(&self) -> bool {
        self.halo.get()
    }
    /// The HaloRecv still in the trace that makes the halo current (0: none).
    pub fn pending_recv(&self) -> u64 {
        self.pending_recv.get()
    }

    // Transitions of the copies.

    /// The host wrote the value (host values given, a host kernel, `set_data`, a data()
    /// guard, a reduction combined on the host): the host copy alone is current.
    pub fn written_on_host(&self) {
        self.host.set(true);
        self.device.set(false);
        self.check();
    }
    /// A device loop wrote the value: the device copy alone is current.
    pub fn written_on_device(&self) {
        self.device.set(true);
        self.host.set(false);
        self.check();
    }
    /// The host copy was made equal to the current one (a readback, or zeros filled in for a
    /// never-written value): both copies that were valid stay so, and the host's is.
    pub fn copied_to_host(&self) {
        self.host.set(true);
        self.check();
    }
    /// The device copy was made equal to the current one (an upload, or a fresh buffer
    /// cleared for a never-written value).
    pub fn copied_to_device(&self) {
        self.device.set(true);
        self.check();
    }
    /// The device copy is gone (its buffer was not found where a write was due): the host
    /// copy must hold the value.
    pub fn device_lost(&self) {
        debug_assert!(self.host.get(), "a device copy was lost with no host copy");
        self.device.set(false);
        self.check();
    }
    /// The user dropped the last handle: the value is not read again unless a pending loop
    /// reads it.
    pub fn dropped(&self) {
        self.alive.set(false);
    }

    // Transitions of a distributed Dat's halo.

    /// The owned values changed (a loop or the host wrote them), or the exchanges of a failed
    /// force are forgotten: the halo is stale and no exchange is pending.
    pub fn halo_written_over(&self) {
        self.halo.set(false);
        self.pending_recv.set(0);
        self.check();
    }
    /// An exchange was recorded in the trace (`recv`: its HaloRecv): loops recorded after it
    /// see a current halo.
    pub fn halo_exchange_recorded(&self, recv: u64) {
        self.halo.set(true);
        self.pending_recv.set(recv);
        self.check();
    }
    /// The HaloRecv `recv` ran (its values are in the halo); a newer exchange stays pending.
    pub fn halo_received(&self, recv: u64) {
        if self.pending_recv.get() == recv {
            self.pending_recv.set(0);
        }
        self.check();
    }
    /// The halo holds the owners' values now (an exchange ran at once, a scatter wrote every
    /// element, or no rank holds a halo of the set).
    pub fn halo_exchanged(&self) {
        self.halo.set(true);
        self.pending_recv.set(0);
        self.check();
    }

    fn check(&self) {
        debug_assert!(
            self.pending_recv.get() == 0 || self.halo.get(),
            "an exchange is pending for a halo marked stale"
        );
    }
}
