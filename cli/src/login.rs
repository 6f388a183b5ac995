//! `mcpwire login TARGET`: the OAuth flow run once, its tokens kept in the per-user file that
//! `load --oauth` and the other commands use and refresh.

use std::process::ExitCode;

use crate::connect_args::ConnectArgs;
use crate::load;

/// What `mcpwire login` takes.
#[derive(Debug, clap::Args)]
pub struct LoginArgs {
    /// The server: https://HOST:PORT/PATH (or http://).
    #[arg(value_parser = load::parse_target)]
    pub target: mcpwire::transport::Target,
    /// The MCP protocol version to speak (as for `load`).
    #[arg(long, value_name = "VERSION", default_value = "auto")]
    pub protocol_version: mcpwire::mcp::negotiation::VersionChoice,
    #[command(flatten)]
    pub connect_args: ConnectArgs,
}

/// Runs `mcpwire login`.
pub fn run(mut args: LoginArgs) -> ExitCode {
    if !args.target.is_http() {
        eprintln!("mcpwire: login needs an http:// or https:// target, not {}", args.target);
        return ExitCode::from(crate::EXIT_IO);
    }
    args.connect_args.oauth = true;
    let connect = match args.connect_args.apply(mcpwire::transport::ConnectOptions::default()) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("mcpwire: {e}");
            return ExitCode::from(crate::EXIT_IO);
        }
    };
    let rt = crate::runtime();
    let outcome = rt.block_on(async {
        let builder = mcpwire::peer::PeerBuilder::new();
        let (peer, _conn) = args
            .target
            .connect(&builder, mcpwire::peer::NoHandler, &connect)
            .await
            .map_err(|e| e.to_string())?;
        let options = mcpwire::client::ClientOptions::new("mcpwire", env!("CARGO_PKG_VERSION"))
            .version(args.protocol_version.clone());
        // The era's first request meets the 401, which runs the flow.
        let agreed =
            mcpwire::client::negotiate(&peer, &options, None).await.map_err(|e| e.to_string())?;
        peer.close();
        Ok::<_, String>(agreed)
    });
    rt.shutdown_background();
    match outcome {
        Ok(agreed) => {
            eprintln!(
                "mcpwire: authorized with {} ({:?} era, {}); tokens kept in {}",
                args.target,
                agreed.era(),
                agreed.version(),
                args.connect_args.token_file().display()
            );
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("mcpwire: login to {} failed: {e}", args.target);
            ExitCode::from(crate::EXIT_INVALID)
        }
    }
}
