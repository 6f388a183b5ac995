//! A client's requests forwarded to the shared child: its id and progress token rewritten, its era
//! translated. A legacy client's `initialize` is answered from the child's held one; every other
//! request goes to the child through the bridge's one peer to it (so it gets the child-side id of
//! that peer, and the answer comes back under the client's own id), counted against the client's
//! bound and admitted in turn with other clients' requests. A progress token is replaced with the
//! bridge's own and the client's put back on the way out.
//!
//! Eras: a modern (2026-07-28) client's request goes to a modern child as it is; to a legacy
//! child with its envelope stripped, `server/discover` answered from the held `initialize`,
//! and the answer given `resultType` and the server's identity. A legacy client's `tools/call`
//! and `prompts/get` go to a modern child as modern requests carrying the client's
//! capabilities: the child then asks for input with an `input_required` answer the bridge
//! fulfils by asking that client itself, so a request the child needs answered always
//! reaches the client whose call it belongs to, however many clients call at once. To a
//! modern-only child every request of a legacy client goes that way; `ping` and
//! `logging/setLevel` are answered by the bridge, subscriptions kept on its listen stream.

use crate::limits::MAX_INPUT_ROUNDS;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use super::handshake::{ENVELOPE, initialize_answer};
use super::hold::{self, AskSender, Next};
use super::state::{ChildLink, ClientState, Flight, InFlight, Inner, Session, UNSETTLED};
use crate::bridge::json::{self, RequestEdit};
use crate::bridge::text;
use crate::mcp::input_rounds::{self, Outcome};
use crate::mcp::{
    self, CLIENT_CAPABILITIES_KEY, CLIENT_INFO_KEY, LOG_LEVEL_KEY, PROTOCOL_VERSION_KEY,
};
use crate::message::members::Members;
use crate::peer::{Context, Handler, Incoming, Reply, RequestError, RequestOptions, RpcError};
use crate::sync::Locked;
use crate::{error::ErrorCode, message::RawJson, message::owned::OwnedId};

/// The members of a request's `params` as its message has them
/// ([`crate::Message::param_members`]: with what its parse recorded of them and of their
/// `_meta`).
type Recorded<'a> = Option<Members<'a>>;

/// One client's handler: a legacy session's, or the peer a modern request runs in. Made by
/// [`Bridge::handler`](super::Bridge::handler), one per client.
pub struct BridgeHandler {
    pub(super) inner: Arc<Inner>,
    pub(super) client: Arc<ClientState>,
}

impl std::fmt::Debug for BridgeHandler {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BridgeHandler").field("client", &self.client.id).finish()
    }
}

/// A legacy session that ends stops holding its resource subscriptions: the bridge's listen
/// stream to a modern-only child is asked again without them (a legacy child's own session
/// ends with the bridge's, so it needs nothing).
impl Drop for BridgeHandler {
    fn drop(&mut self) {
        let held = std::mem::take(&mut self.client.session.locked().subscriptions);
        if held.is_empty() {
            return;
        }
        let Ok(link) = self.inner.child() else { return };
        let Ok(runtime) = tokio::runtime::Handle::try_current() else { return };
        if !link.handshake.modern_only {
            return;
        }
        let inner = self.inner.clone();
        runtime.spawn(async move { super::listen_to_child::sync_logged(&inner, &link).await });
    }
}

/// A request on its way to the child: its method and params, whether its client is a modern
/// one, and the client's own id for it (kept for a `subscriptions/listen`).
struct Out<'a> {
    method: &'a str,
    params: Option<RawJson<'a>>,
    /// The members of `params` as the client's message has them, when they are its own params.
    recorded: Recorded<'a>,
    modern: bool,
    id: Option<crate::message::Id<'a>>,
    /// Where the child's requests for it go, for a call that may be held.
    asks: Option<AskSender>,
}

impl<'a> Out<'a> {
    fn legacy(method: &'a str, params: Option<RawJson<'a>>) -> Self {
        Self { method, params, recorded: None, modern: false, id: None, asks: None }
    }

    fn modern(method: &'a str, params: Option<RawJson<'a>>) -> Self {
        Self { method, params, recorded: None, modern: true, id: None, asks: None }
    }
}

