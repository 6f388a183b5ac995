//! Reading the server's answers: a JSON body or an event stream handed to the peer (a modern
//! `tools/list` learnt on the way), and resuming a legacy request's event stream that ended
//! before its response.

use crate::sync::RwLocked;
use std::sync::atomic::Ordering;
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use http::header::{ACCEPT, CONTENT_TYPE, HeaderValue};
use http::{Method, StatusCode};
use http_body_util::{BodyExt, Limited};
use hyper::body::Incoming as HyperBody;
use tokio_util::codec::Decoder;

use super::{Ctx, DELETE_TIMEOUT, ERROR_BODY_KEPT, Mode};
use crate::http::negotiated_version;
use crate::limits::DEFAULT_RESUME_DELAY;
use crate::mcp::annotations::param_headers;
use crate::{
    codec::SseDecoder, error::ErrorCode, message::Frame, message::FrameParser, message::Kind,
    message::encode::Json, message::encode::Outgoing, message::owned::OwnedId,
};

impl Ctx {
    /// A modern `tools/list` result as the peer sees it: each listed tool's `x-mcp-header`
    /// annotations learnt, and the tools whose annotations are invalid left out, each with a
    /// warning. The frame is rewritten only when a tool is left out.
    pub(super) fn learn_tools(&self, frame: Frame) -> Frame {
        let Some(m) = frame.message() else { return frame };
        let (Some(result), Some(id)) = (m.result(), m.id()) else { return frame };
        let Ok(mut list) = serde_json::from_str::<serde_json::Value>(result.get()) else {
            return frame;
        };
        let Some(tools) = list.get_mut("tools").and_then(serde_json::Value::as_array_mut) else {
            return frame;
        };
        let before = tools.len();
        {
            let mut known = self.tools.write_locked();
            tools.retain(|tool| {
                let Some(name) = tool.get("name").and_then(serde_json::Value::as_str) else {
                    return true;
                };
                match tool.get("inputSchema").map_or(Ok(Vec::new()), param_headers) {
                    Ok(params) => {
                        known.insert(name, params);
                        true
                    }
                    Err(reason) => {
                        tracing::warn!(
                            tool = name,
                            %reason,
                            "tools/list: a tool with invalid x-mcp-header annotations is left out"
                        );
                        known.insert(name, Vec::new());
                        false
                    }
                }
            });
        }
        if tools.len() == before {
            return frame;
        }
        let mut out = BytesMut::new();
        let reply: Outgoing<'_, Json<'_, serde_json::Value>> =
            Outgoing::Result { id, result: Json(&list) };
        if reply.write_value(&mut out).is_err() {
            return frame;
        }
        FrameParser::new(self.limits).parse(out)
    }

