//! Interop with the real MCP implementations, at the versions `tests/interop/install.sh` pins:
//! `mcpwire load` against npm `@modelcontextprotocol/server-everything`, and the official Python
//! SDK's client (PyPI `mcp`) against `mcpwire serve`, over stdio (`stdio.rs`) and over Streamable
//! HTTP (`http.rs`).
//!
//! The first test to run installs both into `target/interop/` (once per test binary; the
//! installer is idempotent). When node, npm or python3 is missing, or the install fails, every
//! test here fails with the installer's output: these tests never skip.

mod harness;
mod http;
mod load_modern;
mod stdio;
