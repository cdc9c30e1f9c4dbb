//! Dat arithmetic (issue 28): zero, fill, copy, scale, axpy and dot against plain Rust, in
//! f32, f64 and i32; lazy and fused with its neighbours; Globals that start from a reduction's
//! identity; errors naming the operation and the Dats.

use crate::common;

use common::{ctx, ctx_with, small_ints};
use parloop::{Config, Error, Kernel, Set};

#[test]
fn arithmetic_matches_plain_rust_in_f32() {
    let ctx = ctx();
    let n = 1000;
    let set = Set::new("nodes", n);
    let (xs, ys) = (small_ints(3 * n, 1), small_ints(3 * n, 2));
    let x = ctx.dat("x", &set, 3, &xs).unwrap();
    let y = ctx.dat("y", &set, 3, &ys).unwrap();
    // y = y + 2 x; x = -0.5 x; then dot(x, y): small integers and halves stay exact.
    ctx.axpy(2.0, &x, &y).unwrap();
    ctx.scale(&x, -0.5).unwrap();
    let dot = ctx.dot(&x, &y).unwrap();
    assert!(ctx.pending() > 0, "arithmetic is lazy");
    let want_y: Vec<f32> = ys.iter().zip(&xs).map(|(y, x)| y + 2.0 * x).collect();
    let want_x: Vec<f32> = xs.iter().map(|x| -0.5 * x).collect();
    let want_dot: f32 = want_x.iter().zip(&want_y).map(|(a, b)| a * b).sum();
    assert_eq!(dot.value().unwrap()[0], want_dot);
    assert_eq!(&*y.data_ro().unwrap(), &want_y[..]);
    assert_eq!(&*x.data_ro().unwrap(), &want_x[..]);
    // copy, fill, zero.
    let z = ctx.dat_zeros::<f32>("z", &set, 3).unwrap();
    ctx.copy(&y, &z).unwrap();
    assert_eq!(&*z.data_ro().unwrap(), &want_y[..]);
    ctx.fill(&y, 7.5).unwrap();
    assert_eq!(&*y.data_ro().unwrap(), &vec![7.5f32; 3 * n][..]);
    ctx.zero(&z).unwrap();
    assert_eq!(&*z.data_ro().unwrap(), &vec![0.0f32; 3 * n][..]);
}

#[test]
fn arithmetic_matches_plain_rust_in_i32_and_f64() {
    let ctx = ctx();
    let set = Set::new("cells", 257);
    let a: Vec<i32> = (0..257 * 2).map(|i| (i % 13) - 6).collect();
    let b: Vec<i32> = (0..257 * 2).map(|i| (i % 7) - 3).collect();
    let x = ctx.dat("x", &set, 2, &a).unwrap();
    let y = ctx.dat("y", &set, 2, &b).unwrap();
    ctx.axpy(-3, &x, &y).unwrap();
    let want: Vec<i32> = b.iter().zip(&a).map(|(y, x)| y - 3 * x).collect();
    assert_eq!(&*y.data_ro().unwrap(), &want[..]);
    let dot: i32 = a.iter().zip(&want).map(|(p, q)| p * q).sum();
    assert_eq!(ctx.dot(&x, &y).unwrap().value().unwrap()[0], dot);
    if !ctx.gpu().f64() {
        return;
    }
    let u: Vec<f64> = (0..257).map(|i| 1.0 / (i as f64 + 1.0)).collect();
    let x = ctx.dat("u", &set, 1, &u).unwrap();
    let y = ctx.dat_zeros::<f64>("v", &set, 1).unwrap();
    ctx.fill(&y, 0.1).unwrap();
    ctx.axpy(1.0 / 3.0, &x, &y).unwrap();
    let got = y.data_ro().unwrap().to_vec();
    for (i, (g, u)) in got.iter().zip(&u).enumerate() {
        // One multiply and one add: within an ulp of plain Rust's (a fused multiply-add on the
        // device rounds once instead of twice).
        let want = 0.1 + (1.0 / 3.0) * u;
        assert!(
            (g - want).abs() <= 2.0 * f64::EPSILON * want,
            "element {i}: {g} vs {want}"
        );
    }
}

#[test]
fn arithmetic_fuses_with_the_loops_around_it() {
    let ctx = ctx();
    let set = Set::new("nodes", 500);
    let x = ctx.dat("x", &set, 1, &small_ints(500, 3)).unwrap();
    let y = ctx.dat_zeros::<f32>("y", &set, 1).unwrap();
    let double = Kernel::new(
        "double",
        "fn double(u: ptr<function, array<f32, 1>>) { (*u)[0] *= 2.0; }",
    );
    ctx.par_loop(&double, &set, &[x.rw()]).unwrap();
    ctx.copy(&x, &y).unwrap();
    ctx.scale(&y, 3.0).unwrap();
    ctx.axpy(1.0, &x, &y).unwrap();
    let got = y.data_ro().unwrap().to_vec();
    let want: Vec<f32> = small_ints(500, 3).iter().map(|v| 2.0 * v * 4.0).collect();
    assert_eq!(got, want);
    assert_eq!(ctx.stats().last_dispatches, 1, "{}", ctx.explain());
}

