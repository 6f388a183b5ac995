//! The legacy session: its id taken from answers and forgotten when the server ends it, and
//! the GET stream that carries its own messages.

use crate::sync::{Locked, RwLocked};
use std::sync::Arc;
use std::sync::atomic::Ordering;

use bytes::Bytes;
use http::header::{ACCEPT, HeaderValue};
use http::{Method, StatusCode};
use hyper::body::Incoming as HyperBody;

use super::receive::Cursor;
use super::{Ctx, Mode, SESSION_HEADER};

impl Ctx {
    /// Takes the session id an answer names (a new `initialize` replaces the old one), and
    /// forgets the session on a 404 to a message that named it: the server ended it, and the
    /// next `initialize` starts a new one.
    pub(super) fn remember_session(
        &self,
        resp: &http::Response<HyperBody>,
        initialize: bool,
        named: Option<&HeaderValue>,
    ) {
        let mut cur = self.session.write_locked();
        if let Some(named) = named
            && resp.status() == StatusCode::NOT_FOUND
        {
            // Only the session this message named: a new one may have begun meanwhile.
            if cur.as_ref() == Some(named) {
                *cur = None;
                self.lost.store(true, Ordering::Release);
                *self.version.write_locked() = None;
                self.stop_get_stream();
            }
            return;
        }
        if let Some(s) = resp.headers().get(SESSION_HEADER)
            && (cur.is_none() || initialize)
            && cur.as_ref() != Some(s)
        {
            if cur.is_some() {
                // A new session replaces the old: its GET stream is opened afresh.
                self.stop_get_stream();
            }
            *cur = Some(s.clone());
            self.lost.store(false, Ordering::Release);
        }
    }

    /// Whether the server ended the session (a 404 to a message that named it) and no new one
    /// has begun since.
    pub(super) fn session_lost(&self) -> bool {
        self.lost.load(Ordering::Acquire)
    }

    /// The session a message names now, if any.
    pub(super) fn session(&self) -> Option<HeaderValue> {
        self.session.read_locked().clone()
    }

    /// Stops the GET stream, so the next `notifications/initialized` opens one again.
    pub(super) fn stop_get_stream(&self) {
        let old = self.get_task.locked().take();
        if let Some(old) = old {
            old.abort();
        }
        self.get_started.store(false, Ordering::Release);
    }

    /// Opens the GET stream once, if asked for.
    pub(super) fn start_get_stream(self: &Arc<Self>) {
        let mut slot = self.get_task.locked();
        if !self.get_stream
            || self.closed.load(Ordering::Acquire)
            || self.get_started.swap(true, Ordering::AcqRel)
        {
            return;
        }
        let ctx = self.clone();
        let task = tokio::spawn(async move {
            let mut req = ctx.request(Method::GET, Bytes::new(), false);
            req.headers_mut().insert(ACCEPT, HeaderValue::from_static("text/event-stream"));
            match ctx.send(req).await {
                Ok(resp) if resp.status() == StatusCode::OK => {
                    let mut cursor = Cursor::default();
                    if let Err(e) = ctx.take_answer(resp, None, Mode::Legacy, &mut cursor).await {
                        tracing::debug!(error = %e, "the GET stream ended");
                    }
                }
                Ok(resp) => tracing::debug!(status = %resp.status(), "no GET stream"),
                Err(e) => tracing::debug!(error = %e, "the GET stream failed"),
            }
        });
        if let Some(old) = slot.replace(task) {
            old.abort();
        }
    }
}
