//! The client role: a host's connection to one MCP server, either era, over any transport.
//!
//! [`Client`] (feature `mcp`) is the typed client: [`Client::connect`] starts the transport a
//! [`Target`](crate::transport::Target) names, settles the era, and from then on every call
//! carries what its era needs. Below it, [`negotiate`] (feature `peer`) settles the era over
//! any [`PeerHandle`](crate::peer::PeerHandle), with the pure decisions of
//! [`crate::mcp::negotiation`]:
//!
//! - a fixed modern version is probed with `server/discover` too (so a legacy server fails at
//!   once rather than serving modern requests by its own rules), with no fallback; a fixed
//!   legacy version opens the session with `initialize` and `notifications/initialized`;
//! - `auto` probes with `server/discover` carrying the newest modern version in `_meta`
//!   (on every transport: over Streamable HTTP the probe is the "modern request first" the
//!   specification asks for, and the transport hands a 4xx's JSON-RPC error body to the peer
//!   as the probe's error). A `DiscoverResult` or a recognized modern error (-32022 naming the
//!   supported versions, -32020, -32021) means modern; any other error, or no answer within
//!   [`ClientOptions::probe_timeout`], means legacy, and the session opens with `initialize`.
//!
//! The era found is cached per target for the life of the process (see [`negotiate`]): later
//! connections to the same target skip the probe.
//!
//! ```no_run
//! # #[cfg(feature = "http")]
//! # tokio::runtime::Runtime::new().unwrap().block_on(async {
//! use mcpwire::client::{ClientOptions, negotiate};
//! use mcpwire::peer::{NoHandler, PeerBuilder, RequestOptions};
//! use mcpwire::Json;
//!
//! let url = "http://127.0.0.1:3001/mcp";
//! let (peer, _conn) = mcpwire::http::connect(&PeerBuilder::new(), url, NoHandler)?;
//! let agreed = negotiate(&peer, &ClientOptions::new("my-client", "1.0"), Some(url)).await?;
//! println!("{:?} at {}", agreed.era(), agreed.version());
//! // Carries `_meta` (and over HTTP the mirrored headers) when the server is modern.
//! let call = serde_json::json!({"name": "echo", "arguments": {"message": "hi"}});
//! let options = RequestOptions::new();
//! let _result = agreed.request(&peer, "tools/call", Some(Json(&call)), options).await?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! # }).unwrap();
//! ```

mod input;
mod negotiate;

#[cfg(feature = "mcp")]
mod callbacks;
#[cfg(feature = "mcp")]
mod calls;
#[cfg(feature = "mcp")]
mod catalog;
#[cfg(feature = "mcp")]
#[expect(clippy::module_inception, reason = "the role's folder and its main type's file")]
mod client;
#[cfg(feature = "mcp")]
mod decoded;
#[cfg(feature = "mcp")]
mod error;
#[cfg(feature = "mcp")]
mod listen;
#[cfg(feature = "mcp")]
mod polling;
#[cfg(feature = "mcp")]
mod settle;
#[cfg(feature = "mcp")]
mod skills;
#[cfg(feature = "mcp")]
mod tasks;

pub use input::{InputError, InputResolver};
pub use negotiate::*;

#[cfg(feature = "mcp")]
pub use callbacks::{CallbackFuture, Change, Listen};
#[cfg(feature = "mcp")]
pub use calls::{CallOptions, NO_ARGUMENTS, NoArguments};
#[cfg(feature = "mcp")]
pub use client::{Client, ClientBuilder};
#[cfg(feature = "mcp")]
pub use decoded::Decoded;
#[cfg(feature = "mcp")]
pub use error::{ClientError, Stage};
#[cfg(feature = "mcp")]
pub use listen::Changes;
#[cfg(feature = "mcp")]
pub use polling::TaskPolling;
#[cfg(feature = "mcp")]
pub use skills::LoadedSkill;
#[cfg(feature = "mcp")]
pub use tasks::{Started, TaskHandle};
