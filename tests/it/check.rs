//! Checking mode: out-of-range indices into kernel arguments are found on the device and
//! reported with the par_loop, argument, element, index and bound; programs that index within
//! range give the same results with checking on.

use crate::common;

use common::ctx_with;
use parloop::*;

fn checked() -> Context {
    let mut config = Config::from_env().unwrap();
    config.check = true;
    ctx_with(config)
}

/// The review's example: `var i = 5; (*a)[i] = 7.0;` on `array<f32, 1>`. Without checking the
/// force succeeds: the device clamps the index and writes element 0 (Vulkan), or drops the
/// write (OpenGL), without a word. With checking the force fails and names what happened.
#[test]
fn an_out_of_range_write_is_reported_with_its_loop_argument_element_and_bound() {
    let k = Kernel::new(
        "seven",
        "fn seven(a: ptr<function, array<f32, 1>>) {\n    var i = 5;\n    (*a)[i] = 7.0;\n}",
    );
    let s = Set::new("s", 100);
    let unchecked = common::ctx();
    let a = unchecked.dat_zeros::<f32>("a", &s, 1).unwrap();
    unchecked.par_loop(&k, &s, &[a.write()]).unwrap();
    let silent = a.data_ro().unwrap().to_vec();
    assert!(
        silent.iter().all(|&v| v == 7.0) || silent.iter().all(|&v| v == 0.0),
        "{silent:?}"
    );

    let ctx = checked();
    let a = ctx.dat_zeros::<f32>("a", &s, 1).unwrap();
    let line = line!() + 1;
    ctx.par_loop(&k, &s, &[a.write()]).unwrap();
    let e = a.data_ro().map(|_| ()).unwrap_err();
    // What a program can match: the par_loop, the argument, the element, the index, the bound.
    match &e {
        Error::Check {
            par_loop,
            arg,
            element,
            index,
            bound,
            ..
        } => {
            assert_eq!(
                (par_loop.kernel.as_str(), par_loop.file, par_loop.line),
                ("seven", file!(), line)
            );
            assert_eq!((*arg, *index, *bound), (Some(0), 5, 1));
            assert!(*element < 100, "an element of the set: {element}");
        }
        _ => panic!("{e:?}"),
    }
    let m = e.to_string();
    for want in [
        "par_loop `seven`",
        &format!("{}:{line}", file!()),
        "kernel line 3",
        "`(*a)[i]`",
        "argument 1 (`a` directly, WRITE)",
        "with 5, outside 0..1",
        "99 more",
    ] {
        assert!(m.contains(want), "missing {want:?} in: {m}");
    }
    assert!(m.contains("at element "), "{m}");
}

/// An index read from the data, in the second of two fused loops, through a helper function:
/// the record names the second loop, the helper's parameter, and the element that went wrong.
#[test]
fn the_loop_and_element_that_went_wrong_are_named() {
    let n = 64;
    let s = Set::new("s", n);
    let ctx = checked();
    let idx: Vec<u32> = (0..n as u32)
        .map(|e| if e == 37 { 4 } else { e % 3 })
        .collect();
    let which = ctx.dat("which", &s, 1, &idx).unwrap();
    let table = ctx.dat("table", &s, 3, &vec![1.0f32; 3 * n]).unwrap();
    let out = ctx.dat_zeros::<f32>("out", &s, 1).unwrap();
    let copy = Kernel::new(
        "copy",
        "fn copy(t: ptr<function, array<f32, 3>>, o: ptr<function, array<f32, 1>>) { (*o)[0] = (*t)[0]; }",
    );
    let pick = Kernel::new(
        "pick",
        "fn fetch_t(t: ptr<function, array<f32, 3>>, j: u32) -> f32 {\n    return (*t)[j];\n}\n\
         fn pick(w: ptr<function, array<u32, 1>>, t: ptr<function, array<f32, 3>>, o: ptr<function, array<f32, 1>>) {\n    \
         (*o)[0] = (*o)[0] + fetch_t(t, (*w)[0]);\n}",
    );
    ctx.par_loop(&copy, &s, &[table.read(), out.write()])
        .unwrap();
    let line = line!() + 1;
    ctx.par_loop(&pick, &s, &[which.read(), table.read(), out.rw()])
        .unwrap();
    let m = out.data_ro().map(|_| ()).unwrap_err().to_string();
    for want in [
        &format!("par_loop `pick` at {}:{line}", file!()),
        "at element 37",
        "kernel line 2",
        "parameter `t` of fn `fetch_t`",
        "with 4, outside 0..3",
    ] {
        assert!(m.contains(want), "missing {want:?} in: {m}");
    }
    assert!(!m.contains("more"), "one violation only: {m}");
}

/// Indices within range: checking changes nothing, under every strategy (the fuzzer's kernels
/// index their arguments in loops, so every access is guarded).
#[test]
fn in_range_programs_give_the_same_results_with_checking_on() {
    let nodes = Set::new("nodes", 500);
    let edges = Set::new("edges", 1500);
    let m = common::random_map("m", &edges, &nodes, 2, 7);
    let w = common::small_ints(1500, 3);
    let k = Kernel::new(
        "spread",
        "fn spread(w: ptr<function, array<f32, 1>>, x: ptr<function, array<f32, 4>>) {\n    \
         for (var j = 0u; j < 2u; j++) { for (var c = 0; c < 2; c++) { (*x)[2u * j + u32(c)] = (*w)[0] * f32(c + 1); } }\n}",
    );
    let mut want = vec![0f32; 1000];
    for e in 0..1500 {
        for j in 0..2 {
            for c in 0..2 {
                want[m.values()[e * 2 + j] as usize * 2 + c] += w[e] * (c + 1) as f32;
            }
        }
    }
    let probe = common::ctx();
    for (strategy, staging) in common::strategies(&probe) {
        let mut config = Config::from_env().unwrap();
        config.check = true;
        config.strategy = strategy;
        config.staging = staging;
        let ctx = ctx_with(config);
        let wd = ctx.dat("w", &edges, 1, &w).unwrap();
        let x = ctx.dat_zeros::<f32>("x", &nodes, 2).unwrap();
        ctx.par_loop(&k, &edges, &[wd.read(), x.all(&m).inc()])
            .unwrap();
        assert_eq!(
            &*x.data_ro().unwrap(),
            &want[..],
            "{strategy:?} {staging:?}"
        );
    }
}

#[test]
fn parloop_check_is_read_from_the_environment() {
    let c = Config::from_vars([("PARLOOP_CHECK".to_string(), "1".to_string())]).unwrap();
    assert!(c.check);
    let e = Config::from_vars([("PARLOOP_CHECK".to_string(), "nan".to_string())]).unwrap_err();
    assert!(e.to_string().contains("0 or 1"), "{e}");
}
