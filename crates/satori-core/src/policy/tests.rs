//! The policy's verdicts as tables: paths → rule, contents → secret kind.
//!
//! Token-shaped strings are assembled at run time (`tok`) so that this source file holds no
//! literal that the content rules would catch: the repository stays indexable by itself.

use super::*;
use globset::Glob;

/// `prefix` followed by `tail` repeated to `len` characters.
fn tok(prefix: &str, tail: &str, len: usize) -> String {
    let body: String = tail.chars().cycle().take(len).collect();
    format!("{prefix}{body}")
}

#[track_caller]
fn check_path(policy: &Policy, rel: &str, expect: Option<&str>) {
    assert_eq!(
        policy.path_rule(rel).map(|r| r.id()).as_deref(),
        expect,
        "{rel}"
    );
}

#[test]
fn paths() {
    let p = Policy::default();
    for (rel, expect) in [
        ("src/main.rs", None),
        (".git/config", Some("vcs")),
        ("sub/.git/HEAD", Some("vcs")),
        (".hg/hgrc", Some("vcs")),
        ("node_modules/pkg/index.js", Some("dependency")),
        (".venv/lib/site.py", Some("dependency")),
        ("target/debug/build.rs", None),
        ("dist/app.js", None),
        (".gitignore", None),
        (".env", Some("secret_name:.env")),
        ("config/.env.production", Some("secret_name:.env.*")),
        (".env.example", None),
        (".env.sample", None),
        ("environment.rs", None),
        ("id_rsa", Some("secret_name:id_rsa*")),
        ("keys/id_ed25519", Some("secret_name:id_ed25519*")),
        ("id_rsa.pub", None),
        ("certs/server.pem", Some("secret_name:*.pem")),
        ("certs/server.KEY", Some("secret_name:*.key")),
        ("store.p12", Some("secret_name:*.p12")),
        ("store.pfx", Some("secret_name:*.pfx")),
        ("infra/terraform.tfstate", Some("secret_name:*.tfstate")),
        ("credentials.json", Some("secret_name:credentials*.json")),
        (
            "credentials-prod.json",
            Some("secret_name:credentials*.json"),
        ),
        ("credentials.rs", None),
        ("config/secrets.yaml", Some("secret_name:secrets.yaml")),
        ("config/secrets.yml", Some("secret_name:secrets.yml")),
        ("config/database.yml", Some("secret_name:database.yml")),
        ("appsettings.json", Some("secret_name:appsettings*.json")),
        (
            "Api/appsettings.Development.json",
            Some("secret_name:appsettings*.json"),
        ),
        (".netrc", Some("secret_name:.netrc")),
        (".npmrc", Some("secret_name:.npmrc")),
        (".pypirc", Some("secret_name:.pypirc")),
        (".git-credentials", Some("secret_name:.git-credentials")),
        ("kubeconfig.yaml", Some("secret_name:kubeconfig*")),
        (".aws/credentials", Some("secret_name:.aws/**")),
        (".aws/config", Some("secret_name:.aws/**")),
        (".ssh/known_hosts", Some("secret_name:.ssh/**")),
        (
            ".docker/config.json",
            Some("secret_name:.docker/config.json"),
        ),
        (".docker/Dockerfile", None),
        (".kube/config", Some("secret_name:.kube/config")),
        ("/home/ana/.ssh/id_rsa", Some("secret_name:.ssh/**")),
        ("/home/ana/.aws/credentials", Some("secret_name:.aws/**")),
        ("/home/ana/app/.git/config", Some("vcs")),
        ("docs/secrets.md", None),
        ("src/keys.rs", None),
        // direnv files, env files by extension, and the templates among them.
        (".envrc", Some("secret_name:.envrc")),
        ("deploy/.envrc", Some("secret_name:.envrc")),
        ("production.env", Some("secret_name:*.env")),
        ("config/staging.ENV", Some("secret_name:*.env")),
        ("example.env", None),
        ("src/env.rs", None),
        ("src/envelope.ts", None),
        // Backup copies are judged as what they copy.
        (".env~", Some("secret_name:.env")),
        ("config/secrets.yaml.bak", Some("secret_name:secrets.yaml")),
        ("secrets.yaml.bak~", Some("secret_name:secrets.yaml")),
        ("#.env#", Some("secret_name:.env")),
        (".secrets.yaml.swp", Some("secret_name:secrets.yaml")),
        (".netrc.swp", Some("secret_name:.netrc")),
        ("server.key.orig", Some("secret_name:*.key")),
        (
            "credentials.json.old",
            Some("secret_name:credentials*.json"),
        ),
        (".kube/config.bak", Some("secret_name:.kube/config")),
        (".env.example.bak", None),
        ("id_rsa.pub~", None),
        ("src/main.rs.bak", None),
        ("notes.txt~", None),
        // Terraform variables as JSON, Cargo's registry token.
        (
            "infra/terraform.tfvars.json",
            Some("secret_name:*.tfvars.json"),
        ),
        ("infra/prod.auto.tfvars", Some("secret_name:*.tfvars")),
        ("infra/variables.tf.json", None),
        (
            ".cargo/credentials.toml",
            Some("secret_name:.cargo/credentials.toml"),
        ),
        (".cargo/credentials", Some("secret_name:.cargo/credentials")),
        (".cargo/config.toml", None),
    ] {
        check_path(&p, rel, expect);
    }
}

