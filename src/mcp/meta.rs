//! Borrowed views of what the modern era reads on every request, and the `_meta` envelope's
//! validation.
//!
//! Every view borrows from the frame: a string member is a slice of the frame's bytes unless it
//! was written with escapes (then it is unescaped into a `String`, the one case that
//! allocates). The members of `params` and of `_meta` are read through the crate's one member
//! reader (`message::members::Members`): from the table the parse recorded when it did, so no
//! byte of a value is read again to find them, else in one pass over `params` (and one over
//! `_meta`), each member the view does not name skipped without being built. A member named
//! twice is an error, never a choice between the two: a gateway that reads the first and a server that reads the last
//! would disagree about what the request is.

use std::borrow::Cow;
use std::fmt;

use super::{CLIENT_CAPABILITIES_KEY, PROTOCOL_VERSION_KEY};
use crate::message::members::{Members, PickError};
use crate::message::scan::ScanError;
use crate::{error::ErrorCode, message::Message, message::RawJson};

/// A request refused before any handler runs, as the JSON-RPC error it is answered with.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rejection {
    /// The error code: -32602 for a malformed envelope, -32022 for an unsupported version,
    /// -32020 for a header that does not match the body.
    pub code: ErrorCode,
    /// What was wrong, for the error's `message`.
    pub message: Cow<'static, str>,
    /// The error's `data`, as JSON text (-32022's `{"supported": […], "requested": …}`).
    pub data: Option<String>,
}

impl Rejection {
    pub(crate) fn new(code: ErrorCode, message: impl Into<Cow<'static, str>>) -> Self {
        Self { code, message: message.into(), data: None }
    }

    pub(crate) fn invalid(message: impl Into<Cow<'static, str>>) -> Self {
        Self::new(ErrorCode::INVALID_PARAMS, message)
    }

    /// -32022 for version `requested`, naming the `supported` ones.
    #[must_use]
    pub fn unsupported_version<S: AsRef<str>>(requested: &str, supported: &[S]) -> Self {
        #[derive(serde::Serialize)]
        struct Data<'a> {
            supported: Vec<&'a str>,
            requested: &'a str,
        }
        let data = Data { supported: supported.iter().map(AsRef::as_ref).collect(), requested };
        Self {
            code: ErrorCode::UNSUPPORTED_PROTOCOL_VERSION,
            message: "Unsupported protocol version".into(),
            data: serde_json::to_string(&data).ok(),
        }
    }

    /// The error's `data` as raw JSON.
    #[must_use]
    pub fn data(&self) -> Option<RawJson<'_>> {
        self.data.as_deref().map(RawJson::new)
    }
}

impl fmt::Display for Rejection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({})", self.message, self.code.get())
    }
}

impl std::error::Error for Rejection {}

/// A JSON string member as text: borrowed when written without escapes. `None` when the value
/// is not a string.
#[must_use]
pub fn str_of(raw: RawJson<'_>) -> Option<Cow<'_, str>> {
    let text = raw.get();
    // The common case, read without a parser: quotes around bytes that need no unescaping (no
    // backslash, no quote, no control character).
    if let Some(inner) = text.strip_prefix('"').and_then(|t| t.strip_suffix('"'))
        && inner.bytes().all(|b| b >= 0x20 && b != b'\\' && b != b'"')
    {
        return Some(Cow::Borrowed(inner));
    }
    if let Ok(s) = serde_json::from_str::<&str>(text) {
        return Some(Cow::Borrowed(s));
    }
    if !text.starts_with('"') {
        return None;
    }
    serde_json::from_str::<String>(text).ok().map(Cow::Owned)
}

/// The values of `keys` among `members` (`null` reads as absent).
///
/// # Errors
///
/// -32602 naming `what` when it is not an object, is malformed, or names a key twice.
pub(crate) fn pick<'a, const N: usize>(
    members: Members<'a>,
    keys: [&str; N],
    what: &str,
) -> Result<[Option<RawJson<'a>>; N], Rejection> {
    let found = members.pick(keys).map_err(|e| match e {
        PickError::Scan(ScanError::NotObject) => malformed(what, "must be an object"),
        PickError::Scan(ScanError::Malformed) => malformed(what, "is not well-formed JSON"),
        PickError::Twice(i) => malformed(what, &format!("names {} twice", keys[i])),
    })?;
    Ok(found.map(|v| v.filter(|v| *v != "null").map(RawJson::new)))
}

