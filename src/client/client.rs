//! [`Client`]: a host's connection to one MCP server, either era, over any transport.

use crate::limits::DEFAULT_MAX_PAGES;
use crate::sync::RwLocked;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use super::callbacks::{CallbackHandler, Callbacks};
use super::decoded::Decoded;
use super::error::ClientError;
use super::error::Stage;
use super::negotiate::Progress;
use super::settle::{Described, settle};
use super::{ClientOptions, Negotiated};
use crate::limits::DEFAULT_CONNECT_TIMEOUT;
use crate::mcp::Era;
use crate::mcp::input_rounds::InputLimits;
use crate::mcp::negotiation::VersionChoice;
use crate::mcp::types::{
    CreateMessageParams, CreateMessageResult, ElicitParams, ElicitResult, Implementation,
    LoggingLevel, LoggingMessageParams, Root, ServerCapabilities,
};
use crate::peer::{ConnectionTask, PeerBuilder, PeerHandle, RpcError};
use crate::transport::{ChildStderr, ConnectOptions, IntoTarget};

/// A connection to one MCP server, from a host.
///
/// [`Client::connect`] starts the transport the [`Target`](crate::transport::Target) names, settles the era (a
/// `server/discover` probe, and the legacy `initialize` handshake when the server is of the
/// legacy era; see [`negotiate`](super::negotiate)), and from then on every call carries what
/// its era needs: the `_meta` envelope of a modern request (and over HTTP its mirrored
/// headers), the session of a legacy one. Cheap to clone; the connection closes when the last
/// clone is dropped.
///
/// ```no_run
/// use mcpwire::client::Client;
///
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// let client = Client::connect("stdio:python3 server.py").await?;
/// for tool in client.list_tools().await? {
///     println!("{}", tool.get().name);
/// }
/// let r = client.call_tool("echo", serde_json::json!({ "message": "hi" })).await?;
/// println!("{:?}", r.get().content[0].as_text());
/// # Ok::<(), mcpwire::client::ClientError>(())
/// # }).unwrap();
/// ```
#[derive(Clone)]
pub struct Client(pub(crate) Arc<Inner>);

pub(crate) struct Inner {
    pub(crate) peer: PeerHandle,
    pub(crate) agreed: Negotiated,
    pub(crate) callbacks: Arc<Callbacks>,
    described: Decoded<Described<'static>>,
    pub(crate) limits: InputLimits,
    pub(crate) timeout: Option<Duration>,
    pub(crate) max_pages: usize,
    /// How tasks are polled.
    pub(crate) task_polling: super::polling::TaskPolling,
    /// The least severe log message wanted, named in each modern request's `_meta`.
    pub(crate) log_level: Option<LoggingLevel>,
    /// Over Streamable HTTP in the modern era: set once a tool list taught the transport the
    /// tools' `x-mcp-header` annotations (unset: a call lists the tools first).
    pub(crate) headers_learnt: Option<tokio::sync::OnceCell<()>>,
    /// The client's connection (its task, and a child process), awaited by [`Client::close`].
    connection: tokio::sync::Mutex<ConnectionTask>,
}

impl Drop for Inner {
    fn drop(&mut self) {
        self.peer.close();
    }
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client")
            .field("era", &self.era())
            .field("version", &self.protocol_version())
            .field("server", &self.server_info())
            .finish_non_exhaustive()
    }
}

impl Client {
    /// Connects to `target` with the defaults of [`ClientBuilder`].
    ///
    /// # Errors
    ///
    /// As [`ClientBuilder::connect`].
    ///
    /// ```
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// use mcpwire::{client::Client, mcp::Era, server::Server};
    /// // A server in this process; `"stdio:CMD"`, `"tcp:HOST:PORT"`, `"unix:PATH"` and
    /// // `"http://HOST:PORT/PATH"` name the others.
    /// let client = Client::connect(Server::builder("demo", "1.0").build()).await?;
    /// assert_eq!(client.era(), Era::Modern);
    /// assert_eq!(client.protocol_version(), "2026-07-28");
    /// assert_eq!(client.server_info().unwrap().name, "demo");
    /// # Ok::<(), mcpwire::client::ClientError>(())
    /// # }).unwrap();
    /// ```
    pub async fn connect(target: impl IntoTarget) -> Result<Self, ClientError> {
        Self::builder().connect(target).await
    }

    /// A client to configure: its name, the version it speaks, what it does when the server
    /// asks for input.
    #[must_use]
    pub fn builder() -> ClientBuilder {
        ClientBuilder::default()
    }

