//! Requests a transport sends itself, from the caller's task (the Streamable HTTP client's
//! POSTs), and the responses it hands straight to their waiters: no trip through the
//! connection's task either way.
//!
//! A request goes this way only when nothing is queued before it and the writer holds nothing
//! it took: every message the caller queued earlier (a notification, a cancellation) has then
//! reached the transport, which keeps them in order before the request (the HTTP client's
//! requests wait for the notifications before them to be taken).

use bytes::BytesMut;

use super::sent_requests::Timeout;
use super::{Core, Phase};
use crate::peer::error::RequestError;
#[cfg(feature = "http")]
use crate::peer::incoming::Incoming;
#[cfg(feature = "http")]
use crate::{message::Frame, message::Kind};
use crate::{
    message::Id, message::encode::Outgoing, message::encode::Payload, message::owned::OwnedId,
};

/// How a request was started.
pub(crate) enum Started {
    /// Registered, and encoded for the caller to send: the body, without a line ending.
    Direct(BytesMut),
    /// Registered and queued for the connection's task (`true`), or waiting for room (`false`).
    Queued(bool),
}

impl Core {
    /// [`Core::start_request`] (its `timeout` and `progress` as `bounds`), but the request is
    /// handed back encoded, not queued, when the transport sends requests itself (`direct`)
    /// and the caller may send it now (see the module's documentation).
    ///
    /// # Errors
    ///
    /// As [`Core::start_request`].
    pub(crate) fn start_direct<P: Payload>(
        &mut self,
        now: std::time::Instant,
        method: &str,
        params: &Option<P>,
        bounds: (Timeout, Option<(OwnedId, Option<std::time::Duration>)>),
        related: Option<&OwnedId>,
        direct: bool,
    ) -> Result<(u64, Started), RequestError> {
        let (timeout, progress) = bounds;
        if !direct || !self.tx.is_empty() || self.writer_busy || !matches!(self.phase, Phase::Open)
        {
            let (id, sent) = self.start_request(now, method, params, timeout, progress, related)?;
            return Ok((id, Started::Queued(sent)));
        }
        let id = self.register_request(now, timeout, progress)?;
        let wire = Id::Num(i64::try_from(id).expect("ids stay below 2^53"));
        let msg = Outgoing::Request { id: wire, method, params: params.as_ref() };
        let mut body = BytesMut::new();
        if let Err(e) = msg.write_value(&mut body) {
            self.sent.forget(id, None, self.read);
            return Err(RequestError::Encode(e.to_string()));
        }
        self.stats.bytes_written += body.len() as u64 + 1;
        Ok((id, Started::Direct(body)))
    }

    /// A response (or error response) the transport read: its waiter gets it now. Returns the
    /// frame when it is no response (the transport hands it to the connection's task instead).
    #[cfg(feature = "http")]
    pub(crate) fn deliver_response(&mut self, frame: Frame) -> Result<(), Frame> {
        if !matches!(frame.kind(), Kind::Response | Kind::Error) {
            return Err(frame);
        }
        // Once reading has ended every waiter has failed: a late answer is dropped, as the
        // connection's task would drop it.
        // It counts as read just after the last frame the connection's task read: no order
        // holds between the streams it came on.
        if matches!(self.phase, Phase::Open) {
            self.sent.deliver(Incoming::own(frame).at(self.read), &mut self.wake);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests;