#[cold]
fn malformed(what: &str, why: &str) -> Rejection {
    Rejection::invalid(format!("Invalid params: {what} {why}"))
}

/// A request's `params`, as the modern era reads them: `_meta`, and `name` / `uri` (what
/// `Mcp-Name` mirrors) and `arguments` (what `Mcp-Param-*` mirrors).
///
/// # Examples
///
/// ```
/// use mcpwire::mcp::meta::RequestParams;
/// use mcpwire::{FrameParser, Limits};
///
/// let body = r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo",
///   "arguments":{"message":"hi"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",
///   "io.modelcontextprotocol/clientCapabilities":{}}}}"#;
/// let frame = FrameParser::new(Limits::default()).parse(body.into());
/// let params = RequestParams::of(&frame.message().unwrap()).unwrap();
/// assert_eq!(params.name_str().as_deref(), Some("echo"));
/// let meta = params.meta().unwrap().unwrap();
/// assert_eq!(meta.protocol_version_str().as_deref(), Some("2026-07-28"));
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RequestParams<'a> {
    params: Option<RawJson<'a>>,
    meta: Option<RawJson<'a>>,
    name: Option<RawJson<'a>>,
    uri: Option<RawJson<'a>>,
    arguments: Option<RawJson<'a>>,
    task_id: Option<RawJson<'a>>,
    /// The members of `params` (and what the parse recorded of `_meta`'s, when it did).
    members: Option<Members<'a>>,
}

/// The members of `params` a [`RequestParams`] reads.
const PARAMS_KEYS: [&str; 5] = ["_meta", "name", "uri", "arguments", "taskId"];

impl<'a> RequestParams<'a> {
    /// Reads `params` (absent `params` reads as empty).
    ///
    /// # Errors
    ///
    /// -32602 when `params` is not an object or names a member twice.
    pub fn parse(params: Option<RawJson<'a>>) -> Result<Self, Rejection> {
        params.map_or(Ok(Self::default()), |p| Self::read(p, Members::scanned(p.get())))
    }

    /// Reads a message's `params`: from the members the parse recorded when it did (so
    /// neither `params` nor its `_meta` is read again), else as [`RequestParams::parse`] does.
    ///
    /// # Errors
    ///
    /// As [`RequestParams::parse`].
    pub fn of(msg: &Message<'a>) -> Result<Self, Rejection> {
        match (msg.params(), msg.param_members()) {
            (Some(params), Some(members)) => Self::read(params, members),
            _ => Ok(Self::default()),
        }
    }

    /// `params` (whose members are `members`) read.
    fn read(params: RawJson<'a>, members: Members<'a>) -> Result<Self, Rejection> {
        let [meta, name, uri, arguments, task_id] = pick(members, PARAMS_KEYS, "params")?;
        let members = Some(members);
        Ok(Self { params: Some(params), meta, name, uri, arguments, task_id, members })
    }

    /// `params._meta`, read; `Ok(None)` when absent.
    ///
    /// # Errors
    ///
    /// -32602 when `_meta` is not an object, or names a member twice.
    pub fn meta(&self) -> Result<Option<Meta<'a>>, Rejection> {
        let (Some(meta), Some(params)) = (self.meta, self.members) else { return Ok(None) };
        Meta::read(params.meta(meta.get())).map(Some)
    }

    /// The whole `params`, as given to [`RequestParams::parse`].
    #[must_use]
    pub fn raw_params(&self) -> Option<RawJson<'a>> {
        self.params
    }

    /// `params._meta` as raw JSON.
    #[must_use]
    pub fn raw_meta(&self) -> Option<RawJson<'a>> {
        self.meta
    }

    /// `params.name` as raw JSON.
    #[must_use]
    pub fn name(&self) -> Option<RawJson<'a>> {
        self.name
    }

    /// `params.name` when it is a string.
    #[must_use]
    pub fn name_str(&self) -> Option<Cow<'a, str>> {
        self.name.and_then(str_of)
    }

    /// `params.uri` as raw JSON.
    #[must_use]
    pub fn uri(&self) -> Option<RawJson<'a>> {
        self.uri
    }

    /// `params.arguments` as raw JSON.
    #[must_use]
    pub fn arguments(&self) -> Option<RawJson<'a>> {
        self.arguments
    }

    /// The member `Mcp-Name` mirrors for `method` (`name` or `uri`), when the method has one
    /// and the member is present and not `null`.
    #[must_use]
    pub fn mirrored_name(&self, method: &str) -> Option<RawJson<'a>> {
        let v = match super::name_member(method)? {
            "uri" => self.uri,
            "taskId" => self.task_id,
            _ => self.name,
        }?;
        (v.get() != "null").then_some(v)
    }
}

