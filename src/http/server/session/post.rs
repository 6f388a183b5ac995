//! A POST of a session: what it waits for (its response, and the progress before it), where
//! its messages go (its channels until its answer is decided, its resumable event stream once
//! it streams), and its receiving end, which builds that stream.

use crate::sync::Locked;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex, MutexGuard};

use bytes::Bytes;
use tokio::sync::{mpsc, oneshot};

use super::super::stream::SseStream;
use super::{Session, StreamGuard};
use crate::message::owned::OwnedId;

/// The ids of a POST's requests: one, but for a batch.
pub(crate) type PostIds = smallvec::SmallVec<[OwnedId; 1]>;

/// What one POST waits for: the response (or batch of responses) to its request(s), and the
/// progress notifications sent before it.
pub(crate) struct Post {
    pub(super) route: Mutex<PostRoute>,
    /// Set when the client cancelled the request: no response will come, and none is owed.
    pub(super) cancelled: std::sync::atomic::AtomicBool,
    /// Set once the response was handed to the POST: its handler is done.
    pub(super) answered: std::sync::atomic::AtomicBool,
}

/// Where a POST's messages go: its channels while its answer is undecided, its event stream
/// once it streams (switched under this lock, so nothing is lost or reordered).
pub(super) struct PostRoute {
    pub(super) notes: mpsc::Sender<Note>,
    pub(super) done: Option<oneshot::Sender<Bytes>>,
    pub(super) stream: Option<Arc<SseStream>>,
}

/// What reaches a POST before its response.
pub(crate) enum Note {
    /// A message of the request's handler (progress).
    Message(Bytes),
    /// The handler closed the POST's event stream ([`crate::http::close_sse_stream`]).
    Close,
}

impl Post {
    fn route(&self) -> MutexGuard<'_, PostRoute> {
        self.route.locked()
    }

    /// A message sent before the response; `false` when it had to be dropped.
    pub(super) fn note(&self, msg: Bytes) -> bool {
        let r = self.route();
        match &r.stream {
            Some(s) => s.append(&msg),
            None => r.notes.try_send(Note::Message(msg)).is_ok(),
        }
    }

    /// The handler closed the POST's event stream.
    pub(super) fn close_stream(&self) {
        let r = self.route();
        match &r.stream {
            Some(s) => s.cut(),
            None => {
                let _ = r.notes.try_send(Note::Close);
            }
        }
    }

    /// The response; `false` when nothing waits for it any more.
    pub(super) fn answer(&self, msg: Bytes) -> bool {
        let mut r = self.route();
        if let Some(s) = &r.stream {
            self.answered.store(true, Ordering::Release);
            let kept = s.append(&msg);
            s.finish();
            return kept;
        }
        let Some(done) = r.done.take() else { return false };
        // Before the send: the POST's receiver may drop as soon as it has the answer.
        self.answered.store(true, Ordering::Release);
        done.send(msg).is_ok()
    }

    /// No response will come: the POST ends (with `last` as its stream's last event, if it
    /// streams: the error of an abandoned request).
    pub(super) fn end(&self, last: Option<&Bytes>) {
        let mut r = self.route();
        drop(r.done.take());
        if let Some(s) = &r.stream {
            if let Some(last) = last {
                s.append(last);
            }
            s.finish();
        }
    }

    /// Whether the POST's answer is an event stream (its route outlives the POST's connection).
    pub(super) fn streams(&self) -> bool {
        self.route().stream.is_some()
    }
}

/// The receiving end of a [`Post`]; dropping it (the client went away, or the reply was sent)
/// removes its routes.
pub(crate) struct PostReceiver {
    pub(crate) notes: mpsc::Receiver<Note>,
    pub(crate) done: oneshot::Receiver<Bytes>,
    pub(super) post: Arc<Post>,
    pub(super) ids: PostIds,
    pub(super) session: Arc<Session>,
}

impl PostReceiver {
    /// Whether the client cancelled the request (so the POST ends with no response).
    pub(crate) fn cancelled(&self) -> bool {
        self.post.cancelled.load(Ordering::Acquire)
    }

    /// Whether the POST is a stateless (2026-07-28) request's.
    pub(crate) fn stateless(&self) -> bool {
        self.session.single
    }

