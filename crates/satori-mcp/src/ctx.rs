//! What a handler is given: one session's client roots and log over the process's
//! [`Shared`] state. Its own module so that the session (`session`) and the handlers (`tools`)
//! both depend on it and not on each other.

use std::ops::Deref;
use std::sync::Arc;

use crate::logging::SessionLog;
use crate::roots::ClientRoots;
use crate::shared::Shared;

/// One session's state, over the service every session shares (reached through `Deref`:
/// `ctx.engine`, `ctx.config`, ...). What is here must never leak to another session.
pub(crate) struct Ctx {
    pub shared: Arc<Shared>,
    /// Diagnostics raised by this session's requests: stderr, and this session's client
    /// once it sets a level.
    pub log: SessionLog,
    /// The directories this session's client allows, when it declares the `roots`
    /// capability.
    pub client_roots: Arc<ClientRoots>,
}

impl Deref for Ctx {
    type Target = Shared;

    fn deref(&self) -> &Shared {
        &self.shared
    }
}
