//! What the bridge keeps of the calls it holds for a modern client's input (the tables; the
//! flow is `mod.rs`): the child's requests for a call, the call itself, and the held calls
//! with the key their `requestState` is sealed with.

use crate::sync::Locked;
use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::AtomicU64;

use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;

use crate::mcp::seal::StateKey;
use crate::peer::RpcError;

/// How many of the child's requests for one call may wait to be asked at once.
const ASKS_QUEUED: usize = 4;

/// A request of the child's for a held call: what it asks and where its answer goes.
pub(in crate::bridge::shared) struct Ask {
    pub(in crate::bridge::shared) method: String,
    pub(in crate::bridge::shared) params: Option<String>,
    pub(in crate::bridge::shared) reply: oneshot::Sender<Result<String, RpcError>>,
}

/// The sending end a flight carries: the child's requests that concern it go there.
pub(in crate::bridge::shared) type AskSender = mpsc::Sender<Ask>;

/// A call in the child that may be held: its answer to come, and the child's requests for it.
pub(in crate::bridge::shared) struct Call {
    pub(in crate::bridge::shared) answer: JoinHandle<Result<String, RpcError>>,
    pub(in crate::bridge::shared) asks: mpsc::Receiver<Ask>,
}

impl Call {
    /// A call whose forwarding `run` starts with the sender its flight is to carry.
    pub(in crate::bridge::shared) fn start<F>(run: impl FnOnce(AskSender) -> F) -> Self
    where
        F: Future<Output = Result<String, RpcError>> + Send + 'static,
    {
        let (tx, asks) = mpsc::channel(ASKS_QUEUED);
        Self { answer: tokio::spawn(run(tx)), asks }
    }
}

/// A held call: the call, and the child's request the client is to answer.
pub(in crate::bridge::shared) struct Holding {
    pub(in crate::bridge::shared) call: Call,
    pub(in crate::bridge::shared) pending: Ask,
    pub(in crate::bridge::shared) round: u32,
    pub(in crate::bridge::shared) binding: String,
    /// Gives the call up at its expiry; stopped when the client comes back.
    pub(in crate::bridge::shared) timer: JoinHandle<()>,
}

/// The bridge's held calls.
pub(in crate::bridge::shared) struct Holds {
    pub(in crate::bridge::shared) key: StateKey,
    pub(in crate::bridge::shared) map: Mutex<HashMap<u64, Holding>>,
    pub(in crate::bridge::shared) next: AtomicU64,
}

impl Holds {
    pub(in crate::bridge::shared) fn new() -> Self {
        Self { key: StateKey::random(), map: Mutex::new(HashMap::new()), next: AtomicU64::new(1) }
    }

    /// How many calls are held now.
    pub(in crate::bridge::shared) fn len(&self) -> usize {
        self.map.locked().len()
    }
}
