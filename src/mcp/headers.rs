//! The Streamable HTTP header rules of 2026-07-28: the headers a POST mirrors from its body, and
//! their validation against it.
//!
//! | header | mirrors | required for |
//! |---|---|---|
//! | `MCP-Protocol-Version` | `params._meta["io.modelcontextprotocol/protocolVersion"]` | every request |
//! | `Mcp-Method` | `method` | every request |
//! | `Mcp-Name` | `params.name` (`tools/call`, `prompts/get`), `params.uri` (`resources/read`), `params.taskId` (`tasks/get`, `tasks/update`, `tasks/cancel`) | those methods |
//! | `Mcp-Param-{Name}` | the `tools/call` argument whose schema says `"x-mcp-header": "{Name}"` | arguments present and not `null` |
//!
//! Names compare without case, values with it, after surrounding spaces and tabs are dropped.
//! `Mcp-Name` and `Mcp-Param-*` values that are not plain visible ASCII travel as
//! `=?base64?{standard base64 of the UTF-8}?=`, decoded before they are compared. Anything
//! missing, repeated, malformed or different is -32020 (HTTP 400), with the request's id.
//!
//! [`check`] is what a server, or a gateway that routes on the headers, runs on every modern
//! POST; it reads the body through the borrowed views of [`super::meta`] and allocates nothing
//! when the request is valid.

use std::borrow::Cow;

use base64::Engine as _;
use http::{HeaderMap, HeaderName, HeaderValue};

use super::annotations::{ParamHeader, ParamKind, ToolHeaders};
use super::meta::{
    Envelope, Meta, Rejection, RequestParams, envelope_meta, envelope_version, finish_envelope,
    member, str_of, version_string,
};
use crate::{error::ErrorCode, message::Message, message::RawJson};

/// `MCP-Protocol-Version`, as `http` names it.
pub const PROTOCOL_VERSION: &str = "mcp-protocol-version";
/// `Mcp-Method`.
pub const METHOD: &str = "mcp-method";
/// `Mcp-Name`.
pub const NAME: &str = "mcp-name";
/// The prefix of `Mcp-Param-{Name}`, in lower case.
pub const PARAM_PREFIX: &str = "mcp-param-";

/// The three routing headers as `http` names, made once (a name built from a `&str` on each
/// insert is copied into an allocation of its own).
const VERSION_NAME: HeaderName = HeaderName::from_static(PROTOCOL_VERSION);
const METHOD_NAME: HeaderName = HeaderName::from_static(METHOD);
const NAME_NAME: HeaderName = HeaderName::from_static(NAME);

/// `text` as a header value: a static one for the versions and methods a client sends most
/// (no allocation), a copy otherwise.
fn known_value(text: &str) -> Option<HeaderValue> {
    const KNOWN: [&str; 17] = [
        "2026-07-28",
        "2025-11-25",
        "2025-06-18",
        "2025-03-26",
        "2024-11-05",
        "tools/call",
        "tools/list",
        "resources/read",
        "resources/list",
        "resources/templates/list",
        "prompts/get",
        "prompts/list",
        "completion/complete",
        "server/discover",
        "subscriptions/listen",
        "logging/setLevel",
        "ping",
    ];
    KNOWN.iter().find(|k| **k == text).map(|k| HeaderValue::from_static(k))
}

const SENTINEL_START: &str = "=?base64?";
const SENTINEL_END: &str = "?=";

fn mismatch(message: impl Into<Cow<'static, str>>) -> Rejection {
    Rejection::new(ErrorCode::HEADER_MISMATCH, message)
}

/// A header's value, decoded: surrounding spaces and tabs dropped, the base64 form (when
/// `base64` allows it) decoded. Borrowed unless it was base64.
///
/// # Errors
///
/// -32020 when the value holds a byte outside visible ASCII, space and tab, or is base64 that
/// does not decode (or decodes to bytes that are not UTF-8).
pub fn decode_value<'v>(
    name: &str,
    value: &'v HeaderValue,
    base64: bool,
) -> Result<Cow<'v, str>, Rejection> {
    decode(value, base64).map_err(|why| mismatch(format!("Header mismatch: {name} holds {why}")))
}

/// [`decode_value`], its failure said without the header's name (which costs a `String`).
fn decode(value: &HeaderValue, base64: bool) -> Result<Cow<'_, str>, &'static str> {
    // `to_str` takes exactly tabs and visible ASCII (0x20 to 0x7e), in one pass; the only
    // whitespace left is spaces and tabs, which `trim_ascii` trims (byte by byte, where a
    // pattern of chars decodes each).
    let Ok(text) = value.to_str() else {
        return Err("invalid characters");
    };
    let text = text.trim_ascii();
    let Some(encoded) = text
        .strip_prefix(SENTINEL_START)
        .and_then(|t| t.strip_suffix(SENTINEL_END))
        .filter(|_| base64 && text.len() >= SENTINEL_START.len() + SENTINEL_END.len())
    else {
        return Ok(Cow::Borrowed(text));
    };
    let decoded =
        base64::engine::general_purpose::STANDARD.decode(encoded).map_err(|_| "invalid base64")?;
    String::from_utf8(decoded).map(Cow::Owned).map_err(|_| "base64 of bytes that are not UTF-8")
}

