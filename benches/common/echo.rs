//! The typed echo server and its `client::Client` caller, shared by `benches/client.rs` (over an
//! in-process pipe) and `benches/http.rs` (over Streamable HTTP).

use mcpwire::client::Client;
use mcpwire::mcp::types::{CallToolResult, Tool};
use mcpwire::server::Server;

use crate::calls::Call;

/// The echoed message: 64 bytes.
pub const MESSAGE: &str = "The quick brown fox jumps over the lazy dog, then echoes it back.";

/// `server::Server` with an `echo` tool answering its `message` in one text block.
pub fn server(name: &str) -> Server {
    Server::builder(name, "0")
        .tool(Tool::new("echo"), |call| async move {
            #[derive(serde::Deserialize)]
            struct Args<'a> {
                #[serde(borrow)]
                message: std::borrow::Cow<'a, str>,
            }
            let a: Args<'_> = call.arguments()?;
            Ok(CallToolResult::text(a.message.into_owned()))
        })
        .build()
}

/// `client::Client` calling `echo` and checking the text that comes back.
#[derive(Clone)]
pub struct Mcpwire(pub Client);

#[derive(serde::Serialize)]
pub struct EchoArgs<'a> {
    pub message: &'a str,
}

impl Call for Mcpwire {
    async fn call(&self) {
        let r = self.0.call_tool("echo", EchoArgs { message: MESSAGE }).await.unwrap();
        let r = r.get();
        assert!(r.content.len() == 1 && r.content[0].as_text() == Some(MESSAGE));
    }
}
