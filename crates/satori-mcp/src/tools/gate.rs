//! The gates of the tools. [`inside_roots`] is the one judgement of the client's roots, which
//! every tool and every `manage_index` action passes before it touches anything; [`gate`]
//! adds, for the tools that answer from an index (`search_codebase`, `file_outline`,
//! `call_graph`), the engine's verdict on the path (untracked, first build running, failed,
//! built with another fingerprint, refused root). A stop carries everything an envelope
//! needs; each tool copies it into its own shape.

use std::path::{Path, PathBuf};

use satori_core::{Purpose, Refusal, Target};
use satori_protocol::ManageAction;
use satori_protocol::envelope::{Compatibility, Hint, NavHints, Status, reasons};

use super::canonical_or_normal;
use crate::session::Session;
use crate::to_proto::{self, display, manage_hint};

/// How a tool names what it does, for the messages of a stop: "Satori does not {verb}
/// here", "before it can be {done}", "then {verb} again".
#[derive(Clone, Copy)]
pub(crate) struct Verb {
    pub verb: &'static str,
    pub done: &'static str,
}

/// Why a tool answers without consulting the index.
pub(crate) struct Stop {
    pub status: Status,
    pub reason: Option<&'static str>,
    pub message: String,
    /// The answer is a failure (`isError`), not a state to branch on.
    pub is_error: bool,
    pub create: Option<Hint>,
    pub status_hint: Option<Hint>,
    pub reindex: Option<Hint>,
    pub compatibility: Option<Compatibility>,
}

impl Stop {
    /// The hints a navigation answer carries for this stop (the runnable next calls).
    pub fn nav_hints(&mut self) -> NavHints {
        NavHints {
            create: self.create.take(),
            status: self.status_hint.take(),
            reindex: self.reindex.take(),
            ..NavHints::default()
        }
    }

    fn new(status: Status, reason: &'static str, message: String) -> Self {
        Self {
            status,
            reason: Some(reason),
            message,
            is_error: false,
            create: None,
            status_hint: None,
            reindex: None,
            compatibility: None,
        }
    }
}

/// Whether this session may act on `path` (absolute): the one judgement of the client's
/// roots, for searches, reads, navigation, listings and every `manage_index` action alike.
/// The path is judged where it leads: links resolved when it exists, `.` and `..` resolved
/// lexically when it does not, so a path outside the roots is refused whether or not it
/// exists and the answer never tells which. Returns the path judged. A refusal is `blocked`
/// with reason `outside_client_roots`, names the roots (or why there are none to serve) and
/// offers no hint: no next step would act there. `asked` is the path as the caller wrote it,
/// for the message.
pub(crate) fn inside_roots(
    session: &Session,
    asked: &str,
    path: &Path,
    verb: Verb,
) -> Result<PathBuf, Stop> {
    let judged = canonical_or_normal(path);
    match session.roots().check(&judged) {
        Ok(()) => Ok(judged),
        Err(outside) => Err(Stop::new(
            Status::Blocked,
            reasons::OUTSIDE_CLIENT_ROOTS,
            format!(
                "Satori does not {} here: {}.",
                verb.verb,
                outside.describe(asked)
            ),
        )),
    }
}

/// The codebase that `path` (absolute) belongs to, if this session may use it
/// ([`inside_roots`]) and it can be used from its index now; `asked` is the path as the
/// caller wrote it, for messages.
pub(crate) fn gate(
    session: &Session,
    asked: &str,
    path: &Path,
    verb: Verb,
) -> Result<Target, Stop> {
    let service = session.service();
    let target = inside_roots(session, asked, path, verb)?;
    let Verb { verb, done } = verb;
    match service.engine.target(&target, Purpose::Search) {
        Ok(t) => Ok(t),
        Err(Refusal::State(e)) => Err(Stop {
            is_error: true,
            reason: None,
            ..Stop::new(Status::Error, reasons::IO_ERROR, e.to_string())
        }),
        Err(Refusal::Blocked { root, refusal }) => Err(Stop::new(
            Status::Blocked,
            reasons::ROOT_REFUSED,
            format!(
                "'{}' is tracked, but Satori no longer serves it: {refusal}. Remove its index with manage_index clear.",
                display(&root)
            ),
        )),
        Err(Refusal::NotTracked) => Err(Stop {
            create: Some(manage_hint(ManageAction::Create, asked)),
            ..Stop::new(
                Status::NotIndexed,
                reasons::NOT_INDEXED,
                format!(
                    "'{asked}' is not inside an indexed codebase. Index it first with manage_index create."
                ),
            )
        }),
        Err(Refusal::Indexing {
            root, percentage, ..
        }) => {
            let root_shown = display(&root);
            let pct = service.indexing_percentage(&root, percentage);
            Err(Stop {
                status_hint: Some(manage_hint(ManageAction::Status, &root_shown)),
                ..Stop::new(
                    Status::NotReady,
                    reasons::INDEXING,
                    format!(
                        "'{root_shown}' is being indexed ({pct:.0}%). Poll manage_index status, then {verb} again."
                    ),
                )
            })
        }
        Err(Refusal::Failed { root, message }) => {
            let root_shown = display(&root);
            Err(Stop {
                create: Some(Hint::manage_index_force_create(&root_shown)),
                ..Stop::new(
                    Status::NotIndexed,
                    reasons::INDEX_FAILED,
                    format!(
                        "Indexing '{root_shown}' failed: {}. Run manage_index create with force=true.",
                        message.as_deref().unwrap_or("unknown error")
                    ),
                )
            })
        }
        Err(Refusal::RequiresReindex {
            root,
            reason,
            indexed,
            detail,
        }) => {
            let root_shown = display(&root);
            let why = detail.unwrap_or_else(|| reason.id().to_owned());
            Err(Stop {
                reindex: Some(manage_hint(ManageAction::Reindex, &root_shown)),
                compatibility: Some(to_proto::incompatible(
                    service.engine.fingerprint(),
                    indexed.as_deref(),
                    to_proto::reindex_reason(reason),
                )),
                ..Stop::new(
                    Status::RequiresReindex,
                    reasons::REQUIRES_REINDEX,
                    format!(
                        "The index of '{root_shown}' must be rebuilt ({why}) before it can be {done}."
                    ),
                )
            })
        }
    }
}
