//! Generated WGSL: snapshots of representative groups (reviewed as diffs) and naga validation of
//! every schedule.

use super::*;
use crate::data::ConstValue;
use naga::valid::Capabilities;

const AXPY: &str = "fn axpy(x: ptr<function, array<f32, 2>>, y: ptr<function, array<f32, 2>>) {\n    \
                    for (var i = 0; i < 2; i++) { (*y)[i] += a * (*x)[i]; }\n}\n";

fn direct_group() -> GroupIr {
    GroupIr {
        comments: vec!["axpy over nodes: x READ, y RW".into()],
        loops: vec![LoopIr {
            kernel: "axpy".into(),
            args: vec![
                ArgIr {
                    dtype: DType::F32,
                    width: 2,
                    dim: 2,
                    access: Access::Read,
                    source: ArgSource::Direct { reg: 0 },
                    what: "`x` directly, READ".into(),
                },
                ArgIr {
                    dtype: DType::F32,
                    width: 2,
                    dim: 2,
                    access: Access::Rw,
                    source: ArgSource::Direct { reg: 1 },
                    what: "`y` directly, RW".into(),
                },
            ],
        }],
        bindings: vec![dat("x", 2, false), dat("y", 2, true)],
        registers: vec![reg(0, 2, true, false), reg(1, 2, true, true)],
        reductions: vec![],
        staged: vec![],
        kernels: vec![("axpy".into(), AXPY.into())],
        consts: vec![("a".into(), ConstValue::scalar(2.5f32))],
        schedule: Schedule::Direct,
        subset: None,
        plan: None,
        scratch: None,
        check: None,
        exec_halo: false,
        workgroup_size: 64,
    }
}

fn dat(name: &str, dim: usize, writable: bool) -> BindingIr {
    BindingIr {
        name: name.into(),
        kind: BindingKind::Dat {
            dtype: DType::F32,
            dim,
            soa: false,
        },
        writable,
        atomic: Atomic::No,
    }
}

fn reg(binding: usize, dim: usize, load: bool, store: bool) -> RegisterIr {
    RegisterIr {
        binding: Some(binding),
        dtype: DType::F32,
        dim,
        load,
        store,
    }
}

const SPREAD: &str = "fn spread(w: ptr<function, array<f32, 1>>, v: ptr<function, array<f32, 3>>, \
                      s: ptr<function, array<f32, 1>>) {\n    \
                      for (var i = 0; i < 3; i++) { (*v)[i] += (*w)[0] * (*s)[0]; }\n}\n";

/// Cells increment their three vertices (INC through all indices of a map), reading a per-cell
/// weight and a Global scale.
fn inc_group(schedule: Schedule) -> GroupIr {
    let hier = schedule.staging().is_some_and(|s| s != Staging::None);
    let planned = schedule.plan() != super::strategy::PlanKind::None;
    let atomic = schedule.racing_atomic(DType::F32, Access::Inc);
    let mut bindings = vec![
        dat("w", 1, false),
        BindingIr {
            atomic,
            ..dat("v", 1, true)
        },
        BindingIr {
            name: "c2v".into(),
            kind: BindingKind::Map { arity: 3 },
            writable: false,
            atomic: Atomic::No,
        },
        BindingIr {
            name: "scale".into(),
            kind: BindingKind::Global {
                dtype: DType::F32,
                dim: 1,
            },
            writable: false,
            atomic: Atomic::No,
        },
    ];
    let plan = planned.then(|| {
        bindings.push(BindingIr {
            name: "plan".into(),
            kind: BindingKind::Plan,
            writable: false,
            atomic: Atomic::No,
        });
        bindings.len() - 1
    });
    GroupIr {
        comments: vec!["spread over cells: w READ, v INC through c2v (all), scale READ".into()],
        loops: vec![LoopIr {
            kernel: "spread".into(),
            args: vec![
                ArgIr {
                    dtype: DType::F32,
                    width: 1,
                    dim: 1,
                    access: Access::Read,
                    source: ArgSource::Direct { reg: 0 },
                    what: "`w` directly, READ".into(),
                },
                ArgIr {
                    dtype: DType::F32,
                    width: 3,
                    dim: 1,
                    access: Access::Inc,
                    source: ArgSource::Indirect {
                        dat: 1,
                        map: 2,
                        arity: 3,
                        idx: None,
                        staged: hier.then_some(0),
                    },
                    what: "`v` through all of `c2v`, INC".into(),
                },
                ArgIr {
                    dtype: DType::F32,
                    width: 1,
                    dim: 1,
                    access: Access::Read,
                    source: ArgSource::Global {
                        binding: 3,
                        red: None,
                    },
                    what: "`scale` as a Global, READ".into(),
                },
            ],
        }],
        bindings,
        registers: vec![reg(0, 1, true, false)],
        reductions: vec![],
        staged: if hier {
            vec![StagedMapIr {
                map: 2,
                arity: 3,
                maxu: 100,
            }]
        } else {
            vec![]
        },
        kernels: vec![("spread".into(), SPREAD.into())],
        consts: vec![],
        schedule,
        subset: None,
        plan,
        scratch: None,
        check: None,
        exec_halo: false,
        workgroup_size: 64,
    }
}

