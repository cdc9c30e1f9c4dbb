//! Double precision: Dat<f64>, Global<f64> and f64 Consts against plain-Rust f64 references,
//! with values whose f32 rounding the assertions would see; increments and extrema through
//! maps under every strategy the adapter runs (colourings; compare-and-swap on 64-bit atomics
//! where it has them); and, on an adapter without SHADER_F64 (OpenGL in CI), the documented
//! error at declaration.

use crate::common;

use common::{ctx, ctx_with, random_map};
use parloop::util::Rng;
use parloop::*;

/// Values near 1 that differ below f32's resolution (2^-24): f32 storage would merge them.
fn fine_values(n: usize, seed: u64) -> Vec<f64> {
    let mut rng = Rng::new(seed);
    (0..n)
        .map(|_| 1.0 + rng.below(1 << 20) as f64 * 1e-13)
        .collect()
}

/// Skips nothing: on an adapter without f64 it asserts the documented error instead.
fn f64_context() -> Option<Context> {
    let ctx = ctx();
    if ctx.gpu().f64() {
        return Some(ctx);
    }
    let s = Set::new("s", 4);
    let err = ctx
        .dat_zeros::<f64>("pressure", &s, 1)
        .err()
        .expect("refused");
    let msg = err.to_string();
    assert!(
        msg.contains("Dat `pressure` is f64")
            && msg.contains("SHADER_F64")
            && msg.contains(&ctx.adapter()),
        "{msg}"
    );
    assert!(ctx.global("g", &[1.0f64]).is_err());
    assert!(ctx.constant("c", 1.0f64).is_err());
    None
}

#[test]
fn direct_loop_with_f64_consts_keeps_double_precision() {
    let Some(ctx) = f64_context() else { return };
    let n = 5000;
    let set = Set::new("s", n);
    let a = fine_values(2 * n, 1);
    let ad = ctx.dat("a", &set, 2, &a).unwrap();
    let out = ctx.dat_zeros::<f64>("out", &set, 2).unwrap();
    // f32 and f64 Consts side by side, scalar and array.
    ctx.constant("scale", 3.0f32).unwrap();
    ctx.constant("shift", 1e-11f64).unwrap();
    ctx.constant("w", [0.25f64, 0.75]).unwrap();
    let k = Kernel::new(
        "affine",
        "fn affine(a: ptr<function, array<f64, 2>>, o: ptr<function, array<f64, 2>>) {
            for (var i = 0; i < 2; i++) {
                (*o)[i] = (*a)[i] * f64(scale) * w[i] + shift;
            }
        }",
    );
    ctx.par_loop(&k, &set, &[ad.read(), out.write()]).unwrap();
    let got = out.data_ro().unwrap().to_vec();
    for (e, (g, x)) in got.iter().zip(&a).enumerate() {
        let expect = x * 3.0 * [0.25, 0.75][e % 2] + 1e-11;
        assert!(
            (g - expect).abs() <= 1e-15 * expect.abs(),
            "value {e}: {g} against {expect}"
        );
    }
    // The differences between neighbours survive (they are below f32's resolution).
    assert!(got[0] != got[2] || a[0] == a[2]);
}

#[test]
fn f64_increments_through_maps_under_every_strategy_the_adapter_runs() {
    let Some(probe) = f64_context() else { return };
    // Compare-and-swap on 64-bit atomics where the adapter has them (lavapipe does).
    let atomics = probe.gpu().int64_atomics();
    let cells = Set::new("cells", 3000);
    let nodes = Set::new("nodes", 900);
    let v = fine_values(cells.size(), 2);
    for arity in 1..=4usize {
        let m = random_map("c2n", &cells, &nodes, arity, 10 + arity as u64);
        let mv = m.values().to_vec();
        // Reference: each cell adds v * (j + 1) to its j-th node, in f64.
        let mut expect = vec![0.5f64; nodes.size()];
        for c in 0..cells.size() {
            for j in 0..arity {
                expect[mv[c * arity + j] as usize] += v[c] * (j + 1) as f64;
            }
        }
        let k = Kernel::new(
            "spread",
            format!(
                "fn spread(v: ptr<function, array<f64, 1>>, n: ptr<function, array<f64, {arity}>>) {{
                    for (var j = 0; j < {arity}; j++) {{ (*n)[j] += (*v)[0] * f64(j + 1); }}
                }}"
            ),
        );
        for (strategy, staging) in [
            (Strategy::Auto, Staging::Inc),
            (Strategy::GlobalColour, Staging::Inc),
            (Strategy::Hierarchical, Staging::Inc),
            (Strategy::Hierarchical, Staging::All),
            (Strategy::Hierarchical, Staging::None),
            (Strategy::Atomics, Staging::Inc),
            (Strategy::Cas, Staging::Inc),
            (Strategy::Staged, Staging::Inc),
        ] {
            if !strategy.takes_f64(atomics) {
                continue;
            }
            let ctx = ctx_with(Config {
                strategy,
                staging,
                ..Config::from_env().unwrap()
            });
            let vd = ctx.dat("v", &cells, 1, &v).unwrap();
            let nd = ctx
                .dat("n", &nodes, 1, &vec![0.5f64; nodes.size()])
                .unwrap();
            ctx.par_loop(&k, &cells, &[vd.read(), nd.all(&m).inc()])
                .unwrap();
            let got = nd.data_ro().unwrap().to_vec();
            for (i, (g, e)) in got.iter().zip(&expect).enumerate() {
                // Sums of a few terms in another order: f64 round-off only.
                assert!(
                    (g - e).abs() <= 1e-14 * e.abs(),
                    "{strategy:?}/{staging:?} arity {arity}, node {i}: {g} against {e}"
                );
            }
        }
    }
}

