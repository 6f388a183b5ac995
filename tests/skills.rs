//! The skills extension end to end: a real skill directory (examples/skills, or one written to a
//! temporary directory) served by `Server` and read by `Client`, in process, in both eras.

#![cfg(feature = "mcp")]

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

use mcpwire::ErrorCode;
use mcpwire::client::{Client, ClientError};
use mcpwire::mcp::negotiation::VersionChoice;
use mcpwire::mcp::skills::{self, DIRECTORY_MIME, SkillLimits, SkillResources, VerifyError};
use mcpwire::server::{Server, Skills, SkillsError};
use serde_json::json;

const EXAMPLE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/skills");

/// A fresh directory under the system's temporary one, removed when dropped.
struct Temp(PathBuf);

impl Temp {
    fn new() -> Self {
        static N: AtomicUsize = AtomicUsize::new(0);
        let n = N.fetch_add(1, Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!("mcpwire-skills-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Self(dir)
    }

    fn write(&self, path: &str, body: impl AsRef<[u8]>) -> &Self {
        let p = self.0.join(path);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, body).unwrap();
        self
    }

    /// A valid skill named `name` at `dir`.
    fn skill(&self, dir: &str, name: &str) -> &Self {
        self.write(
            &format!("{dir}/SKILL.md"),
            format!("---\nname: {name}\ndescription: The {name} skill\n---\nBody.\n"),
        )
    }

    fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for Temp {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn invalid(r: Result<Skills, SkillsError>) -> String {
    match r {
        Err(SkillsError::Invalid { reason, .. }) => reason,
        other => panic!("expected an invalid skill directory, got {other:?}"),
    }
}

async fn client(skills: Skills, version: VersionChoice) -> Client {
    let server = Server::builder("skills", "1").skills(skills).build();
    Client::builder().protocol_version(version).connect(server).await.unwrap()
}

#[test]
fn loads_the_example_directory_with_digests_and_sizes() {
    let skills = Skills::load(EXAMPLE).unwrap();
    let uris: Vec<&str> = skills.entries().iter().map(|e| e.uri.as_str()).collect();
    assert_eq!(uris, ["skill://git-workflow/SKILL.md", "skill://pdf-processing/SKILL.md"]);
    let pdf = &skills.entries()[1];
    assert_eq!(
        serde_json::Value::Object(pdf.frontmatter.clone()),
        json!({"name": "pdf-processing", "description": "Extract, fill, and assemble PDF documents", "metadata": {"version": "2.1.0"}})
    );
    let files = pdf.files().unwrap();
    let listed: Vec<&str> = files.iter().map(|f| f.uri.as_str()).collect();
    assert_eq!(
        listed,
        [
            "skill://pdf-processing/SKILL.md",
            "skill://pdf-processing/references/FORMS.md",
            "skill://pdf-processing/scripts/extract.py"
        ]
    );
    for f in files {
        let rel = f.uri.strip_prefix("skill://").unwrap();
        let bytes = std::fs::read(Path::new(EXAMPLE).join(rel)).unwrap();
        assert_eq!(f.size, bytes.len() as u64);
        assert_eq!(f.digest, skills::digest(&bytes));
        assert_eq!(skills.file(&f.uri), Some(&bytes[..]));
    }
    pdf.check(&SkillLimits::default()).unwrap();
}

#[tokio::test]
async fn lists_gets_and_reads_directories_in_both_eras() {
    for version in [VersionChoice::Auto, "2025-11-25".parse().unwrap()] {
        // One entry per page: the listing takes two pages, each entry whole.
        let skills = Skills::load_with(EXAMPLE, SkillLimits::default().page_size(1)).unwrap();
        let c = client(skills.clone(), version).await;
        assert_eq!(c.skills_capability().map(|s| s.directory_read), Some(true));
        let first = c.list_skills_page(None).await.unwrap();
        assert_eq!(first.skills.len(), 1);
        assert_eq!(first.next_cursor.as_deref(), Some("1"));
        assert_eq!(c.list_skills().await.unwrap(), skills.entries());

        let uri = "skill://pdf-processing/SKILL.md";
        assert_eq!(&c.get_skill(uri).await.unwrap(), &skills.entries()[1]);
        let unknown = c.get_skill("skill://nothing/SKILL.md").await.unwrap_err();
        assert_eq!(unknown.code(), Some(ErrorCode::INVALID_PARAMS));
        let bad_cursor = c.request_with("skills/list", json!({"cursor": "99"})).await.unwrap_err();
        assert_eq!(bad_cursor.code(), Some(ErrorCode::INVALID_PARAMS));

        let root = c.read_directory("skill://pdf-processing", None).await.unwrap();
        let children: Vec<(&str, Option<&str>)> =
            root.resources.iter().map(|r| (r.uri.as_ref(), r.mime_type.as_deref())).collect();
        // One child per page here too.
        assert_eq!(children, [("skill://pdf-processing/SKILL.md", Some("text/markdown"))]);
        let mut all = Vec::new();
        let mut cursor = None;
        loop {
            let page =
                c.read_directory("skill://pdf-processing/", cursor.as_deref()).await.unwrap();
            all.extend(
                page.resources
                    .iter()
                    .map(|r| (r.uri.to_string(), r.mime_type.as_deref().map(str::to_owned))),
            );
            match page.next_cursor {
                Some(next) => cursor = Some(next.into_owned()),
                None => break,
            }
        }
        let dir = Some(DIRECTORY_MIME.to_owned());
        assert_eq!(all[1], ("skill://pdf-processing/references".to_owned(), dir.clone()));
        assert_eq!(all[2], ("skill://pdf-processing/scripts".to_owned(), dir));
        let sub = c.read_directory("skill://pdf-processing/references", None).await.unwrap();
        assert_eq!(sub.resources[0].uri, "skill://pdf-processing/references/FORMS.md");
        assert_eq!(
            sub.resources[0].size,
            Some(skills.file("skill://pdf-processing/references/FORMS.md").unwrap().len() as u64)
        );
        for not_a_dir in [uri, "skill://nothing", "skill://"] {
            let e = c.read_directory(not_a_dir, None).await.unwrap_err();
            assert_eq!(e.code(), Some(ErrorCode::INVALID_PARAMS), "{not_a_dir}");
        }

        // Each SKILL.md is listed, named and described from its front matter.
        let listed = c.list_resources().await.unwrap();
        let md = listed.iter().find(|r| r.get().uri == uri).unwrap();
        assert_eq!(md.get().name, "pdf-processing");
        assert_eq!(
            md.get().description.as_deref(),
            Some("Extract, fill, and assemble PDF documents")
        );
        assert_eq!(md.get().mime_type.as_deref(), Some("text/markdown"));
        c.close().await;
    }
}

#[tokio::test]
async fn loads_a_skill_and_verifies_each_read() {
    let c = client(Skills::load(EXAMPLE).unwrap(), VersionChoice::Auto).await;
    let entry = c.get_skill("skill://pdf-processing/SKILL.md").await.unwrap();
    let loaded = c.load_skill(&entry).await.unwrap();
    assert!(loaded.text.contains("# PDF processing"));
    assert_eq!(loaded.frontmatter, entry.frontmatter);
    let forms =
        c.read_skill_file(&loaded, "skill://pdf-processing/references/FORMS.md").await.unwrap();
    assert!(forms.starts_with(b"# Forms"));
    // A file the entry does not list is refused before it is read, even one the server has.
    let other = c.read_skill_file(&loaded, "skill://git-workflow/SKILL.md").await.unwrap_err();
    assert!(matches!(other, ClientError::Skill(VerifyError::Unlisted { .. })));

    // The same content against an entry that promised other bytes: each kind of mismatch.
    let tamper = |f: &dyn Fn(&mut skills::SkillEntry)| {
        let mut e = entry.clone();
        f(&mut e);
        e
    };
    let digest = tamper(&|e| {
        if let Some(SkillResources::Listed(files)) = &mut e.resources {
            files[0].digest = skills::digest(b"other");
        }
    });
    assert!(matches!(
        c.load_skill(&digest).await,
        Err(ClientError::Skill(VerifyError::Digest { .. }))
    ));
    let size = tamper(&|e| {
        if let Some(SkillResources::Listed(files)) = &mut e.resources {
            files[0].size += 1;
        }
    });
    assert!(matches!(c.load_skill(&size).await, Err(ClientError::Skill(VerifyError::Size { .. }))));
    let fm = tamper(&|e| {
        e.frontmatter.insert("description".into(), json!("Something else"));
    });
    assert!(
        matches!(c.load_skill(&fm).await, Err(ClientError::Skill(VerifyError::FrontmatterMismatch { field, .. })) if field == "description")
    );
    let dynamic =
        tamper(&|e| e.resources = Some(serde_json::from_value(json!("dynamic")).unwrap()));
    assert!(matches!(
        c.load_skill(&dynamic).await,
        Err(ClientError::Skill(VerifyError::Unlisted { .. }))
    ));
    c.close().await;
}

#[tokio::test]
async fn a_server_without_skills_knows_no_skills_methods() {
    let c = Client::connect(mcpwire::server::demo()).await.unwrap();
    assert_eq!(c.skills_capability(), None);
    assert_eq!(c.list_skills().await.unwrap_err().code(), Some(ErrorCode::METHOD_NOT_FOUND));
    c.close().await;
}

#[test]
fn nested_prefixed_and_binary_skills() {
    let t = Temp::new();
    t.skill("acme/billing/refunds", "refunds")
        .skill("outer", "outer")
        .skill("outer/inner", "inner")
        .write("outer/inner/data.bin", [0u8, 159, 146, 150])
        .write("outer/name with space.md", "x")
        .write("README.md", "not in any skill");
    let skills = Skills::load(t.path()).unwrap();
    let uris: Vec<&str> = skills.entries().iter().map(|e| e.uri.as_str()).collect();
    assert_eq!(
        uris,
        [
            "skill://acme/billing/refunds/SKILL.md",
            "skill://outer/SKILL.md",
            "skill://outer/inner/SKILL.md"
        ]
    );
    // The enclosing skill lists its nested skill's files too.
    let outer =
        skills.entries()[1].files().unwrap().iter().map(|f| f.uri.as_str()).collect::<Vec<_>>();
    assert_eq!(
        outer,
        [
            "skill://outer/SKILL.md",
            "skill://outer/inner/SKILL.md",
            "skill://outer/inner/data.bin",
            "skill://outer/name%20with%20space.md"
        ]
    );
    assert_eq!(skills.file("skill://outer/inner/data.bin"), Some(&[0u8, 159, 146, 150][..]));
    assert_eq!(skills.file("skill://README.md"), None);
}

#[tokio::test]
async fn binary_files_are_read_back_verified() {
    let t = Temp::new();
    t.skill("bin", "bin").write("bin/data.bin", [0u8, 159, 146, 150, 255]);
    let c = client(Skills::load(t.path()).unwrap(), VersionChoice::Auto).await;
    let entry = c.list_skills().await.unwrap().remove(0);
    let loaded = c.load_skill(&entry).await.unwrap();
    let bytes = c.read_skill_file(&loaded, "skill://bin/data.bin").await.unwrap();
    assert_eq!(bytes, [0u8, 159, 146, 150, 255]);
    c.close().await;
}

#[test]
fn skills_that_break_the_rules_fail_the_load() {
    let cases: [(&str, &str, &str); 6] = [
        ("a/SKILL.md", "---\nname: b\ndescription: d\n---\n", "directory's name"),
        ("Bad_Name/SKILL.md", "---\nname: Bad_Name\ndescription: d\n---\n", "naming rules"),
        ("a/SKILL.md", "---\nname: a\n---\n", "description"),
        ("a/SKILL.md", "no front matter\n", "---"),
        ("a/SKILL.md", "---\nname: a\ndescription: [\n---\n", "YAML"),
        ("SKILL.md", "---\nname: a\ndescription: d\n---\n", "root"),
    ];
    for (path, body, why) in cases {
        let t = Temp::new();
        t.write(path, body);
        let reason = invalid(Skills::load(t.path()));
        assert!(reason.contains(why), "{path}: {reason}");
    }
    let t = Temp::new();
    t.write("a/SKILL.md", [0xffu8, 0xfe]);
    assert!(invalid(Skills::load(t.path())).contains("UTF-8"));
    assert!(matches!(Skills::load(t.path().join("missing")), Err(SkillsError::Io { .. })));
}

#[test]
fn every_load_bound_holds_at_its_value_and_fails_just_past_it() {
    let t = Temp::new();
    t.skill("a", "a").write("a/x.md", "12345").skill("b", "b").write("b/deep/er/f.md", "x");
    let d = SkillLimits::default();
    // Files in one skill: `a` has 2, `b` has 2.
    Skills::load_with(t.path(), d.max_resources_per_skill(2)).unwrap();
    assert!(
        invalid(Skills::load_with(t.path(), d.max_resources_per_skill(1)))
            .contains("more than 1 files")
    );
    // Bytes of one skill.
    let a_bytes = std::fs::metadata(t.path().join("a/SKILL.md")).unwrap().len() + 5;
    Skills::load_with(t.path(), d.max_skill_bytes(a_bytes)).unwrap();
    assert!(
        invalid(Skills::load_with(t.path(), d.max_skill_bytes(a_bytes - 1)))
            .contains("larger than")
    );
    // Skills.
    Skills::load_with(t.path(), d.max_skills(2)).unwrap();
    assert!(invalid(Skills::load_with(t.path(), d.max_skills(1))).contains("more than 1 skills"));
    // Bytes over all skills.
    let b_bytes = std::fs::metadata(t.path().join("b/SKILL.md")).unwrap().len() + 1;
    Skills::load_with(t.path(), d.max_total_bytes(a_bytes + b_bytes)).unwrap();
    assert!(
        invalid(Skills::load_with(t.path(), d.max_total_bytes(a_bytes + b_bytes - 1)))
            .contains("more than")
    );
    // Directory levels: b/deep/er is 3 deep.
    Skills::load_with(t.path(), d.max_depth(3)).unwrap();
    assert!(invalid(Skills::load_with(t.path(), d.max_depth(2))).contains("deeper than 2"));
    // Entries walked: a, a/SKILL.md, a/x.md, b, b/SKILL.md, b/deep, b/deep/er, b/deep/er/f.md.
    Skills::load_with(t.path(), d.max_entries_walked(8)).unwrap();
    assert!(invalid(Skills::load_with(t.path(), d.max_entries_walked(7))).contains("more than 7"));
    // Front matter bytes: the block between the delimiters, its last newline excluded.
    let block = "name: a\ndescription: The a skill".len();
    Skills::load_with(t.path(), d.max_frontmatter_bytes(block)).unwrap();
    assert!(
        invalid(Skills::load_with(t.path(), d.max_frontmatter_bytes(block - 1))).contains("longer")
    );
}

#[cfg(unix)]
#[test]
fn symbolic_links_are_not_followed() {
    let outside = Temp::new();
    outside.write("secret.txt", "secret");
    let t = Temp::new();
    t.skill("a", "a");
    std::os::unix::fs::symlink(outside.path().join("secret.txt"), t.path().join("a/secret.txt"))
        .unwrap();
    std::os::unix::fs::symlink(outside.path(), t.path().join("a/dir")).unwrap();
    let skills = Skills::load(t.path()).unwrap();
    assert_eq!(skills.entries()[0].files().unwrap().len(), 1);
    assert_eq!(skills.file("skill://a/secret.txt"), None);
}
