//! The wording of a policy refusal, shared by the reading tools (`read_file`,
//! `file_outline`); what is refused is decided once, by `satori_core::Engine::open_for_read`.

use satori_core::Rule;
use satori_protocol::env;

/// `Error: <tool> refuses '<shown>': <rule>.`, with the opt-out of secrets rules.
pub(crate) fn refusal(tool: &str, shown: &str, rule: &Rule) -> String {
    let lift = if rule.is_secret() {
        format!(
            " Files that look like secrets are never returned; the user can start the server with {}=true to lift this rule.",
            env::ALLOW_SECRETS
        )
    } else {
        String::new()
    };
    format!("Error: {tool} refuses '{shown}': {rule}.{lift}")
}
