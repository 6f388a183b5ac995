//! [`Target`]: the one way to name a server and the transport that reaches it, for the typed
//! client (`mcpwire::client::Client::connect`) and the `mcpwire load` harness alike.
//!
//! The one file of `transport` that knows HTTP: the rest sits below the Streamable HTTP
//! client (which carries a peer, as they do), and this room sits above both (the code map's
//! `transport::target`), so that an arrow never runs up.

use crate::limits::IN_PROCESS_BUFFER;
use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;
use std::sync::Arc;

use tokio::io::DuplexStream;

use super::ChildStderr;
use crate::limits::DEFAULT_CHILD_STDERR_TAIL;
use crate::peer::{ConnectionTask, Handler, PeerBuilder, PeerHandle};

/// A server and the transport that reaches it.
///
/// From text (`"stdio:python server.py"`, `"tcp:127.0.0.1:7000"`, `"unix:/run/mcp.sock"`,
/// `"http://127.0.0.1:3000/mcp"`) with [`FromStr`], or built:
///
/// ```
/// use mcpwire::transport::Target;
///
/// let t: Target = "stdio:python3 server.py".parse().unwrap();
/// assert_eq!(t, Target::command("sh", ["-c", "exec python3 server.py"]));
/// assert_eq!("tcp:127.0.0.1:7000".parse::<Target>().unwrap(), Target::Tcp("127.0.0.1:7000".into()));
/// ```
#[derive(Clone)]
#[non_exhaustive]
pub enum Target {
    /// A child process whose stdin and stdout carry the messages (stdio transport).
    Command {
        /// The program.
        program: String,
        /// Its arguments.
        args: Vec<String>,
    },
    /// A TCP address, one message per line.
    Tcp(String),
    /// A Unix socket, one message per line.
    #[cfg(unix)]
    Unix(PathBuf),
    /// A Streamable HTTP endpoint, `http://HOST:PORT/PATH` or `https://HOST:PORT/PATH` (with
    /// the `tls` feature).
    #[cfg(feature = "http")]
    Http(String),
    /// A server in this process, over an in-memory pipe.
    InProcess(InProcess),
}

/// A server in this process: a name for reports, and what starts the server on its end of an
/// in-memory pipe ([`Target::in_process`]).
#[derive(Clone)]
pub struct InProcess {
    name: Arc<str>,
    serve: Arc<dyn Fn(DuplexStream) -> ConnectionTask + Send + Sync>,
}

impl InProcess {
    /// The name the target shows as.
    #[must_use]
    pub fn name(&self) -> &str {
        &self.name
    }
}

/// How a [`Target`] is reached, beyond what it names.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ConnectOptions {
    /// Where a child's standard error goes.
    pub stderr: ChildStderr,
    /// The last bytes of a child's stderr kept to say why it exited
    /// ([`DEFAULT_CHILD_STDERR_TAIL`] by default; 0 keeps none).
    pub stderr_tail: usize,
    /// Kept for compatibility: a child now always runs in a process group of its own (on
    /// unix), so a Ctrl-C at the terminal reaches this process and not the server (which this
    /// process then stops, with its group).
    pub own_process_group: bool,
    /// Speaks HTTP/2 with prior knowledge (h2c) to an `http://` target, and only HTTP/2 (ALPN
    /// `h2`) to an `https://` one.
    pub http2: bool,
    /// Headers of the caller's own on every HTTP request (an `Authorization`, say).
    #[cfg(feature = "http")]
    pub headers: Vec<(http::HeaderName, http::HeaderValue)>,
    /// What an `https://` target is checked against and shown (the webpki roots when `None`).
    #[cfg(feature = "tls")]
    pub tls: Option<crate::tls::ClientTls>,
    /// Authorizes with OAuth when an HTTP target asks for it.
    #[cfg(feature = "oauth")]
    pub oauth: Option<crate::auth::OAuth>,
}

impl Default for ConnectOptions {
    fn default() -> Self {
        Self {
            stderr: ChildStderr::default(),
            stderr_tail: DEFAULT_CHILD_STDERR_TAIL,
            own_process_group: false,
            http2: false,
            #[cfg(feature = "http")]
            headers: Vec::new(),
            #[cfg(feature = "tls")]
            tls: None,
            #[cfg(feature = "oauth")]
            oauth: None,
        }
    }
}

impl ConnectOptions {
    /// The last bytes of a child's stderr kept to say why it exited.
    #[must_use]
    pub fn stderr_tail(mut self, bytes: usize) -> Self {
        self.stderr_tail = bytes;
        self
    }

