// The browser demo's render pipeline: the triangle mesh coloured by a field (the wave's p, or
// the steady heat's u), read straight from the simulation's storage buffer (no readback), with
// matplotlib's viridis over [lo, hi].

struct View {
    lo: f32,
    hi: f32,
    // 1 when the target format is sRGB: the colour map's values are sRGB-encoded already.
    srgb: f32,
    pad: f32,
}

@group(0) @binding(0) var<storage, read> p: array<f32>;
@group(0) @binding(1) var<uniform> view: View;

struct Out {
    @builtin(position) pos: vec4<f32>,
    @location(0) value: f32,
}

@vertex
fn vs(@location(0) xy: vec2<f32>, @builtin(vertex_index) v: u32) -> Out {
    var o: Out;
    o.pos = vec4<f32>(xy * 1.9 - 0.95, 0.0, 1.0);
    o.value = p[v];
    return o;
}

// viridis at t = 0, 1/8, ..., 1.
const STOPS = array<vec3<f32>, 9>(
    vec3<f32>(0.267004, 0.004874, 0.329415),
    vec3<f32>(0.282623, 0.140926, 0.457517),
    vec3<f32>(0.253935, 0.265254, 0.529983),
    vec3<f32>(0.206756, 0.371758, 0.553117),
    vec3<f32>(0.163625, 0.471133, 0.558148),
    vec3<f32>(0.127568, 0.566949, 0.550556),
    vec3<f32>(0.134692, 0.658636, 0.517649),
    vec3<f32>(0.266941, 0.748751, 0.440573),
    vec3<f32>(0.993248, 0.906157, 0.143936),
);

@fragment
fn fs(i: Out) -> @location(0) vec4<f32> {
    let t = clamp((i.value - view.lo) / (view.hi - view.lo), 0.0, 1.0) * 8.0;
    let k = min(u32(t), 7u);
    var c = mix(STOPS[k], STOPS[k + 1u], t - f32(k));
    if (view.srgb > 0.5) {
        c = pow(c, vec3<f32>(2.2));
    }
    return vec4<f32>(c, 1.0);
}
