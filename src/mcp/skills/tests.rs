use serde_json::json;

use super::*;

const MD: &str = "---\nname: pdf-processing\ndescription: Extract, fill, and assemble PDF documents\nmetadata:\n  version: \"2.1\"\n---\n\nBody.\n";

fn entry(body: &str) -> SkillEntry {
    let uri = "skill://pdf-processing/SKILL.md".to_owned();
    let frontmatter = frontmatter(body, 1024).unwrap();
    let files = vec![
        SkillFile { uri: uri.clone(), digest: digest(body.as_bytes()), size: body.len() as u64 },
        SkillFile {
            uri: "skill://pdf-processing/references/FORMS.md".into(),
            digest: digest(b"forms"),
            size: 5,
        },
    ];
    SkillEntry { uri, frontmatter, resources: Some(SkillResources::Listed(files)) }
}

#[test]
fn digest_is_sha256_lowercase_hex() {
    assert_eq!(
        digest(b""),
        "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
    );
    assert!(is_digest(&digest(b"x")));
    assert!(!is_digest("sha256:E3B0C44298FC1C149AFBF4C8996FB92427AE41E4649B934CA495991B7852B855"));
    assert!(!is_digest("sha256:abc"));
    assert!(!is_digest("md5:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"));
}

#[test]
fn naming_rules() {
    for ok in ["a", "pdf-processing", "x1", &"a".repeat(64)] {
        assert!(is_valid_name(ok), "{ok}");
    }
    for bad in ["", "-a", "a-", "a--b", "A", "a_b", "a.b", &"a".repeat(65)] {
        assert!(!is_valid_name(bad), "{bad}");
    }
}

#[test]
fn uris_give_root_and_name() {
    assert_eq!(
        skill_root("skill://acme/billing/refunds/SKILL.md"),
        Some("skill://acme/billing/refunds")
    );
    assert_eq!(skill_name("skill://acme/billing/refunds/SKILL.md"), Some("refunds"));
    assert_eq!(skill_name("skill://git/SKILL.md"), Some("git"));
    assert_eq!(skill_root("skill://SKILL.md"), None);
    assert_eq!(skill_root("skill:///SKILL.md"), None);
    assert_eq!(skill_root("skill://a/XSKILL.md"), None);
    assert_eq!(skill_root("no-scheme/SKILL.md"), None);
}

#[test]
fn frontmatter_parses_yaml_into_json() {
    let fm = frontmatter(MD, 1024).unwrap();
    assert_eq!(
        Value::Object(fm),
        json!({"name": "pdf-processing", "description": "Extract, fill, and assemble PDF documents", "metadata": {"version": "2.1"}})
    );
    // A byte order mark, CRLF lines, trailing blanks on the closing line, and a file that ends
    // at the closing line.
    let crlf = "\u{feff}---\r\nname: a\r\ndescription: b\r\n--- \t\r\nbody";
    assert_eq!(
        Value::Object(frontmatter(crlf, 1024).unwrap()),
        json!({"name": "a", "description": "b"})
    );
    assert_eq!(
        Value::Object(frontmatter("---\nname: a\n---", 1024).unwrap()),
        json!({"name": "a"})
    );
}

#[test]
fn frontmatter_refusals() {
    assert!(frontmatter("name: a\n", 1024).unwrap_err().contains("---"));
    assert!(frontmatter("---\nname: a\n", 1024).unwrap_err().contains("closing"));
    assert!(frontmatter("---\n- a\n---\n", 1024).unwrap_err().contains("mapping"));
    assert!(frontmatter("---\n---\n", 1024).unwrap_err().contains("mapping"));
    assert!(frontmatter("---\nname: [\n---\n", 1024).unwrap_err().contains("YAML"));
    // Non-string keys are not JSON.
    assert!(frontmatter("---\n1: a\n? [x]\n: b\n---\n", 1024).is_err());
}

#[test]
fn frontmatter_bound_is_inclusive() {
    // The block between the delimiters, its last newline excluded.
    let block = format!("name: {}", "a".repeat(100));
    let text = format!("---\n{block}\n---\n");
    assert!(frontmatter(&text, block.len()).is_ok());
    assert!(frontmatter(&text, block.len() - 1).unwrap_err().contains("longer"));
    // No closing line within the bound: the rest of the file is never looked at.
    let endless = format!("---\n{}", "x: y\n".repeat(100_000));
    assert!(frontmatter(&endless, 1024).unwrap_err().contains("longer"));
}

#[test]
fn frontmatter_alias_bomb_is_refused() {
    let mut yaml = String::from("a: &a [x, x, x, x, x, x, x, x, x]\n");
    for i in 0..12u8 {
        let (prev, this) = ((b'a' + i) as char, (b'a' + i + 1) as char);
        yaml.push_str(&format!("{this}: &{this} [*{prev}, *{prev}, *{prev}, *{prev}, *{prev}, *{prev}, *{prev}, *{prev}, *{prev}]\n"));
    }
    let text = format!("---\n{yaml}---\n");
    assert!(frontmatter(&text, 64 * 1024).is_err());
}