/// The members of `_meta` a [`Meta`] reads, in the order of its fields.
const META_KEYS: [&str; 9] = [
    PROTOCOL_VERSION_KEY,
    CLIENT_CAPABILITIES_KEY,
    super::CLIENT_INFO_KEY,
    super::LOG_LEVEL_KEY,
    super::SUBSCRIPTION_ID_KEY,
    "progressToken",
    "traceparent",
    "tracestate",
    "baggage",
];

/// A `_meta` object, read in one pass: each reserved key's value as raw JSON, borrowed. A key
/// whose value is `null` reads as absent.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Meta<'a> {
    protocol_version: Option<RawJson<'a>>,
    client_capabilities: Option<RawJson<'a>>,
    client_info: Option<RawJson<'a>>,
    log_level: Option<RawJson<'a>>,
    subscription_id: Option<RawJson<'a>>,
    progress_token: Option<RawJson<'a>>,
    traceparent: Option<RawJson<'a>>,
    tracestate: Option<RawJson<'a>>,
    baggage: Option<RawJson<'a>>,
}

impl<'a> Meta<'a> {
    /// Reads a `_meta` object.
    ///
    /// # Errors
    ///
    /// -32602 when it is not an object or names a member twice.
    pub fn parse(meta: RawJson<'a>) -> Result<Self, Rejection> {
        Self::read(Members::scanned(meta.get()))
    }

    /// A `_meta` from its members.
    pub(crate) fn read(members: Members<'a>) -> Result<Self, Rejection> {
        Ok(Self::of(pick(members, META_KEYS, "params._meta")?))
    }

    /// A `_meta` from the values of [`META_KEYS`].
    fn of(values: [Option<RawJson<'a>>; 9]) -> Self {
        let [
            protocol_version,
            client_capabilities,
            client_info,
            log_level,
            subscription_id,
            progress_token,
            traceparent,
            tracestate,
            baggage,
        ] = values;
        Self {
            protocol_version,
            client_capabilities,
            client_info,
            log_level,
            subscription_id,
            progress_token,
            traceparent,
            tracestate,
            baggage,
        }
    }

    /// `io.modelcontextprotocol/protocolVersion`.
    #[must_use]
    pub fn protocol_version(&self) -> Option<RawJson<'a>> {
        self.protocol_version
    }

    /// `io.modelcontextprotocol/protocolVersion` when it is a string.
    #[must_use]
    pub fn protocol_version_str(&self) -> Option<Cow<'a, str>> {
        self.protocol_version.and_then(str_of)
    }

    /// `io.modelcontextprotocol/clientCapabilities`.
    #[must_use]
    pub fn client_capabilities(&self) -> Option<RawJson<'a>> {
        self.client_capabilities
    }

    /// `io.modelcontextprotocol/clientInfo`.
    #[must_use]
    pub fn client_info(&self) -> Option<RawJson<'a>> {
        self.client_info
    }

    /// `io.modelcontextprotocol/logLevel`.
    #[must_use]
    pub fn log_level(&self) -> Option<RawJson<'a>> {
        self.log_level
    }

    /// `io.modelcontextprotocol/subscriptionId` (on a notification of a subscription).
    #[must_use]
    pub fn subscription_id(&self) -> Option<RawJson<'a>> {
        self.subscription_id
    }

    /// `progressToken`.
    #[must_use]
    pub fn progress_token(&self) -> Option<RawJson<'a>> {
        self.progress_token
    }

    /// `traceparent` (W3C Trace Context).
    #[must_use]
    pub fn traceparent(&self) -> Option<RawJson<'a>> {
        self.traceparent
    }

    /// `tracestate` (W3C Trace Context).
    #[must_use]
    pub fn tracestate(&self) -> Option<RawJson<'a>> {
        self.tracestate
    }

    /// `baggage` (W3C Baggage).
    #[must_use]
    pub fn baggage(&self) -> Option<RawJson<'a>> {
        self.baggage
    }

    /// Whether this `_meta` names a protocol version: the mark of a modern request.
    #[must_use]
    pub fn is_modern(&self) -> bool {
        self.protocol_version.is_some()
    }
}

