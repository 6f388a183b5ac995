//! Bridges between MCP's stdio and Streamable HTTP transports (features `http` and `mcp`):
//! three products, one folder or file each.
//!
//! | mode | what it serves | built by | where |
//! |---|---|---|---|
//! | shared | one stdio child to many HTTP clients, over one peer | [`BridgeBuilder`] | `shared/` |
//! | isolated | a stdio child per legacy HTTP session, from a bounded pool | [`BridgeBuilder::isolated`] | `isolated.rs` |
//! | reverse | one remote HTTP server to a stdio host | [`ReverseBuilder`] | `reverse.rs` |
//!
//! The three sit under one module because a reader looks for them where the tool puts them
//! (`mcpwire bridge`, `mcpwire bridge --isolated`, `mcpwire bridge --stdio URL`), and because
//! they share what they do to a message's text (`json.rs`: a member read, edited or added,
//! the rest forwarded byte for byte). Each is a module of its own all the same: the isolated
//! mode runs a shared bridge per session through its public API alone, and the reverse bridge
//! shares nothing with the other two but `json.rs`. Every public item is exported here, at
//! one path; the bounds' defaults are in [`crate::limits`].
//!
//! ```no_run
//! # async fn run() -> std::io::Result<()> {
//! use mcpwire::bridge::BridgeBuilder;
//! use mcpwire::http::HttpServer;
//! use mcpwire::peer::PeerBuilder;
//!
//! let bridge = BridgeBuilder::new().start("my-mcp-server", ["--stdio"]).await?;
//! let listener = mcpwire::http::server::bind("127.0.0.1:3000").await?;
//! bridge.serve(HttpServer::new(PeerBuilder::new()), listener, std::future::pending()).await
//! # }
//! ```

mod isolated;
mod json;
mod reverse;
mod shared;

use crate::message::RawJson;
pub use isolated::{IsolatedBridge, IsolatedBuilder, IsolatedHandler, IsolatedStats};
pub use reverse::{ReverseBuilder, ReverseStats};
pub use shared::{Bridge, BridgeBuilder, BridgeHandler, BridgeStats};

/// `raw` as text, or `null`: a result forwarded as it came.
fn text(raw: Option<RawJson<'_>>) -> &str {
    raw.map_or("null", |r| r.get())
}
