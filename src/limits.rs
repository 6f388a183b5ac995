//! Every bound mcpwire enforces, in one place and at one path: each default with the abuse it
//! prevents. The sections follow the layers: the codec (one frame), the peer (one connection),
//! Streamable HTTP (sessions, connections, POSTs), then the roles and extensions above them
//! (tasks, the bridge, skills, MCP's input rounds, the typed server and client, OAuth).
//! [`Limits`] carries the ones a host sets per connection; the HTTP server and client, the
//! bridge, the typed server and the OAuth types take theirs on their builders.
//!
//! Four numbers are properties of a format rather than bounds chosen against abuse, and stay
//! beside the type they describe: [`MAX_ID`](crate::mux::MAX_ID) (the largest id a JSON number
//! carries exactly), [`MAX_LENGTH_DIGITS`](crate::framing::content_length::MAX_LENGTH_DIGITS)
//! (the digits any length below the frame ceiling needs),
//! [`LINE_SLACK`](crate::framing::sse::LINE_SLACK) (the `data: ` before a frame of the limit's
//! length) and [`MAX_COMPLETION_VALUES`](crate::mcp::types::MAX_COMPLETION_VALUES) (MCP's own
//! cap on a completion result).

use std::time::Duration;

// ---- Codec: what one frame may make the decoder hold or walk. ----

/// Default for [`Limits::max_frame_bytes`]: 16 MiB.
///
/// A peer that never sends a newline would otherwise make the reader buffer without end; the
/// largest MCP messages seen in practice (a resource read of a base64 image) stay well below.
/// The parser keeps its buffers at their high-water mark, a small multiple of the largest frame
/// decoded, so this bound also caps the codec's own memory.
pub const DEFAULT_MAX_FRAME_BYTES: usize = 16 * 1024 * 1024;

/// Default for [`Limits::max_depth`]: 128 levels of arrays and objects.
///
/// Deep nesting costs parser stack and, in whoever walks the value later (serde, `Drop`,
/// `Debug`), native stack; 128 is serde_json's own recursion limit, so anything we accept
/// a serde_json consumer can also read.
pub const DEFAULT_MAX_DEPTH: usize = 128;

/// Default for [`Limits::max_batch_len`]: 1,024 elements.
///
/// Each batch element becomes a request that must be answered; a bound keeps one frame from
/// fanning out into an unbounded amount of work and an unbounded reply.
pub const DEFAULT_MAX_BATCH_LEN: usize = 1024;

// ---- Peer: what one connection may hold, and how long it waits. ----

/// Default for [`Limits::max_in_flight`]: 4,096 outbound requests awaiting their responses.
///
/// Each one holds a waiter and a slot until it is answered; past the bound a caller waits for a
/// slot instead of growing the table, so a host that fires requests in a loop cannot make the
/// table, or the peer that must answer them all, grow without end.
pub const DEFAULT_MAX_IN_FLIGHT: usize = 4096;

/// Default for [`Limits::max_handlers`]: 256 inbound requests handled at once.
///
/// Past the bound the peer stops reading until a handler finishes, so a client that pipelines
/// requests faster than they are answered is slowed by the transport's own flow control instead
/// of making the server spawn work without end.
pub const DEFAULT_MAX_HANDLERS: usize = 256;

/// Default for [`Limits::max_queued_requests`]: 4,096 inbound requests held beyond those
/// running.
///
/// Requests past [`Limits::max_handlers`] wait their turn while the peer keeps reading (so the
/// other side's cancellations and responses still get through); past this bound the peer stops
/// reading until one finishes, so a client pipelining without end cannot make the queue grow
/// without end. It is as large as the default [`Limits::max_in_flight`], so two peers with
/// default limits that flood each other never both stop reading.
pub const DEFAULT_MAX_QUEUED_REQUESTS: usize = 4096;

/// Default for [`Limits::max_held_request_bytes`]: 64 MiB of request frames held at once.
///
/// The count bounds alone would let thousands of 16 MiB frames be held (running or waiting);
/// this caps what they hold together.
pub const DEFAULT_MAX_HELD_REQUEST_BYTES: usize = 64 * 1024 * 1024;

/// Default for [`Limits::max_write_queue_bytes`]: 4 MiB of encoded messages waiting to be
/// written.
///
/// A peer that stops reading makes our writes stall; past the bound, senders (requests,
/// handlers' replies, and through them reading) wait instead of buffering without end.
pub const DEFAULT_MAX_WRITE_QUEUE_BYTES: usize = 4 * 1024 * 1024;

/// Default for [`PeerBuilder::request_timeout`](crate::peer::PeerBuilder::request_timeout): 60
/// seconds, as the MCP SDKs use.
pub const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(60);

/// Default for [`PeerBuilder::unaddressed_replies_per_second`](crate::peer::PeerBuilder::unaddressed_replies_per_second): 4.
///
/// Replies to garbage carry `"id": null`, so nobody can match them; answering every one would let
/// two peers that both answer garbage with garbage flood each other.
pub const DEFAULT_UNADDRESSED_REPLIES_PER_SECOND: u32 = 4;