    /// Where a child's standard error goes.
    #[must_use]
    pub fn stderr(mut self, stderr: ChildStderr) -> Self {
        self.stderr = stderr;
        self
    }

    /// Whether a child runs in a process group of its own.
    #[must_use]
    pub fn own_process_group(mut self, own: bool) -> Self {
        self.own_process_group = own;
        self
    }

    /// Whether an `http://` target is spoken to over HTTP/2 with prior knowledge (and an
    /// `https://` one over HTTP/2 only).
    #[must_use]
    pub fn http2(mut self, http2: bool) -> Self {
        self.http2 = http2;
        self
    }

    /// A header sent with every HTTP request.
    #[cfg(feature = "http")]
    #[must_use]
    pub fn header(mut self, name: http::HeaderName, value: http::HeaderValue) -> Self {
        self.headers.push((name, value));
        self
    }

    /// What an `https://` target is checked against and shown.
    #[cfg(feature = "tls")]
    #[must_use]
    pub fn tls(mut self, tls: crate::tls::ClientTls) -> Self {
        self.tls = Some(tls);
        self
    }

    /// Authorizes with `oauth` when an HTTP target answers 401.
    #[cfg(feature = "oauth")]
    #[must_use]
    pub fn oauth(mut self, oauth: crate::auth::OAuth) -> Self {
        self.oauth = Some(oauth);
        self
    }
}

impl Target {
    /// `program` with `args`, run as a child.
    pub fn command<S: Into<String>>(
        program: impl Into<String>,
        args: impl IntoIterator<Item = S>,
    ) -> Self {
        Self::Command { program: program.into(), args: args.into_iter().map(Into::into).collect() }
    }

    /// A server in this process, shown as `name`: `serve` starts it on its end of an in-memory
    /// pipe of [`IN_PROCESS_BUFFER`] bytes each way, once per connection.
    pub fn in_process(
        name: &str,
        serve: impl Fn(DuplexStream) -> ConnectionTask + Send + Sync + 'static,
    ) -> Self {
        Self::InProcess(InProcess { name: name.into(), serve: Arc::new(serve) })
    }

    /// A server in this process running `handler` (a fresh one per connection), with the
    /// peer `builder` makes.
    pub fn in_process_handler<H: Handler>(
        name: &str,
        builder: PeerBuilder,
        handler: impl Fn() -> H + Send + Sync + 'static,
    ) -> Self {
        Self::in_process(name, move |io| builder.connect(io, handler()).1)
    }

    /// Whether the target is a Streamable HTTP endpoint, whose modern requests mirror
    /// arguments in headers.
    #[must_use]
    pub fn is_http(&self) -> bool {
        #[cfg(feature = "http")]
        return matches!(self, Self::Http(_));
        #[cfg(not(feature = "http"))]
        false
    }

    /// Whether the target is a Streamable HTTP endpoint reached over TLS (`https://`).
    #[must_use]
    pub fn is_https(&self) -> bool {
        #[cfg(feature = "http")]
        return matches!(self, Self::Http(url) if url.starts_with("https://"));
        #[cfg(not(feature = "http"))]
        false
    }

    /// Whether the target is a server in this process.
    #[must_use]
    pub fn is_in_process(&self) -> bool {
        matches!(self, Self::InProcess(_))
    }

    /// Starts the transport and a peer on it that runs `handler` for what the server sends.
    /// The returned [`ConnectionTask`] is the client's; a server in this process runs on, detached,
    /// until the pipe closes.
    ///
    /// # Errors
    ///
    /// When the child cannot be spawned, the socket cannot connect, or the URL is not one this
    /// crate can reach.
    pub async fn connect<H: Handler>(
        &self,
        builder: &PeerBuilder,
        handler: H,
        options: &ConnectOptions,
    ) -> std::io::Result<(PeerHandle, ConnectionTask)> {
        Ok(match self {
            Self::Command { program, args } => {
                let mut command = tokio::process::Command::new(program);
                command.args(args);
                let (stderr, tail) = (options.stderr.clone(), options.stderr_tail);
                super::spawn_child_with(builder, command, stderr, tail, handler)?
            }
            Self::Tcp(addr) => super::connect_tcp(builder, addr.as_str(), handler).await?,
            #[cfg(unix)]
            Self::Unix(path) => super::connect_unix(builder, path, handler).await?,
            #[cfg(feature = "http")]
            Self::Http(url) => {
                let mut client = crate::http::HttpClient::new(builder.clone()).http2(options.http2);
                for (name, value) in &options.headers {
                    client = client.header(name.clone(), value.clone());
                }
                #[cfg(feature = "tls")]
                if let Some(tls) = &options.tls {
                    client = client.tls(tls.clone());
                }
                #[cfg(feature = "oauth")]
                if let Some(oauth) = &options.oauth {
                    client = client.oauth(oauth.clone());
                }
                client.connect(url, handler)?
            }
            Self::InProcess(server) => {
                let (ours, theirs) = tokio::io::duplex(IN_PROCESS_BUFFER);
                (server.serve)(theirs).detach();
                builder.connect(ours, handler)
            }
        })
    }

