//! Settling with a server once the transport runs: the era, what the server says of itself,
//! and a legacy session's log level.

use std::borrow::Cow;

use serde::Deserialize;
use yoke::Yokeable;

use super::decoded::{Cart, Decoded};
use super::error::ClientError;
use super::negotiate::{Progress, negotiate_with};
use super::{ClientOptions, Negotiated};
use crate::mcp::Era;
use crate::mcp::negotiation::DISCOVER;
use crate::mcp::types::{Implementation, LoggingLevel, ServerCapabilities};
use crate::peer::{NO_PARAMS, PeerHandle, RequestOptions};

/// What a server said of itself: a `server/discover` or `initialize` result.
#[derive(Deserialize, Yokeable)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Described<'a> {
    #[serde(borrow, default)]
    pub(super) capabilities: ServerCapabilities<'a>,
    #[serde(borrow, default)]
    pub(super) server_info: Option<Implementation<'a>>,
    #[serde(borrow, default)]
    pub(super) instructions: Option<Cow<'a, str>>,
    #[serde(borrow, default, rename = "_meta")]
    meta: Option<DescribedMeta<'a>>,
}

#[derive(Deserialize)]
struct DescribedMeta<'a> {
    #[serde(borrow, default, rename = "io.modelcontextprotocol/serverInfo")]
    server_info: Option<Implementation<'a>>,
}

/// The negotiation, the server's description, and a legacy session's log level.
pub(super) async fn settle(
    options: &ClientOptions,
    log_level: Option<LoggingLevel>,
    peer: &PeerHandle,
    key: Option<&str>,
    progress: &Progress,
) -> Result<(Negotiated, Decoded<Described<'static>>), ClientError> {
    let agreed =
        negotiate_with(peer, options, key, progress).await.map_err(ClientError::negotiate)?;
    let fix = |d: &mut Described<'_>| {
        if d.server_info.is_none() {
            d.server_info = d.meta.take().and_then(|m| m.server_info);
        }
    };
    let bad = |e: serde_json::Error| ClientError::invalid("server description", e);
    let described = match agreed.server() {
        Some(text) => Decoded::decode_with(Cart::Text(text.into()), fix).map_err(bad)?,
        // The era came from the cache: the server is asked what it is.
        None => {
            progress.at(DISCOVER);
            let r = agreed
                .request(peer, DISCOVER, NO_PARAMS, RequestOptions::new())
                .await
                .map_err(|e| ClientError::connecting(DISCOVER, e))?;
            Decoded::decode_with(Cart::Result(r), fix).map_err(bad)?
        }
    };
    if let (Some(level), Era::Legacy) = (log_level, agreed.era()) {
        #[derive(serde::Serialize)]
        struct SetLevel {
            level: LoggingLevel,
        }
        progress.at("logging/setLevel");
        agreed
            .request(
                peer,
                "logging/setLevel",
                Some(crate::message::encode::Json(&SetLevel { level })),
                RequestOptions::new(),
            )
            .await
            .map_err(|e| ClientError::request("logging/setLevel", e))?;
    }
    Ok((agreed, described))
}