/// Bytes of control messages (error replies to invalid messages, cancellations) the write buffer
/// takes past [`Limits::max_write_queue_bytes`], so reading goes on while handlers wait for room.
/// Only once these too are spent has the other side stopped reading altogether, and reading
/// stops as well.
pub const CONTROL_BUDGET_BYTES: usize = 256 * 1024;

/// Notifications waiting for their handler (handled one at a time, in order); past this, reading
/// stops. Generous, because a notification handler may be awaiting a response that only reading
/// can deliver.
pub const NOTIFICATIONS_HELD: usize = 4096;

/// The frame bytes of the notifications waiting for their handler; past this, reading stops.
pub const NOTIFICATION_BYTES_HELD: usize = 16 * 1024 * 1024;

/// How long the connection keeps answering the other side's requests after its end of stream,
/// and how long the writer keeps trying to flush once the connection is closing: a peer that
/// stopped reading must not keep a closed connection alive forever.
pub const CLOSE_GRACE: Duration = Duration::from_secs(5);

/// The writer's buffer is dropped after a write when it grew past this, so one huge message
/// does not pin its memory for the connection's life.
pub const WRITE_BUFFER_KEEP: usize = 1 << 20;

/// How long a child gets to exit by itself once its stdin is closed, before it is killed.
pub const CHILD_EXIT_GRACE: Duration = Duration::from_secs(2);

/// Largest value accepted for [`Limits::max_in_flight`], and the most requests an
/// [`Outbound`](crate::mux::Outbound) table holds: 2^20. It leaves 33 bits of generation per
/// slot in a 53-bit id, so a slot retires only after 2^33 - 1 requests.
pub const MAX_IN_FLIGHT_CEILING: usize = 1 << 20;

/// Largest value accepted for [`Limits::max_frame_bytes`]: frame offsets are kept as `u32`
/// and simd-json refuses documents of 4 GiB or more.
pub const MAX_FRAME_BYTES_CEILING: usize = (u32::MAX as usize) - 1024;

// ---- Streamable HTTP: what the server and client hold per session, connection and POST. ----

/// Default for [`HttpServer::max_sessions`](crate::http::HttpServer::max_sessions): each session
/// holds a peer and its buffers, so the table is bounded; a full table ends its least recently
/// used idle session for a new one, so `initialize` requests never followed up cannot lock new
/// clients out.
pub const DEFAULT_MAX_SESSIONS: usize = 256;

/// Default for [`HttpServer::session_idle_timeout`](crate::http::HttpServer::session_idle_timeout): 10 minutes.
pub const DEFAULT_SESSION_IDLE_TIMEOUT: Duration = Duration::from_secs(600);

/// Default for [`HttpServer::max_connections`](crate::http::HttpServer::max_connections): what a
/// tokio server holds easily (an idle connection costs a task, a socket and hyper's buffers, a
/// few KiB); the process's open-file limit lowers it. Past it the oldest idle connection is shed,
/// so idle or slow connections cannot fill the table against new clients.
pub const DEFAULT_MAX_CONNECTIONS: usize = 16_384;

/// Default for [`HttpServer::max_body_bytes`](crate::http::HttpServer::max_body_bytes): 256 MiB.
pub const DEFAULT_MAX_BODY_BYTES: usize = 256 * 1024 * 1024;

/// Default for [`HttpServer::header_timeout`](crate::http::HttpServer::header_timeout): 10
/// seconds for a request's headers, not extended by dribbling (slowloris), shorter than the
/// body's bound since headers are small.
pub const DEFAULT_HEADER_TIMEOUT: Duration = Duration::from_secs(10);

/// Default for [`HttpServer::max_tls_handshakes`](crate::http::HttpServer::max_tls_handshakes):
/// TLS handshakes in progress at once. A handshake costs the server a key exchange and a
/// signature; past the bound the oldest handshake still in progress is closed for the new
/// one, so a flood of half-open TLS connections pushes itself out while an honest client's
/// handshake, a round trip or two, completes.
pub const DEFAULT_MAX_TLS_HANDSHAKES: usize = 256;

/// Default for [`HttpServer::tls_handshake_timeout`](crate::http::HttpServer::tls_handshake_timeout):
/// 10 seconds from the accept to the end of the TLS handshake, as for a request's headers.
pub const DEFAULT_TLS_HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

// ---- HTTP/2 (cleartext, prior knowledge) on the server's port: what one connection may open. ----

/// Default for [`HttpServer::http2_max_concurrent_streams`](crate::http::HttpServer::http2_max_concurrent_streams):
/// 256 streams (requests) open at once on one HTTP/2 connection, advertised as
/// `SETTINGS_MAX_CONCURRENT_STREAMS`.
///
/// Each stream is a request being answered (a task, its headers, its body's share of the
/// windows); without a bound one connection could open thousands and take the server's
/// handlers from every other client (it does not keep one connection from the body budget:
/// see [`HttpServer::max_body_bytes`](crate::http::HttpServer::max_body_bytes)). A stream past
/// it is refused (`RST_STREAM` `REFUSED_STREAM`, which a client may retry). As many as a
/// session's
/// [`DEFAULT_MAX_HANDLERS`], so a gateway multiplexing one session's requests is not the
/// bottleneck.
pub const DEFAULT_HTTP2_MAX_STREAMS: u32 = 256;

