//! Prefetches (`Global::prefetch`, `Dat::prefetch`): the value read later is the value the
//! loops before the prefetch give, whatever is recorded and run meanwhile; a device or host
//! write after a prefetch is never hidden by it.

use crate::common::ctx;
use parloop::*;

fn twice() -> Kernel {
    Kernel::new(
        "twice",
        "fn twice(a: ptr<function, array<f32, 1>>) { (*a)[0] *= 2.0; }",
    )
}

fn sum() -> Kernel {
    Kernel::new(
        "sum",
        "fn sum(a: ptr<function, array<f32, 1>>, t: ptr<function, array<f32, 1>>) { (*t)[0] += (*a)[0]; }",
    )
}

/// A prefetched Global read after later loops ran: the value before them, with no readback
/// and no submission of its own at the read.
#[test]
fn a_prefetched_value_is_read_without_another_submission() {
    let ctx = ctx();
    let n = 1000;
    let s = Set::new("s", n);
    let model: Vec<f32> = (0..n).map(|i| (i % 7) as f32).collect();
    let a = ctx.dat("a", &s, 1, &model).unwrap();
    let total = ctx.global("total", &[0.0f32]).unwrap();
    ctx.par_loop(&sum(), &s, &[a.read(), total.inc()]).unwrap();
    total.prefetch().unwrap();
    // Recorded and run after the prefetch: they do not touch `total`.
    for _ in 0..3 {
        ctx.par_loop(&twice(), &s, &[a.rw()]).unwrap();
    }
    ctx.flush().unwrap();
    let before = ctx.stats();
    assert_eq!(total.value().unwrap(), [model.iter().sum::<f32>()]);
    let after = ctx.stats();
    assert_eq!(
        after.submissions, before.submissions,
        "the read submits nothing"
    );
    assert_eq!(after.readbacks, before.readbacks, "nor reads back again");
    let eight: Vec<f32> = model.iter().map(|v| v * 8.0).collect();
    assert_eq!(&*a.data_ro().unwrap(), &eight[..]);
}

/// A loop that writes the data after its prefetch: the read gives the new values.
#[test]
fn a_write_after_a_prefetch_is_seen() {
    let ctx = ctx();
    let s = Set::new("s", 100);
    let a = ctx.dat("a", &s, 1, &[1.5f32; 100]).unwrap();
    let total = ctx.global("total", &[0.0f32]).unwrap();
    ctx.par_loop(&sum(), &s, &[a.read(), total.inc()]).unwrap();
    total.prefetch().unwrap();
    ctx.par_loop(&sum(), &s, &[a.read(), total.inc()]).unwrap();
    assert_eq!(total.value().unwrap(), [300.0]);
    // Run before the read, the reduction again.
    total.prefetch().unwrap();
    ctx.par_loop(&sum(), &s, &[a.read(), total.inc()]).unwrap();
    ctx.flush().unwrap();
    assert_eq!(total.value().unwrap(), [450.0]);
    // The same for a Dat, the second write run before the read.
    a.prefetch().unwrap();
    ctx.par_loop(&twice(), &s, &[a.rw()]).unwrap();
    ctx.flush().unwrap();
    assert_eq!(&*a.data_ro().unwrap(), &[3.0f32; 100][..]);
}

/// The host writes after a prefetch: its values win, and later loops see them.
#[test]
fn a_host_write_after_a_prefetch_wins() {
    let ctx = ctx();
    let s = Set::new("s", 10);
    let mut a = ctx.dat("a", &s, 1, &[1.0f32; 10]).unwrap();
    ctx.par_loop(&twice(), &s, &[a.rw()]).unwrap();
    a.prefetch().unwrap();
    a.data().unwrap()[3] = 100.0;
    ctx.par_loop(&twice(), &s, &[a.rw()]).unwrap();
    let mut model = [4.0f32; 10];
    model[3] = 200.0;
    assert_eq!(&*a.data_ro().unwrap(), &model[..]);
    let g = ctx.global("g", &[0.0f32]).unwrap();
    ctx.par_loop(&sum(), &s, &[a.read(), g.inc()]).unwrap();
    g.prefetch().unwrap();
    g.set(&[-1.0]).unwrap();
    assert_eq!(g.value().unwrap(), [-1.0]);
}

/// More prefetches than are kept in flight, none read until the end: each value is right
/// (those dropped are read back when read).
#[test]
fn many_prefetches_all_read_right() {
    let ctx = ctx();
    let s = Set::new("s", 64);
    let a = ctx.dat("a", &s, 1, &[1.0f32; 64]).unwrap();
    let globals: Vec<Global<f32>> = (0..100)
        .map(|k| {
            let g = ctx.global(&format!("g{k}"), &[0.0f32]).unwrap();
            ctx.par_loop(&sum(), &s, &[a.read(), g.inc()]).unwrap();
            g.prefetch().unwrap();
            ctx.par_loop(&twice(), &s, &[a.rw()]).unwrap();
            g
        })
        .collect();
    for (k, g) in globals.iter().enumerate().rev() {
        assert_eq!(g.value().unwrap(), [64.0 * 2f32.powi(k as i32)], "g{k}");
    }
}

/// A host-target loop that reads prefetched data: the loop sees the values (the prefetch is
/// finished first).
#[test]
fn a_host_loop_reads_prefetched_data() {
    let ctx = ctx();
    let s = Set::new("s", 4);
    let a = ctx.dat("a", &s, 1, &[1.0f32; 4]).unwrap();
    ctx.par_loop(&twice(), &s, &[a.rw()]).unwrap();
    a.prefetch().unwrap();
    let g = ctx.global("g", &[0.0f32]).unwrap();
    let hsum = Kernel::host("hsum", |h: &mut HostArgs| {
        let v = h.get::<f32>(0)[0];
        h.get_mut::<f32>(1)[0] += v;
    });
    ctx.par_loop(&hsum, &s, &[a.read(), g.inc()]).unwrap();
    assert_eq!(g.value().unwrap(), [8.0]);
}

/// Prefetched Dats dropped unread give their device buffers back to the pool.
#[test]
fn dropped_prefetched_data_gives_its_buffer_back() {
    let ctx = ctx();
    let s = Set::new("s", 1 << 16);
    let one = Kernel::new(
        "one",
        "fn one(a: ptr<function, array<f32, 1>>) { (*a)[0] = 1.0; }",
    );
    let before = ctx.stats();
    for k in 0..8 {
        let a = ctx.dat_zeros::<f32>(&format!("a{k}"), &s, 1).unwrap();
        ctx.par_loop(&one, &s, &[a.write()]).unwrap();
        a.prefetch().unwrap();
    }
    ctx.flush().unwrap();
    let reused = ctx.stats().pool_reuses - before.pool_reuses;
    assert!(reused >= 7, "{reused} buffers reused");
}