    /// Reads an answer's body: one JSON message, or a stream of events (whose last event id
    /// and `retry` go into `cursor`). Returns whether a response to `expect` was among them.
    pub(super) async fn take_answer(
        &self,
        resp: http::Response<HyperBody>,
        expect: Option<&OwnedId>,
        mode: Mode,
        cursor: &mut Cursor,
    ) -> Result<bool, String> {
        let initialize = mode == Mode::Initialize;
        let sse = resp.headers().get(CONTENT_TYPE).is_some_and(|v| {
            v.to_str()
                .is_ok_and(|v| v.trim_start().to_ascii_lowercase().starts_with("text/event-stream"))
        });
        cursor.sse = sse;
        let mut answered = false;
        // Whether `frame` is the response expected; an `initialize` result names the version.
        let take = |frame: &Frame| {
            let Some(m) = frame.message() else { return false };
            let is = expect.is_some_and(|k| {
                matches!(m.kind(), Kind::Response | Kind::Error)
                    && m.id().and_then(OwnedId::from_id).as_ref() == Some(k)
            });
            if is
                && initialize
                && m.kind() == Kind::Response
                && let Some(v) = negotiated_version(&m)
                && let Ok(v) = HeaderValue::from_str(&v)
            {
                *self.version.write_locked() = Some(v);
            }
            is
        };
        let ok = resp.status().is_success();
        let body = resp.into_body();
        if sse {
            let mut decoder = SseDecoder::new(self.limits);
            let injected = &mut cursor.injected;
            let outcome = self.take_events(body, &mut decoder, expect, mode, take, injected).await;
            cursor.read(&decoder);
            return outcome;
        }
        let bytes = match crate::http::read_body(body, self.limits.frame_bytes()).await {
            Ok(b) => b,
            Err(crate::http::BodyError::TooLarge) => {
                return Err("reading the answer failed: length limit exceeded".into());
            }
            Err(crate::http::BodyError::Failed(e)) => {
                return Err(format!("reading the answer failed: {e}"));
            }
        };
        if bytes.iter().all(u8::is_ascii_whitespace) {
            return Ok(false);
        }
        let frame = FrameParser::parse_bytes_with(self.limits, bytes.clone());
        if frame.kind() == Kind::Invalid {
            // Not a message from the server (an error page, a proxy's body): say so in the
            // request's error, never hand it to the peer, which would answer it -32700.
            let kept = String::from_utf8_lossy(&bytes[..bytes.len().min(ERROR_BODY_KEPT)]);
            // An HTTP error's body is kept as it came.
            return Err(if ok {
                format!("the answer is not a JSON-RPC message: {kept}")
            } else {
                kept.into_owned()
            });
        }
        let is = take(&frame);
        answered |= is;
        if let Mode::Modern { tools } = mode {
            if is && tools && ok {
                self.answer(self.learn_tools(frame)).await;
                return Ok(true);
            }
            // A modern server's 4xx carries the JSON-RPC error of the request it refused; one
            // that could not read the id says `null`: either way it is this request's error.
            if !ok
                && !is
                && let Some(m) = frame.message()
                && let Some(e) = m.error()
                && let Some(id) = expect
            {
                self.fail_with(id, ErrorCode(e.code), e.message, e.data).await;
                return Ok(true);
            }
        }
        if !ok && !answered {
            // An HTTP error whose body answers no request of ours (`"id": null`): its message
            // goes into the request's error; the peer is not handed a response to nothing.
            let m = frame.message();
            let why =
                m.as_ref().and_then(crate::message::Message::error).map(|e| e.message.to_owned());
            return Err(why.unwrap_or_else(|| "the answer is not a response".into()));
        }
        if is && !cursor.injected {
            self.answer(frame).await;
        } else {
            cursor.injected = true;
            self.inject(frame).await;
        }
        Ok(answered)
    }

    /// Reads an event stream, handing each message to the peer; returns whether a response to
    /// `expect` was among them (`is` says which is), and stops reading once it was. The
    /// response goes straight to its waiter unless a message went to the peer's task before
    /// it (`injected`): then it follows them there, so it is not seen before them.
    pub(super) async fn take_events(
        &self,
        mut body: HyperBody,
        decoder: &mut SseDecoder,
        expect: Option<&OwnedId>,
        mode: Mode,
        is: impl Fn(&Frame) -> bool,
        injected: &mut bool,
    ) -> Result<bool, String> {
        let mut answered = false;
        let mut buf = BytesMut::new();
        loop {
            let chunk = match body.frame().await {
                None => None,
                Some(Ok(f)) => f.into_data().ok(),
                Some(Err(e)) => return Err(format!("the event stream failed: {e}")),
            };
            let end = match chunk {
                Some(c) => {
                    buf.extend_from_slice(&c);
                    false
                }
                None => true,
            };
            loop {
                let event =
                    if end { decoder.decode_eof(&mut buf) } else { decoder.decode(&mut buf) };
                match event {
                    Ok(Some(ev)) => {
                        let mut frame = ev.into_frame();
                        let it = is(&frame);
                        answered |= it;
                        if it && mode == (Mode::Modern { tools: true }) {
                            frame = self.learn_tools(frame);
                        }
                        let handed = if it && !*injected {
                            self.answer(frame).await
                        } else {
                            *injected = true;
                            self.inject(frame).await
                        };
                        // The stream has done its work once the response came: a server
                        // that keeps it open must not keep this request's POST slot.
                        if !handed || (expect.is_some() && answered) {
                            return Ok(answered);
                        }
                    }
                    Ok(None) => break,
                    Err(e) => return Err(format!("the event stream failed: {e}")),
                }
            }
            if end {
                return Ok(answered);
            }
        }
    }

