//! Scopes per tool, prompt and resource: what a caller's token must carry to use each, checked
//! before its handler runs, and (when the host asks) `tools/list` cut down to what the caller
//! may call.
//!
//! The caller is the [`Principal`] of the transport (an `HttpServer` guarded with `auth`). A
//! request for something scoped from a caller without the scope, or with no principal at all
//! (a transport that checks no one), is refused with [`ErrorCode::INSUFFICIENT_SCOPE`] whose
//! `data.scope` names the scopes to ask for (those the token has, and those it lacks); a
//! guarded `HttpServer` answers it 403 with `WWW-Authenticate: Bearer error="insufficient_scope"`
//! where it still can (a JSON answer), so a client steps up.

use std::collections::HashMap;

use serde::Serialize;

use crate::error::ErrorCode;
use crate::mcp::types::{CacheScope, ListToolsResult};
use crate::peer::{Principal, RpcError};

/// What a scope is required for, by its name (a tool's or a prompt's) or its URI (a resource's,
/// or a resource template's URI template as registered).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Scoped {
    /// A tool, by name.
    Tool(String),
    /// A prompt, by name.
    Prompt(String),
    /// A resource by its URI, or the resources of a template by its URI template.
    Resource(String),
}

impl Scoped {
    /// A tool, by name.
    #[must_use]
    pub fn tool(name: impl Into<String>) -> Self {
        Self::Tool(name.into())
    }

    /// A prompt, by name.
    #[must_use]
    pub fn prompt(name: impl Into<String>) -> Self {
        Self::Prompt(name.into())
    }

    /// A resource by URI, or a template's resources by its URI template.
    #[must_use]
    pub fn resource(uri: impl Into<String>) -> Self {
        Self::Resource(uri.into())
    }

    fn what(&self) -> String {
        match self {
            Self::Tool(n) => format!("tool {n}"),
            Self::Prompt(n) => format!("prompt {n}"),
            Self::Resource(u) => format!("resource {u}"),
        }
    }
}

/// The scopes each scoped thing needs, and whether lists hide what a caller may not use.
#[derive(Clone, Debug, Default)]
pub(crate) struct Scopes {
    need: HashMap<Scoped, Vec<String>>,
    pub(crate) hide_forbidden: bool,
}

impl Scopes {
    pub(crate) fn require(&mut self, on: Scoped, scope: String) {
        let need = self.need.entry(on).or_default();
        if !need.contains(&scope) {
            need.push(scope);
        }
    }

    /// Whether scopes are required for `on` itself.
    pub(crate) fn names(&self, on: &Scoped) -> bool {
        self.need.contains_key(on)
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.need.is_empty()
    }

    /// Whether `principal` may use `on` (anything unscoped, anyone may).
    pub(crate) fn permits(&self, on: &Scoped, principal: Option<&Principal>) -> bool {
        match self.need.get(on) {
            None => true,
            Some(need) => principal.is_some_and(|p| p.missing(need).next().is_none()),
        }
    }

    /// `Ok` when `principal` may use `on`; else the error that refuses it.
    pub(crate) fn check(&self, on: &Scoped, principal: Option<&Principal>) -> Result<(), RpcError> {
        let Some(need) = self.need.get(on) else { return Ok(()) };
        let held: &[String] = principal.map_or(&[], |p| &p.scopes);
        let missing: Vec<&str> =
            need.iter().filter(|s| !held.contains(s)).map(String::as_str).collect();
        if missing.is_empty() && principal.is_some() {
            return Ok(());
        }
        #[derive(Serialize)]
        struct Data {
            scope: String,
        }
        let wanted: Vec<&str> =
            held.iter().map(String::as_str).chain(missing.iter().copied()).collect();
        let message = format!("Forbidden: the {} needs the scope {}", on.what(), need.join(" "));
        Err(RpcError::new(ErrorCode::INSUFFICIENT_SCOPE, message)
            .with_data(&Data { scope: wanted.join(" ") }))
    }

    /// `result` with only the tools `principal` may call, as the era's list result: a list cut
    /// for one caller is `private` to a cache.
    pub(crate) fn tools_for(
        &self,
        mut result: ListToolsResult<'static>,
        principal: Option<&Principal>,
    ) -> ListToolsResult<'static> {
        result.tools.retain(|t| self.permits(&Scoped::Tool(t.name.to_string()), principal));
        if result.cache_scope.is_some() {
            result.cache_scope = Some(CacheScope::Private);
        }
        result
    }
}
