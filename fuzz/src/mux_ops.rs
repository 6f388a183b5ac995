//! The operations of the `mux` model ([`super::Model`]) and how a fuzz input decodes into them.
//!
//! Part of `mux_model.rs`, which includes it by path so that the fuzz crate and the main crate's
//! tests that include `mux_model.rs` get it too: it may use only `mcpwire`, `arbitrary` and std.

use arbitrary::{Result, Unstructured};
use mcpwire::Id;
use mcpwire::mux::MAX_ID;

/// The most operations [`ops`] decodes from one input.
pub const MAX_OPS: usize = 1000;

/// An id for [`Inbound::begin`], [`Inbound::finish`] and [`Inbound::cancel`]. Small numbers and
/// their strings collide often, so duplicates, reuse, and the difference between `7` and `"7"`
/// all come up.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum PeerId {
    /// `Id::Num`
    Num(i64),
    /// `Id::Str`
    Str(String),
    /// `Id::Null`
    Null,
}

impl PeerId {
    pub(crate) fn as_id(&self) -> Id<'_> {
        match self {
            Self::Num(n) => Id::Num(*n),
            Self::Str(s) => Id::Str(s),
            Self::Null => Id::Null,
        }
    }

    /// One tag byte `t`: `t % 8` in 0..=3 a number -2..=13 (next byte), 4..=5 that number as a
    /// string, 6 `null`, 7 any `i64` (next 8 bytes).
    pub fn decode(u: &mut Unstructured<'_>) -> Result<Self> {
        let small = |u: &mut Unstructured<'_>| u.int_in_range(-2..=13i64);
        Ok(match u.arbitrary::<u8>()? % 8 {
            0..=3 => Self::Num(small(u)?),
            4..=5 => Self::Str(small(u)?.to_string()),
            6 => Self::Null,
            _ => Self::Num(u.arbitrary()?),
        })
    }
}

/// One step. The `usize` arguments pick among the live requests or the history, modulo its
/// length.
#[derive(Clone, Debug)]
pub enum Op {
    /// `Outbound::register`, deadline in milliseconds from now.
    Register(Option<u16>),
    /// That many registrations with the same deadline.
    Burst(u8, Option<u16>),
    /// `Outbound::answer` with the id of a request in flight (1 when none is), then
    /// `Outbound::collect` at once: a response whose caller is waiting.
    Respond(usize),
    /// `Outbound::answer` with the id of a request in flight (1 when none is), its waiter left
    /// answered for a later `Outbound::collect`.
    AnswerLive(usize),
    /// `Outbound::answer` with any id ever issued: live, answered, or late.
    AnswerIssued(usize),
    /// `Outbound::collect`: `i % 4` 0 or 2 every answered request, 1 one answered request, 3
    /// any id ever issued (in flight, answered, or gone).
    Collect(usize),
    /// `Outbound::answer` with `generation << SLOT_BITS | slot`, issued or not.
    AnswerCrafted {
        /// The high bits.
        generation: u8,
        /// The low bits.
        slot: u8,
    },
    /// `Outbound::answer` with any number.
    AnswerNumber(i64),
    /// `Outbound::answer` with a live id written as a string: never ours.
    AnswerString(usize),
    /// `Outbound::answer(Id::Null)`.
    AnswerNull,
    /// Responds to (answers and collects) every request in flight but this many, in a
    /// scattered order.
    RespondMost(usize),
    /// `Outbound::cancel` with a live id (even argument) or any id ever issued (odd).
    Cancel(usize),
    /// `Outbound::set_deadline` on a live id.
    SetDeadline(usize, Option<u16>),
    /// Moves the clock on this many milliseconds and expires every request due, in place.
    Advance(u16),
    /// `Outbound::drain_in_place`.
    Drain,
    /// `Inbound::begin`.
    Begin(PeerId),
    /// `Inbound::begin` with fresh numeric ids until the table refuses one as full.
    BeginFill,
    /// `Inbound::finish` with a request ever begun, its own token: live, or stale.
    FinishIssued(usize),
    /// `Inbound::finish` with a live request's id and another token.
    FinishWrongToken(usize, u64),
    /// `Inbound::finish` with an arbitrary id and token.
    FinishAny(PeerId, u64),
    /// `Inbound::cancel`.
    InboundCancel(PeerId),
    /// `Inbound::drain`.
    InboundDrain,
}

fn deadline(u: &mut Unstructured<'_>) -> Result<Option<u16>> {
    Ok(if u.arbitrary::<bool>()? { Some(u.int_in_range(0..=1999)?) } else { None })
}

fn index(u: &mut Unstructured<'_>) -> Result<usize> {
    Ok(usize::from(u.arbitrary::<u16>()?))
}

impl Op {
    /// One tag byte, `t % 32`, picks the operation; its arguments follow. Register and the
    /// answers take most tags. A deadline is a flag byte (odd: present) then a `u16` in
    /// 0..=1999 ms; an index is a `u16`; numbers and tokens are 8 little-endian bytes.
    pub fn decode(u: &mut Unstructured<'_>) -> Result<Self> {
        Ok(match u.arbitrary::<u8>()? % 32 {
            0..=4 => Self::Register(deadline(u)?),
            5 => Self::Burst(u.int_in_range(100..=250)?, deadline(u)?),
            6..=7 => Self::Respond(index(u)?),
            8 => Self::AnswerLive(index(u)?),
            9 => Self::AnswerIssued(index(u)?),
            10 => Self::Collect(index(u)?),
            11 => Self::AnswerCrafted { generation: u.int_in_range(0..=5)?, slot: u.arbitrary()? },
            12 => Self::AnswerNumber(match u.arbitrary::<u8>()? % 3 {
                0 => u.arbitrary()?,
                1 => u.int_in_range(-5..=5000)?,
                _ => MAX_ID as i64 + u.int_in_range(-3..=3)?,
            }),
            13 => Self::AnswerString(index(u)?),
            14 => Self::AnswerNull,
            15 => Self::RespondMost(u.int_in_range(0..=7)?),
            16..=17 => Self::Cancel(index(u)?),
            18 => Self::SetDeadline(index(u)?, deadline(u)?),
            19..=20 => Self::Advance(u.int_in_range(0..=1499)?),
            21 => Self::Drain,
            22..=24 => Self::Begin(PeerId::decode(u)?),
            25 => Self::BeginFill,
            26..=27 => Self::FinishIssued(index(u)?),
            28 => Self::FinishWrongToken(index(u)?, u.arbitrary()?),
            29 => Self::FinishAny(PeerId::decode(u)?, u.arbitrary()?),
            30 => Self::InboundCancel(PeerId::decode(u)?),
            _ => Self::InboundDrain,
        })
    }
}

/// Decodes operations until the input runs out (at most [`MAX_OPS`]).
pub fn ops(u: &mut Unstructured<'_>) -> Result<Vec<Op>> {
    let mut ops = Vec::new();
    while !u.is_empty() && ops.len() < MAX_OPS {
        ops.push(Op::decode(u)?);
    }
    Ok(ops)
}
