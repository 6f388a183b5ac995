//! The code map holds: every `crate::…`, `super::…` and `self::…` path in the library's code
//! (tests aside) names a module its room may import, as the crate documentation's code map
//! says, and names it by its module (never through lib.rs's re-exports, which are for the
//! crate's users); the map lists each floor above what it imports; and no file depends on
//! itself through other files.
//!
//! The map is read from its one place, the "Code map" table of `src/lib.rs`: each row names
//! its rooms (modules, by path) and the rooms they may import; a room may import what those
//! may, in turn, and the other rooms of its row. A module belongs to the room with the longest path that is a prefix of its own.
//! Paths are resolved to the file that defines what they name, through `pub use` re-exports, so
//! an import of `crate::peer::PeerHandle` is an edge to `peer/handle.rs`, not to `peer/mod.rs`.
//! A parent's `mod child;` is not an import, and a folder's `mod.rs` may use and re-export the
//! files below it (it is the folder's front door); every other edge counts for cycles, a
//! child's `use super::…` included.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fs;
use std::path::{Path, PathBuf};

/// One source file: its module path and its code with comments, strings and test modules cut.
struct File {
    module: Vec<String>,
    code: String,
}

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// Every `.rs` file of the library, with its module path.
fn files() -> BTreeMap<PathBuf, File> {
    files_in(&root())
}

/// Every `.rs` file under the crate source folder `root`, with its module path.
fn files_in(root: &Path) -> BTreeMap<PathBuf, File> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        for e in fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                walk(&p, out);
            } else if p.extension().is_some_and(|x| x == "rs") {
                out.push(p);
            }
        }
    }
    let mut paths = Vec::new();
    walk(root, &mut paths);
    let mut out = BTreeMap::new();
    for p in paths {
        let rel = p.strip_prefix(root).unwrap();
        let mut module: Vec<String> =
            rel.components().map(|c| c.as_os_str().to_string_lossy().into_owned()).collect();
        let last = module.pop().unwrap();
        match last.as_str() {
            "lib.rs" | "main.rs" | "mod.rs" => {}
            name => module.push(name.trim_end_matches(".rs").to_owned()),
        }
        // Unit tests may reach anything; they are not part of the map.
        if module.last().is_some_and(|m| m == "tests") {
            continue;
        }
        let text = fs::read_to_string(&p).unwrap();
        out.insert(rel.to_owned(), File { module, code: cut_tests(&strip(&text)) });
    }
    out
}

/// `code` (comments and strings already blanked) without its inline `#[cfg(test)]` modules.
fn cut_tests(code: &str) -> String {
    let mut out = String::with_capacity(code.len());
    let mut rest = code;
    while let Some(at) = rest.find("#[cfg(test)]") {
        let after = rest[at + "#[cfg(test)]".len()..].trim_start();
        let Some(body) = after.strip_prefix("mod ").and_then(|m| {
            let open = m.find(['{', ';'])?;
            (m.as_bytes()[open] == b'{').then(|| &m[open..])
        }) else {
            out.push_str(&rest[..at + 1]);
            rest = &rest[at + 1..];
            continue;
        };
        out.push_str(&rest[..at]);
        let mut depth = 0usize;
        let mut end = body.len();
        for (i, c) in body.char_indices() {
            match c {
                '{' => depth += 1,
                '}' => {
                    depth -= 1;
                    if depth == 0 {
                        end = i + 1;
                        break;
                    }
                }
                _ => {}
            }
        }
        // Keep the line count: a reader of the output may want to find a line.
        out.extend(body[..end].chars().filter(|c| *c == '\n'));
        rest = &body[end..];
    }
    out.push_str(rest);
    out
}

