//! [`Target`]: the server a [`Client`](super::Client) connects to.

use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;

use crate::mcp::server::Server;

/// The server a [`Client`](super::Client) connects to, and over what.
///
/// From text (`"stdio:python server.py"`, `"tcp:127.0.0.1:7000"`, `"unix:/run/mcp.sock"`,
/// `"http://127.0.0.1:3000/mcp"`) with [`FromStr`], or built:
///
/// ```
/// use mcpwire::mcp::client::Target;
///
/// let t: Target = "stdio:python3 server.py".parse().unwrap();
/// assert_eq!(t, Target::command("sh", ["-c", "python3 server.py"]));
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
    /// A Streamable HTTP endpoint, `http://HOST:PORT/PATH`.
    #[cfg(feature = "http")]
    Http(String),
    /// A server in this process, over an in-memory pipe.
    InProcess(Server),
}

impl Target {
    /// `program` with `args`, run as a child.
    pub fn command<S: Into<String>>(
        program: impl Into<String>,
        args: impl IntoIterator<Item = S>,
    ) -> Self {
        Self::Command { program: program.into(), args: args.into_iter().map(Into::into).collect() }
    }

    /// What the era cache knows the server by (see
    /// [`negotiate`](super::negotiate)); `None` for a server in this process.
    pub(crate) fn cache_key(&self) -> Option<String> {
        match self {
            Self::InProcess(_) => None,
            t => Some(t.to_string()),
        }
    }
}

impl From<Server> for Target {
    fn from(server: Server) -> Self {
        Self::InProcess(server)
    }
}

impl PartialEq for Target {
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (Self::InProcess(a), Self::InProcess(b)) => std::sync::Arc::ptr_eq(&a.0, &b.0),
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
            Self::Command { program, args } => {
                write!(f, "command:{program}")?;
                args.iter().try_for_each(|a| write!(f, " {a:?}"))
            }
            Self::Tcp(a) => write!(f, "tcp:{a}"),
            #[cfg(unix)]
            Self::Unix(p) => write!(f, "unix:{}", p.display()),
            #[cfg(feature = "http")]
            Self::Http(u) => f.write_str(u),
            Self::InProcess(_) => f.write_str("in-process"),
        }
    }
}

/// Why a target's text was not understood.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{0}`: expected stdio:COMMAND, tcp:HOST:PORT, unix:PATH or http://HOST:PORT/PATH")]
pub struct BadTarget(String);

impl FromStr for Target {
    type Err = BadTarget;

    fn from_str(s: &str) -> Result<Self, BadTarget> {
        let bad = || BadTarget(s.to_owned());
        #[cfg(feature = "http")]
        if s.starts_with("http://") {
            return Ok(Self::Http(s.to_owned()));
        }
        let (kind, rest) = s.split_once(':').ok_or_else(bad)?;
        if rest.trim().is_empty() {
            return Err(bad());
        }
        match kind {
            "stdio" => Ok(Self::command("sh", ["-c", rest])),
            "tcp" => Ok(Self::Tcp(rest.to_owned())),
            #[cfg(unix)]
            "unix" => Ok(Self::Unix(rest.into())),
            _ => Err(bad()),
        }
    }
}
