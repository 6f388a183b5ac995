//! The skills extension (`io.modelcontextprotocol/skills`, SEP-2640), without I/O: its methods,
//! its types, and the checks both sides make.
//!
//! A skill is a directory of files, at least a `SKILL.md` that begins with YAML front matter
//! (`name`, `description`), served file by file as resources under
//! `skill://<skill-path>/<file-path>`, the last segment of `<skill-path>` being the skill's
//! name. A server declaring the extension answers `skills/list` (entries, paginated) and
//! `skills/get` (one entry by its `SKILL.md` URI), and with `directoryRead: true` also
//! `resources/directory/read` (a directory's direct children). Each entry carries the skill's
//! front matter as JSON and every file's `{uri, digest, size}`, the digest `sha256:<hex>` of
//! the file's raw bytes.
//!
//! A host reads a skill's files only when it needs them, and checks each read against the
//! entry before it uses the bytes: [`SkillEntry::verify_file`] (listed, size, then digest) and,
//! for the `SKILL.md`, [`SkillEntry::verify_skill_md`] (the same, then its front matter parsed
//! and compared field by field with the entry's). Any mismatch is a [`VerifyError`]: the
//! content must not be used.

use std::fmt::Write as _;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use sha2::Digest as _;

use super::types::CacheScope;
use crate::limits;

/// The extension's identifier, the key under `capabilities.extensions`.
pub const EXTENSION: &str = "io.modelcontextprotocol/skills";
/// Enumerates the skills a server serves.
pub const LIST: &str = "skills/list";
/// One skill's entry, by its `SKILL.md` URI.
pub const GET: &str = "skills/get";
/// A directory's direct children (with `directoryRead: true`).
pub const DIRECTORY_READ: &str = "resources/directory/read";
/// The URI scheme skills are served under.
pub const SCHEME: &str = "skill://";
/// The file every skill has at its root.
pub const SKILL_MD: &str = "SKILL.md";
/// The media type of a `SKILL.md`.
pub const SKILL_MD_MIME: &str = "text/markdown";
/// The media type of a directory resource.
pub const DIRECTORY_MIME: &str = "inode/directory";

/// The extension's settings, under `capabilities.extensions["io.modelcontextprotocol/skills"]`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SkillsCapability {
    /// The server answers `resources/directory/read`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub directory_read: bool,
}

/// One file of a skill: its URI, digest and size in bytes.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SkillFile {
    /// The file's resource URI.
    pub uri: String,
    /// `sha256:` and the 64 lowercase hex digits of the file's SHA-256.
    pub digest: String,
    /// The file's length in bytes: the bytes the digest covers.
    pub size: u64,
}

/// What an entry says of its files: all of them, or that they are generated.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum SkillResources {
    /// Every file of the skill, each once, its `SKILL.md` included.
    Listed(Vec<SkillFile>),
    /// `"dynamic"`: generated content, with no digests to verify against.
    Dynamic(DynamicTag),
}

/// The string `"dynamic"`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum DynamicTag {
    /// `"dynamic"`.
    #[serde(rename = "dynamic")]
    Dynamic,
}

/// A skill entry, as `skills/list` and `skills/get` carry it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SkillEntry {
    /// The resource URI of the skill's `SKILL.md`.
    pub uri: String,
    /// The `SKILL.md` front matter, as JSON.
    pub frontmatter: Map<String, Value>,
    /// The skill's files.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resources: Option<SkillResources>,
}

/// The `skills/list` result.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListSkillsResult {
    /// The entries of this page.
    pub skills: Vec<SkillEntry>,
    /// Where the next page starts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
    /// How long the client may keep the result, in milliseconds (2026-07-28).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttl_ms: Option<u64>,
    /// Who may share a cached copy (2026-07-28).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_scope: Option<CacheScope>,
}

/// The `skills/get` result.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GetSkillResult {
    /// The entry.
    pub skill: SkillEntry,
    /// How long the client may keep the result, in milliseconds (2026-07-28).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttl_ms: Option<u64>,
    /// Who may share a cached copy (2026-07-28).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_scope: Option<CacheScope>,
}

/// The bounds of the skills extension, on both sides: what a server loads from its skill
/// directory and serves per page, what a client accepts from an entry and parses. Every bound
/// is inclusive; each default is a constant of [`crate::limits`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SkillLimits {
    pub(crate) resources_per_skill: usize,
    pub(crate) skill_bytes: u64,
    pub(crate) skills: usize,
    pub(crate) total_bytes: u64,
    pub(crate) entries_walked: usize,
    pub(crate) depth: usize,
    pub(crate) frontmatter_bytes: usize,
    pub(crate) page_size: usize,
}

