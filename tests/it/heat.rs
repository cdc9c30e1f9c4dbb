//! The heat example (examples/heat.rs): backward Euler with P1 elements and a lumped mass,
//! insulated. Against a plain-Rust model (the same element matrices in f64, M + dt K factored
//! densely by Gaussian elimination): u, the heat sum(M u) and the energy u.M u at every step.
//! And against the physics: the heat is conserved (K's rows sum to zero), the energy falls
//! every step, and the cosine mode cos(pi x) cos(pi y) decays as backward Euler with the
//! 5-point Laplacian's eigenvalue lambda_h = (8 / h^2) sin^2(pi h / 2) says (on the unit
//! square the P1 stiffness is that stencil; the lumped mass differs from the trapezoid rule
//! only at the corners, so the amplitude agrees to 1%). Also on the
//! channel mesh (Gmsh): heat conserved, energy falling.

use crate::common;

use crate::examples::heat;

use heat::{initial, run};
use parloop::Real;
use parloop::mesh::{Mesh, gmsh, unit_square};

/// The plain-Rust model: u after each of `steps` steps (the initial u first), with the
/// lumped mass.
fn model(m: &Mesh, dt: f64, steps: usize) -> (Vec<Vec<f64>>, Vec<f64>) {
    let n = m.nvertices();
    let mut a = vec![0.0; n * n];
    let mut mass = vec![0.0; n];
    for c in 0..m.ncells() {
        let v = m.cell(c);
        let (area, g) = crate::common::p1_element([0, 1, 2].map(|i| m.coords[v[i] as usize]));
        for i in 0..3 {
            mass[v[i] as usize] += area / 3.0;
            for j in 0..3 {
                let k = area * (g[i][0] * g[j][0] + g[i][1] * g[j][1]);
                a[v[i] as usize * n + v[j] as usize] += dt * k;
            }
        }
    }
    for i in 0..n {
        a[i * n + i] += mass[i];
    }
    // LU without pivoting: M + dt K is symmetric positive definite.
    for k in 0..n {
        for i in k + 1..n {
            let f = a[i * n + k] / a[k * n + k];
            if f != 0.0 {
                a[i * n + k] = f;
                for j in k + 1..n {
                    a[i * n + j] -= f * a[k * n + j];
                }
            }
        }
    }
    let mut u: Vec<f64> = m.coords.iter().map(|&c| initial(c)).collect();
    let mut out = vec![u.clone()];
    for _ in 0..steps {
        let mut y: Vec<f64> = (0..n).map(|i| mass[i] * u[i]).collect();
        for i in 0..n {
            for j in 0..i {
                y[i] -= a[i * n + j] * y[j];
            }
        }
        for i in (0..n).rev() {
            for j in i + 1..n {
                y[i] -= a[i * n + j] * y[j];
            }
            y[i] /= a[i * n + i];
        }
        u = y;
        out.push(u.clone());
    }
    (out, mass)
}

fn check<T: Real>(n: usize, dt: f64, steps: usize, amg: bool, tol: f64) {
    let ctx = common::ctx();
    let mesh = unit_square(n);
    let h = run::<T>(&ctx, &mesh, dt, steps, amg, 0, &mut |_, _, _| Ok(())).unwrap();
    let (us, mass) = model(&mesh, dt, steps);
    let t = T::DTYPE;
    for (k, u) in us.iter().enumerate() {
        let heat: f64 = (0..u.len()).map(|i| mass[i] * u[i]).sum();
        let energy: f64 = (0..u.len()).map(|i| mass[i] * u[i] * u[i]).sum();
        for (what, got, want) in [("heat", h.heat[k], heat), ("energy", h.energy[k], energy)] {
            assert!(
                (got - want).abs() <= tol * want.abs(),
                "{t}: step {k}: {what} {got} against the model's {want}"
            );
        }
        let drift = (h.heat[k] - h.heat[0]).abs() / h.heat[0];
        assert!(drift <= tol, "{t}: step {k}: heat drifted by {drift:e}");
        if k > 0 {
            assert!(
                h.energy[k] < h.energy[k - 1],
                "{t}: step {k}: energy {} after {}",
                h.energy[k],
                h.energy[k - 1]
            );
        }
    }
    let last = &us[steps];
    let worst =
        h.u.iter()
            .zip(last)
            .map(|(g, w)| (g - w).abs())
            .fold(0.0, f64::max);
    assert!(
        worst <= 10.0 * tol,
        "{t}: u differs from the model's by {worst:e}"
    );
    // The constant part of u projects onto the mode through the corners' masses (0.5% at
    // n = 16): the amplitude at step 0 is 1 plus that, which the decay leaves alone. The rest
    // follows lambda_h to 1% (0.6% measured at step 20: the corners perturb the eigenvector
    // too); a wrong dt or a wrong K would be tens of percent off.
    let constant = h.amplitude[0] - 1.0;
    assert!(
        constant.abs() < 1e-2,
        "{t}: the constant's projection {constant}"
    );
    let lambda = 8.0 * (n * n) as f64 * (std::f64::consts::PI / (2.0 * n as f64)).sin().powi(2);
    for k in 0..=steps {
        let want = (1.0 + dt * lambda).powi(-(k as i32));
        let got = h.amplitude[k] - constant;
        assert!(
            (got - want).abs() <= 1e-2 * want,
            "{t}: step {k}: amplitude {got} against backward Euler's {want}"
        );
    }
    // 20 steps of 5e-3 leave exp(-2 pi^2 0.1) ~ 0.14 of the mode.
    assert!(h.amplitude[steps] < 0.3, "amplitude {}", h.amplitude[steps]);
    assert!(h.iterations.iter().all(|&i| i > 1), "{:?}", h.iterations);
}

#[test]
fn backward_euler_equals_the_plain_rust_model_and_decays_the_cosine_mode() {
    check::<f32>(16, 5e-3, 20, false, 1e-4);
    if common::ctx().gpu().f64() {
        check::<f64>(16, 5e-3, 20, false, 1e-8);
        // Preconditioned by AMG: the same steps.
        check::<f64>(16, 5e-3, 20, true, 1e-8);
    } else {
        check::<f32>(16, 5e-3, 20, true, 1e-4);
    }
}

#[test]
fn on_a_gmsh_mesh_heat_is_conserved_and_energy_falls() {
    let ctx = common::ctx();
    let mesh = gmsh::read_file(concat!(env!("CARGO_MANIFEST_DIR"), "/data/channel.msh")).unwrap();
    let h = run::<f32>(&ctx, &mesh, 1e-3, 5, false, 0, &mut |_, _, _| Ok(())).unwrap();
    for k in 1..h.heat.len() {
        let drift = (h.heat[k] - h.heat[0]).abs() / h.heat[0];
        assert!(drift <= 1e-4, "step {k}: heat drifted by {drift:e}");
        assert!(h.energy[k] < h.energy[k - 1], "step {k}: energy rose");
    }
}

#[test]
fn a_bad_time_step_or_mesh_is_refused() {
    let ctx = common::ctx();
    let e = run::<f32>(&ctx, &unit_square(2), -1.0, 1, false, 0, &mut |_, _, _| {
        Ok(())
    })
    .err()
    .unwrap();
    assert!(e.to_string().contains("positive time step"), "{e}");
    let cube = parloop::mesh::unit_cube_tets(1);
    let e = run::<f32>(&ctx, &cube, 1e-3, 1, false, 0, &mut |_, _, _| Ok(()))
        .err()
        .unwrap();
    assert!(e.to_string().contains("tetrahedron"), "{e}");
}
