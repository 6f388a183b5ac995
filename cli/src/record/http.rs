//! `record --http ADDR --upstream URL`: a reverse proxy in front of a Streamable HTTP server.
//!
//! Every request (POST, GET, DELETE, anything else) goes to the upstream's scheme and
//! authority with its own path and query, its headers as they came but for the hop-by-hop ones
//! and `Host`. A POST's body is recorded as one client frame (a message or a batch); an answer
//! of `application/json` as one server frame; an answer of `text/event-stream` (a POST's or a
//! GET's) is passed on as it arrives, each event's `data` recorded as a server frame. Each TCP
//! connection to the proxy is a `conn` of the capture, and each frame carries the exchange's
//! `Mcp-Session-Id` (the request's, or the answer's when it opens the session), so a replay
//! keeps the sessions apart. The proxy stops on SIGINT or SIGTERM.

use std::convert::Infallible;
use std::pin::Pin;
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll};

use bytes::Bytes;
use http::{HeaderMap, Request, Response, StatusCode, Uri};
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt as _, Full, Limited};
use hyper::body::{Body, Frame, Incoming, SizeHint};
use hyper_util::client::legacy::Client;
use hyper_util::rt::{TokioExecutor, TokioIo};
use mcpwire::http::{Connector, Dialer};

use super::recorder::{Recorder, write_stderr};
use crate::capture::Dir;

/// The largest body the proxy reads whole (a POST's, or a JSON answer's): the frame limit.
const MAX_BODY: usize = mcpwire::limits::DEFAULT_MAX_FRAME_BYTES;

/// The longest event of a stream the proxy records; a longer one passes, recorded as bad.
const MAX_EVENT: usize = mcpwire::limits::DEFAULT_MAX_FRAME_BYTES;

type ProxyBody = BoxBody<Bytes, hyper::Error>;

struct Proxy {
    upstream: Uri,
    client: Client<Connector, Full<Bytes>>,
    rec: Recorder,
}

pub(super) async fn run(addr: &str, upstream: &str, rec: Recorder) -> ExitCode {
    let upstream: Uri = match upstream.parse::<Uri>() {
        Ok(u) if u.scheme_str() == Some("http") && u.authority().is_some() => u,
        Ok(u) if u.scheme_str() == Some("https") => {
            write_stderr(&format!(
                "mcpwire record: --upstream {u}: https upstreams are not supported (record \
                 in front of the server's http:// endpoint)"
            ));
            return ExitCode::from(crate::EXIT_IO);
        }
        _ => {
            write_stderr(&format!(
                "mcpwire record: --upstream {upstream}: not an http://HOST:PORT/PATH URL"
            ));
            return ExitCode::from(crate::EXIT_IO);
        }
    };
    // TCP keepalive at hyper's pool idle timeout (90 s), as hyper's plain `build_http` sets.
    let client = match Dialer::new().tcp_keepalive(std::time::Duration::from_secs(90)).client() {
        Ok(c) => c,
        Err(e) => {
            write_stderr(&format!("mcpwire record: the upstream's HTTP client: {e}"));
            return ExitCode::from(crate::EXIT_IO);
        }
    };
    let listener = match tokio::net::TcpListener::bind(addr).await {
        Ok(l) => l,
        Err(e) => {
            write_stderr(&format!("mcpwire record: cannot listen on {addr}: {e}"));
            return ExitCode::from(crate::EXIT_IO);
        }
    };
    let signals = match crate::serve::shutdown_signals() {
        Ok(s) => s,
        Err(e) => {
            write_stderr(&format!("mcpwire record: cannot install signal handlers: {e}"));
            return ExitCode::from(crate::EXIT_IO);
        }
    };
    let local = listener.local_addr().map_or_else(|_| addr.to_owned(), |a| a.to_string());
    // The form `serve` announces, so whatever starts either reads the same line.
    write_stderr(&format!("mcpwire: serving MCP on http://{local}{}", upstream.path()));
    let proxy = Arc::new(Proxy { upstream, client, rec: rec.clone() });
    let flusher = rec.flush_every(std::time::Duration::from_millis(200));
    let conns = AtomicU64::new(0);
    tokio::pin!(signals);
    loop {
        let accepted = tokio::select! {
            a = listener.accept() => a,
            _ = &mut signals => break,
        };
        let Ok((stream, _)) = accepted else { continue };
        let conn = conns.fetch_add(1, Ordering::Relaxed);
        let proxy = proxy.clone();
        tokio::spawn(async move {
            let service = hyper::service::service_fn(move |req| {
                let proxy = proxy.clone();
                async move { Ok::<_, Infallible>(forward(&proxy, conn, req).await) }
            });
            let builder = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new());
            let _ = builder.serve_connection(TokioIo::new(stream), service).await;
        });
    }
    flusher.abort();
    ExitCode::SUCCESS
}

