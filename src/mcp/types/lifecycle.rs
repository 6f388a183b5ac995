//! What opens a legacy session (`initialize`) and what describes a modern server
//! (`server/discover`): implementations, capabilities, caching hints, pagination.

use std::borrow::Cow;

use serde::{Deserialize, Serialize};

use super::Raw;

/// A client's or server's name and version.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Implementation<'a> {
    /// Its name.
    #[serde(borrow)]
    pub name: Cow<'a, str>,
    /// A title for people.
    #[serde(borrow, default, skip_serializing_if = "Option::is_none")]
    pub title: Option<Cow<'a, str>>,
    /// Its version.
    #[serde(borrow)]
    pub version: Cow<'a, str>,
}

impl<'a> Implementation<'a> {
    /// `name` at `version`.
    #[must_use]
    pub fn new(name: impl Into<Cow<'a, str>>, version: impl Into<Cow<'a, str>>) -> Self {
        Self { name: name.into(), title: None, version: version.into() }
    }
}

/// A capability that may announce list changes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListChanged {
    /// The server sends `notifications/*/list_changed`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub list_changed: Option<bool>,
}

/// The resources capability.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResourcesCapability {
    /// The server takes `resources/subscribe`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subscribe: Option<bool>,
    /// The server sends `notifications/resources/list_changed`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub list_changed: Option<bool>,
}

/// An empty capability object (`{}`): present or not.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Empty {}

/// What a server offers.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ServerCapabilities<'a> {
    /// Tools.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<ListChanged>,
    /// Resources.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resources: Option<ResourcesCapability>,
    /// Prompts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompts: Option<ListChanged>,
    /// Log messages (legacy `logging/setLevel`; modern `_meta` log levels).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub logging: Option<Empty>,
    /// `completion/complete`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completions: Option<Empty>,
    /// Extensions (SEP-2133), keyed by identifier (`{"io.modelcontextprotocol/tasks": {}}`):
    /// each extension's settings object, as given.
    #[serde(borrow, default, skip_serializing_if = "Option::is_none")]
    pub extensions: Option<Raw<'a>>,
    /// Anything else, as given.
    #[serde(borrow, default, skip_serializing_if = "Option::is_none")]
    pub experimental: Option<Raw<'a>>,
}

/// The `initialize` params (legacy era).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InitializeParams<'a> {
    /// The newest version the client speaks.
    #[serde(borrow)]
    pub protocol_version: Cow<'a, str>,
    /// What the client offers (`sampling`, `elicitation`, `roots`), as given.
    #[serde(borrow)]
    pub capabilities: Raw<'a>,
    /// Who the client is.
    #[serde(borrow)]
    pub client_info: Implementation<'a>,
}

/// The `initialize` result (legacy era).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InitializeResult<'a> {
    /// The version agreed.
    #[serde(borrow)]
    pub protocol_version: Cow<'a, str>,
    /// What the server offers.
    #[serde(borrow)]
    pub capabilities: ServerCapabilities<'a>,
    /// Who the server is.
    #[serde(borrow)]
    pub server_info: Implementation<'a>,
    /// How to use the server, for the model.
    #[serde(borrow, default, skip_serializing_if = "Option::is_none")]
    pub instructions: Option<Cow<'a, str>>,
}

/// Who may keep a cached copy of a result (2026-07-28).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CacheScope {
    /// Any client or intermediary: the result is the same for everyone.
    Public,
    /// Only the client that asked.
    Private,
}

/// The `server/discover` result (2026-07-28).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DiscoverResult<'a> {
    /// The protocol versions the server speaks.
    #[serde(borrow)]
    pub supported_versions: Vec<Cow<'a, str>>,
    /// What it offers.
    #[serde(borrow)]
    pub capabilities: ServerCapabilities<'a>,
    /// How to use the server, for the model.
    #[serde(borrow, default, skip_serializing_if = "Option::is_none")]
    pub instructions: Option<Cow<'a, str>>,
    /// How long the client may keep the result, in milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttl_ms: Option<u64>,
    /// Who may share a cached copy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_scope: Option<CacheScope>,
}

/// The params of the list methods: where to start.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListParams<'a> {
    /// The `nextCursor` of the previous page.
    #[serde(borrow, default, skip_serializing_if = "Option::is_none")]
    pub cursor: Option<Cow<'a, str>>,
    /// The request's metadata.
    #[serde(borrow, rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Raw<'a>>,
}
