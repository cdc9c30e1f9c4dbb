//! Bad inputs to par_loop get clear errors that name the loop (kernel, caller's file:line),
//! the argument and what to do.

use crate::common;

use common::{ctx, ctx_with, random_map};
use parloop::*;

fn loop_err(ctx: &Context, k: &Kernel, set: &Set, args: &[Arg]) -> (String, u32) {
    let line = line!() + 1;
    let e = ctx.par_loop(k, set, args).unwrap_err();
    // The fields name the par_loop the message names.
    let site = match &e {
        Error::ParLoop { par_loops, .. } => par_loops.first().cloned(),
        Error::Kernel { par_loop, .. } => par_loop.clone(),
        _ => None,
    };
    let want = LoopSite {
        kernel: k.name().to_string(),
        file: file!(),
        line,
    };
    assert_eq!(site, Some(want), "{e:?}");
    (e.to_string(), line)
}

#[test]
fn errors_carry_the_par_loop_and_the_argument_as_fields() {
    let ctx = ctx();
    let cells = Set::new("cells", 10);
    let nodes = Set::new("nodes", 12);
    let q = ctx.dat_zeros::<f32>("q", &cells, 1).unwrap();
    let x = ctx.dat_zeros::<f32>("x", &nodes, 1).unwrap();
    let k = Kernel::new(
        "two",
        "fn two(a: ptr<function, array<f32, 1>>, b: ptr<function, array<f32, 1>>) { (*a)[0] = (*b)[0]; }",
    );
    // The second argument lives on another set.
    let args = [q.write(), x.read()];
    let line = line!() + 1;
    let e = ctx.par_loop(&k, &cells, &args).unwrap_err();
    match &e {
        Error::ParLoop {
            par_loops,
            arg,
            message,
        } => {
            assert_eq!(*arg, Some(1), "{message}");
            assert_eq!(
                (par_loops[0].kernel.as_str(), par_loops[0].line),
                ("two", line)
            );
            assert!(
                message.contains("argument 2 (`x` directly, READ)"),
                "{message}"
            );
        }
        _ => panic!("{e:?}"),
    }
    // A kernel that does not compile: a Kernel error naming the par_loop.
    let bad = Kernel::new(
        "bad",
        "fn bad(a: ptr<function, array<f32, 1>>) { (*a)[0] = y; }",
    );
    match ctx.par_loop(&bad, &cells, &[q.write()]).unwrap_err() {
        Error::Kernel {
            par_loop: Some(p),
            message,
        } => {
            assert_eq!(p.kernel, "bad");
            assert!(message.contains("does not compile"), "{message}");
        }
        e => panic!("{e:?}"),
    }
}

/// The message names the par_loop (kernel and this file's line) and, where given, the argument.
fn assert_names(msg: &str, kernel: &str, line: u32, arg: Option<usize>, more: &[&str]) {
    let site = format!("par_loop `{kernel}` at {}:{line}", file!());
    assert!(msg.contains(&site), "missing {site:?} in: {msg}");
    if let Some(a) = arg {
        assert!(
            msg.contains(&format!("argument {a}")),
            "missing argument {a} in: {msg}"
        );
    }
    for m in more {
        assert!(msg.contains(m), "missing {m:?} in: {msg}");
    }
}

