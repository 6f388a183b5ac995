//! `load --metrics` and `load --otlp` against the real thing.
//!
//! A real Prometheus (Debian's `prometheus`, installed by `tests/load_live/install.sh` when
//! missing, as root with apt-get; without it the test fails with the installer's output) scrapes
//! a run every 400 ms: its HTTP API then shows the counters rising while the run lasted and
//! ending at the report's numbers. An OTLP/HTTP receiver here decodes every push with the
//! official protobuf schema (`opentelemetry-proto`): periodic pushes, then a last one that
//! equals the report. And the bounds: scrapers past the connection bound, silent ones, a
//! collector that fails or never answers; none of them holds the run up.

mod load_support;
#[path = "load_live/support.rs"]
mod support;

use std::collections::BTreeMap;
use std::net::{Ipv4Addr, TcpStream};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use opentelemetry_proto::tonic::metrics::v1::{metric, number_data_point};
use serde_json::Value;

use load_support::{Served, scenario, temp};
use support::{Answer, Receiver, Run, free_port, get};

/// A mix with failures (a tool that does not exist) and requests that stay in flight (sleep).
fn mix() -> std::path::PathBuf {
    scenario(
        "live-mix.toml",
        "[[operation]]\nname = \"echo\"\nmethod = \"tools/call\"\ntool = \"echo\"\nweight = 3\n\
         [[operation]]\nname = \"nope\"\nmethod = \"tools/call\"\ntool = \"nope\"\n\
         [[operation]]\nname = \"sleep\"\nmethod = \"tools/call\"\ntool = \"sleep\"\n\
         arguments = { ms = 60 }\n",
    )
}

fn prometheus() -> &'static str {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let out = Command::new("bash").arg(root.join("tests/load_live/install.sh")).output().unwrap();
    assert!(
        out.status.success(),
        "installing prometheus failed:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    "/usr/bin/prometheus"
}

fn encode_query(q: &str) -> String {
    q.bytes()
        .map(|b| match b {
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'_' | b'.' | b'-' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// A PromQL instant query: each series' labels and value.
fn query(port: u16, q: &str) -> Vec<(BTreeMap<String, String>, f64)> {
    let (status, body) = get(port, &format!("/api/v1/query?query={}", encode_query(q)), "")
        .unwrap_or_else(|| panic!("prometheus did not answer {q}"));
    assert_eq!(status, 200, "{q}: {body}");
    let v: Value = serde_json::from_str(&body).unwrap();
    v["data"]["result"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            let labels = r["metric"]
                .as_object()
                .unwrap()
                .iter()
                .map(|(k, v)| (k.clone(), v.as_str().unwrap().to_owned()))
                .collect();
            (labels, r["value"][1].as_str().unwrap().parse().unwrap())
        })
        .collect()
}

/// The value of the one series of `q` whose `label` is `value`.
fn one(port: u16, q: &str, label: &str, value: &str) -> f64 {
    let all = query(port, q);
    let found: Vec<f64> =
        all.iter().filter(|(l, _)| l.get(label).is_some_and(|v| v == value)).map(|s| s.1).collect();
    assert_eq!(found.len(), 1, "{q} {label}={value}: {all:?}");
    found[0]
}

fn op<'a>(report: &'a Value, name: &str) -> &'a Value {
    report["operations"].as_array().unwrap().iter().find(|o| o["name"] == name).unwrap()
}

