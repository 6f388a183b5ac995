//! Requests the other side sent that we are handling, keyed by the peer's own ids.
//!
//! Integer and string ids live in two maps, so a lookup by a borrowed [`Id`] never allocates and
//! `7` and `"7"` can never collide. Both maps hash with std's randomly keyed SipHash: the peer
//! chooses the keys, so a fixed hasher would let it force collisions.

use std::collections::HashMap;
use std::collections::hash_map::Entry;
use std::fmt;
use std::hash::Hash;
use std::mem;

use crate::message::Id;

/// Below this capacity a map is not shrunk: steady traffic never reallocates.
const MIN_CAPACITY: usize = 64;

/// The table of requests being handled: refuses a second request with an id still in flight,
/// and finds a handler again by id when the peer cancels it.
///
/// [`begin`](Self::begin) returns a token; [`finish`](Self::finish) removes the entry only if the
/// token still matches, so a handler that finishes after its request was cancelled, and the id
/// reused, never removes the newer request.
///
/// Only ids in flight are remembered. MCP says a requestor MUST NOT reuse an id within a session,
/// but remembering every id ever seen would cost memory without bound, so a reuse after the first
/// request finished is accepted.
///
/// # Examples
///
/// ```
/// use mcpwire::Id;
/// use mcpwire::mux::{Inbound, Refused};
///
/// let mut inbound = Inbound::new(128);
/// let token = inbound.begin(Id::Num(7), "tools/call #7").unwrap();
///
/// // The string "7" is another id; the number 7 again is a duplicate.
/// assert!(inbound.begin(Id::Str("7"), "tools/list").is_ok());
/// assert!(matches!(inbound.begin(Id::Num(7), "again"), Err(Refused::Duplicate("again"))));
/// assert!(matches!(inbound.begin(Id::Null, "null"), Err(Refused::NullId(_))));
///
/// // notifications/cancelled for "7": the handler is found and removed...
/// assert_eq!(inbound.cancel(Id::Str("7")), Some("tools/list"));
/// // ...and request 7 finishes normally: send its response.
/// assert_eq!(inbound.finish(Id::Num(7), token), Some("tools/call #7"));
/// assert!(inbound.is_empty());
/// ```
pub struct Inbound<H> {
    nums: HashMap<i64, (u64, H)>,
    strs: HashMap<Box<str>, (u64, H)>,
    /// Bytes of string keys, for [`Inbound::memory_bytes`].
    str_bytes: usize,
    max: usize,
    next_token: u64,
    stats: InboundStats,
}

/// Why [`Inbound::begin`] refused a request. Each variant hands the handle back; the request
/// should be answered with an error (-32600 for the first two).
#[derive(Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Refused<H> {
    /// A request with this id is still in flight. MCP: the request id "MUST NOT have been
    /// previously used by the requestor within the same session".
    Duplicate(H),
    /// The id is `null`. MCP: "Unlike base JSON-RPC, the ID MUST NOT be null."
    NullId(H),
    /// The table holds its maximum of requests.
    Full(H),
}

impl<H> Refused<H> {
    /// The handle that was not added.
    #[must_use]
    pub fn into_inner(self) -> H {
        match self {
            Self::Duplicate(h) | Self::NullId(h) | Self::Full(h) => h,
        }
    }
}

impl<H> fmt::Debug for Refused<H> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Duplicate(_) => "Duplicate(..)",
            Self::NullId(_) => "NullId(..)",
            Self::Full(_) => "Full(..)",
        })
    }
}

impl<H> fmt::Display for Refused<H> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Duplicate(_) => "a request with this id is already in flight",
            Self::NullId(_) => "a request id must not be null",
            Self::Full(_) => "too many requests in flight",
        })
    }
}

impl<H> std::error::Error for Refused<H> {}

/// Counters of an [`Inbound`] table since it was made.
///
/// `begun == finished + cancelled + drained + len()`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct InboundStats {
    /// Requests added.
    pub begun: u64,
    /// Requests removed by [`Inbound::finish`].
    pub finished: u64,
    /// Requests refused because their id was in flight.
    pub duplicates: u64,
    /// Requests refused for a `null` id.
    pub null_ids: u64,
    /// Requests refused because the table was full.
    pub full: u64,
    /// Requests removed by [`Inbound::cancel`].
    pub cancelled: u64,
    /// Cancellations naming no request in flight (it finished first, or never existed).
    pub cancel_unknown: u64,
    /// Requests removed by [`Inbound::drain`].
    pub drained: u64,
}

impl<H> Inbound<H> {
    /// An empty table holding at most `max` requests (0 is raised to 1). Allocates nothing until
    /// the first request.
    #[must_use]
    pub fn new(max: usize) -> Self {
        Self {
            nums: HashMap::new(),
            strs: HashMap::new(),
            str_bytes: 0,
            max: max.max(1),
            next_token: 0,
            stats: InboundStats::default(),
        }
    }

    /// The most requests the table holds at once.
    #[must_use]
    pub fn max(&self) -> usize {
        self.max
    }

