//! One client's session: what belongs to that client alone (its roots, its log) over the
//! process's [`Service`]. A process serves one session per stdio connection; a transport that
//! serves many clients makes one per client. What is here never reaches another session.
//!
//! The session is what the tool handlers are given (`tools`); it answers MCP through rmcp's
//! `ServerHandler`, implemented in `handler`, which routes calls to those handlers. Keeping
//! the state here and the routing there lets both depend on this module without depending on
//! each other.

use std::sync::Arc;

use crate::logging::SessionLog;
use crate::roots::ClientRoots;
use crate::service::Service;

/// One client's session. Cheap to clone: clones are the same session.
#[derive(Clone)]
pub struct Session {
    service: Arc<Service>,
    /// The directories this session's client allows, when it declares the `roots`
    /// capability; shared with the task that learns them.
    roots: Arc<ClientRoots>,
    /// Diagnostics raised by this session's requests: stderr, and this session's client
    /// once it sets a level.
    log: SessionLog,
}

impl Session {
    /// A new session of `service`: its own client roots and its own log.
    pub fn new(service: &Arc<Service>) -> Session {
        let roots = Arc::new(ClientRoots::default());
        Session {
            log: service.log.session(Arc::clone(&roots)),
            roots,
            service: Arc::clone(service),
        }
    }

    /// The service this session is part of.
    pub fn service(&self) -> &Arc<Service> {
        &self.service
    }

    /// The client's roots, which every action of this session must stay inside.
    pub(crate) fn roots(&self) -> &Arc<ClientRoots> {
        &self.roots
    }

    /// This session's diagnostics.
    pub(crate) fn log(&self) -> &SessionLog {
        &self.log
    }
}