/// `text` with comments, string and char literals blanked (newlines kept), so only code is read.
fn strip(text: &str) -> String {
    let b = text.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'/' if b.get(i + 1) == Some(&b'/') => {
                while i < b.len() && b[i] != b'\n' {
                    i += 1;
                }
            }
            b'/' if b.get(i + 1) == Some(&b'*') => {
                let mut depth = 0;
                while i < b.len() {
                    if b[i] == b'/' && b.get(i + 1) == Some(&b'*') {
                        depth += 1;
                        i += 2;
                    } else if b[i] == b'*' && b.get(i + 1) == Some(&b'/') {
                        depth -= 1;
                        i += 2;
                        if depth == 0 {
                            break;
                        }
                    } else {
                        if b[i] == b'\n' {
                            out.push(b'\n');
                        }
                        i += 1;
                    }
                }
            }
            b'r' if matches!(b.get(i + 1), Some(b'"' | b'#'))
                && !b
                    .get(i.wrapping_sub(1))
                    .is_some_and(|c| c.is_ascii_alphanumeric() || *c == b'_') =>
            {
                let mut j = i + 1;
                let mut hashes = 0;
                while b.get(j) == Some(&b'#') {
                    hashes += 1;
                    j += 1;
                }
                if b.get(j) != Some(&b'"') {
                    out.push(b[i]);
                    i += 1;
                    continue;
                }
                j += 1;
                let close: Vec<u8> =
                    std::iter::once(b'"').chain((0..hashes).map(|_| b'#')).collect();
                while j < b.len() && !b[j..].starts_with(&close) {
                    if b[j] == b'\n' {
                        out.push(b'\n');
                    }
                    j += 1;
                }
                out.extend_from_slice(b"\"\"");
                i = j + close.len();
            }
            b'"' => {
                i += 1;
                while i < b.len() && b[i] != b'"' {
                    if b[i] == b'\\' {
                        i += 1;
                    }
                    if b.get(i) == Some(&b'\n') {
                        out.push(b'\n');
                    }
                    i += 1;
                }
                out.extend_from_slice(b"\"\"");
                i += 1;
            }
            b'\'' => {
                // A char literal ('x', '\n', '\u{..}'), not a lifetime ('a).
                let lit = if b.get(i + 1) == Some(&b'\\') {
                    b[i + 2..].iter().position(|&c| c == b'\'').map(|p| i + 2 + p)
                } else if b.get(i + 2) == Some(&b'\'') {
                    Some(i + 2)
                } else {
                    None
                };
                match lit {
                    Some(end) => {
                        out.extend_from_slice(b"' '");
                        i = end + 1;
                    }
                    None => {
                        out.push(b'\'');
                        i += 1;
                    }
                }
            }
            c => {
                out.push(c);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Every path the code names from `crate`, `super` or `self`, made absolute (without `crate`).
/// `use` trees are expanded: `use crate::a::{b, c::d}` names `a::b` and `a::c::d`. A path that
/// starts with the name of one of `children`, the file's child modules (`use child::Item`,
/// `child::f()`), is relative to the file's module, as `self::child::…`.
fn paths(file: &File, children: &[String]) -> Vec<Vec<String>> {
    let code = &file.code;
    let mut out = Vec::new();
    let bytes = code.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        let boundary = !bytes
            .get(i.wrapping_sub(1))
            .is_some_and(|c| c.is_ascii_alphanumeric() || *c == b'_' || *c == b':');
        let anchored = ["crate::", "super::", "self::"].iter().any(|p| code[i..].starts_with(p));
        let child = children
            .iter()
            .any(|c| code[i..].starts_with(c.as_str()) && code[i + c.len()..].starts_with("::"));
        if !boundary || !(anchored || child) {
            i += 1;
            continue;
        }
        let (mut tree, end) = read_tree(code, i);
        if !anchored {
            tree = format!("self::{tree}");
        }
        for p in expand(&tree) {
            if let Some(abs) = absolute(&file.module, &p) {
                out.push(abs);
            }
        }
        i = end.max(i + 1);
    }
    out
}

/// The names of the child modules of `module` that have a file.
fn children(module: &[String], files: &BTreeMap<PathBuf, File>) -> Vec<String> {
    files
        .values()
        .filter(|f| f.module.len() == module.len() + 1 && f.module.starts_with(module))
        .map(|f| f.module.last().unwrap().clone())
        .collect()
}

/// The path (or `use` tree) that starts at `at`, and where it ends.
fn read_tree(code: &str, at: usize) -> (String, usize) {
    let b = code.as_bytes();
    let mut depth = 0;
    let mut j = at;
    while j < b.len() {
        let c = b[j];
        match c {
            b'{' => depth += 1,
            b'}' if depth > 0 => depth -= 1,
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'_' | b':' | b'*' => {}
            b',' | b' ' | b'\n' | b'\t' | b'\r' if depth > 0 => {}
            _ => break,
        }
        if depth == 0 && c == b'}' {
            break;
        }
        j += 1;
    }
    // `crate::a::b as c` inside a tree is read as far as `b`: the rest is not a path.
    (code[at..j].replace(char::is_whitespace, " "), j)
}

/// The paths of a `use` tree (`a::{b, c::{d, e}}`), each as its segments.
fn expand(tree: &str) -> Vec<Vec<String>> {
    fn split_top(s: &str) -> Vec<&str> {
        let mut parts = Vec::new();
        let (mut depth, mut start) = (0, 0);
        for (i, c) in s.char_indices() {
            match c {
                '{' => depth += 1,
                '}' => depth -= 1,
                ',' if depth == 0 => {
                    parts.push(&s[start..i]);
                    start = i + 1;
                }
                _ => {}
            }
        }
        parts.push(&s[start..]);
        parts
    }
    let tree = tree.trim();
    match tree.find('{') {
        None => {
            let first = tree.split_whitespace().next().unwrap_or("");
            vec![first.split("::").filter(|s| !s.is_empty()).map(str::to_owned).collect()]
        }
        Some(open) => {
            let prefix: Vec<String> =
                tree[..open].split("::").filter(|s| !s.is_empty()).map(str::to_owned).collect();
            let inner = tree[open + 1..].trim_end().trim_end_matches('}');
            let mut out = Vec::new();
            for part in split_top(inner) {
                let part = part.trim();
                if part.is_empty() {
                    continue;
                }
                for rest in expand(part) {
                    let mut p = prefix.clone();
                    if rest.first().is_some_and(|s| s == "self") {
                        p.extend(rest.into_iter().skip(1));
                    } else {
                        p.extend(rest);
                    }
                    out.push(p);
                }
            }
            out
        }
    }
}

/// `path` (starting with `crate`, `super` or `self`) as a path from the crate root.
fn absolute(module: &[String], path: &[String]) -> Option<Vec<String>> {
    let mut base: Vec<String> = module.to_vec();
    let mut rest = path;
    match rest.first()?.as_str() {
        "crate" => {
            base.clear();
            rest = &rest[1..];
        }
        "self" => rest = &rest[1..],
        "super" => {
            while rest.first().is_some_and(|s| s == "super") {
                base.pop()?;
                rest = &rest[1..];
            }
        }
        _ => return None,
    }
    base.extend(rest.iter().filter(|s| *s != "*").cloned());
    Some(base)
}

/// The module paths that have a file of their own.
fn modules(files: &BTreeMap<PathBuf, File>) -> HashMap<Vec<String>, PathBuf> {
    files.iter().map(|(p, f)| (f.module.clone(), p.clone())).collect()
}

/// The `pub use` / `pub(crate) use` items of a file: the name each re-export is known by, and
/// the absolute path it stands for (`None` for a glob's source module, keyed by `*`).
fn reexports(file: &File) -> Vec<(String, Vec<String>)> {
    let mut out = Vec::new();
    for stmt in file.code.split(';') {
        let s = stmt.trim();
        let Some(after) = ["pub use ", "pub(crate) use ", "pub(super) use "]
            .iter()
            .find_map(|p| s.rfind(p).map(|at| &s[at + p.len()..]))
        else {
            continue;
        };
        let mut tree = after.trim().to_owned();
        if !["crate::", "super::", "self::"].iter().any(|p| tree.starts_with(p)) {
            tree = format!("self::{tree}");
        }
        let glob = tree.ends_with("::*");
        for p in expand(&tree) {
            let Some(abs) = absolute(&file.module, &p) else { continue };
            let name = if glob { "*".to_owned() } else { abs.last().cloned().unwrap_or_default() };
            out.push((name, abs));
        }
    }
    out
}

/// The file that defines what `path` names: the deepest module of it with a file, and from
/// there through the re-exports that name the item.
fn resolve(
    path: &[String],
    mods: &HashMap<Vec<String>, PathBuf>,
    files: &BTreeMap<PathBuf, File>,
    depth: usize,
) -> Option<PathBuf> {
    let mut n = path.len();
    while n > 0 && !mods.contains_key(&path[..n]) {
        n -= 1;
    }
    let file = mods.get(&path[..n])?;
    let Some(item) = path.get(n) else { return Some(file.clone()) };
    if depth < 8 {
        let exports = reexports(&files[file]);
        if let Some((_, to)) = exports.iter().find(|(name, _)| name == item) {
            let mut to = to.clone();
            to.extend(path[n + 1..].iter().cloned());
            if let Some(f) = resolve(&to, mods, files, depth + 1) {
                return Some(f);
            }
        }
        for (_, from) in exports.iter().filter(|(name, _)| name == "*") {
            let mut to = from.clone();
            to.extend(path[n..].iter().cloned());
            if let Some(f) = resolve(&to, mods, files, depth + 1)
                && f != *file
            {
                return Some(f);
            }
        }
    }
    Some(file.clone())
}

/// A module path, as its segments.
type ModPath = Vec<String>;

/// One row of the map: its rooms, and the rooms they may import directly.
type Row = (Vec<ModPath>, Vec<ModPath>);

/// The map's rows.
fn map() -> Vec<Row> {
    let lib = fs::read_to_string(root().join("lib.rs")).unwrap();
    let start = lib.find("//! # Code map").expect("src/lib.rs has a `# Code map` section");
    let ticked = |cell: &str| -> Vec<Vec<String>> {
        cell.split('`')
            .skip(1)
            .step_by(2)
            .map(|m| m.split("::").map(str::to_owned).collect())
            .collect()
    };
    let mut rows = Vec::new();
    for line in lib[start..].lines().take_while(|l| l.starts_with("//!")) {
        let cells: Vec<&str> = line.trim_start_matches("//!").split('|').collect();
        if cells.len() < 5 || cells[1].contains("---") || cells[1].trim() == "room" {
            continue;
        }
        rows.push((ticked(cells[1]), ticked(cells[3])));
    }
    assert!(rows.len() >= 10, "the code map has {} rows", rows.len());
    rows
}

/// The room of `module`: the row whose room path is the longest prefix of it.
fn room_of(module: &[String], rooms: &[Vec<String>]) -> Option<Vec<String>> {
    rooms.iter().filter(|r| module.starts_with(r)).max_by_key(|r| r.len()).cloned()
}

/// What each room may import: its own rows and, in turn, theirs.
fn allowed(rows: &[Row]) -> HashMap<Vec<String>, BTreeSet<Vec<String>>> {
    let direct: HashMap<Vec<String>, Vec<Vec<String>>> = rows
        .iter()
        .flat_map(|(rooms, imports)| rooms.iter().map(move |r| (r.clone(), imports.clone())))
        .collect();
    let mut out = HashMap::new();
    for room in direct.keys() {
        let mut seen = BTreeSet::new();
        let mut stack = direct[room].clone();
        while let Some(r) = stack.pop() {
            if seen.insert(r.clone()) {
                stack.extend(direct.get(&r).cloned().unwrap_or_default());
            }
        }
        out.insert(room.clone(), seen);
    }
    out
}

/// Every import against the map, as `file: path (room -> room)`.
fn violations(files: &BTreeMap<PathBuf, File>) -> Vec<String> {
    let rows = map();
    let rooms: Vec<Vec<String>> = rows.iter().flat_map(|(r, _)| r.clone()).collect();
    let allowed = allowed(&rows);
    let mut out = Vec::new();
    for (path, file) in files {
        if file.module.is_empty() {
            continue; // lib.rs: the crate's front door re-exports from every room.
        }
        let Some(from) = room_of(&file.module, &rooms) else {
            out.push(format!(
                "{}: module {} is in no room of the map",
                path.display(),
                file.module.join("::")
            ));
            continue;
        };
        for p in paths(file, &children(&file.module, files)) {
            // lib.rs re-exports for the crate's users: inside, a path names the module that
            // defines the item, so that the map sees the arrow (`crate::Frame` would hide that
            // `message` is imported).
            if let Some(defined) = through_lib(&p, files) {
                out.push(format!(
                    "{}: {} reaches {} through lib.rs: name its module",
                    path.display(),
                    p.join("::"),
                    defined.join("::")
                ));
                continue;
            }
            let Some(to) = room_of(&p, &rooms) else { continue };
            let same_row = rows.iter().any(|(r, _)| r.contains(&from) && r.contains(&to));
            if to != from && !same_row && !to.starts_with(&from) && !allowed[&from].contains(&to) {
                out.push(format!(
                    "{}: {} ({} -> {})",
                    path.display(),
                    p.join("::"),
                    from.join("::"),
                    to.join("::")
                ));
            }
        }
    }
    out.sort();
    out.dedup();
    out
}

/// Where a path that names a crate-root item (`crate::Frame`) leads through lib.rs's `pub use`
/// (`message::Frame`); `None` for any other path.
fn through_lib(p: &[String], files: &BTreeMap<PathBuf, File>) -> Option<Vec<String>> {
    let lib = files.get(Path::new("lib.rs"))?;
    let name = p.first()?;
    reexports(lib).into_iter().find(|(n, _)| n == name).map(|(_, to)| to)
}

/// The file graph: an edge from each file to each file whose items it names.
fn graph(files: &BTreeMap<PathBuf, File>) -> BTreeMap<PathBuf, BTreeSet<PathBuf>> {
    let mods = modules(files);
    let mut g = BTreeMap::new();
    for (path, file) in files {
        let mut to = BTreeSet::new();
        let front_door = path.ends_with("mod.rs") || file.module.is_empty();
        for p in paths(file, &children(&file.module, files)) {
            let Some(f) = resolve(&p, &mods, files, 0) else { continue };
            // A folder's front door (its mod.rs) composes the files below it: its edges down
            // into its own folder are how a module is built, not a dependency between peers.
            let inside = front_door && files[&f].module.starts_with(&file.module);
            if f != *path && !inside {
                to.insert(f);
            }
        }
        g.insert(path.clone(), to);
    }
    g
}

/// The cycles of the graph, one per strongly connected component of more than one file.
fn cycles(g: &BTreeMap<PathBuf, BTreeSet<PathBuf>>) -> Vec<Vec<PathBuf>> {
    // Tarjan's algorithm, iteratively over the sorted nodes.
    struct State<'a> {
        g: &'a BTreeMap<PathBuf, BTreeSet<PathBuf>>,
        index: HashMap<&'a PathBuf, usize>,
        low: HashMap<&'a PathBuf, usize>,
        on: BTreeSet<&'a PathBuf>,
        stack: Vec<&'a PathBuf>,
        next: usize,
        out: Vec<Vec<PathBuf>>,
    }
    fn visit<'a>(s: &mut State<'a>, v: &'a PathBuf) {
        s.index.insert(v, s.next);
        s.low.insert(v, s.next);
        s.next += 1;
        s.stack.push(v);
        s.on.insert(v);
        for w in &s.g[v] {
            if !s.index.contains_key(w) {
                visit(s, w);
                let lw = s.low[w];
                let lv = s.low.get_mut(v).unwrap();
                *lv = (*lv).min(lw);
            } else if s.on.contains(w) {
                let iw = s.index[w];
                let lv = s.low.get_mut(v).unwrap();
                *lv = (*lv).min(iw);
            }
        }
        if s.low[v] == s.index[v] {
            let mut comp = Vec::new();
            loop {
                let w = s.stack.pop().unwrap();
                s.on.remove(w);
                comp.push(w.clone());
                if w == v {
                    break;
                }
            }
            if comp.len() > 1 {
                comp.sort();
                s.out.push(comp);
            }
        }
    }
    let mut s = State {
        g,
        index: HashMap::new(),
        low: HashMap::new(),
        on: BTreeSet::new(),
        stack: Vec::new(),
        next: 0,
        out: Vec::new(),
    };
    for v in g.keys() {
        if !s.index.contains_key(v) {
            visit(&mut s, v);
        }
    }
    s.out
}