#[test]
fn bad_inputs_get_clear_errors() {
    let ctx = ctx();
    let cells = Set::new("cells", 10);
    let nodes = Set::new("nodes", 12);
    let c2n = random_map("c2n", &cells, &nodes, 2, 1);
    let q = ctx.dat_zeros::<f32>("q", &cells, 4).unwrap();
    let x = ctx.dat_zeros::<f32>("x", &nodes, 2).unwrap();
    let k1 = Kernel::new(
        "one",
        "fn one(a: ptr<function, array<f32, 4>>) { (*a)[0] = 1.0; }",
    );

    // Map values out of range.
    let e = Map::new("bad", &cells, &nodes, 1, &[0, 1, 2, 3, 4, 5, 6, 7, 8, 12])
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("value 12 at element 9, index 0") && e.contains("`nodes` has 12"),
        "{e}"
    );

    // A Dat on the wrong set.
    let (e, l) = loop_err(&ctx, &k1, &nodes, &[q.write()]);
    assert_names(
        &e,
        "one",
        l,
        Some(1),
        &["`q`", "lives on set `cells`", "`nodes`"],
    );

    // Dim mismatch with the kernel signature.
    let k2 = Kernel::new(
        "two",
        "fn two(a: ptr<function, array<f32, 3>>) { (*a)[0] = 1.0; }",
    );
    let (e, l) = loop_err(&ctx, &k2, &cells, &[q.write()]);
    assert_names(&e, "two", l, Some(1), &["array<f32, 3>", "array<f32, 4>"]);

    // WRITE through a map that is not injective.
    let shared = Map::new("shared", &cells, &nodes, 1, &[0, 1, 2, 3, 4, 5, 6, 7, 8, 0]).unwrap();
    let kx = Kernel::new(
        "wx",
        "fn wx(a: ptr<function, array<f32, 2>>) { (*a)[0] = 1.0; }",
    );
    let (e, l) = loop_err(&ctx, &kx, &cells, &[x.at(&shared, 0).write()]);
    assert_names(
        &e,
        "wx",
        l,
        Some(1),
        &["not injective", "element 0", "element 9", "use INC"],
    );
    let (e, l) = loop_err(&ctx, &kx, &cells, &[x.at(&shared, 0).rw()]);
    assert_names(&e, "wx", l, Some(1), &["RW", "not injective"]);

    // A kernel whose WGSL does not compile: the line is the kernel's own.
    let k3 = Kernel::new(
        "broken",
        "fn broken(a: ptr<function, array<f32, 4>>) {\n  (*a)[0] = 1.0;\n  (*a)[1] = oops;\n}",
    );
    let (e, l) = loop_err(&ctx, &k3, &cells, &[q.write()]);
    assert_names(
        &e,
        "broken",
        l,
        None,
        &["does not compile", "line 3", "oops"],
    );

    // A kernel name not found in its WGSL.
    let k4 = Kernel::new("missing", "fn other(a: ptr<function, array<f32, 4>>) {}");
    let (e, l) = loop_err(&ctx, &k4, &cells, &[q.write()]);
    assert_names(
        &e,
        "missing",
        l,
        None,
        &["no function named `missing`", "other"],
    );

    // Argument count mismatch.
    let (e, l) = loop_err(&ctx, &k1, &cells, &[q.write(), x.at(&c2n, 0).read()]);
    assert_names(&e, "one", l, None, &["declares 1 arguments", "passes 2"]);

    // A map index out of range, a map from the wrong set.
    let (e, l) = loop_err(&ctx, &kx, &cells, &[x.at(&c2n, 2).read()]);
    assert_names(&e, "wx", l, Some(1), &["index 2", "arity 2"]);
    let n2c = random_map("n2c", &nodes, &cells, 1, 2);
    let (e, l) = loop_err(&ctx, &kx, &cells, &[x.at(&n2c, 0).read()]);
    assert_names(&e, "wx", l, Some(1), &["`n2c` goes from `nodes`"]);

    // A Dat larger than the binding limit (no memory is allocated for it).
    let limit = ctx.gpu().limits.max_storage_buffer_binding_size;
    let huge_set = Set::new("huge", (limit / 4 + 1) as usize);
    let huge = ctx.dat_zeros::<f32>("huge", &huge_set, 1).unwrap();
    let k5 = Kernel::new(
        "h",
        "fn h(a: ptr<function, array<f32, 1>>) { (*a)[0] = 1.0; }",
    );
    let (e, l) = loop_err(&ctx, &k5, &huge_set, &[huge.write()]);
    assert_names(
        &e,
        "h",
        l,
        Some(1),
        &[
            "`huge`",
            "max_storage_buffer_binding_size",
            &limit.to_string(),
        ],
    );

    // The same Dat twice with different modes; a Global written directly.
    let k6 = Kernel::new(
        "dup",
        "fn dup(a: ptr<function, array<f32, 4>>, b: ptr<function, array<f32, 4>>) {}",
    );
    let (e, l) = loop_err(&ctx, &k6, &cells, &[q.read(), q.write()]);
    assert_names(&e, "dup", l, Some(2), &["same Dat"]);
    let g = ctx.global("g", &[0f32; 4]).unwrap();
    let (e, l) = loop_err(&ctx, &k1, &cells, &[g.write()]);
    assert_names(&e, "one", l, Some(1), &["Global is READ or reduced"]);

    // Data sizes.
    assert!(
        ctx.dat("d", &cells, 2, &[0f32; 3])
            .err()
            .unwrap()
            .to_string()
            .contains("expected 20")
    );
    // Nothing bad was recorded.
    assert_eq!(ctx.pending(), 0);
}