/// Default for [`HttpServer::http2_initial_windows`](crate::http::HttpServer::http2_initial_windows):
/// 256 KiB a client may send on one stream before the server reads it (flow control).
///
/// Bytes the server has not read yet are held in memory; the window bounds them per stream,
/// and a client that sends past it without waiting for `WINDOW_UPDATE` is a protocol error
/// (`FLOW_CONTROL_ERROR`). A POST waiting for room in `max_body_bytes` does not read its body,
/// so this, not the body budget, bounds what such a stream holds.
pub const DEFAULT_HTTP2_STREAM_WINDOW: u32 = 256 * 1024;

/// Default for [`HttpServer::http2_initial_windows`](crate::http::HttpServer::http2_initial_windows):
/// 1 MiB a client may send over all the streams of one connection before the server reads it,
/// so a connection's unread bodies stay bounded however many streams it opens.
///
/// A configured value is at least 65,535, the window every HTTP/2 connection starts with
/// (RFC 9113, 6.9.2): it can only be grown, so a smaller one could not be enforced.
pub const DEFAULT_HTTP2_CONNECTION_WINDOW: u32 = 1024 * 1024;

/// Default for [`HttpServer::http2_max_header_list_size`](crate::http::HttpServer::http2_max_header_list_size):
/// 64 KiB of a request's decoded header list (names, values and 32 bytes per field, as HTTP/2
/// counts it), advertised as `SETTINGS_MAX_HEADER_LIST_SIZE`.
///
/// HPACK lets a few bytes on the wire expand to large headers, and `CONTINUATION` frames let a
/// header block grow without end. A list that reaches the bound is answered 431 and its
/// stream refused, its fields not kept; one more than four times the bound closes the
/// connection (`GOAWAY`), as h2 does against a peer that keeps sending such blocks.
/// HTTP/1.1 requests are bounded by hyper (100 headers, about 400 KiB).
pub const DEFAULT_HTTP2_MAX_HEADER_LIST: u32 = 64 * 1024;

/// Default for [`HttpServer::http2_max_frame_size`](crate::http::HttpServer::http2_max_frame_size):
/// 16 KiB, the protocol's own default and least value (`SETTINGS_MAX_FRAME_SIZE`), so one frame
/// never makes the server buffer more before it can check it.
pub const DEFAULT_HTTP2_MAX_FRAME: u32 = 16 * 1024;

// ---- Tasks (the `io.modelcontextprotocol/tasks` extension): what the typed server keeps. ----

/// Default for `ServerBuilder::max_tasks_per_client`: 1,024 tasks held for one client at once
/// (running, waiting for input, or finished and kept for their result).
///
/// Each task holds its handler's future or its result; a client that starts tasks in a loop
/// (and never lets them finish) is refused past the bound (-32000) instead of making the
/// server hold them all. Modern requests without an authenticated principal cannot be told
/// apart, so they share one count; a legacy session counts as one client, and so does a
/// principal.
pub const DEFAULT_MAX_TASKS_PER_CLIENT: usize = 1024;

/// Default for `ServerBuilder::max_tasks`: 16,384 tasks held by the whole server, across
/// clients, so many clients together cannot exhaust its memory either.
pub const DEFAULT_MAX_TASKS: usize = 16 * 1024;

/// Default for `ServerBuilder::task_result_ttl`: a finished task (and its result) is kept 10
/// minutes after it finishes, then forgotten (`tasks/get` answers -32602). Long enough for a
/// polling client to collect it; short enough that finished tasks do not pile up. It is the
/// task's `ttlMs`.
pub const DEFAULT_TASK_RESULT_TTL: Duration = Duration::from_secs(10 * 60);

/// Default for `ServerBuilder::max_task_result_bytes`: 4 MiB of encoded result per task. A
/// tool result past it is not kept: the task fails (-32603, naming both sizes), so a few large
/// results cannot fill the server's memory for [`DEFAULT_TASK_RESULT_TTL`].
pub const DEFAULT_MAX_TASK_RESULT_BYTES: usize = 4 * 1024 * 1024;

/// The poll interval a task suggests (`pollIntervalMs`): 500 ms.
pub const DEFAULT_TASK_POLL_INTERVAL: Duration = Duration::from_millis(500);

/// Default for [`HttpServer::http2_reset_limits`](crate::http::HttpServer::http2_reset_limits):
/// 20 streams a client opened and reset before the server got to them, held at once.
///
/// Opening a stream costs the client one `HEADERS` frame and resetting it one `RST_STREAM`,
/// while the server may already have started the request (the "rapid reset" attack,
/// CVE-2023-44487); past the bound the connection is closed with `GOAWAY`
/// `ENHANCE_YOUR_CALM`.
pub const DEFAULT_HTTP2_MAX_PENDING_RESETS: usize = 20;

/// Default for [`HttpServer::http2_reset_limits`](crate::http::HttpServer::http2_reset_limits):
/// 1,024 streams the server reset because the client broke the protocol on them, on one
/// connection; past it the connection is closed (`GOAWAY` `ENHANCE_YOUR_CALM`), so a client
/// that provokes resets (RUSTSEC-2024-0003) cannot make the server do that work without end.
pub const DEFAULT_HTTP2_MAX_LOCAL_RESETS: usize = 1024;