/// Writes `value` as a header value: as is when it is plain visible ASCII with no surrounding
/// space (and does not look like the base64 form), else as `=?base64?…?=`.
///
/// ```
/// use mcpwire::mcp::headers::encode_value;
///
/// assert_eq!(encode_value("us-west1"), "us-west1");
/// assert_eq!(encode_value("Hello, 世界"), "=?base64?SGVsbG8sIOS4lueVjA==?=");
/// assert_eq!(encode_value(" padded "), "=?base64?IHBhZGRlZCA=?=");
/// assert_eq!(encode_value("=?base64?literal?="), "=?base64?PT9iYXNlNjQ/bGl0ZXJhbD89?=");
/// ```
#[must_use]
pub fn encode_value(value: &str) -> Cow<'_, str> {
    let sentinel = value.starts_with(SENTINEL_START) && value.ends_with(SENTINEL_END);
    let edge_space = value.starts_with(' ') || value.ends_with(' ');
    if value.bytes().all(|b| (0x20..=0x7e).contains(&b)) && !edge_space && !sentinel {
        return Cow::Borrowed(value);
    }
    let mut out = String::with_capacity(value.len() * 4 / 3 + 16);
    out.push_str(SENTINEL_START);
    base64::engine::general_purpose::STANDARD.encode_string(value, &mut out);
    out.push_str(SENTINEL_END);
    Cow::Owned(out)
}

/// The one value of header `name`, or `None`.
///
/// # Errors
///
/// -32020 when the header is given more than once: a reader of the first and a reader of the
/// last would disagree.
fn single<K>(headers: &HeaderMap, name: K) -> Result<Option<&HeaderValue>, Rejection>
where
    K: http::header::AsHeaderName + AsRef<str> + Copy,
{
    let mut all = headers.get_all(name).iter();
    let first = all.next();
    if all.next().is_some() {
        let name = name.as_ref();
        return Err(mismatch(format!("Header mismatch: {name} is given more than once")));
    }
    Ok(first)
}

/// The one value of each routing header (`MCP-Protocol-Version`, `Mcp-Method`, `Mcp-Name`),
/// found in one pass over the headers rather than a look-up (a hash of the name) for each.
///
/// # Errors
///
/// As [`single`]: -32020 when one of them is given more than once.
fn routing(headers: &HeaderMap) -> Result<[Option<&HeaderValue>; 3], Rejection> {
    let names = [&VERSION_NAME, &METHOD_NAME, &NAME_NAME];
    let mut found = [None; 3];
    for (name, value) in headers {
        let Some(i) = names.iter().position(|n| *n == name) else { continue };
        if found[i].replace(value).is_some() {
            let name = names[i].as_str();
            return Err(mismatch(format!("Header mismatch: {name} is given more than once")));
        }
    }
    Ok(found)
}

