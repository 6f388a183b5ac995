//! Loads a skill directory into a [`Catalog`]: walks the tree (bounded), finds each directory
//! holding a `SKILL.md`, reads its files once, digests them and parses the front matter.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::io::Read as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::Value;

use crate::mcp::skills::{
    self, DIRECTORY_MIME, SCHEME, SKILL_MD, SkillEntry, SkillFile, SkillLimits, SkillResources,
};
use serde_json::value::RawValue;

/// Why a skill directory could not be loaded.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SkillsError {
    /// Reading the tree failed.
    #[error("{}: {source}", path.display())]
    Io {
        /// Where.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// A skill breaks the extension's rules or a bound of [`SkillLimits`].
    #[error("{}: {reason}", path.display())]
    Invalid {
        /// The skill, file or directory at fault.
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },
}

impl SkillsError {
    pub(super) fn io(path: &Path, source: std::io::Error) -> Self {
        Self::Io { path: path.to_path_buf(), source }
    }

    pub(super) fn invalid(path: &Path, reason: impl Into<String>) -> Self {
        Self::Invalid { path: path.to_path_buf(), reason: reason.into() }
    }
}

/// A file's bytes and media type.
#[derive(Clone)]
pub(super) struct FileData {
    pub(super) bytes: Arc<[u8]>,
    pub(super) mime: &'static str,
}

/// A directory's child, as `resources/directory/read` lists it.
pub(super) struct Child {
    pub(super) uri: String,
    pub(super) name: String,
    pub(super) mime: &'static str,
    pub(super) size: Option<u64>,
}

/// What [`super::Skills`] holds.
pub(super) struct Catalog {
    pub(super) entries: Vec<SkillEntry>,
    /// Each entry as JSON, written once.
    pub(super) entries_json: Vec<Box<RawValue>>,
    pub(super) by_uri: HashMap<String, usize>,
    pub(super) files: BTreeMap<String, FileData>,
    pub(super) dirs: BTreeMap<String, Vec<Child>>,
    pub(super) limits: SkillLimits,
}

impl Catalog {
    fn new(
        entries: Vec<SkillEntry>,
        files: BTreeMap<String, FileData>,
        dirs: BTreeMap<String, Vec<Child>>,
        limits: SkillLimits,
    ) -> Self {
        let entries_json = entries
            .iter()
            .map(|e| serde_json::value::to_raw_value(e).expect("entries always serialise"))
            .collect();
        let by_uri = entries.iter().enumerate().map(|(i, e)| (e.uri.clone(), i)).collect();
        Self { entries, entries_json, by_uri, files, dirs, limits }
    }
}

/// A regular file found by the walk: its path segments below the root and its size.
struct Found {
    segments: Vec<String>,
    size: u64,
}

/// Walks `root` without following symbolic links (a link is skipped: nothing outside the tree
/// is ever read), depth-first with an explicit stack, within the bounds.
fn walk(
    root: &Path,
    limits: &SkillLimits,
) -> Result<(Vec<Found>, BTreeSet<Vec<String>>), SkillsError> {
    let mut files = Vec::new();
    let mut dirs = BTreeSet::new();
    let mut stack: Vec<(PathBuf, Vec<String>)> = vec![(root.to_path_buf(), Vec::new())];
    let mut walked = 0usize;
    while let Some((dir, segments)) = stack.pop() {
        let read = std::fs::read_dir(&dir).map_err(|e| SkillsError::io(&dir, e))?;
        for item in read {
            let item = item.map_err(|e| SkillsError::io(&dir, e))?;
            walked += 1;
            if walked > limits.entries_walked {
                return Err(SkillsError::invalid(
                    root,
                    format!("more than {} directory entries", limits.entries_walked),
                ));
            }
            let path = item.path();
            let kind = item.file_type().map_err(|e| SkillsError::io(&path, e))?;
            let Some(name) = item.file_name().to_str().map(str::to_owned) else {
                return Err(SkillsError::invalid(&path, "a file name that is not UTF-8"));
            };
            let mut below = segments.clone();
            below.push(name);
            if kind.is_dir() {
                if below.len() > limits.depth {
                    return Err(SkillsError::invalid(
                        &path,
                        format!("deeper than {} levels", limits.depth),
                    ));
                }
                dirs.insert(below.clone());
                stack.push((path, below));
            } else if kind.is_file() {
                let size = item.metadata().map_err(|e| SkillsError::io(&path, e))?.len();
                files.push(Found { segments: below, size });
            }
        }
    }
    Ok((files, dirs))
}

