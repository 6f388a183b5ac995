//! Checks shared by the fuzz targets (and, included by path, by the main crate's tests: every
//! module by `tests/fuzz_regressions.rs`, `mux_model` also by `tests/mux_model.rs`).

pub mod body;
pub mod checks;
pub mod content_length;
pub mod feed;
pub mod generate;
pub mod headers;
pub mod http;
pub mod http_tls;
pub mod mux_model;
pub mod reference;
pub mod sse;
pub mod typed;
