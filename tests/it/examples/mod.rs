//! The examples whose programs the tests run, compiled in as modules (their `main` is unused).
#![allow(dead_code)]

#[path = "../../../examples/advection.rs"]
pub mod advection;
#[path = "../../../examples/heat.rs"]
pub mod heat;
#[path = "../../../examples/poisson.rs"]
pub mod poisson;
