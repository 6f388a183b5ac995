//! Checks shared by the fuzz targets (and, included by path, by the main crate's tests:
//! `checks` and `reference` by `tests/fuzz_regressions.rs`, `mux_model` by `tests/mux_model.rs`
//! and `tests/fuzz_regressions.rs`).

pub mod checks;
pub mod generate;
pub mod mux_model;
pub mod reference;
