//! The tokio peer: a sans-IO connection core (`core/`) that holds every rule of the connection,
//! one task per connection (`driver.rs`) that feeds it frames, runs the handlers it hands out and
//! writes what it queues, and a cloneable [`PeerHandle`] to send requests and notifications, all
//! over any `AsyncRead` + `AsyncWrite` (or frames a transport cut itself, as HTTP's).
//!
//! ```text
//!  PeerHandle::request ──► core: Outbound slot (id, deadline, waiter cell) ──► transmit ──┐
//!                               ▲ response written into the cell, caller woken            │
//!  reader ──► JsonRpcCodec ──► driver ──► core ──► request: handler, inline or in a task   │
//!                                              ├─► notifications/cancelled: stop it        │
//!                                              └─► invalid: -32700 / -32600 (rate-limited) │
//!                              driver ◄── one write of everything queued ◄─────────────────┘
//! ```
//!
//! # Examples
//!
//! ```
//! use mcpwire::peer::{Context, Handler, Incoming, NoHandler, PeerBuilder, Reply, RpcError};
//!
//! struct Ping;
//! impl Handler for Ping {
//!     async fn request(&self, req: &Incoming, _: &Context) -> Result<Reply, RpcError> {
//!         match req.method() {
//!             "ping" => Ok(Reply::empty()),
//!             m => Err(RpcError::method_not_found(m)),
//!         }
//!     }
//! }
//!
//! # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
//! let (a, b) = tokio::io::duplex(64 * 1024);
//! let (_server, _server_conn) = PeerBuilder::new().connect(a, Ping);
//! let (client, _client_conn) = PeerBuilder::new().connect(b, NoHandler);
//! let pong = client.request("ping", mcpwire::peer::NO_PARAMS).await.unwrap();
//! assert_eq!(pong.result().unwrap().get(), "{}");
//! # });
//! ```

mod builder;
mod connection_task;
// A transport that cuts its own frames and routes what the peer writes (HTTP's) reaches the
// outlet it implements (`driver::Outlet`) and the records it routes by (`core::transmit`)
// through these paths: no re-export that a build without such a transport would leave unused.
pub(crate) mod core;
pub(crate) mod driver;
mod error;
mod handle;
mod handler;
mod incoming;
mod inline;
pub(crate) mod principal;

pub use builder::PeerBuilder;
pub use connection_task::ConnectionTask;
pub use core::PeerStats;
pub use core::Timeout;
#[cfg(feature = "mcp")]
pub(crate) use error::status_text;
pub use error::{ChildExit, CloseReason, RequestError, TransportError};
pub use handle::{PeerHandle, ProgressToken, RequestOptions};
pub use handler::{Context, Handler, NoHandler};
pub use incoming::{Incoming, Reply, RpcError};
pub use principal::Principal;

#[cfg(feature = "http")]
pub(crate) use core::write_outcome;
#[cfg(feature = "http")]
pub(crate) use handle::RequestFailer;
#[cfg(feature = "http")]
pub(crate) use handle::{Direct, DirectPost};
#[cfg(feature = "http")]
pub(crate) use inline::Inline;

use crate::message::RawJson;

/// Params for a request or notification that has none.
pub const NO_PARAMS: Option<RawJson<'static>> = None;
