//! A POST's body: read whole within the frame limit and the read timeout, then parsed into a
//! [`Frame`]; a body that is not a JSON-RPC message is answered here (400, with the reason).

use std::task::Poll;

use bytes::BytesMut;
use http::{Response, StatusCode};
use hyper::body::Incoming as HyperBody;

use super::Body;
use super::config::Config;
use super::response::{error, json_response, too_large};
use crate::http::{BodyError, read_body};
use crate::{error::ErrorCode, message::Frame, message::FrameParser, message::Id, message::Kind};

/// The body's frame, or the answer to a body that did not arrive whole, in time, or valid. A
/// body already received is taken without arming the read timeout's timer.
pub(super) async fn read(cfg: &Config, body: HyperBody) -> Result<Frame, Box<Response<Body>>> {
    let limit = cfg.peer.limits.frame_bytes();
    let body = read_body(body, limit);
    tokio::pin!(body);
    let first = std::future::poll_fn(|cx| Poll::Ready(body.as_mut().poll(cx))).await;
    let read = match first {
        Poll::Ready(read) => Ok(read),
        Poll::Pending => tokio::time::timeout(cfg.read_timeout, body).await,
    };
    let Ok(read) = read else {
        let msg = "Request Timeout: the body did not arrive in time";
        return Err(Box::new(error(
            StatusCode::REQUEST_TIMEOUT,
            Id::Null,
            ErrorCode::SERVER_ERROR,
            msg,
        )));
    };
    let body = match read {
        Ok(b) => b,
        Err(BodyError::TooLarge) => return Err(Box::new(too_large(limit))),
        Err(BodyError::Failed(e)) => {
            tracing::debug!(error = %e, "reading a POST body failed");
            return Err(Box::new(error(
                StatusCode::BAD_REQUEST,
                Id::Null,
                ErrorCode::SERVER_ERROR,
                "Bad Request: body unreadable",
            )));
        }
    };
    let frame = FrameParser::parse_bytes_with(cfg.peer.limits, body);
    if let Some(m) = frame.message()
        && m.kind() == Kind::Invalid
    {
        let mut out = BytesMut::new();
        if let Some(reply) = m.error_reply(cfg.peer.reply_detail) {
            let _ = reply.write_value(&mut out);
        }
        return Err(Box::new(json_response(StatusCode::BAD_REQUEST, out.freeze())));
    }
    Ok(frame)
}
