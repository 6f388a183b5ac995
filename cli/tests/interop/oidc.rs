//! OAuth 2.1 end to end against a real authorization server: npm `oidc-provider` (OpenID
//! Certified), configured by `tests/oauth/oidc_provider.mjs`, in front of `mcpwire serve --http`
//! over TLS (certificates made by the test) as its resource server (`--auth-issuer`,
//! `--auth-jwks`, `--auth-scope`). `mcpwire login` runs the whole flow headless (metadata
//! discovery, dynamic registration, PKCE, consent, `iss`, the resource indicator), and `mcpwire
//! load` uses the kept tokens in both eras and refreshes them as they expire, every refresh
//! naming the resource.

use std::process::Command;
use std::time::{Duration, Instant};

use crate::harness::{
    ANNOUNCE_PREFIX, ANNOUNCE_TIMEOUT, BIN, RUN_TIMEOUT, Server, ensure_installed, interop_dir,
    node22, root, run_bounded, tail_text,
};
use crate::tls::Pki;

/// The access tokens' life: a few seconds, so that a short run refreshes several times.
const TOKEN_TTL_SECONDS: &str = "4";

/// The authorization server, its access tokens living `token_ttl` seconds, and the issuer it
/// announced on its first stdout line.
pub(crate) fn authorization_server(token_ttl: &str) -> (Server, String) {
    let mut cmd = Command::new(node22());
    cmd.arg(root().join("tests/oauth/oidc_provider.mjs"))
        .arg("--packages")
        .arg(interop_dir().join("oidc"))
        .args(["--access-token-ttl", token_ttl]);
    let mut server = Server::start(cmd, "oidc-provider");
    let deadline = Instant::now() + ANNOUNCE_TIMEOUT;
    loop {
        let first = server.stdout.lock().unwrap().front().cloned();
        if let Some(line) = first {
            let v: serde_json::Value = serde_json::from_str(&line)
                .unwrap_or_else(|e| panic!("{line}: {e}\n{}", server.describe()));
            let issuer = v["issuer"].as_str().expect("an issuer").to_owned();
            return (server, issuer);
        }
        assert!(Instant::now() < deadline, "oidc-provider did not start\n{}", server.describe());
        assert!(server.exited().is_none(), "oidc-provider exited\n{}", server.describe());
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The `{"event": "grant", ...}` lines the authorization server printed: each grant type, and
/// the resource it named.
pub(crate) fn grants(server: &Server) -> Vec<(String, String)> {
    tail_text(&server.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|v| v["event"] == "grant")
        .map(|v| {
            let s = |k: &str| v[k].as_str().unwrap_or_default().to_owned();
            (s("grant_type"), s("resource"))
        })
        .collect()
}

/// `mcpwire serve --http` over TLS with `pki`'s certificate, the resource server of `issuer`
/// (its JWKS, the scope `mcp`), and the URL it announced (`https://127.0.0.1:PORT/mcp`).
pub(crate) fn protected_server(issuer: &str, pki: &Pki) -> (Server, String) {
    let jwks = format!("{issuer}/jwks");
    let mut serve = Command::new(BIN);
    serve
        .args(["serve", "--http", "127.0.0.1:0", "--tls-cert"])
        .arg(&pki.cert)
        .arg("--tls-key")
        .arg(&pki.key)
        .args(["--auth-issuer", issuer, "--auth-jwks", &jwks, "--auth-scope", "mcp"]);
    let mut mcp = Server::start(serve, "mcpwire serve --http --tls --auth-*");
    let url = mcp
        .wait_for_stderr(ANNOUNCE_TIMEOUT, |l| l.strip_prefix(ANNOUNCE_PREFIX).map(str::to_owned))
        .unwrap_or_else(|why| panic!("no announce line: {why}\n{}", mcp.describe()));
    assert!(url.starts_with("https://127.0.0.1:") && url.ends_with("/mcp"), "{url}");
    (mcp, url)
}

#[test]
fn login_and_load_through_oidc_provider_with_refresh_in_both_eras() {
    ensure_installed();
    let (mut auth, issuer) = authorization_server(TOKEN_TTL_SECONDS);
    let pki = Pki::new("oidc", &["localhost", "127.0.0.1"]);
    let (mut mcp, url) = protected_server(&issuer, &pki);
    let ca = pki.ca.to_str().unwrap().to_owned();
    let tokens = pki.dir.join("tokens.json");
    let token_file = tokens.to_str().unwrap().to_owned();
    let reach = ["--cacert", ca.as_str(), "--oauth-token-file", token_file.as_str()];

    // Without a token the server refuses, pointing at its metadata.
    let mut load = Command::new(BIN);
    load.args(["load", "--target", &url, "--cacert", &ca, "--requests", "1"]);
    let refused = run_bounded(load, RUN_TIMEOUT);
    assert!(!refused.success(), "{}", refused.describe("load without a token"));
    assert!(refused.stderr.contains("401"), "{}", refused.describe("load without a token"));

    let mut login = Command::new(BIN);
    login.args(["login", &url, "--oauth-headless"]).args(reach);
    let run = run_bounded(login, RUN_TIMEOUT);
    let report = format!("{}\n{}\n{}", run.describe("login"), auth.describe(), mcp.describe());
    assert!(run.success(), "{report}");
    assert_eq!(grants(&auth), [("authorization_code".to_owned(), url.clone())], "{report}");

    for version in ["2026-07-28", "2025-11-25"] {
        let before = grants(&auth).len();
        let mut load = Command::new(BIN);
        load.args(["load", "--target", &url, "--oauth", "--protocol-version", version])
            .args(reach)
            .args(["--rate", "40", "--duration", "6", "--warmup", "0", "--json"]);
        let run = run_bounded(load, RUN_TIMEOUT);
        let report = format!("{}\n{}\n{}", run.describe("load"), auth.describe(), mcp.describe());
        assert!(run.success(), "{version}: {report}");
        let r: serde_json::Value = serde_json::from_str(&run.stdout).unwrap_or_default();
        assert_eq!(r["errors"], 0, "{version}: {report}");
        assert!(r["requests"].as_u64().unwrap_or(0) >= 150, "{version}: {report}");
        let new = &grants(&auth)[before..];
        assert!(!new.is_empty(), "{version}: no refresh over 6 s of 4 s tokens\n{report}");
        for (grant, resource) in new {
            assert_eq!(grant, "refresh_token", "{version}: {report}");
            assert_eq!(resource, &url, "{version}: every refresh names the resource\n{report}");
        }
    }
    mcp.assert_terminates(Duration::from_secs(10));
    auth.assert_terminates(Duration::from_secs(10));
}