/// Default for [`HttpServer::http2_max_send_buffer`](crate::http::HttpServer::http2_max_send_buffer):
/// 64 KiB of a response buffered per stream while the client's window is closed.
///
/// Past it the stream takes no more of its body until the client opens its window. A JSON
/// answer is made whole before it is sent, so this does not bound it; it holds back an event
/// stream (a GET stream, `subscriptions/listen`, a tool's progress), whose later events then
/// wait in the session's bounded queues instead of piling up in the connection.
pub const DEFAULT_HTTP2_MAX_SEND_BUFFER: usize = 64 * 1024;

/// Default for [`HttpServer::http2_keep_alive`](crate::http::HttpServer::http2_keep_alive): a
/// `PING` every 30 seconds on an HTTP/2 connection, so a peer that vanished (no FIN, no RST:
/// a dropped NAT entry, a powered-off host) is noticed while a long event stream is open,
/// instead of holding the connection and its streams until TCP gives up (many minutes).
pub const DEFAULT_HTTP2_PING_INTERVAL: Duration = Duration::from_secs(30);

/// Default for [`HttpServer::http2_keep_alive`](crate::http::HttpServer::http2_keep_alive): how
/// long the `PING`'s acknowledgement may take before the connection is closed, 20 seconds.
pub const DEFAULT_HTTP2_PING_TIMEOUT: Duration = Duration::from_secs(20);

/// Default for [`HttpServer::read_timeout`](crate::http::HttpServer::read_timeout): 30 seconds.
pub const DEFAULT_READ_TIMEOUT: Duration = Duration::from_secs(30);

/// How often a quiet event stream (a GET stream, or a POST's stream such as
/// `subscriptions/listen`) carries a `: keep-alive` comment: often enough for proxies' and
/// clients' idle timeouts (commonly 30-60 s), and so a client that went away is noticed.
pub const DEFAULT_KEEP_ALIVE: Duration = Duration::from_secs(15);

/// How long `serve` waits, once stopped, for its connections to finish what they are doing.
pub const SHUTDOWN_GRACE: Duration = Duration::from_secs(5);

/// Peers of answered stateless (2026-07-28) requests kept for the next ones, so a request does
/// not pay for starting a peer (a task, its tables and buffers); past it they end.
pub const IDLE_STATELESS_PEERS: usize = 64;

/// Frames waiting for the session's peer; past this a POST waits (the peer's own bounds then
/// hold the client back).
pub const SESSION_INBOX: usize = 64;

/// Progress notifications waiting for a slow POST stream; past this they are dropped (a later
/// one carries newer progress anyway).
pub const POST_NOTES: usize = 64;

/// Cancellations remembered for requests not seen yet: over HTTP a client's
/// `notifications/cancelled` and the POST of the request it cancels travel on different
/// connections, and the cancellation can come first. Bounded, as a client could send any number.
pub const EARLY_CANCELS: usize = 64;

/// Requests answered that are remembered, so a cancellation that crossed its response is
/// not taken for one that overtook its request.
pub const ANSWERED_KEPT: usize = 256;

/// Default for [`HttpServer::sse_retry`](crate::http::HttpServer::sse_retry): the `retry` a
/// legacy session's event streams announce in their priming event, so a client whose stream the
/// server closed waits that long before it resumes it: 1 second.
pub const DEFAULT_SSE_RETRY: Duration = Duration::from_secs(1);

/// Default for [`HttpServer::replay_buffer`](crate::http::HttpServer::replay_buffer): events a
/// legacy session's event stream keeps for a client that resumes it, so a client that never
/// resumes, or reads too slowly, cannot make the server hold a stream's events without bound.
pub const DEFAULT_REPLAY_EVENTS: usize = 256;

/// Default for [`HttpServer::replay_buffer`](crate::http::HttpServer::replay_buffer): bytes of
/// events a stream keeps for replay, 1 MiB (its newest event is kept whatever its size), for the
/// same reason, against large events.
pub const DEFAULT_REPLAY_BYTES: usize = 1 << 20;

/// Default for [`HttpServer::resumable_streams`](crate::http::HttpServer::resumable_streams):
/// event streams of a session that no connection delivers (closed, or ended) kept for a
/// resumption; past it the oldest are forgotten, so a client that opens streams and leaves
/// them cannot make a session hold their buffers without bound.
pub const DEFAULT_RESUMABLE_STREAMS: usize = 8;

/// Default for [`HttpServer::resumable_streams`](crate::http::HttpServer::resumable_streams):
/// how long an event stream no connection delivers is kept for a resumption (and a GET stream
/// left so still takes the session's messages), so a client gone for good does not hold them
/// for the session's life: 60 seconds.
pub const DEFAULT_STREAM_RETENTION: Duration = Duration::from_secs(60);

/// How long the HTTP client waits before it resumes an event stream that gave no `retry`.
pub const DEFAULT_RESUME_DELAY: Duration = Duration::from_secs(1);

