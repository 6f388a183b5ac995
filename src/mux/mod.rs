//! In-flight tables, sans-IO: which requests we are waiting on, and which we are handling.
//!
//! ```text
//!  we send ──► Outbound::register ──► id ──► peer
//!  peer ──► response(id) ──► Outbound::answer ──► waiter, in place   (or Late / Unknown)
//!  now ──► Outbound::expire ──► timed-out waiters, in place
//!  closed ──► Outbound::drain_in_place ──► every waiter in flight, in place
//!  caller ──► Outbound::collect ──► its waiter, with the outcome written in; slot freed
//!
//!  peer ──► request(id) ──► Inbound::begin ──► token ──► handler
//!  handler done ──► Inbound::finish(id, token) ──► send the response (or not: cancelled)
//!  peer ──► notifications/cancelled(id) ──► Inbound::cancel ──► stop the handler
//! ```
//!
//! Neither table reads a clock or does I/O: deadlines are `Instant`s the caller picks and
//! [`Outbound::expire`] takes `now`. Both are bounded (`max_in_flight`, `max`) and give
//! memory back after a burst.

mod inbound;
mod outbound;
mod timers;

pub use inbound::{Inbound, InboundStats, Refused};
pub use outbound::{Full, MAX_ID, Outbound, OutboundStats, Unmatched};
