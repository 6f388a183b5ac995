//! Every relative link of the documentation resolves: each `[text](path)` (and `![alt](path)`,
//! and each reference definition `[name]: path`) in README.md, PERF.md, CHANGELOG.md,
//! fuzz/README.md and every `docs/**/*.md` names a file or a folder of the repository. A link's
//! `#anchor` is not checked, only the file before it; web links (`http://`, `https://`,
//! `mailto:`) and links to an anchor of the same page (`#…`) are skipped. Text in code (fenced
//! blocks, `inline spans`) is not a link and is not read.
//!
//! Files move (a module split, a guide renamed) and the prose that points at them does not
//! follow by itself: this is what tells.

use std::fs;
use std::path::{Path, PathBuf};

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The documentation's markdown files, as paths from the repository's root.
fn documents() -> Vec<PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        for entry in fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(&path, out);
            } else if path.extension().is_some_and(|x| x == "md") {
                out.push(path);
            }
        }
    }
    let root = repo();
    let mut out: Vec<PathBuf> = ["README.md", "PERF.md", "CHANGELOG.md", "fuzz/README.md"]
        .iter()
        .map(|name| root.join(name))
        .collect();
    walk(&root.join("docs"), &mut out);
    out.sort();
    out
}

/// The link targets of one markdown text, each with its line number, outside code.
fn links(text: &str) -> Vec<(usize, String)> {
    let prose = without_code_spans(&without_fences(text));
    let mut out = Vec::new();
    for (i, line) in prose.lines().enumerate() {
        if let Some(target) = reference_definition(line) {
            out.push((i + 1, target));
            continue;
        }
        let mut rest = line;
        while let Some(at) = rest.find("](") {
            let after = &rest[at + 2..];
            let (target, used) = inline_target(after);
            if let Some(target) = target {
                out.push((i + 1, target));
            }
            rest = &after[used..];
        }
    }
    out
}

/// `text` with each fenced code block's lines (from a line opening with ``` or ~~~ to the next
/// line opening with the same marker) left empty, so line numbers stay.
fn without_fences(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut fence: Option<&str> = None;
    for line in text.lines() {
        let trimmed = line.trim_start();
        let marker = ["```", "~~~"].into_iter().find(|m| trimmed.starts_with(m));
        match (fence, marker) {
            (None, Some(m)) => fence = Some(m),
            (Some(open), Some(m)) if open == m => fence = None,
            (None, None) => out.push_str(line),
            _ => {}
        }
        out.push('\n');
    }
    out
}

