// parloop: finalize a loop group's Global reductions. One workgroup folds, for each Global
// the group reduces, the per-workgroup partials the group left in scratch and combines the
// result into the Global. codegen::reduce fills in the placeholders: one storage binding per
// Global (from binding 2), a tree array per value type, and a fold per Global and component.
// Parameters: n = partial slots.

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
PL_GLOBALS
PL_WORKGROUP

@compute @workgroup_size(64)
fn pl_main(@builtin(local_invocation_index) pl_lid: u32) {
PL_BODY}
