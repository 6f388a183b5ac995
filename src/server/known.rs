//! The members of `params` the server reads ([`Key`]), found by one scan of `params` ([`Known`])
//! and kept as where they lie in its text ([`Slot`]): neither the dispatcher nor a handler scans
//! `params` again. `arguments` and `_meta` that are not objects are refused in that scan.

use crate::mcp::meta::{Rejection, member};
use crate::message::RawJson;
use crate::message::members::Members;

/// A member of `params` the server reads: the four [`RequestParams`] reads (refused as soon as
/// they are named twice, as it refuses them), then those of multi round-trip requests (refused
/// when they are read).
///
/// [`RequestParams`]: crate::mcp::meta::RequestParams
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Key {
    Name,
    Arguments,
    Meta,
    Uri,
    RequestState,
    InputResponses,
}

impl Key {
    /// How many there are.
    const COUNT: usize = 6;

    /// The key named `name`.
    fn of(name: &str) -> Option<Self> {
        Some(match name {
            "name" => Self::Name,
            "arguments" => Self::Arguments,
            "_meta" => Self::Meta,
            "uri" => Self::Uri,
            "requestState" => Self::RequestState,
            "inputResponses" => Self::InputResponses,
            _ => return None,
        })
    }

    /// Its name in `params`.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Self::Name => "name",
            Self::Arguments => "arguments",
            Self::Meta => "_meta",
            Self::Uri => "uri",
            Self::RequestState => "requestState",
            Self::InputResponses => "inputResponses",
        }
    }

    /// Whether `params` naming it twice is refused as soon as it is read.
    fn checked(self) -> bool {
        matches!(self, Self::Name | Self::Arguments | Self::Meta | Self::Uri)
    }
}

/// Where a member's value lies in the text of `params`, bounded by the frame size (which
/// [`crate::limits::MAX_FRAME_BYTES_CEILING`] keeps below 4 GiB).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) enum Slot {
    /// Not named.
    #[default]
    Absent,
    /// Named, `null`: no member for its readers.
    Null,
    /// Its value, from the first byte to past the last.
    At(u32, u32),
    /// Named twice.
    Twice,
}

impl Slot {
    /// Where `part` (a slice of `text`) lies in `text`.
    pub(crate) fn of(text: &str, part: &str) -> Self {
        let start = part.as_ptr() as usize - text.as_ptr() as usize;
        debug_assert!(start + part.len() <= text.len());
        let at = |n: usize| u32::try_from(n).expect("a frame is shorter than 4 GiB");
        Self::At(at(start), at(start + part.len()))
    }

    /// The value in `text`, if one is there.
    pub(crate) fn get(self, text: &str) -> Option<&str> {
        match self {
            Self::At(start, end) => text.get(start as usize..end as usize),
            _ => None,
        }
    }
}

/// The members of `params` the server reads (each [`Key`]), found by one scan, so neither the
/// dispatcher nor a handler scans `params` again.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Known {
    /// Whether `params` was read (otherwise each member is found by a scan of its own).
    read: bool,
    members: [Slot; Key::COUNT],
}

impl Known {
    /// Reads `params` (absent `params` name nothing).
    ///
    /// # Errors
    ///
    /// -32602 when `params` is not an object, or names `name`, `arguments`, `_meta` or `uri`
    /// twice (as [`RequestParams::parse`] does).
    ///
    /// [`RequestParams::parse`]: crate::mcp::meta::RequestParams::parse
    pub(crate) fn read(params: Option<RawJson<'_>>) -> Result<Self, Rejection> {
        let mut known = Self { read: true, members: [Slot::Absent; Key::COUNT] };
        let Some(params) = params else { return Ok(known) };
        let text = params.get();
        let bad = |why: &str| Rejection::invalid(format!("Invalid params: params {why}"));
        let members = crate::mcp::scan::members(text).map_err(|e| match e {
            crate::mcp::scan::ScanError::NotObject => bad("must be an object"),
            crate::mcp::scan::ScanError::Malformed => bad("is not well-formed JSON"),
        })?;
        for m in members {
            let m = m.map_err(|_| bad("is not well-formed JSON"))?;
            let key = if m.escaped {
                crate::mcp::scan::unescape(m.key).and_then(|k| Key::of(&k))
            } else {
                Key::of(m.key)
            };
            let Some(key) = key else { continue };
            let value = Self::slot(text, key, m.value)?;
            let slot = &mut known.members[key as usize];
            *slot = match *slot {
                Slot::Absent => value,
                _ if key.checked() => return Err(bad(&format!("names {} twice", key.name()))),
                _ => Slot::Twice,
            };
        }
        Ok(known)
    }

