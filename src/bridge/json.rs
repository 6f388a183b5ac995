//! The few edits the bridge makes to a message's JSON text, done on the text itself: a member's
//! value found by the crate's member reader ([`Members`]: where the parse recorded it, else by
//! a scan), and the object written again around it. A message that needs no edit is forwarded
//! as it came, byte for byte.

use crate::message::members::Members;
use crate::message::scan::Member;

/// The members of object `text`; `None` when it is not a well-formed object.
fn read(text: &str) -> Option<Vec<Member<'_>>> {
    Members::scanned(text).each().ok()?.collect::<Result<Vec<_>, _>>().ok()
}

/// Writes `"key":value` after a comma when `out` already holds a member.
fn put(out: &mut String, key: &str, value: &str) {
    if !out.ends_with('{') {
        out.push(',');
    }
    out.push('"');
    out.push_str(key);
    out.push_str("\":");
    out.push_str(value);
}

/// `pairs` (key, value as JSON text) as members' JSON text: `"key":value` joined by commas.
pub(super) fn members_text(pairs: &[(&str, &str)]) -> String {
    let mut out = String::with_capacity(pairs.iter().map(|(k, v)| k.len() + v.len() + 4).sum());
    for (k, v) in pairs {
        if !out.is_empty() {
            out.push(',');
        }
        out.push('"');
        out.push_str(k);
        out.push_str("\":");
        out.push_str(v);
    }
    out
}

/// Appends members' JSON text (`"key":value,…`) to the object being written in `out`.
fn put_all(out: &mut String, members: &str) {
    if members.is_empty() {
        return;
    }
    if !out.ends_with('{') {
        out.push(',');
    }
    out.push_str(members);
}

/// The value of the top-level member `key` of object `text`, as its JSON text.
pub(super) fn member<'a>(text: &'a str, key: &str) -> Option<&'a str> {
    let each = Members::scanned(text).each().ok()?;
    each.map_while(Result::ok).find(|m| m.is(key)).map(|m| m.value)
}

/// A request's params as the child gets them.
#[derive(Debug, Default)]
pub(super) struct RequestEdit<'a> {
    /// Replaces `_meta.progressToken`, when the params carry one, with this integer.
    pub(super) token: Option<u64>,
    /// `_meta` members dropped.
    pub(super) drop_meta: &'a [&'a str],
    /// `_meta` members added after those kept, as their JSON text (`"key":value` pairs joined
    /// by commas, as [`members_text`] writes them); empty for none.
    pub(super) add_meta: &'a str,
}

impl RequestEdit<'_> {
    /// Whether `_meta` member `m` is dropped.
    fn drops(&self, m: &Member<'_>) -> bool {
        self.drop_meta.iter().any(|k| m.is(k))
    }

    /// Whether `_meta` member `m` is the progress token, replaced with the bridge's own.
    fn replaces(&self, m: &Member<'_>) -> bool {
        self.token.is_some() && m.is("progressToken")
    }
}

/// What [`edit_request`] made: the params to send (`None`: the original, unchanged), and the
/// client's own progress token (its JSON text) when it was replaced.
#[derive(Debug, Default, PartialEq, Eq)]
pub(super) struct Edited {
    pub(super) params: Option<String>,
    pub(super) token: Option<String>,
}

/// `params` with `edit` applied. Params that are not an object are left alone (the child
/// answers them as it would): only `_meta` inside an object is ever touched. Params that need
/// no edit (no `_meta` to add, and none, or one with nothing to drop or replace) are sent as
/// they came.
pub(super) fn edit_request(params: Option<Members<'_>>, edit: &RequestEdit<'_>) -> Edited {
    if edit.add_meta.is_empty() && !params.is_some_and(|p| needs_edit(&p, edit)) {
        return Edited::default();
    }
    let len = params.map_or(0, |p| p.text().len()) + edit.add_meta.len();
    let mut out = String::with_capacity(len + 16);
    out.push('{');
    let mut token = None;
    let mut meta_seen = false;
    if let Some(params) = params {
        // Params that are not an object, or a malformed one, are left alone: the child
        // refuses them as it would have.
        let Ok(outer) = params.each() else { return Edited::default() };
        for m in outer {
            let Ok(m) = m else { return Edited::default() };
            if !m.is("_meta") {
                put(&mut out, m.key, m.value);
                continue;
            }
            meta_seen = true;
            match edit_meta(params.meta(m.value), edit) {
                Some((meta, t)) => {
                    token = t;
                    if meta.len() > 2 {
                        put(&mut out, m.key, &meta);
                    }
                }
                // Not an object: the child refuses it as it would have.
                None => put(&mut out, m.key, m.value),
            }
        }
    }
    if !meta_seen && !edit.add_meta.is_empty() {
        let mut meta = String::with_capacity(edit.add_meta.len() + 2);
        meta.push('{');
        put_all(&mut meta, edit.add_meta);
        meta.push('}');
        put(&mut out, "_meta", &meta);
    }
    out.push('}');
    Edited { params: Some(out), token }
}

/// Whether a `_meta` of `params` holds a member `edit` drops or replaces (or is not an object
/// the edit could read: then the edit decides what to do with it).
fn needs_edit(params: &Members<'_>, edit: &RequestEdit<'_>) -> bool {
    if !params.is_recorded() && !params.text().contains("\"_meta\"") {
        return false;
    }
    // Params that are not a well-formed object are left alone.
    let Ok(members) = params.each() else { return false };
    let edited = |i: &Member<'_>| edit.drops(i) || edit.replaces(i);
    for m in members {
        let Ok(m) = m else { return false };
        if !m.is("_meta") {
            continue;
        }
        let Ok(mut meta) = params.meta(m.value).each() else { return true };
        if meta.any(|i| i.as_ref().map_or(true, edited)) {
            return true;
        }
    }
    false
}

