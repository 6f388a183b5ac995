use super::*;

#[test]
fn a_file_store_keeps_credentials_for_its_owner_only_and_across_opens() {
    let dir = std::env::temp_dir().join(format!("mcpwire-store-{}", std::process::id()));
    let path = dir.join("nested").join("tokens.json");
    let store = FileStore::new(&path);
    assert_eq!(store.load("https://mcp.example/mcp"), None);
    let c = Credentials {
        resource: "https://mcp.example/mcp".into(),
        access_token: Some("at".into()),
        ..Credentials::default()
    };
    store.save(&c);
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
    }
    let again = FileStore::new(&path);
    assert_eq!(again.load("https://mcp.example/mcp"), Some(c));
    again.forget("https://mcp.example/mcp");
    assert_eq!(FileStore::new(&path).load("https://mcp.example/mcp"), None);
    // A file that is not JSON is taken as empty, not an error.
    std::fs::write(&path, "not json").unwrap();
    assert_eq!(FileStore::new(&path).load("x"), None);
    let _ = std::fs::remove_dir_all(dir);
}
