//! `tools/list` and `tools/call`: tools, their annotations, and what a call takes and returns.

use std::borrow::Cow;

use serde::{Deserialize, Serialize};

use super::{CacheScope, Content, Raw};
use crate::mcp::meta::{Rejection, pick, str_of};
use crate::message::members::Members;

/// The members of `params` a [`CallToolParams`] reads, in the order [`CallToolParams::read`]
/// takes their values.
const CALL_KEYS: [&str; 5] = ["name", "arguments", "inputResponses", "requestState", "_meta"];

/// One tool a server offers.
///
/// `input_schema` and `output_schema` are JSON Schema (2020-12 by default) kept as their exact
/// text: `$schema`, `$defs`, `$ref`, composition and conditional keywords pass through
/// unchanged and nothing is dereferenced.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, yoke::Yokeable)]
#[serde(rename_all = "camelCase")]
pub struct Tool<'a> {
    /// The tool's name, unique on the server.
    #[serde(borrow)]
    pub name: Cow<'a, str>,
    /// A title for people.
    #[serde(borrow, default, skip_serializing_if = "Option::is_none")]
    pub title: Option<Cow<'a, str>>,
    /// What it does, for the model.
    #[serde(borrow, default, skip_serializing_if = "Option::is_none")]
    pub description: Option<Cow<'a, str>>,
    /// The JSON Schema of its arguments (an object schema).
    #[serde(borrow)]
    pub input_schema: Raw<'a>,
    /// The JSON Schema of its `structuredContent`.
    #[serde(borrow, default, skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<Raw<'a>>,
    /// Hints about its behaviour.
    #[serde(borrow, default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<ToolAnnotations<'a>>,
    /// How it is executed: whether it may run as a task (the tasks extension).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub execution: Option<super::ToolExecution>,
    /// Extra metadata.
    #[serde(borrow, rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Raw<'a>>,
}

/// The schema of a tool that takes no arguments.
pub const EMPTY_OBJECT_SCHEMA: &str = r#"{"type":"object","properties":{}}"#;

impl<'a> Tool<'a> {
    /// A tool taking no arguments.
    #[must_use]
    pub fn new(name: impl Into<Cow<'a, str>>) -> Self {
        Self {
            name: name.into(),
            title: None,
            description: None,
            input_schema: Raw::parse(EMPTY_OBJECT_SCHEMA).expect("a fixed, valid schema"),
            output_schema: None,
            annotations: None,
            execution: None,
            meta: None,
        }
    }

    /// With a description.
    #[must_use]
    pub fn description(mut self, description: impl Into<Cow<'a, str>>) -> Self {
        self.description = Some(description.into());
        self
    }

    /// With a title.
    #[must_use]
    pub fn title(mut self, title: impl Into<Cow<'a, str>>) -> Self {
        self.title = Some(title.into());
        self
    }

    /// With the JSON Schema of its arguments, kept exactly as given.
    ///
    /// # Panics
    ///
    /// When `schema` is not one JSON value: schemas are written by the host, so a bad one is a
    /// bug to find at start-up.
    #[must_use]
    pub fn input_schema(mut self, schema: &'a str) -> Self {
        self.input_schema = Raw::parse(schema).expect("a tool's input schema must be JSON");
        self
    }

    /// With the JSON Schema of its structured output, kept exactly as given.
    ///
    /// # Panics
    ///
    /// When `schema` is not one JSON value.
    #[must_use]
    pub fn output_schema(mut self, schema: &'a str) -> Self {
        self.output_schema = Some(Raw::parse(schema).expect("a tool's output schema must be JSON"));
        self
    }

    /// Whether it may run as a task (`execution.taskSupport`, the tasks extension): a server
    /// runs the same handler as a task when the client declared the extension.
    #[must_use]
    pub fn task_support(mut self, support: super::TaskSupport) -> Self {
        self.execution = Some(super::ToolExecution { task_support: support });
        self
    }

    /// The task support it declares ([`super::TaskSupport::Forbidden`] when it declares none).
    #[must_use]
    pub fn task_support_of(&self) -> super::TaskSupport {
        self.execution.map(|e| e.task_support).unwrap_or_default()
    }

    /// With behaviour hints.
    #[must_use]
    pub fn annotations(mut self, annotations: ToolAnnotations<'a>) -> Self {
        self.annotations = Some(annotations);
        self
    }
}

