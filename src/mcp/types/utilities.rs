//! Logging, progress, completion and change notifications.

use std::borrow::Cow;

use serde::{Deserialize, Serialize};

use super::Raw;

/// Log severities, least severe first (RFC 5424's).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LoggingLevel {
    /// Debugging detail.
    Debug,
    /// Information.
    Info,
    /// Normal but significant.
    Notice,
    /// A warning.
    Warning,
    /// An error.
    Error,
    /// A critical condition.
    Critical,
    /// Action must be taken at once.
    Alert,
    /// The system is unusable.
    Emergency,
}

impl LoggingLevel {
    /// The level named `name` (`"info"`, ...).
    #[must_use]
    pub fn from_name(name: &str) -> Option<Self> {
        Some(match name {
            "debug" => Self::Debug,
            "info" => Self::Info,
            "notice" => Self::Notice,
            "warning" => Self::Warning,
            "error" => Self::Error,
            "critical" => Self::Critical,
            "alert" => Self::Alert,
            "emergency" => Self::Emergency,
            _ => return None,
        })
    }
}

/// The `logging/setLevel` params (legacy era).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SetLevelParams {
    /// The least severe level the client wants.
    pub level: LoggingLevel,
}

/// The `notifications/message` params: one log message.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LoggingMessageParams<'a> {
    /// How severe.
    pub level: LoggingLevel,
    /// Which part of the server logged it.
    #[serde(borrow, default, skip_serializing_if = "Option::is_none")]
    pub logger: Option<Cow<'a, str>>,
    /// The message: any JSON.
    #[serde(borrow)]
    pub data: Raw<'a>,
}

/// The `notifications/progress` params.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ProgressParams<'a> {
    /// The token of the request it reports on, as the request gave it.
    #[serde(borrow)]
    pub progress_token: Raw<'a>,
    /// How far along; increases with each notification.
    pub progress: f64,
    /// The total, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total: Option<f64>,
    /// What is happening.
    #[serde(borrow, default, skip_serializing_if = "Option::is_none")]
    pub message: Option<Cow<'a, str>>,
}

/// What a completion is for: a prompt's argument or a resource template's variable.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type")]
pub enum CompleteRef<'a> {
    /// A prompt, by name.
    #[serde(rename = "ref/prompt")]
    Prompt {
        /// The prompt's name.
        #[serde(borrow)]
        name: Cow<'a, str>,
    },
    /// A resource template, by URI template.
    #[serde(rename = "ref/resource")]
    Resource {
        /// The template.
        #[serde(borrow)]
        uri: Cow<'a, str>,
    },
}

/// The argument being completed.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CompleteArgument<'a> {
    /// Its name.
    #[serde(borrow)]
    pub name: Cow<'a, str>,
    /// What the user typed so far.
    #[serde(borrow)]
    pub value: Cow<'a, str>,
}

/// The `completion/complete` params.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CompleteParams<'a> {
    /// What is completed.
    #[serde(borrow, rename = "ref")]
    pub reference: CompleteRef<'a>,
    /// The argument and its partial value.
    #[serde(borrow)]
    pub argument: CompleteArgument<'a>,
    /// Arguments already given (`{"arguments": {...}}`), as given.
    #[serde(borrow, default, skip_serializing_if = "Option::is_none")]
    pub context: Option<Raw<'a>>,
}

/// The completions found.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Completion<'a> {
    /// The values, at most 100.
    #[serde(borrow)]
    pub values: Vec<Cow<'a, str>>,
    /// How many there are in all.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total: Option<u64>,
    /// Whether there are more than `values` holds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub has_more: Option<bool>,
}

/// The `completion/complete` result.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, yoke::Yokeable)]
pub struct CompleteResult<'a> {
    /// The completions.
    #[serde(borrow)]
    pub completion: Completion<'a>,
}

/// The most values a completion result may hold.
pub const MAX_COMPLETION_VALUES: usize = 100;

impl<'a> CompleteResult<'a> {
    /// The values, cut to [`MAX_COMPLETION_VALUES`] (`total` and `hasMore` say how many there
    /// were).
    #[must_use]
    pub fn new(mut values: Vec<Cow<'a, str>>) -> Self {
        let total = values.len();
        values.truncate(MAX_COMPLETION_VALUES);
        let has_more = total > values.len();
        Self {
            completion: Completion { values, total: Some(total as u64), has_more: Some(has_more) },
        }
    }
}

/// The `notifications/resources/updated` params.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ResourceUpdatedParams<'a> {
    /// The resource that changed.
    #[serde(borrow)]
    pub uri: Cow<'a, str>,
}

/// The `subscriptions/listen` params (2026-07-28): which change notifications the stream wants.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ListenParams<'a> {
    /// The filter; none asks for nothing.
    #[serde(borrow, default)]
    pub notifications: Option<ListenFilter<'a>>,
}

/// What a listen stream asks for (`params.notifications`), and what its acknowledgement says
/// the server honours of it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListenFilter<'a> {
    /// `notifications/tools/list_changed`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub tools_list_changed: bool,
    /// `notifications/prompts/list_changed`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub prompts_list_changed: bool,
    /// `notifications/resources/list_changed`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub resources_list_changed: bool,
    /// The resources whose `notifications/resources/updated` the stream wants.
    #[serde(borrow, default, skip_serializing_if = "Vec::is_empty")]
    pub resource_subscriptions: Vec<Cow<'a, str>>,
    /// The tasks extension: tasks whose status changes the stream wants.
    #[serde(borrow, default, skip_serializing_if = "Vec::is_empty")]
    pub task_ids: Vec<Cow<'a, str>>,
}
