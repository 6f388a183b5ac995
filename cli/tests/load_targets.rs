//! `mcpwire load` against every target kind in both eras, and what it sends: scenario mixes,
//! `load init`, every scenario method against the official reference server, and the official
//! Python SDK's server. (Load models, budgets and logs: tests/load_cli.rs.)

#[path = "installs/mod.rs"]
mod installs;
mod load_support;
#[path = "../../tests/common/tls.rs"]
mod tls;

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Command, Stdio};

use load_support::{BIN, Served, load, scenario, serve_on, stderr, temp};

/// Every target kind, both eras, under the open loop: every request answered and counted.
#[test]
fn the_open_loop_drives_every_target_kind_in_both_eras() {
    let (tcp, tcp_addr) = serve_on(&["--tcp", "127.0.0.1:0"]);
    let sock = temp("serve.sock");
    let _ = std::fs::remove_file(&sock);
    let (unix, _) = serve_on(&["--unix", sock.to_str().unwrap()]);
    let (http, url) = serve_on(&["--http", "127.0.0.1:0"]);
    let targets = [
        "embedded".to_owned(),
        format!("stdio:{BIN} serve"),
        tcp_addr,
        format!("unix:{}", sock.display()),
        url,
    ];
    for target in &targets {
        for (version, era) in [("2026-07-28", "modern"), ("2025-11-25", "legacy")] {
            let (out, r) = load(&[
                "--target",
                target,
                "--protocol-version",
                version,
                "--rate",
                "400",
                "--requests",
                "200",
                "--warmup",
                "0",
            ]);
            assert_eq!(out.status.code(), Some(0), "{target} {version}: {r} {}", stderr(&out));
            assert_eq!(r["requests"], 200, "{target} {version}: {r}");
            assert_eq!(r["errors"], 0, "{target} {version}: {r}");
            assert_eq!(r["era"], era, "{target}: {r}");
            assert_eq!(r["operations"][0]["requests"], 200, "{r}");
            assert!(r["bytes_received"].as_u64().unwrap() > 0);
            // The generator's own CPU time: apart from the server's, unless the server is the
            // embedded one, in the same process.
            let cpu = &r["cpu"];
            assert!(cpu["us_per_request"].as_f64().is_some_and(|us| us > 0.0), "{r}");
            assert_eq!(cpu["includes_server"], *target == "embedded", "{r}");
        }
    }
    for c in [tcp, unix, http] {
        drop(c);
    }
}