impl Default for SkillLimits {
    fn default() -> Self {
        Self {
            resources_per_skill: limits::DEFAULT_MAX_SKILL_RESOURCES,
            skill_bytes: limits::DEFAULT_MAX_SKILL_BYTES,
            skills: limits::DEFAULT_MAX_SKILLS,
            total_bytes: limits::DEFAULT_MAX_SKILLS_TOTAL_BYTES,
            entries_walked: limits::DEFAULT_MAX_SKILL_ENTRIES_WALKED,
            depth: limits::DEFAULT_MAX_SKILL_DEPTH,
            frontmatter_bytes: limits::DEFAULT_MAX_FRONTMATTER_BYTES,
            page_size: limits::DEFAULT_SKILLS_PAGE_SIZE,
        }
    }
}

macro_rules! setter {
    ($(#[$doc:meta])* $name:ident: $field:ident, $t:ty) => {
        $(#[$doc])*
        #[must_use]
        pub fn $name(mut self, n: $t) -> Self {
            self.$field = n;
            self
        }
    };
}

impl SkillLimits {
    setter!(
        /// Files in one skill ([`limits::DEFAULT_MAX_SKILL_RESOURCES`]).
        max_resources_per_skill: resources_per_skill, usize
    );
    setter!(
        /// Bytes summed over one skill's files ([`limits::DEFAULT_MAX_SKILL_BYTES`]).
        max_skill_bytes: skill_bytes, u64
    );
    setter!(
        /// Skills served, or kept from a listing ([`limits::DEFAULT_MAX_SKILLS`]).
        max_skills: skills, usize
    );
    setter!(
        /// Bytes a server holds over all its skills ([`limits::DEFAULT_MAX_SKILLS_TOTAL_BYTES`]).
        max_total_bytes: total_bytes, u64
    );
    setter!(
        /// Directory entries looked at while loading ([`limits::DEFAULT_MAX_SKILL_ENTRIES_WALKED`]).
        max_entries_walked: entries_walked, usize
    );
    setter!(
        /// Directory levels below the root ([`limits::DEFAULT_MAX_SKILL_DEPTH`]).
        max_depth: depth, usize
    );
    setter!(
        /// Bytes of front matter parsed ([`limits::DEFAULT_MAX_FRONTMATTER_BYTES`]).
        max_frontmatter_bytes: frontmatter_bytes, usize
    );
    setter!(
        /// Entries per page served ([`limits::DEFAULT_SKILLS_PAGE_SIZE`]; at least 1).
        page_size: page_size, usize
    );

    /// Entries per page, at least one.
    #[must_use]
    pub fn page(&self) -> usize {
        self.page_size.max(1)
    }

    /// The front matter bound in effect.
    #[must_use]
    pub fn frontmatter_bytes(&self) -> usize {
        self.frontmatter_bytes
    }

    /// The skills bound in effect.
    #[must_use]
    pub fn skills(&self) -> usize {
        self.skills
    }
}

/// Why content or an entry was refused: the content must not be used.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum VerifyError {
    /// The file is not listed in the entry's resources (an unlisted file is a change to the
    /// skill), or the entry lists no files at all (`"dynamic"` or none).
    #[error("{uri} is not listed in the skill's resources")]
    Unlisted {
        /// The file read.
        uri: String,
    },
    /// The bytes read are not as many as the entry says.
    #[error("{uri}: {got} bytes read, the entry says {expected}")]
    Size {
        /// The file read.
        uri: String,
        /// The entry's size.
        expected: u64,
        /// The bytes read.
        got: u64,
    },
    /// The bytes read do not hash to the entry's digest.
    #[error("{uri}: the content's digest {got} is not the entry's {expected}")]
    Digest {
        /// The file read.
        uri: String,
        /// The entry's digest.
        expected: String,
        /// The content's.
        got: String,
    },
    /// The `SKILL.md` front matter is missing, too large or not a YAML mapping.
    #[error("{uri}: {reason}")]
    Frontmatter {
        /// The `SKILL.md`.
        uri: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The front matter read differs from the entry's in `field`.
    #[error("{uri}: front matter field {field:?} differs from the entry's")]
    FrontmatterMismatch {
        /// The `SKILL.md`.
        uri: String,
        /// The first field that differs.
        field: String,
    },
    /// The entry itself breaks the extension's rules or this side's bounds.
    #[error("{uri}: {reason}")]
    Entry {
        /// The entry's URI.
        uri: String,
        /// What is wrong.
        reason: String,
    },
}

/// `sha256:` and the lowercase hex SHA-256 of `bytes`.
#[must_use]
pub fn digest(bytes: &[u8]) -> String {
    let hash = sha2::Sha256::digest(bytes);
    let mut out = String::with_capacity(7 + 64);
    out.push_str("sha256:");
    for b in hash.iter() {
        let _ = write!(out, "{b:02x}");
    }
    out
}

/// Whether `digest` is `sha256:` and 64 lowercase hex digits.
#[must_use]
pub fn is_digest(digest: &str) -> bool {
    digest.strip_prefix("sha256:").is_some_and(|h| {
        h.len() == 64 && h.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    })
}

/// Whether `name` follows the Agent Skills naming rules: 1 to 64 of `a-z`, `0-9` and `-`, no
/// leading, trailing or doubled hyphen.
#[must_use]
pub fn is_valid_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !name.starts_with('-')
        && !name.ends_with('-')
        && !name.contains("--")
}

/// The skill's root directory URI of a `SKILL.md` URI (`skill://a/b/SKILL.md` → `skill://a/b`),
/// when `uri` names a `SKILL.md` below at least one path segment.
#[must_use]
pub fn skill_root(uri: &str) -> Option<&str> {
    let root = uri.strip_suffix(SKILL_MD)?.strip_suffix('/')?;
    let (_, path) = root.split_once("://")?;
    (!path.is_empty() && !path.ends_with('/')).then_some(root)
}

/// The skill name a `SKILL.md` URI carries: the last segment of its skill path.
#[must_use]
pub fn skill_name(uri: &str) -> Option<&str> {
    let root = skill_root(uri)?;
    let (_, path) = root.split_once("://")?;
    path.rsplit('/').next()
}

/// The YAML front matter at the start of a `SKILL.md` (a byte order mark allowed), as JSON: a
/// `---` line, the YAML, a `---` line. Only the first `max_bytes` bytes after the opening line
/// are looked at, and only they are parsed.
///
/// # Errors
///
/// The reason, when there is no front matter, it is longer than `max_bytes`, it is not YAML,
/// or it is not a mapping with string keys.
pub fn frontmatter(text: &str, max_bytes: usize) -> Result<Map<String, Value>, String> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let rest = text
        .strip_prefix("---\n")
        .or_else(|| text.strip_prefix("---\r\n"))
        .ok_or("it does not begin with a --- front matter line")?;
    let mut start: usize = 0;
    let block = loop {
        // The block, should this line close it: everything before the newline ending the last.
        if start.saturating_sub(1) > max_bytes {
            return Err(format!("its front matter is longer than {max_bytes} bytes"));
        }
        let Some(end) = rest[start..].find('\n').map(|i| start + i) else {
            // The closing line may end the file.
            if rest[start..].trim_end_matches([' ', '\t']) == "---" {
                break &rest[..start.saturating_sub(1)];
            }
            return Err("its front matter has no closing --- line".into());
        };
        let line = rest[start..end].trim_end_matches('\r').trim_end_matches([' ', '\t']);
        if line == "---" {
            break &rest[..start.saturating_sub(1)];
        }
        start = end + 1;
    };
    if block.len() > max_bytes {
        return Err(format!("its front matter is longer than {max_bytes} bytes"));
    }
    let block = block.strip_suffix('\r').unwrap_or(block);
    match serde_yaml_ng::from_str::<Value>(block) {
        Ok(Value::Object(map)) => Ok(map),
        Ok(_) => Err("its front matter is not a YAML mapping".into()),
        Err(e) => Err(format!("its front matter is not valid YAML: {e}")),
    }
}