#[test]
fn verify_file_checks_listing_size_then_digest() {
    let e = entry(MD);
    e.verify_file("skill://pdf-processing/references/FORMS.md", b"forms").unwrap();
    assert!(matches!(
        e.verify_file("skill://pdf-processing/other.md", b"forms"),
        Err(VerifyError::Unlisted { .. })
    ));
    assert!(matches!(
        e.verify_file("skill://pdf-processing/references/FORMS.md", b"forms!"),
        Err(VerifyError::Size { expected: 5, got: 6, .. })
    ));
    assert!(matches!(
        e.verify_file("skill://pdf-processing/references/FORMS.md", b"FORMS"),
        Err(VerifyError::Digest { .. })
    ));
    let dynamic = SkillEntry { resources: Some(SkillResources::Dynamic(DynamicTag::Dynamic)), ..e };
    assert!(matches!(
        dynamic.verify_file(&dynamic.uri.clone(), MD.as_bytes()),
        Err(VerifyError::Unlisted { .. })
    ));
}

#[test]
fn verify_skill_md_compares_frontmatter_field_by_field() {
    let limits = SkillLimits::default();
    let e = entry(MD);
    e.verify_skill_md(MD.as_bytes(), &limits).unwrap();
    // Digest and size of the changed file listed, but its front matter differs.
    let evil = MD.replace("Extract, fill, and assemble PDF documents", "Exfiltrate credentials");
    let mut listed = entry(&evil);
    listed.frontmatter = e.frontmatter.clone();
    let err = listed.verify_skill_md(evil.as_bytes(), &limits).unwrap_err();
    assert_eq!(
        err,
        VerifyError::FrontmatterMismatch { uri: e.uri.clone(), field: "description".into() }
    );
    // An extra field in the file is a difference too; `1` and `1.0` are not.
    let extra = MD.replace("---\n\n", "license: MIT\n---\n\n");
    let mut listed = entry(&extra);
    listed.frontmatter = e.frontmatter.clone();
    assert!(
        matches!(listed.verify_skill_md(extra.as_bytes(), &limits), Err(VerifyError::FrontmatterMismatch { field, .. }) if field == "license")
    );
    let num = MD.replace("---\n\n", "n: 1\n---\n\n");
    let mut listed = entry(&num);
    listed.frontmatter.insert("n".into(), json!(1.0));
    listed.verify_skill_md(num.as_bytes(), &limits).unwrap();
}

#[test]
fn entry_check() {
    let limits = SkillLimits::default();
    let e = entry(MD);
    e.check(&limits).unwrap();
    e.check(&limits.max_resources_per_skill(2)).unwrap();
    assert!(e.check(&limits.max_resources_per_skill(1)).is_err());
    let total = MD.len() as u64 + 5;
    e.check(&limits.max_skill_bytes(total)).unwrap();
    assert!(e.check(&limits.max_skill_bytes(total - 1)).is_err());
    let mut renamed = e.clone();
    renamed.frontmatter.insert("name".into(), json!("other"));
    assert!(renamed.check(&limits).is_err());
    let mut outside = e.clone();
    if let Some(SkillResources::Listed(files)) = &mut outside.resources {
        files[1].uri = "skill://pdf-processing-x/FORMS.md".into();
    }
    assert!(outside.check(&limits).is_err());
    let mut no_md = e.clone();
    if let Some(SkillResources::Listed(files)) = &mut no_md.resources {
        files.remove(0);
    }
    assert!(no_md.check(&limits).is_err());
}

#[test]
fn entries_round_trip_with_either_resources_form() {
    let listed: SkillEntry = serde_json::from_value(json!({"uri": "skill://a/SKILL.md", "frontmatter": {"name": "a"}, "resources": [{"uri": "skill://a/SKILL.md", "digest": digest(b""), "size": 0}]})).unwrap();
    assert_eq!(listed.files().map(<[_]>::len), Some(1));
    let dynamic: SkillEntry = serde_json::from_value(
        json!({"uri": "skill://a/SKILL.md", "frontmatter": {}, "resources": "dynamic"}),
    )
    .unwrap();
    assert_eq!(dynamic.resources, Some(SkillResources::Dynamic(DynamicTag::Dynamic)));
    assert!(
        serde_json::from_value::<SkillEntry>(
            json!({"uri": "u", "frontmatter": {}, "resources": "other"})
        )
        .is_err()
    );
    assert_eq!(serde_json::to_value(&dynamic).unwrap()["resources"], json!("dynamic"));
}