/// `--http2`: HTTP/2 with prior knowledge to `serve --http` (which takes both on one port), in
/// both eras, every request answered, and the report says which HTTP it spoke; a target that is
/// not `http://` is refused before anything is sent.
#[test]
fn http2_with_prior_knowledge_drives_serve_in_both_eras() {
    let (http, url) = serve_on(&["--http", "127.0.0.1:0"]);
    for (version, era) in [("2026-07-28", "modern"), ("2025-11-25", "legacy")] {
        for (flag, want) in [(Some("--http2"), "2"), (None, "1.1")] {
            let mut args = vec!["--target", url.as_str(), "--protocol-version", version];
            args.extend(["--concurrency", "16", "--requests", "400", "--warmup", "0"]);
            args.extend(flag);
            let (out, r) = load(&args);
            assert_eq!(out.status.code(), Some(0), "{version} {flag:?}: {r} {}", stderr(&out));
            assert_eq!(r["requests"], 400, "{r}");
            assert_eq!(r["errors"], 0, "{r}");
            assert_eq!(r["era"], era, "{r}");
            assert_eq!(r["http_version"], want, "{r}");
        }
    }
    drop(http);
    let out = Command::new(BIN)
        .args(["load", "--target", "tcp:127.0.0.1:9", "--http2", "--requests", "1"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let said = stderr(&out);
    assert!(said.contains("--http2 needs an http:// or https:// target"), "{said}");
}

/// `https://`: `serve --http --tls-cert --tls-key` driven by `load` trusting the test's CA
/// (`--cacert`), with a header whose value comes from the environment, in both eras, by ALPN
/// and HTTP/2 alone; without the CA the run fails and says why; skipping verification works and
/// says so; SIGHUP reloads the certificate.
#[test]
fn https_drives_serve_with_tls_in_both_eras() {
    let pki = tls::Pki::new("load", &["localhost", "127.0.0.1"]);
    let (cert, key, ca) =
        (pki.cert.to_str().unwrap(), pki.key.to_str().unwrap(), pki.ca.to_str().unwrap());
    // Files looked at only on SIGHUP here (the renewal below must come from the signal).
    let (http, url) = serve_on(&[
        "--http",
        "127.0.0.1:0",
        "--tls-cert",
        cert,
        "--tls-key",
        key,
        "--tls-watch",
        "0",
    ]);
    assert!(url.starts_with("https://127.0.0.1:"), "{url}");
    for (version, era) in [("2026-07-28", "modern"), ("2025-11-25", "legacy")] {
        for (flag, want) in [(Some("--http2"), "2"), (None, "2|1.1 by ALPN")] {
            let mut args = vec!["--target", url.as_str(), "--protocol-version", version];
            args.extend([
                "--cacert",
                ca,
                "--header",
                "Authorization: Bearer ${MCPWIRE_TEST_TOKEN}",
            ]);
            args.extend(["--concurrency", "8", "--requests", "200", "--warmup", "0"]);
            args.extend(flag);
            let out = Command::new(BIN)
                .arg("load")
                .args(&args)
                .arg("--json")
                .env("MCPWIRE_TEST_TOKEN", "t0ken")
                .output()
                .unwrap();
            let r: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_default();
            assert_eq!(out.status.code(), Some(0), "{version} {flag:?}: {r} {}", stderr(&out));
            assert_eq!(r["requests"], 200, "{r}");
            assert_eq!(r["errors"], 0, "{r}");
            assert_eq!(r["era"], era, "{r}");
            assert_eq!(r["http_version"], want, "{r}");
        }
    }
    // The webpki roots do not hold the test's CA: the run fails, and says why.
    let (out, _) = load(&["--target", &url, "--requests", "1", "--protocol-version", "2026-07-28"]);
    assert_ne!(out.status.code(), Some(0));
    assert!(stderr(&out).contains("UnknownIssuer"), "{}", stderr(&out));
    // A variable that is not set is refused before anything is sent, its name said.
    let (out, _) = load(&["--target", &url, "--header", "Authorization: ${MCPWIRE_NO_SUCH_VAR}"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("${MCPWIRE_NO_SUCH_VAR} is not set"), "{}", stderr(&out));
    // Skipping verification: works, and says so.
    let (out, r) = load(&["--target", &url, "--insecure-skip-tls-verify", "--requests", "20"]);
    assert_eq!(out.status.code(), Some(0), "{r} {}", stderr(&out));
    assert!(stderr(&out).contains("NOT checked"), "{}", stderr(&out));

    // `Ok` once a load trusting the CA's file succeeds at `url`, within 100 tries 50 ms apart;
    // else the last try's stderr.
    let trusted_soon = |url: &str| {
        let mut last = String::new();
        for _ in 0..100 {
            let args = [
                "--target",
                url,
                "--cacert",
                ca,
                "--requests",
                "5",
                "--protocol-version",
                "2026-07-28",
            ];
            let (out, _) = load(&args);
            if out.status.code() == Some(0) {
                return Ok(());
            }
            last = stderr(&out);
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        Err(last)
    };

    // A renewal, read on SIGHUP: the new CA is trusted from then on.
    pki.issue("load-2", &["localhost", "127.0.0.1"]);
    let pid = http.0.id().to_string();
    assert!(Command::new("kill").args(["-HUP", &pid]).status().unwrap().success());
    if let Err(last) = trusted_soon(&url) {
        panic!("the renewed certificate was not served after SIGHUP: {last}");
    }
    drop(http);

    // Watched files: a renewal is served without a signal.
    let (watched, url) = serve_on(&[
        "--http",
        "127.0.0.1:0",
        "--tls-cert",
        cert,
        "--tls-key",
        key,
        "--tls-watch",
        "0.1",
    ]);
    pki.issue("load-3", &["localhost", "127.0.0.1"]);
    if let Err(last) = trusted_soon(&url) {
        panic!("the renewed certificate was not served once its files changed: {last}");
    }
    drop(watched);
}

/// `--oauth`: `mcpwire login` runs the flow once (headless, against a protected server and its
/// authorization server made by hand) and keeps the tokens in an owner-only file; `load
/// --oauth` then uses them without authorizing again, and refreshes them as they expire.
#[test]
fn login_then_load_with_oauth_uses_and_refreshes_the_kept_tokens() {
    let dir = temp("oauth");
    std::fs::create_dir_all(&dir).unwrap();
    let grants = dir.join("grants.log");
    let tokens = dir.join("tokens.json");
    let _ = std::fs::remove_file(&grants);
    let _ = std::fs::remove_file(&tokens);
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/oauth/fake_server.py");
    let mut fake = Command::new("python3")
        .arg(&script)
        .env("GRANT_LOG", &grants)
        .env("EXPIRES_IN", "2")
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(fake.stdout.take().unwrap()).read_line(&mut line).unwrap();
    let fake = Served(fake);
    let url = line.trim().to_owned();
    let oauth = ["--oauth-headless", "--oauth-token-file", tokens.to_str().unwrap()];
    let grants_now = || std::fs::read_to_string(&grants).unwrap_or_default();

    // Without --oauth: refused, and nothing authorized.
    let (out, _) = load(&["--target", &url, "--requests", "1", "--protocol-version", "2026-07-28"]);
    assert_ne!(out.status.code(), Some(0));
    assert!(stderr(&out).contains("401"), "{}", stderr(&out));

    let out = Command::new(BIN)
        .args(["login", &url, "--protocol-version", "2026-07-28"])
        .args(oauth)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stderr(&out).contains("tokens kept in"), "{}", stderr(&out));
    assert_eq!(grants_now(), "authorization_code\n");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        let mode = std::fs::metadata(&tokens).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
    }

    // The kept token is used, and refreshed once half its 2 s life is gone.
    let mut args = vec!["--target", url.as_str(), "--oauth", "--protocol-version", "2026-07-28"];
    args.extend(["--rate", "50", "--duration", "3", "--warmup", "0"]);
    args.extend(oauth);
    let (out, r) = load(&args);
    assert_eq!(out.status.code(), Some(0), "{r} {}", stderr(&out));
    assert_eq!(r["errors"], 0, "{r}");
    let seen = grants_now();
    assert_eq!(seen.lines().filter(|g| *g == "authorization_code").count(), 1, "{seen}");
    assert!(seen.lines().any(|g| g == "refresh_token"), "{seen}");
    drop(fake);
}

/// A weighted mix: each operation gets exactly its share of `--requests`, and its own row.
#[test]
fn a_scenario_sends_its_exact_mix_and_reports_each_operation() {
    let path = scenario(
        "mix.toml",
        r#"
        [[operation]]
        method = "tools/call"
        tool = "echo"
        weight = 2
        [[operation]]
        method = "tools/call"
        tool = "sleep"
        arguments = { ms = 1 }
        expect_text = "slept 1"
        [[operation]]
        method = "tools/list"
        "#,
    );
    let p = path.to_str().unwrap();
    let (out, r) =
        load(&["--scenario", p, "--requests", "400", "--warmup", "0", "--concurrency", "8"]);
    assert_eq!(out.status.code(), Some(0), "{r} {}", stderr(&out));
    let ops = r["operations"].as_array().unwrap();
    let count = |name: &str| ops.iter().find(|o| o["name"] == name).unwrap()["requests"].clone();
    assert_eq!(count("tools/call echo"), 200, "{r}");
    assert_eq!(count("tools/call sleep"), 100, "{r}");
    assert_eq!(count("tools/list"), 100, "{r}");
    assert_eq!(r["errors"], 0, "{r}");
    assert!(r["method"].as_str().unwrap().starts_with("scenario"), "{r}");

    // A check that fails is counted by kind on its operation.
    let wrong = scenario(
        "wrong.toml",
        "[[operation]]\nmethod = \"tools/call\"\ntool = \"sleep\"\narguments = { ms = 0 }\nexpect_text = \"slept 9\"\n",
    );
    let (out, r) =
        load(&["--scenario", wrong.to_str().unwrap(), "--requests", "20", "--warmup", "0"]);
    assert_eq!(out.status.code(), Some(1), "{r}");
    assert_eq!(r["operations"][0]["errors_by_kind"]["unexpected_result"], 20, "{r}");

    // `ping` in the legacy era, in a mix.
    let ping = scenario(
        "ping.toml",
        "[[operation]]\nmethod = \"ping\"\n[[operation]]\nmethod = \"tools/list\"\n",
    );
    let (out, r) =
        load(&["--scenario", ping.to_str().unwrap(), "--requests", "100", "--warmup", "0"]);
    assert_eq!(out.status.code(), Some(0), "{r} {}", stderr(&out));
    assert_eq!(r["era"], "legacy");
    assert_eq!(r["operations"][0]["requests"], 50);

    // A bad scenario is refused before any load, naming the file and the problem.
    let bad = scenario("bad.toml", "[[operation]]\nmethod = \"resources/read\"\n");
    let (out, _) = load(&["--scenario", bad.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("needs `uri`"), "{}", stderr(&out));
}

/// `load init` writes a scenario that `--scenario` runs: every tool, its arguments from its
/// schema. `confirm` needs the client's input (elicitation), which `load` does not give.
#[test]
fn load_init_writes_a_scenario_that_runs() {
    let out = Command::new(BIN).args(["load", "init", "embedded"]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = String::from_utf8(out.stdout).unwrap();
    for tool in ["echo", "sleep", "route", "confirm"] {
        assert!(text.contains(&format!("tool = \"{tool}\"")), "{text}");
    }
    let path = scenario("init.toml", &text);
    let (out, r) =
        load(&["--scenario", path.to_str().unwrap(), "--requests", "50", "--warmup", "0"]);
    assert_eq!(out.status.code(), Some(1), "{r}");
    for op in r["operations"].as_array().unwrap() {
        let expect =
            if op["name"] == "tools/call confirm" { op["requests"].clone() } else { 0.into() };
        assert_eq!(op["errors"], expect, "{op}");
    }
    assert_eq!(r["errors"], 10, "{r}");
}

/// The official Python SDK's server (tests/interop/python_server.py, installed by
/// tests/interop/install.sh): the open loop in both eras over stdio and over Streamable HTTP,
/// and a scenario `load init` wrote from its tools.
#[test]
fn the_python_sdk_server_under_the_open_loop_and_its_own_scenario() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let install = Command::new("bash").arg(root.join("tests/interop/install.sh")).output().unwrap();
    assert!(install.status.success(), "{}", stderr(&install));
    let python = installs::interop_dir().join("venv/bin/python");
    let script = root.join("tests/interop/python_server.py");
    let stdio = format!("stdio:{} {}", python.display(), script.display());
    for version in ["2026-07-28", "2025-11-25"] {
        let (out, r) = load(&[
            "--target",
            &stdio,
            "--protocol-version",
            version,
            "--rate",
            "200",
            "--requests",
            "200",
            "--warmup",
            "0",
        ]);
        assert_eq!(out.status.code(), Some(0), "{version}: {r} {}", stderr(&out));
        assert_eq!((r["requests"].as_u64(), r["errors"].as_u64()), (Some(200), Some(0)), "{r}");
    }

    let init = Command::new(BIN).args(["load", "init", &stdio]).output().unwrap();
    assert_eq!(init.status.code(), Some(0), "{}", stderr(&init));
    let path = scenario("python.toml", &String::from_utf8(init.stdout).unwrap());
    let (out, r) = load(&[
        "--target",
        &stdio,
        "--scenario",
        path.to_str().unwrap(),
        "--rate",
        "200",
        "--requests",
        "200",
        "--warmup",
        "0",
    ]);
    assert_eq!(out.status.code(), Some(0), "{r} {}", stderr(&out));
    assert!(r["operations"].as_array().unwrap().len() >= 2, "{r}");

    let mut server = Served(
        Command::new(&python)
            .arg(&script)
            .arg("--http")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
    );
    let mut err = BufReader::new(server.0.stderr.take().unwrap());
    let url = loop {
        let mut line = String::new();
        assert!(err.read_line(&mut line).unwrap() > 0, "the Python server exited");
        if let Some(url) = line.trim().strip_prefix("python-server: serving MCP on ") {
            break url.to_owned();
        }
    };
    // Keep reading its log, so it never blocks on a full pipe.
    std::thread::spawn(move || std::io::copy(&mut err, &mut std::io::sink()));
    let (out, r) = load(&["--target", &url, "--rate", "200", "--requests", "200", "--warmup", "0"]);
    drop(server);
    assert_eq!(out.status.code(), Some(0), "{r} {}", stderr(&out));
    assert_eq!((r["requests"].as_u64(), r["errors"].as_u64()), (Some(200), Some(0)), "{r}");
    assert_eq!(r["era"], "modern", "{r}");
}

/// Every method a scenario sends, against the official reference server
/// (`@modelcontextprotocol/server-everything`, installed by tests/interop/install.sh), which
/// serves resources, prompts and completions too; each with its own expected-result check.
#[test]
fn every_scenario_method_against_the_reference_server() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let install = Command::new("bash").arg(root.join("tests/interop/install.sh")).output().unwrap();
    assert!(install.status.success(), "{}", stderr(&install));
    let se = installs::interop_dir()
        .join("node/node_modules/@modelcontextprotocol/server-everything/dist/index.js");
    let target = format!("stdio:node {} stdio", se.display());
    let mix = |completion: &str| {
        scenario(
            "everything.toml",
            &format!(
                r#"
                [[operation]]
                method = "resources/read"
                uri = "demo://resource/static/document/architecture.md"
                expect_text = "architecture"
                [[operation]]
                method = "prompts/get"
                prompt = "args-prompt"
                arguments = {{ city = "Paris" }}
                expect_text = "Paris"
                [[operation]]
                name = "complete"
                method = "completion/complete"
                ref = {{ type = "ref/prompt", name = "completable-prompt" }}
                argument = {{ name = "department", value = "E" }}
                expect_text = "{completion}"
                [[operation]]
                method = "ping"
                [[operation]]
                method = "tools/list"
                [[operation]]
                method = "tools/call"
                tool = "echo"
                "#
            ),
        )
    };
    let run = |path: PathBuf| {
        let p = path.to_str().unwrap().to_owned();
        load(&[
            "--target",
            &target,
            "--scenario",
            &p,
            "--rate",
            "300",
            "--requests",
            "120",
            "--warmup",
            "0",
        ])
    };
    let (out, r) = run(mix("Engineering"));
    assert_eq!(out.status.code(), Some(0), "{r} {}", stderr(&out));
    assert_eq!(r["era"], "legacy", "{r}");
    let ops = r["operations"].as_array().unwrap();
    assert_eq!(ops.len(), 6);
    assert!(ops.iter().all(|o| o["requests"] == 20 && o["errors"] == 0), "{r}");
    // A completion without the value expected is counted against that operation alone.
    let (out, r) = run(mix("Nowhere"));
    assert_eq!(out.status.code(), Some(1), "{r}");
    let complete = r["operations"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["name"] == "complete")
        .unwrap()
        .clone();
    assert_eq!(complete["errors_by_kind"]["unexpected_result"], 20, "{r}");
    assert_eq!(r["errors"], 20, "{r}");

    // `load init` lists its resources and prompts too.
    let init = Command::new(BIN).args(["load", "init", &target]).output().unwrap();
    assert_eq!(init.status.code(), Some(0), "{}", stderr(&init));
    let text = String::from_utf8(init.stdout).unwrap();
    assert!(text.contains("uri = \"demo://resource/static/document/architecture.md\""), "{text}");
    assert!(text.contains("prompt = \"args-prompt\""), "{text}");
    assert!(text.contains("city = \"example\""), "{text}");
}