    /// The answer when the session ends before the response comes: an error response to the
    /// (first) request, -32603.
    pub(crate) fn abandoned(&self) -> Bytes {
        let id = self.ids.first().map_or(crate::message::Id::Null, OwnedId::as_id);
        abandoned(id)
    }

    /// Whether the POST's answer can be a resumable event stream (a legacy session's).
    pub(crate) fn resumable(&self) -> bool {
        self.session.resume.is_some()
    }

    /// Whether the handler may close the POST's event stream for the client to resume it: the
    /// session negotiated a version with polling (2025-11-25 on).
    pub(crate) fn pollable(&self) -> bool {
        self.resumable() && self.session.routes().polling()
    }

    /// Turns the POST's answer into a resumable event stream (a legacy session's), starting
    /// with `first` (what came before the response), and returns the connection delivering it:
    /// the priming event (when the session's version has them), then its events. From now on
    /// the POST's messages go into the stream, which outlives this connection until the
    /// response is in it. A [`Note::Close`] among what came ends the connection at that point.
    pub(crate) fn into_stream(mut self, first: Note) -> StreamGuard {
        let session = self.session.clone();
        let (stream, prefix) = session.new_stream();
        let mut cut = None;
        let take = |note: Note, cut: &mut Option<u64>| match note {
            Note::Message(m) => {
                stream.append(&m);
            }
            Note::Close => *cut = Some(stream.last()),
        };
        take(first, &mut cut);
        {
            let mut route = self.post.route();
            route.stream = Some(stream.clone());
            while let Ok(note) = self.notes.try_recv() {
                take(note, &mut cut);
            }
            match self.done.try_recv() {
                Ok(response) => {
                    stream.append(&response);
                    stream.finish();
                }
                Err(oneshot::error::TryRecvError::Closed) => {
                    if !self.cancelled() {
                        stream.append(&self.abandoned());
                    }
                    stream.finish();
                }
                Err(oneshot::error::TryRecvError::Empty) => {}
            }
        }
        session.keep(&stream);
        // Its closing does not end the POST's route: the stream has it now.
        drop(self);
        let reader = stream.attach(0, prefix, cut);
        StreamGuard::new(reader, session)
    }

    /// The answer of a POST whose client takes only event streams and whose response came
    /// first: a resumable stream of that one response (a legacy session's).
    pub(crate) fn one_event_stream(self, response: &[u8]) -> StreamGuard {
        let session = self.session.clone();
        drop(self);
        let (stream, prefix) = session.new_stream();
        stream.append(response);
        stream.finish();
        session.keep(&stream);
        let reader = stream.attach(0, prefix, None);
        StreamGuard::new(reader, session)
    }
}

/// The error response that ends a request whose session ended before it was answered, -32603.
pub(super) fn abandoned(id: crate::message::Id<'_>) -> Bytes {
    let msg = "Internal error: the session ended before the request was answered";
    crate::http::error_json(id, crate::error::ErrorCode::INTERNAL_ERROR, msg)
}

impl Drop for PostReceiver {
    fn drop(&mut self) {
        // A POST that streams keeps its route: its stream takes the response, for a client
        // that resumes it.
        if !self.post.streams() {
            let mut r = self.session.routes();
            for id in &self.ids {
                if r.posts.get(id).is_some_and(|p| Arc::ptr_eq(p, &self.post)) {
                    r.posts.remove(id);
                }
            }
        }
        self.session.busy.fetch_sub(1, Ordering::AcqRel);
        self.session.touch();
        // A stateless request's session lives as long as its POST waits: the client closing
        // the response ends it, and so cancels the handler. Once answered, its handler is done
        // and the peer waits, idle, for another stateless request.
        if self.session.single {
            // Reused only when nothing of the request can speak any more: answered, and no
            // handle to the peer left beyond those it had when it started (a task the handler
            // spawned with a clone of its context's handle could send into the next client's
            // stream).
            let answered = self.post.answered.load(Ordering::Acquire);
            let quiet = self.session.peer.handles() <= self.session.handles;
            if !(answered && quiet && self.session.is_open() && self.session.recycle()) {
                self.session.close();
            }
        }
    }
}
