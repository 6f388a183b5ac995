//! `--report FILE.html` in a real headless Chromium (Debian's `chromium`, installed by
//! `tests/load_html/install.sh` when missing, as root with apt-get; without it the test fails
//! with the installer's output): the page renders its plots and numbers, and loads nothing
//! from outside. Every request Chromium makes off the page goes to a proxy this test listens
//! on, which notes the host asked for. Chromium asks Google's hosts a few things of its own
//! whatever the page (no flag stops all of them), so the hosts asked while showing the report
//! must be among those asked while showing a blank page; a control page with one external
//! image proves the proxy sees what a page loads.

use std::collections::BTreeSet;
use std::io::Read as _;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_mcpwire");

fn install() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let out = Command::new("bash").arg(root.join("tests/load_html/install.sh")).output().unwrap();
    assert!(
        out.status.success(),
        "installing chromium failed:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

fn temp(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("mcpwire-html-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

/// A proxy that notes the host of each request made through it (and answers none).
fn noting_proxy() -> (String, Arc<Mutex<BTreeSet<String>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let hosts = Arc::new(Mutex::new(BTreeSet::new()));
    let seen = hosts.clone();
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(mut c) = conn else { continue };
            let _ = c.set_read_timeout(Some(Duration::from_millis(500)));
            let mut buf = [0; 2048];
            let n = c.read(&mut buf).unwrap_or(0);
            let head = String::from_utf8_lossy(&buf[..n]);
            // `CONNECT host:443 HTTP/1.1` or `GET http://host/path HTTP/1.1`.
            let target = head.split_whitespace().nth(1).unwrap_or("?");
            let host = target.trim_start_matches("http://").split(['/', ':']).next().unwrap_or("?");
            seen.lock().unwrap().insert(host.to_owned());
        }
    });
    (addr, hosts)
}

/// The hosts asked for while Chromium shows `page` (`what`: `--dump-dom` or `--screenshot=…`),
/// and its standard output.
fn hosts_asked(page: &Path, what: &str) -> (BTreeSet<String>, String) {
    let (proxy, hosts) = noting_proxy();
    let out = chromium(page, &proxy, what);
    // Connections still arriving as Chromium exits.
    std::thread::sleep(Duration::from_millis(600));
    let hosts = hosts.lock().unwrap().clone();
    (hosts, out)
}

