//! Scale past one machine: three `mcpwire serve --http` behind HAProxy (Debian's package,
//! round-robin, no stickiness), and `mcpwire load --protocol-version 2026-07-28` through it.
//! Stateless requests may land on any instance: the run has no error and every backend serves
//! a share of it (HAProxy's own per-server counters say so).
//!
//! The legacy era needs sticky routing: its session lives in one instance, so the same run at
//! 2025-11-25 through the same balancer fails (requests of a session reach instances that never
//! saw its `initialize`: 404, "Session not found"); the test checks that too, so the README's
//! claim stays true.
//!
//! HAProxy is installed by `tests/scale/install.sh` when missing (as root, with apt-get); without
//! it the test fails with the installer's output.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_mcpwire");

/// Kills the process when dropped.
struct Running(Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn haproxy() -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let out = Command::new("bash").arg(root.join("tests/scale/install.sh")).output().unwrap();
    assert!(
        out.status.success(),
        "installing haproxy failed:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    ["/usr/sbin/haproxy", "/usr/bin/haproxy"]
        .into_iter()
        .map(PathBuf::from)
        .find(|p| p.exists())
        .expect("haproxy installed")
}

fn free_port() -> u16 {
    TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).unwrap().local_addr().unwrap().port()
}

/// `mcpwire serve --http 127.0.0.1:0`, and the address it announces.
fn serve() -> (Running, SocketAddr) {
    let mut child = Command::new(BIN)
        .args(["serve", "--http", "127.0.0.1:0"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stderr.take().unwrap()).read_line(&mut line).unwrap();
    let url = line.trim().strip_prefix("mcpwire: serving MCP on http://").unwrap_or_else(|| {
        panic!("unexpected announce line: {line:?}");
    });
    let addr = url.trim_end_matches("/mcp").parse().unwrap();
    (Running(child), addr)
}

/// HAProxy's statistics as CSV rows of the `mcp` backend's servers: (name, requests served).
fn served_by_backend(stats: u16) -> Vec<(String, u64)> {
    let mut s = TcpStream::connect((Ipv4Addr::LOCALHOST, stats)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    write!(s, "GET /stats;csv HTTP/1.0\r\nHost: x\r\n\r\n").unwrap();
    let mut text = String::new();
    s.read_to_string(&mut text).unwrap();
    let (head, mut rest) = text.split_once("\r\n\r\n").unwrap_or_default();
    // HAProxy answers with a chunked body.
    let mut body = String::new();
    if head.to_ascii_lowercase().contains("transfer-encoding: chunked") {
        while let Some((size, after)) = rest.split_once("\r\n") {
            let size = usize::from_str_radix(size.trim(), 16).unwrap_or(0);
            if size == 0 || after.len() < size {
                break;
            }
            body.push_str(&after[..size]);
            rest = after[size..].trim_start_matches("\r\n");
        }
    } else {
        body.push_str(rest);
    }
    let mut lines = body.lines();
    let header: Vec<&str> =
        lines.next().unwrap_or_default().trim_start_matches("# ").split(',').collect();
    let col = |name: &str| header.iter().position(|h| *h == name).unwrap();
    let (px, sv, total) = (col("pxname"), col("svname"), col("hrsp_2xx"));
    lines
        .map(|l| l.split(',').collect::<Vec<_>>())
        .filter(|f| f.len() > total && f[px] == "mcp" && f[sv].starts_with("serve"))
        .map(|f| (f[sv].to_owned(), f[total].parse().unwrap_or(0)))
        .collect()
}

fn load(front: u16, version: &str, requests: u64) -> (std::process::Output, Value) {
    let target = format!("http://127.0.0.1:{front}/mcp");
    let out = Command::new(BIN)
        .args(["load", "--target", &target, "--protocol-version", version])
        .args(["--requests", &requests.to_string(), "--concurrency", "16", "--warmup", "0"])
        .args(["--timeout", "20", "--json"])
        .output()
        .unwrap();
    let report = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
    (out, report)
}

#[test]
fn stateless_requests_spread_over_three_instances_behind_haproxy() {
    let haproxy = haproxy();
    let backends: Vec<(Running, SocketAddr)> = (0..3).map(|_| serve()).collect();
    let (front, stats) = (free_port(), free_port());
    let dir = std::env::temp_dir().join(format!("mcpwire-scale-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let servers: String = backends
        .iter()
        .enumerate()
        .map(|(i, (_, a))| format!("    server serve{i} {a}\n"))
        .collect();
    // Round-robin per request, no stickiness of any kind; HAProxy may reuse its connections to
    // the backends across client connections (http-reuse always), as a gateway would.
    let config = format!(
        "global\n    maxconn 1024\n\
         defaults\n    mode http\n    timeout connect 5s\n    timeout client 30s\n    timeout server 30s\n\
         frontend front\n    bind 127.0.0.1:{front}\n    default_backend mcp\n\
         frontend stats\n    bind 127.0.0.1:{stats}\n    stats enable\n    stats uri /stats\n\
         backend mcp\n    balance roundrobin\n    http-reuse always\n{servers}"
    );
    let cfg = dir.join("haproxy.cfg");
    std::fs::write(&cfg, config).unwrap();
    let check = Command::new(&haproxy).arg("-c").arg("-f").arg(&cfg).output().unwrap();
    assert!(check.status.success(), "haproxy -c: {}", String::from_utf8_lossy(&check.stderr));
    let proxy = Command::new(&haproxy)
        .arg("-db")
        .arg("-f")
        .arg(&cfg)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let _proxy = Running(proxy);
    let started = Instant::now();
    while TcpStream::connect((Ipv4Addr::LOCALHOST, front)).is_err() {
        assert!(started.elapsed() < Duration::from_secs(10), "haproxy did not start listening");
        std::thread::sleep(Duration::from_millis(50));
    }

    const N: u64 = 3_000;
    let (out, report) = load(front, "2026-07-28", N);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{report} {stderr}");
    assert_eq!(report["requests"], N, "{report}");
    assert_eq!(report["errors"], 0, "{report}");
    let served = served_by_backend(stats);
    assert_eq!(served.len(), 3, "{served:?}");
    let total: u64 = served.iter().map(|(_, n)| n).sum();
    assert!(total >= N, "{served:?}");
    for (name, n) in &served {
        // Round-robin: each gets about a third; a quarter is the floor allowed.
        assert!(*n >= N / 4, "{name} served {n} of {total}: {served:?}");
    }
    eprintln!("stateless through haproxy: {N} requests, per backend {served:?}, {report}");

    // The legacy era through the same balancer: its session lives on one instance.
    let (out, report) = load(front, "2025-11-25", 300);
    let failed = out.status.code() != Some(0) || report["errors"].as_u64().unwrap_or(1) > 0;
    assert!(failed, "legacy sessions worked without sticky routing: {report}");
    let _ = std::fs::remove_dir_all(&dir);
}
