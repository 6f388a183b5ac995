//! A wire core for the Model Context Protocol and JSON-RPC 2.0.
//!
//! ```text
//!  bytes ──► framing ──► message ──► Frame ──► your host
//!           (NDJSON:    (simd-json  (kind, id, method,
//!            split on    in-place    params / result / error,
//!            '\n')       parse)      borrowed from the frame)
//!
//!  Outgoing ──► encode ──► bytes       JsonRpcCodec = both, as a tokio-util codec
//! ```
//!
//! Everything below the codec is sans-IO: [`framing`] splits a `BytesMut`, the message layer parses
//! a byte slice. NDJSON is the default framing; [`Framing::ContentLength`] (LSP, DAP) and
//! [`Framing::Detect`] take the same zero-copy path, and [`SseDecoder`] reads Server-Sent Events
//! whose data are messages ([`Outgoing::write_sse`] writes them). A decoded [`Frame`] owns its
//! bytes (split off the read buffer, not copied and never modified) and a small index; once the
//! codec is warm, decoding costs no heap allocation. (The peer copies the requests and
//! notifications it holds, [`Frame::unshare`], so its byte bounds count what stays in memory;
//! an SSE event whose data spans several lines is joined into a buffer of its own.)
//!
//! [`mux`] holds the in-flight tables, also sans-IO: [`mux::Outbound`] issues request ids and
//! matches responses (late, unknown, timed out), [`mux::Inbound`] tracks the peer's requests.
//! [`mcp`] is MCP's vocabulary, also without I/O. The `peer` module (feature `peer`) drives it
//! all on tokio: a sans-IO connection core (admission, ordering, cancellation, deadlines,
//! backpressure, drain) and one task per connection that reads, runs handlers (inline when they
//! answer at once) and writes coalesced, over the `transport` module's child stdio, TCP, Unix
//! sockets or in-process duplex. The `http` module (feature `http`) carries the same peer over
//! MCP's Streamable HTTP: a hyper server with a session per `initialize`, and a client
//! transport. On top sit the two roles: `client` (feature `mcp` for the typed `Client`) and
//! `server` (feature `mcp`). The `bridge` module (features `http` and `mcp`) serves one stdio
//! child to many HTTP clients over one peer (or a child per session), and a remote HTTP server
//! to a stdio host.
//!
//! Bad input never ends the stream: each bad frame decodes to a [`Kind::Invalid`] frame carrying a
//! [`DecodeError`] with its JSON-RPC code, and [`Message::error_reply`] builds the answer.
//!
//! # Examples
//!
//! ```
//! use bytes::BytesMut;
//! use mcpwire::{Id, JsonRpcCodec, Kind, Outgoing, RawJson, ReplyDetail};
//! use tokio_util::codec::{Decoder, Encoder};
//!
//! let mut codec = JsonRpcCodec::new();
//! let mut input = BytesMut::from(&b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\n[]\n"[..]);
//! let mut output = BytesMut::new();
//! while let Some(frame) = codec.decode(&mut input).unwrap() {
//!     match frame.kind() {
//!         Kind::Request if frame.method() == Some("ping") => {
//!             let reply = Outgoing::Result { id: frame.id().unwrap(), result: RawJson::new("{}") };
//!             codec.encode(reply, &mut output).unwrap();
//!         }
//!         Kind::Invalid => {
//!             let reply = frame.message().unwrap().error_reply(ReplyDetail::Spec).unwrap();
//!             codec.encode(reply, &mut output).unwrap();
//!         }
//!         _ => {}
//!     }
//! }
//! assert_eq!(
//!     std::str::from_utf8(&output).unwrap(),
//!     "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n\
//!      {\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":-32600,\"message\":\"Invalid Request\"}}\n"
//! );
//! # let _ = Id::Null;
//! ```
//!
//! # Choices
//!
//! - **Unknown top-level members** are refused with -32600. JSON-RPC 2.0 defines the members of
//!   each message exactly, the MCP TypeScript SDK validates them strictly, and refusing them
//!   makes every duplicate key detectable in constant space (a duplicated envelope key is a
//!   smuggling risk: simd-json keeps the first copy, serde_json the last). Unknown members of the
//!   `error` object are ignored.
//! - **A UTF-8 byte order mark** at the start of any line is dropped (RFC 8259 allows a parser to
//!   ignore it). A truncated one is invalid UTF-8: -32700.
//! - **Numbers** outside i64/u64/f64 (`1e400`, 2^64 as an integer) are a parse error, -32700:
//!   simd-json refuses them.
//! - **Frame too large** is answered with -32600 and `"id": null`: the bytes were never read.
//!
//! # Code map
//!
//! Each room (a module, named by its path), its job, and the rooms it may import. A room may
//! also import what those may, in turn (everything below it, nothing above), and the other
//! rooms of its row. No file depends on itself through other files (a folder's `mod.rs` may use
//! the files below it: it is the folder's front door). `tests/layers.rs` reads this table and holds the code to it.
//!
//! | room | job | may import |
//! |---|---|---|
//! | `error`, `limits` | error codes and kinds; every bound with its default and reason | nothing of ours |
//! | `sync` | the one way a lock is taken (a poisoned one included) | nothing of ours |
//! | `message` | parse one frame into a [`Frame`]; read an object's members (as the parse recorded them, else by a scan); encode [`Outgoing`]; [`OwnedId`] | `error`, `limits` |
//! | `framing` | sans-IO splitters and writers: NDJSON, Content-Length, SSE | `message` |
//! | `codec` | the tokio-util codec: a framing plus the parser | `framing` |
//! | `mux` | sans-IO in-flight tables: our ids to waiters, theirs to handlers | `message` |
//! | `mcp` | MCP's vocabulary, no I/O: types (the tasks extension's among them), `_meta`, headers, annotations, the client's era decisions, the skills extension's checks | `message` |
//! | `peer::incoming`, `peer::error`, `peer::principal` | what a peer hands its handlers (the caller's principal among it), and why a request fails | `mcp` |
//! | `peer::core` | the connection's state machine, sans-IO: `handle_*` in, `poll_*` out | `mux`, `peer::incoming`, `peer::error` |
//! | `peer` | the tokio peer: its handle, the handler trait, one task per connection | `peer::core`, `codec`, `sync` |
//! | `transport` | child stdio, the process's own stdio, TCP, Unix sockets, in-process pairs | `peer` |
//! | `tls` | TLS settings for both sides: roots, CAs and identities from PEM, the reloadable server certificate | `error`, `limits`, `sync` |
//! | `http::dial` | how every HTTP client of ours reaches a server (the transport's, OAuth's, the tool's): TCP, TLS for `https://`, the HTTP version, time bounds, the pool | `tls` |
//! | `auth` | OAuth 2.1: the client's flow (discovery, registration, PKCE, tokens, refresh, step-up) and the resource server's token checks (JWT with JWKS, introspection) | `http::dial`, `peer::principal` |
//! | `http` | Streamable HTTP server and client transport, on hyper | `peer`, `framing`, `tls`, `auth` |
//! | `transport::target` | [`transport::Target`]: a server named, and reached by a transport of `transport` or by Streamable HTTP (above `http`, while the rest of `transport` sits below it) | `transport`, `http` |
//! | `probe` | the era probe over a peer: `server/discover` sent, its answer read for the era decision (the client and the bridge both open servers with it) | `peer` |
//! | `client` | the client role: era negotiation over a peer, the typed [`client::Client`] (tasks driven to their end, skills read and verified) | `transport::target`, `probe` |
//! | `server` | the server role: the typed [`server::Server`], tasks (`server::tasks`) among what it runs, a skill directory served | `transport::target` |
//! | `bridge` | the three bridges between stdio and Streamable HTTP: one stdio child shared by many HTTP clients (ids and progress tokens rewritten, what the child sends routed to the client it concerns, eras translated), a child per session from a bounded pool (isolated), a remote HTTP server served on stdio (reverse) | `transport::target`, `probe` |
//!
//! The `mcpwire` tool (load, serve, inspect) is the workspace's `cli/` crate, on the public API.
//! Its global allocator, mimalloc through the entry points that suit each alignment, is the
//! `alloc/` crate, which the benches and their baselines share (the library never sets one).

