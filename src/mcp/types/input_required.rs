//! Multi round-trip requests (2026-07-28): a request the server cannot finish without the
//! client's help is answered with an `input_required` result naming what it needs; the client
//! retries the same request with `inputResponses` (keyed as asked) and the `requestState` echoed
//! verbatim.

use std::borrow::Cow;
use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::{CreateMessageParams, ElicitParams, Raw};

/// One thing a server asks of the client inside an `input_required` result.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct InputRequest<'a> {
    /// `elicitation/create`, `sampling/createMessage` or `roots/list`.
    #[serde(borrow)]
    pub method: Cow<'a, str>,
    /// Its params.
    #[serde(borrow, default, skip_serializing_if = "Option::is_none")]
    pub params: Option<Raw<'a>>,
}

impl InputRequest<'static> {
    /// Ask the user.
    #[must_use]
    pub fn elicit(params: &ElicitParams<'_>) -> Self {
        Self::of("elicitation/create", params)
    }

    /// Ask the client's model.
    #[must_use]
    pub fn sample(params: &CreateMessageParams<'_>) -> Self {
        Self::of("sampling/createMessage", params)
    }

    /// Ask for the client's roots.
    #[must_use]
    pub fn list_roots() -> Self {
        Self {
            method: "roots/list".into(),
            params: Some(Raw::owned("{}".to_owned()).expect("JSON")),
        }
    }

    fn of<T: Serialize>(method: &'static str, params: &T) -> Self {
        // Structs of strings, numbers and raw JSON always serialise.
        let params = Raw::to_json(params).ok();
        Self { method: method.into(), params }
    }
}

impl InputRequest<'_> {
    /// The client capability answering this request needs (`elicitation`, `sampling`,
    /// `roots`), or `None` for a method the client is not known to serve.
    #[must_use]
    pub fn capability(&self) -> Option<&'static str> {
        match self.method.as_ref() {
            "elicitation/create" => Some("elicitation"),
            "sampling/createMessage" => Some("sampling"),
            "roots/list" => Some("roots"),
            _ => None,
        }
    }
}

/// An `input_required` result: what the server needs before it can answer.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InputRequiredResult<'a> {
    /// The requests, keyed by names the retry's `inputResponses` must use.
    #[serde(borrow, default, skip_serializing_if = "BTreeMap::is_empty")]
    pub input_requests: BTreeMap<Cow<'a, str>, InputRequest<'a>>,
    /// State the client must echo verbatim in its retry.
    #[serde(borrow, default, skip_serializing_if = "Option::is_none")]
    pub request_state: Option<Cow<'a, str>>,
}
