//! The one way a tool gets at a file's text: every reading tool (`read_file`, `file_outline`,
//! and any later one) asks [`Engine::open_for_read`] and words its answer; none of them opens
//! a file itself. The steps, in order, each once: resolve links, find the tracked codebase
//! that holds the file, Satori's own state directory, the path rules on the name asked for
//! and on where it leads, the secret places on the whole path, a non-blocking open that
//! follows no link swapped in since the checks, the regular-file check on the open handle,
//! the size cap, and the binary and content rules on what is handed out.

use std::fs::{File, Metadata};
use std::io::{self, Read};
use std::path::{Path, PathBuf};

use super::{Engine, Purpose, Refusal, Target};
use crate::policy::{Policy, RootRefusal, Rule, open_unlinked};
use crate::state::Phase;
use crate::walk::{looks_binary, to_slash};

/// Bytes read first to tell text from binary (the heuristic looks at the first 8 KiB).
pub const READ_HEAD_BYTES: usize = 8192;

/// What the caller does with the text, which decides what happens past the byte cap.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReadPurpose {
    /// Windows of lines: a file over the cap is handed out open, to be streamed from the
    /// handle (each window passed through [`Readable::admit`]).
    Lines,
    /// The whole text (to parse it): a file over the cap is refused.
    Whole,
}

/// The limits of one read, from the server's configuration.
#[derive(Debug, Clone, Copy)]
pub struct ReadLimits {
    /// The most bytes of a file handed out as one text.
    pub max_bytes: usize,
    /// Files outside every tracked codebase may be read (the user's opt-in).
    pub outside_codebases: bool,
}

/// What a file is when it is not a regular one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileKind {
    Directory,
    Fifo,
    Socket,
    Device,
    Other,
}

impl FileKind {
    /// `None` for a regular file.
    fn of(meta: &Metadata) -> Option<FileKind> {
        let ft = meta.file_type();
        if ft.is_file() {
            return None;
        }
        if ft.is_dir() {
            return Some(FileKind::Directory);
        }
        #[cfg(unix)]
        {
            use std::os::unix::fs::FileTypeExt;
            if ft.is_fifo() {
                return Some(FileKind::Fifo);
            }
            if ft.is_socket() {
                return Some(FileKind::Socket);
            }
            if ft.is_block_device() || ft.is_char_device() {
                return Some(FileKind::Device);
            }
        }
        Some(FileKind::Other)
    }

    /// How messages name it ("a named pipe (FIFO)").
    pub fn describe(self) -> &'static str {
        match self {
            FileKind::Directory => "a directory",
            FileKind::Fifo => "a named pipe (FIFO)",
            FileKind::Socket => "a socket",
            FileKind::Device => "a device",
            FileKind::Other => "a special file",
        }
    }
}

/// Why a file's text is not handed out.
#[derive(Debug)]
pub enum ReadRefusal {
    /// Nothing is there (or a link leads nowhere).
    NotFound,
    /// Not a regular file: a named pipe, socket or device may never end (or never start)
    /// its data, and has no size to cap.
    NotRegular(FileKind),
    /// Outside every tracked codebase, and reads are confined to them.
    Outside { real: PathBuf },
    /// The codebase holding the file is being indexed for the first time.
    Indexing {
        root: PathBuf,
        percentage: f32,
        phase: Option<Phase>,
    },
    /// The codebase holding the file is tracked at a root that may not be tracked.
    Blocked { root: PathBuf, refusal: RootRefusal },
    /// A policy rule keeps the file out.
    Rule(Rule),
    /// The first bytes are not text.
    Binary { size: u64 },
    /// Over the byte cap, for [`ReadPurpose::Whole`].
    TooLarge { size: u64 },
    /// The file could not be opened or read.
    Io(io::Error),
}

/// A file that may be read, open: its text when it fits the cap, else its handle.
pub struct Readable<'e> {
    /// The file with links resolved: what was judged and opened.
    pub real: PathBuf,
    /// The tracked codebase that holds it (`None` when reads are unconfined and none does).
    pub owner: Option<Target>,
    /// Its size when opened (a file may grow after: reads never trust it).
    pub size: u64,
    /// The whole text, when the file fits the cap (content rules already applied).
    pub text: Option<String>,
    file: File,
    policy: &'e Policy,
}

impl Readable<'_> {
    /// The open file, for streaming a file over the cap. Reads go through this handle,
    /// never the path again.
    pub fn file(&self) -> &File {
        &self.file
    }

    /// The content rules on a part of the file about to be handed out (a streamed window).
    pub fn admit(&self, text: &str) -> Result<(), ReadRefusal> {
        match self.policy.content_rule(text) {
            Some(rule) => Err(ReadRefusal::Rule(rule)),
            None => Ok(()),
        }
    }
}

