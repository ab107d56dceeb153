//! What the client tests share: the scriptable fake server of the CLI tests,
//! serving the contract's tools.

#[path = "../../../satori-cli/tests/fake_servers/fake.rs"]
mod fake;

use std::time::Duration;

use satori_client::SpawnOptions;

pub use fake::{TOOLS_FILE_ENV, fake_server, tools_file};

/// Options for a client of the fake: generous startup budget, the contract's
/// tools, and `env` on top.
pub fn fake_options(startup_timeout: Duration, env: Vec<(String, String)>) -> SpawnOptions {
    let mut options = SpawnOptions::new(fake_server());
    options.startup_timeout = startup_timeout;
    options.env = [(
        TOOLS_FILE_ENV.to_owned(),
        tools_file().to_string_lossy().into_owned(),
    )]
    .into_iter()
    .chain(env)
    .collect();
    options
}