    /// What an era cache knows the server by; `None` for a server in this process.
    #[must_use]
    pub fn cache_key(&self) -> Option<String> {
        match self {
            Self::InProcess(_) => None,
            t => Some(t.to_string()),
        }
    }
}

impl PartialEq for Target {
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (Self::InProcess(a), Self::InProcess(b)) => Arc::ptr_eq(&a.serve, &b.serve),
            (Self::InProcess(_), _) | (_, Self::InProcess(_)) => false,
            (a, b) => a.to_string() == b.to_string(),
        }
    }
}

impl fmt::Debug for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Command { program, args } => match (program.as_str(), args.as_slice()) {
                ("sh", [c, cmd]) if c == "-c" && cmd.starts_with("exec ") => {
                    write!(f, "stdio:{}", &cmd["exec ".len()..])
                }
                _ => {
                    write!(f, "command:{program}")?;
                    args.iter().try_for_each(|a| write!(f, " {a:?}"))
                }
            },
            Self::Tcp(a) => write!(f, "tcp:{a}"),
            #[cfg(unix)]
            Self::Unix(p) => write!(f, "unix:{}", p.display()),
            #[cfg(feature = "http")]
            Self::Http(u) => f.write_str(u),
            Self::InProcess(s) => f.write_str(&s.name),
        }
    }
}

/// Why a target's text was not understood: what was expected, or the feature a target of
/// its kind needs (an `http://` target in a build without `http`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{text}`: {why}")]
pub struct BadTarget {
    text: String,
    why: &'static str,
}

/// What a target's text may be, in this build.
const EXPECTED: &str = if cfg!(feature = "tls") {
    "expected stdio:COMMAND, tcp:HOST:PORT, unix:PATH, http://HOST:PORT/PATH or https://HOST:PORT/PATH"
} else if cfg!(feature = "http") {
    "expected stdio:COMMAND, tcp:HOST:PORT, unix:PATH or http://HOST:PORT/PATH"
} else {
    "expected stdio:COMMAND, tcp:HOST:PORT or unix:PATH"
};

impl BadTarget {
    fn of(text: &str) -> Self {
        let why = if text.starts_with("http://") && !cfg!(feature = "http") {
            "http:// targets need mcpwire's `http` feature"
        } else if text.starts_with("https://") && !cfg!(feature = "tls") {
            "https:// targets need mcpwire's `tls` feature"
        } else {
            EXPECTED
        };
        Self { text: text.to_owned(), why }
    }
}

impl FromStr for Target {
    type Err = BadTarget;

    /// `stdio:COMMAND` runs `sh -c "exec COMMAND"` (so signals reach the server, not a shell).
    fn from_str(s: &str) -> Result<Self, BadTarget> {
        let bad = || BadTarget::of(s);
        #[cfg(feature = "http")]
        if s.starts_with("http://") || (cfg!(feature = "tls") && s.starts_with("https://")) {
            return Ok(Self::Http(s.to_owned()));
        }
        let (kind, rest) = s.split_once(':').ok_or_else(bad)?;
        if rest.trim().is_empty() {
            return Err(bad());
        }
        match kind {
            "stdio" => Ok(Self::command("sh", ["-c".to_owned(), format!("exec {rest}")])),
            "tcp" => Ok(Self::Tcp(rest.to_owned())),
            #[cfg(unix)]
            "unix" => Ok(Self::Unix(rest.into())),
            _ => Err(bad()),
        }
    }
}

/// What names a [`Target`]: a target, or its text.
pub trait IntoTarget {
    /// The target.
    ///
    /// # Errors
    ///
    /// When the text names no target.
    fn into_target(self) -> Result<Target, BadTarget>;
}

impl IntoTarget for Target {
    fn into_target(self) -> Result<Target, BadTarget> {
        Ok(self)
    }
}

impl IntoTarget for &str {
    fn into_target(self) -> Result<Target, BadTarget> {
        self.parse()
    }
}

impl IntoTarget for &String {
    fn into_target(self) -> Result<Target, BadTarget> {
        self.parse()
    }
}

impl IntoTarget for String {
    fn into_target(self) -> Result<Target, BadTarget> {
        self.parse()
    }
}

#[cfg(test)]
mod tests;