/// The map reads bottom up: each row imports only the rows above it (or its own), so its
/// order is the order of the floors.
fn rows_out_of_order(rows: &[Row]) -> Vec<String> {
    let mut out = Vec::new();
    for (at, (rooms, imports)) in rows.iter().enumerate() {
        for import in imports {
            let row = rows.iter().position(|(r, _)| r.contains(import));
            if row.is_none_or(|row| row > at) {
                out.push(format!(
                    "{} imports {}, which is not on a row above it",
                    rooms.iter().map(|r| r.join("::")).collect::<Vec<_>>().join(", "),
                    import.join("::")
                ));
            }
        }
    }
    out
}

#[test]
fn the_map_lists_each_floor_above_what_it_imports() {
    let v = rows_out_of_order(&map());
    assert!(v.is_empty(), "the code map of src/lib.rs is out of order:\n{}", v.join("\n"));
}

/// `transport` (stdio, sockets, in-process pairs) is below `http`, which rides on the peer it
/// carries: the one case that names HTTP, [`Target`](mcpwire::transport::Target), is a room of
/// its own above both.
#[test]
fn transport_sits_below_http() {
    let rows = map();
    let (transport, http) = (vec!["transport".to_owned()], vec!["http".to_owned()]);
    let row = |room: &Vec<String>| rows.iter().position(|(r, _)| r.contains(room)).unwrap();
    assert!(
        row(&transport) < row(&http),
        "the map's row of `transport` comes after `http`'s: it must be a floor below"
    );
    assert!(!allowed(&rows)[&transport].contains(&http), "the map lets `transport` import `http`");
}

