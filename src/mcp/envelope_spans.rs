//! What a transport that checked a modern request's envelope hands on with the request
//! ([`EnvelopeSpans`]), so the server behind it does not read `_meta` again.

use std::borrow::Cow;

use super::meta::Envelope;

/// A modern envelope a transport has checked ([`super::meta::check_envelope`] or the HTTP header check),
/// handed on with its request so that the server behind it does not read `_meta` again: where
/// the version and the capabilities lie in the text of `params`, and the log level.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(not(feature = "peer"), allow(dead_code))]
pub(crate) struct EnvelopeSpans {
    /// The version's text (the string's contents, without quotes), as `start..end` in `params`.
    version: (u32, u32),
    /// The capabilities object, as `start..end` in `params`.
    capabilities: (u32, u32),
    /// The log level, as an index into [`LOG_LEVELS`](super::meta::LOG_LEVELS).
    log_level: Option<u8>,
}

impl EnvelopeSpans {
    /// `envelope`, checked, of a request whose `params` text is `params`; `None` when a part
    /// of it does not lie in `params` as written (a version spelled with escapes, decoded).
    #[cfg_attr(not(feature = "http"), allow(dead_code))]
    pub(crate) fn of(envelope: &Envelope<'_>, params: &str) -> Option<Self> {
        let Cow::Borrowed(version) = &envelope.version else { return None };
        Some(Self {
            version: span_in(params, version)?,
            capabilities: span_in(params, envelope.capabilities.get())?,
            log_level: envelope.log_level.map(|l| u8::try_from(l).ok()).unwrap_or(None),
        })
    }

    /// The version, read from `params` (the text the spans were taken in).
    #[cfg_attr(not(feature = "mcp"), allow(dead_code))]
    pub(crate) fn version<'a>(&self, params: &'a str) -> Option<&'a str> {
        params.get(self.version.0 as usize..self.version.1 as usize)
    }

    /// The capabilities object, as `start..end` in `params`.
    #[cfg_attr(not(feature = "mcp"), allow(dead_code))]
    pub(crate) fn capabilities(&self) -> (u32, u32) {
        self.capabilities
    }

    /// The log level, as an index into [`LOG_LEVELS`](super::meta::LOG_LEVELS).
    #[cfg_attr(not(feature = "mcp"), allow(dead_code))]
    pub(crate) fn log_level(&self) -> Option<usize> {
        self.log_level.map(usize::from)
    }
}

/// Where `part` lies in `text`, when it is a slice of it.
#[cfg_attr(not(feature = "http"), allow(dead_code))]
fn span_in(text: &str, part: &str) -> Option<(u32, u32)> {
    let start = (part.as_ptr() as usize).checked_sub(text.as_ptr() as usize)?;
    let end = start + part.len();
    if end > text.len() {
        return None;
    }
    Some((u32::try_from(start).ok()?, u32::try_from(end).ok()?))
}
