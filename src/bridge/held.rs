//! What the bridge keeps of the calls it holds for a modern client's input (the tables; the
//! flow is `hold.rs`): the child's requests for a call, the call itself, and the held calls
//! with the key their `requestState` is sealed with.

use std::collections::HashMap;
use std::sync::atomic::AtomicU64;
use std::sync::{Mutex, PoisonError};

use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;

use crate::mcp::seal::StateKey;
use crate::peer::RpcError;

/// How many of the child's requests for one call may wait to be asked at once.
const ASKS_QUEUED: usize = 4;

/// A request of the child's for a held call: what it asks and where its answer goes.
pub(super) struct Ask {
    pub(super) method: String,
    pub(super) params: Option<String>,
    pub(super) reply: oneshot::Sender<Result<String, RpcError>>,
}

/// The sending end a flight carries: the child's requests that concern it go there.
pub(super) type AskSender = mpsc::Sender<Ask>;

/// A call in the child that may be held: its answer to come, and the child's requests for it.
pub(super) struct Call {
    pub(super) answer: JoinHandle<Result<String, RpcError>>,
    pub(super) asks: mpsc::Receiver<Ask>,
}

impl Call {
    /// A call whose forwarding `run` starts with the sender its flight is to carry.
    pub(super) fn start<F>(run: impl FnOnce(AskSender) -> F) -> Self
    where
        F: Future<Output = Result<String, RpcError>> + Send + 'static,
    {
        let (tx, asks) = mpsc::channel(ASKS_QUEUED);
        Self { answer: tokio::spawn(run(tx)), asks }
    }
}

/// A held call: the call, and the child's request the client is to answer.
pub(super) struct Holding {
    pub(super) call: Call,
    pub(super) pending: Ask,
    pub(super) round: u32,
    pub(super) binding: String,
    /// Gives the call up at its expiry; stopped when the client comes back.
    pub(super) timer: JoinHandle<()>,
}

/// The bridge's held calls.
pub(super) struct Holds {
    pub(super) key: StateKey,
    pub(super) map: Mutex<HashMap<u64, Holding>>,
    pub(super) next: AtomicU64,
}

impl Holds {
    pub(super) fn new() -> Self {
        Self { key: StateKey::random(), map: Mutex::new(HashMap::new()), next: AtomicU64::new(1) }
    }

    /// How many calls are held now.
    pub(super) fn len(&self) -> usize {
        self.map.lock().unwrap_or_else(PoisonError::into_inner).len()
    }
}
