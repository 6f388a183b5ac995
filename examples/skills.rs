//! The skills extension, both sides in one process: a server serving a skill directory, and a
//! client that lists its skills, loads one and reads a supporting file, each read verified.
//!
//!     cargo run --example skills                 # examples/skills
//!     cargo run --example skills -- DIR [NAME]   # another directory, a skill by name

use mcpwire::client::Client;
use mcpwire::server::{Server, Skills};

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let dir = args
        .next()
        .unwrap_or_else(|| concat!(env!("CARGO_MANIFEST_DIR"), "/examples/skills").into());
    let wanted = args.next();
    let server = Server::builder("skills-example", env!("CARGO_PKG_VERSION"))
        .skills(Skills::load(&dir)?)
        .build();
    let client = Client::connect(server).await?;

    // The listing is all a host needs for its registry: nothing is read yet.
    let entries = client.list_skills().await?;
    for e in &entries {
        let description = e.frontmatter.get("description").and_then(|d| d.as_str()).unwrap_or("");
        println!("{}  {}  ({} files)", e.uri, description, e.files().map_or(0, <[_]>::len));
    }
    let Some(entry) =
        entries.iter().find(|e| wanted.as_deref().is_none_or(|w| e.name() == Some(w)))
    else {
        return Err("no such skill".into());
    };

    // Loading reads the SKILL.md only, checked against the entry (size, digest, front matter).
    let skill = client.load_skill(entry).await?;
    println!("\nloaded {}:\n{}", entry.uri, skill.text);
    // A supporting file is read when it is needed, and checked too.
    if let Some(file) = entry.files().unwrap_or_default().iter().find(|f| f.uri != entry.uri) {
        let bytes = client.read_skill_file(&skill, &file.uri).await?;
        println!("read {} ({} bytes, {})", file.uri, bytes.len(), file.digest);
    }
    client.close().await;
    Ok(())
}
