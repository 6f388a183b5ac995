//! Checks shared by the fuzz targets (and, for `checks` and `reference`, by
//! `tests/fuzz_regressions.rs` in the main crate).

pub mod checks;
pub mod generate;
pub mod reference;