/// Whether two JSON values hold the same content: numbers by value (`1` and `1.0` alike),
/// objects by their members whatever their order, a missing member as `null`.
fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x == y || x.as_f64() == y.as_f64(),
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(a, b)| same(a, b))
        }
        (Value::Object(x), Value::Object(y)) => first_difference(x, y).is_none(),
        _ => a == b,
    }
}

/// The first field (in sorted order) whose value differs between two front matters.
fn first_difference(a: &Map<String, Value>, b: &Map<String, Value>) -> Option<String> {
    let mut keys: Vec<&String> = a.keys().chain(b.keys()).collect();
    keys.sort();
    keys.dedup();
    keys.into_iter()
        .find(|k| !same(a.get(*k).unwrap_or(&Value::Null), b.get(*k).unwrap_or(&Value::Null)))
        .cloned()
}

impl SkillEntry {
    /// The listed files, when the entry lists them.
    #[must_use]
    pub fn files(&self) -> Option<&[SkillFile]> {
        match &self.resources {
            Some(SkillResources::Listed(files)) => Some(files),
            _ => None,
        }
    }

    /// The listed file at `uri`.
    #[must_use]
    pub fn file(&self, uri: &str) -> Option<&SkillFile> {
        self.files()?.iter().find(|f| f.uri == uri)
    }

