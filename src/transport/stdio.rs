//! The process's own standard input and output as a peer's byte stream, read and written
//! through the runtime's I/O driver where the descriptors allow it.
//!
//! `tokio::io::stdin()` and `stdout()` do each read and each write on the blocking thread
//! pool: a request read from stdin and its answer written to stdout cross threads four times.
//! When standard input or output is a pipe or a Unix socket (what a host that spawns a server
//! gives it), [`stdio`] registers it with the runtime instead, so a read or write is one
//! system call on the task's own thread. A terminal or a file keeps the blocking pool (a
//! terminal is shared with the shell, which must not find it non-blocking; a file cannot be
//! polled).
//!
//! Registering a descriptor makes its open file description non-blocking, which every process
//! that shares it sees; the flags it had are put back when the [`Stdin`] or [`Stdout`] is
//! dropped.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// The process's standard input, from [`stdio`].
#[derive(Debug)]
pub struct Stdin {
    inner: Input,
    _restore: Option<Restore>,
}

/// The process's standard output, from [`stdio`].
#[derive(Debug)]
pub struct Stdout {
    inner: Output,
    _restore: Option<Restore>,
}

#[derive(Debug)]
enum Input {
    #[cfg(unix)]
    Pipe(tokio::net::unix::pipe::Receiver),
    #[cfg(unix)]
    Socket(tokio::net::UnixStream),
    Pool(tokio::io::Stdin),
}

#[derive(Debug)]
enum Output {
    #[cfg(unix)]
    Pipe(tokio::net::unix::pipe::Sender),
    #[cfg(unix)]
    Socket(tokio::net::UnixStream),
    Pool(tokio::io::Stdout),
}

/// How a standard descriptor is read or written: what [`Stdin::mode`] and [`Stdout::mode`]
/// tell.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StdioMode {
    /// A pipe, registered with the runtime's I/O driver.
    Pipe,
    /// A Unix socket, registered with the runtime's I/O driver.
    Socket,
    /// Anything else (a terminal, a file, a TCP socket, a platform without the above): on the
    /// blocking thread pool, as `tokio::io::stdin()` / `stdout()`.
    BlockingPool,
}

/// The process's standard input and output for a peer (`PeerBuilder::spawn(stdin, stdout, …)`),
/// registered with the runtime when they are pipes or Unix sockets (see the module's text).
/// Must be called within a tokio runtime with I/O enabled, as the peer itself.
pub fn stdio() -> (Stdin, Stdout) {
    // Both are looked at before either is registered: when they share one open file
    // description (a socket given as both), the flags kept to put back are the ones it had.
    #[cfg(unix)]
    {
        use std::os::fd::AsFd;
        let (stdin, stdout) = (std::io::stdin(), std::io::stdout());
        let input = unix::probe(stdin.as_fd());
        let output = unix::probe(stdout.as_fd());
        let stdin = match input.and_then(unix::input) {
            Some((inner, restore)) => Stdin { inner, _restore: Some(restore) },
            None => Stdin::pool(),
        };
        let stdout = match output.and_then(unix::output) {
            Some((inner, restore)) => Stdout { inner, _restore: Some(restore) },
            None => Stdout::pool(),
        };
        (stdin, stdout)
    }
    #[cfg(not(unix))]
    (Stdin::pool(), Stdout::pool())
}

impl Stdin {
    fn pool() -> Self {
        Self { inner: Input::Pool(tokio::io::stdin()), _restore: None }
    }

    /// How it is read.
    pub fn mode(&self) -> StdioMode {
        match self.inner {
            #[cfg(unix)]
            Input::Pipe(_) => StdioMode::Pipe,
            #[cfg(unix)]
            Input::Socket(_) => StdioMode::Socket,
            Input::Pool(_) => StdioMode::BlockingPool,
        }
    }
}

impl Stdout {
    fn pool() -> Self {
        Self { inner: Output::Pool(tokio::io::stdout()), _restore: None }
    }

    /// How it is written.
    pub fn mode(&self) -> StdioMode {
        match self.inner {
            #[cfg(unix)]
            Output::Pipe(_) => StdioMode::Pipe,
            #[cfg(unix)]
            Output::Socket(_) => StdioMode::Socket,
            Output::Pool(_) => StdioMode::BlockingPool,
        }
    }
}

