// parloop: finalize a Global reduction. One workgroup folds the per-workgroup partials a loop
// group left in scratch and combines the result into the Global. codegen::reduce fills in
// TYPE (f32, f64, u32, i32), IDENTITY (the reduction's identity), COMBINE (an expression of a
// and b) and LOAD (partial slot i from the scratch words: one word, or two for f64).
// Parameters: n = partial slots, base = first scratch word, nwg = the Global's dim.

struct PlParams {
    n: u32,
    base: u32,
    wg_base: u32,
    slots: u32,
    nwg: u32,
    pad0: u32,
    pad1: u32,
    pad2: u32,
}

@group(0) @binding(0) var<uniform> pl: PlParams;
@group(0) @binding(1) var<storage, read> pl_scratch: array<u32>;
@group(0) @binding(2) var<storage, read_write> pl_global: array<TYPE>;
var<workgroup> pl_red: array<TYPE, 64>;

fn pl_combine(a: TYPE, b: TYPE) -> TYPE {
    return COMBINE;
}

fn pl_load(i: u32) -> TYPE {
    return LOAD;
}

@compute @workgroup_size(64)
fn pl_main(@builtin(local_invocation_index) pl_lid: u32) {
    for (var pl_d = 0u; pl_d < pl.nwg; pl_d++) {
        var pl_acc: TYPE = IDENTITY;
        for (var pl_s = pl_lid; pl_s < pl.n; pl_s += 64u) {
            pl_acc = pl_combine(pl_acc, pl_load(pl_s * pl.nwg + pl_d));
        }
        workgroupBarrier();
        pl_red[pl_lid] = pl_acc;
        workgroupBarrier();
        for (var pl_h = 32u; pl_h > 0u; pl_h >>= 1u) {
            if (pl_lid < pl_h) {
                pl_red[pl_lid] = pl_combine(pl_red[pl_lid], pl_red[pl_lid + pl_h]);
            }
            workgroupBarrier();
        }
        if (pl_lid == 0u) {
            pl_global[pl_d] = pl_combine(pl_global[pl_d], pl_red[0]);
        }
    }
}