/// A reducing loop whose workgroups are capped far below the set's size: each invocation
/// folds elements a whole dispatch apart (and the last turn is partial) before its workgroup's
/// tree, and one finalize folds the group's Globals of every op. Small integers keep the sums
/// exact in any order.
#[test]
fn capped_reductions_fold_every_element_once() {
    let n = 70_001;
    let set = Set::new("nodes", n);
    let v: Vec<f32> = (0..n).map(|i| ((i * 7919) % 1001) as f32 - 500.0).collect();
    let k = Kernel::new(
        "stats",
        "fn stats(v: ptr<function, array<f32, 1>>, s: ptr<function, array<f32, 2>>, \
         lo: ptr<function, array<f32, 1>>, hi: ptr<function, array<i32, 1>>) { \
         (*s)[0] += (*v)[0]; (*s)[1] += 1.0; (*lo)[0] = min((*lo)[0], (*v)[0]); \
         (*hi)[0] = max((*hi)[0], i32((*v)[0])); }",
    );
    let sum: f32 = v.iter().sum();
    let lo = v.iter().copied().fold(f32::INFINITY, f32::min);
    let hi = v.iter().copied().fold(f32::NEG_INFINITY, f32::max) as i32;
    for cap in [Some(1), Some(3), Some(64), Some(u32::MAX), None] {
        let ctx = ctx_with(Config {
            reduction_workgroups: cap,
            ..Config::from_env().unwrap()
        });
        let d = ctx.dat("v", &set, 1, &v).unwrap();
        let s = ctx.global::<f32>("s", &[0.0, 0.0]).unwrap();
        let (gl, gh) = (
            ctx.global_min::<f32>("lo", 1).unwrap(),
            ctx.global_max::<i32>("hi", 1).unwrap(),
        );
        // Twice into the same Globals, one force each: the second loop accumulates onto the
        // first's result.
        for _ in 0..2 {
            ctx.par_loop(&k, &set, &[d.read(), s.inc(), gl.min(), gh.max()])
                .unwrap();
            ctx.flush().unwrap();
        }
        let what = format!("reduction_workgroups {cap:?}");
        assert_eq!(&*s.value().unwrap(), &[2.0 * sum, 2.0 * n as f32], "{what}");
        assert_eq!(gl.value().unwrap()[0], lo, "{what}");
        assert_eq!(gh.value().unwrap()[0], hi, "{what}");
        assert_eq!(ctx.stats().dispatches, 4, "{what}: one finalize per loop");
        // One Global reduced by two arguments of one loop: both contributions, in turn.
        let twice = Kernel::new(
            "twice",
            "fn twice(v: ptr<function, array<f32, 1>>, a: ptr<function, array<f32, 2>>, \
             b: ptr<function, array<f32, 2>>) { (*a)[0] += (*v)[0]; (*b)[1] += 2.0; }",
        );
        ctx.par_loop(&twice, &set, &[d.read(), s.inc(), s.inc()])
            .unwrap();
        assert_eq!(
            &*s.value().unwrap(),
            &[3.0 * sum, 2.0 * n as f32 + 2.0 * n as f32],
            "{what}"
        );
    }
}

#[test]
fn min_and_max_globals_start_from_the_identity() {
    let ctx = ctx();
    let set = Set::new("cells", 100);
    let v: Vec<f32> = (0..100).map(|i| (i as f32 - 50.0).abs() + 3.0).collect();
    let d = ctx.dat("v", &set, 1, &v).unwrap();
    let lo = ctx.global_min::<f32>("lo", 1).unwrap();
    let hi = ctx.global_max::<f32>("hi", 1).unwrap();
    assert_eq!(lo.value().unwrap()[0], f32::INFINITY);
    assert_eq!(hi.value().unwrap()[0], f32::NEG_INFINITY);
    let k = Kernel::new(
        "range",
        "fn range(v: ptr<function, array<f32, 1>>, lo: ptr<function, array<f32, 1>>, \
         hi: ptr<function, array<f32, 1>>) { (*lo)[0] = min((*lo)[0], (*v)[0]); \
         (*hi)[0] = max((*hi)[0], (*v)[0]); }",
    );
    ctx.par_loop(&k, &set, &[d.read(), lo.min(), hi.max()])
        .unwrap();
    assert_eq!(lo.value().unwrap()[0], 3.0);
    assert_eq!(hi.value().unwrap()[0], 53.0);
    let ints = ctx.global_min::<i32>("ints", 2).unwrap();
    assert_eq!(&*ints.value().unwrap(), &[i32::MAX, i32::MAX]);
    assert!(matches!(
        ctx.global_max::<u32>("none", 0),
        Err(Error::Data(_))
    ));
}

#[test]
fn mismatched_dats_are_an_error_naming_the_operation_and_both_dats() {
    let ctx = ctx();
    let (a, b) = (Set::new("a", 4), Set::new("b", 4));
    let x = ctx.dat_zeros::<f32>("x", &a, 2).unwrap();
    let y = ctx.dat_zeros::<f32>("y", &a, 3).unwrap();
    let z = ctx.dat_zeros::<f32>("z", &b, 2).unwrap();
    let e = ctx.axpy(1.0, &x, &y).unwrap_err().to_string();
    assert!(
        e.contains("axpy") && e.contains("dim 2") && e.contains("dim 3"),
        "{e}"
    );
    let e = ctx.copy(&x, &z).unwrap_err().to_string();
    assert!(
        e.contains("copy") && e.contains("set `a`") && e.contains("set `b`"),
        "{e}"
    );
    assert!(ctx.dot(&x, &z).is_err());
    let e = ctx.axpy(2.0, &x, &x).unwrap_err().to_string();
    assert!(
        e.contains("axpy: `x` is both") && e.contains("scale"),
        "{e}"
    );
    assert!(
        ctx.copy(&x, &x)
            .unwrap_err()
            .to_string()
            .contains("copy: `x` is both")
    );
    // The same Dat twice is a dot product of a Dat with itself.
    let one = ctx
        .dat("one", &a, 2, &[1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0])
        .unwrap();
    assert_eq!(ctx.dot(&one, &one).unwrap().value().unwrap()[0], 204.0);
}