impl AsyncRead for Stdin {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        match &mut self.get_mut().inner {
            #[cfg(unix)]
            Input::Pipe(p) => Pin::new(p).poll_read(cx, buf),
            #[cfg(unix)]
            Input::Socket(s) => Pin::new(s).poll_read(cx, buf),
            Input::Pool(s) => Pin::new(s).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for Stdout {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        match &mut self.get_mut().inner {
            #[cfg(unix)]
            Output::Pipe(p) => Pin::new(p).poll_write(cx, buf),
            #[cfg(unix)]
            Output::Socket(s) => Pin::new(s).poll_write(cx, buf),
            Output::Pool(s) => Pin::new(s).poll_write(cx, buf),
        }
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        match &mut self.get_mut().inner {
            #[cfg(unix)]
            Output::Pipe(p) => Pin::new(p).poll_write_vectored(cx, bufs),
            #[cfg(unix)]
            Output::Socket(s) => Pin::new(s).poll_write_vectored(cx, bufs),
            Output::Pool(s) => Pin::new(s).poll_write_vectored(cx, bufs),
        }
    }

    fn is_write_vectored(&self) -> bool {
        match &self.inner {
            #[cfg(unix)]
            Output::Pipe(p) => p.is_write_vectored(),
            #[cfg(unix)]
            Output::Socket(s) => s.is_write_vectored(),
            Output::Pool(s) => s.is_write_vectored(),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match &mut self.get_mut().inner {
            #[cfg(unix)]
            Output::Pipe(p) => Pin::new(p).poll_flush(cx),
            #[cfg(unix)]
            Output::Socket(s) => Pin::new(s).poll_flush(cx),
            Output::Pool(s) => Pin::new(s).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match &mut self.get_mut().inner {
            #[cfg(unix)]
            Output::Pipe(p) => Pin::new(p).poll_shutdown(cx),
            #[cfg(unix)]
            Output::Socket(s) => Pin::new(s).poll_shutdown(cx),
            Output::Pool(s) => Pin::new(s).poll_shutdown(cx),
        }
    }
}

/// Puts a standard descriptor's file status flags back as they were before it was registered.
#[derive(Debug)]
struct Restore {
    #[cfg(unix)]
    fd: std::os::fd::RawFd,
    #[cfg(unix)]
    flags: libc::c_int,
}

#[cfg(unix)]
impl Drop for Restore {
    fn drop(&mut self) {
        // SAFETY: `fcntl(F_SETFL)` takes an integer argument and touches no memory of ours;
        // `fd` is 0 or 1, which this process keeps open for its life, and `flags` are the
        // ones `F_GETFL` read from it before it was registered.
        unsafe { libc::fcntl(self.fd, libc::F_SETFL, self.flags) };
    }
}

#[cfg(unix)]
mod unix {
    use std::os::fd::{AsRawFd, BorrowedFd, OwnedFd};
    use std::os::unix::fs::FileTypeExt;

    use tokio::net::UnixStream;
    use tokio::net::unix::pipe;

    use super::{Input, Output, Restore};

    /// What kind of descriptor a standard one is.
    pub(super) enum Kind {
        Pipe,
        Socket,
    }

    /// A copy of the standard descriptor `fd` (the copy shares its open file description), its
    /// kind, and its flags as they are now: `None` for a terminal, a file, a closed
    /// descriptor, or when it cannot be told.
    pub(super) fn probe(fd: BorrowedFd<'_>) -> Option<(OwnedFd, Kind, Restore)> {
        let file = std::fs::File::from(fd.try_clone_to_owned().ok()?);
        let kind = file.metadata().ok()?.file_type();
        let kind = if kind.is_fifo() {
            Kind::Pipe
        } else if kind.is_socket() {
            Kind::Socket
        } else {
            return None;
        };
        let raw = fd.as_raw_fd();
        // SAFETY: `fcntl(F_GETFL)` takes no argument and touches no memory of ours; `raw` is
        // borrowed for the call, so open.
        let flags = unsafe { libc::fcntl(raw, libc::F_GETFL) };
        if flags < 0 {
            return None;
        }
        Some((OwnedFd::from(file), kind, Restore { fd: raw, flags }))
    }

    pub(super) fn input((fd, kind, restore): (OwnedFd, Kind, Restore)) -> Option<(Input, Restore)> {
        let inner = match kind {
            Kind::Pipe => Input::Pipe(pipe::Receiver::from_owned_fd(fd).ok()?),
            Kind::Socket => Input::Socket(socket(fd)?),
        };
        Some((inner, restore))
    }

    pub(super) fn output(
        (fd, kind, restore): (OwnedFd, Kind, Restore),
    ) -> Option<(Output, Restore)> {
        let inner = match kind {
            Kind::Pipe => Output::Pipe(pipe::Sender::from_owned_fd(fd).ok()?),
            Kind::Socket => Output::Socket(socket(fd)?),
        };
        Some((inner, restore))
    }

    /// A Unix socket (a socket of another family, such as a TCP connection given as stdin by
    /// inetd, stays on the blocking pool).
    fn socket(fd: OwnedFd) -> Option<UnixStream> {
        let std = std::os::unix::net::UnixStream::from(fd);
        std.local_addr().ok()?;
        std.set_nonblocking(true).ok()?;
        UnixStream::from_std(std).ok()
    }
}
