//! The wave demo: GPU results against the independent f64 reference, energy conservation, the
//! ParaView output, and the fused step's dispatch count.

use crate::common;

use common::ctx_with;
use parloop::apps::wave::{Wave, reference};
use parloop::mesh::{unit_square, vtk};
use parloop::{Config, Staging, Strategy};

fn max_rel_diff(gpu: &[f32], reference: &[f64]) -> f64 {
    let scale = reference.iter().fold(0.0f64, |m, v| m.max(v.abs()));
    let diff = gpu
        .iter()
        .zip(reference)
        .fold(0.0f64, |m, (g, r)| m.max((*g as f64 - r).abs()));
    diff / scale
}

/// 200 steps on the 20 x 20 mesh equal the reference within 1e-5 (max norm, relative): eager,
/// and lazy with fusion under every strategy the adapter has.
#[test]
fn two_hundred_steps_match_the_cpu_reference() {
    let (n, steps, dt) = (20, 200, 0.001);
    let mut r = reference::State::new(&unit_square(n)).unwrap();
    for _ in 0..steps {
        r.step(dt);
    }
    let probe = ctx_with(Config::from_env().unwrap());
    let mut configs: Vec<(bool, Strategy, Staging)> = vec![(false, Strategy::Auto, Staging::Inc)];
    configs.extend(
        common::strategies(&probe)
            .into_iter()
            .map(|(s, st)| (true, s, st)),
    );
    for (lazy, strategy, staging) in configs {
        let ctx = ctx_with(Config {
            lazy,
            fusion: lazy,
            strategy,
            staging,
            ..Config::from_env().unwrap()
        });
        let mut w = Wave::new(&ctx, n, dt as f32).unwrap();
        for s in 0..steps {
            w.step().unwrap();
            if s % 25 == 24 {
                ctx.flush().unwrap();
            }
        }
        let p = w.p.data_ro().unwrap().to_vec();
        let phi = w.phi.data_ro().unwrap().to_vec();
        let (ep, ephi) = (max_rel_diff(&p, &r.p), max_rel_diff(&phi, &r.phi));
        let how = format!("lazy {lazy}, {} {staging:?}", strategy.name());
        assert!(ep <= 1e-5, "{how}: p differs by {ep:e}");
        assert!(ephi <= 1e-5, "{how}: phi differs by {ephi:e}");
    }
}

/// The discrete energy stays within 1% of its start over the seed's 10,000 steps of dt = 0.001
/// on the 100 x 100 mesh (checked every 1,000 steps).
#[test]
#[ignore = "long: about 20-60 s on a software adapter; run with --ignored (figure in BENCHMARKS.md)"]
fn energy_is_conserved_over_ten_thousand_steps() {
    let ctx = ctx_with(Config::from_env().unwrap());
    let mut w = Wave::new(&ctx, 100, 0.001).unwrap();
    let e0 = w.energy().unwrap();
    let mut worst = 0.0f64;
    for s in 1..=10_000 {
        w.step().unwrap();
        if s % 1000 == 0 {
            let e = w.energy().unwrap();
            worst = worst.max(((e - e0) / e0).abs());
        }
    }
    println!("energy: start {e0:e}, largest relative change over 10,000 steps {worst:e}");
    assert!(worst < 0.01, "energy drifted by {worst}");
}

/// The reference conserves energy too (same scheme, f64): a check of the scheme, not the GPU.
#[test]
fn the_scheme_conserves_energy() {
    let mut r = reference::State::new(&unit_square(30)).unwrap();
    let e0 = r.energy();
    for _ in 0..2000 {
        r.step(0.001);
    }
    assert!(((r.energy() - e0) / e0).abs() < 1e-3);
}

