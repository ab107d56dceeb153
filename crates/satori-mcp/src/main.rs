//! The `satori` binary: the MCP server over stdio. Everything lives in the library.

fn main() -> std::process::ExitCode {
    satori_mcp::run_main()
}
