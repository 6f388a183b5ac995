//! The skills extension (`io.modelcontextprotocol/skills`) on the server: a directory of
//! skills, loaded once ([`Skills::load`]) and served with [`ServerBuilder::skills`](super::ServerBuilder::skills).
//!
//! Each directory below the root that holds a `SKILL.md` is a skill, its path below the root
//! its skill path (`acme/billing/refunds` → `skill://acme/billing/refunds/SKILL.md`). Its files
//! are read when the directory is loaded (what is served then always matches its digest),
//! within [`SkillLimits`]; a skill that breaks a rule (no front matter, a name other than its
//! directory's or outside the naming rules, no description, past a bound) fails the load, so a
//! host learns of it at start. Symbolic links are not followed.
//!
//! Served: the capability `extensions["io.modelcontextprotocol/skills"] = {"directoryRead":
//! true}` (with `resources`); `skills/list` (paginated, whole entries per page), `skills/get`
//! (-32602 for a URI that is not a served skill's `SKILL.md`), `resources/directory/read` on
//! every directory within a skill (-32602 for anything else), `resources/read` of every file,
//! and each `SKILL.md` in `resources/list`, named and described from its front matter.

mod load;

use load::Catalog;
pub use load::SkillsError;

use std::path::Path;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

use super::{BoxFuture, Call, HandlerError, HandlerFn};
use crate::mcp::Era;
use crate::mcp::skills::{DIRECTORY_READ, GET, LIST, SKILL_MD_MIME, SkillEntry, SkillLimits};
use crate::mcp::types::{
    CacheScope, ReadResourceResult, Resource, ResourceContents, ResourceParams,
};
use crate::peer::{Incoming, Reply, RpcError};

/// A loaded skill directory: cheap to clone.
#[derive(Clone)]
pub struct Skills(Arc<Catalog>);

impl std::fmt::Debug for Skills {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Skills").field("skills", &self.0.entries.len()).finish_non_exhaustive()
    }
}

impl Skills {
    /// Loads every skill below `root` within the default [`SkillLimits`].
    ///
    /// # Errors
    ///
    /// [`SkillsError`] naming the path at fault.
    pub fn load(root: impl AsRef<Path>) -> Result<Self, SkillsError> {
        Self::load_with(root, SkillLimits::default())
    }

    /// Loads every skill below `root` within `limits`.
    ///
    /// # Errors
    ///
    /// [`SkillsError`] naming the path at fault.
    pub fn load_with(root: impl AsRef<Path>, limits: SkillLimits) -> Result<Self, SkillsError> {
        load::load(root.as_ref(), limits).map(|c| Self(Arc::new(c)))
    }

    /// Every skill's entry, in URI order.
    #[must_use]
    pub fn entries(&self) -> &[SkillEntry] {
        &self.0.entries
    }

    /// The bytes of the served file at `uri`.
    #[must_use]
    pub fn file(&self, uri: &str) -> Option<&[u8]> {
        self.0.files.get(uri).map(|f| &*f.bytes)
    }

    /// Each skill's `SKILL.md` as `resources/list` lists it.
    pub(super) fn listed(&self) -> impl Iterator<Item = Resource<'static>> + '_ {
        self.0.entries.iter().map(|e| {
            let text = |k: &str| e.frontmatter.get(k).and_then(|v| v.as_str()).unwrap_or_default();
            let mut r = Resource::new(e.uri.clone(), text("name").to_owned())
                .description(text("description").to_owned())
                .mime_type(SKILL_MD_MIME);
            r.size = e.files().and_then(|f| f.first()).map(|f| f.size);
            r
        })
    }

    /// The `resources/read` result of `uri`.
    fn read(&self, uri: &str) -> Option<ReadResourceResult<'static>> {
        use base64::Engine as _;
        let f = self.0.files.get(uri)?;
        let contents = match std::str::from_utf8(&f.bytes) {
            Ok(text) => ResourceContents::text(uri.to_owned(), f.mime, text.to_owned()),
            Err(_) => {
                let b64 = base64::engine::general_purpose::STANDARD.encode(&f.bytes);
                ResourceContents::blob(uri.to_owned(), f.mime, b64)
            }
        };
        Some(ReadResourceResult::new(contents))
    }
}

/// The skills a server serves, with what its dispatcher needs of them.
pub(super) struct Served {
    skills: Skills,
    ttl_ms: u64,
    read: HandlerFn<ReadResourceResult<'static>>,
}