/// The envelope a legacy session's requests carry when sent on as 2026-07-28 ones (the
/// session's capabilities, client info and log level), made once per change of them.
fn session_envelope(s: &mut Session) -> Arc<str> {
    if let Some(e) = &s.envelope {
        return e.clone();
    }
    let version = format!("\"{}\"", mcp::MODERN_VERSIONS[0]);
    let mut pairs = vec![
        (PROTOCOL_VERSION_KEY, version.as_str()),
        (CLIENT_CAPABILITIES_KEY, s.capabilities.as_deref().unwrap_or("{}")),
        (LOG_LEVEL_KEY, s.log_level.as_deref().unwrap_or("\"debug\"")),
    ];
    if let Some(info) = &s.client_info {
        pairs.push((CLIENT_INFO_KEY, info.as_str()));
    }
    let e: Arc<str> = json::members_text(&pairs).into();
    s.envelope = Some(e.clone());
    e
}

/// Whether a request's `_meta` names a protocol version. A request whose `params` cannot name
/// `_meta` ([`Members::may_name_meta`]) is legacy at once, with no read of `params`.
pub(in crate::bridge) fn is_modern(req: &Incoming) -> bool {
    let msg = req.message();
    if msg.param_members().is_some_and(|m| !m.may_name_meta()) {
        return false;
    }
    mcp::meta::RequestParams::of(&msg)
        .ok()
        .and_then(|p| p.meta().ok().flatten())
        .is_some_and(|m| m.is_modern())
}

impl Handler for BridgeHandler {
    async fn request(&self, req: &Incoming, cx: &Context) -> Result<Reply, RpcError> {
        let link = self.inner.child()?;
        let (method, params) = (req.method(), req.params());
        let recorded = req.message().param_members();
        if is_modern(req) {
            // Each 2026-07-28 request is a client of its own (what the child sends about it
            // goes to it alone), also when requests share a handler (handled without a peer,
            // the requests of one HTTP connection do).
            let me = Self { inner: self.inner.clone(), client: self.inner.request_client() };
            return me
                .modern(&link, Out { recorded, id: req.id(), ..Out::modern(method, params) }, cx)
                .await;
        }
        match method {
            "initialize" => {
                let reply = self.initialize(req, cx, &link);
                // A child with no session sends list changes only on a listen stream.
                if link.handshake.modern_only {
                    super::listen_to_child::sync_logged(&self.inner, &link).await;
                }
                return Ok(reply);
            }
            "ping" => return Ok(Reply::empty()),
            "logging/setLevel" => {
                let level = params.and_then(|p| json::member(p.get(), "level"));
                let mut s = self.client.session.locked();
                s.log_level = level.map(str::to_owned);
                s.envelope = None;
                // 2026-07-28 has no such request: the level goes in each request's envelope.
                if link.handshake.modern_only {
                    return Ok(Reply::empty());
                }
            }
            "resources/subscribe" | "resources/unsubscribe" if link.handshake.modern_only => {
                return self.subscription_upstream(&link, method, params).await;
            }
            "resources/subscribe" | "resources/unsubscribe" => {
                if let Some(done) = self.subscription(method, params) {
                    return Ok(done);
                }
            }
            "tools/call" | "prompts/get" if link.handshake.modern && !self.asked_for_tasks() => {
                return self.legacy_via_modern(&link, method, params, recorded, cx).await;
            }
            _ if mcp::is_legacy_only(method) && link.handshake.modern_only => {
                return Err(no_modern_counterpart(method));
            }
            // A child with no session: every request goes as a 2026-07-28 one.
            _ if link.handshake.modern_only => {
                return self.legacy_via_modern(&link, method, params, recorded, cx).await;
            }
            _ => {}
        }
        let out = Out { recorded, ..Out::legacy(method, params) };
        let answer = self.forward(&link, out, &RequestEdit::default(), cx).await?;
        Ok(Reply::raw(text(answer.result())))
    }

    async fn notification(&self, note: &Incoming, _cx: &Context) {
        match note.method() {
            // The bridge opened the child's session; a client's roots are asked of it when a
            // request of its concerns them, not announced to a child shared by all.
            "notifications/initialized" | "notifications/roots/list_changed" => {}
            method => {
                if let Ok(link) = self.inner.child() {
                    let _ = link.peer.notify(method, note.params()).await;
                }
            }
        }
    }

    /// A 2026-07-28 request other than `subscriptions/listen` is handled without a peer: its
    /// answer, and what the child sends about it (progress, log messages), go on its own
    /// response ([`Context::notify`]); a call held for a child's question keeps only that
    /// context, which refuses what comes after the answer as a closed peer would.
    fn peerless(request: &Incoming) -> bool {
        request.method() != "subscriptions/listen" && is_modern(request)
    }
}

