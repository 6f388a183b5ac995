//! The skills extension (`io.modelcontextprotocol/skills`) in the client: list and get
//! entries, read directories, and load a skill's files only when asked, each verified against
//! its entry before it is handed back.
//!
//! Nothing is fetched ahead of need: [`Client::list_skills`] reads only the listing,
//! [`Client::load_skill`] reads only the `SKILL.md`, and [`Client::read_skill_file`] only the
//! file asked for. Every read is checked against the entry it was loaded from (listed, size,
//! digest, and for the `SKILL.md` its front matter field by field); on any mismatch the bytes
//! are dropped and the call fails with [`ClientError::Skill`].

use base64::Engine as _;
use serde::Serialize;
use serde_json::{Map, Value};

use super::{Client, ClientError};
use crate::mcp::skills::{
    DIRECTORY_READ, EXTENSION, GET, LIST, ListSkillsResult, SkillEntry, SkillLimits,
    SkillsCapability, VerifyError,
};
use crate::mcp::types::ListResourcesResult;

/// A skill loaded through [`Client::load_skill`]: its `SKILL.md` verified against `entry`.
#[derive(Clone, Debug, PartialEq)]
pub struct LoadedSkill {
    /// The entry the skill was loaded from; its supporting files are read against it with
    /// [`Client::read_skill_file`].
    pub entry: SkillEntry,
    /// The `SKILL.md` front matter, as read (identical to the entry's).
    pub frontmatter: Map<String, Value>,
    /// The whole `SKILL.md`.
    pub text: String,
}

#[derive(Serialize)]
struct Params<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    uri: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    cursor: Option<&'a str>,
}

impl Client {
    /// The server's skills extension settings, when it declares the extension.
    #[must_use]
    pub fn skills_capability(&self) -> Option<SkillsCapability> {
        let extensions = self.capabilities().extensions.as_ref()?;
        let all: Map<String, Value> = serde_json::from_str(extensions.get()).ok()?;
        serde_json::from_value(all.get(EXTENSION)?.clone()).ok()
    }

    async fn skills_call<T: serde::de::DeserializeOwned>(
        &self,
        method: &str,
        params: Params<'_>,
    ) -> Result<T, ClientError> {
        let answer = self.request_with(method, params).await?;
        answer.result_as::<T>().map_err(|e| ClientError::invalid(method, format!("result: {e}")))
    }

    /// One page of `skills/list`.
    ///
    /// # Errors
    ///
    /// As any call.
    pub async fn list_skills_page(
        &self,
        cursor: Option<&str>,
    ) -> Result<ListSkillsResult, ClientError> {
        self.skills_call(LIST, Params { uri: None, cursor }).await
    }

    /// Every skill the server lists, page after page (at most the client's `max_pages`, and
    /// [`SkillLimits::max_skills`] entries), each entry checked with [`SkillEntry::check`].
    /// Reads nothing but the listing.
    ///
    /// # Errors
    ///
    /// As any call; [`ClientError::Invalid`] past a bound or on a repeated cursor;
    /// [`ClientError::Skill`] for an entry that breaks the extension's rules.
    pub async fn list_skills(&self) -> Result<Vec<SkillEntry>, ClientError> {
        self.list_skills_with(&SkillLimits::default()).await
    }

    /// [`Client::list_skills`] within `limits`.
    ///
    /// # Errors
    ///
    /// As [`Client::list_skills`].
    pub async fn list_skills_with(
        &self,
        limits: &SkillLimits,
    ) -> Result<Vec<SkillEntry>, ClientError> {
        let mut out = Vec::new();
        let mut cursor: Option<String> = None;
        for _ in 0..self.0.max_pages {
            let page = self.list_skills_page(cursor.as_deref()).await?;
            if out.len() + page.skills.len() > limits.skills() {
                return Err(ClientError::invalid(
                    LIST,
                    format!("more than {} skills", limits.skills()),
                ));
            }
            for entry in page.skills {
                entry.check(limits).map_err(ClientError::Skill)?;
                out.push(entry);
            }
            match super::catalog::next_page(LIST, page.next_cursor, &cursor)? {
                Some(next) => cursor = Some(next),
                None => return Ok(out),
            }
        }
        Err(self.too_many_pages(LIST))
    }

    /// The entry of the skill whose `SKILL.md` is at `uri` (`skills/get`), checked with
    /// [`SkillEntry::check`].
    ///
    /// # Errors
    ///
    /// As any call (-32602 from the server when `uri` is not a skill it serves);
    /// [`ClientError::Skill`] for an entry that breaks the rules or is not for `uri`.
    pub async fn get_skill(&self, uri: &str) -> Result<SkillEntry, ClientError> {
        #[derive(serde::Deserialize)]
        struct Got {
            skill: SkillEntry,
        }
        let got: Got = self.skills_call(GET, Params { uri: Some(uri), cursor: None }).await?;
        if got.skill.uri != uri {
            let reason = format!("skills/get answered for {}", got.skill.uri);
            return Err(ClientError::Skill(VerifyError::Entry { uri: uri.to_owned(), reason }));
        }
        got.skill.check(&SkillLimits::default()).map_err(ClientError::Skill)?;
        Ok(got.skill)
    }

