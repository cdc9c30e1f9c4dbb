//! parloop: data-parallel loops over unstructured meshes on any GPU through WebGPU (wgpu).

pub mod graph;
pub mod util;
