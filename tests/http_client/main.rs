//! The Streamable HTTP client transport (`mcpwire::http::connect`) on a real socket: against
//! `HttpServer` served in-process with a handler of the tests' own, and against a hand-made
//! HTTP/1.1 server that answers with fixed responses (an HTML 500, a 202 to a request, a body
//! that is not JSON, an event stream that ends without the response, a dropped connection) to
//! check how the client turns HTTP failures into request errors.
//!
//! Every await on the network is bounded (`within`, `eventually`): a client bug must fail a
//! test, never hang it.

#[path = "../common/mod.rs"]
mod common;
mod fixed_answers;
mod harness;
mod modern;
mod oauth;
mod real_server;
mod resume;
#[cfg(feature = "mcp")]
mod typed_client;