/// Default for [`HttpClient::max_resume_delay`](crate::http::HttpClient::max_resume_delay):
/// the longest the HTTP client waits before resuming an event stream, whatever `retry` the
/// server gave, so a server cannot park a request for hours with a huge `retry`: 60 seconds.
pub const DEFAULT_MAX_RESUME_DELAY: Duration = Duration::from_secs(60);

/// Default for [`HttpClient::resume_failures`](crate::http::HttpClient::resume_failures):
/// failed attempts in a row (no connection, a 5xx, a broken stream) after which the HTTP client
/// gives up resuming an event stream, so a server that is gone is not retried for as long as
/// the request may wait.
pub const DEFAULT_RESUME_FAILURES: u32 = 3;

/// Default for [`HttpClient::max_concurrent_posts`](crate::http::HttpClient::max_concurrent_posts).
pub const DEFAULT_MAX_CONCURRENT_POSTS: usize = 256;

/// Frames waiting for the HTTP client's peer.
pub const CLIENT_INBOX: usize = 256;

/// How long a notification or response may take to be accepted before the client gives up on
/// it and sends the next (they go one at a time, so one hung POST would hold back the rest).
pub const ORDERED_POST_TIMEOUT: Duration = Duration::from_secs(30);

/// Default for `ClientBuilder::connect_timeout` (feature `mcp`): the whole of
/// `Client::connect`, from starting the transport to the end of the handshake, so a server
/// that never answers holds a host no longer than this, whatever each step's own bound.
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(30);

/// Default floor of `TaskPolling` (feature `mcp`): a task is never polled sooner than this after
/// the last poll, whatever interval the server suggests (a suggestion of 0 ms cannot make a
/// client spin).
pub const DEFAULT_TASK_POLL_FLOOR: Duration = Duration::from_millis(10);

/// Default ceiling of `TaskPolling` (feature `mcp`): a task is polled at least this often, so a
/// server that suggests an hour still has its task's end noticed within seconds.
pub const DEFAULT_TASK_POLL_CEILING: Duration = Duration::from_secs(5);

/// Default first interval of `TaskPolling` (feature `mcp`) when the server suggests none; each
/// poll without a suggestion waits twice as long as the one before, up to the ceiling.
pub const DEFAULT_TASK_POLL_START: Duration = Duration::from_millis(50);

/// Default for `ClientOptions::initialize_timeout`: how long a legacy `initialize` waits for
/// its answer (within the connect timeout when connecting).
pub const DEFAULT_INITIALIZE_TIMEOUT: Duration = Duration::from_secs(30);

/// Default for `ConnectOptions::stderr_tail`: the last bytes of a child server's stderr kept,
/// to say why it exited (`CloseReason::Exited`); what is forwarded (to `tracing`, say) is not
/// bounded by it.
pub const DEFAULT_CHILD_STDERR_TAIL: usize = 4 * 1024;

/// How long a child's stderr is read after it exited, for its last words, before its exit
/// is told (a grandchild that holds the pipe open does not hold the news back longer).
pub const CHILD_STDERR_DRAIN: Duration = Duration::from_millis(250);

// ---- The bridge (`mcpwire::bridge`, features `http` and `mcp`): one child shared by many
// clients. Each is a default of `BridgeBuilder`. ----

/// Default for `BridgeBuilder::max_client_in_flight`: requests one client may have in flight
/// to a shared child; one more is refused at once (-32000), so one client cannot take every
/// place the child has. A quarter of a session's handler slots (`DEFAULT_MAX_HANDLERS`).
pub const DEFAULT_BRIDGE_CLIENT_IN_FLIGHT: usize = 64;

/// Default for `BridgeBuilder::max_child_in_flight`: requests of all clients in flight to the
/// child at once; past it they wait, and each waiting client is served in turn. A quarter of
/// the child peer's own `DEFAULT_MAX_IN_FLIGHT`, so the child's pipe never stops the bridge.
pub const DEFAULT_BRIDGE_CHILD_IN_FLIGHT: usize = 1_024;

/// Default first delay before a bridge starts an exited child again; it doubles for each
/// restart in a row.
pub const DEFAULT_BRIDGE_RESTART_MIN: Duration = Duration::from_millis(100);

/// Default longest delay between two restarts of a bridge's child.
pub const DEFAULT_BRIDGE_RESTART_MAX: Duration = Duration::from_secs(30);

/// Default for `BridgeBuilder::hang_timeout`: once a request has waited this long for the
/// child, the bridge pings it, and a child that does not answer the ping within as long again
/// is taken to hang: it is killed and started again. A slow call of a child that still answers
/// pings goes on.
pub const DEFAULT_BRIDGE_HANG_TIMEOUT: Duration = Duration::from_secs(10);

/// Default for `BridgeBuilder::discover_timeout`: how long the bridge waits for the child's
/// answer to its opening `server/discover` before it takes the child to be a legacy one and
/// opens it with `initialize`. Long enough for an interpreter to start on a busy machine.
pub const DEFAULT_BRIDGE_DISCOVER_TIMEOUT: Duration = Duration::from_secs(10);

