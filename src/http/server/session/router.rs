//! The session peer's outlet: each message the peer writes goes to the POST that waits for it,
//! its event stream, or the session's GET stream, by what the peer says it is.

use crate::sync::Locked;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use bytes::{Bytes, BytesMut};
use tokio::sync::mpsc;

use super::post::abandoned;
use super::{Input, RouteStats, Routes};
use crate::http::negotiated_version;
use crate::http::outlet::AsyncOutlet;
use crate::peer::core::transmit::{Route, Sent};
use crate::{limits::Limits, message::FrameParser};

/// The session peer's outlet: routes each message the peer writes by what the peer says it is.
pub(super) struct Router {
    routes: Arc<Mutex<Routes>>,
    stats: Arc<RouteStats>,
    /// The session's own input, to fail a request of the server's that cannot be delivered.
    inbox: mpsc::WeakSender<Input>,
    /// Reads the version an `initialize` result names, and makes the error frames that fail
    /// undeliverable requests; made on first use.
    parser: Option<FrameParser>,
    /// How long a GET stream no connection delivers still takes messages.
    retention: std::time::Duration,
}

impl AsyncOutlet for Router {
    async fn send(&mut self, mut out: BytesMut, sent: Vec<Sent>) -> std::io::Result<()> {
        for s in sent {
            let mut msg = out.split_to(s.len.min(out.len()));
            if msg.ends_with(b"\n") {
                msg.truncate(msg.len() - 1);
            }
            self.route(msg.freeze(), s.route);
        }
        Ok(())
    }

    async fn shutdown(&mut self) -> std::io::Result<()> {
        self.end();
        Ok(())
    }
}

impl Drop for Router {
    fn drop(&mut self) {
        self.end();
    }
}

impl Router {
    pub(super) fn new(
        routes: Arc<Mutex<Routes>>,
        stats: Arc<RouteStats>,
        inbox: mpsc::WeakSender<Input>,
        retention: std::time::Duration,
    ) -> Self {
        Self { routes, stats, inbox, parser: None, retention }
    }

    /// The peer stopped writing: nothing will be routed any more. Each waiting POST's receiver
    /// holds its `Post`, so clearing the table alone would keep the `done` sender alive and the
    /// POST waiting forever: the senders are dropped, and a POST that streams gets the error of
    /// an abandoned request as its stream's last event. Done once.
    fn end(&mut self) {
        let mut r = self.routes.locked();
        if r.closed {
            return;
        }
        r.closed = true;
        if let Some(s) = r.stream.take() {
            s.finish();
        }
        let posts: Vec<_> = r.posts.drain().collect();
        drop(r);
        for (id, post) in posts {
            post.end(Some(&abandoned(id.as_id())));
        }
    }

    fn parser(&mut self) -> &mut FrameParser {
        // The messages are the peer's own, already bounded by what it was given.
        self.parser.get_or_insert_with(|| {
            FrameParser::new(
                Limits::default()
                    .max_frame_bytes(crate::limits::MAX_FRAME_BYTES_CEILING)
                    .max_depth(usize::MAX / 2),
            )
        })
    }

    fn route(&mut self, msg: Bytes, route: Route) {
        // An `initialize` result names the version the session speaks.
        let version = match &route {
            Route::Response { initialize: true, .. } => {
                let frame = self.parser().parse(BytesMut::from(&msg[..]));
                frame
                    .message()
                    .filter(|m| m.result().is_some())
                    .and_then(|m| negotiated_version(&m))
            }
            _ => None,
        };
        let request = match route {
            Route::Request { id, .. } => Some(id),
            _ => None,
        };
        let mut r = self.routes.locked();
        let target = match route {
            Route::Response { id, .. } => {
                if let Some(v) = version {
                    r.version.get_or_insert(v);
                }
                // MCP: the server MUST NOT send a response on the GET stream. One whose POST is
                // gone (the client left, or cancelled it) has nowhere to go.
                if let Some(k) = &id {
                    r.answered(k);
                }
                let Some(post) = id.and_then(|k| r.posts.remove(&k)) else {
                    drop(r);
                    self.stats.dropped.fetch_add(1, Ordering::Relaxed);
                    return;
                };
                Some(post)
            }
            Route::Batch { ids } => {
                let mut found = None;
                for k in &ids {
                    r.answered(k);
                    if let Some(p) = r.posts.remove(k) {
                        found.get_or_insert(p);
                    }
                }
                if found.is_none() {
                    drop(r);
                    self.stats.dropped.fetch_add(1, Ordering::Relaxed);
                    return;
                }
                found
            }
            // MCP: requests and notifications related to a client's request may travel on that
            // request's stream; there they reach the client even when it opened no GET stream.
            Route::Notification { related: Some(id), .. }
            | Route::Request { related: Some(id), .. } => {
                if let Some(post) = r.posts.get(&id).cloned() {
                    drop(r);
                    if !post.note(msg) {
                        self.stats.dropped.fetch_add(1, Ordering::Relaxed);
                    }
                    return;
                }
                None
            }
            Route::Notification { .. } if r.single => {
                // The one request's POST carries everything its handler says.
                let post = r.posts.values().next().cloned();
                drop(r);
                if !post.is_some_and(|p| p.note(msg)) {
                    self.stats.dropped.fetch_add(1, Ordering::Relaxed);
                }
                return;
            }
            Route::CloseStream { related } => {
                // Only a session whose version polls; a stateless request's stream is its
                // request, which goes on.
                let post = if r.polling() { r.posts.get(&related).cloned() } else { None };
                drop(r);
                if let Some(post) = post {
                    post.close_stream();
                }
                return;
            }
            Route::Notification { .. } | Route::Request { .. } => None,
        };
        if let Some(post) = target {
            drop(r);
            if !post.answer(msg) {
                self.stats.dropped.fetch_add(1, Ordering::Relaxed);
            }
            return;
        }
        // Everything else goes to the GET stream: while a connection delivers it, or one may
        // still resume it.
        let stream = match r.stream.take() {
            // One no connection delivered for the retention is not resumed any more.
            Some(s) if s.expired(Instant::now(), self.retention) => {
                s.finish();
                r.streams.remove(&s.number);
                None
            }
            s => {
                r.stream.clone_from(&s);
                s
            }
        };
        drop(r);
        let sent = stream.is_some_and(|s| s.append(&msg));
        if !sent {
            self.stats.dropped.fetch_add(1, Ordering::Relaxed);
            if let Some(id) = request {
                self.undeliverable(id);
            }
        }
    }

    /// A request of the server's that no stream can carry fails at once (-32603), instead of
    /// waiting out its timeout.
    fn undeliverable(&mut self, id: u64) {
        let Ok(id) = i64::try_from(id) else { return };
        let single = self.routes.locked().single;
        let msg = if single {
            "Internal error: a stateless (2026-07-28) request's handler cannot send requests"
        } else {
            "Internal error: no stream to the client is open (GET the endpoint to open one)"
        };
        let answer = crate::http::error_json(
            crate::message::Id::Num(id),
            crate::error::ErrorCode::INTERNAL_ERROR,
            msg,
        );
        let frame = self.parser().parse(BytesMut::from(&answer[..]));
        if let Some(inbox) = self.inbox.upgrade() {
            let _ = inbox.try_send(Some(frame));
        }
    }
}