#[test]
fn f64_extrema_through_a_map_by_compare_and_swap() {
    let Some(probe) = f64_context() else { return };
    if !probe.gpu().int64_atomics() {
        return;
    }
    let cells = Set::new("cells", 4000);
    let nodes = Set::new("nodes", 300);
    let m = random_map("c2n", &cells, &nodes, 3, 7);
    let mv = m.values().to_vec();
    // Values that f32 would merge: the extremum must be the exact f64.
    let v = fine_values(cells.size(), 9);
    let (mut lo, mut hi) = (vec![2.0f64; nodes.size()], vec![0.0f64; nodes.size()]);
    for (c, x) in v.iter().enumerate() {
        for &n in &mv[c * 3..c * 3 + 3] {
            lo[n as usize] = lo[n as usize].min(*x);
            hi[n as usize] = hi[n as usize].max(*x);
        }
    }
    let k = Kernel::new(
        "extrema",
        "fn extrema(v: ptr<function, array<f64, 1>>, lo: ptr<function, array<f64, 3>>,
                    hi: ptr<function, array<f64, 3>>) {
            for (var j = 0; j < 3; j++) {
                (*lo)[j] = min((*lo)[j], (*v)[0]);
                (*hi)[j] = max((*hi)[j], (*v)[0]);
            }
        }",
    );
    for strategy in [Strategy::Atomics, Strategy::Cas, Strategy::Staged] {
        let ctx = ctx_with(Config {
            strategy,
            ..Config::from_env().unwrap()
        });
        let vd = ctx.dat("v", &cells, 1, &v).unwrap();
        let lod = ctx
            .dat("lo", &nodes, 1, &vec![2.0f64; nodes.size()])
            .unwrap();
        let hid = ctx.dat_zeros::<f64>("hi", &nodes, 1).unwrap();
        ctx.par_loop(
            &k,
            &cells,
            &[vd.read(), lod.all(&m).min(), hid.all(&m).max()],
        )
        .unwrap();
        assert_eq!(lod.data_ro().unwrap().to_vec(), lo, "{strategy:?}: minima");
        assert_eq!(hid.data_ro().unwrap().to_vec(), hi, "{strategy:?}: maxima");
    }
}

#[test]
fn atomics_and_cas_refuse_f64_increments_without_64_bit_atomics() {
    let Some(probe) = f64_context() else { return };
    if probe.gpu().int64_atomics() {
        return;
    }
    let cells = Set::new("cells", 10);
    let nodes = Set::new("nodes", 4);
    let m = random_map("c2n", &cells, &nodes, 2, 3);
    let k = Kernel::new(
        "inc",
        "fn inc(n: ptr<function, array<f64, 2>>) { (*n)[0] += 1.0lf; (*n)[1] += 1.0lf; }",
    );
    for strategy in [Strategy::Atomics, Strategy::Cas, Strategy::Staged] {
        let ctx = ctx_with(Config {
            strategy,
            ..Config::from_env().unwrap()
        });
        let n = ctx.dat_zeros::<f64>("n", &nodes, 1).unwrap();
        let msg = ctx
            .par_loop(&k, &cells, &[n.all(&m).inc()])
            .unwrap_err()
            .to_string();
        assert!(
            msg.contains("inc") && msg.contains("64-bit atomics") && msg.contains("global-colour"),
            "{strategy:?}: {msg}"
        );
    }
}

