//! What the library's tests share, as quinn-proto's `tests/util.rs` is for its tests: the one
//! place where two sides are set up and driven.
//!
//! - [`pair`]: two peers joined by an in-process pipe ([`Pair`]), a peer facing a side played by
//!   hand with the codec ([`with_raw`], [`Raw`]), accept loops on a loopback port, and the
//!   handler the peer tests share ([`Worker`]);
//! - [`http`]: an `HttpServer` on a loopback port, and an accept loop for servers made by hand;
//! - [`mcp`]: the tools the typed client's and server's tests both register;
//! - [`framing`]: a decoder fed in chunks, streams cut anywhere, and a real `FramedRead` over a
//!   duplex pipe;
//! - [`jwt`]: an issuer of signed access tokens and its JWKS, made by the test;
//! - [`tls`]: a CA, a server certificate and a client certificate, made by the test (rcgen);
//! - [`wait`]: bounded waits, so that a bug fails a test instead of hanging it.
//!
//! A test binary takes it with `mod common;` (`#[path = "../common/mod.rs"] mod common;` from a
//! folder of its own) and uses what it needs; each part needs the library features its code
//! does.

#![allow(
    dead_code,
    unused_imports,
    reason = "each test binary that includes this module uses only some of its helpers"
)]

pub mod framing;
#[cfg(feature = "http")]
pub mod http;
#[cfg(feature = "oauth")]
pub mod jwt;
#[cfg(feature = "mcp")]
pub mod mcp;
#[cfg(feature = "peer")]
pub mod pair;
#[cfg(feature = "tls")]
pub mod tls;
pub mod wait;

pub use framing::*;
#[cfg(feature = "http")]
pub use http::*;
#[cfg(feature = "mcp")]
pub use mcp::*;
#[cfg(feature = "peer")]
pub use pair::*;
pub use wait::*;
