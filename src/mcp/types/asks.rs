//! What a server asks of the client: sampling (`sampling/createMessage`), elicitation
//! (`elicitation/create`, form and URL modes) and roots (`roots/list`). In the legacy era they
//! are requests of their own; in the modern era they travel inside an `input_required` result
//! ([`InputRequest`](super::InputRequest)) and come back in the retry's `inputResponses`.

use std::borrow::Cow;

use serde::{Deserialize, Serialize};

use super::{Content, Raw, Role};
use crate::mcp::meta::Rejection;

/// One message of a sampling request.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SamplingMessage<'a> {
    /// Who says it.
    pub role: Role,
    /// What is said.
    #[serde(borrow)]
    pub content: Content<'a>,
}

/// The `sampling/createMessage` params: ask the client's model for a completion.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, yoke::Yokeable)]
#[serde(rename_all = "camelCase")]
pub struct CreateMessageParams<'a> {
    /// The conversation.
    #[serde(borrow)]
    pub messages: Vec<SamplingMessage<'a>>,
    /// The most tokens to generate.
    pub max_tokens: u32,
    /// A system prompt.
    #[serde(borrow, default, skip_serializing_if = "Option::is_none")]
    pub system_prompt: Option<Cow<'a, str>>,
    /// Which model the server would like, as given.
    #[serde(borrow, default, skip_serializing_if = "Option::is_none")]
    pub model_preferences: Option<Raw<'a>>,
    /// Sampling temperature.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f64>,
}

impl<'a> CreateMessageParams<'a> {
    /// One user message asking for at most `max_tokens`.
    #[must_use]
    pub fn user(text: impl Into<Cow<'a, str>>, max_tokens: u32) -> Self {
        Self {
            messages: vec![SamplingMessage { role: Role::User, content: Content::text(text) }],
            max_tokens,
            system_prompt: None,
            model_preferences: None,
            temperature: None,
        }
    }
}

/// The `sampling/createMessage` result.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, yoke::Yokeable)]
#[serde(rename_all = "camelCase")]
pub struct CreateMessageResult<'a> {
    /// Who says it (the model: `assistant`).
    pub role: Role,
    /// What the model said.
    #[serde(borrow)]
    pub content: Content<'a>,
    /// Which model answered.
    #[serde(borrow)]
    pub model: Cow<'a, str>,
    /// Why it stopped.
    #[serde(borrow, default, skip_serializing_if = "Option::is_none")]
    pub stop_reason: Option<Cow<'a, str>>,
}

/// The `elicitation/create` params: ask the user, through a form or at a URL.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, yoke::Yokeable)]
#[serde(rename_all = "camelCase")]
pub struct ElicitParams<'a> {
    /// `form` (the default) or `url`.
    #[serde(borrow, default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<Cow<'a, str>>,
    /// What to tell the user.
    #[serde(borrow)]
    pub message: Cow<'a, str>,
    /// Form mode: the flat object schema of the answer, as given.
    #[serde(borrow, default, skip_serializing_if = "Option::is_none")]
    pub requested_schema: Option<Raw<'a>>,
    /// URL mode: where to send the user.
    #[serde(borrow, default, skip_serializing_if = "Option::is_none")]
    pub url: Option<Cow<'a, str>>,
    /// URL mode: names this elicitation in its completion notification.
    #[serde(borrow, default, skip_serializing_if = "Option::is_none")]
    pub elicitation_id: Option<Cow<'a, str>>,
}

impl<'a> ElicitParams<'a> {
    /// A form asking `message`, its answer described by `schema` (JSON text).
    ///
    /// # Panics
    ///
    /// When `schema` is not JSON: schemas are written by the host.
    #[must_use]
    pub fn form(message: impl Into<Cow<'a, str>>, schema: &'a str) -> Self {
        Self {
            mode: None,
            message: message.into(),
            requested_schema: Some(Raw::parse(schema).expect("an elicitation schema must be JSON")),
            url: None,
            elicitation_id: None,
        }
    }

    /// Send the user to `url`.
    #[must_use]
    pub fn url(
        message: impl Into<Cow<'a, str>>,
        url: impl Into<Cow<'a, str>>,
        elicitation_id: impl Into<Cow<'a, str>>,
    ) -> Self {
        Self {
            mode: Some("url".into()),
            message: message.into(),
            requested_schema: None,
            url: Some(url.into()),
            elicitation_id: Some(elicitation_id.into()),
        }
    }
}

/// What the user did with an elicitation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ElicitAction {
    /// Answered (form mode: `content` holds the answer).
    Accept,
    /// Refused.
    Decline,
    /// Dismissed without choosing.
    Cancel,
}

/// The `elicitation/create` result.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, yoke::Yokeable)]
pub struct ElicitResult<'a> {
    /// What the user did.
    pub action: ElicitAction,
    /// The answer (form mode, when accepted): an object of primitives, untrusted.
    #[serde(borrow, default, skip_serializing_if = "Option::is_none")]
    pub content: Option<Raw<'a>>,
}

impl ElicitResult<'_> {
    /// The content, when the user accepted (what comes with a decline or a cancel is not an
    /// answer).
    fn accepted(&self) -> Option<&Raw<'_>> {
        if self.action == ElicitAction::Accept { self.content.as_ref() } else { None }
    }

    /// The string field `name` of an accepted answer.
    ///
    /// # Errors
    ///
    /// -32602 when the content is not an object or names `name` twice.
    pub fn text(&self, name: &str) -> Result<Option<Cow<'_, str>>, Rejection> {
        let Some(content) = self.accepted() else { return Ok(None) };
        let value = crate::mcp::meta::member(content.as_raw_json(), name)?;
        Ok(value.and_then(crate::mcp::meta::str_of))
    }

    /// The boolean field `name` of an accepted answer.
    ///
    /// # Errors
    ///
    /// -32602 when the content is not an object or names `name` twice.
    pub fn flag(&self, name: &str) -> Result<Option<bool>, Rejection> {
        let Some(content) = self.accepted() else { return Ok(None) };
        let value = crate::mcp::meta::member(content.as_raw_json(), name)?;
        Ok(value.and_then(|v| match v.get() {
            "true" => Some(true),
            "false" => Some(false),
            _ => None,
        }))
    }
}

/// One root the client lets the server see.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Root<'a> {
    /// Its URI (`file://…`).
    #[serde(borrow)]
    pub uri: Cow<'a, str>,
    /// A name for it.
    #[serde(borrow, default, skip_serializing_if = "Option::is_none")]
    pub name: Option<Cow<'a, str>>,
}

/// The `roots/list` result.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ListRootsResult<'a> {
    /// The roots.
    #[serde(borrow)]
    pub roots: Vec<Root<'a>>,
}

#[cfg(test)]
mod tests;