/// A legacy request a modern-only child cannot be asked: 2026-07-28 removed it, and the bridge
/// does not serve it itself.
fn no_modern_counterpart(method: &str) -> RpcError {
    RpcError::new(
        ErrorCode::METHOD_NOT_FOUND,
        format!(
            "mcpwire bridge: {method} has no counterpart in 2026-07-28, the only era the child \
             server speaks, and the bridge does not serve it itself"
        ),
    )
}

impl BridgeHandler {
    /// A legacy client's `initialize`, answered from the child's, and the session noted.
    fn initialize(&self, req: &Incoming, cx: &Context, link: &ChildLink) -> Reply {
        let params = req.params().map(|p| p.get());
        let member = |k| params.and_then(|p| json::member(p, k));
        let asked: Option<String> =
            member("protocolVersion").and_then(|v| serde_json::from_str(v).ok());
        {
            let mut s = self.client.session.locked();
            s.capabilities = member("capabilities").map(str::to_owned);
            s.client_info = member("clientInfo").map(str::to_owned);
            s.envelope = None;
            s.peer = Some(cx.peer().unrelated());
        }
        Reply::raw_string(initialize_answer(&link.handshake, asked.as_deref()))
    }

    /// Whether the client declared the tasks extension (its calls then stay legacy, as the
    /// child's task results for a legacy session are shaped for one).
    fn asked_for_tasks(&self) -> bool {
        self.client
            .session
            .locked()
            .capabilities
            .as_deref()
            .is_some_and(|c| c.contains("io.modelcontextprotocol/tasks"))
    }

    /// Notes a subscription; answers an unsubscription itself while another session still
    /// subscribes to the resource (the child's one subscription serves them all).
    fn subscription(&self, method: &str, params: Option<RawJson<'_>>) -> Option<Reply> {
        let uri: String = params
            .and_then(|p| json::member(p.get(), "uri"))
            .and_then(|u| serde_json::from_str(u).ok())?;
        if method == "resources/subscribe" {
            self.client.session.locked().subscriptions.insert(uri);
            return None;
        }
        self.client.session.locked().subscriptions.remove(&uri);
        let others = self
            .inner
            .sessions()
            .iter()
            .any(|c| c.id != self.client.id && c.session.locked().subscriptions.contains(&uri))
            || self.inner.listens.watches(&uri, None);
        others.then(Reply::empty)
    }

    /// A legacy session's subscription to a modern-only child's resource, or its end: the
    /// bridge's listen stream to the child made to watch what the sessions subscribe to.
    async fn subscription_upstream(
        &self,
        link: &ChildLink,
        method: &str,
        params: Option<RawJson<'_>>,
    ) -> Result<Reply, RpcError> {
        let uri: String = params
            .and_then(|p| json::member(p.get(), "uri"))
            .and_then(|u| serde_json::from_str(u).ok())
            .ok_or_else(|| RpcError::invalid_params(format!("{method}: uri is not a string")))?;
        let subscribe = method == "resources/subscribe";
        let set = |on: bool| {
            let mut s = self.client.session.locked();
            if on { s.subscriptions.insert(uri.clone()) } else { s.subscriptions.remove(&uri) }
        };
        set(subscribe);
        let taken = super::listen_to_child::sync(&self.inner, link).await;
        match taken {
            Ok(t) if !subscribe || t.contains(&uri) => Ok(Reply::empty()),
            Ok(_) => {
                set(false);
                Err(RpcError::invalid_params(format!(
                    "mcpwire bridge: the child server did not take the subscription to {uri}"
                )))
            }
            Err(e) => {
                if subscribe {
                    set(false);
                }
                Err(e)
            }
        }
    }

