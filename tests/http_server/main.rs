//! The Streamable HTTP server served in process on a real TCP socket: every row of the table in
//! the module doc of `src/http/server/mod.rs`, the session's lifetime (DELETE, `max_sessions`, idle
//! expiry), the GET stream, and the connection bound.
//!
//! The client is hyper's own HTTP/1.1 connection: one [`Client`] is one TCP connection, kept
//! alive, so "the connection goes on" means exactly that. Where the exact bytes matter (a
//! malformed request, a declared length the body never sends, a connection held open) the
//! request is written by hand on a `TcpStream`. HTTP/2 (`http2.rs`) has its own clients:
//! hyper's HTTP/2 connection, the `h2` crate's, and frames written by hand (`h2_frames.rs`).

mod abuse;
mod auth;
mod cancellation;
#[path = "../common/mod.rs"]
mod common;
mod connections;
mod corpus;
mod h2_frames;
mod harness;
mod http2;
mod modern;
mod peerless;
mod requests;
mod resume;
mod routing;
mod sessions;
mod stop;