    /// `params` read: from the members the parse recorded (`recorded`) when it did, else by
    /// [`Known::read`].
    ///
    /// # Errors
    ///
    /// As [`Known::read`].
    pub(crate) fn of(
        params: Option<RawJson<'_>>,
        recorded: Option<&Members<'_>>,
    ) -> Result<Self, Rejection> {
        match (params, recorded) {
            (Some(params), Some(members)) => Self::recorded(params.get(), members),
            (params, _) => Self::read(params),
        }
    }

    /// The `params` of `req`, read as [`Known::of`] reads them.
    ///
    /// # Errors
    ///
    /// As [`Known::read`].
    pub(crate) fn of_request(req: &crate::peer::Incoming) -> Result<Self, Rejection> {
        let msg = req.message();
        Self::of(msg.params(), msg.param_members().as_ref().map(|(m, _)| m))
    }

    /// [`Known::read`] from the members of `params` the parse recorded (`members`; `text` is
    /// `params`): the same slots and the same refusals, with no pass over `params`.
    ///
    /// # Errors
    ///
    /// As [`Known::read`]: -32602 when `params` names `name`, `arguments`, `_meta` or `uri`
    /// twice, or an `arguments` or `_meta` that is not an object.
    fn recorded(text: &str, members: &Members<'_>) -> Result<Self, Rejection> {
        const ALL: [Key; Key::COUNT] = [
            Key::Name,
            Key::Arguments,
            Key::Meta,
            Key::Uri,
            Key::RequestState,
            Key::InputResponses,
        ];
        let mut known = Self { read: true, members: [Slot::Absent; Key::COUNT] };
        let bad = |key: Key| {
            Rejection::invalid(format!("Invalid params: params names {} twice", key.name()))
        };
        // One look at the keys for all six (a member named twice stops it).
        let values = match members.pick(ALL.map(Key::name)) {
            Ok(values) => values,
            Err(i) if ALL[i].checked() => return Err(bad(ALL[i])),
            // A multi round-trip member named twice (not refused here): the four refused
            // ones first, then each other one by itself.
            Err(_) => {
                let [name, arguments, meta, uri] = members
                    .pick([Key::Name, Key::Arguments, Key::Meta, Key::Uri].map(Key::name))
                    .map_err(|i| bad(ALL[i]))?;
                let [state, responses] = [Key::RequestState, Key::InputResponses].map(|key| {
                    match members.pick([key.name()]) {
                        Ok([value]) => value,
                        Err(_) => {
                            known.members[key as usize] = Slot::Twice;
                            None
                        }
                    }
                });
                [name, arguments, meta, uri, state, responses]
            }
        };
        for (key, value) in ALL.into_iter().zip(values) {
            if let Some(value) = value {
                known.members[key as usize] = Self::slot(text, key, value)?;
            }
        }
        Ok(known)
    }

    /// The slot of member `key` whose value is `value` (a slice of `text`).
    fn slot(text: &str, key: Key, value: &str) -> Result<Slot, Rejection> {
        if value == "null" {
            return Ok(Slot::Null);
        }
        // `arguments` and `_meta` are objects in every MCP schema; serde would read an array
        // into a struct, field by field.
        if matches!(key, Key::Arguments | Key::Meta) && !value.starts_with('{') {
            let msg = format!("Invalid params: {} must be an object", key.name());
            return Err(Rejection::invalid(msg));
        }
        Ok(Slot::of(text, value))
    }

    /// Whether `params` was read.
    pub(crate) fn is_read(&self) -> bool {
        self.read
    }

    /// Member `key` of `params` (`None` when absent or `null`): found in what was read, or by a
    /// scan of its own when `params` was not read.
    ///
    /// # Errors
    ///
    /// -32602 when `params` names `key` twice, or (scanned) is not an object.
    pub(crate) fn get<'t>(
        &self,
        params: Option<RawJson<'t>>,
        key: Key,
    ) -> Result<Option<RawJson<'t>>, Rejection> {
        let Some(p) = params else { return Ok(None) };
        if !self.read {
            return member(p, key.name());
        }
        match self.members[key as usize] {
            Slot::Twice => Err(Rejection::invalid(format!(
                "Invalid params: params names {} twice",
                key.name()
            ))),
            slot => Ok(slot.get(p.get()).map(RawJson::new)),
        }
    }

    /// `params._meta`, as read.
    pub(crate) fn meta<'t>(&self, params: RawJson<'t>) -> Option<RawJson<'t>> {
        self.members[Key::Meta as usize].get(params.get()).map(RawJson::new)
    }
}

#[cfg(test)]
mod tests;