/// Default for `BridgeBuilder::max_held_calls`: a modern client's calls to a legacy child
/// held at once while the child waits for the client's input (each holds the child's call
/// and its request); past it the child's request is refused and the call cancelled.
pub const DEFAULT_BRIDGE_HELD_CALLS: usize = 256;

/// Default for `BridgeBuilder::held_timeout`: how long a held call waits for its client to
/// come back with the input; then the child's request is answered `cancel` (or -32603) and the
/// call cancelled. As long as a forwarded request's own timeout (`DEFAULT_REQUEST_TIMEOUT`),
/// which the held call's wait also counts against.
pub const DEFAULT_BRIDGE_HELD_TIMEOUT: Duration = Duration::from_secs(60);

/// Default most children an isolated bridge runs at once (one per legacy session): each is a
/// process of its own, so the bound is a machine's, not a protocol's.
pub const DEFAULT_BRIDGE_MAX_CHILDREN: usize = 16;

/// Default time an isolated bridge's child may sit without a request before it is ended (and
/// its session with it): a forgotten session must not hold a process for ever.
pub const DEFAULT_BRIDGE_IDLE_TIMEOUT: Duration = Duration::from_secs(300);

/// Default for `BridgeBuilder::max_listen_streams`: `subscriptions/listen` streams of modern
/// clients a bridge in front of a legacy-only child holds open at once (each holds a POST and
/// a handler slot); one more is refused at once (-32000).
pub const DEFAULT_BRIDGE_LISTEN_STREAMS: usize = 256;

/// Default for `ReverseBuilder::max_remembered_subscriptions`: resource subscriptions the
/// reverse bridge keeps to subscribe again when the remote's session is opened anew; as many as
/// a session of `mcpwire::server` takes (`MAX_RESOURCE_SUBSCRIPTIONS`).
pub const DEFAULT_REVERSE_SUBSCRIPTIONS: usize = 1_024;

// ---- Skills (the `io.modelcontextprotocol/skills` extension): what a served skill directory
// may hold, and what a client reads. Each is a default of `SkillLimits` (feature `mcp`). ----

/// Default for `SkillLimits::max_resources_per_skill`: 512 files in one skill, `SKILL.md`
/// included (the extension's own bound). A server refuses a larger skill when it loads it; a
/// client refuses an entry that lists more.
pub const DEFAULT_MAX_SKILL_RESOURCES: usize = 512;

/// Default for `SkillLimits::max_skill_bytes`: 16 MiB summed over one skill's files (the
/// extension's own bound).
pub const DEFAULT_MAX_SKILL_BYTES: u64 = 16 * 1024 * 1024;

/// Default for `SkillLimits::max_skills`: skills one server serves from its directory, or one
/// client keeps from a listing, so a directory tree (or a listing's pages) cannot make either
/// side hold without end.
pub const DEFAULT_MAX_SKILLS: usize = 1024;

/// Default for `SkillLimits::max_total_bytes`: 64 MiB of skill files a server holds in memory,
/// over all its skills (each file is read once, when the directory is loaded, so what is
/// served always matches its digest).
pub const DEFAULT_MAX_SKILLS_TOTAL_BYTES: u64 = 64 * 1024 * 1024;

/// Default for `SkillLimits::max_entries_walked`: directory entries a server looks at while it
/// loads a skill directory, so a huge or looping tree ends the load with an error rather than
/// a long walk.
pub const DEFAULT_MAX_SKILL_ENTRIES_WALKED: usize = 65_536;

/// Default for `SkillLimits::max_depth`: directory levels below the skill directory's root.
pub const DEFAULT_MAX_SKILL_DEPTH: usize = 16;

/// Default for `SkillLimits::max_frontmatter_bytes`: the YAML front matter of a `SKILL.md`,
/// the delimiters excluded. YAML is parsed only within this bound, on both sides.
pub const DEFAULT_MAX_FRONTMATTER_BYTES: usize = 64 * 1024;

/// Default for `SkillLimits::page_size`: entries per page of `skills/list` and of
/// `resources/directory/read`.
pub const DEFAULT_SKILLS_PAGE_SIZE: usize = 64;

// ---- Framing: what one frame's header may make a reader hold. ----

/// The longest header block accepted, its line endings and closing empty line included: 8 KiB.
///
/// An LSP header block is two short lines. The bound keeps a peer that sends header lines without
/// end (or one endless line) from making the reader buffer them; past it the block is refused and
/// its bytes dropped.
pub const MAX_HEADER_BYTES: usize = 8 * 1024;

// ---- MCP's own rounds and state (the client, the typed server and the bridge alike). ----

/// How many rounds of input one request goes through: the client's default for how many times
/// one call is sent again with input responses
/// ([`InputLimits`](crate::mcp::input_rounds::InputLimits)), and the bound the typed server and the
/// bridge hold a handler or a child to. A server that answers every retry with more input requests
/// (or a handler that never stops asking) would otherwise keep the other side fulfilling them, and
/// sending, for ever.
pub const MAX_INPUT_ROUNDS: u32 = 8;

/// How many input requests one `InputRequiredResult` may name, by default: each is fulfilled
/// before the retry (a form shown, a model sampled), so an answer naming thousands would make
/// the client do thousands of such things for one call.
pub const DEFAULT_MAX_INPUT_REQUESTS: usize = 16;