#[test]
fn every_import_follows_the_code_map() {
    let v = violations(&files());
    assert!(v.is_empty(), "imports against the code map of src/lib.rs:\n{}", v.join("\n"));
}

/// Each cycle's edges, one `a -> b` a line, for a failure a reader can act on.
fn shown(g: &BTreeMap<PathBuf, BTreeSet<PathBuf>>, c: &[Vec<PathBuf>]) -> String {
    c.iter()
        .map(|comp| {
            let edges: Vec<String> = comp
                .iter()
                .flat_map(|a| {
                    g[a].iter()
                        .filter(|b| comp.contains(b))
                        .map(move |b| format!("  {} -> {}", a.display(), b.display()))
                })
                .collect();
            edges.join("\n")
        })
        .collect::<Vec<_>>()
        .join("\n\n")
}

#[test]
fn no_file_depends_on_itself_through_others() {
    let g = graph(&files());
    let c = cycles(&g);
    assert!(c.is_empty(), "file cycles:\n{}", shown(&g, &c));
}

#[test]
fn no_file_of_the_tool_depends_on_itself_through_others() {
    let tool = Path::new(env!("CARGO_MANIFEST_DIR")).join("cli/src");
    let g = graph(&files_in(&tool));
    assert!(g.len() > 10, "cli/src/ has {} files", g.len());
    let c = cycles(&g);
    assert!(c.is_empty(), "file cycles in cli/src/:\n{}", shown(&g, &c));
}

