//! `resources/*`: resources, templates, reading, subscriptions.

use std::borrow::Cow;

use serde::{Deserialize, Serialize};

use super::{Annotations, CacheScope, Raw, ResourceContents};

/// A resource a server offers.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, yoke::Yokeable)]
#[serde(rename_all = "camelCase")]
pub struct Resource<'a> {
    /// Its URI.
    #[serde(borrow)]
    pub uri: Cow<'a, str>,
    /// Its name.
    #[serde(borrow)]
    pub name: Cow<'a, str>,
    /// A title for people.
    #[serde(borrow, default, skip_serializing_if = "Option::is_none")]
    pub title: Option<Cow<'a, str>>,
    /// What it is.
    #[serde(borrow, default, skip_serializing_if = "Option::is_none")]
    pub description: Option<Cow<'a, str>>,
    /// Its media type.
    #[serde(borrow, default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<Cow<'a, str>>,
    /// Its size in bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<u64>,
    /// Hints for the client.
    #[serde(borrow, default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Annotations<'a>>,
}

impl<'a> Resource<'a> {
    /// A resource at `uri` named `name`.
    #[must_use]
    pub fn new(uri: impl Into<Cow<'a, str>>, name: impl Into<Cow<'a, str>>) -> Self {
        Self {
            uri: uri.into(),
            name: name.into(),
            title: None,
            description: None,
            mime_type: None,
            size: None,
            annotations: None,
        }
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

    /// With a media type.
    #[must_use]
    pub fn mime_type(mut self, mime_type: impl Into<Cow<'a, str>>) -> Self {
        self.mime_type = Some(mime_type.into());
        self
    }
}

/// A family of resources named by an RFC 6570 URI template.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, yoke::Yokeable)]
#[serde(rename_all = "camelCase")]
pub struct ResourceTemplate<'a> {
    /// The template (`test://items/{id}`).
    #[serde(borrow)]
    pub uri_template: Cow<'a, str>,
    /// Its name.
    #[serde(borrow)]
    pub name: Cow<'a, str>,
    /// A title for people.
    #[serde(borrow, default, skip_serializing_if = "Option::is_none")]
    pub title: Option<Cow<'a, str>>,
    /// What it is.
    #[serde(borrow, default, skip_serializing_if = "Option::is_none")]
    pub description: Option<Cow<'a, str>>,
    /// The media type of the resources.
    #[serde(borrow, default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<Cow<'a, str>>,
    /// Hints for the client.
    #[serde(borrow, default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Annotations<'a>>,
}

impl<'a> ResourceTemplate<'a> {
    /// A template named `name`.
    #[must_use]
    pub fn new(uri_template: impl Into<Cow<'a, str>>, name: impl Into<Cow<'a, str>>) -> Self {
        Self {
            uri_template: uri_template.into(),
            name: name.into(),
            title: None,
            description: None,
            mime_type: None,
            annotations: None,
        }
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

    /// With a media type.
    #[must_use]
    pub fn mime_type(mut self, mime_type: impl Into<Cow<'a, str>>) -> Self {
        self.mime_type = Some(mime_type.into());
        self
    }
}

/// The `resources/list` result.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, yoke::Yokeable)]
#[serde(rename_all = "camelCase")]
pub struct ListResourcesResult<'a> {
    /// The resources.
    #[serde(borrow)]
    pub resources: Vec<Resource<'a>>,
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

/// The `resources/templates/list` result.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, yoke::Yokeable)]
#[serde(rename_all = "camelCase")]
pub struct ListResourceTemplatesResult<'a> {
    /// The templates.
    #[serde(borrow)]
    pub resource_templates: Vec<ResourceTemplate<'a>>,
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

/// The params of `resources/read`, `resources/subscribe` and `resources/unsubscribe`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResourceParams<'a> {
    /// The resource's URI.
    #[serde(borrow)]
    pub uri: Cow<'a, str>,
    /// The request's metadata.
    #[serde(borrow, rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Raw<'a>>,
}

/// The `resources/read` result.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, yoke::Yokeable)]
#[serde(rename_all = "camelCase")]
pub struct ReadResourceResult<'a> {
    /// The contents (one resource may have several parts).
    #[serde(borrow)]
    pub contents: Vec<ResourceContents<'a>>,
    /// How long the client may keep the result, in milliseconds (2026-07-28).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttl_ms: Option<u64>,
    /// Who may share a cached copy (2026-07-28).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_scope: Option<CacheScope>,
}

impl<'a> ReadResourceResult<'a> {
    /// A result of one part.
    #[must_use]
    pub fn new(contents: ResourceContents<'a>) -> Self {
        Self { contents: vec![contents], ttl_ms: None, cache_scope: None }
    }
}

/// Matches `uri` against an RFC 6570 level-1 template (`{name}` expressions, each matching a
/// non-empty run of characters other than `/`), calling `found` with each variable's name and
/// value. Returns whether it matched.
///
/// # Examples
///
/// ```
/// use mcpwire::mcp::types::match_template;
///
/// let mut id = String::new();
/// assert!(match_template("test://template/{id}/data", "test://template/42/data", |_, v| id = v.to_owned()));
/// assert_eq!(id, "42");
/// assert!(!match_template("test://template/{id}/data", "test://template//data", |_, _| {}));
/// ```
pub fn match_template(template: &str, uri: &str, mut found: impl FnMut(&str, &str)) -> bool {
    let (mut t, mut u) = (template, uri);
    loop {
        let Some(open) = t.find('{') else { return t == u };
        let Some(len) = t[open..].find('}') else { return t == u };
        let (literal, name) = (&t[..open], &t[open + 1..open + len]);
        let Some(rest) = u.strip_prefix(literal) else { return false };
        t = &t[open + len + 1..];
        // The variable runs to the next literal character of the template, or to a `/`.
        let stop = t.chars().next();
        let end = rest
            .char_indices()
            .find(|&(_, c)| c == '/' || Some(c) == stop)
            .map_or(rest.len(), |(i, _)| i);
        if end == 0 {
            return false;
        }
        found(name, &rest[..end]);
        u = &rest[end..];
    }
}

#[cfg(test)]
mod tests;
