//! The wave's WGSL kernels: on vertices (the same in 2-D and 3-D), and on cells, one set for
//! triangles ([`KERNELS`]) and one for tetrahedra ([`KERNELS_3D`]). Each set is one string, so
//! that a fused group includes it once.

/// The kernels on vertices, the same in 2-D and 3-D (a macro, so that both kernel sets are
/// string literals).
macro_rules! vertex_kernels {
    () => {
        r#"
fn phi_half(p: ptr<function, array<f32, 1>>, phi: ptr<function, array<f32, 1>>) {
    (*phi)[0] -= 0.5 * dt * (*p)[0];
}

fn zero(t: ptr<function, array<f32, 1>>) {
    (*t)[0] = 0.0;
}

fn p_update(t: ptr<function, array<f32, 1>>, m: ptr<function, array<f32, 1>>, p: ptr<function, array<f32, 1>>) {
    (*p)[0] += (*t)[0] / (*m)[0];
}

fn energy_vertices(p: ptr<function, array<f32, 1>>, m: ptr<function, array<f32, 1>>, e: ptr<function, array<f32, 1>>) {
    (*e)[0] += 0.5 * (*m)[0] * (*p)[0] * (*p)[0];
}
"#
    };
}

/// The WGSL kernels on triangles (the Const `dt` is compiled in).
pub const KERNELS: &str = concat!(
    vertex_kernels!(),
    r#"
fn geometry(x: ptr<function, array<f32, 6>>, g: ptr<function, array<vec2<f32>, 3>>) -> f32 {
    let x0 = vec2<f32>((*x)[0], (*x)[1]);
    let d1 = vec2<f32>((*x)[2], (*x)[3]) - x0;
    let d2 = vec2<f32>((*x)[4], (*x)[5]) - x0;
    let det = d1.x * d2.y - d1.y * d2.x;
    (*g)[1] = vec2<f32>(d2.y, -d2.x) / det;
    (*g)[2] = vec2<f32>(-d1.y, d1.x) / det;
    (*g)[0] = -(*g)[1] - (*g)[2];
    return 0.5 * abs(det);
}

fn lumped_mass(x: ptr<function, array<f32, 6>>, m: ptr<function, array<f32, 3>>) {
    var g: array<vec2<f32>, 3>;
    let area = geometry(x, &g);
    for (var a = 0; a < 3; a++) { (*m)[a] += area / 3.0; }
}

fn stiffness(x: ptr<function, array<f32, 6>>, phi: ptr<function, array<f32, 3>>, t: ptr<function, array<f32, 3>>) {
    var g: array<vec2<f32>, 3>;
    let area = geometry(x, &g);
    let grad = g[0] * (*phi)[0] + g[1] * (*phi)[1] + g[2] * (*phi)[2];
    for (var a = 0; a < 3; a++) { (*t)[a] += dt * area * dot(g[a], grad); }
}

fn energy_cells(x: ptr<function, array<f32, 6>>, phi: ptr<function, array<f32, 3>>, e: ptr<function, array<f32, 1>>) {
    var g: array<vec2<f32>, 3>;
    let area = geometry(x, &g);
    let grad = g[0] * (*phi)[0] + g[1] * (*phi)[1] + g[2] * (*phi)[2];
    (*e)[0] += 0.5 * area * dot(grad, grad);
}

fn pulse(x: ptr<function, array<f32, 2>>, p: ptr<function, array<f32, 1>>, c: ptr<function, array<f32, 3>>) {
    let d = vec2<f32>((*x)[0] - (*c)[0], (*x)[1] - (*c)[1]);
    (*p)[0] += (*c)[2] * exp(-400.0 * dot(d, d));
}
"#
);

/// The WGSL kernels on tetrahedra (the Const `dt` is compiled in; no `pulse`: clicks are a
/// 2-D demo's).
pub const KERNELS_3D: &str = concat!(
    vertex_kernels!(),
    r#"
fn geometry(x: ptr<function, array<f32, 12>>, g: ptr<function, array<vec3<f32>, 4>>) -> f32 {
    let x0 = vec3<f32>((*x)[0], (*x)[1], (*x)[2]);
    let d1 = vec3<f32>((*x)[3], (*x)[4], (*x)[5]) - x0;
    let d2 = vec3<f32>((*x)[6], (*x)[7], (*x)[8]) - x0;
    let d3 = vec3<f32>((*x)[9], (*x)[10], (*x)[11]) - x0;
    let det = dot(d1, cross(d2, d3));
    // The rows of the inverse Jacobian: the gradients of the barycentric coordinates 1..3.
    (*g)[1] = cross(d2, d3) / det;
    (*g)[2] = cross(d3, d1) / det;
    (*g)[3] = cross(d1, d2) / det;
    (*g)[0] = -(*g)[1] - (*g)[2] - (*g)[3];
    return abs(det) / 6.0;
}

fn lumped_mass(x: ptr<function, array<f32, 12>>, m: ptr<function, array<f32, 4>>) {
    var g: array<vec3<f32>, 4>;
    let vol = geometry(x, &g);
    for (var a = 0; a < 4; a++) { (*m)[a] += vol / 4.0; }
}

fn gradient(g: ptr<function, array<vec3<f32>, 4>>, phi: ptr<function, array<f32, 4>>) -> vec3<f32> {
    return (*g)[0] * (*phi)[0] + (*g)[1] * (*phi)[1] + (*g)[2] * (*phi)[2] + (*g)[3] * (*phi)[3];
}

fn stiffness(x: ptr<function, array<f32, 12>>, phi: ptr<function, array<f32, 4>>, t: ptr<function, array<f32, 4>>) {
    var g: array<vec3<f32>, 4>;
    let vol = geometry(x, &g);
    let grad = gradient(&g, phi);
    for (var a = 0; a < 4; a++) { (*t)[a] += dt * vol * dot(g[a], grad); }
}

fn energy_cells(x: ptr<function, array<f32, 12>>, phi: ptr<function, array<f32, 4>>, e: ptr<function, array<f32, 1>>) {
    var g: array<vec3<f32>, 4>;
    let vol = geometry(x, &g);
    let grad = gradient(&g, phi);
    (*e)[0] += 0.5 * vol * dot(grad, grad);
}
"#
);