/// The value of member `key` of the JSON object `obj`, borrowed, found in one pass without
/// building the object; `Ok(None)` when absent.
///
/// # Errors
///
/// When `obj` is not an object or names `key` twice.
pub fn member<'a>(obj: RawJson<'a>, key: &str) -> Result<Option<RawJson<'a>>, Rejection> {
    let [v] = pick(Members::scanned(obj.get()), [key], "the object")?;
    Ok(v)
}

/// The log levels of `io.modelcontextprotocol/logLevel`, least severe first (RFC 5424's).
pub const LOG_LEVELS: [&str; 8] =
    ["debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"];

/// A modern request's envelope, validated.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Envelope<'a> {
    /// The protocol version the request speaks; one of those served.
    pub version: Cow<'a, str>,
    /// The client's capabilities (an object).
    pub capabilities: RawJson<'a>,
    /// The client's name and version, when given.
    pub client_info: Option<RawJson<'a>>,
    /// The least severe log level the client wants for this request, when given (an index
    /// into [`LOG_LEVELS`]); without it the server sends no log notification for the request.
    pub log_level: Option<usize>,
    /// The whole `_meta`.
    pub meta: Meta<'a>,
}

/// Validates a modern request's `_meta` envelope, as a server on any transport must before it
/// serves the request: `_meta` an object carrying `io.modelcontextprotocol/protocolVersion` (a
/// string) and `io.modelcontextprotocol/clientCapabilities` (an object), else -32602; a
/// `logLevel`, when given, one of [`LOG_LEVELS`], else -32602; a version not in `supported`,
/// -32022 naming them.
///
/// # Errors
///
/// The [`Rejection`] to answer the request with.
pub fn check_envelope<'a, S: AsRef<str>>(
    params: &RequestParams<'a>,
    supported: &[S],
) -> Result<Envelope<'a>, Rejection> {
    let Some(meta) = params.meta()? else { return Err(absent()) };
    check_meta(meta, supported)
}

/// [`check_envelope`] of a `_meta` already read.
///
/// # Errors
///
/// As [`check_envelope`].
pub fn check_meta<'a, S: AsRef<str>>(
    meta: Meta<'a>,
    supported: &[S],
) -> Result<Envelope<'a>, Rejection> {
    let meta = required(meta)?;
    let version = envelope_version(&meta)?;
    if !supported.iter().any(|s| s.as_ref() == version) {
        return Err(Rejection::unsupported_version(&version, supported));
    }
    finish_envelope(meta, version)
}

/// The modern envelope of a request, when it has one: `None` for a request whose params carry
/// no `_meta` naming a protocol version (a legacy one); else the envelope, checked as
/// [`check_meta`] does.
///
/// `_meta` is looked for in the members the parse recorded; when it recorded none, before
/// anything is read, so a request without one pays a memchr pass or two over its params; a key
/// written with `\u` escapes (which could spell `_meta`) is read too, as the HTTP header check
/// reads it. One that has it is read, whatever the era: a `_meta`
/// that is not an object, or a member named twice, is -32602.
///
/// # Errors
///
/// As [`check_meta`], and -32602 for `params` that are not an object.
pub fn modern_envelope<'a, S: AsRef<str>>(
    msg: &Message<'a>,
    supported: &[S],
) -> Result<Option<(RequestParams<'a>, Envelope<'a>)>, Rejection> {
    // With the members the parse recorded, reading `params` costs no pass over it.
    let Some(members) = msg.param_members() else { return Ok(None) };
    if !members.is_recorded() && !members.may_name_meta() {
        return Ok(None);
    }
    let params = RequestParams::of(msg)?;
    match params.meta()?.filter(Meta::is_modern) {
        Some(meta) => Ok(Some((params, check_meta(meta, supported)?))),
        None => Ok(None),
    }
}