/// `_meta` object `meta` with `edit` applied, and the client's own progress token when it was
/// replaced; `None` when it is not a well-formed object.
fn edit_meta(meta: Members<'_>, edit: &RequestEdit<'_>) -> Option<(String, Option<String>)> {
    let mut out = String::with_capacity(meta.text().len() + edit.add_meta.len() + 2);
    out.push('{');
    let mut token = None;
    for i in meta.each().ok()? {
        let i = i.ok()?;
        if edit.drops(&i) {
            continue;
        }
        match edit.token {
            Some(t) if edit.replaces(&i) => {
                token = Some(i.value.to_owned());
                put(&mut out, i.key, itoa::Buffer::new().format(t));
            }
            _ => put(&mut out, i.key, i.value),
        }
    }
    put_all(&mut out, edit.add_meta);
    out.push('}');
    Some((out, token))
}

/// The integer progress token of a `notifications/progress`'s params (the bridge's own tokens
/// are integers), with the params' text.
pub(super) fn progress_token(params: &str) -> Option<u64> {
    member(params, "progressToken")?.trim().parse().ok()
}

/// Object `text` with the top-level member `key` set to `value` (replaced where it is, or
/// appended).
pub(super) fn set_member(text: &str, key: &str, value: &str) -> Option<String> {
    let all = read(text)?;
    let mut out = String::with_capacity(text.len() + value.len() + key.len() + 4);
    out.push('{');
    let mut set = false;
    for m in &all {
        if m.is(key) {
            if !set {
                put(&mut out, m.key, value);
                set = true;
            }
        } else {
            put(&mut out, m.key, m.value);
        }
    }
    if !set {
        put(&mut out, key, value);
    }
    out.push('}');
    Some(out)
}

/// The value of `_meta`'s member `key` in object `text`.
pub(super) fn meta_member<'a>(text: &'a str, key: &str) -> Option<&'a str> {
    member(member(text, "_meta")?, key)
}

/// Object `text` with `_meta`'s member `key` set to `value` (where `_meta` is an object).
pub(super) fn set_meta_member(text: &str, key: &str, value: &str) -> Option<String> {
    let meta = set_member(member(text, "_meta")?, key, value)?;
    set_member(text, "_meta", &meta)
}

/// A result for a legacy client from a modern answer: `resultType`, the caching hints and the
/// server's identity in `_meta` dropped (a legacy result has none of them). `None`: not a
/// well-formed object (left as it is).
pub(super) fn legacy_result(result: Members<'_>, server_info_key: &str) -> Option<String> {
    strip_modern(result, server_info_key, false)
}

/// [`legacy_result`] of a complete answer, in the one pass that finds it complete: `None` when
/// the answer is anything else (its `resultType` other than `"complete"`: input required, a
/// task, or unknown; or not a well-formed object), which is then to be read in full.
pub(super) fn complete_legacy_result(result: Members<'_>, server_info_key: &str) -> Option<String> {
    strip_modern(result, server_info_key, true)
}

/// [`legacy_result`]; with `complete_only`, `None` as soon as a `resultType` is not
/// `"complete"`.
fn strip_modern(result: Members<'_>, server_info_key: &str, complete_only: bool) -> Option<String> {
    const MODERN_ONLY: [&str; 2] = ["ttlMs", "cacheScope"];
    let mut out = String::with_capacity(result.text().len());
    out.push('{');
    for m in result.each().ok()? {
        let m = m.ok()?;
        if m.is("resultType") {
            if complete_only && m.value.trim() != "\"complete\"" {
                return None;
            }
            continue;
        }
        if MODERN_ONLY.iter().any(|k| m.is(k)) {
            continue;
        }
        if m.is("_meta")
            && let Some(meta) = without(result.meta(m.value), server_info_key)
        {
            if meta.len() > 2 {
                put(&mut out, m.key, &meta);
            }
            continue;
        }
        put(&mut out, m.key, m.value);
    }
    out.push('}');
    Some(out)
}

/// Object `object` without its member `key`; `None` when it is not a well-formed object.
fn without(object: Members<'_>, key: &str) -> Option<String> {
    let mut out = String::with_capacity(object.text().len());
    out.push('{');
    for m in object.each().ok()? {
        let m = m.ok()?;
        if !m.is(key) {
            put(&mut out, m.key, m.value);
        }
    }
    out.push('}');
    Some(out)
}

/// A result for a modern client from a legacy child's answer: `resultType` `"complete"` when
/// it has none, and the server's identity added to `_meta`. `None`: not an object.
pub(super) fn modern_result(text: &str, server_info_key: &str, info: &str) -> Option<String> {
    let all = read(text)?;
    let mut out = String::with_capacity(text.len() + info.len() + 80);
    out.push('{');
    let (mut typed, mut meta_seen) = (false, false);
    for m in &all {
        typed |= m.is("resultType");
        if m.is("_meta")
            && let Some(inner) = read(m.value)
        {
            meta_seen = true;
            let mut meta = String::from("{");
            for i in inner.iter().filter(|i| !i.is(server_info_key)) {
                put(&mut meta, i.key, i.value);
            }
            put(&mut meta, server_info_key, info);
            meta.push('}');
            put(&mut out, m.key, &meta);
            continue;
        }
        put(&mut out, m.key, m.value);
    }
    if !typed {
        put(&mut out, "resultType", "\"complete\"");
    }
    if !meta_seen {
        let mut meta = String::from("{");
        put(&mut meta, server_info_key, info);
        meta.push('}');
        put(&mut out, "_meta", &meta);
    }
    out.push('}');
    Some(out)
}

#[cfg(test)]
mod tests;
