//! The server refuses a bad environment before speaking any protocol: a specific message on
//! stderr naming the variable and what it expected, nothing on stdout, and a non-zero exit
//! (2 for a malformed value, 1 for a well-formed one that cannot be honoured).

use std::process::{Command, Stdio};

struct Case {
    env: &'static [(&'static str, &'static str)],
    exit: i32,
    stderr: &'static [&'static str],
}

fn check(case: &Case) {
    let home = tempfile::tempdir().unwrap();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_satori"));
    cmd.env_clear()
        .env("SATORI_HOME", home.path())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (k, v) in case.env {
        // `@` stands for a fresh empty directory.
        let v = if *v == "@" {
            home.path().to_string_lossy().into_owned()
        } else {
            v.to_string()
        };
        cmd.env(k, v);
    }
    let out = cmd.output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        out.status.code(),
        Some(case.exit),
        "{:?}: {stderr}",
        case.env
    );
    assert!(
        out.stdout.is_empty(),
        "{:?}: stdout {:?}",
        case.env,
        out.stdout
    );
    assert!(!stderr.contains("sk-never-shown"), "{stderr}");
    for want in case.stderr {
        assert!(
            stderr.contains(want),
            "{:?}: {want:?} not in {stderr}",
            case.env
        );
    }
}

#[test]
fn bad_environment_is_refused_clearly() {
    let cases = [
        Case {
            env: &[("SATORI_RUN_MODE", "bogus")],
            exit: 2,
            stderr: &["SATORI_RUN_MODE='bogus'", "'mcp' or 'cli'"],
        },
        Case {
            env: &[
                ("SATORI_RUN_MODE", "cli"),
                ("SATORI_CLI_STDOUT_GUARD", "loud"),
            ],
            exit: 2,
            stderr: &[
                "SATORI_CLI_STDOUT_GUARD='loud'",
                "'drop', 'redirect' or 'off'",
            ],
        },
        Case {
            env: &[
                ("VOYAGEAI_API_KEY", "sk-never-shown"),
                ("VOYAGEAI_RERANKER_MODEL", "rerank-9"),
            ],
            exit: 2,
            stderr: &[
                "VOYAGEAI_RERANKER_MODEL='rerank-9'",
                "rerank-2.5, rerank-2.5-lite",
            ],
        },
        Case {
            env: &[
                ("VOYAGEAI_API_KEY", "sk-never-shown"),
                ("VOYAGEAI_BASE_URL", "ftp://example.invalid"),
            ],
            exit: 2,
            stderr: &[
                "VOYAGEAI_BASE_URL='ftp://example.invalid'",
                "not an http:// or https:// URL",
            ],
        },
        Case {
            env: &[("SATORI_RERANKER", "cohere")],
            exit: 2,
            stderr: &["SATORI_RERANKER='cohere'", "'voyage', 'local' or 'off'"],
        },
        Case {
            env: &[("SATORI_RERANKER", "voyage")],
            exit: 2,
            stderr: &["SATORI_RERANKER='voyage'", "VOYAGEAI_API_KEY"],
        },
        Case {
            env: &[("READ_FILE_MAX_LINES", "0")],
            exit: 2,
            stderr: &["READ_FILE_MAX_LINES='0'", "positive integer"],
        },
        Case {
            env: &[("SATORI_SYNC_THRESHOLD_MS", "-5")],
            exit: 2,
            stderr: &["SATORI_SYNC_THRESHOLD_MS='-5'"],
        },
        Case {
            env: &[("SATORI_EMBEDDING_MODEL", "hf:nope")],
            exit: 2,
            stderr: &[
                "SATORI_EMBEDDING_MODEL='hf:nope'",
                "a commit id is required",
            ],
        },
        Case {
            env: &[("SATORI_EMBEDDING_MODEL", "hf:org/name@abc")],
            exit: 2,
            stderr: &["40-hex commit"],
        },
        Case {
            env: &[("SATORI_EMBEDDING_MODEL", "/nonexistent/model")],
            exit: 2,
            stderr: &[
                "'/nonexistent/model' is not a directory",
                "model.safetensors",
            ],
        },
        Case {
            env: &[("SATORI_EMBEDDING_MODEL", "@")],
            exit: 1,
            stderr: &["model.safetensors"],
        },
        Case {
            env: &[
                ("SATORI_OFFLINE", "1"),
                (
                    "SATORI_EMBEDDING_MODEL",
                    "hf:org/name@0123456789abcdef0123456789abcdef01234567",
                ),
            ],
            exit: 1,
            stderr: &["is not in the cache", "downloads are switched off"],
        },
        Case {
            env: &[("SATORI_SEARCH_ABLATION", "fast")],
            exit: 2,
            stderr: &["unknown switch 'fast'", "lexical_only"],
        },
        Case {
            env: &[("SATORI_SEARCH_ABLATION", "lexical_only,dense_only")],
            exit: 2,
            stderr: &["exclude each other"],
        },
        Case {
            env: &[("SATORI_SEARCH_WEIGHTS", r#"{"rrf": 30}"#)],
            exit: 2,
            stderr: &[
                r#"SATORI_SEARCH_WEIGHTS='{"rrf": 30}'"#,
                "unknown field `rrf`",
                "rrf_k",
            ],
        },
        Case {
            env: &[("SATORI_SEARCH_WEIGHTS", r#"{"path_field": "high"}"#)],
            exit: 2,
            stderr: &["JSON object of ranking weights", "invalid type"],
        },
        Case {
            env: &[("SATORI_SEARCH_WEIGHTS", "rrf_k=30")],
            exit: 2,
            stderr: &["SATORI_SEARCH_WEIGHTS='rrf_k=30'"],
        },
        Case {
            env: &[("EMBEDDING_PROVIDER", "Cohere")],
            exit: 2,
            stderr: &["EMBEDDING_PROVIDER=Cohere is not a provider", "unset it"],
        },
        Case {
            env: &[("EMBEDDING_PROVIDER", "OpenAI")],
            exit: 2,
            stderr: &["needs OPENAI_API_KEY"],
        },
        Case {
            env: &[
                ("EMBEDDING_PROVIDER", "Ollama"),
                ("SATORI_EMBEDDING_MODEL", "none"),
            ],
            exit: 2,
            stderr: &["EMBEDDING_PROVIDER=Ollama already chooses the model"],
        },
        // A model whose dimension is not known is probed at start: an address that is down
        // is named, with the key kept out of the message.
        Case {
            env: &[
                ("EMBEDDING_PROVIDER", "OpenAI"),
                ("OPENAI_API_KEY", "sk-never-shown"),
                ("OPENAI_BASE_URL", "http://127.0.0.1:9/v1"),
                ("EMBEDDING_MODEL", "custom-model"),
            ],
            exit: 1,
            stderr: &["embedding provider", "cannot be reached"],
        },
        Case {
            env: &[("SATORI_MAX_CHUNKS", "0")],
            exit: 2,
            stderr: &["SATORI_MAX_CHUNKS='0'", "from 1 to 100000000"],
        },
        Case {
            env: &[("MILVUS_ADDRESS", "http://host:port")],
            exit: 2,
            stderr: &["MILVUS_ADDRESS=http://host:port is not an address"],
        },
        Case {
            env: &[
                ("MILVUS_ADDRESS", "127.0.0.1:19530"),
                ("SATORI_MILVUS_PREFIX", "team-a"),
            ],
            exit: 1,
            stderr: &["SATORI_MILVUS_PREFIX=team-a may hold only letters"],
        },
    ];
    for case in &cases {
        check(case);
    }
}
