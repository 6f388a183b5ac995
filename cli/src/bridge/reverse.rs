//! `mcpwire bridge --stdio URL`: a remote Streamable HTTP server served to a host on this
//! process's stdin and stdout (`mcpwire::bridge::reverse`), reached with the flags `load` uses
//! (`--header`, `--cacert`, `--oauth`, …). Standard output carries MCP only; what the bridge
//! has to say goes to standard error.

use std::time::Duration;

use mcpwire::bridge::ReverseBuilder;
use mcpwire::peer::PeerBuilder;
use mcpwire::transport::ConnectOptions;

use crate::connect_args::ConnectArgs;

/// Serves `url` on stdio until the host closes stdin: the host's peer made by `host`, the
/// remote reached as `connect_args` says, its answers awaited `timeout` (`None`: without end), up to
/// `subscriptions` resource subscriptions made again on a new remote session.
pub async fn serve(
    url: &str,
    connect_args: &ConnectArgs,
    host: PeerBuilder,
    timeout: Option<Duration>,
    subscriptions: usize,
) -> Result<(), String> {
    let options = connect_args.apply(ConnectOptions::default())?;
    let (stdin, stdout) = mcpwire::transport::stdio();
    let stats = ReverseBuilder::new()
        .host_peer(host)
        .connect_options(options)
        .request_timeout(timeout)
        .max_remembered_subscriptions(subscriptions)
        .serve(url, stdin, stdout)
        .await
        .map_err(|e| e.to_string())?;
    tracing::debug!(?stats, "mcpwire bridge --stdio: the host closed its input");
    Ok(())
}