    /// The skill's name, from its front matter.
    #[must_use]
    pub fn name(&self) -> Option<&str> {
        self.frontmatter.get("name").and_then(Value::as_str)
    }

    /// Checks the entry against the extension's rules and `limits` before a host keeps it: its
    /// URI names a `SKILL.md` whose last skill-path segment is `frontmatter.name` (a valid
    /// name), with a non-empty `description`; its files, when listed, are each inside the
    /// skill, listed once, with a well-formed digest, the `SKILL.md` among them, within the
    /// per-skill bounds.
    ///
    /// # Errors
    ///
    /// [`VerifyError::Entry`] saying what is wrong.
    pub fn check(&self, limits: &SkillLimits) -> Result<(), VerifyError> {
        let bad = |reason: String| VerifyError::Entry { uri: self.uri.clone(), reason };
        let root = skill_root(&self.uri)
            .ok_or_else(|| bad(format!("the entry's uri does not name a {SKILL_MD}")))?;
        let name = self.name().ok_or_else(|| bad("frontmatter.name is missing".into()))?;
        if skill_name(&self.uri) != Some(name) || !is_valid_name(name) {
            return Err(bad(format!("frontmatter.name {name:?} is not the uri's last segment")));
        }
        if self.frontmatter.get("description").and_then(Value::as_str).is_none_or(str::is_empty) {
            return Err(bad("frontmatter.description is missing".into()));
        }
        let Some(files) = self.files() else { return Ok(()) };
        if files.len() > limits.resources_per_skill {
            return Err(bad(format!("{} files, past {}", files.len(), limits.resources_per_skill)));
        }
        let mut total: u64 = 0;
        let mut seen = std::collections::HashSet::with_capacity(files.len());
        for f in files {
            let inside = f.uri == self.uri
                || f.uri.strip_prefix(root).is_some_and(|rest| rest.starts_with('/'));
            if !inside || !seen.insert(f.uri.as_str()) || !is_digest(&f.digest) {
                return Err(bad(format!(
                    "{}: outside the skill, listed twice or bad digest",
                    f.uri
                )));
            }
            total = total.saturating_add(f.size);
        }
        if total > limits.skill_bytes {
            return Err(bad(format!("{total} bytes in all, past {}", limits.skill_bytes)));
        }
        if !seen.contains(self.uri.as_str()) {
            return Err(bad(format!("its resources do not list its {SKILL_MD}")));
        }
        Ok(())
    }

    /// Verifies the bytes read of file `uri` against the entry: listed, of the listed size (a
    /// different length fails before any hashing), of the listed digest.
    ///
    /// # Errors
    ///
    /// [`VerifyError::Unlisted`], [`VerifyError::Size`] or [`VerifyError::Digest`].
    pub fn verify_file(&self, uri: &str, bytes: &[u8]) -> Result<(), VerifyError> {
        let file = self.file(uri).ok_or_else(|| VerifyError::Unlisted { uri: uri.to_owned() })?;
        let got = bytes.len() as u64;
        if got != file.size {
            return Err(VerifyError::Size { uri: uri.to_owned(), expected: file.size, got });
        }
        let got = digest(bytes);
        if got != file.digest {
            return Err(VerifyError::Digest {
                uri: uri.to_owned(),
                expected: file.digest.clone(),
                got,
            });
        }
        Ok(())
    }

    /// Verifies the `SKILL.md` read for this entry: [`SkillEntry::verify_file`], then its front
    /// matter parsed (within `limits`) and compared field by field with the entry's. Returns the
    /// front matter read.
    ///
    /// # Errors
    ///
    /// As [`SkillEntry::verify_file`]; [`VerifyError::Frontmatter`] when the file has no
    /// readable front matter; [`VerifyError::FrontmatterMismatch`] naming the first field that
    /// differs.
    pub fn verify_skill_md(
        &self,
        bytes: &[u8],
        limits: &SkillLimits,
    ) -> Result<Map<String, Value>, VerifyError> {
        self.verify_file(&self.uri, bytes)?;
        let bad = |reason: String| VerifyError::Frontmatter { uri: self.uri.clone(), reason };
        let text = std::str::from_utf8(bytes).map_err(|_| bad("it is not UTF-8".into()))?;
        let read = frontmatter(text, limits.frontmatter_bytes).map_err(bad)?;
        match first_difference(&read, &self.frontmatter) {
            None => Ok(read),
            Some(field) => Err(VerifyError::FrontmatterMismatch { uri: self.uri.clone(), field }),
        }
    }
}

#[cfg(test)]
mod tests;
