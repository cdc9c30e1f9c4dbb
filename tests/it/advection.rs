//! The advection example (examples/advection.rs) against the same upwind scheme in plain Rust
//! (f64, its own facet search and geometry from the Gmsh file): the time step, c on every cell
//! after 150 steps, and the mass balance; and its errors for a mesh without the inlet group,
//! a 3-D mesh, no flow and an unstable Courant number.

use crate::common;

use crate::examples::advection;

use advection::{Problem, solve};
use parloop::mesh::{Mesh, gmsh, unit_cube_tets};
use std::collections::HashMap;

type P = [f64; 2];

fn channel() -> Mesh {
    gmsh::read_file(concat!(env!("CARGO_MANIFEST_DIR"), "/data/channel.msh")).unwrap()
}

/// The scheme in plain Rust: returns (stable dt, c after `steps` steps of `dt`, outflow).
fn reference(mesh: &Mesh, p: &Problem, dt: f64) -> (f64, Vec<f64>, f64) {
    let x = |v: u32| -> P { [mesh.coords[v as usize][0], mesh.coords[v as usize][1]] };
    let nc = mesh.ncells();
    let (mut area, mut centre) = (vec![0.0; nc], vec![[0.0; 2]; nc]);
    for c in 0..nc {
        let vs: Vec<P> = mesh.cell(c).iter().map(|&v| x(v)).collect();
        let n = vs.len();
        let a: f64 = (0..n)
            .map(|i| vs[i][0] * vs[(i + 1) % n][1] - vs[(i + 1) % n][0] * vs[i][1])
            .sum();
        area[c] = a.abs() / 2.0;
        centre[c] = [0, 1].map(|k| vs.iter().map(|v| v[k]).sum::<f64>() / n as f64);
    }
    // Edges by their sorted vertices -> the cells that have them.
    let mut edges: HashMap<[u32; 2], Vec<usize>> = HashMap::new();
    for c in 0..nc {
        let vs = mesh.cell(c);
        for i in 0..vs.len() {
            let (a, b) = (vs[i], vs[(i + 1) % vs.len()]);
            edges.entry([a.min(b), a.max(b)]).or_default().push(c);
        }
    }
    let inlet: Vec<[u32; 2]> = mesh
        .group(&p.inlet)
        .unwrap()
        .members
        .iter()
        .map(|&k| {
            let f = &mesh.facets[k as usize];
            [f[0].min(f[1]), f[0].max(f[1])]
        })
        .collect();
    // Each edge: its cells (a, then b or none), u . n |e| with n from a outward, the inflow value.
    let mut faces = Vec::new();
    for (e, cells) in &edges {
        let (p0, p1) = (x(e[0]), x(e[1]));
        let (dx, dy) = (p1[0] - p0[0], p1[1] - p0[1]);
        let mut n = [dy, -dx]; // |n| = |e|
        let mid = [(p0[0] + p1[0]) / 2.0, (p0[1] + p1[1]) / 2.0];
        let a = cells[0];
        if n[0] * (mid[0] - centre[a][0]) + n[1] * (mid[1] - centre[a][1]) < 0.0 {
            n = [-n[0], -n[1]];
        }
        let un = p.u[0] as f64 * n[0] + p.u[1] as f64 * n[1];
        let c_in = if inlet.contains(e) && (mid[1] - 0.5).abs() < 0.2 {
            1.0
        } else {
            0.0
        };
        faces.push((a, cells.get(1).copied(), un, c_in));
    }
    let mut out = vec![0.0; nc];
    for &(a, b, un, _) in &faces {
        out[a] += un.max(0.0);
        if let Some(b) = b {
            out[b] += (-un).max(0.0);
        }
    }
    let stable = (0..nc)
        .map(|c| p.cfl as f64 * area[c] / out[c])
        .fold(f64::MAX, f64::min);
    let (mut c, mut outflow) = (vec![0.0; nc], 0.0);
    for _ in 0..p.steps {
        let mut r = vec![0.0; nc];
        for &(a, b, un, c_in) in &faces {
            let f = match b {
                Some(b) => un * if un > 0.0 { c[a] } else { c[b] },
                None => un * if un > 0.0 { c[a] } else { c_in },
            };
            r[a] -= f;
            match b {
                Some(b) => r[b] += f,
                None => outflow += f * dt,
            }
        }
        for k in 0..nc {
            c[k] += dt * r[k] / area[k];
        }
    }
    (stable, c, outflow)
}