/// `text` with each code span (a run of backticks to the next run as long, within one
/// paragraph, as CommonMark reads it) blanked, its line breaks kept so line numbers stay.
fn without_code_spans(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find('`') {
        out.push_str(&rest[..start]);
        let ticks = rest[start..].bytes().take_while(|&b| b == b'`').count();
        let open = &rest[start..start + ticks];
        let after = &rest[start + ticks..];
        let paragraph = after.find("\n\n").unwrap_or(after.len());
        match closing_run(&after[..paragraph], ticks) {
            Some(end) => {
                out.extend(after[..end].chars().filter(|&c| c == '\n'));
                rest = &after[end + ticks..];
            }
            // An unclosed run of backticks is literal text.
            None => {
                out.push_str(open);
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

/// Where in `text` a run of exactly `ticks` backticks begins.
fn closing_run(text: &str, ticks: usize) -> Option<usize> {
    let bytes = text.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'`' {
            let run = bytes[i..].iter().take_while(|&&b| b == b'`').count();
            if run == ticks {
                return Some(i);
            }
            i += run;
        } else {
            i += 1;
        }
    }
    None
}

/// The target of `[name]: target` when `line` is a reference definition.
fn reference_definition(line: &str) -> Option<String> {
    let line = line.trim_start();
    let label_end = line.strip_prefix('[')?.find("]:")?;
    let target = line[1 + label_end + 2..].split_whitespace().next()?;
    Some(target.trim_start_matches('<').trim_end_matches('>').to_owned())
}

/// The target of an inline link whose `(` has just been read, and how many bytes of `after` it
/// took: up to the `)` that balances it, without a title (`path "title"`) or angle brackets.
fn inline_target(after: &str) -> (Option<String>, usize) {
    let mut depth = 0usize;
    for (i, c) in after.char_indices() {
        match c {
            '(' => depth += 1,
            ')' if depth == 0 => {
                let inner = after[..i].trim();
                let target = inner.split_whitespace().next().unwrap_or("");
                let target = target.trim_start_matches('<').trim_end_matches('>');
                return ((!target.is_empty()).then(|| target.to_owned()), i + 1);
            }
            ')' => depth -= 1,
            _ => {}
        }
    }
    // No closing parenthesis on the line: not a link.
    (None, after.len())
}

/// The repository path a link target names, or `None` when it names no file (a web address, an
/// anchor of the same page).
fn local_path(target: &str) -> Option<&str> {
    let skipped = ["http://", "https://", "mailto:", "#"];
    if skipped.iter().any(|prefix| target.starts_with(prefix)) {
        return None;
    }
    let end = target.find(['#', '?']).unwrap_or(target.len());
    Some(&target[..end])
}

/// `%XX` escapes decoded, as a browser does before asking for the file.
fn percent_decoded(path: &str) -> String {
    let bytes = path.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = bytes.get(i + 1..i + 3).and_then(|h| std::str::from_utf8(h).ok());
        match (bytes[i], hex.and_then(|h| u8::from_str_radix(h, 16).ok())) {
            (b'%', Some(byte)) => {
                out.push(byte);
                i += 3;
            }
            (byte, _) => {
                out.push(byte);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[test]
fn every_relative_doc_link_names_a_file_or_folder_of_the_repository() {
    let root = repo();
    let mut checked = 0;
    let mut broken = Vec::new();
    for doc in documents() {
        let text = fs::read_to_string(&doc).unwrap();
        let dir = doc.parent().unwrap();
        for (line, target) in links(&text) {
            let Some(path) = local_path(&target) else {
                continue;
            };
            let path = percent_decoded(path);
            let resolved = match path.strip_prefix('/') {
                Some(from_root) => root.join(from_root),
                None => dir.join(&path),
            };
            checked += 1;
            if !resolved.exists() {
                let shown = doc.strip_prefix(&root).unwrap_or(&doc).display().to_string();
                broken.push(format!("{shown}:{line}: ({target}) names nothing"));
            }
        }
    }
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
    // The guides link to one another a few hundred times; far fewer means the reader lost them.
    assert!(checked > 100, "only {checked} relative links found");
}

#[test]
fn links_are_read_from_prose_only() {
    let text = "\
See [a](a.md), [b](dir/b.md#part \"title\") and ![c](<img/c.png>).
A span `[not](x.md)` and ``[nor](y.md)`` is code, and so is `one across
a line break [no](z.md)`; (plain parentheses) are not links.
[ref]: ref/path.md
```md
[in a fence](fence.md)
```
[after](after.md) [web](https://example.com/x.md) [here](#anchor) [nested](f(1).md)";
    let found: Vec<String> = links(text).into_iter().map(|(_, t)| t).collect();
    assert_eq!(
        found,
        [
            "a.md",
            "dir/b.md#part",
            "img/c.png",
            "ref/path.md",
            "after.md",
            "https://example.com/x.md",
            "#anchor",
            "f(1).md"
        ]
    );
    let local: Vec<&str> = found.iter().filter_map(|t| local_path(t)).collect();
    assert_eq!(local, ["a.md", "dir/b.md", "img/c.png", "ref/path.md", "after.md", "f(1).md"]);
    assert_eq!(percent_decoded("a%20b%2.md"), "a b%2.md");
}
