//! `mcpwire`: the load-testing harness and debugging tools.

fn main() {}
