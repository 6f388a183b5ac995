//! [`SseDecoder`]: Server-Sent Events into [`SseEvent`]s, each event's data one JSON-RPC frame.
//! (The event parser and its writer, [`Outgoing::write_sse`](crate::Outgoing::write_sse), are in
//! [`crate::framing::sse`].)

use std::sync::Arc;

use bytes::{Buf, Bytes, BytesMut};
use tokio_util::codec::Decoder;

use crate::error::{DecodeError, Error};
use crate::framing::sse::{EventData, SseFramer};
use crate::limits::Limits;
use crate::message::{Backslash, Frame, FrameParser};

/// One Server-Sent Event whose data was decoded as a JSON-RPC frame.
///
/// A frame that is not a valid message, or an event over the limit, is a [`Frame`] of
/// [`Kind::Invalid`](crate::Kind) carrying its [`DecodeError`], as from [`JsonRpcCodec`](crate::JsonRpcCodec).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SseEvent {
    event: Arc<str>,
    last_event_id: Arc<str>,
    retry: Option<u64>,
    frame: Frame,
}

impl SseEvent {
    /// The event's type: its `event` field, or `message` when it had none.
    #[must_use]
    pub fn event(&self) -> &str {
        &self.event
    }

    /// The last event id as of this event (set by it or carried over from an earlier one); empty
    /// when the stream has given none. A client resuming the stream sends it as `Last-Event-ID`.
    #[must_use]
    pub fn last_event_id(&self) -> &str {
        &self.last_event_id
    }

    /// The reconnection time in milliseconds from the last valid `retry` field so far.
    #[must_use]
    pub fn retry(&self) -> Option<u64> {
        self.retry
    }

    /// The event's data, decoded.
    #[must_use]
    pub fn frame(&self) -> &Frame {
        &self.frame
    }

    /// Gives up the event's fields and returns its frame.
    #[must_use]
    pub fn into_frame(self) -> Frame {
        self.frame
    }
}

/// Decodes a Server-Sent Events stream (the client side of MCP's Streamable HTTP transport) into
/// [`SseEvent`]s, parsing each event's data with the same rules and [`Limits`] as
/// [`JsonRpcCodec`](crate::JsonRpcCodec). The event parsing rules are in
/// [`crate::framing::sse`]; the frame limit bounds each event's data.
///
/// `Err` is only ever an I/O failure.
///
/// # Examples
///
/// ```
/// use futures::StreamExt;
/// use mcpwire::{Id, Kind, Limits, SseDecoder};
/// use tokio_util::codec::FramedRead;
///
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let body: &[u8] = b"id: 1\r\n\r\n: keep-alive\n\nevent: message\nid: 2\ndata: {\"jsonrpc\":\"2.0\",\"id\":5,\"result\":{}}\n\n";
/// let events: Vec<_> = FramedRead::new(body, SseDecoder::new(Limits::default()))
///     .map(|e| e.unwrap())
///     .collect()
///     .await;
/// assert_eq!(events.len(), 1);
/// assert_eq!((events[0].event(), events[0].last_event_id()), ("message", "2"));
/// assert_eq!(events[0].frame().kind(), Kind::Response);
/// assert_eq!(events[0].frame().id(), Some(Id::Num(5)));
/// # });
/// ```
#[derive(Debug)]
pub struct SseDecoder {
    framer: SseFramer,
    parser: FrameParser,
}

impl SseDecoder {
    /// A decoder enforcing `limits`.
    #[must_use]
    pub fn new(limits: Limits) -> Self {
        Self { framer: SseFramer::new(limits.frame_bytes()), parser: FrameParser::new(limits) }
    }

    /// The last event id so far; empty when none.
    #[must_use]
    pub fn last_event_id(&self) -> &str {
        self.framer.last_event_id()
    }

    /// The reconnection time in milliseconds from the last valid `retry` field, if any.
    #[must_use]
    pub fn retry(&self) -> Option<u64> {
        self.framer.retry()
    }

    fn next_event(&mut self, buf: &mut BytesMut, eof: bool) -> Option<SseEvent> {
        let split = self.framer.next(buf, eof)?;
        let frame = match split.data {
            EventData::InPlace { start, end, consumed } => {
                let frame = self.parser.parse_in(buf, start, end, Backslash::Unknown);
                buf.advance(consumed - end);
                frame
            }
            EventData::Joined(data) => self.parser.parse(data),
            EventData::TooLarge => Frame::from_error(
                Bytes::new(),
                DecodeError::FrameTooLarge { limit: self.parser.limits().frame_bytes() },
            ),
        };
        Some(SseEvent {
            event: split.event,
            last_event_id: split.last_event_id,
            retry: split.retry,
            frame,
        })
    }
}

impl Decoder for SseDecoder {
    type Item = SseEvent;
    type Error = Error;

    fn decode(&mut self, buf: &mut BytesMut) -> Result<Option<SseEvent>, Error> {
        Ok(self.next_event(buf, false))
    }

    fn decode_eof(&mut self, buf: &mut BytesMut) -> Result<Option<SseEvent>, Error> {
        Ok(self.next_event(buf, true))
    }
}