#[test]
fn f64_global_reductions_match_the_reference() {
    let Some(ctx) = f64_context() else { return };
    let n = 20_000;
    let set = Set::new("s", n);
    let a = fine_values(n, 4);
    let ad = ctx.dat("a", &set, 1, &a).unwrap();
    let sum = ctx.global("sum", &[0.25f64, -1.0]).unwrap();
    let lo = ctx.global("lo", &[f64::MAX]).unwrap();
    let hi = ctx.global("hi", &[f64::MIN]).unwrap();
    let k = Kernel::new(
        "stats",
        "fn stats(a: ptr<function, array<f64, 1>>, s: ptr<function, array<f64, 2>>,
                  lo: ptr<function, array<f64, 1>>, hi: ptr<function, array<f64, 1>>) {
            (*s)[0] += (*a)[0];
            (*s)[1] += (*a)[0] * (*a)[0];
            (*lo)[0] = min((*lo)[0], (*a)[0]);
            (*hi)[0] = max((*hi)[0], (*a)[0]);
        }",
    );
    let args = [ad.read(), sum.inc(), lo.min(), hi.max()];
    ctx.par_loop(&k, &set, &args).unwrap();
    // Twice: the second pass accumulates onto the first.
    ctx.par_loop(&k, &set, &args).unwrap();
    let s1: f64 = a.iter().sum();
    let s2: f64 = a.iter().map(|x| x * x).sum();
    let got = sum.value().unwrap();
    assert!((got[0] - (0.25 + 2.0 * s1)).abs() < 1e-13 * s1, "{got:?}");
    assert!((got[1] - (-1.0 + 2.0 * s2)).abs() < 1e-13 * s2, "{got:?}");
    let min = a.iter().cloned().fold(f64::MAX, f64::min);
    let max = a.iter().cloned().fold(f64::MIN, f64::max);
    assert_eq!(lo.value().unwrap(), vec![min]);
    assert_eq!(hi.value().unwrap(), vec![max]);
}

#[test]
fn f64_host_access_round_trips() {
    let Some(ctx) = f64_context() else { return };
    let set = Set::new("s", 3);
    let mut d = ctx
        .dat("d", &set, 2, &[0.1f64, 0.2, 0.3, 0.4, 0.5, 0.6])
        .unwrap();
    d.data().unwrap()[5] = 1.0 + 1e-15;
    let k = Kernel::new(
        "twice",
        "fn twice(d: ptr<function, array<f64, 2>>) { (*d)[0] *= 2.0lf; (*d)[1] *= 2.0lf; }",
    );
    ctx.par_loop(&k, &set, &[d.rw()]).unwrap();
    assert_eq!(
        &*d.data_ro().unwrap(),
        &[0.2, 0.4, 0.6, 0.8, 1.0, 2.0 + 2e-15]
    );
    assert_eq!(d.gather().unwrap().unwrap()[5], 2.0 + 2e-15);
    // A wrong length names the Dat and the count.
    let msg = d.set_data(&[1.0; 5]).unwrap_err().to_string();
    assert!(msg.contains("`d`") && msg.contains("expected 6"), "{msg}");
}

/// Issue 25, defect 7: a MIN or MAX that no element changes leaves the Global's value as it
/// was, infinities included, on the GPU as on the host (the GPU's identity was the largest
/// finite f64, so a MAX from -inf came back as -1.8e308).
#[test]
fn an_untouched_f64_min_max_keeps_infinities_on_gpu_and_host() {
    let Some(ctx) = f64_context() else { return };
    let s = Set::new("s", 300);
    let src = "fn keep(lo: ptr<function, array<f64, 1>>, hi: ptr<function, array<f64, 1>>) {}";
    for kernel in [
        Kernel::new("keep", src),
        Kernel::host("keep", |_: &mut HostArgs| {}),
    ] {
        let gpu = kernel.wgsl().is_some();
        let lo = ctx.global("lo", &[f64::INFINITY]).unwrap();
        let hi = ctx.global("hi", &[f64::NEG_INFINITY]).unwrap();
        ctx.par_loop(&kernel, &s, &[lo.min(), hi.max()]).unwrap();
        assert_eq!(lo.value().unwrap(), [f64::INFINITY], "MIN, gpu {gpu}");
        assert_eq!(hi.value().unwrap(), [f64::NEG_INFINITY], "MAX, gpu {gpu}");
        // And a value the elements do reach still wins.
        let k2 = Kernel::new(
            "raise",
            "fn raise(hi: ptr<function, array<f64, 1>>) { (*hi)[0] = 2.5lf; }",
        );
        ctx.par_loop(&k2, &s, &[hi.max()]).unwrap();
        assert_eq!(hi.value().unwrap(), [2.5]);
    }
}