/// A file names what it takes from its parent: `use super::*` joins a file to its parent's
/// every item (the mark of one type's `impl` cut into closets), so it is allowed in unit tests
/// alone.
#[test]
fn no_glob_import_of_the_parent_outside_tests() {
    let mut glob = Vec::new();
    for dir in ["src", "cli/src", "alloc/src"] {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join(dir);
        for (path, file) in files_in(&root) {
            let glob_line = |l: &str| {
                let l: String = l.split_whitespace().collect();
                l.ends_with("usesuper::*;") && (l.starts_with("use") || l.starts_with("pub"))
            };
            if file.code.lines().any(glob_line) {
                glob.push(format!("{dir}/{}", path.display()));
            }
        }
    }
    assert!(glob.is_empty(), "`use super::*` outside unit tests: {glob:?}");
}

/// One layout for unit tests: a module's sit in `tests.rs` beside it (`foo.rs` and
/// `foo/tests.rs`), never inline.
#[test]
fn unit_tests_sit_beside_their_module() {
    let mut inline = Vec::new();
    for dir in ["src", "cli/src", "alloc/src"] {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join(dir);
        for (path, file) in files_in(&root) {
            let _ = file;
            let text = fs::read_to_string(root.join(&path)).unwrap();
            if strip(&text).lines().any(|l| {
                let l = l.trim_start();
                l.starts_with("mod ") && l.ends_with('{') && l.contains("tests")
            }) {
                inline.push(format!("{dir}/{}", path.display()));
            }
        }
    }
    assert!(inline.is_empty(), "inline test modules: {inline:?}");
}