/// Headless Chromium on `page` with every off-page request sent to `proxy`; `what` is
/// `--dump-dom` or `--screenshot=FILE`. Returns standard output.
fn chromium(page: &Path, proxy: &str, what: &str) -> String {
    // A profile each: two Chromiums on one profile hand the page to the first (the tests of
    // this file run at once).
    static PROFILES: AtomicUsize = AtomicUsize::new(0);
    let profile = temp(&format!("profile-{}", PROFILES.fetch_add(1, Ordering::Relaxed)));
    let out = Command::new("timeout")
        .arg("120")
        .arg("chromium")
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--hide-scrollbars",
            "--window-size=900,1500",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-default-apps",
            "--disable-sync",
            "--disable-domain-reliability",
            "--virtual-time-budget=3000",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .arg(format!("--proxy-server=http://{proxy}"))
        // Loopback addresses too go to the proxy.
        .arg("--proxy-bypass-list=<-loopback>")
        .arg(what)
        .arg(format!("file://{}", page.display()))
        .output()
        .unwrap();
    assert!(out.status.success(), "chromium: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

/// `mcpwire load` of the scenario `toml` with `args`, its report written to `NAME.html`:
/// the page's path and the JSON report.
fn load(name: &str, toml: &str, args: &[&str]) -> (PathBuf, Value) {
    let scenario = temp(&format!("{name}.toml"));
    std::fs::write(&scenario, toml).unwrap();
    let page = temp(&format!("{name}.html"));
    let out = Command::new(BIN)
        .arg("load")
        .args(args)
        .arg("--json")
        .arg("--scenario")
        .arg(&scenario)
        .arg("--report")
        .arg(&page)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    (page, serde_json::from_slice(&out.stdout).unwrap())
}

#[test]
fn the_html_report_renders_in_chromium_and_loads_nothing_from_outside() {
    install();
    let (page, report) = load(
        "report",
        "[[operation]]\nmethod = \"tools/call\"\ntool = \"echo\"\nweight = 3\n\
         [[operation]]\nmethod = \"tools/list\"\n",
        &["--rate", "500", "--duration", "2.5", "--warmup", "0"],
    );

    let blank = temp("blank.html");
    std::fs::write(&blank, "<!doctype html><p>blank</p>").unwrap();
    let (chromiums_own, _) = hosts_asked(&blank, "--dump-dom");

    let (asked, dom) = hosts_asked(&page, "--dump-dom");
    assert!(
        asked.is_subset(&chromiums_own),
        "the report asked for {asked:?} (a blank page: {chromiums_own:?})"
    );
    // The plots: one curve for the total and one per operation, a bar a second.
    assert!(dom.contains(r#"<svg id="percentiles""#), "{dom}");
    assert_eq!(dom.matches(r#"class="series""#).count(), 3, "{dom}");
    let seconds = report["timeline"].as_array().unwrap().len();
    assert_eq!(dom.matches(r#"class="rps""#).count(), seconds, "{dom}");
    assert!(dom.contains(">99%<") && dom.contains(">90%<"), "{dom}");
    // The numbers, as the JSON report has them.
    let requests = report["requests"].as_u64().unwrap();
    assert!(dom.contains(&format!("<td>{requests}</td>")), "{requests}: {dom}");
    let p99 = report["latency_us"]["p99"].as_u64().unwrap() as f64 / 1000.0;
    assert!(dom.contains(&format!("{p99:.3} ms")), "{p99}: {dom}");
    for op in ["tools/call echo", "tools/list"] {
        assert!(dom.contains(&format!("<td>{op}</td>")), "{op}: {dom}");
    }
    let shot = temp("report.png");
    let (asked, _) = hosts_asked(&page, &format!("--screenshot={}", shot.display()));
    assert!(asked.is_subset(&chromiums_own), "{asked:?}");
    let png = std::fs::read(&shot).unwrap();
    assert!(png.starts_with(b"\x89PNG"), "not a PNG");
    // A blank page compresses to a few KB; plots, text and tables do not.
    assert!(png.len() > 30_000, "{} bytes", png.len());

    // The control: a page that loads one external image asks for its host.
    let control = temp("control.html");
    std::fs::write(&control, r#"<!doctype html><img src="http://192.0.2.1/x.png">"#).unwrap();
    let (asked, _) = hosts_asked(&control, "--dump-dom");
    assert!(asked.contains("192.0.2.1"), "the proxy saw {asked:?}: the check is blind");
}

/// The plots over time, rendered: each operation's p50, p90 and p99 a second, errors by kind
/// a second, and where the second stage begins, on every plot over time.
#[test]
fn the_plots_over_time_render_each_quantile_stage_and_error_kind() {
    install();
    let (page, report) = load(
        "time",
        "[[operation]]\nmethod = \"tools/call\"\ntool = \"echo\"\nweight = 4\n\
         [[operation]]\nmethod = \"tools/call\"\ntool = \"no_such_tool\"\n",
        &["--rate", "1", "--stages", "1.5s:300,1.5s:600", "--max-error-rate", "1"],
    );
    let kinds: Vec<String> = report["operations"][1]["errors_by_kind"]
        .as_object()
        .expect("the unknown tool's errors by kind")
        .keys()
        .cloned()
        .collect();
    assert!(!kinds.is_empty(), "{report}");
    let seconds = report["timeline"].as_array().unwrap();
    assert!(seconds.iter().any(|p| p["errors_by_kind"].is_object()), "{report}");
    // The seconds with successes of the echo (the run's last harvest may close a sliver with
    // none), each with its quantiles.
    let answered: Vec<&Value> = seconds
        .iter()
        .map(|p| &p["operations"][0])
        .filter(|o| o["requests"].as_u64() > o["errors"].as_u64())
        .collect();
    assert!(answered.len() >= 3, "{report}");
    assert!(
        answered.iter().all(|o| o["p90_us"].as_u64().unwrap() >= o["p50_us"].as_u64().unwrap()
            && o["p99_us"].as_u64().unwrap() >= o["p90_us"].as_u64().unwrap()
            && o["p50_us"].as_u64().unwrap() > 0)
    );

    let (_, dom) = hosts_asked(&page, "--dump-dom");
    // Latency over time comes first, a plot per operation; the failing tool has no successes,
    // so no line.
    let lead = dom.find(r#"<svg id="latency-time-0""#).expect("latency over time");
    assert!(lead < dom.find(r#"<svg id="percentiles""#).unwrap(), "{dom}");
    assert!(dom.contains(r#"<svg id="latency-time-1""#), "{dom}");
    for q in ["p50", "p90", "p99"] {
        assert_eq!(dom.matches(&format!(r#"class="lot {q}""#)).count(), 1, "{q}: {dom}");
    }
    // A point a second with successes on each line.
    let p99 = dom.split(r#"class="lot p99""#).nth(1).unwrap();
    let points = p99.split("points=\"").nth(1).unwrap().split('"').next().unwrap();
    assert_eq!(points.split(' ').count(), answered.len(), "{points}");
    for kind in &kinds {
        assert!(dom.contains(&format!(r#"class="ekind" data-name="{kind}""#)), "{kind}: {dom}");
    }
    // The second stage begins at 1.5 s: marked on the latency plots, the throughput and the
    // errors.
    assert_eq!(dom.matches(r#"class="stage""#).count(), 4, "{dom}");
}
