//! A JSON-RPC server on stdin/stdout built on the peer: `echo` answers with its params, `ping`
//! with `{}`, `sleep {"ms": N}` after N milliseconds (cancellable), `panic` panics. The tests
//! drive it as a real child process.

use std::time::Duration;

use mcpwire::peer::{Context, Handler, Incoming, PeerBuilder, Reply, RpcError};

struct Echo;

impl Handler for Echo {
    async fn request(&self, req: &Incoming, _cx: &Context) -> Result<Reply, RpcError> {
        match req.method() {
            "echo" => Ok(Reply::raw(req.params().map_or("null", |p| p.get()))),
            "ping" => Ok(Reply::empty()),
            "sleep" => {
                #[derive(serde::Deserialize)]
                struct Args {
                    ms: u64,
                }
                let args: Args = req.params_as().map_err(RpcError::invalid_params)?;
                tokio::time::sleep(Duration::from_millis(args.ms.min(60_000))).await;
                Ok(Reply::json(&format!("slept {}", args.ms))?)
            }
            "pid" => Reply::json(&std::process::id()),
            "panic" => panic!("asked to panic"),
            other => Err(RpcError::method_not_found(other)),
        }
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    eprintln!("stdio_echo: ready");
    let (stdin, stdout) = mcpwire::transport::stdio();
    let (_peer, mut conn) = PeerBuilder::new().spawn(stdin, stdout, Echo);
    let reason = conn.closed().await;
    eprintln!("stdio_echo: closed ({reason})");
}