    /// Requests in flight.
    #[must_use]
    pub fn len(&self) -> usize {
        self.nums.len() + self.strs.len()
    }

    /// Whether no request is in flight.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The handle of the request in flight with this id.
    #[must_use]
    pub fn get(&self, id: Id<'_>) -> Option<&H> {
        match id {
            Id::Num(n) => self.nums.get(&n).map(|(_, h)| h),
            Id::Str(s) => self.strs.get(s).map(|(_, h)| h),
            Id::Null => None,
        }
    }

    /// Adds a request the peer sent and returns its token, unique within this table, for
    /// [`finish`](Self::finish). A string id is copied once, here.
    ///
    /// # Errors
    ///
    /// [`Refused`], with the handle: the id is in flight, is `null`, or the table is full.
    pub fn begin(&mut self, id: Id<'_>, handle: H) -> Result<u64, Refused<H>> {
        if id == Id::Null {
            self.stats.null_ids += 1;
            return Err(Refused::NullId(handle));
        }
        if self.get(id).is_some() {
            self.stats.duplicates += 1;
            return Err(Refused::Duplicate(handle));
        }
        if self.len() >= self.max {
            self.stats.full += 1;
            return Err(Refused::Full(handle));
        }
        let token = self.next_token;
        // A u64 counter never overflows in practice: a billion requests a second last 584 years.
        self.next_token += 1;
        match id {
            Id::Num(n) => {
                self.nums.insert(n, (token, handle));
            }
            Id::Str(s) => {
                self.str_bytes += s.len();
                self.strs.insert(s.into(), (token, handle));
            }
            Id::Null => unreachable!("refused above"),
        }
        self.stats.begun += 1;
        Ok(token)
    }

    /// Removes the request with this id if its token is `token`, returning its handle: the
    /// response should be sent. `None` means the request was cancelled (MCP: the receiver of a
    /// cancellation should "not send a response for the cancelled request") or the table drained.
    pub fn finish(&mut self, id: Id<'_>, token: u64) -> Option<H> {
        let handle = match id {
            Id::Num(n) => match self.nums.entry(n) {
                Entry::Occupied(e) if e.get().0 == token => {
                    let (_, handle) = e.remove();
                    shrink(&mut self.nums);
                    Some(handle)
                }
                _ => None,
            },
            Id::Str(s) => match self.strs.get(s) {
                Some(&(t, _)) if t == token => self.remove_str(s),
                _ => None,
            },
            Id::Null => None,
        }?;
        self.stats.finished += 1;
        Some(handle)
    }

    /// Removes the request with this id whatever its token (for `notifications/cancelled`),
    /// returning its handle so the caller can stop the work. Counts an unknown id.
    pub fn cancel(&mut self, id: Id<'_>) -> Option<H> {
        let handle = match id {
            Id::Num(n) => match self.nums.entry(n) {
                Entry::Occupied(e) => {
                    let (_, handle) = e.remove();
                    shrink(&mut self.nums);
                    Some(handle)
                }
                Entry::Vacant(_) => None,
            },
            Id::Str(s) => self.remove_str(s),
            Id::Null => None,
        };
        match handle {
            Some(_) => self.stats.cancelled += 1,
            None => self.stats.cancel_unknown += 1,
        }
        handle
    }

    /// Removes every request (for a closed connection) and releases the maps' memory. Every
    /// handle is removed even if the iterator is dropped early.
    pub fn drain(&mut self) -> impl Iterator<Item = H> + use<H> {
        self.stats.drained += self.len() as u64;
        self.str_bytes = 0;
        let nums = mem::take(&mut self.nums).into_values();
        let strs = mem::take(&mut self.strs).into_values();
        nums.chain(strs).map(|(_, h)| h)
    }

    /// The table's counters.
    #[must_use]
    pub fn stats(&self) -> InboundStats {
        self.stats
    }

    /// Bytes the table holds on the heap, approximately: each map's capacity times its entry size
    /// plus a control byte, and the string ids. What each handle owns is not counted.
    #[must_use]
    pub fn memory_bytes(&self) -> usize {
        self.nums.capacity() * (mem::size_of::<(i64, (u64, H))>() + 1)
            + self.strs.capacity() * (mem::size_of::<(Box<str>, (u64, H))>() + 1)
            + self.str_bytes
    }

    fn remove_str(&mut self, s: &str) -> Option<H> {
        let (key, (_, handle)) = self.strs.remove_entry(s)?;
        self.str_bytes -= key.len();
        shrink(&mut self.strs);
        Some(handle)
    }
}

/// Gives memory back after a burst. A shrink to `2 * len` waits for the map to fall below a
/// quarter of its capacity again, so it is amortised O(1) per removal.
fn shrink<K: Eq + Hash, V>(map: &mut HashMap<K, V>) {
    if map.capacity() > MIN_CAPACITY && map.len() * 4 < map.capacity() {
        map.shrink_to(map.len() * 2);
    }
}

impl<H> fmt::Debug for Inbound<H> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Inbound")
            .field("len", &self.len())
            .field("max", &self.max)
            .field("stats", &self.stats)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests;