    /// A modern client's request.
    async fn modern(
        &self,
        link: &ChildLink,
        out: Out<'_>,
        cx: &Context,
    ) -> Result<Reply, RpcError> {
        if link.handshake.modern {
            let answer = self.forward(link, out, &RequestEdit::default(), cx).await?;
            return Ok(Reply::raw(text(answer.result())));
        }
        let Out { method, params, id, .. } = out;
        if method == "server/discover" {
            return Ok(Reply::raw(&link.handshake.discover));
        }
        if method == "subscriptions/listen" {
            return super::listen_for_clients::serve(&self.inner, link, params, cx, id).await;
        }
        if mcp::is_legacy_only(method) {
            return Err(RpcError::method_not_found(method));
        }
        let answer = if matches!(method, "tools/call" | "prompts/get") {
            match self.holdable(link, method, params, cx).await? {
                Next::InputRequired(result) => return Ok(Reply::raw_string(result)),
                Next::Answer(answer) => answer,
            }
        } else {
            let edit = RequestEdit { drop_meta: &ENVELOPE, ..RequestEdit::default() };
            let out = Out { recorded: out.recorded, ..Out::modern(method, params) };
            self.forward(link, out, &edit, cx).await.map(|a| text(a.result()).to_owned())
        };
        let answer = match answer {
            // The legacy era's "resource not found" is the modern era's invalid params.
            Err(mut e) if e.code == ErrorCode::RESOURCE_NOT_FOUND => {
                e.code = ErrorCode::INVALID_PARAMS;
                return Err(e);
            }
            other => other?,
        };
        let result = answer.as_str();
        let Some(mut out) =
            json::modern_result(result, mcp::SERVER_INFO_KEY, &link.handshake.server_info)
        else {
            return Ok(Reply::raw(result));
        };
        if mcp::is_cacheable(method) && json::member(&out, "ttlMs").is_none() {
            out = json::set_member(&out, "ttlMs", "0").unwrap_or(out);
            out = json::set_member(&out, "cacheScope", "\"private\"").unwrap_or(out);
        }
        Ok(Reply::raw_string(out))
    }

    /// A modern client's call to a legacy child, which may ask for input mid-call: a new call
    /// sent, or a retry's held call resumed with its answer; then its answer, or the next
    /// input it needs.
    async fn holdable(
        &self,
        link: &ChildLink,
        method: &str,
        params: Option<RawJson<'_>>,
        cx: &Context,
    ) -> Result<Next, RpcError> {
        let p = params.map(|p| p.get());
        let binding = hold::binding(method, p);
        let state = p.and_then(|p| json::member(p, "requestState")).filter(|s| *s != "null");
        let (call, round) = if let Some(state) = state {
            let state: String = serde_json::from_str(state).map_err(|_| {
                RpcError::invalid_params("mcpwire bridge: requestState is not a string")
            })?;
            let responses = p.and_then(|p| json::member(p, "inputResponses"));
            hold::resume(&self.inner, &binding, &state, responses)?
        } else {
            let me = Self { inner: self.inner.clone(), client: self.client.clone() };
            let (link, cx) = (link.clone(), cx.clone());
            let (method, params) = (method.to_owned(), p.map(str::to_owned));
            let call = hold::Call::start(move |asks| async move {
                let edit = RequestEdit { drop_meta: &ENVELOPE, ..RequestEdit::default() };
                let out = Out {
                    asks: Some(asks),
                    ..Out::modern(&method, params.as_deref().map(RawJson::new))
                };
                me.forward(&link, out, &edit, &cx).await.map(|a| text(a.result()).to_owned())
            });
            (call, 0)
        };
        let caps = p.and_then(|p| json::meta_member(p, CLIENT_CAPABILITIES_KEY));
        Ok(hold::wait(&self.inner, call, binding, round, caps).await)
    }