/// The builtins SPIR-V's GLSL.std.450 and GLSL define for 32-bit floats only: on f64 values
/// each is refused when the loop is recorded, naming the builtin, the kernel and its line;
/// through f32 the same call is accepted.
#[test]
fn f32_only_builtins_on_f64_are_refused_at_record_time() {
    let Some(ctx) = f64_context() else { return };
    let s = Set::new("s", 8);
    let x = ctx.dat("x", &s, 1, &[0.5f64; 8]).unwrap();
    let y = ctx.dat_zeros::<f64>("y", &s, 1).unwrap();
    let unary = [
        "sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "tanh", "asinh", "acosh",
        "atanh", "radians", "degrees", "exp", "exp2", "log", "log2",
    ];
    let calls = unary
        .iter()
        .map(|f| (*f, format!("{f}(v)"), format!("{f}(f32(v))")))
        .chain([
            ("pow", "pow(v, 2.5)".into(), "pow(f32(v), 2.5)".into()),
            ("atan2", "atan2(v, 2.0)".into(), "atan2(f32(v), 2.0)".into()),
        ]);
    for (name, on_f64, on_f32) in calls {
        let src = |call: &str| {
            format!(
                "fn k(x: ptr<function, array<f64, 1>>, y: ptr<function, array<f64, 1>>) {{
    let v = (*x)[0];
    (*y)[0] = f64({call});
}}"
            )
        };
        let k = Kernel::new("k", src(&on_f64));
        let e = ctx
            .par_loop(&k, &s, &[x.read(), y.write()])
            .err()
            .unwrap_or_else(|| panic!("`{on_f64}` on f64 accepted"))
            .to_string();
        assert!(
            e.contains(&format!("`{name}` of an f64 value"))
                && e.contains("kernel `k`, line 3")
                && e.contains("32-bit floats only"),
            "{name}: {e}"
        );
        let k = Kernel::new("k", src(&on_f32));
        ctx.par_loop(&k, &s, &[x.read(), y.write()])
            .unwrap_or_else(|e| panic!("`{on_f32}` refused: {e}"));
    }
    // The last call kept (atan2 through f32) computed in single precision.
    let got = y.data_ro().unwrap()[0];
    assert!((got - 0.5f64.atan2(2.0)).abs() < 1e-6, "{got}");
}

/// The builtins defined for f64 compute in double precision, equal to the host's values.
#[test]
fn f64_builtins_that_are_allowed_equal_the_host() {
    let Some(ctx) = f64_context() else { return };
    let xs: Vec<f64> = (0..64)
        .map(|i| (i as f64 - 31.5) * 0.37 + 1e-12 * i as f64)
        .collect();
    let s = Set::new("s", xs.len());
    let x = ctx.dat("x", &s, 1, &xs).unwrap();
    type Host = fn(f64) -> f64;
    let cases: [(&str, Host); 12] = [
        ("sqrt(abs(v))", |v| v.abs().sqrt()),
        ("inverseSqrt(abs(v))", |v| 1.0 / v.abs().sqrt()),
        ("abs(v)", f64::abs),
        ("floor(v)", f64::floor),
        ("ceil(v)", f64::ceil),
        ("trunc(v)", f64::trunc),
        ("round(v)", f64::round_ties_even),
        ("fract(v)", |v| v - v.floor()),
        ("fma(v, v, 1e-9)", |v| v.mul_add(v, 1e-9)),
        ("min(v, 0.123456789012)", |v| v.min(0.123456789012)),
        ("clamp(v, -1.0, 1.0)", |v| v.clamp(-1.0, 1.0)),
        ("sign(v) * v / 3.0", |v| v.signum() * v / 3.0),
    ];
    for (call, host) in cases {
        let y = ctx.dat_zeros::<f64>("y", &s, 1).unwrap();
        let k = Kernel::new(
            "k",
            format!(
                "fn k(x: ptr<function, array<f64, 1>>, y: ptr<function, array<f64, 1>>) {{
                    let v = (*x)[0];
                    (*y)[0] = {call};
                }}"
            ),
        );
        ctx.par_loop(&k, &s, &[x.read(), y.write()]).unwrap();
        for (v, got) in xs.iter().zip(y.data_ro().unwrap().iter()) {
            let want = host(*v);
            assert!(
                (got - want).abs() <= 4.0 * f64::EPSILON * want.abs(),
                "{call} at {v}: {got} against the host's {want}"
            );
        }
    }
}
