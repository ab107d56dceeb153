//! `manage_index`: the index lifecycle (create, reindex, sync, status, clear) of one codebase.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::validate::{Problem, ToolParams};

/// Tool name.
pub const NAME: &str = "manage_index";

/// Human-readable title shown by clients.
pub const TITLE: &str = "Manage a codebase index";

/// Tool description, written for the model that decides when to call it.
pub const DESCRIPTION: &str = concat!(
    "Create, update, inspect, rebuild or delete the search index of a codebase ",
    "(`path` = absolute path of its root directory). Actions: ",
    "create = start indexing in the background and return at once; then poll action=\"status\" ",
    "while `state` is \"indexing\": \"indexed\" and \"sync_completed\" both mean the index is complete ",
    "and searchable (every sync, including the one a search may run by itself, leaves \"sync_completed\"), ",
    "\"indexfailed\" means the build failed; force=true rebuilds an existing index from scratch. ",
    "sync = bring an existing index up to date now (only added, modified and removed files are ",
    "re-processed); returns their counts; edits to .satoriignore/.gitignore are applied by sync too. ",
    "status = state, progress while indexing, file and chunk counts, and whether the index matches ",
    "the current embedding model. ",
    "reindex = full rebuild in the background; the old index stays searchable until the new one is ",
    "complete; refused (status \"blocked\") when only ignore rules changed, where sync suffices. ",
    "clear = delete the index and all its state. ",
    "Returns a JSON envelope: `status` (ok, not_ready, not_indexed, requires_reindex, blocked, error), ",
    "`state`, `message`, and `hints` holding ready-to-run next calls ({tool, args}). ",
    "Next step after an index is ready: search_codebase."
);

string_enum! {
    /// What `manage_index` should do.
    pub enum ManageAction {
        Create = "create",
        Reindex = "reindex",
        Sync = "sync",
        Status = "status",
        Clear = "clear",
    }
}

/// Arguments of `manage_index`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ManageIndexParams {
    /// create = index in the background; sync = incremental update now; status = state and
    /// progress; reindex = full rebuild in the background; clear = delete the index.
    pub action: ManageAction,
    /// Absolute path of the codebase root directory.
    #[schemars(length(min = 1))]
    pub path: String,
    /// Only with action="create": rebuild from scratch even if the codebase is already indexed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub force: Option<bool>,
    /// Only with action="reindex": rebuild even when the preflight finds that only ignore rules
    /// changed (action="sync" would be enough).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allow_unnecessary_reindex: Option<bool>,
    /// Only with action="create": extra file extensions to index besides the built-in ones,
    /// e.g. [".vue", ".svelte"].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub custom_extensions: Option<Vec<String>>,
    /// Only with action="create": extra gitignore-style patterns of files to leave out,
    /// e.g. ["vendor/**", "*.generated.ts"].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ignore_patterns: Option<Vec<String>>,
}

impl ManageIndexParams {
    /// Whether `force` was requested (absent means no).
    pub fn force(&self) -> bool {
        self.force.unwrap_or(false)
    }

    /// Whether `allowUnnecessaryReindex` was requested (absent means no).
    pub fn allow_unnecessary_reindex(&self) -> bool {
        self.allow_unnecessary_reindex.unwrap_or(false)
    }

    /// Extra extensions for `create` (empty when absent).
    pub fn custom_extensions(&self) -> &[String] {
        self.custom_extensions.as_deref().unwrap_or_default()
    }

    /// Extra ignore patterns for `create` (empty when absent).
    pub fn ignore_patterns(&self) -> &[String] {
        self.ignore_patterns.as_deref().unwrap_or_default()
    }
}

impl ToolParams for ManageIndexParams {
    const NAME: &'static str = NAME;

    /// Options that only make sense for one action are rejected with any other action when they
    /// would change something (`true`, a non-empty list). The original server ignored them
    /// silently, which left callers believing e.g. that `sync` had honoured `force`. Neutral values
    /// (`false`, `[]`) are accepted so that callers which always send every key keep working.
    fn check(&self) -> Vec<Problem> {
        let action = self.action;
        let mut problems = Vec::new();
        let mut only_for = |field: &str, wanted: ManageAction, used: bool| {
            if used && action != wanted {
                problems.push(Problem::new(
                    field,
                    format!("only valid with action \"{wanted}\", not \"{action}\""),
                ));
            }
        };
        only_for("force", ManageAction::Create, self.force());
        only_for(
            "allowUnnecessaryReindex",
            ManageAction::Reindex,
            self.allow_unnecessary_reindex(),
        );
        only_for(
            "customExtensions",
            ManageAction::Create,
            !self.custom_extensions().is_empty(),
        );
        only_for(
            "ignorePatterns",
            ManageAction::Create,
            !self.ignore_patterns().is_empty(),
        );
        for (i, ext) in self.custom_extensions().iter().enumerate() {
            if ext.trim().is_empty() {
                problems.push(Problem::new(
                    format!("customExtensions[{i}]"),
                    "must not be blank",
                ));
            }
        }
        problems
    }
}
