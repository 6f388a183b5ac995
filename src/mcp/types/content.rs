//! Content blocks (text, image, audio, embedded resource, resource link), the resource contents
//! they embed, and their annotations: what tool results, prompt messages and sampling messages
//! are made of.

use std::borrow::Cow;

use serde::{Deserialize, Serialize};

/// Who a message or a content block is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// The user (the client's side of the conversation).
    User,
    /// The model.
    Assistant,
}

/// Hints about a content block or resource for the client.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Annotations<'a> {
    /// Who the block is meant for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub audience: Option<Vec<Role>>,
    /// How important the block is, from 0 (least) to 1 (most).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority: Option<f64>,
    /// When the content last changed (ISO 8601).
    #[serde(borrow, default, skip_serializing_if = "Option::is_none")]
    pub last_modified: Option<Cow<'a, str>>,
}

/// One block of content.
///
/// # Examples
///
/// ```
/// use mcpwire::mcp::types::Content;
///
/// let block = Content::text("hello");
/// assert_eq!(serde_json::to_string(&block).unwrap(), r#"{"type":"text","text":"hello"}"#);
/// let read: Content<'_> = serde_json::from_str(r#"{"type":"image","data":"AA==","mimeType":"image/png"}"#).unwrap();
/// assert!(matches!(read, Content::Image { .. }));
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Content<'a> {
    /// Text.
    Text {
        /// The text.
        #[serde(borrow)]
        text: Cow<'a, str>,
        /// Hints for the client.
        #[serde(borrow, default, skip_serializing_if = "Option::is_none")]
        annotations: Option<Annotations<'a>>,
    },
    /// An image, base64-encoded.
    #[serde(rename_all = "camelCase")]
    Image {
        /// The image's bytes, base64.
        #[serde(borrow)]
        data: Cow<'a, str>,
        /// Its media type (`image/png`, ...).
        #[serde(borrow)]
        mime_type: Cow<'a, str>,
        /// Hints for the client.
        #[serde(borrow, default, skip_serializing_if = "Option::is_none")]
        annotations: Option<Annotations<'a>>,
    },
    /// Audio, base64-encoded.
    #[serde(rename_all = "camelCase")]
    Audio {
        /// The audio's bytes, base64.
        #[serde(borrow)]
        data: Cow<'a, str>,
        /// Its media type (`audio/wav`, ...).
        #[serde(borrow)]
        mime_type: Cow<'a, str>,
        /// Hints for the client.
        #[serde(borrow, default, skip_serializing_if = "Option::is_none")]
        annotations: Option<Annotations<'a>>,
    },
    /// A resource's contents, embedded.
    Resource {
        /// The contents.
        #[serde(borrow)]
        resource: ResourceContents<'a>,
        /// Hints for the client.
        #[serde(borrow, default, skip_serializing_if = "Option::is_none")]
        annotations: Option<Annotations<'a>>,
    },
    /// A link to a resource the client may read.
    #[serde(rename_all = "camelCase")]
    ResourceLink {
        /// The resource's URI.
        #[serde(borrow)]
        uri: Cow<'a, str>,
        /// Its name.
        #[serde(borrow)]
        name: Cow<'a, str>,
        /// A title for people.
        #[serde(borrow, default, skip_serializing_if = "Option::is_none")]
        title: Option<Cow<'a, str>>,
        /// What it is.
        #[serde(borrow, default, skip_serializing_if = "Option::is_none")]
        description: Option<Cow<'a, str>>,
        /// Its media type.
        #[serde(borrow, default, skip_serializing_if = "Option::is_none")]
        mime_type: Option<Cow<'a, str>>,
        /// Its size in bytes.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        size: Option<u64>,
        /// Hints for the client.
        #[serde(borrow, default, skip_serializing_if = "Option::is_none")]
        annotations: Option<Annotations<'a>>,
    },
}

impl<'a> Content<'a> {
    /// A text block.
    #[must_use]
    pub fn text(text: impl Into<Cow<'a, str>>) -> Self {
        Self::Text { text: text.into(), annotations: None }
    }

    /// An image block from base64 data.
    #[must_use]
    pub fn image(base64: impl Into<Cow<'a, str>>, mime_type: impl Into<Cow<'a, str>>) -> Self {
        Self::Image { data: base64.into(), mime_type: mime_type.into(), annotations: None }
    }

    /// An audio block from base64 data.
    #[must_use]
    pub fn audio(base64: impl Into<Cow<'a, str>>, mime_type: impl Into<Cow<'a, str>>) -> Self {
        Self::Audio { data: base64.into(), mime_type: mime_type.into(), annotations: None }
    }

    /// An embedded resource.
    #[must_use]
    pub fn resource(contents: ResourceContents<'a>) -> Self {
        Self::Resource { resource: contents, annotations: None }
    }

    /// A link to a resource.
    #[must_use]
    pub fn link(uri: impl Into<Cow<'a, str>>, name: impl Into<Cow<'a, str>>) -> Self {
        Self::ResourceLink {
            uri: uri.into(),
            name: name.into(),
            title: None,
            description: None,
            mime_type: None,
            size: None,
            annotations: None,
        }
    }

    /// The text of a text block.
    #[must_use]
    pub fn as_text(&self) -> Option<&str> {
        match self {
            Self::Text { text, .. } => Some(text),
            _ => None,
        }
    }
}

/// The contents of a resource: text or a base64 blob.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResourceContents<'a> {
    /// The resource's URI.
    #[serde(borrow)]
    pub uri: Cow<'a, str>,
    /// Its media type.
    #[serde(borrow, default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<Cow<'a, str>>,
    /// Its text, for a text resource.
    #[serde(borrow, default, skip_serializing_if = "Option::is_none")]
    pub text: Option<Cow<'a, str>>,
    /// Its bytes, base64, for a binary resource.
    #[serde(borrow, default, skip_serializing_if = "Option::is_none")]
    pub blob: Option<Cow<'a, str>>,
}

impl<'a> ResourceContents<'a> {
    /// Text contents.
    #[must_use]
    pub fn text(
        uri: impl Into<Cow<'a, str>>,
        mime_type: impl Into<Cow<'a, str>>,
        text: impl Into<Cow<'a, str>>,
    ) -> Self {
        Self {
            uri: uri.into(),
            mime_type: Some(mime_type.into()),
            text: Some(text.into()),
            blob: None,
        }
    }

    /// Binary contents, base64.
    #[must_use]
    pub fn blob(
        uri: impl Into<Cow<'a, str>>,
        mime_type: impl Into<Cow<'a, str>>,
        base64: impl Into<Cow<'a, str>>,
    ) -> Self {
        Self {
            uri: uri.into(),
            mime_type: Some(mime_type.into()),
            text: None,
            blob: Some(base64.into()),
        }
    }
}

#[cfg(test)]
mod tests;