#[test]
fn prometheus_scrapes_a_live_run_and_ends_at_the_reports_numbers() {
    let bin = prometheus();
    let (metrics, web) = (free_port(), free_port());
    let dir = temp("prometheus");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let config = dir.join("prometheus.yml");
    std::fs::write(
        &config,
        format!(
            "global:\n  scrape_interval: 400ms\n  scrape_timeout: 400ms\n\
             scrape_configs:\n  - job_name: mcpwire\n    static_configs:\n      \
             - targets: ['127.0.0.1:{metrics}']\n"
        ),
    )
    .unwrap();
    let log = std::fs::File::create(dir.join("prometheus.log")).unwrap();
    let _prometheus = Served(
        Command::new(bin)
            .arg(format!("--config.file={}", config.display()))
            .arg(format!("--storage.tsdb.path={}", dir.join("data").display()))
            .arg(format!("--web.listen-address=127.0.0.1:{web}"))
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .unwrap(),
    );
    let ready = Instant::now();
    while get(web, "/-/ready", "").is_none_or(|(s, _)| s != 200) {
        assert!(ready.elapsed() < Duration::from_secs(60), "prometheus never got ready");
        std::thread::sleep(Duration::from_millis(100));
    }

    // Prometheus takes its targets in every 5 s: wait until it tried the run's address (and
    // found nothing there yet), so that it scrapes the run from its first second.
    let tried = Instant::now();
    loop {
        let (_, body) = get(web, "/api/v1/targets", "").unwrap_or_default();
        let v: Value = serde_json::from_str(&body).unwrap_or(Value::Null);
        let scraped = v["data"]["activeTargets"].as_array().is_some_and(|t| {
            t.iter().any(|t| t["lastScrape"].as_str().is_some_and(|s| !s.starts_with("0001")))
        });
        if scraped {
            break;
        }
        assert!(tried.elapsed() < Duration::from_secs(60), "prometheus never scraped: {v}");
        std::thread::sleep(Duration::from_millis(100));
    }

    let addr = format!("127.0.0.1:{metrics}");
    let mix = mix();
    let mut run = Run::start(&[
        "--scenario",
        mix.to_str().unwrap(),
        "--rate",
        "200",
        "--duration",
        "4",
        "--warmup",
        "0",
        "--metrics",
        &addr,
        "--metrics-linger",
        "10",
    ]);
    assert_eq!(
        run.err_line("mcpwire: metrics on").trim(),
        format!("mcpwire: metrics on http://{addr}/metrics")
    );
    let (code, report, err) = run.wait();
    // The errors of `nope` fail the run (no --max-error-rate); the report is whole.
    assert_eq!(code, Some(1), "{err}");
    assert!(report["requests"].as_u64().unwrap() > 400, "{report}");

    // The counters rose while the run lasted (several distinct values were scraped)…
    let changes = one(web, "changes(mcpwire_load_requests_total[5m])", "operation", "echo");
    assert!(changes >= 2.0, "the echo counter changed {changes} times in the scrapes");
    let in_flight = query(web, "max_over_time(mcpwire_load_in_flight[5m])");
    assert!(in_flight[0].1 >= 1.0, "{in_flight:?}");
    // …and ended at the report's numbers: the run's last answer to a scrape came after its
    // end. Prometheus stores a scrape once it has read it whole, which on a busy machine can
    // lag the run's exit: wait for the last value to appear before reading the rest.
    let echo = op(&report, "echo")["requests"].as_f64().unwrap();
    let stored = Instant::now();
    loop {
        let last = one(web, "last_over_time(mcpwire_load_requests_total[5m])", "operation", "echo");
        if last == echo {
            break;
        }
        if stored.elapsed() > Duration::from_secs(20) {
            let targets = get(web, "/api/v1/targets", "").unwrap_or_default().1;
            panic!("the last scrape stored read echo {last}, the report {echo}: {targets}");
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    for name in ["echo", "nope", "sleep"] {
        let o = op(&report, name);
        let requests =
            one(web, "last_over_time(mcpwire_load_requests_total[5m])", "operation", name);
        assert_eq!(requests, o["requests"].as_f64().unwrap(), "{name}");
        let ok = one(
            web,
            "last_over_time(mcpwire_load_latency_seconds_count{outcome=\"ok\"}[5m])",
            "operation",
            name,
        );
        let errors = o["errors"].as_f64().unwrap();
        assert_eq!(ok, o["requests"].as_f64().unwrap() - errors, "{name}");
        let failed = one(
            web,
            "last_over_time(mcpwire_load_latency_seconds_count{outcome=\"error\"}[5m])",
            "operation",
            name,
        );
        assert_eq!(failed, errors, "{name}");
    }
    let kinds = query(web, "last_over_time(mcpwire_load_errors_total[5m])");
    let by_kind = &op(&report, "nope")["errors_by_kind"];
    assert_eq!(kinds.len(), by_kind.as_object().unwrap().len(), "{kinds:?} vs {by_kind}");
    for (labels, n) in &kinds {
        assert_eq!(labels["operation"], "nope");
        assert_eq!(*n, by_kind[&labels["kind"]].as_f64().unwrap(), "{labels:?}");
    }
    // The histogram answers PromQL: the sleeps' median is in their bucket (50 to 100 ms).
    let p50 = one(
        web,
        "histogram_quantile(0.5, sum by (le, operation) (last_over_time(mcpwire_load_latency_seconds_bucket{outcome=\"ok\"}[5m])))",
        "operation",
        "sleep",
    );
    assert!((0.05..=0.1).contains(&p50), "the sleeps' p50 is {p50} s");
}

#[test]
fn otlp_pushes_decode_with_the_official_schema_and_end_at_the_reports_numbers() {
    let receiver = Receiver::start(Answer::Ok);
    let url = format!("http://127.0.0.1:{}", receiver.port);
    let mix = mix();
    let run = Run::start(&[
        "--scenario",
        mix.to_str().unwrap(),
        "--rate",
        "200",
        "--duration",
        "3",
        "--warmup",
        "0",
        "--otlp",
        &url,
        "--otlp-interval",
        "0.5",
    ]);
    let (code, report, err) = run.wait();
    assert_eq!(code, Some(1), "{err}");
    assert!(!err.contains("OTLP"), "{err}");
    let pushes = receiver.pushes.lock().unwrap();
    // Every half second while the run lasted, then once at its end.
    assert!(pushes.len() >= 5, "{} pushes", pushes.len());
    let mut last_echo = 0;
    for (i, p) in pushes.iter().enumerate() {
        assert_eq!(p.path, "/v1/metrics");
        assert_eq!(p.content_type, "application/x-protobuf");
        let rm = &p.request.resource_metrics[0];
        let service = &rm.resource.as_ref().unwrap().attributes[0];
        assert_eq!(service.key, "service.name");
        let metrics = &rm.scope_metrics[0].metrics;
        let Some(metric::Data::Sum(requests)) = &metrics[0].data else { panic!("{metrics:?}") };
        let echo = requests.data_points[0].value;
        let Some(number_data_point::Value::AsInt(echo)) = echo else { panic!("{echo:?}") };
        assert!(echo >= last_echo, "push {i}: the cumulative count fell");
        last_echo = echo;
    }
    let mid_run: Vec<i64> = pushes[..pushes.len() - 1]
        .iter()
        .filter_map(|p| match &p.request.resource_metrics[0].scope_metrics[0].metrics[0].data {
            Some(metric::Data::Sum(s)) => match s.data_points[0].value {
                Some(number_data_point::Value::AsInt(n)) => Some(n),
                _ => None,
            },
            _ => None,
        })
        .collect();
    assert!(mid_run.iter().any(|&n| n > 0), "no push carried counts while the run lasted");

    // The last push is the report.
    let metrics = &pushes.last().unwrap().request.resource_metrics[0].scope_metrics[0].metrics;
    let by_name = |n: &str| metrics.iter().find(|m| m.name == n).unwrap().data.clone().unwrap();
    let attr = |attrs: &[opentelemetry_proto::tonic::common::v1::KeyValue], key: &str| {
        attrs.iter().find(|kv| kv.key == key).and_then(|kv| kv.value.clone()).map(|v| {
            match v.value {
                Some(opentelemetry_proto::tonic::common::v1::any_value::Value::StringValue(s)) => s,
                other => panic!("{other:?}"),
            }
        })
    };
    let metric::Data::Sum(requests) = by_name("mcpwire.load.requests") else { panic!() };
    assert_eq!(requests.data_points.len(), 3);
    for p in &requests.data_points {
        let name = attr(&p.attributes, "operation").unwrap();
        let Some(number_data_point::Value::AsInt(n)) = p.value else { panic!() };
        assert_eq!(n, op(&report, &name)["requests"].as_i64().unwrap(), "{name}");
    }
    let metric::Data::Sum(errors) = by_name("mcpwire.load.errors") else { panic!() };
    let by_kind = &op(&report, "nope")["errors_by_kind"];
    assert_eq!(errors.data_points.len(), by_kind.as_object().unwrap().len());
    for p in &errors.data_points {
        let kind = attr(&p.attributes, "kind").unwrap();
        let Some(number_data_point::Value::AsInt(n)) = p.value else { panic!() };
        assert_eq!(n, by_kind[&kind].as_i64().unwrap(), "{kind}");
    }
    let metric::Data::Histogram(latency) = by_name("mcpwire.load.latency") else { panic!() };
    for p in &latency.data_points {
        let name = attr(&p.attributes, "operation").unwrap();
        let o = op(&report, &name);
        let errors = o["errors"].as_u64().unwrap();
        let want = match attr(&p.attributes, "outcome").as_deref() {
            Some("ok") => o["requests"].as_u64().unwrap() - errors,
            _ => errors,
        };
        assert_eq!(p.count, want, "{name}");
        assert_eq!(p.bucket_counts.iter().sum::<u64>(), p.count);
        assert_eq!(p.bucket_counts.len(), p.explicit_bounds.len() + 1);
    }
    let metric::Data::Gauge(in_flight) = by_name("mcpwire.load.in_flight") else { panic!() };
    assert_eq!(in_flight.data_points[0].value, Some(number_data_point::Value::AsInt(0)));
}

#[test]
fn a_failing_or_silent_collector_is_told_once_and_never_holds_the_run_up() {
    // A collector answering 500: told once, then counted.
    let failing = Receiver::start(Answer::Fail);
    let url = format!("http://127.0.0.1:{}/v1/metrics", failing.port);
    let args = ["--rate", "200", "--duration", "2", "--warmup", "0", "--otlp-interval", "0.5"];
    let (code, report, err) = Run::start(&[&args[..], &["--otlp", &url]].concat()).wait();
    assert_eq!(code, Some(0), "{err}");
    assert!(report["requests"].as_u64().unwrap() > 300, "{report}");
    assert_eq!(err.matches("failed: HTTP 500").count(), 1, "{err}");
    // Every push failed (one the run's end cut short reached the receiver but is not counted).
    let pushes = failing.pushes.lock().unwrap().len();
    let told = err.lines().find_map(|l| l.split_once(" OTLP pushes to ")).map(|(n, _)| n);
    let told = told.and_then(|n| n.strip_prefix("mcpwire: ")).unwrap_or_default();
    let counts: Vec<usize> = told.split(" of ").filter_map(|n| n.parse().ok()).collect();
    assert!(
        counts.len() == 2
            && counts[0] == counts[1]
            && counts[0] + 1 >= pushes
            && counts[0] <= pushes,
        "{pushes} pushes received: {err}"
    );

    // A collector that never answers: each push gives up after 5 s, the run keeps its rate and
    // ends on time, and only the last push adds to its length.
    let silent = Receiver::start(Answer::Hang);
    let url = format!("http://127.0.0.1:{}", silent.port);
    let started = Instant::now();
    let (code, report, err) = Run::start(&[&args[..], &["--otlp", &url]].concat()).wait();
    let took = started.elapsed();
    assert_eq!(code, Some(0), "{err}");
    assert!(report["requests"].as_u64().unwrap() > 300, "{report}");
    assert!(took < Duration::from_secs(2 + 5 + 3), "the run took {took:?}");
    assert!(err.contains("no answer within 5 s"), "{err}");
    // Nothing is closed: no collector on the port at all.
    let closed = format!("http://127.0.0.1:{}", free_port());
    let (code, _, err) = Run::start(&[&args[..], &["--otlp", &closed]].concat()).wait();
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(err.matches("the OTLP push to").count(), 1, "{err}");
}

#[test]
fn scrapers_past_the_bound_or_silent_never_hold_the_run_up() {
    // The flags' ranges, at their bounds and past them (exit 2 before any load).
    for (flag, ok, past) in
        [("--metrics-linger", "3600", "3601"), ("--otlp-interval", "0.1", "0.09")]
    {
        let with = if flag == "--otlp-interval" { "--otlp" } else { "--metrics" };
        let other = if with == "--otlp" { "http://127.0.0.1:9" } else { "127.0.0.1:0" };
        let help = |v: &str| {
            let out = Command::new(load_support::BIN)
                .args(["load", with, other, flag, v, "--help"])
                .output()
                .unwrap();
            out.status.code()
        };
        assert_eq!(help(ok), Some(0), "{flag} {ok}");
        assert_eq!(help(past), Some(2), "{flag} {past}");
    }
    // An address that cannot be bound fails the run before any load (exit 2).
    let taken = std::net::TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
    let busy = taken.local_addr().unwrap().to_string();
    let (code, _, err) = Run::start(&["--requests", "10", "--metrics", &busy]).wait();
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains(&format!("cannot serve metrics on {busy}")), "{err}");

    let port = free_port();
    let addr = format!("127.0.0.1:{port}");
    let mut run =
        Run::start(&["--rate", "200", "--duration", "8", "--warmup", "0", "--metrics", &addr]);
    assert_eq!(
        run.err_line("mcpwire: metrics on").trim(),
        format!("mcpwire: metrics on http://{addr}/metrics")
    );
    let (status, page) = get(port, "/metrics", "").unwrap();
    assert_eq!(status, 200);
    assert!(page.ends_with("# EOF\n"), "{page}");
    assert_eq!(get(port, "/", "").unwrap().0, 404);
    // A head within 8 KiB is read; one past it is refused.
    let head = |n: usize| format!("X-Big: {}\r\n", "a".repeat(n));
    assert_eq!(get(port, "/metrics", &head(6 << 10)).map(|r| r.0), Some(200), "a 6 KiB head");
    assert!(get(port, "/metrics", &head(16 << 10)).is_none_or(|(s, _)| s == 431), "16 KiB");

    // One silent connection short of the bound, a scraper is answered; at the bound, one more
    // is closed unanswered.
    let connect = || TcpStream::connect((Ipv4Addr::LOCALHOST, port)).unwrap();
    let mut silent: Vec<TcpStream> = (0..15).map(|_| connect()).collect();
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(get(port, "/metrics", "").map(|r| r.0), Some(200), "the 16th connection");
    silent.push(connect());
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(get(port, "/metrics", ""), None, "a scraper past the bound");
    // The silent ones are closed after 5 s without a head; then scrapes are answered again.
    std::thread::sleep(Duration::from_secs(6));
    for mut s in silent {
        s.set_read_timeout(Some(Duration::from_secs(1))).unwrap();
        let mut buf = [0; 64];
        assert!(std::io::Read::read(&mut s, &mut buf).is_ok(), "still open");
    }
    assert_eq!(get(port, "/metrics", "").map(|r| r.0), Some(200));
    let (code, report, err) = run.wait();
    assert_eq!(code, Some(0), "{err}");
    // The run kept its rate throughout.
    let sent = report["sent"].as_f64().unwrap();
    assert!(sent >= 0.95 * 200.0 * 8.0, "{report}");
}
