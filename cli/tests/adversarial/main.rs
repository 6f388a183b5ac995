//! `mcpwire serve` as a real process over stdio, fed hostile streams through real pipes.
//!
//! Each session sends a valid request (`before`), the hostile input, then another valid request
//! (`after`) and a `ping`. It checks that `before`, `after` and the `ping` are each answered
//! exactly once and correctly, that the server is still running after the `ping`, and that it
//! exits cleanly at end of input; then each test asserts the exact replies (code and id) the
//! hostile input earned, and that nothing else was sent.
//!
//! No wait is unbounded: replies are read on a thread and awaited with a timeout, and a watchdog
//! kills a server that outlives [`harness::LIFETIME`], which closes its pipes so that a blocked
//! write or read fails the test instead of hanging it.

mod harness;

mod floods;
mod framing;
mod memory;
mod modern;