/// Validates a modern request's headers and envelope, in this order (the first failure wins):
///
/// 1. `MCP-Protocol-Version`, `Mcp-Method` or `Mcp-Name` given twice: -32020;
/// 2. the `_meta` envelope malformed or incomplete: -32602;
/// 3. `MCP-Protocol-Version` missing or not the body's version, `Mcp-Method` missing or not the
///    body's method, `Mcp-Name` missing or not the body's `name` / `uri` (where the method has
///    one): -32020 (a client that disagrees with itself is told so before it is told its
///    version is not served);
/// 4. the version not a string: -32602; not in `supported`: -32022;
/// 5. `logLevel` or `clientCapabilities` malformed: -32602;
/// 6. for `tools/call` of a tool in `tools`: each annotated argument present and not `null`
///    must have its `Mcp-Param-{Name}` header, equal to it (integers compared as numbers), and
///    no annotated header may come without its argument: -32020.
///
/// # Errors
///
/// The [`Rejection`] to answer with (HTTP 400, [`super::http_status`]).
///
/// # Examples
///
/// ```
/// use http::HeaderMap;
/// use mcpwire::mcp::headers::check;
/// use mcpwire::{ErrorCode, FrameParser, Limits};
///
/// let body = r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{
///   "io.modelcontextprotocol/protocolVersion":"2026-07-28",
///   "io.modelcontextprotocol/clientCapabilities":{}}}}"#;
/// let frame = FrameParser::new(Limits::default()).parse(body.into());
/// let msg = frame.message().unwrap();
/// let mut h = HeaderMap::new();
/// h.insert("mcp-protocol-version", "2026-07-28".parse().unwrap());
/// h.insert("mcp-method", "tools/list".parse().unwrap());
/// assert!(check(&h, &msg, &["2026-07-28"], None).is_ok());
/// h.insert("mcp-method", "tools/call".parse().unwrap());
/// assert_eq!(check(&h, &msg, &["2026-07-28"], None).unwrap_err().code, ErrorCode::HEADER_MISMATCH);
/// ```
pub fn check<'a, S: AsRef<str>>(
    headers: &HeaderMap,
    msg: &Message<'a>,
    supported: &[S],
    tools: Option<&ToolHeaders>,
) -> Result<Envelope<'a>, Rejection> {
    let [version_h, method_h, name_h] = routing(headers)?;
    let method = msg.method().unwrap_or_default();
    let params = RequestParams::of(msg)?;
    let meta = envelope_meta(&params)?;

    let Some(version_h) = version_h else {
        return Err(mismatch("Header mismatch: MCP-Protocol-Version is required"));
    };
    let version_h = decode_value("MCP-Protocol-Version", version_h, false)?;
    // Read once, for the comparison here and for step 4.
    let body_version = meta.protocol_version_str();
    if body_version.as_deref() != Some(&*version_h) {
        return Err(mismatch(format!(
            "Header mismatch: MCP-Protocol-Version {version_h:?} is not the body's {}",
            meta.protocol_version().map_or("", |v| v.get())
        )));
    }
    let Some(method_h) = method_h else {
        return Err(mismatch("Header mismatch: Mcp-Method is required"));
    };
    let method_h = decode_value("Mcp-Method", method_h, false)?;
    if method_h != method {
        return Err(mismatch(format!(
            "Header mismatch: Mcp-Method {method_h:?} is not the body's {method:?}"
        )));
    }
    if let Some(body) = params.mirrored_name(method) {
        let Some(name_h) = name_h else {
            return Err(mismatch(format!("Header mismatch: Mcp-Name is required for {method}")));
        };
        let name_h = decode_value("Mcp-Name", name_h, true)?;
        if str_of(body).as_deref() != Some(&*name_h) {
            return Err(mismatch(format!(
                "Header mismatch: Mcp-Name {name_h:?} is not the body's {}",
                body.get()
            )));
        }
    }

    let version = version_string(body_version)?;
    if !supported.iter().any(|s| s.as_ref() == version) {
        return Err(Rejection::unsupported_version(&version, supported));
    }
    let envelope = finish_envelope(meta, version)?;

    if method == "tools/call"
        && let Some(tools) = tools
        && let Some(tool) = params.name_str()
        && let Some(annotated) = tools.get(&tool)
    {
        check_params(headers, annotated, params.arguments())?;
    }
    Ok(envelope)
}

/// Step 6 of [`check`].
fn check_params(
    headers: &HeaderMap,
    annotated: &[ParamHeader],
    arguments: Option<RawJson<'_>>,
) -> Result<(), Rejection> {
    for p in annotated {
        let header = single(headers, &p.header)?;
        let value = match arguments {
            Some(args) => value_at(args, &p.path)?,
            None => None,
        };
        let name = || format!("Mcp-Param-{}", p.token);
        match (value, header) {
            (None, None) => {}
            (None, Some(_)) => {
                return Err(mismatch(format!(
                    "Header mismatch: {} is given but argument {} is not",
                    name(),
                    p.path.join(".")
                )));
            }
            (Some(_), None) => {
                return Err(mismatch(format!("Header mismatch: {} is required", name())));
            }
            (Some(v), Some(h)) => {
                let h = decode(h, true)
                    .map_err(|why| mismatch(format!("Header mismatch: {} holds {why}", name())))?;
                if !matches(p.kind, v, &h) {
                    return Err(mismatch(format!(
                        "Header mismatch: {} {h:?} is not the body's {}",
                        name(),
                        v.get()
                    )));
                }
            }
        }
    }
    Ok(())
}

/// The value at a chain of object keys (`None` when a step is missing, `null` or not an
/// object).
fn value_at<'a>(mut at: RawJson<'a>, path: &[String]) -> Result<Option<RawJson<'a>>, Rejection> {
    for key in path {
        if !at.get().starts_with('{') {
            return Ok(None);
        }
        match member(at, key)? {
            Some(v) => at = v,
            None => return Ok(None),
        }
    }
    Ok(Some(at))
}