impl Served {
    pub(super) fn new(skills: Skills, ttl_ms: u64) -> Self {
        let mine = skills.clone();
        let read: HandlerFn<ReadResourceResult<'static>> = Box::new(move |call: Call| {
            let found = call.params::<ResourceParams<'_>>().map(|p| {
                mine.read(&p.uri)
                    .ok_or_else(|| HandlerError::tool(format!("Resource not found: {}", p.uri)))
            });
            Box::pin(async move { found? }) as BoxFuture<_>
        });
        Self { skills, ttl_ms, read }
    }

    /// Whether `uri` is a served skill file.
    pub(super) fn serves(&self, uri: &str) -> bool {
        self.skills.0.files.contains_key(uri)
    }

    /// The `resources/read` handler of skill files.
    pub(super) fn reader(&self) -> &HandlerFn<ReadResourceResult<'static>> {
        &self.read
    }

    /// Answers `skills/list`, `skills/get` and `resources/directory/read`.
    pub(super) fn answer(
        &self,
        req: &Incoming,
        era: Era,
        meta: &RawValue,
    ) -> Result<Reply, RpcError> {
        #[derive(Default, Deserialize)]
        struct Params {
            #[serde(default)]
            uri: Option<String>,
            #[serde(default)]
            cursor: Option<String>,
        }
        let p: Params = match req.params() {
            None => Params::default(),
            Some(_) => req.params_as().map_err(RpcError::invalid_params)?,
        };
        let c = &*self.skills.0;
        let ttl = (era == Era::Modern).then_some(self.ttl_ms);
        let uri =
            || p.uri.as_deref().ok_or_else(|| RpcError::invalid_params("params.uri is required"));
        let json = match req.method() {
            LIST => {
                let (range, next) = slice(c.entries.len(), p.cursor.as_deref(), c.limits.page())?;
                #[derive(Serialize)]
                struct Skills<'a> {
                    skills: &'a [Box<RawValue>],
                }
                page(Skills { skills: &c.entries_json[range] }, next, ttl)
            }
            GET => {
                let uri = uri()?;
                let i = c.by_uri.get(uri).ok_or_else(|| {
                    RpcError::invalid_params(format_args!(
                        "Unknown skill: {uri} is not a served skill's SKILL.md"
                    ))
                })?;
                #[derive(Serialize)]
                struct Get<'a> {
                    skill: &'a RawValue,
                }
                page(Get { skill: &c.entries_json[*i] }, None, ttl)
            }
            DIRECTORY_READ => {
                let uri = uri()?;
                let dir = uri.strip_suffix('/').unwrap_or(uri);
                let Some(children) = c.dirs.get(dir) else {
                    let what = if c.files.contains_key(dir) {
                        "is not a directory"
                    } else {
                        "is not a served directory"
                    };
                    return Err(RpcError::invalid_params(format_args!("{uri} {what}")));
                };
                let (range, next) = slice(children.len(), p.cursor.as_deref(), c.limits.page())?;
                let resources: Vec<Resource<'_>> = children[range]
                    .iter()
                    .map(|ch| {
                        let mut r =
                            Resource::new(ch.uri.as_str(), ch.name.as_str()).mime_type(ch.mime);
                        r.size = ch.size;
                        r
                    })
                    .collect();
                #[derive(Serialize)]
                struct Dir<'a> {
                    resources: Vec<Resource<'a>>,
                }
                page(Dir { resources }, next, ttl)
            }
            other => return Err(RpcError::method_not_found(other)),
        };
        Ok(Reply::raw_string(match era {
            // `resultType` and the server's identity, appended to the object's members.
            Era::Modern => {
                let mut json = json;
                json.pop();
                format!("{json},\"resultType\":\"complete\",\"_meta\":{}}}", meta.get())
            }
            Era::Legacy => json,
        }))
    }
}

/// The extension's capability: `{"io.modelcontextprotocol/skills": {"directoryRead": true}}`.
pub(super) fn capability() -> crate::mcp::types::Raw<'static> {
    let caps = serde_json::json!({ crate::mcp::skills::EXTENSION: { "directoryRead": true } });
    crate::mcp::types::Raw::owned(caps.to_string()).expect("JSON")
}

/// A result: `items`' members, the next page's cursor, and in the modern era (`ttl` given) the
/// caching hints.
fn page<T: Serialize>(items: T, next_cursor: Option<String>, ttl: Option<u64>) -> String {
    #[derive(Serialize)]
    #[serde(rename_all = "camelCase")]
    struct Page<T> {
        #[serde(flatten)]
        items: T,
        #[serde(skip_serializing_if = "Option::is_none")]
        next_cursor: Option<String>,
        #[serde(skip_serializing_if = "Option::is_none")]
        ttl_ms: Option<u64>,
        #[serde(skip_serializing_if = "Option::is_none")]
        cache_scope: Option<CacheScope>,
    }
    let cache_scope = ttl.map(|_| CacheScope::Public);
    serde_json::to_string(&Page { items, next_cursor, ttl_ms: ttl, cache_scope })
        .expect("results always serialise")
}

/// The range of a page of `len` items from `cursor` (an index this server issued), and the
/// cursor of the next page.
fn slice(
    len: usize,
    cursor: Option<&str>,
    page: usize,
) -> Result<(std::ops::Range<usize>, Option<String>), RpcError> {
    let start = match cursor {
        None => 0,
        Some(c) => match c.parse::<usize>() {
            Ok(i) if i > 0 && i < len => i,
            _ => return Err(RpcError::invalid_params(format_args!("unknown cursor {c:?}"))),
        },
    };
    let end = start.saturating_add(page).min(len);
    Ok((start..end, (end < len).then(|| end.to_string())))
}

impl super::ConnectionHandler {
    /// `skills/list`, `skills/get`, `resources/directory/read`: unknown methods to a server
    /// without skills.
    pub(super) fn skills(&self, req: &Incoming, era: Era) -> Result<Reply, RpcError> {
        match &self.server.0.skills {
            Some(s) => s.answer(req, era, &self.server.0.meta),
            None => Err(RpcError::method_not_found(req.method())),
        }
    }
}