/// A path segment as it appears in a URI: unreserved characters and sub-delimiters as they
/// are, every other byte percent-encoded.
fn encode(segment: &str) -> String {
    let mut out = String::with_capacity(segment.len());
    for b in segment.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~!$&'()*+,;=:@".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

fn uri_of(segments: &[String]) -> String {
    let encoded: Vec<String> = segments.iter().map(|s| encode(s)).collect();
    format!("{SCHEME}{}", encoded.join("/"))
}

/// The media type of a file, by its extension.
pub(super) fn mime_of(name: &str) -> &'static str {
    let ext = name.rsplit_once('.').map_or("", |(_, e)| e).to_ascii_lowercase();
    match ext.as_str() {
        "md" | "markdown" => "text/markdown",
        "txt" => "text/plain",
        "py" => "text/x-python",
        "sh" => "application/x-sh",
        "js" | "mjs" => "text/javascript",
        "ts" => "text/x-typescript",
        "json" => "application/json",
        "yaml" | "yml" => "application/yaml",
        "toml" => "application/toml",
        "html" | "htm" => "text/html",
        "css" => "text/css",
        "csv" => "text/csv",
        "xml" => "application/xml",
        "png" => "image/png",
        "jpg" | "jpeg" => "image/jpeg",
        "gif" => "image/gif",
        "svg" => "image/svg+xml",
        "pdf" => "application/pdf",
        _ => "application/octet-stream",
    }
}

