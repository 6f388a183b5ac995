//! OAuth 2.1 with the official SDKs' own clients, against the setup of `oidc.rs`: npm
//! `oidc-provider` as the authorization server in front of `mcpwire serve --http` over TLS as its
//! resource server. Each SDK runs the whole flow itself, in each era (legacy 2025-11-25 with
//! `initialize` and a session, then modern 2026-07-28 stateless), from nothing: the server's 401
//! and its `resource_metadata`, Protected Resource Metadata, the authorization server's metadata,
//! dynamic client registration, PKCE, the token exchange naming the resource; then it lists tools
//! and calls `echo` with the token. The scripts play the host's user agent (a browser keeping
//! cookies, stopping at the redirect URI) and trust the test CA through the environment, never
//! turning verification off:
//! - the Python SDK's `mcp.client.auth.OAuthClientProvider` on its httpx2 client
//!   (`tests/interop/python_oauth_client.py`, `SSL_CERT_FILE`);
//! - the TypeScript SDK v2 client's `OAuthClientProvider` on `StreamableHTTPClientTransport`,
//!   with `finishAuth` after the redirect (`tests/interop/ts_oauth_client.mjs`,
//!   `NODE_EXTRA_CA_CERTS`).
//!
//! Besides each script's own checks, the authorization server must have issued exactly one
//! authorization_code grant per era, each naming the MCP server's URL as the resource.

use std::process::Command;
use std::time::Duration;

use crate::harness::{
    RUN_TIMEOUT, ensure_installed, node_modern_prefix, node22, run_bounded, venv_python,
};
use crate::oidc::{authorization_server, grants, protected_server};
use crate::tls::Pki;

/// Runs the script `client` builds (given the MCP URL, the issuer and the test CA) against a
/// fresh authorization server and resource server, and checks the grants it caused.
fn sdk_flow(name: &str, client: impl FnOnce(&str, &str, &str) -> Command) {
    ensure_installed();
    // Tokens outlive the run: only the authorization code grants are expected.
    let (mut auth, issuer) = authorization_server("3600");
    let pki = Pki::new(name, &["localhost", "127.0.0.1"]);
    let (mut mcp, url) = protected_server(&issuer, &pki);
    let run = run_bounded(client(&url, &issuer, pki.ca.to_str().unwrap()), RUN_TIMEOUT);
    let report = format!("{}\n{}\n{}", run.describe(name), auth.describe(), mcp.describe());
    println!("{report}");
    assert!(run.success(), "{report}");
    let code = ("authorization_code".to_owned(), url.clone());
    assert_eq!(grants(&auth), [code.clone(), code], "one grant per era\n{report}");
    mcp.assert_terminates(Duration::from_secs(10));
    auth.assert_terminates(Duration::from_secs(10));
}

#[test]
fn python_sdk_oauth_client_through_oidc_provider_in_both_eras() {
    sdk_flow("python_oauth_client.py", |url, issuer, ca| {
        let mut cmd = Command::new(venv_python());
        cmd.arg("tests/interop/python_oauth_client.py")
            .args(["--url", url, "--issuer", issuer, "--modes", "legacy,2026-07-28"])
            .env("SSL_CERT_FILE", ca)
            .env_remove("SSL_CERT_DIR");
        cmd
    });
}

#[test]
fn ts_sdk_v2_oauth_client_through_oidc_provider_in_both_eras() {
    sdk_flow("ts_oauth_client.mjs", |url, issuer, ca| {
        let mut cmd = Command::new(node22());
        cmd.arg("tests/interop/ts_oauth_client.mjs")
            .arg("--packages")
            .arg(node_modern_prefix())
            .args(["--url", url, "--issuer", issuer, "--modes", "legacy,pin"])
            .env("NODE_EXTRA_CA_CERTS", ca);
        cmd
    });
}