/// Hints about a tool's behaviour; untrusted unless the server is.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolAnnotations<'a> {
    /// A title for people.
    #[serde(borrow, default, skip_serializing_if = "Option::is_none")]
    pub title: Option<Cow<'a, str>>,
    /// It changes nothing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_only_hint: Option<bool>,
    /// It may destroy data.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub destructive_hint: Option<bool>,
    /// Calling it twice with the same arguments does no more than once.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idempotent_hint: Option<bool>,
    /// It reaches outside the server (the web, other systems).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub open_world_hint: Option<bool>,
}

/// The `tools/list` result.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, yoke::Yokeable)]
#[serde(rename_all = "camelCase")]
pub struct ListToolsResult<'a> {
    /// The tools.
    #[serde(borrow)]
    pub tools: Vec<Tool<'a>>,
    /// Where the next page starts, when there is one.
    #[serde(borrow, default, skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<Cow<'a, str>>,
    /// How long the client may keep the result, in milliseconds (2026-07-28).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttl_ms: Option<u64>,
    /// Who may share a cached copy (2026-07-28).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_scope: Option<CacheScope>,
}

/// The `tools/call` params.
///
/// Decoded from a request, it borrows: `name` (unless written with escapes) and the raw
/// `arguments`, so reading a call allocates nothing.
///
/// # Examples
///
/// ```
/// use mcpwire::mcp::types::CallToolParams;
///
/// let p: CallToolParams<'_> =
///     serde_json::from_str(r#"{"name":"echo","arguments":{"message":"hi"}}"#).unwrap();
/// assert_eq!(p.name, "echo");
/// assert_eq!(p.arguments.unwrap().get(), r#"{"message":"hi"}"#);
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CallToolParams<'a> {
    /// The tool.
    #[serde(borrow)]
    pub name: Cow<'a, str>,
    /// Its arguments, an object, untrusted.
    #[serde(borrow, default, skip_serializing_if = "Option::is_none")]
    pub arguments: Option<Raw<'a>>,
    /// The answers to a previous `input_required` result, keyed as asked (2026-07-28).
    #[serde(borrow, default, skip_serializing_if = "Option::is_none")]
    pub input_responses: Option<Raw<'a>>,
    /// The state a previous `input_required` result asked to be echoed (2026-07-28).
    #[serde(borrow, default, skip_serializing_if = "Option::is_none")]
    pub request_state: Option<Cow<'a, str>>,
    /// The request's metadata.
    #[serde(borrow, rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Raw<'a>>,
}

impl<'a> CallToolParams<'a> {
    /// A call of `name` with no arguments.
    #[must_use]
    pub fn new(name: impl Into<Cow<'a, str>>) -> Self {
        Self {
            name: name.into(),
            arguments: None,
            input_responses: None,
            request_state: None,
            meta: None,
        }
    }

    /// Reads a request's `params` with the member scanner: nothing is allocated when the name
    /// carries no escapes, however deep `arguments` and `_meta` are (serde_json's `Deserialize`
    /// allocates to skip or capture a nested value).
    ///
    /// # Errors
    ///
    /// -32602 naming the field: `params` not an object, a member named twice, `name` not a
    /// string, `arguments` or `inputResponses` not an object, `requestState` not a string, an
    /// object kept (`arguments`, `inputResponses`, `_meta`) not well-formed JSON (checked
    /// without allocating, for `params` that no frame parser validated).
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpwire::RawJson;
    /// use mcpwire::mcp::types::CallToolParams;
    ///
    /// let p = CallToolParams::from_params(RawJson::new(r#"{"name":"echo","arguments":{"a":{"b":1}}}"#)).unwrap();
    /// assert_eq!(p.name, "echo");
    /// assert_eq!(p.arguments.unwrap().get(), r#"{"a":{"b":1}}"#);
    /// assert!(CallToolParams::from_params(RawJson::new(r#"{"name":1}"#)).is_err());
    /// ```
    pub fn from_params(params: crate::message::RawJson<'a>) -> Result<Self, Rejection> {
        Self::read(pick(Members::scanned(params.get()), CALL_KEYS, "params")?, false)
    }