#[test]
fn the_example_matches_the_scheme_in_plain_rust() {
    let ctx = common::ctx();
    let mesh = channel();
    let p = Problem {
        u: [1.0, 0.0],
        cfl: 0.5,
        steps: 150,
        inlet: "inlet".into(),
    };
    let o = solve(&ctx, &mesh, &p, |_, _, _, _| Ok(())).unwrap();
    let (stable, c, outflow) = reference(&mesh, &p, o.dt as f64);
    assert!(
        ((o.dt as f64 - stable) / stable).abs() < 1e-5,
        "dt {} vs {stable}",
        o.dt
    );
    let diff =
        o.c.iter()
            .zip(&c)
            .map(|(g, r)| (*g as f64 - r).abs())
            .fold(0.0, f64::max);
    let top = c.iter().copied().fold(0.0, f64::max);
    // 5e-6 is 40 f32 units in the last place of c <= 1 after 150 steps (measured: 1.1e-6).
    assert!(top > 0.99, "the stripe has arrived: max c {top}");
    assert!(
        diff < 5e-6,
        "c differs from the plain-Rust scheme by {diff}"
    );
    assert!(
        (o.outflow - outflow).abs() < 1e-5 * outflow.abs().max(1e-3),
        "outflow {} vs {outflow}",
        o.outflow
    );
    // Mass: what came in through the inlet is in the channel (none has left after 150 steps).
    let balance = o.mass[1] - (o.mass[0] - o.outflow);
    assert!(
        balance.abs() < 1e-5 * o.mass[1],
        "mass {:?}, outflow {}: off by {balance}",
        o.mass,
        o.outflow
    );
}

#[test]
fn bad_meshes_and_problems_are_refused() {
    let ctx = common::ctx();
    let p = Problem {
        u: [1.0, 0.0],
        cfl: 0.5,
        steps: 1,
        inlet: "entry".into(),
    };
    let e = solve(&ctx, &channel(), &p, |_, _, _, _| Ok(()))
        .err()
        .expect("refused")
        .to_string();
    assert!(
        e.contains("no group `entry`") && e.contains("`inlet` (boundary facets)"),
        "{e}"
    );
    let still = Problem {
        u: [0.0, 0.0],
        inlet: "inlet".into(),
        ..p
    };
    let e = solve(&ctx, &channel(), &still, |_, _, _, _| Ok(()))
        .err()
        .expect("refused")
        .to_string();
    assert!(e.contains("nothing flows out of any cell"), "{e}");
    let fast = Problem {
        u: [1.0, 0.0],
        cfl: 1.5,
        inlet: "inlet".into(),
        steps: 1,
    };
    let e = solve(&ctx, &channel(), &fast, |_, _, _, _| Ok(()))
        .err()
        .expect("refused")
        .to_string();
    assert!(e.contains("Courant number 1.5"), "{e}");
    let p = Problem {
        u: [1.0, 0.0],
        cfl: 0.5,
        steps: 1,
        inlet: "inlet".into(),
    };
    let e = solve(&ctx, &unit_cube_tets(1), &p, |_, _, _, _| Ok(()))
        .err()
        .expect("refused")
        .to_string();
    assert!(
        e.contains("runs on 2-D meshes; this one has tetrahedron cells"),
        "{e}"
    );
}
