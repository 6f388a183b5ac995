//! Decoder benchmarks.

fn main() {}