/// The most bytes a sealed state may have; a longer one is refused unread, so a client cannot
/// make the server hash megabytes per request.
pub const MAX_REQUEST_STATE_BYTES: usize = 64 * 1024;

// ---- The typed server (`mcpwire::server`, feature `mcp`): lists, change streams, subscriptions. ----

/// How long clients may cache list results by default: not at all, so a server whose lists
/// change is never served stale ones unless its host says how long they hold.
pub const DEFAULT_LIST_TTL: Duration = Duration::ZERO;

/// How many change notifications wait for a slow `subscriptions/listen` stream before the
/// oldest are dropped (the stream then goes on with the newer ones): a stalled client cannot
/// make the server hold every change forever.
pub const CHANGE_BACKLOG: usize = 64;

/// The most `subscriptions/listen` streams one connection may hold open; past it a new one is
/// refused at once (-32000), so a flood of them cannot take every handler slot.
pub const MAX_LISTEN_STREAMS: usize = 16;

/// The most resources one session or listen stream may subscribe to; past it, -32602 (legacy
/// `resources/subscribe`) or the rest of the list is not honoured (listen): the server keeps a
/// bounded list per client.
pub const MAX_RESOURCE_SUBSCRIPTIONS: usize = 1024;

// ---- The typed client (`mcpwire::client`) and the transports it reaches servers by. ----

/// How many pages a `list_*` call follows before it gives up: a server whose cursors never
/// end cannot keep the client paging (and growing its list) forever.
pub const DEFAULT_MAX_PAGES: usize = 256;

/// How long `mcpwire::client::negotiate` waits for the answer to its probe before it takes the server for a
/// legacy one, by default.
pub const DEFAULT_PROBE_TIMEOUT: Duration = Duration::from_secs(5);

/// The in-memory pipe's buffer, each way, for a server in this process.
pub const IN_PROCESS_BUFFER: usize = 1 << 20;

// ---- OAuth (`mcpwire::auth`, feature `oauth`): the client's fetches and waits. ----

/// The default bound on a metadata document or token response: 64 KiB.
pub const DEFAULT_MAX_DOCUMENT_BYTES: usize = 64 * 1024;

/// The default bound on each exchange with a metadata URL or the authorization server.
pub const DEFAULT_FETCH_TIMEOUT: Duration = Duration::from_secs(10);

/// The default number of step-ups (403 `insufficient_scope`, authorized again with the scopes
/// asked for) one request goes through before its 403 stands.
pub const DEFAULT_MAX_STEP_UPS: u32 = 2;

/// How long [`Loopback`](crate::auth::Loopback) waits for the user by default: 5 minutes.
pub const DEFAULT_LOOPBACK_WAIT: Duration = Duration::from_secs(300);

/// The most redirects [`FollowRedirect`](crate::auth::FollowRedirect) follows on the authorization server's origin (a login
/// and a consent step each take two).
pub const FOLLOW_REDIRECT_HOPS: usize = 10;

// ---- OAuth's resource server (`mcpwire::auth::resource`): what checking tokens may hold and cost. ----

/// The default bound on an access token's length: 8 KiB. Past it the token is refused unread.
pub const DEFAULT_MAX_TOKEN_BYTES: usize = 8 * 1024;

/// The default number of checked tokens a validator remembers (until each expires), so a
/// client's next request with the same token costs a hash and a lookup.
pub const DEFAULT_TOKEN_CACHE_ENTRIES: usize = 10_000;

/// The default clock skew allowed on `exp` and `nbf`: 60 s.
pub const DEFAULT_LEEWAY: Duration = Duration::from_secs(60);

/// The default shortest time between two fetches of a JWKS for keys it does not know (a token
/// with an unknown `kid`): 30 s. Tokens with made-up key ids cannot make the server fetch more
/// often than this.
pub const DEFAULT_JWKS_MIN_REFRESH: Duration = Duration::from_secs(30);

/// The default time a fetched JWKS is used before it is fetched again: 1 hour (kept if the
/// fetch fails).
pub const DEFAULT_JWKS_MAX_AGE: Duration = Duration::from_secs(3600);

/// The default time an introspection answer is kept (at most until the token expires): 60 s.
pub const DEFAULT_INTROSPECTION_CACHE: Duration = Duration::from_secs(60);

/// The default bound on introspection requests in flight at once, so a flood of unknown tokens
/// cannot flood the authorization server through this one.
pub const DEFAULT_MAX_INTROSPECTIONS: usize = 16;