    /// The server's era.
    #[must_use]
    pub fn era(&self) -> Era {
        self.0.agreed.era()
    }

    /// The protocol version spoken now.
    #[must_use]
    pub fn protocol_version(&self) -> String {
        self.0.agreed.version()
    }

    /// The server's name and version, when it gave them (`serverInfo` of `initialize`, or the
    /// `serverInfo` in the `_meta` of `server/discover`).
    #[must_use]
    pub fn server_info(&self) -> Option<&Implementation<'_>> {
        self.0.described.get().server_info.as_ref()
    }

    /// What the server offers.
    #[must_use]
    pub fn capabilities(&self) -> &ServerCapabilities<'_> {
        &self.0.described.get().capabilities
    }

    /// The server's instructions for the model, if any.
    #[must_use]
    pub fn instructions(&self) -> Option<&str> {
        self.0.described.get().instructions.as_deref()
    }

    /// How many times the server ended the legacy session and the client opened a new one
    /// (`initialize` again, with the same client info and capabilities), sending the request
    /// that found the session gone once more in it. 0 in the modern era, which has no
    /// sessions. What the old session held is gone: the server's subscriptions, its log
    /// level, and any notification sent while it was being lost (not sent again).
    #[must_use]
    pub fn session_renewals(&self) -> u64 {
        self.0.agreed.session_renewals()
    }

    /// The peer under the client: requests of the raw layer, counters.
    #[must_use]
    pub fn peer(&self) -> &PeerHandle {
        &self.0.peer
    }

    /// Replaces the roots the client offers and, in a legacy session, tells the server
    /// (`notifications/roots/list_changed`).
    ///
    /// # Errors
    ///
    /// When the client was built without [`ClientBuilder::roots`], or the connection is
    /// closed.
    ///
    /// ```
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// use mcpwire::{client::Client, mcp::types::*, server::Server};
    /// let server = Server::builder("demo", "1")
    ///     .tool(Tool::new("roots"), |call| async move {
    ///         let answer = call.ask("r", InputRequest::list_roots()).await?;
    ///         let a: ListRootsResult<'_> = answer.decode()?;
    ///         Ok(CallToolResult::text(a.roots[0].uri.to_string()))
    ///     })
    ///     .build();
    /// let client = Client::builder()
    ///     .roots([Root { uri: "file:///a".into(), name: None }])
    ///     .connect(server)
    ///     .await?;
    /// client.set_roots(vec![Root { uri: "file:///b".into(), name: None }]).await?;
    /// let r = client.call_tool("roots", mcpwire::client::NO_ARGUMENTS).await?;
    /// assert_eq!(r.get().content[0].as_text(), Some("file:///b"));
    /// # Ok::<(), mcpwire::client::ClientError>(())
    /// # }).unwrap();
    /// ```
    pub async fn set_roots(&self, roots: Vec<Root<'static>>) -> Result<(), ClientError> {
        let Some(held) = &self.0.callbacks.roots else {
            return Err(ClientError::invalid("roots/list", "this client offers no roots"));
        };
        *held.write_locked() = roots;
        if self.era() == Era::Legacy {
            self.notify("notifications/roots/list_changed").await?;
        }
        Ok(())
    }

    /// Closes the connection and waits until it has ended: calls in progress fail with
    /// [`ClientError::Closed`], what was queued is written, a legacy session over HTTP is
    /// ended (its DELETE answered, or failed, or given up after 2 s), and a child server has
    /// exited (or been stopped with its process group, see
    /// [`spawn_child`](crate::transport::spawn_child)). Returning from `main` after it loses
    /// nothing.
    pub async fn close(&self) {
        self.0.peer.close();
        self.0.connection.lock().await.closed().await;
    }
}

/// How a [`Client`] is made.
pub struct ClientBuilder {
    callbacks: Callbacks,
    peer: PeerBuilder,
    connect: ConnectOptions,
    settings: Settings,
}

/// What a client keeps of its builder.
struct Settings {
    options: ClientOptions,
    connect_timeout: Duration,
    limits: InputLimits,
    timeout: Option<Duration>,
    max_pages: usize,
    log_level: Option<LoggingLevel>,
    task_polling: super::polling::TaskPolling,
}

impl Default for ClientBuilder {
    fn default() -> Self {
        Self {
            callbacks: Callbacks::default(),
            peer: PeerBuilder::new(),
            connect: ConnectOptions::default(),
            settings: Settings {
                options: ClientOptions::new("mcpwire", env!("CARGO_PKG_VERSION")),
                connect_timeout: DEFAULT_CONNECT_TIMEOUT,
                limits: InputLimits::default(),
                timeout: None,
                max_pages: DEFAULT_MAX_PAGES,
                log_level: None,
                task_polling: super::polling::TaskPolling::default(),
            },
        }
    }
}

