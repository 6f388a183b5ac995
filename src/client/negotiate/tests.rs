use std::time::Duration;

use serde_json::{Value, json};

use super::*;
use crate::ErrorCode;
use crate::mcp::{CLIENT_CAPABILITIES_KEY, CLIENT_INFO_KEY, PROTOCOL_VERSION_KEY};
use crate::peer::{
    Context, Handler, Incoming, PeerBuilder, PeerHandle, Reply, RequestOptions, RpcError,
};

/// How the test server answers `server/discover`.
#[derive(Clone, Copy)]
enum Probe {
    Silent,
    Unknown,
    Discover,
    Unsupported,
}

/// A server that answers the probe as told, `initialize` at 2025-11-25, and `echo` with its
/// params.
struct Server(Probe);

impl Handler for Server {
    async fn request(&self, request: &Incoming, _cx: &Context) -> Result<Reply, RpcError> {
        let params: Value =
            request.params().map_or(Value::Null, |p| serde_json::from_str(p.get()).unwrap());
        match (request.method(), self.0) {
            ("server/discover", Probe::Silent) => std::future::pending().await,
            ("server/discover", Probe::Unknown) => {
                Err(RpcError::method_not_found("server/discover"))
            }
            ("server/discover", Probe::Discover) => Reply::json(&json!({
                "resultType": "complete", "supportedVersions": ["2026-07-28"], "capabilities": {}})),
            ("server/discover", Probe::Unsupported) => Err(RpcError::new(
                ErrorCode::UNSUPPORTED_PROTOCOL_VERSION,
                "Unsupported protocol version",
            )
            .with_data(&json!({"supported": ["2026-07-28", "2025-11-25"], "requested": "x"}))),
            ("initialize", _) => Reply::json(&json!({"protocolVersion": "2025-11-25",
                "capabilities": {}, "serverInfo": {"name": "s", "version": "1"}})),
            ("echo", _) => Reply::json(&params),
            (m, _) => Err(RpcError::method_not_found(m)),
        }
    }
}

fn pair(probe: Probe) -> PeerHandle {
    let (a, b) = tokio::io::duplex(1 << 16);
    PeerBuilder::new().connect(a, Server(probe)).1.detach();
    let (peer, conn) = PeerBuilder::new().connect(b, crate::peer::NoHandler);
    conn.detach();
    peer
}

fn options() -> ClientOptions {
    ClientOptions::new("t", "1").probe_timeout(Duration::from_millis(300))
}

async fn echo(agreed: &Negotiated, peer: &PeerHandle) -> Value {
    let params = crate::RawJson::new(r#"{"a":1}"#);
    let r = agreed.request(peer, "echo", Some(params), RequestOptions::new()).await.unwrap();
    r.result_as().unwrap()
}

#[tokio::test]
async fn each_probe_answer_leads_to_its_era() {
    for (probe, era, version) in [
        (Probe::Silent, Era::Legacy, "2025-11-25"),
        (Probe::Unknown, Era::Legacy, "2025-11-25"),
        (Probe::Discover, Era::Modern, "2026-07-28"),
        (Probe::Unsupported, Era::Modern, "2026-07-28"),
    ] {
        let peer = pair(probe);
        let agreed =
            tokio::time::timeout(Duration::from_secs(10), negotiate(&peer, &options(), None))
                .await
                .unwrap()
                .unwrap();
        assert_eq!((agreed.era(), agreed.version().as_str()), (era, version));
        let got = echo(&agreed, &peer).await;
        assert_eq!(got["a"], 1);
        let meta = &got["_meta"];
        match era {
            Era::Modern => {
                assert_eq!(meta[PROTOCOL_VERSION_KEY], "2026-07-28", "{got}");
                assert_eq!(meta[CLIENT_CAPABILITIES_KEY], json!({}), "{got}");
                assert_eq!(meta[CLIENT_INFO_KEY], json!({"name": "t", "version": "1"}), "{got}");
            }
            Era::Legacy => assert!(meta.is_null(), "{got}"),
        }
    }
}

#[tokio::test]
async fn a_fixed_modern_version_refuses_a_legacy_server_and_a_closed_peer_fails() {
    let peer = pair(Probe::Unknown);
    let fixed = options().version(VersionChoice::Fixed("2026-07-28".into()));
    let e = negotiate(&peer, &fixed, None).await.unwrap_err();
    assert!(matches!(e, NegotiateError::NotModern(_)), "{e}");
    let fixed = options().version(VersionChoice::Fixed("2025-06-18".into()));
    // A fixed legacy version the server does not choose is refused.
    let e = negotiate(&peer, &fixed, None).await.unwrap_err();
    assert!(matches!(e, NegotiateError::Handshake(_)), "{e}");
    peer.close();
    let e = negotiate(&peer, &options(), None).await.unwrap_err();
    assert!(matches!(e, NegotiateError::Request { method: DISCOVER, .. }), "{e}");
}

#[tokio::test]
async fn a_cached_legacy_era_skips_the_probe_until_it_fails() {
    let target = Some("negotiate_tests/legacy-cache");
    let agreed = negotiate(&pair(Probe::Unknown), &options(), target).await.unwrap();
    assert_eq!((agreed.era(), agreed.from_cache()), (Era::Legacy, false));
    // A server that would answer the probe as modern is not probed: the era is cached.
    let agreed = negotiate(&pair(Probe::Discover), &options(), target).await.unwrap();
    assert_eq!((agreed.era(), agreed.from_cache()), (Era::Legacy, true));
    // The cached assumption fails (no initialize answered): forgotten.
    let closed = pair(Probe::Discover);
    closed.close();
    let e = negotiate(&closed, &options(), target).await.unwrap_err();
    assert!(matches!(e, NegotiateError::Request { method: "initialize", .. }), "{e}");
    let agreed = negotiate(&pair(Probe::Discover), &options(), target).await.unwrap();
    assert_eq!((agreed.era(), agreed.from_cache()), (Era::Modern, false));
}
