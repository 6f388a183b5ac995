use super::*;

#[test]
fn a_bearer_challenge_is_read_among_others() {
    let c = Challenge::parse(
        r#"Basic realm="x", Bearer error="insufficient_scope", scope="files:read files:write", resource_metadata="https://mcp.example/.well-known/oauth-protected-resource/mcp""#,
    )
    .unwrap();
    assert_eq!(c.error.as_deref(), Some("insufficient_scope"));
    assert_eq!(c.scope.as_deref(), Some("files:read files:write"));
    assert_eq!(
        c.resource_metadata.as_deref(),
        Some("https://mcp.example/.well-known/oauth-protected-resource/mcp")
    );
    assert_eq!(Challenge::parse("Bearer"), Some(Challenge::default()));
    assert_eq!(Challenge::parse(r#"bearer realm="a \"quoted\" one""#), Some(Challenge::default()));
    assert_eq!(Challenge::parse("Basic realm=x"), None);
    // An unclosed quote ends the parse without a panic.
    assert!(Challenge::parse(r#"Bearer scope="open"#).is_none());
}

#[test]
fn well_known_urls_follow_the_specifications_order() {
    let server = Url::parse("https://mcp.example/public/mcp?x=1").unwrap();
    let prm: Vec<String> =
        resource_metadata_urls(&server, None).iter().map(Url::to_string).collect();
    assert_eq!(
        prm,
        [
            "https://mcp.example/.well-known/oauth-protected-resource/public/mcp",
            "https://mcp.example/.well-known/oauth-protected-resource"
        ]
    );
    let issuer = Url::parse("https://auth.example/tenant1").unwrap();
    let urls: Vec<String> = server_metadata_urls(&issuer).iter().map(Url::to_string).collect();
    assert_eq!(
        urls,
        [
            "https://auth.example/.well-known/oauth-authorization-server/tenant1",
            "https://auth.example/.well-known/openid-configuration/tenant1",
            "https://auth.example/tenant1/.well-known/openid-configuration"
        ]
    );
    let root = Url::parse("https://auth.example").unwrap();
    assert_eq!(server_metadata_urls(&root).len(), 2);
}

#[test]
fn the_canonical_resource_and_what_covers_it() {
    let s = Url::parse("HTTPS://MCP.Example/mcp#frag").unwrap();
    assert_eq!(canonical_resource(&s), "https://mcp.example/mcp");
    assert_eq!(
        canonical_resource(&Url::parse("https://mcp.example/").unwrap()),
        "https://mcp.example"
    );
    assert!(covers("https://mcp.example/mcp", &s));
    assert!(covers("https://mcp.example", &s));
    assert!(!covers("https://mcp.example/m", &s));
    assert!(!covers("https://other.example/mcp", &s));
}
