//! Helpers of tests/load_live.rs: a `load` run watched while it lasts (its announce line read
//! from standard error), plain HTTP requests, and an OTLP/HTTP receiver that decodes what it is
//! sent with the official protobuf schema (`opentelemetry-proto`).

use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::net::{Ipv4Addr, TcpListener, TcpStream};
use std::process::{Child, ChildStderr, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt as _, Full, Limited};
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use opentelemetry_proto::tonic::collector::metrics::v1::ExportMetricsServiceRequest;
use prost::Message as _;
use serde_json::Value;

use crate::load_support::BIN;

pub fn free_port() -> u16 {
    TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).unwrap().local_addr().unwrap().port()
}

/// A `load --json` run in the background, killed when dropped.
pub struct Run {
    child: Option<Child>,
    err: BufReader<ChildStderr>,
}

impl Run {
    pub fn start(args: &[&str]) -> Self {
        let mut child = Command::new(BIN)
            .arg("load")
            .args(args)
            .arg("--json")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let err = BufReader::new(child.stderr.take().unwrap());
        Self { child: Some(child), err }
    }

    /// The first line of standard error that starts with `prefix` (the lines before it, a
    /// warning say, are passed over).
    pub fn err_line(&mut self, prefix: &str) -> String {
        loop {
            let mut line = String::new();
            assert_ne!(self.err.read_line(&mut line).unwrap(), 0, "no line {prefix:?}");
            if line.starts_with(prefix) {
                return line;
            }
        }
    }

    /// Waits for the end: the exit code, the report, the rest of standard error.
    pub fn wait(mut self) -> (Option<i32>, Value, String) {
        let mut child = self.child.take().unwrap();
        let mut out = String::new();
        child.stdout.take().unwrap().read_to_string(&mut out).unwrap();
        let mut err = String::new();
        self.err.read_to_string(&mut err).unwrap();
        let status = child.wait().unwrap();
        (status.code(), serde_json::from_str(&out).unwrap_or(Value::Null), err)
    }
}

impl Drop for Run {
    fn drop(&mut self) {
        if let Some(c) = &mut self.child {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// `GET path` over HTTP/1.0 with `head` lines added: the status and the body (`None` when the
/// server closed the connection without an answer).
pub fn get(port: u16, path: &str, head: &str) -> Option<(u16, String)> {
    let mut s = TcpStream::connect((Ipv4Addr::LOCALHOST, port)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    write!(s, "GET {path} HTTP/1.0\r\nHost: x\r\n{head}\r\n").ok()?;
    let mut bytes = Vec::new();
    let _ = s.read_to_end(&mut bytes);
    let text = String::from_utf8_lossy(&bytes).into_owned();
    let (status, rest) = text.split_once("\r\n")?;
    let code = status.split_whitespace().nth(1)?.parse().ok()?;
    let body = rest.split_once("\r\n\r\n").map(|(_, b)| b.to_owned()).unwrap_or_default();
    Some((code, body))
}

/// What the receiver does with a push.
#[derive(Clone, Copy, PartialEq)]
pub enum Answer {
    Ok,
    Fail,
    /// Reads the request, then never answers.
    Hang,
}

/// One push received.
pub struct Push {
    pub path: String,
    pub content_type: String,
    pub request: ExportMetricsServiceRequest,
}

/// An OTLP/HTTP receiver on a port of its own, in a runtime of its own.
pub struct Receiver {
    pub port: u16,
    pub pushes: Arc<Mutex<Vec<Push>>>,
    _rt: tokio::runtime::Runtime,
}

impl Receiver {
    pub fn start(answer: Answer) -> Self {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let listener =
            rt.block_on(tokio::net::TcpListener::bind((Ipv4Addr::LOCALHOST, 0))).unwrap();
        let port = listener.local_addr().unwrap().port();
        let pushes = Arc::new(Mutex::new(Vec::new()));
        let kept = pushes.clone();
        rt.spawn(async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else { continue };
                let kept = kept.clone();
                tokio::spawn(async move {
                    let service = hyper::service::service_fn(move |req| {
                        let kept = kept.clone();
                        async move { receive(req, &kept, answer).await }
                    });
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(stream), service)
                        .await;
                });
            }
        });
        Self { port, pushes, _rt: rt }
    }
}

async fn receive(
    req: hyper::Request<Incoming>,
    kept: &Mutex<Vec<Push>>,
    answer: Answer,
) -> Result<hyper::Response<Full<Bytes>>, std::convert::Infallible> {
    let path = req.uri().path().to_owned();
    let content_type = req
        .headers()
        .get(http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    let body = Limited::new(req.into_body(), 4 << 20).collect().await.unwrap().to_bytes();
    let request = ExportMetricsServiceRequest::decode(body).expect("an OTLP metrics export");
    kept.lock().unwrap().push(Push { path, content_type, request });
    let status = match answer {
        Answer::Ok => 200,
        Answer::Fail => 500,
        Answer::Hang => {
            std::future::pending::<()>().await;
            unreachable!()
        }
    };
    let mut r = hyper::Response::new(Full::new(Bytes::new()));
    *r.status_mut() = http::StatusCode::from_u16(status).unwrap();
    Ok(r)
}
