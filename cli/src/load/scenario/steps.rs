//! A session's steps, as pure functions: the think time after a step, the values a step's
//! result keeps (`save`, by JSON pointer) and the requests that use them (`${name}`). The users
//! who run the steps are in `load/user.rs`.
//!
//! A string that is `${name}` and nothing else becomes the saved value itself (a number stays a
//! number), and when `name` is unset the member holding it is left out (a list's `cursor` before
//! the first page, or after the last); `${name}` inside a longer string is replaced by the
//! value's text (a string's own characters, any other value's JSON), and an unset name there
//! fails the request as `missing_value`, as does a request left without what its method needs
//! (a tool's `name`, a resource's `uri`, a prompt's `name`: `Method::complete`). Every user has `${user}` (its
//! number, from 0) and `${iteration}` (how many times it has finished the steps).

use std::collections::BTreeMap;
use std::time::Duration;

use serde::Deserialize;
use serde_json::Value;

/// The most bytes of one saved value (its JSON text) by default: a server's answer sets it, and
/// every user keeps its own.
pub const DEFAULT_MAX_SAVED_VALUE_BYTES: usize = 64 * 1024;

/// The longest think time a step may ask for: an hour.
pub const MAX_THINK_MS: f64 = 3_600_000.0;

/// The names every user has without saving them.
pub const BUILT_IN: [&str; 2] = ["user", "iteration"];

/// A session's settings beside its steps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Session {
    pub max_saved_value_bytes: usize,
}

/// The wait after a step: a fixed number of milliseconds, or uniform in `[low, high]`.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize)]
#[serde(untagged)]
pub enum Think {
    Fixed(f64),
    Range([f64; 2]),
}

impl Think {
    /// Refuses a negative, non-finite or too long wait, and a range upside down.
    ///
    /// # Errors
    ///
    /// Why the think time is refused.
    pub fn check(&self) -> Result<(), String> {
        let ok = |ms: f64| ms.is_finite() && (0.0..=MAX_THINK_MS).contains(&ms);
        match *self {
            Self::Fixed(ms) if ok(ms) => Ok(()),
            Self::Range([lo, hi]) if ok(lo) && ok(hi) && lo <= hi => Ok(()),
            _ => Err(format!(
                "think_ms is milliseconds from 0 to {MAX_THINK_MS}, or a range [low, high] of them"
            )),
        }
    }

    /// One wait, drawn from `rng` for a range.
    #[must_use]
    pub fn pick(&self, rng: &mut u64) -> Duration {
        let ms = match *self {
            Self::Fixed(ms) => ms,
            Self::Range([lo, hi]) => lo + (hi - lo) * unit(rng),
        };
        Duration::from_secs_f64(ms / 1000.0)
    }
}

/// A number in [0, 1) from a xorshift64* generator (a user's own: think times need spread, not
/// secrecy).
fn unit(state: &mut u64) -> f64 {
    let mut x = *state;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *state = x;
    (x.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 11) as f64 / (1u64 << 53) as f64
}

/// A user's saved values, by name.
pub type Vars = BTreeMap<String, Value>;

fn valid_name(name: &str) -> bool {
    !name.is_empty() && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

/// Refuses a `save` that names a built-in or an invalid name, or whose pointer is not one.
///
/// # Errors
///
/// Which entry is refused, and why.
pub fn check_save(save: &BTreeMap<String, String>) -> Result<(), String> {
    for (name, pointer) in save {
        if !valid_name(name) || BUILT_IN.contains(&name.as_str()) {
            return Err(format!(
                "save `{name}`: a name is letters, digits and _, and not {BUILT_IN:?}"
            ));
        }
        if !(pointer.is_empty() || pointer.starts_with('/')) {
            return Err(format!("save {name}: `{pointer}` is not a JSON pointer (/a/0/b)"));
        }
    }
    Ok(())
}

/// The `${name}` a string is made of alone, if it is.
fn whole(s: &str) -> Option<&str> {
    s.strip_prefix("${").and_then(|r| r.strip_suffix('}')).filter(|n| valid_name(n))
}

/// Whether `s` uses a saved value.
#[must_use]
pub fn is_template(s: &str) -> bool {
    let mut rest = s;
    while let Some(i) = rest.find("${") {
        rest = &rest[i + 2..];
        if let Some(j) = rest.find('}')
            && valid_name(&rest[..j])
        {
            return true;
        }
    }
    false
}

/// Whether any string in `v` uses a saved value.
#[must_use]
pub fn has_template(v: &Value) -> bool {
    match v {
        Value::String(s) => is_template(s),
        Value::Array(a) => a.iter().any(has_template),
        Value::Object(o) => o.values().any(has_template),
        _ => false,
    }
}

/// `s` with its `${name}`s replaced (see the module's text); `None` for a `${name}` alone
/// whose name is unset.
///
/// # Errors
///
/// `missing_value`: an unset name inside a longer string.
pub fn render_str(s: &str, vars: &Vars) -> Result<Option<Value>, String> {
    if let Some(name) = whole(s) {
        return Ok(vars.get(name).cloned());
    }
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(i) = rest.find("${") {
        let after = &rest[i + 2..];
        let Some(j) = after.find('}') else { break };
        let name = &after[..j];
        if !valid_name(name) {
            out.push_str(&rest[..i + 2]);
            rest = after;
            continue;
        }
        out.push_str(&rest[..i]);
        match vars.get(name) {
            Some(Value::String(v)) => out.push_str(v),
            Some(v) => out.push_str(&v.to_string()),
            None => return Err("missing_value".into()),
        }
        rest = &after[j + 1..];
    }
    out.push_str(rest);
    Ok(Some(Value::String(out)))
}

/// `v` with every string rendered; a member (or element) whose `${name}` is unset is left out.
///
/// # Errors
///
/// As [`render_str`].
pub fn render(v: &Value, vars: &Vars) -> Result<Option<Value>, String> {
    Ok(Some(match v {
        Value::String(s) => return render_str(s, vars),
        Value::Array(a) => {
            let mut out = Vec::with_capacity(a.len());
            for x in a {
                out.extend(render(x, vars)?);
            }
            Value::Array(out)
        }
        Value::Object(o) => {
            let mut out = serde_json::Map::new();
            for (k, x) in o {
                if let Some(x) = render(x, vars)? {
                    out.insert(k.clone(), x);
                }
            }
            Value::Object(out)
        }
        v => v.clone(),
    }))
}

/// Keeps the values `save` points at in `result`; a pointer that finds nothing (or `null`)
/// unsets its name, so a `cursor` saved from `/nextCursor` ends with the last page.
///
/// # Errors
///
/// `bad_result` when the result is not JSON; `saved_value_too_large` when a value's JSON text
/// is longer than `max` bytes (its name is then unset).
pub fn save(
    result: &str,
    save: &BTreeMap<String, String>,
    vars: &mut Vars,
    max: usize,
) -> Result<(), String> {
    let v: Value = serde_json::from_str(result).map_err(|_| "bad_result".to_owned())?;
    for (name, pointer) in save {
        match v.pointer(pointer) {
            None | Some(Value::Null) => {
                vars.remove(name);
            }
            Some(x) => {
                let len = serde_json::to_string(x).map_or(usize::MAX, |t| t.len());
                if len > max {
                    vars.remove(name);
                    return Err("saved_value_too_large".into());
                }
                vars.insert(name.clone(), x.clone());
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests;