/// The bounds the decoder enforces, plus whether batches are accepted.
///
/// Every limit is inclusive: a frame of exactly `max_frame_bytes` bytes, a value nested exactly
/// `max_depth` deep and a batch of exactly `max_batch_len` elements are accepted; one more is not.
///
/// # Examples
///
/// ```
/// use mcpwire::Limits;
///
/// let limits = Limits::default().max_frame_bytes(1 << 20).batches(false);
/// assert_eq!(limits.frame_bytes(), 1 << 20);
/// assert!(!limits.accepts_batches());
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    max_frame_bytes: usize,
    max_depth: usize,
    max_batch_len: usize,
    batches: bool,
    max_in_flight: usize,
    max_handlers: usize,
    max_queued_requests: usize,
    max_held_request_bytes: usize,
    max_write_queue_bytes: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_frame_bytes: DEFAULT_MAX_FRAME_BYTES,
            max_depth: DEFAULT_MAX_DEPTH,
            max_batch_len: DEFAULT_MAX_BATCH_LEN,
            batches: true,
            max_in_flight: DEFAULT_MAX_IN_FLIGHT,
            max_handlers: DEFAULT_MAX_HANDLERS,
            max_queued_requests: DEFAULT_MAX_QUEUED_REQUESTS,
            max_held_request_bytes: DEFAULT_MAX_HELD_REQUEST_BYTES,
            max_write_queue_bytes: DEFAULT_MAX_WRITE_QUEUE_BYTES,
        }
    }
}

impl Limits {
    /// The largest frame body in bytes, not counting its line ending (`\n` or `\r\n`).
    ///
    /// Values above [`MAX_FRAME_BYTES_CEILING`] are clamped to it; 0 is raised to 1.
    #[must_use]
    pub fn max_frame_bytes(mut self, bytes: usize) -> Self {
        self.max_frame_bytes = bytes.clamp(1, MAX_FRAME_BYTES_CEILING);
        self
    }

    /// The deepest nesting of arrays and objects accepted in a frame, counting the frame's own
    /// object as level 1. 0 is raised to 1 (a frame is always an object or an array).
    #[must_use]
    pub fn max_depth(mut self, depth: usize) -> Self {
        self.max_depth = depth.max(1);
        self
    }

    /// The most elements a batch may have.
    #[must_use]
    pub fn max_batch_len(mut self, len: usize) -> Self {
        self.max_batch_len = len;
        self
    }

    /// Whether a JSON array of messages (a batch) is decoded, or refused with -32600.
    ///
    /// JSON-RPC 2.0 and MCP 2025-03-26 have batches; MCP 2025-06-18 removed them. On by default.
    #[must_use]
    pub fn batches(mut self, accept: bool) -> Self {
        self.batches = accept;
        self
    }

    /// The most outbound requests awaiting a response at once; a further caller waits for one to
    /// finish. Clamped to `1..=`[`MAX_IN_FLIGHT_CEILING`].
    #[must_use]
    pub fn max_in_flight(mut self, n: usize) -> Self {
        self.max_in_flight = n.clamp(1, MAX_IN_FLIGHT_CEILING);
        self
    }

    /// The most inbound requests handled at once; further ones wait for a slot. 0 is raised
    /// to 1.
    #[must_use]
    pub fn max_handlers(mut self, n: usize) -> Self {
        self.max_handlers = n.max(1);
        self
    }

    /// The most inbound requests held beyond the [`Limits::max_handlers`] running: waiting for
    /// a handler slot, or answered with the reply not yet written. Past it the peer stops
    /// reading until one finishes.
    #[must_use]
    pub fn max_queued_requests(mut self, n: usize) -> Self {
        self.max_queued_requests = n;
        self
    }

    /// The most frame bytes held by inbound requests admitted and not yet answered; past it
    /// the peer stops reading until one finishes. A lone request is always admitted, whatever
    /// its size (up to [`Limits::max_frame_bytes`]).
    #[must_use]
    pub fn max_held_request_bytes(mut self, bytes: usize) -> Self {
        self.max_held_request_bytes = bytes;
        self
    }

    /// The most encoded bytes waiting to be written; past it senders wait. A single message
    /// larger than the bound is still sent, alone, once the queue is empty. 0 is raised to 1.
    #[must_use]
    pub fn max_write_queue_bytes(mut self, bytes: usize) -> Self {
        self.max_write_queue_bytes = bytes.max(1);
        self
    }

    /// The outbound in-flight bound in effect.
    #[must_use]
    pub fn in_flight(&self) -> usize {
        self.max_in_flight
    }

    /// The inbound handler bound in effect.
    #[must_use]
    pub fn handlers(&self) -> usize {
        self.max_handlers
    }

    /// The bound on requests held beyond those running.
    #[must_use]
    pub fn queued_requests(&self) -> usize {
        self.max_queued_requests
    }

    /// The bound on frame bytes held by inbound requests.
    #[must_use]
    pub fn held_request_bytes(&self) -> usize {
        self.max_held_request_bytes
    }

    /// The write queue bound in effect.
    #[must_use]
    pub fn write_queue_bytes(&self) -> usize {
        self.max_write_queue_bytes
    }

    /// The frame size bound in effect.
    #[must_use]
    pub fn frame_bytes(&self) -> usize {
        self.max_frame_bytes
    }

    /// The depth bound in effect.
    #[must_use]
    pub fn depth(&self) -> usize {
        self.max_depth
    }

    /// The batch length bound in effect.
    #[must_use]
    pub fn batch_len(&self) -> usize {
        self.max_batch_len
    }

    /// Whether batches are decoded.
    #[must_use]
    pub fn accepts_batches(&self) -> bool {
        self.batches
    }
}