/// Whether a decoded header value says what the body's value does.
fn matches(kind: ParamKind, body: RawJson<'_>, header: &str) -> bool {
    match kind {
        ParamKind::String => str_of(body).is_some_and(|s| s == header),
        ParamKind::Boolean => matches!((body.get(), header), ("true", "true") | ("false", "false")),
        ParamKind::Integer => match (integer(body.get()), integer(header)) {
            (Some(b), Some(h)) => b == h,
            _ => false,
        },
    }
}

/// A JSON number with no fractional part (`42`, `-7`, `42.0`, `4.2e1`), as an integer within
/// the range JSON numbers keep exactly (±2^53); `None` for anything else.
fn integer(text: &str) -> Option<i64> {
    const SAFE: i64 = (1 << 53) - 1;
    if text.bytes().all(|b| b.is_ascii_digit() || b == b'-') {
        return text.parse::<i64>().ok().filter(|n| n.abs() <= SAFE);
    }
    let n: serde_json::Number = serde_json::from_str(text).ok()?;
    let f = n.as_f64()?;
    // The cast is exact: f is integral and within ±2^53.
    #[allow(clippy::cast_possible_truncation)]
    (f.fract() == 0.0 && f.abs() <= SAFE as f64).then_some(f as i64)
}

/// The headers a client writes for a modern request: `MCP-Protocol-Version` and `Mcp-Method`
/// always, `Mcp-Name` where the method has one, and for `tools/call` of an annotated tool the
/// `Mcp-Param-*` of each argument present (strings as they are or in base64, integers in
/// decimal, booleans as `true` / `false`).
///
/// # Errors
///
/// -32602 when the body has no usable envelope, or a version or method that a header cannot
/// carry as it is (they have no base64 form); -32020 when an annotated argument has a value its
/// type does not allow.
pub fn mirror(
    msg: &Message<'_>,
    tools: Option<&ToolHeaders>,
    out: &mut HeaderMap,
) -> Result<(), Rejection> {
    let params = RequestParams::of(msg)?;
    let meta = envelope_meta(&params)?;
    mirror_scanned(msg.method().unwrap_or_default(), &params, &meta, tools, out)
}

/// [`mirror`] of a request whose `params` and `_meta` the caller has already read (a client
/// reads them to tell the era), so they are not scanned again; `meta` has both required keys
/// (`meta::required` checked it).
pub(crate) fn mirror_scanned(
    method: &str,
    params: &RequestParams<'_>,
    meta: &Meta<'_>,
    tools: Option<&ToolHeaders>,
    out: &mut HeaderMap,
) -> Result<(), Rejection> {
    let version = envelope_version(meta)?;
    let value = |text: &str| {
        HeaderValue::from_str(text)
            .map_err(|_| Rejection::invalid("a value that no header can hold"))
    };
    // The version and the method have no base64 form: a value a header cannot carry as it is
    // cannot be mirrored at all.
    let plain = |name: &str, text: &str| match encode_value(text) {
        Cow::Borrowed(t) => known_value(t).map_or_else(|| value(t), Ok),
        Cow::Owned(_) => Err(Rejection::invalid(format!(
            "Invalid params: {name} {text:?} cannot travel in an HTTP header"
        ))),
    };
    out.insert(VERSION_NAME, plain("the protocol version", &version)?);
    out.insert(METHOD_NAME, plain("the method", method)?);
    if let Some(name) = params.mirrored_name(method) {
        let name =
            str_of(name).ok_or_else(|| Rejection::invalid("params.name must be a string"))?;
        out.insert(NAME_NAME, value(&encode_value(&name))?);
    }
    let annotated = match (method, tools, params.name_str()) {
        ("tools/call", Some(tools), Some(tool)) => tools.get(&tool),
        _ => None,
    };
    let (Some(annotated), Some(args)) = (annotated, params.arguments()) else { return Ok(()) };
    for p in annotated {
        let Some(v) = value_at(args, &p.path)? else { continue };
        let text: Cow<'_, str> = match p.kind {
            ParamKind::String => str_of(v).ok_or_else(|| kind_error(p))?,
            ParamKind::Boolean if matches!(v.get(), "true" | "false") => Cow::Borrowed(v.get()),
            ParamKind::Integer => {
                Cow::Owned(integer(v.get()).ok_or_else(|| kind_error(p))?.to_string())
            }
            ParamKind::Boolean => return Err(kind_error(p)),
        };
        let name = HeaderName::from_bytes(p.header.as_bytes())
            .map_err(|_| Rejection::invalid("an x-mcp-header that no header name can hold"))?;
        out.append(name, value(&encode_value(&text))?);
    }
    Ok(())
}

fn kind_error(p: &ParamHeader) -> Rejection {
    mismatch(format!(
        "Header mismatch: argument {} is not of its declared type, so Mcp-Param-{} cannot mirror it",
        p.path.join("."),
        p.token
    ))
}

#[cfg(test)]
mod tests;