    /// One page of a directory's direct children (`resources/directory/read`); a child
    /// directory has the media type [`DIRECTORY_MIME`](crate::mcp::skills::DIRECTORY_MIME).
    ///
    /// # Errors
    ///
    /// As any call: -32602 from the server for a URI that is not a directory.
    pub async fn read_directory(
        &self,
        uri: &str,
        cursor: Option<&str>,
    ) -> Result<ListResourcesResult<'static>, ClientError> {
        let answer = self.request_with(DIRECTORY_READ, Params { uri: Some(uri), cursor }).await?;
        let bad =
            |e: serde_json::Error| ClientError::invalid(DIRECTORY_READ, format!("result: {e}"));
        let value: Value = answer
            .result_as()
            .map_err(|e| ClientError::invalid(DIRECTORY_READ, format!("result: {e}")))?;
        // Every string owned: `Value` hands out no borrows.
        <ListResourcesResult<'static> as serde::Deserialize<'static>>::deserialize(value)
            .map_err(bad)
    }

    /// Loads the skill of `entry`: reads its `SKILL.md` (and nothing else), verifies size and
    /// digest against the entry, parses the front matter and compares it field by field with
    /// the entry's.
    ///
    /// # Errors
    ///
    /// As any call; [`ClientError::Skill`] on any mismatch (the content is not used), and for
    /// an entry that lists no files (`"dynamic"`: nothing to verify against).
    pub async fn load_skill(&self, entry: &SkillEntry) -> Result<LoadedSkill, ClientError> {
        self.load_skill_with(entry, &SkillLimits::default()).await
    }

    /// [`Client::load_skill`] within `limits` (the front matter bound).
    ///
    /// # Errors
    ///
    /// As [`Client::load_skill`].
    pub async fn load_skill_with(
        &self,
        entry: &SkillEntry,
        limits: &SkillLimits,
    ) -> Result<LoadedSkill, ClientError> {
        entry.check(limits).map_err(ClientError::Skill)?;
        if entry.file(&entry.uri).is_none() {
            return Err(ClientError::Skill(VerifyError::Unlisted { uri: entry.uri.clone() }));
        }
        let bytes = self.read_bytes(&entry.uri).await?;
        let frontmatter = entry.verify_skill_md(&bytes, limits).map_err(ClientError::Skill)?;
        let text = String::from_utf8(bytes).map_err(|_| {
            ClientError::Skill(VerifyError::Frontmatter {
                uri: entry.uri.clone(),
                reason: "not UTF-8".into(),
            })
        })?;
        Ok(LoadedSkill { entry: entry.clone(), frontmatter, text })
    }

    /// Reads the supporting file `uri` of a loaded skill, verified against the entry it was
    /// loaded from. A file the entry does not list is refused before anything is read.
    ///
    /// # Errors
    ///
    /// As any call; [`ClientError::Skill`] for an unlisted file or a size or digest mismatch.
    pub async fn read_skill_file(
        &self,
        skill: &LoadedSkill,
        uri: &str,
    ) -> Result<Vec<u8>, ClientError> {
        if skill.entry.file(uri).is_none() {
            return Err(ClientError::Skill(VerifyError::Unlisted { uri: uri.to_owned() }));
        }
        let bytes = self.read_bytes(uri).await?;
        skill.entry.verify_file(uri, &bytes).map_err(ClientError::Skill)?;
        Ok(bytes)
    }

    /// The raw bytes of resource `uri`: its text's UTF-8, or its blob decoded.
    async fn read_bytes(&self, uri: &str) -> Result<Vec<u8>, ClientError> {
        let read = self.read_resource(uri).await?;
        let contents = &read.get().contents;
        let part = contents.iter().find(|c| c.uri == uri).or(contents.first());
        let bad = |reason: &str| ClientError::invalid("resources/read", format!("{uri}: {reason}"));
        match part {
            Some(c) if c.text.is_some() => {
                Ok(c.text.as_deref().unwrap_or_default().as_bytes().to_vec())
            }
            Some(c) => match &c.blob {
                Some(b) => base64::engine::general_purpose::STANDARD
                    .decode(b.as_bytes())
                    .map_err(|_| bad("its blob is not base64")),
                None => Err(bad("neither text nor blob")),
            },
            None => Err(bad("no contents")),
        }
    }
}