/// Frames written by the demo parse back with the right point, cell and value counts.
#[test]
fn vtk_output_parses_back() {
    let ctx = ctx_with(Config::from_env().unwrap());
    let mut w = Wave::new(&ctx, 8, 0.001).unwrap();
    let dir = std::env::temp_dir().join(format!("parloop-vtk-{}", std::process::id()));
    let mut series = vtk::Series::new(&dir, "p").unwrap();
    for frame in 0..3 {
        let p = w.p.data_ro().unwrap().to_vec();
        series
            .write(
                frame as f64 * 0.01,
                &w.mesh,
                &[vtk::Field::vertices("p", &p)],
            )
            .unwrap();
        for _ in 0..10 {
            w.step().unwrap();
        }
    }
    let pvd = std::fs::read_to_string(series.pvd_path()).unwrap();
    assert_eq!(pvd.matches("<DataSet ").count(), 3, "{pvd}");
    let last = dir.join("p_000002.vtu");
    let vtk = vtkio::Vtk::import(&last).unwrap();
    let vtkio::model::DataSet::UnstructuredGrid { pieces, .. } = vtk.data else {
        panic!("not an unstructured grid")
    };
    let piece = pieces[0].load_piece_data(None).unwrap();
    assert_eq!(piece.num_points(), 81);
    assert_eq!(piece.cells.types.len(), 128);
    assert!(
        piece
            .cells
            .types
            .iter()
            .all(|t| *t == vtkio::model::CellType::Triangle)
    );
    let vtkio::model::Attribute::DataArray(p) = &piece.data.point[0] else {
        panic!("no point data")
    };
    assert_eq!(p.name, "p");
    assert_eq!(p.data.len(), 81);
    std::fs::remove_dir_all(&dir).ok();
}

/// A force of K steps fuses into 2K + 1 groups, which the partitioner proves minimal; with one
/// dispatch per group (the `cas` strategy) that is 2K + 1 dispatches.
#[test]
fn the_wave_step_fuses_into_the_minimal_number_of_groups() {
    let ctx = ctx_with(Config {
        strategy: Strategy::Cas,
        ..Config::from_env().unwrap()
    });
    let mut w = Wave::new(&ctx, 10, 0.001).unwrap();
    ctx.flush().unwrap();
    for k in [1u64, 3, 10] {
        for _ in 0..k {
            w.step().unwrap();
        }
        ctx.flush().unwrap();
        let explain = ctx.explain();
        let groups = 2 * k + 1;
        assert!(
            explain.starts_with(&format!("{} loops in {groups} groups", 5 * k)),
            "{explain}"
        );
        assert!(
            explain.contains(&format!("lower bound {groups}, optimal")),
            "{explain}"
        );
        assert_eq!(ctx.stats().last_dispatches, groups, "{explain}");
    }
}

/// explain() after a force of 18 steps (90 loops) fits on a screen: the repeated groups once
/// with their count, each reason for a cut once; explain_detail() lists every group and cut.
#[test]
fn explain_of_a_long_force_fits_on_a_screen() {
    let ctx = ctx_with(Config::from_env().unwrap());
    let mut w = Wave::new(&ctx, 10, 0.001).unwrap();
    ctx.flush().unwrap();
    for _ in 0..18 {
        w.step().unwrap();
    }
    ctx.flush().unwrap();
    let (summary, detail) = (ctx.explain(), ctx.explain_detail());
    assert!(summary.starts_with("90 loops in 37 groups"), "{summary}");
    assert!(
        summary.lines().count() <= 16,
        "{} lines:\n{summary}",
        summary.lines().count()
    );
    assert!(
        summary.contains("groups 2 to 35: 17 times the 2 groups"),
        "{summary}"
    );
    let cut_lines: Vec<&str> = summary.lines().filter(|l| l.contains("cut ")).collect();
    assert!(
        cut_lines
            .iter()
            .any(|l| l.starts_with("  cut 18 times (first between group 1 and group 2)")),
        "{summary}"
    );
    let reasons: std::collections::BTreeSet<&str> = cut_lines
        .iter()
        .map(|l| l.split_once(": ").unwrap().1)
        .collect();
    assert_eq!(
        reasons.len(),
        cut_lines.len(),
        "each reason once:\n{summary}"
    );
    assert_eq!(
        detail.lines().filter(|l| l.starts_with("  group ")).count(),
        37
    );
    assert!(
        detail.contains("cut between group 36 and group 37"),
        "{detail}"
    );
    assert!(detail.lines().count() > 70, "{detail}");
}
