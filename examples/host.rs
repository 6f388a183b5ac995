//! A host in a few lines: connect to the MCP server named on the command line (either era, any
//! transport), list its tools, call one.
//!
//! ```text
//! cargo run --example host -- 'stdio:python3 server.py' echo '{"message":"hi"}'
//! cargo run --example host -- http://127.0.0.1:3000/mcp
//! ```

use mcpwire::client::Client;

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let target = args.next().ok_or("usage: host TARGET [TOOL [ARGUMENTS-JSON]]")?;
    let client = Client::connect(target).await?;
    println!("{:?} at {} ({:?})", client.server_info(), client.protocol_version(), client.era());
    let tools = client.list_tools().await?;
    for tool in &tools {
        let t = tool.get();
        println!("- {}: {}", t.name, t.description.as_deref().unwrap_or(""));
    }
    let Some(name) = args.next() else { return Ok(()) };
    let arguments: serde_json::Value = serde_json::from_str(&args.next().unwrap_or("{}".into()))?;
    match client.call_tool(&name, arguments).await {
        Ok(result) => println!("{}", result.json()),
        Err(e) => println!("{name} failed: {e}"),
    }
    Ok(())
}
