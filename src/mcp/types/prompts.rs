//! `prompts/list` and `prompts/get`.

use std::borrow::Cow;

use serde::{Deserialize, Serialize};

use super::{CacheScope, Content, Raw, Role};
use crate::mcp::meta::{Rejection, member, str_of};

/// A prompt template a server offers.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, yoke::Yokeable)]
#[serde(rename_all = "camelCase")]
pub struct Prompt<'a> {
    /// Its name.
    #[serde(borrow)]
    pub name: Cow<'a, str>,
    /// A title for people.
    #[serde(borrow, default, skip_serializing_if = "Option::is_none")]
    pub title: Option<Cow<'a, str>>,
    /// What it is for.
    #[serde(borrow, default, skip_serializing_if = "Option::is_none")]
    pub description: Option<Cow<'a, str>>,
    /// The arguments it takes.
    #[serde(borrow, default, skip_serializing_if = "Vec::is_empty")]
    pub arguments: Vec<PromptArgument<'a>>,
}

impl<'a> Prompt<'a> {
    /// A prompt taking no arguments.
    #[must_use]
    pub fn new(name: impl Into<Cow<'a, str>>) -> Self {
        Self { name: name.into(), title: None, description: None, arguments: Vec::new() }
    }

    /// With a title.
    #[must_use]
    pub fn title(mut self, title: impl Into<Cow<'a, str>>) -> Self {
        self.title = Some(title.into());
        self
    }

    /// With a description.
    #[must_use]
    pub fn description(mut self, description: impl Into<Cow<'a, str>>) -> Self {
        self.description = Some(description.into());
        self
    }

    /// With one more argument.
    #[must_use]
    pub fn argument(
        mut self,
        name: impl Into<Cow<'a, str>>,
        description: impl Into<Cow<'a, str>>,
        required: bool,
    ) -> Self {
        self.arguments.push(PromptArgument {
            name: name.into(),
            title: None,
            description: Some(description.into()),
            required: Some(required),
        });
        self
    }
}

/// One argument of a prompt.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PromptArgument<'a> {
    /// Its name.
    #[serde(borrow)]
    pub name: Cow<'a, str>,
    /// A title for people.
    #[serde(borrow, default, skip_serializing_if = "Option::is_none")]
    pub title: Option<Cow<'a, str>>,
    /// What it is.
    #[serde(borrow, default, skip_serializing_if = "Option::is_none")]
    pub description: Option<Cow<'a, str>>,
    /// Whether it must be given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub required: Option<bool>,
}

/// The `prompts/list` result.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, yoke::Yokeable)]
#[serde(rename_all = "camelCase")]
pub struct ListPromptsResult<'a> {
    /// The prompts.
    #[serde(borrow)]
    pub prompts: Vec<Prompt<'a>>,
    /// Where the next page starts.
    #[serde(borrow, default, skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<Cow<'a, str>>,
    /// How long the client may keep the result, in milliseconds (2026-07-28).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttl_ms: Option<u64>,
    /// Who may share a cached copy (2026-07-28).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_scope: Option<CacheScope>,
}

/// The `prompts/get` params.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GetPromptParams<'a> {
    /// The prompt.
    #[serde(borrow)]
    pub name: Cow<'a, str>,
    /// Its arguments: an object of strings, untrusted.
    #[serde(borrow, default, skip_serializing_if = "Option::is_none")]
    pub arguments: Option<Raw<'a>>,
    /// The answers to a previous `input_required` result (2026-07-28).
    #[serde(borrow, default, skip_serializing_if = "Option::is_none")]
    pub input_responses: Option<Raw<'a>>,
    /// The state a previous `input_required` result asked to be echoed (2026-07-28).
    #[serde(borrow, default, skip_serializing_if = "Option::is_none")]
    pub request_state: Option<Cow<'a, str>>,
    /// The request's metadata.
    #[serde(borrow, rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Raw<'a>>,
}

impl<'a> GetPromptParams<'a> {
    /// The argument `name`, a string.
    ///
    /// # Errors
    ///
    /// -32602 when `arguments` is not an object, names `name` twice, or its value is not a
    /// string.
    pub fn argument(&self, name: &str) -> Result<Option<Cow<'_, str>>, Rejection> {
        let Some(args) = &self.arguments else { return Ok(None) };
        let Some(value) = member(args.as_raw_json(), name)? else { return Ok(None) };
        match str_of(value) {
            Some(s) => Ok(Some(s)),
            None => Err(Rejection::invalid(format!("params.arguments.{name} must be a string"))),
        }
    }
}

/// One message of a prompt.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PromptMessage<'a> {
    /// Who says it.
    pub role: Role,
    /// What is said.
    #[serde(borrow)]
    pub content: Content<'a>,
}

impl<'a> PromptMessage<'a> {
    /// A message from the user.
    #[must_use]
    pub fn user(content: Content<'a>) -> Self {
        Self { role: Role::User, content }
    }
}

/// The `prompts/get` result.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, yoke::Yokeable)]
#[serde(rename_all = "camelCase")]
pub struct GetPromptResult<'a> {
    /// What the prompt is for.
    #[serde(borrow, default, skip_serializing_if = "Option::is_none")]
    pub description: Option<Cow<'a, str>>,
    /// Its messages.
    #[serde(borrow)]
    pub messages: Vec<PromptMessage<'a>>,
}

impl<'a> GetPromptResult<'a> {
    /// A result of these messages.
    #[must_use]
    pub fn new(messages: Vec<PromptMessage<'a>>) -> Self {
        Self { description: None, messages }
    }
}