#![deny(clippy::undocumented_unsafe_blocks)]

#[cfg(feature = "oauth")]
pub mod auth;
#[cfg(all(feature = "http", feature = "mcp"))]
pub mod bridge;
#[cfg(feature = "peer")]
pub mod client;
mod codec;
pub mod error;
pub mod framing;
#[cfg(feature = "http")]
pub mod http;
pub mod limits;
pub mod mcp;
mod message;
pub mod mux;
#[cfg(feature = "peer")]
pub mod peer;
#[cfg(feature = "peer")]
mod probe;
#[cfg(feature = "mcp")]
pub mod server;
#[cfg(feature = "peer")]
mod sync;
#[cfg(feature = "tls")]
pub mod tls;
#[cfg(feature = "peer")]
pub mod transport;

/// The README's examples, compiled as doctests so that they stay true.
#[cfg(all(doctest, feature = "mcp", feature = "http"))]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;

pub use codec::{Framing, JsonRpcCodec, SseDecoder, SseEvent};
pub use error::{DecodeError, Error, ErrorCode, Member, PayloadError};
pub use limits::Limits;
pub use message::encode::{Json, Outgoing, Payload, Reason, ReplyDetail};
pub use message::owned::OwnedId;
pub use message::{ErrorObject, Frame, FrameParser, Id, Kind, Message, RawJson};