#[track_caller]
fn check_place(policy: &Policy, abs: &str, expect: Option<&str>) {
    assert_eq!(
        policy.place_rule(abs).map(|r| r.id()).as_deref(),
        expect,
        "{abs}"
    );
}

/// The secret places hold on the absolute path, whatever the root: a root at `~/.config` or
/// `~/.docker`'s parent does not make their files relative paths that no rule names.
#[test]
fn places_on_the_absolute_path() {
    let p = Policy::default();
    for (abs, expect) in [
        (
            "/home/ana/.config/gcloud/credentials.db",
            Some("secret_name:.config/gcloud/**"),
        ),
        (
            "/home/ana/.config/gcloud/legacy_credentials/a@b.c/adc.json",
            Some("secret_name:.config/gcloud/**"),
        ),
        (
            "/home/ana/.config/gh/hosts.yml",
            Some("secret_name:.config/gh/hosts.yml"),
        ),
        (
            "/home/ana/.docker/config.json",
            Some("secret_name:.docker/config.json"),
        ),
        ("/home/ana/.kube/config", Some("secret_name:.kube/config")),
        ("/home/ana/.ssh/config", Some("secret_name:.ssh/**")),
        (
            "/home/ana/.cargo/credentials.toml",
            Some("secret_name:.cargo/credentials.toml"),
        ),
        (
            "/home/ana/.kube/config.bak",
            Some("secret_name:.kube/config"),
        ),
        ("/home/ana/.config/nvim/init.lua", None),
        ("/home/ana/src/app/config.json", None),
        ("/home/ana/.cargo/registry/src/lib.rs", None),
    ] {
        check_place(&p, abs, expect);
    }
    assert!(p.skips_dir("/home/ana/.config/gcloud"));
    assert!(!p.skips_dir("/home/ana/.config"));
    check_place(
        &Policy::new(None, true),
        "/home/ana/.config/gcloud/credentials.db",
        None,
    );
}

#[test]
fn opt_out_lifts_secret_names_only() {
    let p = Policy::new(None, true);
    check_path(&p, ".env", None);
    check_path(&p, ".ssh/id_rsa", None);
    check_path(&p, "credentials.json", None);
    check_path(&p, ".git/config", Some("vcs"));
    check_path(&p, "node_modules/a.js", Some("dependency"));
    assert!(!p.skips_dir(".ssh"));
    assert!(Policy::default().skips_dir(".ssh"));
    assert!(Policy::default().skips_dir("home/.aws"));
    assert!(!Policy::default().skips_dir("src"));
}

#[track_caller]
fn check_content(text: &str, expect: Option<SecretKind>) {
    assert_eq!(find_secret(text), expect, "{text}");
}

