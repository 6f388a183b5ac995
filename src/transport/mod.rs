//! Where a peer's bytes travel: a child process's stdio ([`spawn_child`]), the process's own
//! ([`stdio`]), TCP and Unix sockets (client and accept loop), and an in-process pair over
//! `tokio::io::duplex`; and
//! [`Target`], the one name for a server and the transport that reaches it (these, or
//! Streamable HTTP from [`crate::http`], which cuts frames itself).

mod child;
mod socket;
mod stdio;
mod target;

pub use child::{ChildStderr, spawn_child, spawn_child_with};
pub use socket::{connect_tcp, serve_tcp, serve_tcp_until};
#[cfg(unix)]
pub use socket::{connect_unix, serve_unix, serve_unix_until};
pub use stdio::{Stdin, StdioMode, Stdout, stdio};
pub use target::{BadTarget, ConnectOptions, InProcess, IntoTarget, Target};

use crate::peer::{ConnectionTask, Handler, PeerBuilder, PeerHandle};

/// Two peers joined in process by a `tokio::io::duplex` of `buffer` bytes each way: the first
/// runs `a`, the second `b`. What the harness's embedded target and the tests use.
pub fn in_process<A: Handler, B: Handler>(
    builder: &PeerBuilder,
    buffer: usize,
    a: A,
    b: B,
) -> ((PeerHandle, ConnectionTask), (PeerHandle, ConnectionTask)) {
    let (x, y) = tokio::io::duplex(buffer);
    (builder.connect(x, a), builder.connect(y, b))
}