#[test]
fn direct_loop_snapshot() {
    let src = generate(&direct_group());
    validate(&src, Capabilities::empty()).unwrap_or_else(|e| panic!("{}", e.render(&src)));
    insta::assert_snapshot!(src);
}

/// The generated WGSL of every schedule, as snapshot data (`snapshots/*schedule_<name>.snap`):
/// the same racing increment through an arity-3 map, each validated by naga.
#[test]
fn every_schedule_validates_and_matches_its_snapshot() {
    for s in Schedule::all() {
        let mut g = inc_group(s.clone());
        if s == Schedule::Direct {
            g.bindings[1].writable = true;
        }
        let src = generate(&g);
        // Only `atomics` needs float atomics (the others race on u32 words, or not at all).
        let caps = if s == Schedule::Atomics {
            Capabilities::SHADER_FLOAT32_ATOMIC
        } else {
            Capabilities::empty()
        };
        validate(&src, caps).unwrap_or_else(|e| panic!("{s:?}: {}", e.render(&src)));
        let name: String = format!("{s:?}")
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() {
                    c.to_ascii_lowercase()
                } else {
                    '_'
                }
            })
            .collect();
        insta::assert_snapshot!(format!("schedule_{}", name.trim_end_matches('_')), src);
    }
}

#[test]
fn reductions_validate_for_every_type_and_access() {
    for dtype in [DType::F32, DType::U32, DType::I32] {
        for access in [Access::Inc, Access::Min, Access::Max] {
            let g = reducing_group(dtype, access);
            let src = reduce::finalize_wgsl(&g.reductions);
            validate(&src, Capabilities::empty()).unwrap_or_else(|e| panic!("{}", e.render(&src)));
            let src = generate(&g);
            validate(&src, Capabilities::empty())
                .unwrap_or_else(|e| panic!("{dtype} {access}: {e}\n{src}"));
        }
    }
}

/// A direct loop that reduces into a Global of dim 2 (`access`, `dtype`).
fn reducing_group(dtype: DType, access: Access) -> GroupIr {
    let mut g = direct_group();
    g.bindings.push(BindingIr {
        name: "r".into(),
        kind: BindingKind::Global { dtype, dim: 2 },
        writable: false,
        atomic: Atomic::No,
    });
    g.bindings.push(BindingIr {
        name: "scratch".into(),
        kind: BindingKind::Scratch,
        writable: true,
        atomic: Atomic::No,
    });
    g.scratch = Some(3);
    g.reductions = vec![ReductionIr {
        binding: 2,
        dtype,
        dim: 2,
        access,
    }];
    g.kernels = vec![(
        "red".into(),
        format!("fn red(r: ptr<function, array<{dtype}, 2>>) {{ (*r)[1] = (*r)[0]; }}\n"),
    )];
    g.loops = vec![LoopIr {
        kernel: "red".into(),
        args: vec![ArgIr {
            dtype,
            width: 2,
            dim: 2,
            access,
            source: ArgSource::Global {
                binding: 2,
                red: Some(0),
            },
            what: "r".into(),
        }],
    }];
    g.registers.clear();
    g
}

/// The strided loop and workgroup tree of a reducing group, reviewed as a diff.
#[test]
fn reducing_loop_snapshot() {
    insta::assert_snapshot!(generate(&reducing_group(DType::F32, Access::Inc)));
}