/// The envelope's `_meta`, with both required keys present (rung one of the header checks).
#[cfg(feature = "http")]
pub(crate) fn envelope_meta<'a>(params: &RequestParams<'a>) -> Result<Meta<'a>, Rejection> {
    let Some(meta) = params.meta()? else { return Err(absent()) };
    required(meta)
}

/// The error for a request with no `_meta` at all.
fn absent() -> Rejection {
    Rejection::invalid(format!(
        "Invalid params: params._meta must be an object carrying {PROTOCOL_VERSION_KEY} and \
         {CLIENT_CAPABILITIES_KEY}"
    ))
}

/// `meta` when both required keys are present.
pub(crate) fn required(meta: Meta<'_>) -> Result<Meta<'_>, Rejection> {
    if meta.protocol_version.is_some() && meta.client_capabilities.is_some() {
        return Ok(meta);
    }
    let missing: Vec<&str> = [
        (PROTOCOL_VERSION_KEY, meta.protocol_version.is_none()),
        (CLIENT_CAPABILITIES_KEY, meta.client_capabilities.is_none()),
    ]
    .into_iter()
    .filter_map(|(k, gone)| gone.then_some(k))
    .collect();
    if !missing.is_empty() {
        return Err(Rejection::invalid(format!(
            "Invalid params: params._meta is missing {}",
            missing.join(" and ")
        )));
    }
    Ok(meta)
}

/// The envelope's version as a string.
pub(crate) fn envelope_version<'a>(meta: &Meta<'a>) -> Result<Cow<'a, str>, Rejection> {
    version_string(meta.protocol_version_str())
}

/// [`envelope_version`] of the version already read as a string (`None`: it is not one).
pub(crate) fn version_string(version: Option<Cow<'_, str>>) -> Result<Cow<'_, str>, Rejection> {
    version.ok_or_else(|| {
        Rejection::invalid(format!("Invalid params: {PROTOCOL_VERSION_KEY} must be a string"))
    })
}

/// The rest of the envelope's checks, once the version is known to be served.
pub(crate) fn finish_envelope<'a>(
    meta: Meta<'a>,
    version: Cow<'a, str>,
) -> Result<Envelope<'a>, Rejection> {
    let capabilities = meta.client_capabilities.expect("checked by envelope_meta");
    if !capabilities.get().starts_with('{') {
        return Err(Rejection::invalid(format!(
            "Invalid params: {CLIENT_CAPABILITIES_KEY} must be an object"
        )));
    }
    let log_level = match meta.log_level {
        None => None,
        Some(l) => {
            let level = str_of(l).and_then(|l| LOG_LEVELS.iter().position(|k| *k == l));
            let Some(level) = level else {
                return Err(Rejection::invalid(format!(
                    "Invalid params: {} must be one of {}",
                    super::LOG_LEVEL_KEY,
                    LOG_LEVELS.join(", ")
                )));
            };
            Some(level)
        }
    };
    Ok(Envelope { version, capabilities, client_info: meta.client_info, log_level, meta })
}

/// A result's `resultType` (2026-07-28): `"complete"` or `"input_required"`. `Ok(None)` when
/// absent, which a client reads as `"complete"` (a legacy server's result).
///
/// # Errors
///
/// When the result is not an object or `resultType` is not a string.
pub fn result_type(result: RawJson<'_>) -> Result<Option<Cow<'_, str>>, Rejection> {
    let [v] = pick(Members::scanned(result.get()), ["resultType"], "result")?;
    match v {
        None => Ok(None),
        Some(v) => str_of(v)
            .map(Some)
            .ok_or_else(|| Rejection::invalid("result: resultType must be a string")),
    }
}

#[cfg(test)]
mod tests;