impl Engine {
    /// Opens `asked` (absolute, as the caller named it: links not yet resolved) for its
    /// text, or says why not. The only place a tool's read is judged; see the module doc
    /// for the steps. A caller with its own confinement (a client's roots) applies it to
    /// the canonical path before asking.
    pub fn open_for_read(
        &self,
        asked: &Path,
        purpose: ReadPurpose,
        limits: ReadLimits,
    ) -> Result<Readable<'_>, ReadRefusal> {
        let meta = std::fs::metadata(asked).map_err(|_| ReadRefusal::NotFound)?;
        if let Some(kind) = FileKind::of(&meta) {
            return Err(ReadRefusal::NotRegular(kind));
        }
        // Every check below is made on the resolved file: a link inside a codebase to a
        // key elsewhere is judged as that key.
        let real = asked.canonicalize().map_err(|_| ReadRefusal::NotFound)?;
        let owner = match self.target(&real, Purpose::Read) {
            Ok(t) => Some(t),
            Err(Refusal::Indexing {
                root,
                percentage,
                phase,
            }) => {
                return Err(ReadRefusal::Indexing {
                    root,
                    percentage,
                    phase,
                });
            }
            Err(Refusal::Blocked { root, refusal }) => {
                return Err(ReadRefusal::Blocked { root, refusal });
            }
            // An unreadable state file confines reading as an untracked path does.
            Err(_) => None,
        };
        if owner.is_none() && !limits.outside_codebases {
            return Err(ReadRefusal::Outside { real });
        }
        if let Some(rule) = self.path_refusal(asked, &real, owner.as_ref()) {
            return Err(ReadRefusal::Rule(rule));
        }
        // Opened without following links: if the path judged above was swapped for a link
        // since, nothing is read rather than what the link leads to; and without waiting,
        // should it have been swapped for a named pipe.
        let file = open_unlinked(&real, true).map_err(ReadRefusal::Io)?;
        // What counts is what is open, not what the path was when it was checked.
        let meta = file.metadata().map_err(ReadRefusal::Io)?;
        if let Some(kind) = FileKind::of(&meta) {
            return Err(ReadRefusal::NotRegular(kind));
        }
        let size = meta.len();
        let mut bytes = Vec::with_capacity(READ_HEAD_BYTES);
        (&file)
            .take(READ_HEAD_BYTES as u64)
            .read_to_end(&mut bytes)
            .map_err(ReadRefusal::Io)?;
        if looks_binary(&bytes) {
            return Err(ReadRefusal::Binary { size });
        }
        // Within the cap the text is read whole. The size is only what the file said when
        // asked: the read stops one byte past the cap, so a file that grew since (or that
        // reports no size, as `/proc` files do) counts as over it, and memory stays bounded.
        let max = limits.max_bytes;
        let mut text = None;
        if size <= max as u64 && bytes.len() <= max {
            let room = (max + 1 - bytes.len()) as u64;
            (&file)
                .take(room)
                .read_to_end(&mut bytes)
                .map_err(ReadRefusal::Io)?;
            if bytes.len() <= max {
                let whole = String::from_utf8_lossy(&bytes).into_owned();
                if let Some(rule) = self.policy.content_rule(&whole) {
                    return Err(ReadRefusal::Rule(rule));
                }
                text = Some(whole);
            }
        }
        if text.is_none() && purpose == ReadPurpose::Whole {
            return Err(ReadRefusal::TooLarge { size });
        }
        Ok(Readable {
            real,
            owner,
            size,
            text,
            file,
            policy: &self.policy,
        })
    }

    /// The rule that keeps a file out by where it is: Satori's own state (even when
    /// `SATORI_HOME` lies inside a codebase, or reads are unconfined), the path rules on the
    /// name asked for and on the resolved path (relative to its codebase, so that a codebase
    /// inside a directory named like a rule still reads), and the secret places on the whole
    /// resolved path, wherever the codebase's root is.
    fn path_refusal(&self, asked: &Path, real: &Path, owner: Option<&Target>) -> Option<Rule> {
        let policy = &self.policy;
        if policy.state_dir().is_some_and(|s| real.starts_with(s)) {
            return Some(Rule::StateDirectory);
        }
        let resolved = owner
            .and_then(|t| t.prefix.clone())
            .unwrap_or_else(|| to_slash(real));
        // The name asked for: relative to the codebase when it is written under its root,
        // else its file name (a link from elsewhere is named by where it sits).
        let asked_rel = owner
            .and_then(|t| asked.strip_prefix(&t.root).ok())
            .map(to_slash);
        let asked_name = asked
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        policy
            .path_rule(&resolved)
            .or_else(|| asked_rel.and_then(|rel| policy.path_rule(&rel)))
            .or_else(|| policy.path_rule(&asked_name))
            .or_else(|| policy.place_rule(&to_slash(real)))
    }
}