    /// Reads the params of a decoded message (`Frame::message`, `Incoming::message`): as
    /// [`CallToolParams::from_params`], without checking again what the frame parser already
    /// validated (the nested values are JSON), so it costs only the member scan. A message
    /// without params reads as a call with no name (-32602).
    ///
    /// # Errors
    ///
    /// As [`CallToolParams::from_params`].
    ///
    /// # Examples
    ///
    /// ```
    /// use mcpwire::mcp::types::CallToolParams;
    /// use mcpwire::{FrameParser, Limits};
    ///
    /// let line = r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"a":1}}}"#;
    /// let frame = FrameParser::new(Limits::default()).parse(line.into());
    /// let call = CallToolParams::of(&frame.message().unwrap()).unwrap();
    /// assert_eq!((call.name.as_ref(), call.arguments.unwrap().get()), ("echo", r#"{"a":1}"#));
    /// ```
    pub fn of(message: &crate::message::Message<'a>) -> Result<Self, Rejection> {
        // The members the parse recorded, when it did: `params` is not read again.
        let members = message.param_members().unwrap_or(Members::scanned("{}"));
        Self::read(pick(members, CALL_KEYS, "params")?, true)
    }

    /// `validated`: the values come from a frame the parser validated.
    fn read(
        [name, arguments, input_responses, request_state, meta]: [Option<crate::message::RawJson<'a>>;
            5],
        validated: bool,
    ) -> Result<Self, Rejection> {
        let Some(name) = name.and_then(str_of) else {
            return Err(Rejection::invalid(
                "Invalid params: params.name must be a string naming the tool",
            ));
        };
        let object = |v: Option<crate::message::RawJson<'a>>, what: &str| match v {
            Some(v) if v.get() == "null" => Ok(None),
            // The scanner only found where the value ends; what is kept as `Raw` must be
            // JSON even when `params` did not come from a validated frame.
            Some(v)
                if v.get().starts_with('{')
                    && (validated || crate::message::scan::is_value(v.get())) =>
            {
                Ok(Some(Raw::scanned(v)))
            }
            Some(v) if v.get().starts_with('{') => Err(Rejection::invalid(format!(
                "Invalid params: params.{what} is not well-formed JSON"
            ))),
            Some(_) => {
                Err(Rejection::invalid(format!("Invalid params: params.{what} must be an object")))
            }
            None => Ok(None),
        };
        let request_state = match request_state {
            None => None,
            Some(s) => match str_of(s) {
                Some(s) => Some(s),
                None => {
                    return Err(Rejection::invalid(
                        "Invalid params: params.requestState must be a string",
                    ));
                }
            },
        };
        Ok(Self {
            name,
            arguments: object(arguments, "arguments")?,
            input_responses: object(input_responses, "inputResponses")?,
            request_state,
            meta: object(meta, "_meta")?,
        })
    }

    /// With arguments.
    #[must_use]
    pub fn arguments(mut self, arguments: Raw<'a>) -> Self {
        self.arguments = Some(arguments);
        self
    }
}

/// The `tools/call` result. A tool that fails answers with `is_error` set and its reason in
/// `content`: that is not a protocol error.
///
/// # Examples
///
/// ```
/// use mcpwire::mcp::types::CallToolResult;
///
/// let ok = CallToolResult::text("done");
/// assert_eq!(serde_json::to_string(&ok).unwrap(), r#"{"content":[{"type":"text","text":"done"}]}"#);
/// let failed = CallToolResult::error("no such file");
/// assert!(serde_json::to_string(&failed).unwrap().ends_with(r#""isError":true}"#));
/// ```
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, yoke::Yokeable)]
#[serde(rename_all = "camelCase")]
pub struct CallToolResult<'a> {
    /// What the tool returns.
    #[serde(borrow)]
    pub content: Vec<Content<'a>>,
    /// Its output as JSON matching its `outputSchema`.
    #[serde(borrow, default, skip_serializing_if = "Option::is_none")]
    pub structured_content: Option<Raw<'a>>,
    /// Whether the tool failed.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub is_error: bool,
}

impl<'a> CallToolResult<'a> {
    /// A result of these blocks.
    #[must_use]
    pub fn new(content: Vec<Content<'a>>) -> Self {
        Self { content, structured_content: None, is_error: false }
    }

    /// A result of one text block.
    #[must_use]
    pub fn text(text: impl Into<Cow<'a, str>>) -> Self {
        Self::new(vec![Content::text(text)])
    }

    /// A failed call: one text block saying why, and `isError: true`.
    #[must_use]
    pub fn error(reason: impl Into<Cow<'a, str>>) -> Self {
        Self { is_error: true, ..Self::text(reason) }
    }
}
