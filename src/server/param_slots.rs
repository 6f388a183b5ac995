//! Where the members of `params` the server reads ([`Key`]) lie in its text ([`Slot`]), found
//! by one read of `params` before any handler runs ([`ParamSlots`]): neither the dispatcher nor
//! a handler reads `params` again to find them. `arguments` and `_meta` that are not objects
//! are refused in that read.

use crate::mcp::meta::{Rejection, member};
use crate::message::RawJson;
use crate::message::members::Members;
use crate::message::scan::ScanError;

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

    /// Each, in the order of their discriminants.
    const ALL: [Self; Self::COUNT] = [
        Self::Name,
        Self::Arguments,
        Self::Meta,
        Self::Uri,
        Self::RequestState,
        Self::InputResponses,
    ];

    /// Their names in `params`, in the same order.
    const NAMES: [&'static str; Self::COUNT] =
        ["name", "arguments", "_meta", "uri", "requestState", "inputResponses"];

    /// Its name in `params`.
    pub(crate) fn name(self) -> &'static str {
        Self::NAMES[self as usize]
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

/// Why a read of `params` stopped: the scan's error, or a refusal.
enum Stop {
    Scan(ScanError),
    Refused(Rejection),
}

impl From<ScanError> for Stop {
    fn from(e: ScanError) -> Self {
        Self::Scan(e)
    }
}

impl From<Rejection> for Stop {
    fn from(r: Rejection) -> Self {
        Self::Refused(r)
    }
}

/// Where the members of `params` the server reads (each [`Key`]) lie, found by one read, so
/// neither the dispatcher nor a handler reads `params` again.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct ParamSlots {
    /// Whether `params` was read (otherwise each member is found by a scan of its own).
    read: bool,
    members: [Slot; Key::COUNT],
}

impl ParamSlots {
    /// Reads `params` (absent `params` name nothing) by a scan of their text.
    ///
    /// # Errors
    ///
    /// As [`ParamSlots::of`].
    pub(crate) fn read(params: Option<RawJson<'_>>) -> Result<Self, Rejection> {
        Self::of(params.map(|p| Members::scanned(p.get())))
    }

    /// The `params` of `req`, read from the members its parse recorded when it did.
    ///
    /// # Errors
    ///
    /// As [`ParamSlots::of`].
    pub(crate) fn of_request(req: &crate::peer::Incoming) -> Result<Self, Rejection> {
        Self::of(req.message().param_members())
    }

    /// Reads the members of `params` (`None`: absent `params`, which name nothing), in their
    /// order.
    ///
    /// # Errors
    ///
    /// -32602 when `params` is not an object, names `name`, `arguments`, `_meta` or `uri`
    /// twice (as [`RequestParams::parse`] does), or holds an `arguments` or `_meta` that is not
    /// an object; of those, the first met in the text.
    ///
    /// [`RequestParams::parse`]: crate::mcp::meta::RequestParams::parse
    pub(crate) fn of(members: Option<Members<'_>>) -> Result<Self, Rejection> {
        let mut slots = Self { read: true, members: [Slot::Absent; Key::COUNT] };
        let Some(members) = members else { return Ok(slots) };
        let text = members.text();
        let bad = |why: &str| Rejection::invalid(format!("Invalid params: params {why}"));
        let read = members.for_each_named(Key::NAMES, |i, value| {
            let key = Key::ALL[i];
            let value = Self::slot(text, key, value)?;
            let slot = &mut slots.members[i];
            *slot = match *slot {
                Slot::Absent => value,
                _ if key.checked() => {
                    return Err(bad(&format!("names {} twice", key.name())).into());
                }
                _ => Slot::Twice,
            };
            Ok(())
        });
        read.map_err(|e| match e {
            Stop::Scan(ScanError::NotObject) => bad("must be an object"),
            Stop::Scan(ScanError::Malformed) => bad("is not well-formed JSON"),
            Stop::Refused(r) => r,
        })?;
        Ok(slots)
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