/// The checks themselves: a back edge and a cycle, written into a copy of real files, are found.
#[test]
fn a_back_edge_and_a_cycle_are_caught() {
    let mut files = files();
    let ours = PathBuf::from("message/owned.rs");
    assert!(files.contains_key(&ours), "message/owned.rs moved: pick another file for this test");
    // message may not import peer.
    files.get_mut(&ours).unwrap().code.push_str("\nuse crate::peer::PeerHandle;\n");
    let v = violations(&files);
    assert!(
        v.iter().any(|l| l.contains("message/owned.rs: peer::PeerHandle (message -> peer)")),
        "{v:?}"
    );
    // owned.rs -> encode.rs exists or not; encode.rs -> owned.rs and owned.rs -> encode.rs is a
    // cycle either way.
    let encode = PathBuf::from("message/encode.rs");
    files.get_mut(&ours).unwrap().code.push_str("\nuse super::encode::Outgoing;\n");
    files.get_mut(&encode).unwrap().code.push_str("\nuse super::owned::OwnedId;\n");
    let c = cycles(&graph(&files));
    assert!(c.iter().any(|comp| comp.contains(&ours) && comp.contains(&encode)), "{c:?}");
}

/// A sibling reached through lib.rs's re-exports is caught, and named by its module.
#[test]
fn a_path_through_lib_is_caught() {
    let mut files = files();
    let ours = PathBuf::from("framing/mod.rs");
    assert!(files.contains_key(&ours), "framing/mod.rs moved: pick another file for this test");
    files.get_mut(&ours).unwrap().code.push_str("\nuse crate::{Limits, message::Frame};\n");
    let v = violations(&files);
    assert!(
        v.iter().any(|l| l
            == "framing/mod.rs: Limits reaches limits::Limits through lib.rs: name its module"),
        "{v:?}"
    );
    assert!(!v.iter().any(|l| l.contains("message::Frame")), "{v:?}");
}

/// A row that imports a row below it is caught.
#[test]
fn a_map_out_of_order_is_caught() {
    let room = |r: &str| r.split("::").map(str::to_owned).collect::<Vec<_>>();
    let rows: Vec<Row> = vec![
        (vec![room("peer")], vec![]),
        (vec![room("transport")], vec![room("peer"), room("http")]),
        (vec![room("http")], vec![room("peer")]),
    ];
    let v = rows_out_of_order(&rows);
    assert_eq!(v, ["transport imports http, which is not on a row above it"]);
}

#[test]
fn paths_are_read_from_code_only() {
    let file = File {
        module: vec!["a".into(), "b".into()],
        code: strip(
            "// crate::x::Y\n/* crate::z */ let s = \"crate::q\"; let r = r#\"super::w\"#;\n\
             use crate::m::{n, o::{p, q as r}, self};\nfn f() { super::g::h(); let c = '\"'; crate::k::l }\n\
             use kid::x; notkid::y; x_kid::z",
        ),
    };
    let got: Vec<String> = paths(&file, &["kid".into()]).iter().map(|p| p.join("::")).collect();
    assert_eq!(got, ["m::n", "m::o::p", "m::o::q", "m", "a::g::h", "k::l", "a::b::kid::x"]);
}