/// Headers that belong to one hop, not to the exchange.
const HOP_BY_HOP: [&str; 8] = [
    "connection",
    "keep-alive",
    "proxy-connection",
    "transfer-encoding",
    "te",
    "trailer",
    "upgrade",
    "host",
];

fn end_to_end(from: &HeaderMap, to: &mut HeaderMap) {
    for (k, v) in from {
        if !HOP_BY_HOP.contains(&k.as_str()) {
            to.append(k, v.clone());
        }
    }
}

fn session(h: &HeaderMap) -> Option<String> {
    h.get("mcp-session-id").and_then(|v| v.to_str().ok()).map(str::to_owned)
}

fn status(code: StatusCode, why: String) -> Response<ProxyBody> {
    let mut r = Response::new(full(Bytes::from(why)));
    *r.status_mut() = code;
    r
}

fn full(b: Bytes) -> ProxyBody {
    Full::new(b).map_err(|never| match never {}).boxed()
}

async fn forward(p: &Proxy, conn: u64, req: Request<Incoming>) -> Response<ProxyBody> {
    let (parts, body) = req.into_parts();
    let body = match Limited::new(body, MAX_BODY).collect().await {
        Ok(b) => b.to_bytes(),
        Err(e) => {
            return status(StatusCode::PAYLOAD_TOO_LARGE, format!("mcpwire record: body: {e}"));
        }
    };
    let mut sess = session(&parts.headers);
    if !body.is_empty() {
        p.rec.frames(p.rec.now(), Dir::ClientToServer, conn, sess.as_deref(), [&body[..]]);
    }
    let mut uri = http::uri::Builder::new();
    if let (Some(s), Some(a)) = (p.upstream.scheme(), p.upstream.authority()) {
        uri = uri.scheme(s.clone()).authority(a.clone());
    }
    let path = parts.uri.path_and_query().map_or("/", http::uri::PathAndQuery::as_str);
    let Ok(uri) = uri.path_and_query(path).build() else {
        return status(StatusCode::BAD_REQUEST, "mcpwire record: bad request path".into());
    };
    let mut out = Request::new(Full::new(body));
    *out.method_mut() = parts.method;
    *out.uri_mut() = uri;
    end_to_end(&parts.headers, out.headers_mut());
    let answer = match p.client.request(out).await {
        Ok(a) => a,
        Err(e) => {
            return status(StatusCode::BAD_GATEWAY, format!("mcpwire record: upstream: {e}"));
        }
    };
    let (rparts, rbody) = answer.into_parts();
    if let Some(s) = session(&rparts.headers) {
        sess = Some(s);
    }
    let kind = rparts
        .headers
        .get(http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_ascii_lowercase();
    let mut resp = Response::new(full(Bytes::new()));
    *resp.status_mut() = rparts.status;
    end_to_end(&rparts.headers, resp.headers_mut());
    if kind.starts_with("text/event-stream") {
        resp.headers_mut().remove(http::header::CONTENT_LENGTH);
        let tap = Tap {
            inner: rbody,
            events: Events::default(),
            rec: p.rec.clone(),
            conn,
            session: sess,
        };
        *resp.body_mut() = tap.boxed();
        return resp;
    }
    let body = match Limited::new(rbody, MAX_BODY).collect().await {
        Ok(b) => b.to_bytes(),
        Err(e) => return status(StatusCode::BAD_GATEWAY, format!("mcpwire record: answer: {e}")),
    };
    if kind.starts_with("application/json") && !body.is_empty() {
        p.rec.frames(p.rec.now(), Dir::ServerToClient, conn, sess.as_deref(), [&body[..]]);
    }
    *resp.body_mut() = full(body);
    resp
}

/// An event stream passed on as it arrives, each event's data recorded.
struct Tap {
    inner: Incoming,
    events: Events,
    rec: Recorder,
    conn: u64,
    session: Option<String>,
}

impl Body for Tap {
    type Data = Bytes;
    type Error = hyper::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, hyper::Error>>> {
        let this = &mut *self;
        let polled = Pin::new(&mut this.inner).poll_frame(cx);
        if let Poll::Ready(Some(Ok(f))) = &polled
            && let Some(data) = f.data_ref()
        {
            let t = this.rec.now();
            let (rec, conn, session) = (&this.rec, this.conn, this.session.as_deref());
            this.events.feed(data, |event| match event {
                Event::Data(d) => rec.frames(t, Dir::ServerToClient, conn, session, [d]),
                Event::TooLong(prefix) => rec.bad(
                    t,
                    Dir::ServerToClient,
                    conn,
                    prefix,
                    &format!("an event past {MAX_EVENT} bytes"),
                ),
            });
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

/// What an event stream yields to the capture.
#[derive(Debug, PartialEq)]
enum Event<'a> {
    /// An event's data (its `data:` lines joined by `\n`).
    Data(&'a [u8]),
    /// An event past [`MAX_EVENT`]: its first bytes.
    TooLong(&'a [u8]),
}

/// The `data` of each event of a `text/event-stream`, however the stream is cut into chunks
/// (lines end in `\n` or `\r\n`; a blank line ends an event; other fields are passed over).
#[derive(Debug, Default)]
struct Events {
    line: Vec<u8>,
    data: Vec<u8>,
    /// Whether this event's data went past [`MAX_EVENT`].
    over: bool,
}

impl Events {
    fn feed(&mut self, mut chunk: &[u8], mut each: impl FnMut(Event<'_>)) {
        while let Some(nl) = memchr::memchr(b'\n', chunk) {
            let head = &chunk[..nl];
            if self.line.len() + head.len() <= MAX_EVENT {
                self.line.extend_from_slice(head);
            } else {
                self.over = true;
            }
            self.end_line(&mut each);
            chunk = &chunk[nl + 1..];
        }
        if self.line.len() + chunk.len() <= MAX_EVENT {
            self.line.extend_from_slice(chunk);
        } else {
            self.over = true;
        }
    }

    fn end_line(&mut self, each: &mut impl FnMut(Event<'_>)) {
        let line = self.line.strip_suffix(b"\r").unwrap_or(&self.line);
        if line.is_empty() {
            if self.over {
                each(Event::TooLong(&self.data));
            } else if !self.data.is_empty() {
                each(Event::Data(&self.data));
            }
            self.data.clear();
            self.over = false;
        } else if let Some(value) = line.strip_prefix(b"data:") {
            let value = value.strip_prefix(b" ").unwrap_or(value);
            if self.data.len() + value.len() + 1 > MAX_EVENT {
                self.over = true;
            } else if !self.over {
                if !self.data.is_empty() {
                    self.data.push(b'\n');
                }
                self.data.extend_from_slice(value);
            }
        }
        self.line.clear();
    }
}

#[cfg(test)]
mod tests;