impl ClientBuilder {
    /// The client's name and version, as the server sees them (`mcpwire` and this crate's
    /// version by default).
    #[must_use]
    pub fn name(mut self, name: &str, version: &str) -> Self {
        self.settings.options.client_info =
            serde_json::json!({ "name": name, "version": version }).to_string();
        self
    }

    /// The protocol version to speak: `auto` (the default: the server's era is found, the
    /// newest version both speak is used) or one version.
    #[must_use]
    pub fn protocol_version(mut self, version: VersionChoice) -> Self {
        self.settings.options.version = version;
        self
    }

    /// How long the era probe waits before it takes a silent server for a legacy one.
    #[must_use]
    pub fn probe_timeout(mut self, timeout: Duration) -> Self {
        self.settings.options.probe_timeout = timeout;
        self
    }

    /// Answers the server's elicitations (form and URL modes), as legacy requests and as
    /// modern input requests alike; declares the `elicitation` capability.
    ///
    /// ```
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// use mcpwire::{client::Client, mcp::types::*, server::Server};
    /// let form = r#"{"type":"object","properties":{"name":{"type":"string"}}}"#;
    /// let server = Server::builder("demo", "1")
    ///     .tool(Tool::new("hello"), move |call| async move {
    ///         let answer = call.ask("who", InputRequest::elicit(&ElicitParams::form("Name?", form))).await?;
    ///         let answer: ElicitResult<'_> = answer.decode()?;
    ///         Ok(CallToolResult::text(format!("hello {}", answer.text("name")?.unwrap_or_default())))
    ///     })
    ///     .build();
    /// // Both eras: a legacy server's `elicitation/create` request, a modern input round.
    /// for version in ["2025-11-25", "2026-07-28"] {
    ///     let client = Client::builder()
    ///         .protocol_version(version.parse().unwrap())
    ///         .on_elicit(|asked| async move {
    ///             assert_eq!(asked.get().message, "Name?");
    ///             Ok(ElicitResult { action: ElicitAction::Accept, content: Some(Raw::owned(r#"{"name":"Ada"}"#.into()).unwrap()) })
    ///         })
    ///         .connect(server.clone())
    ///         .await?;
    ///     let r = client.call_tool("hello", mcpwire::client::NO_ARGUMENTS).await?;
    ///     assert_eq!(r.get().content[0].as_text(), Some("hello Ada"));
    /// }
    /// # Ok::<(), mcpwire::client::ClientError>(())
    /// # }).unwrap();
    /// ```
    #[must_use]
    pub fn on_elicit<F, Fut>(mut self, f: F) -> Self
    where
        F: Fn(Decoded<ElicitParams<'static>>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<ElicitResult<'static>, RpcError>> + Send + 'static,
    {
        self.callbacks.elicit = Some(Arc::new(move |p| Box::pin(f(p))));
        self
    }

    /// Answers the server's sampling requests; declares the `sampling` capability.
    ///
    /// ```
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// use mcpwire::{client::Client, mcp::types::*, server::Server};
    /// let server = Server::builder("demo", "1")
    ///     .tool(Tool::new("ask_model"), |call| async move {
    ///         let a = call.ask("m", InputRequest::sample(&CreateMessageParams::user("2+2?", 5))).await?;
    ///         let a: CreateMessageResult<'_> = a.decode()?;
    ///         Ok(CallToolResult::text(a.content.as_text().unwrap_or("").to_owned()))
    ///     })
    ///     .build();
    /// let client = Client::builder()
    ///     .on_sample(|_asked| async move {
    ///         Ok(CreateMessageResult { role: Role::Assistant, content: Content::text("4"), model: "m".into(), stop_reason: None })
    ///     })
    ///     .connect(server)
    ///     .await?;
    /// let r = client.call_tool("ask_model", mcpwire::client::NO_ARGUMENTS).await?;
    /// assert_eq!(r.get().content[0].as_text(), Some("4"));
    /// # Ok::<(), mcpwire::client::ClientError>(())
    /// # }).unwrap();
    /// ```
    #[must_use]
    pub fn on_sample<F, Fut>(mut self, f: F) -> Self
    where
        F: Fn(Decoded<CreateMessageParams<'static>>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<CreateMessageResult<'static>, RpcError>> + Send + 'static,
    {
        self.callbacks.sample = Some(Arc::new(move |p| Box::pin(f(p))));
        self
    }

    /// Offers these roots (`roots/list`); declares the `roots` capability.
    /// [`Client::set_roots`] changes them later.
    #[must_use]
    pub fn roots(mut self, roots: impl IntoIterator<Item = Root<'static>>) -> Self {
        self.callbacks.roots = Some(std::sync::RwLock::new(roots.into_iter().collect()));
        self
    }

    /// Declares the tasks extension (`io.modelcontextprotocol/tasks`): the server may then run
    /// a tool call as a task, which [`Client::call_tool`] polls to its end (answering its input
    /// requests with the callbacks registered here) and [`Client::start_tool`] hands over as a
    /// [`TaskHandle`](super::TaskHandle). Off by default.
    #[must_use]
    pub fn tasks(mut self, on: bool) -> Self {
        self.callbacks.tasks = on;
        self
    }

    /// How tasks are polled ([`TaskPolling::default`](super::polling::TaskPolling::default) otherwise).
    #[must_use]
    pub fn task_polling(mut self, polling: super::polling::TaskPolling) -> Self {
        self.settings.task_polling = polling;
        self
    }

    /// Takes the server's log messages (`notifications/message`).
    #[must_use]
    pub fn on_log(mut self, f: impl Fn(&LoggingMessageParams<'_>) + Send + Sync + 'static) -> Self {
        self.callbacks.log = Some(Arc::new(f));
        self
    }

    /// Asks for the server's log messages at `level` and above: a legacy session's
    /// `logging/setLevel` once connected, the `_meta` of each modern request. [`on_log`](Self::on_log) takes them.
    #[must_use]
    pub fn log_level(mut self, level: LoggingLevel) -> Self {
        self.settings.log_level = Some(level);
        self
    }

    /// The timeout of each call unless its [`CallOptions`](super::CallOptions) give one
    /// (the peer's, [`DEFAULT_REQUEST_TIMEOUT`](crate::limits::DEFAULT_REQUEST_TIMEOUT), by
    /// default; `None` waits forever).
    #[must_use]
    pub fn timeout(mut self, timeout: Option<Duration>) -> Self {
        self.settings.timeout = timeout;
        self.peer = self.peer.request_timeout(timeout);
        self
    }

    /// Bounds the input rounds of a modern call (see [`InputLimits`]).
    #[must_use]
    pub fn input_limits(mut self, limits: InputLimits) -> Self {
        self.settings.limits = limits;
        self
    }

    /// The most pages a `list_*` call follows ([`DEFAULT_MAX_PAGES`] by default).
    #[must_use]
    pub fn max_pages(mut self, n: usize) -> Self {
        self.settings.max_pages = n.max(1);
        self
    }

    /// The peer's settings: frame and in-flight limits, request timeout.
    #[must_use]
    pub fn peer(mut self, peer: PeerBuilder) -> Self {
        self.peer = peer;
        self
    }

    /// Where a child server's stderr goes (`tracing` by default).
    #[must_use]
    pub fn stderr(mut self, stderr: ChildStderr) -> Self {
        self.connect.stderr = stderr;
        self
    }

    /// The last bytes of a child server's stderr kept to say why it exited, in
    /// [`ClientError::Closed`]'s [`CloseReason::Exited`](crate::peer::CloseReason::Exited)
    /// ([`DEFAULT_CHILD_STDERR_TAIL`](crate::limits::DEFAULT_CHILD_STDERR_TAIL), 4 KiB, by
    /// default; 0 keeps none). Every line still goes where [`stderr`](Self::stderr) says.
    #[must_use]
    pub fn stderr_tail(mut self, bytes: usize) -> Self {
        self.connect.stderr_tail = bytes;
        self
    }

    /// A header sent with every HTTP request to an `http://` or `https://` target (an
    /// `Authorization`, say); other transports have no headers.
    #[cfg(feature = "http")]
    #[must_use]
    pub fn header(mut self, name: http::HeaderName, value: http::HeaderValue) -> Self {
        self.connect.headers.push((name, value));
        self
    }

    /// What an `https://` target is checked against and shown
    /// ([`ClientTls::builder`](crate::tls::ClientTls::builder): extra CAs, a client
    /// certificate); the webpki roots when not given.
    #[cfg(feature = "tls")]
    #[must_use]
    pub fn tls(mut self, tls: crate::tls::ClientTls) -> Self {
        self.connect.tls = Some(tls);
        self
    }

    /// Authorizes with `oauth` (OAuth 2.1, as MCP's authorization asks) when an HTTP target
    /// answers 401, and steps up on 403 `insufficient_scope`.
    #[cfg(feature = "oauth")]
    #[must_use]
    pub fn oauth(mut self, oauth: crate::auth::OAuth) -> Self {
        self.connect.oauth = Some(oauth);
        self
    }

    /// Speaks only HTTP/2 to an HTTP target: with prior knowledge to `http://`, by ALPN to
    /// `https://` (by default HTTP/1.1 to `http://`, and what ALPN agrees to `https://`).
    #[cfg(feature = "http")]
    #[must_use]
    pub fn http2(mut self, on: bool) -> Self {
        self.connect.http2 = on;
        self
    }

    /// The bound on the whole of [`connect`](Self::connect): starting the transport, the era
    /// probe, the legacy handshake ([`DEFAULT_CONNECT_TIMEOUT`], 30 s, by default). Past it
    /// connecting fails with [`ClientError::ConnectTimeout`] naming the step that was waiting;
    /// each step's own bound ([`probe_timeout`](Self::probe_timeout), `initialize`'s 30 s)
    /// still applies within it.
    #[must_use]
    pub fn connect_timeout(mut self, timeout: Duration) -> Self {
        self.settings.connect_timeout = timeout;
        self
    }

    /// Starts the transport `target` names and settles the era with the server, within
    /// [`connect_timeout`](Self::connect_timeout).
    ///
    /// # Errors
    ///
    /// [`ClientError::Connect`] when the transport cannot start, [`ClientError::Era`] when
    /// the server speaks no version this client does (or not the era pinned),
    /// [`ClientError::ConnectTimeout`] past the connect timeout, and the errors of a call
    /// when the negotiation's requests fail (each naming its [`Stage`](super::Stage)).
    pub async fn connect(self, target: impl IntoTarget) -> Result<Client, ClientError> {
        let target = target
            .into_target()
            .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidInput, e))?;
        let deadline = tokio::time::Instant::now() + self.settings.connect_timeout;
        let callbacks = Arc::new(self.callbacks);
        let handler = CallbackHandler(callbacks.clone());
        let started = target.connect(&self.peer, handler, &self.connect);
        let (peer, connection) = tokio::time::timeout_at(deadline, started)
            .await
            .map_err(|_| ClientError::ConnectTimeout { stage: Stage::Start })??;
        let key = target.cache_key();
        let http = target.is_http();
        Self::finish(callbacks, self.settings, deadline, http, peer, connection, key).await
    }

    /// Talks MCP over `io`, one message per line (a transport of the host's own, a pipe to a
    /// server in this process), and settles the era with the server at the other end.
    ///
    /// # Errors
    ///
    /// As [`ClientBuilder::connect`].
    pub async fn connect_stream<T>(self, io: T) -> Result<Client, ClientError>
    where
        T: tokio::io::AsyncRead + tokio::io::AsyncWrite + Send + 'static,
    {
        let deadline = tokio::time::Instant::now() + self.settings.connect_timeout;
        let callbacks = Arc::new(self.callbacks);
        let (peer, connection) = self.peer.connect(io, CallbackHandler(callbacks.clone()));
        Self::finish(callbacks, self.settings, deadline, false, peer, connection, None).await
    }

    /// Settles the era over a started transport, by `deadline`.
    async fn finish(
        callbacks: Arc<Callbacks>,
        settings: Settings,
        deadline: tokio::time::Instant,
        http: bool,
        peer: PeerHandle,
        connection: ConnectionTask,
        key: Option<String>,
    ) -> Result<Client, ClientError> {
        let progress = Progress::default();
        let mut options = settings.options.clone();
        options.capabilities = callbacks.capabilities();
        let settle = settle(&options, settings.log_level, &peer, key.as_deref(), &progress);
        let (agreed, described) = match tokio::time::timeout_at(deadline, settle).await {
            Ok(settled) => settled?,
            Err(_) => {
                let stage = progress.method().map_or(Stage::Start, Stage::of);
                return Err(ClientError::ConnectTimeout { stage });
            }
        };
        let Settings { limits, timeout, max_pages, log_level, task_polling, .. } = settings;
        let mirrors = http && agreed.era() == Era::Modern;
        Ok(Client(Arc::new(Inner {
            log_level: log_level.filter(|_| agreed.era() == Era::Modern),
            headers_learnt: mirrors.then(tokio::sync::OnceCell::new),
            peer,
            agreed,
            callbacks,
            described,
            limits,
            timeout,
            max_pages,
            task_polling,
            connection: tokio::sync::Mutex::new(connection),
        })))
    }
}