    /// A legacy client's call through a modern child: each `input_required` round is asked of
    /// this client, on this call's own stream, and the call sent again with the answers.
    async fn legacy_via_modern(
        &self,
        link: &ChildLink,
        method: &str,
        params: Option<RawJson<'_>>,
        recorded: Recorded<'_>,
        cx: &Context,
    ) -> Result<Reply, RpcError> {
        let envelope = session_envelope(&mut self.client.session.locked());
        let edit = RequestEdit { drop_meta: &ENVELOPE, add_meta: &envelope, token: None };
        let mut retry: Option<String> = None;
        for _ in 0..=MAX_INPUT_ROUNDS {
            let out = match retry.as_deref() {
                Some(retry) => Out::legacy(method, Some(RawJson::new(retry))),
                None => Out { recorded, ..Out::legacy(method, params) },
            };
            let answer = self.forward(link, out, &edit, cx).await?;
            let result = text(answer.result());
            // The common answer, a complete one, is made a legacy one in the pass that finds
            // it complete; any other is read in full.
            let complete = answer.message().result_members().unwrap_or(Members::scanned(result));
            if let Some(done) = json::complete_legacy_result(complete, mcp::SERVER_INFO_KEY) {
                return Ok(Reply::raw_string(done));
            }
            let round = match input_rounds::outcome(RawJson::new(result)) {
                Ok(Outcome::InputRequired(round)) => round,
                Ok(Outcome::Complete | Outcome::Task) | Err(_) => {
                    let out = json::legacy_result(complete, mcp::SERVER_INFO_KEY);
                    return Ok(out.map_or_else(|| Reply::raw(result), Reply::raw_string));
                }
            };
            let mut responses = Vec::with_capacity(round.requests.len());
            for r in &round.requests {
                // Asked on this call's own stream: the client that made the call answers.
                match cx.peer().request(&r.method, r.params).await {
                    Ok(a) => responses.push((r.key.to_string(), text(a.result()).to_owned())),
                    Err(RequestError::Rpc(e)) => return Err(e),
                    Err(e) => {
                        return Err(RpcError::internal(format!(
                            "mcpwire bridge: the client did not answer {}: {e}",
                            r.method
                        )));
                    }
                }
            }
            let next = input_rounds::retry_params(params, &responses, round.request_state)
                .map_err(|e| RpcError::internal(format!("mcpwire bridge: {e}")))?;
            retry = Some(next);
        }
        Err(RpcError::internal(format!(
            "mcpwire bridge: the child asked for input more than {MAX_INPUT_ROUNDS} times"
        )))
    }

    /// Sends a request to the child on the client's behalf and waits for its answer: counted
    /// against the client's bound, admitted in turn, its progress token replaced.
    async fn forward(
        &self,
        link: &ChildLink,
        out: Out<'_>,
        edit: &RequestEdit<'_>,
        cx: &Context,
    ) -> Result<Incoming, RpcError> {
        let Out { method, params, recorded, modern, id: own_id, asks } = out;
        let inner = &*self.inner;
        let mut flight = InFlight::start(inner, &self.client)?;
        // A listen stream stays open as long as its client listens: it takes no turn.
        let _slot = match method {
            "subscriptions/listen" => None,
            _ => Some(inner.admission.acquire(self.client.id).await),
        };
        let seq = inner.next_seq.fetch_add(1, Ordering::Relaxed);
        let edit =
            RequestEdit { token: Some(seq), drop_meta: edit.drop_meta, add_meta: edit.add_meta };
        let edited = json::edit_request(
            params.map(|p| recorded.unwrap_or(Members::scanned(p.get()))),
            &edit,
        );
        let sent = edited.params.as_deref().map(RawJson::new).or(params);
        let mut options = RequestOptions::new().timeout(inner.config.request_timeout);
        if edited.token.is_some() {
            options = options.reset_on_progress(OwnedId::Num(seq as i64), None);
        }
        let cx = cx.clone();
        let listen = (method == "subscriptions/listen").then(|| {
            let sink = Arc::new(std::sync::atomic::AtomicU64::new(0));
            options.id_sink = Some(sink.clone());
            (sink, own_id.map_or_else(|| "null".to_owned(), |i| i.to_string()))
        });
        let settled = Arc::new(std::sync::atomic::AtomicU64::new(UNSETTLED));
        options.settled_sink = Some(settled.clone());
        let flight_of = Flight {
            client: self.client.id,
            cx,
            token: edited.token,
            modern,
            listen,
            answered: false,
            child: link.peer.clone(),
            settled,
            sent: std::time::Instant::now(),
            asks,
            parked: false,
        };
        flight.fly(seq, flight_of);
        inner.counters.forwarded.fetch_add(1, Ordering::Relaxed);
        match link.peer.request_with(method, sent, options).await {
            Ok(answer) => Ok(answer),
            Err(RequestError::Rpc(e)) => Err(e),
            Err(RequestError::Timeout) => Err(RpcError::internal(format!(
                "mcpwire bridge: the child server did not answer {method} within {:?}",
                inner.config.request_timeout.unwrap_or_default()
            ))),
            Err(RequestError::Closed(reason)) => Err(RpcError::internal(match link.hung.get() {
                Some(why) => format!(
                    "mcpwire bridge: the child server hung before it answered {method}: {why}; \
                     it was killed and is starting again"
                ),
                None => format!(
                    "mcpwire bridge: the child server ended before it answered {method}: {reason}"
                ),
            })),
            Err(e) => Err(RpcError::internal(format!("mcpwire bridge: {method}: {e}"))),
        }
    }
}
