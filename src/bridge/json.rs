//! The few edits the bridge makes to a message's JSON text, done on the text itself: a member's
//! value found where it lies ([`crate::mcp::scan`]), the object written again around it. A
//! message that needs no edit is forwarded as it came, byte for byte.

use crate::mcp::scan::{Member, members};

/// The members of object `text`; `None` when it is not a well-formed object.
fn read(text: &str) -> Option<Vec<Member<'_>>> {
    members(text).ok()?.collect::<Result<Vec<_>, _>>().ok()
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

/// The value of the top-level member `key` of object `text`, as its JSON text.
pub(super) fn member<'a>(text: &'a str, key: &str) -> Option<&'a str> {
    members(text).ok()?.map_while(Result::ok).find(|m| m.is(key)).map(|m| m.value)
}

/// A request's params as the child gets them.
#[derive(Debug, Default)]
pub(super) struct RequestEdit<'a> {
    /// Replaces `_meta.progressToken`, when the params carry one, with this integer.
    pub(super) token: Option<u64>,
    /// `_meta` members dropped.
    pub(super) drop_meta: &'a [&'a str],
    /// `_meta` members added (key, JSON text), after those kept.
    pub(super) add_meta: &'a [(&'a str, &'a str)],
}

/// What [`edit_request`] made: the params to send (`None`: the original, unchanged), and the
/// client's own progress token (its JSON text) when it was replaced.
#[derive(Debug, Default, PartialEq, Eq)]
pub(super) struct Edited {
    pub(super) params: Option<String>,
    pub(super) token: Option<String>,
}

/// `params` with `edit` applied. Params that are not an object are left alone (the child
/// answers them as it would): only `_meta` inside an object is ever touched.
pub(super) fn edit_request(params: Option<&str>, edit: &RequestEdit<'_>) -> Edited {
    let touches_meta = params.is_some_and(|p| p.contains("\"_meta\""));
    if !touches_meta && edit.add_meta.is_empty() {
        return Edited::default();
    }
    let Some(outer) = params.map_or_else(|| Some(Vec::new()), read) else {
        return Edited::default();
    };
    let mut out = String::with_capacity(params.map_or(0, str::len) + 64);
    out.push('{');
    let mut token = None;
    let mut meta_seen = false;
    for m in &outer {
        if !m.is("_meta") {
            put(&mut out, m.key, m.value);
            continue;
        }
        meta_seen = true;
        let Some(inner) = read(m.value) else {
            // Not an object: the child refuses it as it would have.
            put(&mut out, m.key, m.value);
            continue;
        };
        let mut meta = String::with_capacity(m.value.len() + 32);
        meta.push('{');
        for i in &inner {
            if edit.drop_meta.iter().any(|k| i.is(k)) {
                continue;
            }
            match edit.token {
                Some(t) if i.is("progressToken") => {
                    token = Some(i.value.to_owned());
                    put(&mut meta, i.key, itoa::Buffer::new().format(t));
                }
                _ => put(&mut meta, i.key, i.value),
            }
        }
        for (k, v) in edit.add_meta {
            put(&mut meta, k, v);
        }
        meta.push('}');
        if meta.len() > 2 {
            put(&mut out, m.key, &meta);
        }
    }
    if !meta_seen && !edit.add_meta.is_empty() {
        let mut meta = String::from("{");
        for (k, v) in edit.add_meta {
            put(&mut meta, k, v);
        }
        meta.push('}');
        put(&mut out, "_meta", &meta);
    }
    out.push('}');
    Edited { params: Some(out), token }
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
/// server's identity in `_meta` dropped (a legacy result has none of them). `None`: unchanged.
pub(super) fn legacy_result(text: &str, server_info_key: &str) -> Option<String> {
    const MODERN_ONLY: [&str; 3] = ["resultType", "ttlMs", "cacheScope"];
    let all = read(text)?;
    let mut out = String::with_capacity(text.len());
    out.push('{');
    for m in &all {
        if MODERN_ONLY.iter().any(|k| m.is(k)) {
            continue;
        }
        if m.is("_meta")
            && let Some(inner) = read(m.value)
        {
            let mut meta = String::from("{");
            for i in inner.iter().filter(|i| !i.is(server_info_key)) {
                put(&mut meta, i.key, i.value);
            }
            meta.push('}');
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