/// One finalize pass folds every Global of a group, whatever their types, ops and dims (each
/// from its own region of scratch).
#[test]
fn one_finalize_folds_every_global_of_a_group() {
    let red = |binding, dtype, dim, access| ReductionIr {
        binding,
        dtype,
        dim,
        access,
    };
    let reds = [
        red(2, DType::F32, 2, Access::Inc),
        red(3, DType::F64, 1, Access::Max),
        red(4, DType::I32, 3, Access::Min),
    ];
    let src = reduce::finalize_wgsl(&reds);
    validate(&src, Capabilities::FLOAT64 | Capabilities::SHADER_INT64)
        .unwrap_or_else(|e| panic!("{}", e.render(&src)));
    insta::assert_snapshot!(src);
}

/// The browser demo's render shader (shaders/render.wgsl) validates too.
#[test]
fn render_shader_validates() {
    let src = include_str!("../../shaders/render.wgsl");
    validate(src, Capabilities::empty()).unwrap_or_else(|e| panic!("{e}"));
}

/// f64 races: compare-and-swap on `atomic<u64>` validates where the adapter has 64-bit
/// integer atomics, and is neither generated valid nor chosen where it has not.
#[test]
fn f64_races_take_64_bit_compare_and_swap_only_with_64_bit_atomics() {
    use super::strategy::{Illegal, Request, choose};
    use crate::config::Strategy;
    let f64_caps = Capabilities::FLOAT64 | Capabilities::SHADER_INT64;
    for s in Schedule::all() {
        if s == Schedule::Direct {
            continue;
        }
        let mut g = inc_group(s.clone());
        g.bindings[1].atomic = s.racing_atomic(DType::F64, Access::Inc);
        for b in &mut g.bindings {
            if let BindingKind::Dat { dtype, .. } | BindingKind::Global { dtype, .. } = &mut b.kind
            {
                *dtype = DType::F64;
            }
        }
        for a in &mut g.loops[0].args {
            a.dtype = DType::F64;
        }
        for r in &mut g.registers {
            r.dtype = DType::F64;
        }
        g.kernels[0].1 = SPREAD.replace("f32", "f64");
        let src = generate(&g);
        validate(&src, f64_caps | Capabilities::SHADER_INT64_ATOMIC_ALL_OPS)
            .unwrap_or_else(|e| panic!("{s:?}: {}", e.render(&src)));
        let cas = matches!(s, Schedule::Atomics | Schedule::Cas | Schedule::Staged);
        assert_eq!(src.contains("atomic<u64>"), cas, "{s:?}:\n{src}");
        assert_eq!(validate(&src, f64_caps).is_ok(), !cas, "{s:?}");
    }
    for strategy in [Strategy::Atomics, Strategy::Cas, Strategy::Staged] {
        for int64_atomics in [false, true] {
            let req = Request {
                strategy,
                staging: Staging::Inc,
                float_atomics: true,
                int64_atomics,
                cpu_adapter: false,
                workgroup_size: 64,
            };
            let chosen = choose(&req, &[DType::F32, DType::F64]);
            if int64_atomics {
                assert!(chosen.is_ok(), "{strategy:?}: {chosen:?}");
            } else {
                assert_eq!(chosen, Err(Illegal::F64Races), "{strategy:?}");
                assert!(strategy.takes_f64(true) && !strategy.takes_f64(false));
            }
        }
    }
}

#[test]
fn auto_leaves_few_colours_and_big_colours_alone() {
    use super::strategy::colours_too_small;
    // More than 16 colours, fewer than min_colour_size positions each on average.
    assert!(!colours_too_small(16, 16, 4096));
    assert!(colours_too_small(17, 17, 4096));
    assert!(colours_too_small(17, 17 * 4096 - 1, 4096));
    assert!(!colours_too_small(17, 17 * 4096, 4096));
    // 0 keeps every colouring; an overflowing product is not an average.
    assert!(!colours_too_small(1000, 1000, 0));
    assert!(colours_too_small(usize::MAX, usize::MAX - 1, 2));
    // Monotone in the colours: a lower bound that says yes speaks for the colouring.
    for positions in [100, 5000, 100_000] {
        for c in 0..200 {
            if colours_too_small(c, positions, 64) {
                assert!(colours_too_small(c + 1, positions, 64), "{c} {positions}");
            }
        }
    }
}