    /// Resumes the event stream that was to carry the response to request `id` (a legacy
    /// POST's, which ended before the response came), as the specification's "Resumability
    /// and Redelivery" says: after the stream's `retry` time (or [`DEFAULT_RESUME_DELAY`]; at
    /// most `max_resume_delay`), a GET with `Last-Event-ID`, read like the POST's answer. A
    /// resumed stream that ends without the response (the server polls) is resumed again;
    /// `resume_failures` failed attempts in a row (no connection, a 5xx, a broken stream) end
    /// it, and so does a 4xx (the server cannot resume it; a 404 also ends the session). The
    /// request's own timeout bounds the whole.
    pub(super) async fn resume(
        &self,
        id: &OwnedId,
        mode: Mode,
        cursor: &mut Cursor,
    ) -> Result<bool, String> {
        let Some(session) = self.session() else {
            return Err("the event stream ended before the response, with no session to resume \
                        it in"
                .into());
        };
        let mut failures = 0;
        loop {
            tokio::time::sleep(cursor.delay(self.max_resume_delay)).await;
            if self.closed.load(Ordering::Acquire) {
                return Err("the connection closed while the event stream was resumed".into());
            }
            if self.session().as_ref() != Some(&session) {
                return Err("the session ended before the event stream was resumed".into());
            }
            let Ok(last) = HeaderValue::from_str(&cursor.last_id) else {
                return Err(format!("the event id {:?} cannot be sent back", cursor.last_id));
            };
            let mut req = self.request(Method::GET, Bytes::new(), false);
            req.headers_mut().insert(ACCEPT, HeaderValue::from_static("text/event-stream"));
            req.headers_mut().insert(LAST_EVENT_ID, last);
            let why = match self.send(req).await {
                Ok(resp) if resp.status() == StatusCode::OK => {
                    match self.take_answer(resp, Some(id), mode, cursor).await {
                        Ok(true) => return Ok(true),
                        Ok(false) if !cursor.sse => {
                            return Err("resuming the event stream got no event stream".into());
                        }
                        // Ended again before the response: the server polls.
                        Ok(false) => {
                            failures = 0;
                            continue;
                        }
                        Err(e) => e,
                    }
                }
                Ok(resp) if resp.status().is_client_error() => {
                    self.remember_session(&resp, false, Some(&session));
                    let status = resp.status();
                    let body = Limited::new(resp.into_body(), ERROR_BODY_KEPT).collect();
                    let body = tokio::time::timeout(DELETE_TIMEOUT, body).await;
                    let text = body.ok().and_then(Result::ok).map(|b| b.to_bytes());
                    let frame =
                        text.map(|t| FrameParser::new(self.limits).parse(BytesMut::from(t)));
                    let m = frame.as_ref().and_then(Frame::message);
                    let msg = m
                        .as_ref()
                        .and_then(crate::message::Message::error)
                        .map(|e| e.message.to_owned());
                    return Err(format!(
                        "resuming the event stream was refused with {status}{}",
                        msg.map(|m| format!(": {m}")).unwrap_or_default()
                    ));
                }
                Ok(resp) => format!("resuming the event stream got {}", resp.status()),
                Err(e) => format!("resuming the event stream failed: {e}"),
            };
            failures += 1;
            if failures >= self.resume_failures {
                return Err(why);
            }
            tracing::debug!(error = %why, "resuming an event stream failed; trying again");
        }
    }
}

/// The header a client resuming an event stream names the last event it got in.
const LAST_EVENT_ID: &str = "last-event-id";

/// Where the client is in one of the server's event streams: what resuming it takes.
#[derive(Debug, Default)]
pub(super) struct Cursor {
    /// Whether the answer was an event stream.
    pub(super) sse: bool,
    /// Whether a message of the answer went to the peer's task: the response then follows it
    /// there, never overtaking it straight to its waiter.
    pub(super) injected: bool,
    /// The last event id the stream gave; empty when it gave none.
    last_id: String,
    /// The stream's reconnection time in milliseconds, from its last `retry` field.
    retry: Option<u64>,
}

impl Cursor {
    /// Takes what a decoder read of the stream (a later connection's id replaces the earlier).
    pub(super) fn read(&mut self, decoder: &SseDecoder) {
        let id = decoder.last_event_id();
        if !id.is_empty() && id != self.last_id {
            id.clone_into(&mut self.last_id);
        }
        if decoder.retry().is_some() {
            self.retry = decoder.retry();
        }
    }

    /// Whether the stream can be resumed: it gave an event id.
    pub(super) fn resumable(&self) -> bool {
        self.sse && !self.last_id.is_empty()
    }

    /// How long to wait before resuming: the stream's `retry`, at most `max`.
    pub(super) fn delay(&self, max: Duration) -> Duration {
        self.retry.map_or(DEFAULT_RESUME_DELAY, Duration::from_millis).min(max)
    }
}