/// Reads at most `limit` bytes of `path`; a file that grew past it since the walk is refused.
fn read_bounded(path: &Path, limit: u64) -> Result<Vec<u8>, SkillsError> {
    let file = std::fs::File::open(path).map_err(|e| SkillsError::io(path, e))?;
    let mut bytes = Vec::new();
    file.take(limit.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(|e| SkillsError::io(path, e))?;
    if bytes.len() as u64 > limit {
        return Err(SkillsError::invalid(path, format!("the skill is larger than {limit} bytes")));
    }
    Ok(bytes)
}

/// Loads every skill below `root`.
pub(super) fn load(root: &Path, limits: SkillLimits) -> Result<Catalog, SkillsError> {
    let (found, dirs) = walk(root, &limits)?;
    let mut skill_dirs: Vec<&[String]> = found
        .iter()
        .filter(|f| f.segments.last().is_some_and(|n| n == SKILL_MD))
        .map(|f| &f.segments[..f.segments.len() - 1])
        .collect();
    if skill_dirs.iter().any(|d| d.is_empty()) {
        return Err(SkillsError::invalid(
            root,
            "a SKILL.md at the root: a skill is a directory below it",
        ));
    }
    skill_dirs.sort();
    if skill_dirs.len() > limits.skills {
        return Err(SkillsError::invalid(root, format!("more than {} skills", limits.skills)));
    }
    let path_of = |segments: &[String]| segments.iter().fold(root.to_path_buf(), |p, s| p.join(s));
    let mut files: BTreeMap<String, FileData> = BTreeMap::new();
    let mut total: u64 = 0;
    let mut entries = Vec::with_capacity(skill_dirs.len());
    for dir in &skill_dirs {
        let mine: Vec<&Found> = found.iter().filter(|f| f.segments.starts_with(dir)).collect();
        let skill_path = path_of(dir);
        if mine.len() > limits.resources_per_skill {
            return Err(SkillsError::invalid(
                &skill_path,
                format!("more than {} files", limits.resources_per_skill),
            ));
        }
        let size: u64 = mine.iter().map(|f| f.size).sum();
        if size > limits.skill_bytes {
            return Err(SkillsError::invalid(
                &skill_path,
                format!("larger than {} bytes", limits.skill_bytes),
            ));
        }
        let mut listed = Vec::with_capacity(mine.len());
        let mut budget = limits.skill_bytes;
        for f in &mine {
            let uri = uri_of(&f.segments);
            let data = match files.get(&uri) {
                Some(d) => d.clone(),
                None => {
                    let bytes = read_bounded(&path_of(&f.segments), budget)?;
                    total = total.saturating_add(bytes.len() as u64);
                    if total > limits.total_bytes {
                        return Err(SkillsError::invalid(
                            root,
                            format!("the skills hold more than {} bytes", limits.total_bytes),
                        ));
                    }
                    let name = f.segments.last().map_or("", String::as_str);
                    let d = FileData { bytes: Arc::from(bytes), mime: mime_of(name) };
                    files.insert(uri.clone(), d.clone());
                    d
                }
            };
            budget = budget.saturating_sub(data.bytes.len() as u64);
            listed.push(SkillFile {
                uri,
                digest: skills::digest(&data.bytes),
                size: data.bytes.len() as u64,
            });
        }
        let md_uri = format!("{}/{SKILL_MD}", uri_of(dir));
        // The SKILL.md first, the rest in URI order.
        listed.sort_by(|a, b| (a.uri != md_uri, &a.uri).cmp(&(b.uri != md_uri, &b.uri)));
        let md = &files[&md_uri];
        let md_path = skill_path.join(SKILL_MD);
        let text = std::str::from_utf8(&md.bytes)
            .map_err(|_| SkillsError::invalid(&md_path, "not UTF-8"))?;
        let frontmatter = skills::frontmatter(text, limits.frontmatter_bytes)
            .map_err(|r| SkillsError::invalid(&md_path, r))?;
        let name = frontmatter.get("name").and_then(Value::as_str).unwrap_or_default();
        let dir_name = dir.last().map_or("", String::as_str);
        if name != dir_name || !skills::is_valid_name(name) {
            return Err(SkillsError::invalid(
                &md_path,
                format!(
                    "name {name:?} must be the directory's name, {dir_name:?}, and follow the naming rules (a-z, 0-9, single inner hyphens, 1 to 64)"
                ),
            ));
        }
        if frontmatter.get("description").and_then(Value::as_str).is_none_or(str::is_empty) {
            return Err(SkillsError::invalid(&md_path, "no description in the front matter"));
        }
        entries.push(SkillEntry {
            uri: md_uri,
            frontmatter,
            resources: Some(SkillResources::Listed(listed)),
        });
    }
    // Every directory within a skill, the skill roots included, with its direct children.
    let mut listing: BTreeMap<String, Vec<Child>> = BTreeMap::new();
    let in_skill = |segments: &[String]| skill_dirs.iter().any(|d| segments.starts_with(d));
    for d in dirs.iter().filter(|d| in_skill(d)) {
        listing.insert(uri_of(d), Vec::new());
    }
    // A skill's root has no listed parent unless it nests in another skill.
    for d in dirs.iter().filter(|d| in_skill(d)) {
        let parent = uri_of(&d[..d.len() - 1]);
        let name = d.last().cloned().unwrap_or_default();
        if let Some(children) = listing.get_mut(&parent) {
            children.push(Child { uri: uri_of(d), name, mime: DIRECTORY_MIME, size: None });
        }
    }
    for f in found.iter().filter(|f| in_skill(&f.segments)) {
        let parent = uri_of(&f.segments[..f.segments.len() - 1]);
        let uri = uri_of(&f.segments);
        if let (Some(children), Some(data)) = (listing.get_mut(&parent), files.get(&uri)) {
            let name = f.segments.last().cloned().unwrap_or_default();
            children.push(Child {
                uri,
                name,
                mime: data.mime,
                size: Some(data.bytes.len() as u64),
            });
        }
    }
    for children in listing.values_mut() {
        children.sort_by(|a, b| a.uri.cmp(&b.uri));
    }
    Ok(Catalog::new(entries, files, listing, limits))
}