#[test]
fn contents() {
    let b64 = "MIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gun";
    let pem =
        |label: &str, sep: &str| format!("{}BEGIN {label}{}{sep}{b64}{sep}", "-----", "-----");
    use SecretKind::*;
    let cases: Vec<(String, Option<SecretKind>)> = vec![
        ("fn main() {}".into(), None),
        (pem("RSA PRIVATE KEY", "\n"), Some(PemPrivateKey)),
        (pem("PRIVATE KEY", "\r\n"), Some(PemPrivateKey)),
        (pem("OPENSSH PRIVATE KEY", "\n"), Some(PemPrivateKey)),
        (pem("EC PRIVATE KEY", "\n"), Some(PemPrivateKey)),
        (pem("ENCRYPTED PRIVATE KEY", "\n"), Some(PemPrivateKey)),
        (pem("PGP PRIVATE KEY BLOCK", "\n\n"), Some(PemPrivateKey)),
        // A service-account JSON keeps the key on one line with escaped newlines.
        (
            format!("{{\"private_key\": \"{}\"}}", pem("PRIVATE KEY", "\\n")),
            Some(PemPrivateKey),
        ),
        // Public material and parser source code are not keys.
        (pem("CERTIFICATE", "\n"), None),
        (pem("PUBLIC KEY", "\n"), None),
        (
            format!(
                "const HEADER: &str = \"{}BEGIN RSA PRIVATE KEY{}\";\nfn parse() {{}}",
                "-----", "-----"
            ),
            None,
        ),
        (
            format!("key = {}", tok("AKIA", "Q3EGRE7XNZ4DVLHW", 16)),
            Some(AwsAccessKey),
        ),
        (
            format!("key = {}", tok("ASIA", "Q3EGRE7XNZ4DVLHW", 16)),
            Some(AwsAccessKey),
        ),
        (
            format!("key = {}", tok("AKIA", "IOSFODNN7EXAMPLE", 16)),
            None,
        ),
        (
            format!("key = X{}", tok("AKIA", "Q3EGRE7XNZ4DVLHW", 16)),
            None,
        ),
        (
            format!("key = {}", tok("AKIA", "Q3EGRE7XNZ4DVLHW", 17)),
            None,
        ),
        (format!("AKIA_CONSTANT = {}", "1"), None),
        (
            format!("token: {}", tok("ghp_", "a1B2c3D4e5", 36)),
            Some(GithubToken),
        ),
        (
            format!("token: {}", tok("github_pat_", "11ABCDE_f9", 82)),
            Some(GithubToken),
        ),
        (format!("token: {}", tok("ghp_", "a1B2", 10)), None),
        (
            format!("GITLAB={}", tok("glpat-", "x1Y2z3-_", 20)),
            Some(GitlabToken),
        ),
        (
            format!("slack = '{}'", tok("xoxb-", "1234567890-", 40)),
            Some(SlackToken),
        ),
        (
            format!(
                "url = https://{}",
                tok("hooks.slack.com/services/T", "0AB1/", 40)
            ),
            Some(SlackToken),
        ),
        (
            format!("STRIPE={}", tok("sk_live_", "4eC39HqLyjWDarjtT1", 24)),
            Some(StripeKey),
        ),
        (
            format!("STRIPE={}", tok("sk_test_", "4eC39HqLyjWDarjtT1", 24)),
            None,
        ),
        (
            format!("OPENAI={}", tok("sk-proj-", "Ab3_x-9Z", 60)),
            Some(OpenAiKey),
        ),
        (
            format!(
                "OPENAI=sk-{}{}{}",
                tok("", "aB3d", 20),
                "T3BlbkFJ",
                tok("", "xY9z", 20)
            ),
            Some(OpenAiKey),
        ),
        (format!("let flag = \"sk-{}\";", tok("", "ab", 48)), None),
        (
            format!("ANTHROPIC={}", tok("sk-ant-", "api03-Xy_9", 95)),
            Some(AnthropicKey),
        ),
        (
            format!("google = \"{}\"", tok("AIza", "SyD-9tSrke72PouQMnMX_7", 35)),
            Some(GoogleApiKey),
        ),
        ("let ask = \"risk-free\"; // sk-".into(), None),
        (
            format!(
                "//registry.npmjs.org/:_authToken={}",
                tok("npm_", "aB3dE5gH9k", 36)
            ),
            Some(NpmToken),
        ),
        (format!("NPM_TOKEN={}", tok("npm_", "aB3dE5gH9k", 37)), None),
        (
            format!("let x = {};", tok("npm_", "configurationoptions", 36)),
            None,
        ),
        ("npm_config_registry = 1".into(), None),
        (
            format!("HF_TOKEN={}", tok("hf_", "QwErTyUiOpAsDfGh", 34)),
            Some(HuggingFaceToken),
        ),
        (
            format!("token = \"{}\"", tok("hf_", "QwErTyUiOpAsDfGh", 37)),
            Some(HuggingFaceToken),
        ),
        (format!("x = {}", tok("hf_", "QwErTyUiOp", 20)), None),
        ("hf_model = load(hf_model_name)".into(), None),
        (
            format!("fn {}() {{}}", tok("hf_", "downloadandcachetokenizer", 40)),
            None,
        ),
        (format!("my{}", tok("hf_", "QwErTyUiOpAsDfGh", 34)), None),
    ];
    for (text, expect) in cases {
        check_content(&text, expect);
    }
}

#[test]
fn opt_out_lifts_content_rules() {
    let text = tok("ghp_", "a1B2c3D4e5", 36);
    assert_eq!(
        Policy::default().content_rule(&text),
        Some(Rule::SecretContent(SecretKind::GithubToken))
    );
    assert_eq!(Policy::new(None, true).content_rule(&text), None);
    assert!(!Policy::default().admits(&text));
    assert!(Policy::default().admits("fn main() {}"));
}

#[test]
fn every_pattern_compiles() {
    for g in SECRET_NAMES
        .iter()
        .chain(SECRET_NAME_EXCEPTIONS)
        .chain(SECRET_PATHS)
    {
        assert!(Glob::new(g).is_ok(), "{g}");
    }
    assert_eq!(MATCHERS.names.len(), SECRET_NAMES.len());
    assert_eq!(MATCHERS.paths.len(), SECRET_PATHS.len());
}