/// INC of f32 through a map with native atomics is refused where the adapter has none, and
/// works where it has them; integer INC works everywhere.
#[test]
fn atomics_strategy_needs_float_atomics() {
    let probe = ctx();
    let ctx = ctx_with(Config {
        strategy: Strategy::Atomics,
        ..Config::from_env().unwrap()
    });
    let edges = Set::new("edges", 50);
    let nodes = Set::new("nodes", 10);
    let m = random_map("m", &edges, &nodes, 1, 3);
    let acc = ctx.dat_zeros::<f32>("acc", &nodes, 1).unwrap();
    let k = Kernel::new(
        "one",
        "fn one(a: ptr<function, array<f32, 1>>) { (*a)[0] += 1.0; }",
    );
    let line = line!() + 1;
    let r = ctx.par_loop(&k, &edges, &[acc.at(&m, 0).inc()]);
    if probe.gpu().float_atomics() {
        r.unwrap();
        assert_eq!(acc.data_ro().unwrap().iter().sum::<f32>(), 50.0);
    } else {
        let e = r.unwrap_err().to_string();
        assert_names(
            &e,
            "one",
            line,
            None,
            &["SHADER_FLOAT32_ATOMIC", "hierarchical"],
        );
    }
}

/// Issue 28: a Const not declared yet, used by another function of a shared source, is named
/// with the function that uses it and how to declare it.
#[test]
fn an_undeclared_const_names_the_function_that_uses_it_and_how_to_declare_it() {
    let ctx = ctx();
    let cells = Set::new("cells", 4);
    let u = ctx.dat_zeros::<f32>("u", &cells, 1).unwrap();
    let source = "fn geom(u: ptr<function, array<f32, 1>>) { (*u)[0] = 1.0; }\n\
                  fn update(u: ptr<function, array<f32, 1>>) { (*u)[0] += dt; }\n";
    let geom = Kernel::new("geom", source);
    let (msg, line) = loop_err(&ctx, &geom, &cells, &[u.rw()]);
    assert_names(
        &msg,
        "geom",
        line,
        None,
        &[
            "`dt` is not defined",
            "function `update`",
            "ctx.constant(\"dt\", value)",
        ],
    );
    // After an attribute, on one line with other code, the function is still found.
    let other = "fn geom(u: ptr<function, array<f32, 1>>) { (*u)[0] = 1.0; }\n\
                 const K = 1.0; @must_use fn rate() -> f32 { return K * dt; }\n";
    let (msg, _) = loop_err(&ctx, &Kernel::new("geom", other), &cells, &[u.rw()]);
    assert!(msg.contains("function `rate`"), "{msg}");
    // Declared, the same source compiles.
    ctx.constant("dt", 0.5f32).unwrap();
    ctx.par_loop(&Kernel::new("update", source), &cells, &[u.rw()])
        .unwrap();
    assert_eq!(&*u.data_ro().unwrap(), &[0.5; 4]);
}

/// A map whose indices are more than the adapter binds (lavapipe: 128 MiB, 2^25 indices) is
/// refused before anything runs, naming the map, its size and the limit (it was the device's
/// validation error at the bind group). Run where the limit is at most 512 MiB (CPU adapters):
/// above it the map alone would take gigabytes of host memory.
#[test]
fn a_map_over_the_binding_limit_is_refused_by_name() {
    let ctx = ctx();
    let max = ctx.gpu().limits.max_storage_buffer_binding_size as usize;
    if max > 512 << 20 {
        // The map's indices would be gigabytes on the host (a GPU adapter binds that much).
        eprintln!("skipped: this adapter binds {max} bytes");
        return;
    }
    let n = max / 4 / 2 + 1;
    let big = Set::new("big", n);
    let one = Set::new("one", 1);
    let m = Map::new("to one", &big, &one, 2, &vec![0u32; 2 * n]).unwrap();
    let d = ctx.dat("d", &one, 1, &[1.0f32]).unwrap();
    let k = Kernel::new(
        "read",
        "fn read(a: ptr<function, array<f32, 2>>) { let x = (*a)[0]; }",
    );
    let (msg, line) = loop_err(&ctx, &k, &big, &[d.all(&m).read()]);
    assert_names(&msg, "read", line, Some(1), &[]);
    assert!(
        msg.contains(&format!(
            "map `to one` ({n} elements x arity 2) needs {} bytes",
            8 * n
        )) && msg.contains("max_storage_buffer_binding_size"),
        "{msg}"
    );
}
